"""Unit tests of harness.retrieval.server_fusion: pipeline and hybrid bodies, verification, caching."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from harness.errors import IntegrityError, UsageError
from harness.index.backend import DocRecord
from harness.retrieval.fusion import parse_fusion_args
from harness.retrieval.server_fusion import (
    PipelineRegistry,
    ServerFusionRetriever,
    as_float32,
    hybrid_body,
    pipeline_body,
    tie_order,
)

# The methodology's fusion table: flags -> (pipeline id, the 3.x pipeline body).
ARMS: list[tuple[tuple[Any, ...], str, dict[str, Any]]] = [
    ((None, None, None, None, None), "transcript-hybrid-search",
     {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 30}}}),
    (("rrf", 30, None, None, None), "transcript-hybrid-search",
     {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 30}}}),
    (("rrf", 60, None, None, None), "transcript-hybrid-search-rrf-60",
     {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 60}}}),
    *[
        (("normalization", None, n, c, None), f"transcript-hybrid-search-norm-{n}-{c}",
         {"normalization-processor": {"normalization": {"technique": n}, "combination": {"technique": c}}})
        for n, c in (("min_max", "arithmetic_mean"), ("min_max", "geometric_mean"), ("min_max", "harmonic_mean"),
                     ("l2", "arithmetic_mean"), ("z_score", "arithmetic_mean"))
    ],
    *[
        (("normalization", None, "min_max", "arithmetic_mean", w), f"transcript-hybrid-search-norm-min_max-"
         f"arithmetic_mean-w{tag}",
         {"normalization-processor": {"normalization": {"technique": "min_max"},
                                      "combination": {"technique": "arithmetic_mean",
                                                      "parameters": {"weights": weights}}}})
        for w, tag, weights in (("0.7,0.3", "70_30", [0.7, 0.3]), ("0.3,0.7", "30_70", [0.3, 0.7]))
    ],
]


@pytest.mark.parametrize(("flags", "pipeline_id", "processor"), ARMS)
def test_each_arm_resolves_to_its_id_and_3x_body(flags: tuple[Any, ...], pipeline_id: str,
                                                 processor: dict[str, Any]) -> None:
    config = parse_fusion_args(*flags)
    assert config.pipeline_id == pipeline_id
    assert pipeline_body(config) == {"phase_results_processors": [processor]}


def test_rrf_body_is_not_the_2_19_shape() -> None:
    body = pipeline_body(parse_fusion_args("rrf", 60, None, None, None))
    combination = body["phase_results_processors"][0]["score-ranker-processor"]["combination"]
    # 2.19 read the constant from combination.parameters; 3.x rejects that and reads combination.rank_constant
    assert "parameters" not in combination and combination["rank_constant"] == 60


def test_hybrid_body_puts_bm25_first_and_collects_each_leg_window_deep() -> None:
    body = hybrid_body({"match": {"a": 1}}, {"knn": {"b": 2}}, window=192, size=384)
    assert body["size"] == 384
    assert body["query"]["hybrid"]["pagination_depth"] == 192
    assert body["query"]["hybrid"]["queries"] == [{"match": {"a": 1}}, {"knn": {"b": 2}}]
    assert "aggs" not in body  # no aggregation ever rides a hybrid body


class FakeCluster:
    """Stores pipelines like the node (a copy of the PUT body), answers searches from a script."""

    def __init__(self) -> None:
        self.pipelines: dict[str, Any] = {}
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.hits: list[dict[str, Any]] = []

    def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, Any] | None = None,
                missing_ok: bool = False) -> Any:
        self.calls.append((method, path, dict(params or {})))
        if path.startswith("/_search/pipeline/"):
            pid = path.rsplit("/", 1)[1]
            if method == "PUT":
                self.pipelines[pid] = copy.deepcopy(body)
                return {"acknowledged": True}
            if pid not in self.pipelines:
                assert missing_ok
                return None
            return {pid: copy.deepcopy(self.pipelines[pid])}
        if path.endswith("/_search"):
            return {"hits": {"hits": self.hits}}
        raise AssertionError(path)


def test_pipelines_are_created_once_and_verified_per_id() -> None:
    cluster = FakeCluster()
    registry = PipelineRegistry(cluster)  # type: ignore[arg-type]
    rrf30 = parse_fusion_args(None, None, None, None, None)
    rrf60 = parse_fusion_args("rrf", 60, None, None, None)
    assert registry.ensure_fusion_pipeline(rrf30) == "transcript-hybrid-search"
    assert [c[:2] for c in cluster.calls] == [("GET", "/_search/pipeline/transcript-hybrid-search"),
                                             ("PUT", "/_search/pipeline/transcript-hybrid-search"),
                                             ("GET", "/_search/pipeline/transcript-hybrid-search")]
    cluster.calls.clear()
    registry.ensure_fusion_pipeline(parse_fusion_args("rrf", 30, None, None, None))  # the same id: no request
    assert cluster.calls == []
    registry.ensure_fusion_pipeline(rrf60)  # another arm is verified on its own
    assert ("GET", "/_search/pipeline/transcript-hybrid-search-rrf-60", {}) in cluster.calls
    assert registry.verified == {"transcript-hybrid-search", "transcript-hybrid-search-rrf-60"}


def test_a_pipeline_whose_stored_body_differs_is_refused() -> None:
    cluster = FakeCluster()
    # the reserved id already on the cluster at another rank constant
    cluster.pipelines["transcript-hybrid-search"] = pipeline_body(parse_fusion_args("rrf", 60, None, None, None))
    registry = PipelineRegistry(cluster)  # type: ignore[arg-type]
    with pytest.raises(IntegrityError, match="search pipeline transcript-hybrid-search on the cluster is"):
        registry.ensure_fusion_pipeline(parse_fusion_args(None, None, None, None, None))
    assert registry.verified == frozenset()
    assert not [c for c in cluster.calls if c[0] == "PUT"]  # never overwritten


class FakeBackend:
    knn_strategy = "exact"
    index = "ix"

    def __init__(self, client: FakeCluster) -> None:
        self.client = client

    def remember(self, hits: list[dict[str, Any]]) -> list[DocRecord]:
        return [DocRecord(id=h["_source"]["id"], file_uuid=h["_source"]["file_uuid"],
                          chunk_index=h["_source"]["chunk_index"], doc_type="chunk", speaker=None, content="")
                for h in hits]


def _hit(doc_id: str, file_uuid: str, chunk_index: int, score: float) -> dict[str, Any]:
    return {"_score": score, "_source": {"id": doc_id, "file_uuid": file_uuid, "chunk_index": chunk_index}}


def test_response_cache_is_keyed_on_the_resolved_pipeline() -> None:
    cluster = FakeCluster()
    cluster.hits = [_hit("a_0", "a", 0, 0.5)]
    backend = FakeBackend(cluster)
    rrf30 = ServerFusionRetriever(backend, "header", parse_fusion_args(None, None, None, None, None))  # type: ignore[arg-type]
    vector = np.ones(3, dtype=np.float32)
    rrf30.retrieve("budget", vector, 12)
    rrf30.retrieve("budget", vector, 12)
    searches = [c for c in cluster.calls if c[1] == "/ix/_search"]
    assert len(searches) == 1 and searches[0][2] == {"search_pipeline": "transcript-hybrid-search"}
    assert rrf30.cache is not None and (rrf30.cache.hits, rrf30.cache.misses) == (1, 1)
    # arm B shares arm A's cache object, same body: it must not replay A's page
    rrf60 = ServerFusionRetriever(backend, "header", parse_fusion_args("rrf", 60, None, None, None),  # type: ignore[arg-type]
                                  cache=rrf30.cache)
    rrf60.retrieve("budget", vector, 12)
    searches = [c for c in cluster.calls if c[1] == "/ix/_search"]
    assert len(searches) == 2 and searches[1][2] == {"search_pipeline": "transcript-hybrid-search-rrf-60"}


def test_ties_are_cut_by_file_then_chunk_index_not_by_the_engines_order() -> None:
    cluster = FakeCluster()
    # the engine returned equal scores in HashMap order: b_1 before a_10 before a_9
    cluster.hits = [_hit("top", "z", 0, 0.9), _hit("b_1", "b", 1, 0.5), _hit("a_10", "a", 10, 0.5),
                    _hit("a_9", "a", 9, 0.5)]
    retriever = ServerFusionRetriever(FakeBackend(cluster), "header",  # type: ignore[arg-type]
                                      parse_fusion_args(None, None, None, None, None))
    hits = retriever.retrieve("q", np.ones(3, dtype=np.float32), 3)
    assert [h.doc_id for h in hits] == ["top", "a_9", "a_10"]
    # the whole union was asked for (two windows), each leg one window deep: size 3 -> window 100
    body_sizes = [c for c in cluster.calls if c[1] == "/ix/_search"]
    assert len(body_sizes) == 1


def test_tie_order_and_float32_scores() -> None:
    rec = [DocRecord(id=f"{f}_{n}", file_uuid=f, chunk_index=n, doc_type="chunk", speaker=None, content="")
           for f, n in (("b", 0), ("a", 2), ("a", 1))]
    assert [r.id for r, _ in tie_order([(rec[0], 0.5), (rec[1], 0.5), (rec[2], 0.5)])] == ["a_1", "a_2", "b_0"]
    # Java prints a float's shortest decimal; the score is that float32, exactly
    assert as_float32(0.032258064) == float(np.float32(1 / 31))


def test_embedded_backend_refuses_server_fusion() -> None:
    from harness.bench.config import BenchConfig

    with pytest.raises(UsageError, match="need --backend stack"):
        BenchConfig(control_name="x", fusion_mode="server")
    with pytest.raises(UsageError, match="need --backend stack"):
        BenchConfig(control_name="x", knn_strategy="hnsw")
    assert BenchConfig(control_name="x").resolved_fusion_mode == "client"
    stack = BenchConfig(control_name="x", backend="stack")
    assert stack.resolved_fusion_mode == "server"
    assert stack.retrieval_block(None)["fusion_mode"] == "server"
    assert "fusion_mode" not in BenchConfig(control_name="x").retrieval_block(None)
