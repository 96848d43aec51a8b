"""SearchBackend over one state's OpenSearch index (read-only)."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import IntegrityError, UsageError
from harness.index.backend import DocRecord, LegHit
from harness.index.documents import EmbeddingTextMode
from harness.index.opensearch.client import OpenSearchClient
from harness.index.opensearch.queries import (
    KNN_STRATEGIES,
    KnnStrategy,
    bm25_query,
    bm25_text,
    checked_buckets,
    clean_query,
    knn_query,
    leg_body,
    phrase_body,
    provenance_body,
    sort_leg,
)


@dataclass(frozen=True)
class _Source:
    record: DocRecord

    @classmethod
    def parse(cls, hit: Mapping[str, Any]) -> _Source:
        s = hit["_source"]
        return cls(DocRecord(id=s["id"], file_uuid=s["file_uuid"], chunk_index=int(s["chunk_index"]),
                             doc_type=s["doc_type"], speaker=s.get("speaker"), content=s["content"]))


class OpenSearchBackend:
    """SearchBackend over one state's OpenSearch index (read-only)."""

    name = "stack"

    def __init__(self, client: OpenSearchClient, index: str, *, knn_strategy: KnnStrategy = "exact") -> None:
        if knn_strategy not in KNN_STRATEGIES:
            raise UsageError(f"unknown kNN strategy {knn_strategy!r}; one of {', '.join(KNN_STRATEGIES)}")
        self.client = client
        self.index = index
        self.knn_strategy: KnnStrategy = knn_strategy
        self._records: dict[str, DocRecord] = {}
        self._lock = threading.Lock()
        mapping = client.request("GET", f"/{index}/_mapping", missing_ok=True)
        if mapping is None:
            raise IntegrityError(f"OpenSearch index {index} does not exist; build the state with --backend stack")
        self.mapping: dict[str, Any] = mapping[index]["mappings"]

    # -- documents -----------------------------------------------------------------------------
    def remember(self, hits: Iterable[Mapping[str, Any]]) -> list[DocRecord]:
        records = [_Source.parse(h).record for h in hits]
        with self._lock:
            for r in records:
                self._records[r.id] = r
        return records

    def record(self, doc_id: str) -> DocRecord:
        found = self._records.get(doc_id)
        if found is not None:
            return found
        doc = self.client.request("GET", f"/{self.index}/_doc/{urllib.parse.quote(doc_id, safe='')}",
                                  missing_ok=True)
        if doc is None or not doc.get("found"):
            raise IntegrityError(f"{doc_id} is not in OpenSearch index {self.index}")
        return self.remember([doc])[0]

    def dimension(self, mode: EmbeddingTextMode) -> int | None:
        field = self.mapping["properties"].get(f"vector_{mode}")
        return None if field is None else int(field["dimension"])

    def embedding_models(self, mode: EmbeddingTextMode) -> list[str | None]:
        """Read from the documents (a terms aggregation over their embedding_model field), never settings."""
        body = provenance_body(mode)
        result = self.client.request("POST", f"/{self.index}/_search", body)
        models = checked_buckets(result["aggregations"]["models"], body["aggs"]["models"]["terms"]["size"],
                                 f"embedding_model.{mode} survey")
        out: list[str | None] = []
        for model, count in sorted(models.items()):
            out.extend([model] * count)
        out.extend([None] * int(result["aggregations"]["unattributed"]["doc_count"]))
        return out

    def counts(self) -> dict[str, int]:
        stats = self.client.request("GET", f"/{self.index}/_stats/docs")["_all"]["primaries"]["docs"]
        planes = self.client.request("POST", f"/{self.index}/_search", {
            "size": 0, "track_total_hits": True,
            "aggs": {"planes": {"terms": {"field": "doc_type", "size": 10}},
                     "files": {"cardinality": {"field": "file_uuid", "precision_threshold": 40000}}}})
        by_type = checked_buckets(planes["aggregations"]["planes"], 10, "doc_type count")
        return {"documents": int(stats["count"]), "docs_deleted": int(stats["deleted"]),
                "chunk_documents": by_type.get("chunk", 0), "digest_documents": by_type.get("digest", 0),
                "files": int(planes["aggregations"]["files"]["value"])}

    def describe(self) -> dict[str, Any]:
        """What the index is (deterministic across reindexes and node restarts: no stats that reset)."""
        meta = self.mapping.get("_meta", {})
        return {"_meta": {"version": meta.get("version")},
                "backend": {"name": "stack", "engine": f"OpenSearch {self.client.version()}", "index": self.index,
                            "analysis": meta.get("analysis"),
                            "vector": "knn_vector hnsw/lucene/cosinesimil, score (1+cos)/2, "
                                      f"query {self.knn_strategy}"},
                **self.counts()}

    # -- legs ----------------------------------------------------------------------------------
    def _leg(self, query: Mapping[str, Any], k: int) -> list[LegHit]:
        if k < 1:
            return []
        result = self.client.request("POST", f"/{self.index}/_search", leg_body(query, k))
        hits = result["hits"]["hits"]
        records = self.remember(hits)
        # Java prints a float's shortest decimal: np.float32 of it is the engine's float exactly
        return sort_leg((r.id, float(np.float32(h["_score"])), r.file_uuid, r.chunk_index)
                        for r, h in zip(records, hits, strict=True))

    def bm25(self, text: str, k: int, *, doc_type: str = "chunk", file_uuids: Sequence[str] | None = None,
             speaker: str | None = None) -> list[LegHit]:
        cleaned = bm25_text(text)
        if not cleaned:
            return []
        return self._leg(bm25_query(cleaned, doc_type=doc_type, file_uuids=file_uuids, speaker=speaker), k)

    def knn(self, query_vector: np.ndarray, k: int, *, mode: EmbeddingTextMode, doc_type: str = "chunk",
            file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> list[LegHit]:
        if self.dimension(mode) is None:
            raise UsageError(f"index {self.index} has no vectors for embedding_text {mode!r}; "
                             f"rebuild the state with --embedding-text {mode}")
        return self._leg(knn_query(query_vector, k, mode=mode, strategy=self.knn_strategy, doc_type=doc_type,
                                   file_uuids=file_uuids, speaker=speaker), k)

    # -- aggregations (answers engine) -----------------------------------------------------------
    def phrase_file_buckets(self, phrase: str, *, size: int = 10_000) -> dict[str, int]:
        """file_uuid -> matching chunk documents for an exact phrase; raises if truncated."""
        words = clean_query(phrase.casefold()).split()
        if not words:
            raise UsageError("empty phrase")
        result = self.client.request("POST", f"/{self.index}/_search", phrase_body(" ".join(words), size))
        return checked_buckets(result["aggregations"]["files"], size, f"phrase {phrase!r}")
