"""jobs/sync.py: the init containers' entrypoint, from its flags or their RAGSWEEP_* twins."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from harness.errors import EXIT_INTEGRITY
from harness.sweep.k8s import sync as library
from jobs.sync import main


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    src = tmp_path / "state"
    (src / "index").mkdir(parents=True)
    (src / "state.json").write_text('{"schema": "x"}\n')
    (src / "index" / ".tantivy-meta.lock").write_text("")
    (src / "index" / "docs.jsonl").write_text("a\nb\n")
    return src


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_push_with_flags_then_pull_from_the_job_specs_variables(folder: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    assert main(["push", "--store", str(store), "--from", str(folder), "--key", "state/state.tar.gz",
                 "--beside", "state.json"]) == 0
    assert (store / "state" / "state.json").read_text() == '{"schema": "x"}\n'
    monkeypatch.setenv("RAGSWEEP_STORE", str(store))
    monkeypatch.setenv("RAGSWEEP_SYNC_KEY", "state/state.tar.gz")
    monkeypatch.setenv("RAGSWEEP_SYNC_OUT", str(tmp_path / "out"))
    assert main(["pull"]) == 0
    assert _files(tmp_path / "out") == _files(folder)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"pushed {folder} to ") and out[1].startswith("pulled ")


def test_a_missing_archive_is_one_error_line_with_the_integrity_code(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["pull", "--store", str(tmp_path / "store"), "--key", "state/state.tar.gz",
                 "--out", str(tmp_path / "out")])
    assert code == EXIT_INTEGRITY
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("jobs.sync: error: ") and "no state/state.tar.gz (waited 0s)" in line
    assert not (tmp_path / "out").exists()


def test_a_missing_flag_names_its_variable_too(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("RAGSWEEP_STORE", "RAGSWEEP_SYNC_KEY", "RAGSWEEP_SYNC_FROM"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["push"])
    assert exit_.value.code == 2
    assert "missing --store, --key, --source (or their RAGSWEEP_* env)" in capsys.readouterr().err


def test_library_warnings_print_under_the_jobs_name(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    real_push = library.push

    def push_after_a_retry(*args: object, **kwargs: object) -> str:
        logging.getLogger("harness.retries").warning("put k: attempt 1 failed (Timeout: t); retrying in 1.0s")
        return real_push(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(library, "push", push_after_a_retry)
    before = list(logging.getLogger("harness").handlers)
    assert main(["push", "--store", str(tmp_path / "store"), "--from", str(folder), "--key", "k.tar.gz"]) == 0
    assert capsys.readouterr().err == "jobs.sync: warning: put k: attempt 1 failed (Timeout: t); retrying in 1.0s\n"
    assert logging.getLogger("harness").handlers == before
