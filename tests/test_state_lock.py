"""Two `state build` runs to one --out (harness.state.lock, issue 51): the second refuses at once naming the
first, never deletes its work, and a dead build's temporary folder is removed. On e2cb9a0 the temporary
folder had one fixed name (STATE.partial): the second build deleted the first's work in progress, and the
first died with an internal error after its whole encode."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from harness.corpora.qmsum import read_qmsum
from harness.errors import UsageError
from harness.model import Corpus
from harness.state import State
from harness.state.build import build_state
from tests.test_ingest_eager import FIXTURE, HashEmbedder

REPO = Path(__file__).resolve().parents[1]
REFUSAL = r"^--out {out} is being built by pid {pid} on {host} since \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ " \
          r"\(lock \.state\.lock\); wait for that build or choose another --out$"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_qmsum(FIXTURE, manifest=FIXTURE / "SOURCES.tsv")


class Held(HashEmbedder):
    """An encoder that stops in its first call until the test lets it go: a build caught mid-encode."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def encode(self, texts: list[str]) -> np.ndarray:
        self.started.set()
        assert self.release.wait(60)
        return super().encode(texts)


def test_a_second_build_to_one_out_refuses_and_the_first_finishes(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "state"
    held = Held()
    failed: list[BaseException] = []

    def first() -> None:
        try:
            build_state(out, [corpus], {"header": held})
        except BaseException as e:  # the test reports it
            failed.append(e)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert held.started.wait(60)
        (partial,) = [p.name for p in tmp_path.iterdir() if ".partial-" in p.name]
        assert partial.startswith(f"state.partial-{os.getpid()}-")
        with pytest.raises(UsageError, match=REFUSAL.format(out=out, pid=os.getpid(), host=socket.gethostname())):
            build_state(out, [corpus], {"header": HashEmbedder()})
        assert (tmp_path / partial).is_dir()  # the first build's work in progress, untouched
    finally:
        held.release.set()
        thread.join(60)
    assert failed == []
    assert State.open(out).identity
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]  # no lock file, no temporary folder left


def test_a_dead_builds_temporary_folder_is_removed_under_the_lock(corpus: Corpus, tmp_path: Path) -> None:
    for dead in ("state.partial-4242-0badf00d", "state.partial"):  # a kill -9 of this build and of e2cb9a0's
        (tmp_path / dead / "index").mkdir(parents=True)
        (tmp_path / dead / "index" / "vectors-header.npy").write_bytes(b"half")
    (tmp_path / "state.partial-notes").mkdir()  # not ours: another folder that only looks alike
    (tmp_path / "state.partial-notes" / "x").write_text("kept")
    build_state(tmp_path / "state", [corpus], {"header": HashEmbedder()})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state", "state.partial-notes"]


_HOLD = """
import sys
from pathlib import Path
from harness.state.lock import build_lock
with build_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_the_command_refuses_at_once_before_reading_a_corpus_or_loading_a_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "state"

    def no_model(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("harness.index.embed.SentenceTransformerEmbedder", no_model)
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(out)], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        code = main(["state", "build", "--corpus", f"qmsum={FIXTURE}", "--manifest", f"qmsum={FIXTURE / 'SOURCES.tsv'}",
                     "--out", str(out), "--embedding-cache", "none"])
        err = capsys.readouterr().err
    finally:
        holder.communicate("", timeout=60)
    assert code == 2, err
    pattern = REFUSAL.format(out=out, pid=holder.pid, host=socket.gethostname()).lstrip("^")
    assert re.match(rf"^ragsweep: error: {pattern}\n$", err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the holder let go: its lock file is gone
