"""Request bodies of the legs and aggregations, and how their answers are read.

* **kNN.** Lucene HNSW is approximate, so the default query strategy ``exact`` is a
  ``script_score`` with the k-NN plugin's ``cosineSimilarity`` over every document the
  filter admits, scored ``(1 + cos) / 2``: the very value the Lucene engine's HNSW would
  give the same pair, with no recall loss. ``hnsw`` is the approximate ``knn`` query with
  ``k`` and ``ef_search`` at the leg depth, kept for comparison.
* **BM25** text is cleaned as the embedded backend cleans it, each distinct word once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from harness.errors import IntegrityError, UsageError
from harness.index.backend import LegHit

KnnStrategy = Literal["exact", "hnsw"]
KNN_STRATEGIES: tuple[KnnStrategy, ...] = ("exact", "hnsw")
SOURCE_FIELDS = ("id", "file_uuid", "chunk_index", "doc_type", "speaker", "content")
# the embedded backend's query cleaning (harness.index.embedded._QUERY_SAFE; a test keeps them equal)
QUERY_SAFE = re.compile(r"[^\w]+", re.UNICODE)


def filter_clauses(doc_type: str, file_uuids: Sequence[str] | None, speaker: str | None) -> list[dict[str, Any]]:
    clauses: list[dict[str, Any]] = [{"term": {"doc_type": doc_type}}]
    if file_uuids is not None:
        clauses.append({"terms": {"file_uuid": sorted(set(file_uuids))}})
    if speaker is not None:
        clauses.append({"term": {"speaker": speaker}})
    return clauses


def bm25_query(text: str, *, doc_type: str = "chunk", file_uuids: Sequence[str] | None = None,
               speaker: str | None = None) -> dict[str, Any]:
    """multi_match most_fields over content and title (scores summed per field), plane and scope as filters."""
    return {"bool": {
        "must": [{"multi_match": {"query": text, "type": "most_fields", "fields": ["content", "title"]}}],
        "filter": filter_clauses(doc_type, file_uuids, speaker),
    }}


def knn_query(vector: np.ndarray, k: int, *, mode: str, strategy: KnnStrategy = "exact", doc_type: str = "chunk",
              file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> dict[str, Any]:
    """The vector leg: exact ``(1 + cos) / 2`` over the filtered plane, or approximate Lucene HNSW."""
    values = np.asarray(vector, dtype=np.float32).tolist()
    filters = filter_clauses(doc_type, file_uuids, speaker)
    if strategy == "exact":
        return {"script_score": {
            "query": {"bool": {"filter": filters}},
            "script": {"lang": "painless",
                       "source": "(1.0 + cosineSimilarity(params.query_value, doc[params.field])) / 2.0",
                       "params": {"field": f"vector_{mode}", "query_value": values}},
        }}
    if strategy == "hnsw":
        return {"knn": {f"vector_{mode}": {"vector": values, "k": k, "filter": {"bool": {"filter": filters}},
                                           "method_parameters": {"ef_search": max(k, 100)}}}}
    raise UsageError(f"unknown kNN strategy {strategy!r}; one of {', '.join(KNN_STRATEGIES)}")


def leg_body(query: Mapping[str, Any], k: int) -> dict[str, Any]:
    return {"size": k, "query": dict(query), "_source": list(SOURCE_FIELDS), "track_total_hits": False}


def phrase_body(phrase: str, size: int) -> dict[str, Any]:
    """match_phrase on content.exact, chunk plane, terms(file_uuid); never a hybrid body."""
    return {"size": 0, "track_total_hits": True,
            "query": {"bool": {"must": [{"match_phrase": {"content.exact": phrase}}],
                               "filter": filter_clauses("chunk", None, None)}},
            "aggs": {"files": {"terms": {"field": "file_uuid", "size": size, "order": {"_key": "asc"}}}}}


def provenance_body(mode: str, size: int = 1000) -> dict[str, Any]:
    field = f"embedding_model.{mode}"
    return {"size": 0, "track_total_hits": True,
            "aggs": {"models": {"terms": {"field": field, "size": size, "order": {"_key": "asc"}}},
                     "unattributed": {"missing": {"field": field}}}}


def sort_leg(hits: Iterable[tuple[str, float, str, int]]) -> list[LegHit]:
    """(doc_id, score, file_uuid, chunk_index) -> LegHits by (-score, file_uuid, chunk_index)."""
    ordered = sorted(hits, key=lambda h: (-h[1], h[2], h[3]))
    return [LegHit(doc_id=h[0], score=h[1]) for h in ordered]


def checked_buckets(agg: Mapping[str, Any], size: int, what: str) -> dict[str, int]:
    """Buckets of a terms aggregation; raises IntegrityError if any document fell outside them."""
    other = int(agg.get("sum_other_doc_count", 0))
    if other:
        raise IntegrityError(f"{what}: terms aggregation truncated at size {size}: {other} documents in buckets "
                             "not returned; a count from it would look right and be wrong")
    return {str(b["key"]): int(b["doc_count"]) for b in agg["buckets"]}


def clean_query(text: str) -> str:
    """The embedded backend's query cleaning: every run of non-word characters becomes one space."""
    return QUERY_SAFE.sub(" ", text).strip()


def bm25_text(text: str) -> str:
    """The BM25 leg's query text: cleaned, each distinct word once, first occurrence first.

    tantivy's query parser (the embedded leg) drops a repeated literal ("the ... the" scores
    "the" once) but keeps two words that merely share a stem; Lucene's match query would give
    a repeated term boost 2. Dropping exact repeats here makes both count the same terms.
    """
    return " ".join(dict.fromkeys(clean_query(text).split()))
