"""``ragsweep score``'s inputs bounded and read strictly (issue 51, part 2).

On e2cb9a0 a relevance grade had no upper bound (2^32 scored the query 0 with exit 0, 1e9 to 3e9
allocated gigabytes inside trec_eval, 2^62 crashed it, 2^63 was an internal error), Python read
``1_0`` and Arabic-Indic digits as numbers where trec_eval's atof/atol read something else, an
empty qrels scored 0.0000, a line had no length limit (``--qrels /dev/zero`` grew without bound)
and measure names lost their punctuation (``nDCG@-5`` was nDCG@5, ``fileR@1.0`` fileR@10).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness.inputfiles
from harness.cli import main
from harness.errors import EXIT_INPUT, InputDataError, UsageError
from harness.inputfiles import MAX_LINE_CHARS, iter_input_line_blocks
from harness.metrics.measures import MEASURES, parse_measure
from harness.metrics.trec import MAX_GRADE, read_qrels, read_run
from harness.sweep.manifest import emit_manifest, load_manifest

REPO = Path(__file__).resolve().parents[1]
ABOVE = ("the largest grade read (trec_eval's cost grows with the grade itself); expected a grade 0..1000 "
         "(0 = judged not relevant)")


def _score(qrels: Path, run: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["score", "--qrels", str(qrels), "--run", str(run), *extra])
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0, err
    return code, captured.out, err.removeprefix("ragsweep: error: ")


def _files(tmp_path: Path, qrels: str, run: str) -> tuple[Path, Path]:
    (tmp_path / "Q.trec").write_text(qrels, encoding="utf-8")
    (tmp_path / "R.trec").write_text(run, encoding="utf-8")
    return tmp_path / "Q.trec", tmp_path / "R.trec"


# 2^62, 1e9 and 2^63 are the cases that crashed, ran out of memory or raised SystemError on e2cb9a0.
@pytest.mark.parametrize("grade", [MAX_GRADE + 1, 9999, 10**9, 2**32, 2**62, 2**63, 10**30])
def test_a_grade_above_1000_is_refused_at_its_line(grade: int, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _files(tmp_path, f"q1 0 d0 1\nq1 0 d1 {grade}\n", "q1 Q0 d1 1 1.0 t\n")
    code, out, err = _score(qrels, run, capsys)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == f"{qrels}:2: relevance {grade} is above 1000, {ABOVE}"


def test_a_grade_of_1000_is_read_and_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytrec_eval")
    # gains 1000 and 1 (linear): the run puts the 1 first, ideal DCG 1000 + 1/log2(3)
    qrels, run = _files(tmp_path, "q1 0 big 1000\nq1 0 small 0001\n", "q1 Q0 small 1 2.0 t\nq1 Q0 big 2 1.0 t\n")
    code, out, _err = _score(qrels, run, capsys, "--json")
    assert code == 0
    ideal = 1000 + 1 / 1.584962500721156
    assert json.loads(out)["per_query"]["q1"]["nDCG@10"] == pytest.approx((1 + 1000 / 1.584962500721156) / ideal)


@pytest.mark.parametrize("text", ["1_0", "+1", "\u0661", "0_1", "\u0661\u0660", "\uff11"])
def test_a_grade_python_reads_and_trec_eval_would_not_is_refused(text: str, tmp_path: Path) -> None:
    # int() reads 1_0 as 10, +1 as 1 and Arabic-Indic or full-width digits as digits; trec_eval's atol
    # reads 1_0 as 1 and the others as 0: only plain ASCII digits mean one number to both
    path = tmp_path / "Q.trec"
    path.write_text(f"q1 0 d1 {text}\n", encoding="utf-8")
    with pytest.raises(InputDataError) as refused:
        read_qrels(path)
    assert str(refused.value) == f"{path}:1: relevance {text!r} is not an integer"


@pytest.mark.parametrize(("text", "problem"), [
    ("1_0", "is not a number"), ("\u0661", "is not a number"), ("1\u0660", "is not a number"),
    ("\uff11.5", "is not a number"), ("Infinity", "is not finite"), ("-NaN", "is not finite"),
    ("1e999", "is not finite"),
])
def test_a_score_is_a_plain_ascii_decimal(text: str, problem: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    # float() reads 1_0 as 10 (trec_eval: 1): the run would rank d1 above d0 where trec_eval ranks it below
    qrels, run = _files(tmp_path, "q1 0 d1 1\n", f"q1 Q0 d0 1 2.0 t\nq1 Q0 d1 2 {text} t\n")
    code, out, err = _score(qrels, run, capsys)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == f"{run}:2: score {text!r} {problem}"


@pytest.mark.parametrize("text", ["1_0", "\u0662"])
def test_a_rank_is_plain_ascii_digits(text: str, tmp_path: Path) -> None:
    path = tmp_path / "R.trec"
    path.write_text(f"q1 Q0 d1 {text} 1.0 t\n", encoding="utf-8")
    with pytest.raises(InputDataError) as refused:
        read_run(path, ties="rank")
    assert str(refused.value) == f"{path}:1: rank {text!r} is not an integer"


def test_plain_decimals_are_still_read(tmp_path: Path) -> None:
    path = tmp_path / "R.trec"
    path.write_text("q1 Q0 a 1 .5 t\nq1 Q0 b 2 1. t\nq1 Q0 c 3 -2e-3 t\nq1 Q0 d 4 +1E2 t\n", encoding="utf-8")
    positions, _ties = read_run(path)
    assert list(positions["q1"]) == ["d", "b", "a", "c"]


@pytest.mark.parametrize("text", ["", "\n\n", "# judged nothing\n\n   \t\n#q1 0 d1 1\n"])
def test_an_empty_qrels_is_refused(text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = _files(tmp_path, text, "q1 Q0 d1 1 1.0 t\n")
    code, out, err = _score(qrels, run, capsys)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == (f"{qrels}: no judgements (every line blank or a # comment); expected lines qid iter docid rel, "
                   "one per judged document")


@pytest.mark.parametrize("block_chars", [None, 4096, 70_000])
@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_a_line_longer_than_65536_characters_is_refused_at_its_line(block_chars: int | None, ending: str,
                                                                    tmp_path: Path) -> None:
    fits = "q1 0 d" + "x" * (MAX_LINE_CHARS - len("q1 0 d 1")) + " 1"
    assert len(fits) == MAX_LINE_CHARS
    path = tmp_path / "Q.trec"
    path.write_text(f"q1 0 a 1\n{fits}{ending}", encoding="utf-8", newline="")
    assert len(read_qrels(path).judgements["q1"]) == 2  # the longest line read is read
    between = ending or "\n"  # the ending is the last line's; the lines before it end with a break
    path.write_text(f"q1 0 a 1{between}{fits}{between}q1 0 b{'y' * MAX_LINE_CHARS} 1{ending}", encoding="utf-8",
                    newline="")
    with pytest.raises(InputDataError) as refused:
        list(iter_input_line_blocks(path, block_chars=block_chars))
    assert str(refused.value).startswith(f"{path}:3: line longer than 65,536 characters, the longest read;")


def test_a_control_character_is_found_before_its_line_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the NUL sits in the partial line carried between blocks; it is named before any break is read
    path = tmp_path / "Q.trec"
    path.write_text("q1 0 d1 1\nq1 0 d\x00" + "z" * 50, encoding="utf-8")
    monkeypatch.setattr(harness.inputfiles, "BLOCK_CHARS", 16)
    with pytest.raises(InputDataError) as refused:
        read_qrels(path)
    assert str(refused.value).startswith(f"{path}:2: control character U+0000 at column 7;")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_as_qrels_is_refused_at_once_in_bounded_memory(tmp_path: Path) -> None:
    run = tmp_path / "R.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    # 1 GiB of address space and 60 s: e2cb9a0 read /dev/zero until either ran out
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
    code = limit + "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code, "score", "--qrels", "/dev/zero", "--run", str(run)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False)
    assert done.returncode == EXIT_INPUT, done.stderr[-2000:]
    assert done.stderr == ("ragsweep: error: /dev/zero:1: control character U+0000 at column 1; expected printable "
                           "text, fields separated by spaces or tabs, lines ending \\n or \\r\\n\n")


@pytest.mark.parametrize("text", ["nDCG@-5", "fileR@1.0", "nDCG@05", "ndcg5", "n-DCG@10", "MRR.", " MRR",
                                  "R@5\t", "fileRan\u212a", "recall.5"])
def test_a_measure_name_is_read_exactly(text: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_measure(text)
    assert str(refused.value) == f"unknown measure {text!r}; known: {', '.join(MEASURES)}"


@pytest.mark.parametrize(("text", "name"), [("nDCG@5", "nDCG@5"), ("ndcg@10", "nDCG@10"), ("NDCG@20", "nDCG@20"),
                                            ("fileR@1", "fileR@1"), ("filer@10", "fileR@10"), ("mrr", "MRR"),
                                            ("ndcg_cut_10", "nDCG@10"), ("recip_rank", "MRR")])
def test_a_name_in_any_case_or_a_trec_key_is_read(text: str, name: str) -> None:
    assert parse_measure(text).name == name


@pytest.mark.parametrize(("field", "value"), [("measure", "nDCG@-5"), ("protected_measures", ["MRR", "fileR@1.0"])])
def test_a_manifest_gate_measure_is_read_exactly(field: str, value: object, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(emit_manifest())
    doc["gate"][field] = value
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    bad = value if isinstance(value, str) else value[-1]
    with pytest.raises(InputDataError) as refused:
        load_manifest(path)
    assert f"unknown measure {bad!r}; known: nDCG@5, nDCG@10, " in str(refused.value)
    code = main(["sweep", "collect", "--sweep-id", "s", "--out", str(tmp_path / "var"), "--manifest", str(path)])
    assert code == EXIT_INPUT
    assert f"{path}: gate.{field}" in capsys.readouterr().err
