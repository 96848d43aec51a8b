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
from typing import Any, ClassVar

import numpy as np
import pytest

from harness.bench.config import BenchConfig, covers
from harness.bench.group import WARM_PROBE, GroupRun, fetch_legs, prescore_order
from harness.bench.run import run_bench
from harness.errors import IntegrityError, UsageError
from harness.retrieval.legs import LegCache, LegTable
from harness.state import State
from harness.state.build import build_state
from harness.sweep.catalogue import CATALOGUE, Arm
from harness.sweep.legs import ArmGroup, arm_legs_key, group_arms
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
    asked: ClassVar[list[str]] = []  # the queries of the calls, in order

    def __init__(self, path: Path, device: str = "cpu", backend: str = "torch", onnx_dir: Path | None = None,
                 threads: int = 0) -> None:  # CrossEncoderReranker's settings, as the context passes them
        self.provenance = {"kind": "trained", "weights_sha256": "0" * 64, "path_name": path.name, "device": device}

    def score(self, query: str, passages: list[str]) -> list[float]:
        FakeCrossEncoder.calls += 1
        FakeCrossEncoder.asked.append(query)
        return [int.from_bytes(hashlib.sha256(f"{query}\t{p}".encode()).digest()[:4], "big") / 2**32
                for p in passages]

    def cache_key(self) -> dict[str, Any]:
        return {"weights_sha256": self.provenance["weights_sha256"], "scoring": "a hash of the pair"}


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> State:
    root = tmp_path_factory.mktemp("bench-group")
    write_files(root / "corpus", generate(SEED, 20, "easy"))
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
        run = GroupRun.open(state, _config(group.arms[0], reranker), embedder, key=group.key)
        fetched = 0
        for arm in group.arms:
            out = tmp_path / "group" / arm.name
            run.run(_config(arm, reranker), out)
            assert _shas(out) == alone[arm.name], arm.name
            legs = json.loads((out / "runinfo.json").read_text())["legs"]
            assert legs["group"] == group.key and legs["position"] == group.arms.index(arm)
            assert legs["window"] == arm_legs_key(arm)["fusion_window"] <= legs["group"]["fusion_window"]
            # the first arm fetches the group's legs (at the deepest window), every later one cuts them
            assert (legs["fetched"] == 0) == (legs["position"] > 0) and legs["reused"] + legs["fetched"] > 0
            fetched += legs["fetched"]
        assert fetched == len(run.context.judged)  # one request per query for the whole group
    # the header arms over windows 100 to 384 are one group; embed-body searches other vectors
    assert [g.key["fusion_window"] for g in groups if g.key] == [384, 192]
    # the queries are encoded once per group, and 8 documents once (harness.index.spotcheck)
    assert all(e.calls == 2 for e in embedders)
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
    (group,) = group_arms(rerank, "embedded")
    # spread over two processes as a sweep on two workers spreads them (each reads the group's legs)
    groups = [ArmGroup(group.arms[k::2], group.key) for k in range(2)]
    alone = {}
    for arm in rerank:
        run_bench(state, _config(arm, reranker), HashEmbedder(), tmp_path / "alone" / arm.name)
        alone[arm.name] = _shas(tmp_path / "alone" / arm.name)
    counts: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    for sweep in counts:
        for k, group in enumerate(groups):
            run = GroupRun.open(state, _config(group.arms[0], reranker), HashEmbedder(), score_cache=cache,
                                key=group.key)
            run.part = (k, len(groups))  # as the sweep runs them (jobs.arm --part)
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


def test_a_process_answers_its_arms_queries_from_its_part_on_and_writes_the_bytes_of_the_arm_alone(
        state: State, tmp_path: Path) -> None:
    """jobs.arm --part K/P: processes running a group's arms at once start their queries at different
    places, so two whose arms ask for the same pairs do not score the same query at once."""
    reranker, arm = tmp_path / "reranker", CATALOGUE.family("pool").arm("pool-12")
    run_bench(state, _config(arm, reranker), HashEmbedder(), tmp_path / "alone")
    run = GroupRun.open(state, _config(arm, reranker), HashEmbedder())
    run.part = (1, 2)
    FakeCrossEncoder.asked = []
    run.run(_config(arm, reranker), tmp_path / "part")
    judged = [q.text for q in run.context.judged]
    first = len(judged) // 2
    assert len(set(judged)) == len(judged) > 2 and FakeCrossEncoder.asked[0] == judged[first] != judged[0]
    assert FakeCrossEncoder.asked == [q for q in judged[first:] + judged[:first] if q in FakeCrossEncoder.asked]
    assert _shas(tmp_path / "part") == _shas(tmp_path / "alone")
    legs = json.loads((tmp_path / "part" / "runinfo.json").read_text())["legs"]
    assert legs["part"] == "2/2" and legs["first_query"] == first


def test_the_prescore_order_is_a_process_own_part_then_the_rest_backwards_from_before_it() -> None:
    assert prescore_order(10, (0, 1)) == list(range(10))
    assert prescore_order(10, (0, 2)) == [0, 1, 2, 3, 4, 9, 8, 7, 6, 5]
    assert prescore_order(10, (1, 2)) == [5, 6, 7, 8, 9, 4, 3, 2, 1, 0]
    assert prescore_order(7, (2, 3)) == [4, 5, 6, 3, 2, 1, 0]
    assert prescore_order(0, (1, 2)) == []
    for n in (1, 2, 5, 31):
        for p in (1, 2, 3, 4):
            for k in range(p):
                assert sorted(prescore_order(n, (k, p))) == list(range(n)), (n, k, p)


class _Stop(Exception):
    pass


def test_processes_that_prescore_split_the_groups_pairs_and_their_arms_score_none(state: State,
                                                                                  tmp_path: Path) -> None:
    """jobs.arm --prescore: the k-th of p processes scores the pairs of every rerank arm of the group (its
    own and the others') for its part of the queries first, then the others' parts from the far end,
    reading what the other process already scored. Here the second process has scored its part (and is
    stopped there); the first scores its own part and reads the second's, no pair twice, and after it
    no arm of either process scores a pair. The arms write the bytes they write alone."""
    from harness.retrieval.scorecache import StoredScores

    reranker, cache = tmp_path / "reranker", tmp_path / "rerank-cache"
    members = [a for a in CATALOGUE.arms if a.family in ("budget", "pool", "diversity")]
    (group,) = group_arms(members, "embedded")
    configs = [_config(arm, reranker) for arm in group.arms]
    rerank = [c for c in configs if c.bench_stage.needs_reranker]
    assert 0 < len(rerank) < len(configs)  # the diversify arms have no pairs

    def opened(k: int) -> GroupRun:
        run = GroupRun.open(state, configs[0], HashEmbedder(), score_cache=cache, key=group.key)
        run.part = (k, 2)
        return run

    second = opened(1)
    n = len(second.context.judged)
    own = n - n // 2

    def stop_after_own_part(done: int, total: int) -> None:
        assert total == n
        if done == own:
            raise _Stop

    with pytest.raises(_Stop):
        second.prescore(configs, stop_after_own_part)
    store = StoredScores(cache, FakeCrossEncoder(reranker).cache_key())
    second_part = len(store)
    first = opened(0)
    done = first.prescore(configs)
    assert done["arms"] == [c.control_name for c in rerank] and done["queries"] == n and done["part"] == "1/2"
    assert done["first_query"] == 0 and done["scored"] == len(store) - second_part > 0
    assert done["from_cache"] == second_part and done["checked"] == 1  # the first pair read, scored again
    assert done["pairs"] == done["scored"] + done["from_cache"] + done["reused"]

    alone = tmp_path / "alone"
    read = [0, 0]
    for k, run in enumerate((first, opened(1))):
        if k == 1:
            # a process whose pairs are all in the cache (a warm cache: every pair of the queries it samples)
            # does not prescore: its arms read the pairs themselves, scoring none
            again = run.prescore(configs)
            assert again["skipped"].startswith(f"warm: every pair of {n} queries sampled") and again["pairs"] == 0
            assert again["scored"] == again["from_cache"] == 0 and again["first_query"] == n // 2
        for arm, config in list(zip(group.arms, configs, strict=True))[k::2]:
            run_bench(state, config, HashEmbedder(), alone / arm.name)
            out = tmp_path / "shared" / arm.name
            run.run(config, out)
            assert _shas(out) == _shas(alone / arm.name), arm.name
            info = json.loads((out / "runinfo.json").read_text())
            assert info["legs"]["prescored"] == run.prescored
            if config.bench_stage.needs_reranker:
                assert info["rerank"]["scored"] == 0, info["rerank"]
                read[k] += info["rerank"]["from_cache"]
    assert len(store) == done["scored"] + second_part
    # the prescored process's arms found every pair in its memory; the warm one's read theirs from the cache
    assert read[0] == 0 and 0 < read[1] <= len(store)

    # a cache missing one pair is not warm (here every query is sampled): the process prescores, scoring
    # that pair alone
    assert n <= WARM_PROBE
    (key,) = store._db.execute("SELECT pair FROM scores LIMIT 1").fetchone()
    store._db.execute("DELETE FROM scores WHERE pair = ?", (key,))
    cold = opened(1).prescore(configs)
    assert "skipped" not in cold and cold["scored"] == 1 and cold["from_cache"] == len(store) - 1


def test_a_group_is_keyed_on_scope_and_embedded_text_and_fetches_the_deepest_window() -> None:
    fusion = CATALOGUE.family("fusion").arms
    (group,) = group_arms(fusion, "embedded")
    assert group.arms == fusion and group.key == {"embedding_text": "header", "fusion_window": 192, "scope": "corpus"}
    # pool-12 and pool-24 fuse over max(100, min(4*size, 500)) = 100, pool-32 over 128, pool-48 over 192 and
    # pool-96 over 384: one group, whose legs are fetched over 384 and cut by each arm at its own window
    (pool,) = group_arms(CATALOGUE.family("pool").arms, "embedded")
    assert [a.name for a in pool.arms] == ["pool-48", "pool-12", "pool-24", "pool-32", "pool-96"]
    assert pool.key == {"embedding_text": "header", "fusion_window": 384, "scope": "corpus"}
    body = CATALOGUE.family("embedding").arm("embed-body")
    scoped = Arm(name="scoped", family="scope", axis="gold files",
                 config={**body.config, "embedding_text": "header", "scope": "gold-files"})
    keys = [g.key for g in group_arms([*pool.arms, body, scoped], "embedded")]
    assert keys == [pool.key, {**pool.key, "embedding_text": "body", "fusion_window": 192},
                    {**pool.key, "scope": "gold-files", "fusion_window": 192}]
    # only the embedded backend's legs are prefixes of deeper ones: elsewhere a window is a group of its own
    assert all(len(g.arms) == 1 and g.key is None for g in group_arms(fusion, "stack"))
    assert all(len(g.arms) == 1 for g in group_arms(fusion, "embedded", share=False))
    assert not covers(pool.key, arm_legs_key(pool.arms[1]), "stack")
    assert covers(pool.key, arm_legs_key(pool.arms[1]), "embedded")
    assert not covers(arm_legs_key(pool.arms[1]), pool.key, "embedded")  # a shallower fetch serves no deeper arm


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

    # legs over window 192 serve an arm over 100, cut at its window: the bytes it writes alone
    shallow = CATALOGUE.family("diversity").arm("retrieve-12")
    run_bench(state, _config(shallow, reranker), HashEmbedder(), tmp_path / "shallow-alone")
    cutting = GroupRun.open(state, _config(shallow, reranker), HashEmbedder(), published=published)
    cutting.run(_config(shallow, reranker), tmp_path / "shallow")
    assert _shas(tmp_path / "shallow") == _shas(tmp_path / "shallow-alone")
    assert json.loads((tmp_path / "shallow" / "runinfo.json").read_text())["legs"]["fetched"] == 0

    for other in (CATALOGUE.family("pool").arm("pool-96"),  # window 384: deeper than the table
                  CATALOGUE.family("embedding").arm("embed-body")):  # other vectors
        with pytest.raises(UsageError, match="do not serve"):
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


def test_a_leg_cache_over_a_prefix_backend_cuts_the_deepest_legs_it_holds() -> None:
    from harness.index.backend import LegHit
    from harness.retrieval.legs import leg_request

    deep = tuple(LegHit(f"a_{i}", 10.0 - i) for i in range(6)), tuple(LegHit(f"b_{i}", 1.0 - i / 10) for i in range(4))
    fetched: list[int] = []

    def fetch(depth: int) -> Any:
        fetched.append(depth)
        return deep[0][:depth], deep[1][:depth]

    cache = LegCache(prefix=True)
    assert cache.legs(leg_request("q", 5, "header"), lambda: fetch(5)) == (deep[0][:5], deep[1][:4])
    assert cache.legs(leg_request("q", 3, "header"), lambda: fetch(3)) == (deep[0][:3], deep[1][:3])
    assert cache.legs(leg_request("q", 6, "header"), lambda: fetch(6)) == deep  # deeper than held: fetched
    assert cache.legs(leg_request("q", 5, "header"), lambda: fetch(5)) == (deep[0][:5], deep[1][:4])
    assert cache.legs(leg_request("q", 2, "header", file_uuids=["f"]), lambda: fetch(2)) == (deep[0][:2], deep[1][:2])
    assert cache.legs(leg_request("q", 2, "body"), lambda: fetch(2)) == (deep[0][:2], deep[1][:2])
    assert fetched == [5, 6, 2, 2] and cache.counts()["reused"] == 2

    plain = LegCache()  # a backend whose legs are not prefixes (HNSW): each depth is fetched
    plain.legs(leg_request("q", 5, "header"), lambda: fetch(5))
    plain.legs(leg_request("q", 3, "header"), lambda: fetch(3))
    assert fetched[-2:] == [5, 3] and plain.counts()["reused"] == 0

    table = cache.table(leg_request("", 6, "header"), {"legs_key": {}})
    published = LegCache(published=table, prefix=True)
    assert published.legs(leg_request("q", 4, "header"), lambda: fetch(4)) == (deep[0][:4], deep[1][:4])
    with pytest.raises(IntegrityError, match="hold no legs for the query 'other'"):
        published.legs(leg_request("other", 4, "header"), lambda: fetch(4))
    assert published.legs(leg_request("other", 7, "header"), lambda: fetch(7)) == deep  # deeper: not the table's
    assert fetched[-1] == 7


def test_the_embedded_legs_at_a_depth_are_the_first_hits_of_deeper_legs(state: State) -> None:
    """What sharing the deepest window rests on: for every judged query, each leg of the embedded
    backend at depths 1 to 400 is the first hits of its legs at 500, ties at the cut included."""
    from harness.bench.context import open_context

    config = _config(CATALOGUE.family("fusion").control_arm, Path("unused"))
    context = open_context(state, config, HashEmbedder())
    index = state.index
    cuts_in_ties = [0, 0]  # BM25, kNN
    for i, query in enumerate(context.judged):
        for scope in (None, list(query.gold_files)):
            deep = (index.bm25(query.text, 500, file_uuids=scope),
                    index.knn(context.vectors[i], 500, mode="header", file_uuids=scope))
            for depth in (1, 7, 50, 100, 192, 400):
                legs = (index.bm25(query.text, depth, file_uuids=scope),
                        index.knn(context.vectors[i], depth, mode="header", file_uuids=scope))
                assert legs == (deep[0][:depth], deep[1][:depth]), (query.text, scope, depth)
                for n, leg in enumerate(deep):
                    cuts_in_ties[n] += len(leg) > depth and leg[depth - 1].score == leg[depth].score
    assert cuts_in_ties[0] > 0  # BM25 ties at the cuts (repeated chunk texts): the tie order is what is tested
