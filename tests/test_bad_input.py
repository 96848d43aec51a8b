"""Bad input tried as a new user would (issue 14): one line, the documented exit code, nothing half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_INPUT, EXIT_USAGE


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("ragsweep: error: "), err
    return err


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# --- a folder where a file is expected --------------------------------------------------------------

FOLDER_AS_FILE = {
    "score --run": ["score", "--qrels", "{file}", "--run", "{folder}"],
    "score --qrels": ["score", "--qrels", "{folder}", "--run", "{file}"],
    "corpus inspect --manifest": ["corpus", "inspect", "qmsum", "--dest", "{tmp}", "--manifest", "{folder}"],
    "sweep run --manifest": ["sweep", "run", "--state", "{tmp}", "--manifest", "{folder}", "--out", "{tmp}/out"],
    "agreement --manifest": ["agreement", "--manifest", "{folder}"],
    "agreement --catalogue": ["agreement", "--sweep", "{tmp}", "--sweep-id", "s", "--catalogue", "{folder}"],
}


@pytest.mark.parametrize("argv", FOLDER_AS_FILE.values(), ids=FOLDER_AS_FILE.keys())
def test_a_folder_where_a_file_is_expected(argv: list[str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    file = tmp_path / "q.trec"
    file.write_text("q1 0 d1 1\n")
    before = _tree(tmp_path)
    args = [a.format(folder=folder, file=file, tmp=tmp_path) for a in argv]
    assert main(args) == EXIT_INPUT
    assert _one_line_error(capsys) == f"ragsweep: error: {folder}: is a folder; expected a file"
    assert _tree(tmp_path) == before


# --- an existing file as --dest ------------------------------------------------------------------------

@pytest.mark.parametrize("action", ["fetch", "verify", "inspect", "report"])
def test_an_existing_file_as_dest_is_a_usage_error(action: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "qmsum"
    dest.write_text("not a folder\n")
    assert main(["corpus", action, "qmsum", "--dest", str(dest)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""  # verify used to print a FAIL line per artefact first
    assert captured.err.count("\n") == 1 and f"ragsweep: error: --dest {dest}" in captured.err
    assert _tree(tmp_path) == ["qmsum"]
    assert dest.read_text() == "not a folder\n"


# --- synth select with a budget that keeps no query of a class --------------------------------------------

def test_select_keeping_no_multi_file_query_reports_r_at_1_as_na(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 3, 20 meetings, budget 5 keeps no multi_file query: the pooled R@1 is None, not 0."""
    assert main(["synth", "generate", "--seed", "3", "--meetings", "20", "--out", str(tmp_path / "full")]) == 0
    capsys.readouterr()
    assert main(["synth", "select", "--from", str(tmp_path / "full"), "--budget", "5",
                 "--out", str(tmp_path / "sel")]) == 0
    out = capsys.readouterr().out
    assert "multi_file 0;" in out
    assert "multi_file R@1 n/a (no queries)" in out
