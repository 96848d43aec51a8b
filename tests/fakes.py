"""Test doubles shared by several test files (imported as ``fakes``: pytest puts tests/ on sys.path)."""

from __future__ import annotations

from pathlib import Path


class Clock:
    """A clock that only moves when something sleeps: ``sleep`` records and advances, ``time()`` and
    calling it read the time (retry loops take either shape)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def time(self) -> float:
        return self.now

    def __call__(self) -> float:
        return self.now


def claimed_state(folder: Path, identity: str = "0" * 64) -> Path:
    """A folder holding only a state's state.json whose contents record ``identity``, registered as the
    Kubernetes launcher registers its copy (harness.state.contents.claim_only): identity tests need no
    built state."""
    import json

    from harness.state import STATE_SCHEMA
    from harness.state.contents import CONTENTS_SCHEMA, claim_only

    folder.mkdir(parents=True, exist_ok=True)
    claim = {"schema": STATE_SCHEMA, "corpora": [], "chunking": {}, "index": {},
             "contents": {"schema": CONTENTS_SCHEMA, "files": {}, "identity": identity}}
    (folder / "state.json").write_text(json.dumps(claim) + "\n")
    claim_only(folder)
    return folder
