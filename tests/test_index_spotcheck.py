"""Where the model is loaded to encode an arm's queries, 8 documents encoded again must give their stored
vectors (harness.index.spotcheck, issue 51). A vector file shuffled or negated, its digests re-recorded,
passes every digest and the finite, unit-norm check; on e2cb9a0 such states benched 0.3098 / 0.3024 with
exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.bench.config import BenchConfig
from harness.bench.context import open_context
from harness.corpora.qmsum import read_qmsum
from harness.errors import IntegrityError
from harness.index.spotcheck import MIN_COSINE, spot_rows
from harness.state import State
from harness.state.build import build_state
from harness.state.contents import contents_block
from harness.sweep.catalogue import CATALOGUE
from tests.test_ingest_eager import FIXTURE, HashEmbedder

VECTORS = "index/vectors-header.npy"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spotcheck") / "state"
    build_state(out, [read_qmsum(FIXTURE, manifest=FIXTURE / "SOURCES.tsv")], {"header": HashEmbedder()})
    return out


def _config() -> BenchConfig:
    arm = CATALOGUE.family("fusion").control_arm
    return BenchConfig(arm=arm.arm_config, control_name=arm.name)


def _forged(built: Path, tmp_path: Path, change: str) -> Path:
    """A copy of the state whose vectors were changed and every digest and the identity re-recorded."""
    import shutil

    state = tmp_path / "state"
    shutil.copytree(built, state)
    matrix = np.load(state / VECTORS)
    forged = {"negated": -matrix, "shuffled": np.roll(matrix, 1, axis=0),
              "one-row": np.where(np.arange(len(matrix))[:, None] == spot_rows(len(matrix))[3], -matrix, matrix)}
    np.save(state / VECTORS, forged[change].astype(np.float32))
    manifest = json.loads((state / "state.json").read_text())
    manifest["contents"] = contents_block(state, manifest)  # the vectors are finite and of unit norm
    (state / "state.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return state


def test_spot_rows_are_eight_evenly_spaced_with_both_ends() -> None:
    assert spot_rows(80) == [0, 11, 23, 34, 45, 56, 68, 79]
    assert spot_rows(3) == [0, 1, 2] and spot_rows(1) == [0] and spot_rows(0) == []


@pytest.mark.parametrize("change", ["negated", "shuffled", "one-row"])
def test_vectors_the_model_does_not_give_are_refused_when_the_queries_are_encoded(built: Path, tmp_path: Path,
                                                                                   change: str) -> None:
    state = State.open(_forged(built, tmp_path, change))  # every digest agrees: it opens
    docs = state.index.docs
    row = {"negated": 0, "shuffled": 0, "one-row": spot_rows(len(docs))[3]}[change]
    with pytest.raises(IntegrityError) as caught:
        open_context(state, _config(), HashEmbedder())
    said = str(caught.value)
    assert said.startswith(f"{state.path / VECTORS}: row {row} (document {docs[row]['id']}) has cosine ")
    cosine = float(said.split("has cosine ")[1].split()[0])
    assert cosine < MIN_COSINE and ("the vector hash-embedder@1 gives its text now" in said)
    assert said.endswith("`ragsweep state build --force --embedding-cache none` (a cache that holds the same "
                         "vectors would give them back)") and "\n" not in said
    if change == "negated":
        assert cosine == -1.0


def test_the_state_as_built_passes_and_costs_eight_encodes(built: Path) -> None:
    embedder = HashEmbedder()
    context = open_context(State.open(built), _config(), embedder)
    assert context.vectors is not None and embedder.calls == 2  # the queries, then the 8 documents
