"""Arms that share legs write the bytes they write alone (harness.bench.group).

Every arm of the built-in catalogue runs twice over one small synthetic state: alone
(``run_bench``: its own context, its own legs, its own cross-encoder calls) and inside its legs
group (``GroupRun``: one context, legs fetched once, cross-encoder calls cached). Every results
file but runinfo.json (durations, and what was shared) must have the same sha256. The embedder is
a hash and the cross-encoder a deterministic stand-in, so this needs no model and runs in seconds;
tests/test_sweep_legs.py does the same through the real executor and the real model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.bench.config import BenchConfig
from harness.bench.group import GroupRun, fetch_legs
from harness.bench.run import run_bench
from harness.errors import IntegrityError, UsageError
from harness.retrieval.legs import LegCache, LegTable
from harness.state import State
from harness.state.build import build_state
from harness.sweep.catalogue import CATALOGUE, Arm
from harness.sweep.legs import group_arms
from harness.synthetic.adapter import read_synthetic
from harness.synthetic.folders import write_files
from harness.synthetic.generator import generate

SEED = 20260812
RESULTS = ("metrics.json", "metrics.md", "per_query.json", "run.trec", "qrels.trec", "answers.md")


class HashEmbedder:
    identity = "hash-embedder@test"
    dimension = 8

    def __init__(self) -> None:
        self.calls = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1
                for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


class FakeCrossEncoder:
    """A deterministic stand-in for the cross-encoder: a score per (query, passage) from a hash."""

    calls = 0

    def __init__(self, path: Path) -> None:
        self.provenance = {"kind": "trained", "weights_sha256": "0" * 64, "path_name": path.name}

    def score(self, query: str, passages: list[str]) -> list[float]:
        FakeCrossEncoder.calls += 1
        return [int.from_bytes(hashlib.sha256(f"{query}\t{p}".encode()).digest()[:4], "big") / 2**32
                for p in passages]

    def cache_key(self) -> dict[str, Any]:
        return {"weights_sha256": self.provenance["weights_sha256"], "scoring": "a hash of the pair"}


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> State:
    root = tmp_path_factory.mktemp("bench-group")
    write_files(root / "corpus", generate(SEED, 20))
    build_state(root / "state", [read_synthetic(root / "corpus")], {"header": HashEmbedder(), "body": HashEmbedder()})
    return State.open(root / "state")


@pytest.fixture(autouse=True)
def _fake_cross_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.bench.context.CrossEncoderReranker", FakeCrossEncoder)


def _config(arm: Arm, reranker: Path) -> BenchConfig:
    return BenchConfig(arm=arm.arm_config, control_name=arm.name, reranker=reranker)


def _shas(folder: Path) -> dict[str, str]:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in RESULTS}


def test_every_catalogue_arm_writes_the_same_bytes_in_its_group_as_alone(state: State, tmp_path: Path) -> None:
    reranker = tmp_path / "reranker"
    alone: dict[str, dict[str, str]] = {}
    for arm in CATALOGUE.arms:
        run_bench(state, _config(arm, reranker), HashEmbedder(), tmp_path / "alone" / arm.name)
        alone[arm.name] = _shas(tmp_path / "alone" / arm.name)
    calls_alone = FakeCrossEncoder.calls

    FakeCrossEncoder.calls = 0
    groups = group_arms(CATALOGUE.arms, "embedded")
    assert len(groups) < len(CATALOGUE.arms)
    embedders = []
    for group in groups:
        embedder = HashEmbedder()
        embedders.append(embedder)
        run = GroupRun.open(state, _config(group.arms[0], reranker), embedder)
        for arm in group.arms:
            out = tmp_path / "group" / arm.name
            run.run(_config(arm, reranker), out)
            assert _shas(out) == alone[arm.name], arm.name
            legs = json.loads((out / "runinfo.json").read_text())["legs"]
            assert legs["group"] == group.key and legs["position"] == group.arms.index(arm)
            # the first arm fetches the group's legs, every later one reuses them all
            assert (legs["fetched"] == 0) == (legs["position"] > 0) and legs["reused"] + legs["fetched"] > 0
    assert all(e.calls == 1 for e in embedders)  # the queries are encoded once per group
    # budget-48-12-4, its repeat, the final_chunks and max_chunks_per_file arms, pool-48 and
    # rerank-48-12-4 make the same cross-encoder calls: one arm's worth is made, not six
    assert 0 < FakeCrossEncoder.calls < calls_alone


def test_rerank_arms_read_the_machines_score_cache_and_write_the_bytes_they_write_alone(state: State,
                                                                                       tmp_path: Path) -> None:
    """Every rerank arm of the catalogue, group by group (one process each in a sweep), over one score
    cache: cold, a pair asked by an earlier group is read, not scored, so the pairs scored are the
    cache's rows, once each; warm (fresh processes, a second sweep), nothing is scored but one pair a
    process, the check that the cache still gives the model's bits. The results are the bytes of the
    arm alone."""
    from harness.retrieval.scorecache import StoredScores

    reranker, cache = tmp_path / "reranker", tmp_path / "rerank-cache"
    rerank = [a for a in CATALOGUE.arms if a.needs_reranker]
    groups = group_arms(rerank, "embedded")
    assert len(groups) > 1
    alone = {}
    for arm in rerank:
        run_bench(state, _config(arm, reranker), HashEmbedder(), tmp_path / "alone" / arm.name)
        alone[arm.name] = _shas(tmp_path / "alone" / arm.name)
    counts: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    for sweep in counts:
        for group in groups:
            run = GroupRun.open(state, _config(group.arms[0], reranker), HashEmbedder(), score_cache=cache)
            for arm in group.arms:
                out = tmp_path / sweep / arm.name
                run.run(_config(arm, reranker), out)
                assert _shas(out) == alone[arm.name], (sweep, arm.name)
                info = json.loads((out / "runinfo.json").read_text())["rerank"]
                counts[sweep].append(info)
            assert Path(info["cache"]).parent == cache
    store = StoredScores(cache, FakeCrossEncoder(reranker).cache_key())
    assert sum(c["scored"] for c in counts["cold"]) == len(store) > 0
    assert sum(c["from_cache"] for c in counts["cold"]) > 0  # later groups read what earlier ones scored
    assert sum(c["scored"] for c in counts["warm"]) == 0
    assert sum(c["checked"] for c in counts["warm"]) == len(groups)  # one check per process
    # each process reads what it scored or read cold; what it answered from memory is the same
    assert [c["from_cache"] for c in counts["warm"]] == [c["scored"] + c["from_cache"] for c in counts["cold"]]
    assert [c["reused"] for c in counts["warm"]] == [c["reused"] for c in counts["cold"]]


def test_the_fusion_family_is_one_group_keyed_on_window_scope_and_embedded_text() -> None:
    fusion = CATALOGUE.family("fusion").arms
    (group,) = group_arms(fusion, "embedded")
    assert group.arms == fusion and group.key == {"embedding_text": "header", "fusion_window": 192, "scope": "corpus"}
    pool = {g.key["fusion_window"]: [a.name for a in g.arms]
            for g in group_arms(CATALOGUE.family("pool").arms, "embedded") if g.key}
    # pool-12 and pool-24 both fuse over max(100, min(4*size, 500)) = 100: one group
    assert pool == {192: ["pool-48"], 100: ["pool-12", "pool-24"], 128: ["pool-32"], 384: ["pool-96"]}
    assert all(len(g.arms) == 1 and g.key is None for g in group_arms(fusion, "stack"))
    assert all(len(g.arms) == 1 for g in group_arms(fusion, "embedded", share=False))


def test_published_legs_serve_an_arm_byte_for_byte_and_a_missing_query_is_refused(state: State,
                                                                                   tmp_path: Path) -> None:
    family = CATALOGUE.family("fusion")
    control, arm = family.control_arm, family.arm("norm-zscore-arith")
    reranker = tmp_path / "reranker"
    run_bench(state, _config(arm, reranker), HashEmbedder(), tmp_path / "alone")

    fetcher = GroupRun.open(state, _config(control, reranker), HashEmbedder())
    table = fetch_legs(fetcher.context, _config(control, reranker), {"state": "test", "embedder": "hash"})
    text = table.to_json()
    published = LegTable.model_validate_json(text)
    assert published.to_json() == text and len(published.rows) == len(fetcher.context.judged)

    reader = GroupRun.open(state, _config(arm, reranker), HashEmbedder(), published=published)
    reader.run(_config(arm, reranker), tmp_path / "read")
    assert _shas(tmp_path / "read") == _shas(tmp_path / "alone")
    legs = json.loads((tmp_path / "read" / "runinfo.json").read_text())["legs"]
    assert (legs["fetched"], legs["published"]) == (0, len(published.rows))

    short = published.model_copy(update={"rows": published.rows[1:]})
    lacking = GroupRun.open(state, _config(arm, reranker), HashEmbedder(), published=short)
    with pytest.raises(IntegrityError, match="hold no legs for the query"):
        lacking.run(_config(arm, reranker), tmp_path / "short")

    other = CATALOGUE.family("diversity").arm("retrieve-12")  # window 100, not 192
    with pytest.raises(UsageError, match="are for"):
        GroupRun.open(state, _config(other, reranker), HashEmbedder(), published=published)
    with pytest.raises(UsageError, match="fetches other legs"):
        reader.run(_config(other, reranker), tmp_path / "other")


def test_published_query_vectors_replace_encoding_bit_for_bit_and_a_missing_one_is_refused(
        state: State, tmp_path: Path) -> None:
    """A table carrying the group's query vectors: an arm reading it through ``TableEncoder`` (no model)
    writes the bytes of the arm alone; a query the table has no vector for is refused, not encoded."""
    import numpy as np

    from harness.retrieval.legs import TableEncoder

    family = CATALOGUE.family("fusion")
    control, arm = family.control_arm, family.arm("rrf-60")
    reranker = tmp_path / "reranker"
    run_bench(state, _config(arm, reranker), HashEmbedder(), tmp_path / "alone")
    fetcher = GroupRun.open(state, _config(control, reranker), HashEmbedder())
    texts = [q.text for q in fetcher.context.judged]
    table = fetch_legs(fetcher.context, _config(control, reranker), {"state": "test", "embedder": "hash"})
    published = LegTable.model_validate_json(table.with_vectors(texts, fetcher.context.vectors).to_json())
    assert np.array_equal(published.query_vectors(texts), np.asarray(fetcher.context.vectors, dtype=np.float32))

    encoder = TableEncoder(identity=HashEmbedder().identity, table=published)
    assert encoder.dimension == np.asarray(fetcher.context.vectors).shape[1]
    reader = GroupRun.open(state, _config(arm, reranker), encoder, published=published)
    reader.run(_config(arm, reranker), tmp_path / "read")
    assert _shas(tmp_path / "read") == _shas(tmp_path / "alone")
    legs = json.loads((tmp_path / "read" / "runinfo.json").read_text())["legs"]
    assert (legs["fetched"], legs["query_vectors"]) == (0, "published")

    assert published.vectors is not None
    short = published.model_copy(update={"vectors": {t: v for t, v in published.vectors.items() if t != texts[0]}})
    with pytest.raises(IntegrityError, match="hold no query vector for"):
        GroupRun.open(state, _config(arm, reranker), TableEncoder(identity=HashEmbedder().identity, table=short),
                      published=short)


def test_a_leg_cache_fetches_each_request_once_and_keeps_what_it_fetched() -> None:
    from harness.index.backend import LegHit
    from harness.retrieval.legs import leg_request

    cache = LegCache()
    fetched: list[Any] = []

    def fetch() -> Any:
        fetched.append(1)
        return (LegHit("a_0", 2.5),), (LegHit("b_1", 0.75),)

    first = cache.legs(leg_request("q", 192, "header"), fetch)
    again = cache.legs(leg_request("q", 192, "header"), fetch)
    other_scope = cache.legs(leg_request("q", 192, "header", file_uuids=["f"]), fetch)
    assert first is again and other_scope == first and len(fetched) == 2
    assert cache.counts() == {"fetched": 2, "reused": 1, "published": 0}
