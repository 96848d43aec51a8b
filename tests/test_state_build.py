"""state build --force builds beside the target and swaps only on success, and replaces a state only:
a failing rebuild leaves the old state intact, and a folder that is not a state is never deleted."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpora.qmsum import read_qmsum
from harness.errors import UsageError
from harness.model import Corpus
from harness.state.build import build_state
from tests.test_ingest_eager import FIXTURE, HashEmbedder


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return read_qmsum(FIXTURE, manifest=FIXTURE / "SOURCES.tsv")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_failing_rebuild_leaves_the_old_state_intact(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "state"
    build_state(out, [corpus], {"header": HashEmbedder()})
    before = _tree(out)

    class Refuses(HashEmbedder):
        def encode(self, texts: list[str]):  # type: ignore[no-untyped-def]
            raise RuntimeError("the encoder is gone")

    with pytest.raises(RuntimeError, match="the encoder is gone"):
        build_state(out, [corpus], {"header": Refuses()}, force=True)
    assert _tree(out) == before  # the old state, byte for byte
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]  # no .partial, no .old left behind
    build_state(out, [corpus], {"header": HashEmbedder(identity="hash-embedder@2")}, force=True)
    assert _tree(out) != before and (out / "state.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]


def test_force_replaces_a_state_only(corpus: Corpus, tmp_path: Path) -> None:
    precious = tmp_path / "photos"
    precious.mkdir()
    (precious / "holiday.jpg").write_bytes(b"not a state")
    with pytest.raises(UsageError, match="is not a state"):
        build_state(precious, [corpus], {"header": HashEmbedder()}, force=True)
    assert _tree(precious) == {"holiday.jpg": b"not a state"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["photos"]

    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    with pytest.raises(UsageError, match="is a file"):
        build_state(a_file, [corpus], {"header": HashEmbedder()}, force=True)
    assert a_file.read_text() == "keep me"

    empty = tmp_path / "empty"
    empty.mkdir()
    build_state(empty, [corpus], {"header": HashEmbedder()})  # an empty folder is a destination, no --force needed
    assert (empty / "state.json").is_file()
    with pytest.raises(UsageError, match="pass --force"):
        build_state(empty, [corpus], {"header": HashEmbedder()})
