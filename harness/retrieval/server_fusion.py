"""Hybrid retrieval on OpenSearch: the fusion arm as a server-side search pipeline.

``ServerFusionRetriever.retrieve`` sends one ``hybrid`` query (BM25 leg first, vector leg
second, each with its own filters, exactly the bodies the standalone legs send) through
the arm's search pipeline:

* ``score-ranker-processor`` for RRF, in the 3.x body: ``combination.rank_constant``
  (2.19 read it from ``combination.parameters``; docs/fusion.md);
* ``normalization-processor`` for the normalization arms, weights BM25 first.

Pipelines are created on first use (``PipelineRegistry.ensure_fusion_pipeline``), with
ids from ``FusionConfig.pipeline_id``; each id is verified by GET and comparing the
stored body with the arm's, and only then added to a set, so one arm's verification
cannot certify another's. Responses are cached on the resolved pipeline id (and the
body), so arm B never replays arm A's page.

Depth: each leg is collected ``fusion_window(size)`` deep (the hybrid query's
``pagination_depth`` in 3.x; without it a leg is only ``size`` deep). The whole fused
union comes back (``size`` = two windows), the harness's tie order is applied to it,
and only then is it cut at ``size``: the engine orders equal fused scores by a HashMap
over Lucene doc ids, which must not decide which tied document survives the cut.

``client_fused`` is the other mode: the same two legs fetched standalone and fused in
Python (harness.retrieval.fusion), the embedded backend's code path.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from harness.errors import IntegrityError, UsageError
from harness.index.backend import DocRecord
from harness.index.documents import EmbeddingTextMode
from harness.index.opensearch.backend import OpenSearchBackend
from harness.index.opensearch.client import OpenSearchClient
from harness.index.opensearch.queries import SOURCE_FIELDS, bm25_query, bm25_text, knn_query
from harness.index.opensearch.settle import DEFAULT_SETTLE_TIMEOUT, IndexingGuard, SettleReport, open_for_measurement
from harness.retrieval.chunks import Hit, HybridRetriever
from harness.retrieval.fusion import FusionConfig, fuse
from harness.retrieval.window import fusion_window

FusionMode = Literal["server", "client"]
FUSION_MODES: tuple[FusionMode, ...] = ("server", "client")


def pipeline_body(config: FusionConfig) -> dict[str, Any]:
    """The search pipeline an arm resolves to (OpenSearch 3.x neural-search bodies)."""
    if config.method == "rrf":
        processor: dict[str, Any] = {"score-ranker-processor": {
            "combination": {"technique": "rrf", "rank_constant": config.rank_constant}}}
    else:
        combination: dict[str, Any] = {"technique": config.combination_technique}
        if config.weights is not None:
            combination["parameters"] = {"weights": list(config.weights)}
        processor = {"normalization-processor": {
            "normalization": {"technique": config.normalization_technique}, "combination": combination}}
    return {"phase_results_processors": [processor]}


def hybrid_body(bm25: Mapping[str, Any], knn: Mapping[str, Any], *, window: int, size: int) -> dict[str, Any]:
    """BM25 first, vector second (weights follow this order); each leg ``window`` deep."""
    return {"size": size, "_source": list(SOURCE_FIELDS), "track_total_hits": False,
            "query": {"hybrid": {"pagination_depth": window, "queries": [dict(bm25), dict(knn)]}}}


def canonical(body: Any) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


class PipelineRegistry:
    """Creates each arm's pipeline on first use and verifies it; a set, so verification is per id."""

    def __init__(self, client: OpenSearchClient) -> None:
        self.client = client
        self._verified: set[str] = set()
        self._lock = threading.Lock()

    @property
    def verified(self) -> frozenset[str]:
        return frozenset(self._verified)

    def ensure_fusion_pipeline(self, config: FusionConfig) -> str:
        pipeline_id = config.pipeline_id
        if pipeline_id in self._verified:
            return pipeline_id
        with self._lock:
            if pipeline_id in self._verified:
                return pipeline_id
            want = pipeline_body(config)
            path = f"/_search/pipeline/{pipeline_id}"
            stored = self.client.request("GET", path, missing_ok=True)
            if stored is None:
                self.client.request("PUT", path, want)
                stored = self.client.request("GET", path)
            got = stored.get(pipeline_id)
            if canonical(got) != canonical(want):
                raise IntegrityError(
                    f"search pipeline {pipeline_id} on the cluster is {canonical(got)}, but this arm needs "
                    f"{canonical(want)}; a pipeline id names its parameters, so the cluster's one belongs to "
                    f"another configuration. Delete it (DELETE {path}) or change the arm")
            self._verified.add(pipeline_id)
            return pipeline_id


@dataclass
class ResponseCache:
    """LRU of fused unions keyed on (resolved pipeline id, index, request body)."""

    capacity: int = 1024
    hits: int = 0
    misses: int = 0
    _entries: OrderedDict[tuple[str, str, str], list[tuple[DocRecord, float]]] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[str, str, str]) -> list[tuple[DocRecord, float]] | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: tuple[str, str, str], value: list[tuple[DocRecord, float]]) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)


def as_float32(score: float) -> float:
    """The float32 the engine computed, as a Python float (JSON carries Java's shortest decimal)."""
    return float(np.float32(score))


def tie_order(fused: Sequence[tuple[DocRecord, float]]) -> list[tuple[DocRecord, float]]:
    """Equal fused scores by (file_uuid, chunk_index): the harness's tie policy, not the engine's HashMap."""
    return sorted(fused, key=lambda item: (-item[1], item[0].file_uuid, item[0].chunk_index))


@dataclass
class ServerFusionRetriever:
    """retrieve_chunks with fusion in an OpenSearch search pipeline (same interface as HybridRetriever)."""

    index: OpenSearchBackend
    embedding_text: EmbeddingTextMode
    fusion: FusionConfig
    pipelines: PipelineRegistry | None = None
    cache: ResponseCache | None = field(default_factory=ResponseCache)

    def __post_init__(self) -> None:
        if self.pipelines is None:
            self.pipelines = PipelineRegistry(self.index.client)

    def request(self, text: str, vector: np.ndarray, window: int, *, doc_type: str = "chunk",
                file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> dict[str, Any]:
        """The hybrid body: the standalone legs' own queries, each ``window`` deep, the whole union back."""
        bm25 = bm25_query(bm25_text(text), doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
        knn = knn_query(vector, window, mode=self.embedding_text, strategy=self.index.knn_strategy,
                        doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
        return hybrid_body(bm25, knn, window=window, size=2 * window)

    def fused(self, text: str, vector: np.ndarray, window: int, *, doc_type: str = "chunk",
              file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> list[tuple[DocRecord, float]]:
        """The fused union in the engine's own order, scores as the engine's float32."""
        assert self.pipelines is not None
        pipeline_id = self.pipelines.ensure_fusion_pipeline(self.fusion)
        body = self.request(text, vector, window, doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
        key = (pipeline_id, self.index.index, canonical(body))
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                return cached
        result = self.index.client.request("POST", f"/{self.index.index}/_search", body,
                                           params={"search_pipeline": pipeline_id})
        hits = result["hits"]["hits"]
        records = self.index.remember(hits)
        fused = [(r, as_float32(h["_score"])) for r, h in zip(records, hits, strict=True)]
        if self.cache is not None:
            self.cache.put(key, fused)
        return fused

    def retrieve(self, text: str, vector: np.ndarray, size: int, *, doc_type: str = "chunk",
                 file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> list[Hit]:
        fused = self.fused(text, vector, fusion_window(size), doc_type=doc_type, file_uuids=file_uuids,
                           speaker=speaker)
        return [Hit(doc_id=r.id, file_uuid=r.file_uuid, chunk_index=r.chunk_index, doc_type=r.doc_type, score=s)
                for r, s in tie_order(fused)[:size]]


def client_fused(backend: OpenSearchBackend, mode: EmbeddingTextMode, config: FusionConfig, text: str,
                 vector: np.ndarray, window: int, *, doc_type: str = "chunk",
                 file_uuids: Sequence[str] | None = None,
                 speaker: str | None = None) -> list[tuple[DocRecord, float]]:
    """Both legs fetched standalone from OpenSearch, fused in Python: the whole union, in fuse()'s order."""
    bm25 = backend.bm25(text, window, doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
    knn = backend.knn(vector, window, mode=mode, doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
    fused = fuse(config, [(h.doc_id, h.score) for h in bm25], [(h.doc_id, h.score) for h in knn])
    return [(backend.record(doc_id), score) for doc_id, score in fused]


@dataclass
class StackSession:
    """One measurement against a state's OpenSearch index: settled, guarded, with its retriever."""

    backend: OpenSearchBackend
    settle: SettleReport
    guard: IndexingGuard
    retrievers: list[ServerFusionRetriever] = field(default_factory=list)

    def retriever(self, mode: EmbeddingTextMode, fusion: FusionConfig,
                  fusion_mode: FusionMode) -> ServerFusionRetriever | HybridRetriever:
        """Server: the arm's search pipeline. Client: both legs from OpenSearch, fused in Python."""
        if fusion_mode == "client":
            return HybridRetriever(self.backend, mode, fusion)
        if fusion_mode != "server":
            raise UsageError(f"--fusion-mode {fusion_mode!r}: expected one of {', '.join(FUSION_MODES)}")
        retriever = ServerFusionRetriever(self.backend, mode, fusion)
        self.retrievers.append(retriever)
        return retriever

    def begin(self) -> None:
        """Read indexing.total: the measurement starts here."""
        self.guard.__enter__()

    def end(self) -> dict[str, Any]:
        """Read indexing.total again (IntegrityError if it moved: void); what runinfo.json records."""
        indexing = self.guard.verify()
        caches = [r.cache for r in self.retrievers if r.cache is not None]
        verified = sorted({p for r in self.retrievers if r.pipelines is not None for p in r.pipelines.verified})
        return {"index": self.backend.index, "knn": self.backend.knn_strategy, "settle": self.settle.to_dict(),
                "indexing_total": indexing, "pipelines_verified": verified,
                "response_cache": {"hits": sum(c.hits for c in caches), "misses": sum(c.misses for c in caches)}}


def open_stack_session(stack: Mapping[str, Any], expected_files: Collection[str], expected_chunks: int, *,
                       url: str, knn_strategy: str = "exact", settle_timeout: float = DEFAULT_SETTLE_TIMEOUT,
                       ) -> StackSession:
    """Settle the state's index (refuse if it will not) and get ready to measure it."""
    client = OpenSearchClient(url)
    backend, report = open_for_measurement(stack, expected_files, expected_chunks, client=client,
                                           knn_strategy=knn_strategy, timeout=settle_timeout)
    return StackSession(backend=backend, settle=report, guard=IndexingGuard(client, backend.index))
