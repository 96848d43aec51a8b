"""A corpus state built from the hand-written QMSum-format fixture with the real embedding model."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"


def qmsum_fixture_state(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """Build it under a fresh temporary folder ``name``; skips when sentence-transformers is missing."""
    pytest.importorskip("sentence_transformers")
    out = tmp_path_factory.mktemp(name) / "state"
    assert main(["state", "build", "--corpus", f"qmsum={FIXTURE}", "--manifest", f"qmsum={FIXTURE / 'SOURCES.tsv'}",
                 "--out", str(out)]) == 0
    return out
