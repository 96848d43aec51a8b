"""One measurement, one identity: what decides an embedded arm's numbers (the vectors, documents, index contents
and corpora) names the state, not the stack's bookkeeping the cluster's injector adds to state.json, so the
laptop's and the cluster's builds of one measurement share a sweep id (issue 51, "Two executors, two names")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.corpora.qmsum import read_qmsum
from harness.errors import IntegrityError
from harness.state import State, verified_identity, verified_measurement
from harness.state.build import build_state
from harness.state.contents import contents_block
from tests.test_ingest_eager import FIXTURE, HashEmbedder

STACK_BLOCK = {"index": "ragsweep-0123456789ab", "state_identity": "f" * 64, "analysis": "mirror",
               "provenance": {"header": {"verdict": "uniform"}}}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("measured") / "state"
    build_state(out, [read_qmsum(FIXTURE, manifest=FIXTURE / "SOURCES.tsv")], {"header": HashEmbedder()})
    return out


def _manifest(state: Path) -> dict[str, Any]:
    return dict(json.loads((state / "state.json").read_text(encoding="utf-8")))


def _with_stack_block(built: Path, copy: Path) -> Path:
    """``built`` as the injector's ``--backend stack`` build records it: the same files, state.json with the
    stack's ``backend`` and ``stack`` keys, and the contents block recorded over that claim."""
    shutil.copytree(built, copy)
    manifest = _manifest(copy)
    manifest.pop("contents")
    manifest.update({"backend": "stack", "stack": STACK_BLOCK})
    manifest["contents"] = contents_block(copy, manifest)
    (copy / "state.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return copy


def _sweep_id(state: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    capsys.readouterr()
    assert main(["sweep", "id", "--state", str(state), "--arms", "fusion", *extra]) == 0
    return capsys.readouterr().out.strip()


def test_the_injectors_stack_block_leaves_the_sweep_id_alone(built: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Before: fusion-30aa4378e6ad for the state, fusion-4394d8294d20 for its copy with a stack block."""
    stacked = _with_stack_block(built, tmp_path / "injector")
    assert _sweep_id(stacked, capsys) == _sweep_id(built, capsys)
    assert verified_identity(stacked) != verified_identity(built)  # the content address still sees the block
    assert verified_measurement(stacked) == verified_measurement(built)
    # the stack backend reads the stack block (its index, its analysis): there it stays part of the name
    assert _sweep_id(stacked, capsys, "--backend", "stack") != _sweep_id(built, capsys, "--backend", "stack")


def test_without_a_stack_block_the_measurement_identity_is_the_identity(built: Path) -> None:
    """No sweep id committed before changes: for a state without the stack's bookkeeping the two are equal."""
    manifest = _manifest(built)
    assert manifest["contents"]["measured"] == manifest["contents"]["identity"] == verified_identity(built)
    assert verified_measurement(built) == verified_identity(built)


def test_a_state_built_before_the_measurement_was_recorded_measures_under_its_identity(
        built: Path, tmp_path: Path) -> None:
    stacked = _with_stack_block(built, tmp_path / "older")
    manifest = _manifest(stacked)
    del manifest["contents"]["measured"]
    (stacked / "state.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert verified_measurement(stacked) == verified_identity(stacked) == manifest["contents"]["identity"]


def test_an_edited_measurement_identity_is_refused(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "edited"
    shutil.copytree(built, copy)
    manifest = _manifest(copy)
    manifest["contents"]["measured"] = "0" * 64
    (copy / "state.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IntegrityError, match=r"state\.json: contents\.measured was edited"):
        State.open(copy)
