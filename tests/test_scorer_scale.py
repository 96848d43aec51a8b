"""``ragsweep score`` at trec_eval's scale (issue 34, part 5): every check kept, linear per query.

Timing lives in ``make bench`` (benchmarks/bench_scorer.py); these tests pin behaviour: where a
refusal points, what each tie policy ranks, that a file read in many blocks reads as one, and
that the scores are plain pytrec_eval's on the same files.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

import harness.inputfiles
from harness.cli import main
from harness.errors import EXIT_INPUT, InputDataError
from harness.metrics.trec import read_qrels, read_run


def _score(qrels: Path, run: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["score", "--qrels", str(qrels), "--run", str(run), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip()


def _one_line_error(err: str) -> str:
    assert err.count("\n") == 0 and err.startswith("ragsweep: error: "), err
    return err.removeprefix("ragsweep: error: ")


def test_a_duplicate_among_20000_documents_of_one_query_is_named_at_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["# one query, 20,000 documents", ""]
    lines += [f"q1 Q0 d{n:05d} {n + 1} {20000 - n} t" for n in range(20000)]
    lines.append("q1 Q0 d00007 20001 0.5 t")  # d00007 again, on line 2 + 20,000 + 1
    run = tmp_path / "run.trec"
    run.write_text("\n".join(lines) + "\n")
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 d00007 1\n")
    code, _out, err = _score(qrels, run, capsys)
    assert code == EXIT_INPUT
    assert _one_line_error(err) == f"{run}:20003: q1 lists d00007 twice"


@pytest.mark.parametrize(("char", "name"), [
    ("\x00", "NUL"), ("\x01", "SOH"), ("\x0c", "form feed"), ("\x1c", "file separator"), ("\x7f", "DEL"),
    ("\x85", "next line"),
])
@pytest.mark.parametrize("where", ["qid", "docid"])
def test_an_id_holding_a_control_character_is_refused_at_its_line(
        char: str, name: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The case: a NUL in a qid of both files was counted unanswered and scored 0;
    # in a doc id trec_eval scores garbage (nDCG@10 1.4e14 measured), in two qids it aborts.
    qid, docid = ("q" + char + "a", "d1") if where == "qid" else ("q1", "d" + char + "a")
    qrels = tmp_path / "qrels.trec"
    qrels.write_text(f"q0 0 d0 1\n{qid} 0 {docid} 1\n", encoding="utf-8")
    run = tmp_path / "run.trec"
    run.write_text(f"q0 Q0 d0 1 2.0 t\n{qid} Q0 {docid} 1 1.0 t\n", encoding="utf-8")
    code, out, err = _score(qrels, run, capsys)
    assert (code, out) == (EXIT_INPUT, ""), name
    column = len(qid.split(char)[0]) + 1 if where == "qid" else len(f"{qid} 0 d") + 1
    assert _one_line_error(err) == (f"{qrels}:2: control character U+{ord(char):04X} at column {column}; expected "
                                    "printable text, fields separated by spaces or tabs, lines ending \\n or \\r\\n")


def test_a_control_character_in_the_run_alone_names_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 d1 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\rq1 Q0 d3 3 0.5 t\n")  # a lone \r is no line break
    code, _out, err = _score(qrels, run, capsys)
    assert code == EXIT_INPUT
    assert _one_line_error(err).startswith(f"{run}:2: control character U+000D at column 17;")


def test_tabs_crlf_and_a_byte_order_mark_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytrec_eval")
    qrels = tmp_path / "qrels.trec"
    qrels.write_bytes("\ufeffq1\t0\td1\t1\r\nq2 0 d2 1\r\n".encode())  # BOM: not part of the first qid
    run = tmp_path / "run.trec"
    run.write_bytes(b"q1\tQ0\td1\t1\t1.0\tt\r\nq2 Q0 d2 1 1.0 t")  # no break after the last line
    code, out, _err = _score(qrels, run, capsys, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["unanswered"] == []
    assert doc["measures"]["MRR"] == 1.0


# Every refusal the reader had before it was rewritten, each at its line.
REFUSALS = [
    ("qrels", "q1 0 d1\n", "1: qrels line needs 4 fields (qid iter docid rel), got 3"),
    ("qrels", "# c\nq1 0 d1 one\n", "2: relevance 'one' is not an integer"),
    ("qrels", "q1 0 d1 1\n\nq1 0 d2 -1\n",
     "3: relevance -1 is negative; expected a grade >= 0 (0 = judged not relevant)"),
    ("qrels", "q1 0 d1 1\nq1 9 d1 1\nq1 0 d1 2\n", "3: q1 d1 judged twice with different grades"),
    ("run", "q1 Q0 d1 1 1.0\n", "1: run line needs 6 fields (qid Q0 docid rank score tag), got 5"),
    ("run", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 two 0.5 t\n", "2: rank 'two' is not an integer"),
    ("run", "q1 Q0 d1 1 high t\n", "1: score 'high' is not a number"),
    ("run", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 nan t\n", "2: score 'nan' is not finite"),
    ("run", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 -inf t\n", "2: score '-inf' is not finite"),
    ("run", "q1 Q0 d1 1 1.0 t\nq2 Q0 d1 1 1.0 t\nq1 Q0 d1 3 0.2 t\n", "3: q1 lists d1 twice"),
]


@pytest.mark.parametrize("block_chars", [None, 5])
@pytest.mark.parametrize(("kind", "text", "problem"), REFUSALS)
def test_every_check_is_kept_and_names_its_line(kind: str, text: str, problem: str, block_chars: int | None,
                                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block_chars:  # the same file read a few characters at a time: lines cross every block boundary
        monkeypatch.setattr(harness.inputfiles, "BLOCK_CHARS", block_chars)
    path = tmp_path / f"{kind}.trec"
    path.write_text(text)
    with pytest.raises(InputDataError) as refused:
        read_qrels(path) if kind == "qrels" else read_run(path)
    assert str(refused.value) == f"{path}:{problem}"


def test_the_three_tie_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytrec_eval")
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 a 1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 b 3 1.0 t\nq1 Q0 a 1 1.0 t\nq1 Q0 c 2 2.0 t\n")
    # trec_eval: c (2.0), then the tie at 1.0 by doc id descending: b, a -> a at 3
    # docid: c, then a, b -> a at 2;  rank: the rank column, a (1), c (2), b (3) -> a at 1
    expected = {"trec_eval": 1 / 3, "docid": 1 / 2, "rank": 1.0}
    for policy, mrr in expected.items():
        code, out, _err = _score(qrels, run, capsys, "--json", "--ties", policy)
        doc = json.loads(out)
        assert code == 0
        assert doc["measures"]["MRR"] == pytest.approx(mrr), policy
        assert doc["ties"] == {"policy": policy, "queries_with_tied_scores": ["q1"]}


def test_position_scores_follow_the_policy(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 b 3 1.0 t\nq1 Q0 a 1 1.0 t\nq1 Q0 c 2 2.0 t\nq2 Q0 x 1 -0.0 t\nq2 Q0 y 2 0.0 t\n")
    positions, ties = read_run(run, ties="trec_eval")
    assert positions == {"q1": {"c": 3.0, "b": 2.0, "a": 1.0}, "q2": {"y": 2.0, "x": 1.0}}
    assert ties == {"q1": 1, "q2": 1}  # -0.0 ties 0.0, as trec_eval compares them
    assert list(read_run(run, ties="docid")[0]["q1"]) == ["c", "a", "b"]
    assert list(read_run(run, ties="rank")[0]["q1"]) == ["a", "c", "b"]


def _random_files(folder: Path, seed: int, queries: int, docs: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    run_lines, qrels_lines = [], []
    for q in range(queries):
        picked = rng.sample(range(5000), docs)
        for rank, d in enumerate(picked, start=1):
            run_lines.append(f"q{q} Q0 D{d} {rank} {rng.randint(0, 40) / 4} t")  # many ties
            if rng.random() < 0.6:
                qrels_lines.append(f"q{q} 0 D{d} {rng.choice((0, 0, 0, 1, 2))}")
        qrels_lines += [f"q{q} 0 U{u} 1" for u in range(rng.randint(0, 3))]  # relevant, never retrieved
    rng.shuffle(run_lines)  # queries interleaved: the reader must not rely on grouping
    (folder / "qrels.trec").write_text("\n".join(qrels_lines) + "\n")
    (folder / "run.trec").write_text("\n".join(run_lines) + "\n")
    return folder / "qrels.trec", folder / "run.trec"


@pytest.mark.parametrize("block_chars", [None, 97])
def test_scores_are_plain_pytrec_evals_on_the_same_files(block_chars: int | None, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    if block_chars:
        monkeypatch.setattr(harness.inputfiles, "BLOCK_CHARS", block_chars)
    qrels, run = _random_files(tmp_path, seed=34, queries=40, docs=150)
    code, out, _err = _score(qrels, run, capsys, "--json")
    assert code == 0
    ours = json.loads(out)
    with qrels.open() as q, run.open() as r:
        plain = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), {"ndcg_cut.10", "recip_rank"}).evaluate(
            pytrec_eval.parse_run(r))
    assert ours["queries"] == len(plain) == 40 and ours["unanswered"] == []
    for qid, values in plain.items():  # trec_eval's own tie rule is the default policy: the same ranking
        assert ours["per_query"][qid]["nDCG@10"] == values["ndcg_cut_10"]
        assert ours["per_query"][qid]["MRR"] == values["recip_rank"]
    assert math.isclose(ours["measures"]["nDCG@10"], sum(v["ndcg_cut_10"] for v in plain.values()) / 40)
