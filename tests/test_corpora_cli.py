"""``ragsweep corpus ...`` through harness.cli.main: exit codes, and one-line errors on stderr."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.commands import corpus as corpus_cmd
from harness.model import word_count

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
MANIFEST = str(FIXTURE / "SOURCES.tsv")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(err: str) -> None:
    assert err.startswith("ragsweep: error: ")
    assert err.count("\n") == 1 and err.endswith("\n")


def test_list_prints_the_registry(capsys):
    code, out, err = run(capsys, "corpus", "list")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["name", "tier", "licence", "judgements", "manifest"]
    assert [line.split()[0] for line in lines[1:]] == [
        "qmsum",
        "ami",
        "icsi",
        "earnings21",
        "locov1",
        "miracl",
        "ciral",
        "mrtydi",
        "meetingbank",
        "elitr",
    ]
    meetingbank = next(line for line in lines if line.startswith("meetingbank"))
    assert "CC BY-NC-ND 4.0" in meetingbank and " B " in meetingbank
    qmsum = next(line for line in lines if line.startswith("qmsum"))
    assert "pinned" in qmsum and "1,576 human queries with gold spans" in qmsum
    assert " none " in next(line for line in lines if line.startswith("ami"))


def test_fetch_then_verify(capsys, tmp_path):
    dest = str(tmp_path / "q")
    code, out, err = run(
        capsys,
        "corpus",
        "fetch",
        "qmsum",
        "--dest",
        dest,
        "--mirror",
        FIXTURE.as_uri(),
        "--manifest",
        MANIFEST,
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == ["fetched data/ALL/test/Bfx002.json", "fetched data/ALL/test/FX1001a.json"]
    assert out.splitlines()[-1].endswith("5 fetched, 0 already present")
    code, out, err = run(capsys, "corpus", "verify", "qmsum", "--dest", dest, "--manifest", MANIFEST)
    assert (code, err) == (0, "")
    assert "5 artefacts verified" in out

    (tmp_path / "q" / "LICENSE").unlink()
    code, out, err = run(capsys, "corpus", "verify", "qmsum", "--dest", dest, "--manifest", MANIFEST)
    assert code == 5
    assert out.splitlines() == ["FAIL LICENSE: missing"]
    assert_one_line_error(err)
    assert "1 of 5 artefacts" in err and "first: LICENSE: missing" in err


def test_fetch_checksum_mismatch_exits_5(capsys, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(FIXTURE, mirror)
    (mirror / "LICENSE").write_bytes(b"x" * 293)
    code, _, err = run(
        capsys,
        "corpus",
        "fetch",
        "qmsum",
        "--dest",
        str(tmp_path / "q"),
        "--mirror",
        str(mirror),
        "--manifest",
        MANIFEST,
    )
    assert code == 5
    assert_one_line_error(err)
    assert "LICENSE: sha256 mismatch" in err


def test_fetch_quiet_prints_only_the_summary(capsys, tmp_path):
    argv = ["corpus", "fetch", "qmsum", "--dest", str(tmp_path / "q"), "--mirror", str(FIXTURE), "--manifest",
            MANIFEST, "--quiet"]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, "")
    assert out == f"qmsum: 5 artefacts under {tmp_path / 'q'}: 5 fetched, 0 already present\n"


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_probe_says_yes_or_no_in_one_line(capsys, tmp_path):
    first = "data/ALL/test/Bfx002.json"
    code, out, err = run(capsys, "corpus", "probe", "qmsum", "--mirror", FIXTURE.as_uri(), "--manifest", MANIFEST)
    assert (code, out, err) == (0, f"qmsum: mirror reachable at {FIXTURE.as_uri()}/{first}\n", "")
    code, out, err = run(capsys, "corpus", "probe", "qmsum", "--mirror", str(tmp_path), "--manifest", MANIFEST)
    assert (code, err) == (5, "")
    assert out == f"qmsum: mirror unreachable: No such file or directory at {tmp_path}/{first}\n"
    port = _closed_port()
    code, out, err = run(capsys, "corpus", "probe", "qmsum", "--mirror", f"http://127.0.0.1:{port}/q",
                         "--manifest", MANIFEST, "--timeout", "2")
    assert (code, err) == (5, "")
    assert out == f"qmsum: mirror unreachable: [Errno 111] Connection refused at http://127.0.0.1:{port}/q/{first}\n"


def test_tier_b_without_acknowledgement_exits_6(capsys, tmp_path):
    code, _, err = run(capsys, "corpus", "fetch", "meetingbank", "--dest", str(tmp_path / "mb"))
    assert code == 6
    assert_one_line_error(err)
    assert "--accept-noncommercial" in err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["corpus", "fetch", "ami", "--dest", "{tmp}"], "no artefact manifest is pinned yet"),
        (["corpus", "fetch", "nope", "--dest", "{tmp}"], "unknown corpus 'nope'"),
        (["corpus", "inspect", "ami", "--dest", "{tmp}"], "no reader for corpus 'ami' yet"),
        (["corpus", "report", "qmsum", "--dest", "{tmp}/absent"], "is not a folder"),
    ],
)
def test_usage_errors_exit_2(capsys, tmp_path, argv, fragment):
    code, _, err = run(capsys, *(a.replace("{tmp}", str(tmp_path)) for a in argv))
    assert code == 2
    assert_one_line_error(err)
    assert fragment in err


def test_corpus_without_an_action_prints_help_and_exits_2(capsys):
    code, out, _ = run(capsys, "corpus")
    assert code == 2
    assert "fetch" in out and "verify" in out


def test_inspect_counts_the_fixture(capsys):
    code, out, err = run(
        capsys, "corpus", "inspect", "qmsum", "--dest", str(FIXTURE), "--manifest", MANIFEST, "--json"
    )
    assert (code, err) == (0, "")
    summary = json.loads(out)
    words = 0
    for path in (FIXTURE / "data").rglob("*.json"):
        raw = json.loads(path.read_text(encoding="utf-8"))
        words += sum(word_count(t["content"]) for t in raw["meeting_transcripts"])
    assert summary["files"] == 4
    assert summary["files_by_domain"] == {"Academic": 2, "Committee": 1, "Product": 1}
    assert summary["turns"] == 15 + 12 + 16 + 13
    assert summary["words"] == words
    assert summary["files_with_real_timings"] == 0
    assert summary["queries"] == 12
    assert summary["queries_by_class"] == {"lookup": 8, "summarize": 4, "multi_file": 0, "aggregation": 0}
    assert summary["dropped"] == {"general_query_not_scored": 5, "specific_query_without_span": 0}
    assert summary["version"] == "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
    # Each fixture turn is one chunk on a non-overlapping synthetic timeline, so every gold
    # span covers a chunk: nothing is unjudgeable (None only while harness.judge is absent).
    judge_built = importlib.util.find_spec("harness.judge") is not None
    assert summary["queries_dropped_unjudgeable"] == (0 if judge_built else None)


def test_inspect_text_output(capsys):
    code, out, _ = run(capsys, "corpus", "inspect", "qmsum", "--dest", str(FIXTURE), "--manifest", MANIFEST)
    assert code == 0
    assert "files: 4" in out.splitlines()
    assert 'queries_by_class: {"aggregation": 0, "lookup": 8, "multi_file": 0, "summarize": 4}' in out


def test_unjudgeable_is_none_until_the_judge_stage_exists(monkeypatch):
    from harness.corpora.qmsum import read_qmsum

    corpus = read_qmsum(FIXTURE, manifest=Path(MANIFEST))
    monkeypatch.setitem(sys.modules, "harness.judge", None)
    assert corpus_cmd.count_unjudgeable(corpus) is None


def test_inspect_of_a_malformed_corpus_exits_4_naming_file_and_field(capsys, tmp_path):
    dest = tmp_path / "bad"
    shutil.copytree(FIXTURE, dest)
    rel = "data/ALL/val/parks_3.json"
    raw = json.loads((dest / rel).read_text(encoding="utf-8"))
    raw["specific_query_list"][2]["relevant_text_span"] = [["10", "13"]]
    data = json.dumps(raw).encode("utf-8")
    (dest / rel).write_bytes(data)
    import hashlib

    lines = []
    for line in (dest / "SOURCES.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith(rel + "\t"):
            line = f"{rel}\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\tCommittee"
        lines.append(line)
    (dest / "SOURCES.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _, err = run(
        capsys, "corpus", "inspect", "qmsum", "--dest", str(dest), "--manifest", str(dest / "SOURCES.tsv")
    )
    assert code == 4
    assert_one_line_error(err)
    assert err.strip().endswith(
        f"{rel}: specific_query_list[2].relevant_text_span[0]: end turn 13 is past the last turn (12)"
    )


def test_report_prints_a_table_and_json(capsys):
    code, out, err = run(capsys, "corpus", "report", "qmsum", "--dest", str(FIXTURE), "--manifest", MANIFEST)
    assert (code, err) == (0, "")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:6]}
    assert set(rows) == {"pooled", "Academic", "Committee", "Product"}
    assert rows["pooled"][1:3] == ["4", "12"]
    code, out, _ = run(
        capsys, "corpus", "report", "qmsum", "--dest", str(FIXTURE), "--manifest", MANIFEST, "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["pooled"]["queries"] == 12
    assert report["by_domain"]["Academic"]["meetings"] == 2


def test_reader_registry_resolves_lazily():
    assert corpus_cmd.READERS["qmsum"] == "harness.corpora.qmsum:read_qmsum"
    from harness.corpora.qmsum import read_qmsum

    assert corpus_cmd.reader_for("qmsum") is read_qmsum
