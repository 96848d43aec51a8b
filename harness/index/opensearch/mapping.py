"""The index definition of a state's OpenSearch index, and the identity that names it.

Choices that make this backend answer like the embedded one (docs/opensearch.md):

* **Analysis.** Profile ``mirror`` (the default) re-creates tantivy's tokenizers: split on
  every character that is not alphanumeric (Rust ``char::is_alphanumeric``), drop tokens
  of 40 bytes or more, lower-case, and for ``content``/``title`` the Snowball English
  (Porter2) stemmer. ``content.exact`` is the same without the stemmer. Profile
  ``english`` is OpenSearch's built-in ``english`` analyzer with ``standard`` on
  ``content.exact`` (the product-style mapping); it changes BM25 (stop words, Porter1).
* **Index sorting** on ``(doc_type, file_uuid, chunk_index)``: after the force-merge to
  one segment, Lucene's doc id order is that order, so the engine's own tie-break inside
  a leg (doc id ascending) is the protocol's ``(file_uuid, chunk_index)``.
* **kNN field** ``hnsw`` / ``lucene`` / ``cosinesimil`` (the local stack has no native
  engines); how it is queried is :mod:`harness.index.opensearch.queries`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from harness.errors import UsageError
from harness.index.documents import IndexDoc

INDEX_VERSION = 1
INDEX_PREFIX = "ragsweep-state-"
AnalysisProfile = Literal["mirror", "english"]
ANALYSIS_PROFILES: tuple[AnalysisProfile, ...] = ("mirror", "english")
# tantivy's SimpleTokenizer splits on !char::is_alphanumeric(): Alphabetic or Numeric.
_NOT_ALPHANUMERIC = r"[^\p{IsAlphabetic}\p{N}]+"
# tantivy's RemoveLongFilter::limit(40) keeps tokens shorter than 40 bytes.
_MAX_TOKEN = 39


def analysis_settings(profile: AnalysisProfile) -> dict[str, Any]:
    """The ``settings.analysis`` block of a profile (empty for the built-in ``english``)."""
    if profile == "english":
        return {}
    if profile != "mirror":
        raise UsageError(f"unknown analysis profile {profile!r}; one of {', '.join(ANALYSIS_PROFILES)}")
    return {
        "tokenizer": {"ragsweep_simple": {"type": "pattern", "pattern": _NOT_ALPHANUMERIC}},
        "filter": {
            "ragsweep_remove_long": {"type": "length", "min": 0, "max": _MAX_TOKEN},
            "ragsweep_porter2": {"type": "snowball", "language": "English"},
        },
        "analyzer": {
            "ragsweep_en_stem": {"type": "custom", "tokenizer": "ragsweep_simple",
                                 "filter": ["ragsweep_remove_long", "lowercase", "ragsweep_porter2"]},
            "ragsweep_exact": {"type": "custom", "tokenizer": "ragsweep_simple",
                               "filter": ["ragsweep_remove_long", "lowercase"]},
        },
    }


def _analyzers(profile: AnalysisProfile) -> tuple[str, str]:
    """(stemmed analyzer, exact analyzer) of a profile."""
    return ("ragsweep_en_stem", "ragsweep_exact") if profile == "mirror" else ("english", "standard")


def index_body(dimensions: Mapping[str, int], *, analysis: AnalysisProfile, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Settings and mappings of a state's index: one shard, sorted, one knn_vector per embedding-text mode."""
    stemmed, exact = _analyzers(analysis)
    properties: dict[str, Any] = {
        "id": {"type": "keyword"},
        "doc_type": {"type": "keyword"},
        "file_uuid": {"type": "keyword"},
        "speaker": {"type": "keyword"},
        "chunk_index": {"type": "integer"},
        "content": {"type": "text", "analyzer": stemmed,
                    "fields": {"exact": {"type": "text", "analyzer": exact}}},
        "title": {"type": "text", "analyzer": stemmed},
        "indexed_at": {"type": "date", "format": "epoch_millis"},
        "embedding_model": {"type": "object",
                            "properties": {mode: {"type": "keyword"} for mode in sorted(dimensions)}},
    }
    for mode, dimension in sorted(dimensions.items()):
        properties[f"vector_{mode}"] = {
            "type": "knn_vector", "dimension": int(dimension),
            "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
        }
    settings: dict[str, Any] = {
        "number_of_shards": 1, "number_of_replicas": 0, "knn": True,
        "sort.field": ["doc_type", "file_uuid", "chunk_index"], "sort.order": ["asc", "asc", "asc"],
    }
    analysis_block = analysis_settings(analysis)
    if analysis_block:
        settings["analysis"] = analysis_block
    return {"settings": {"index": settings},
            "mappings": {"dynamic": "strict", "_meta": {"version": INDEX_VERSION, **meta}, "properties": properties}}


def state_identity(corpora: Sequence[Mapping[str, Any]], chunking: Mapping[str, Any],
                   embedding: Mapping[str, Mapping[str, Any]], analysis: AnalysisProfile) -> dict[str, Any]:
    """What makes two states the same index: corpora (with checksums), chunking, vectors' models, mapping."""
    return {"corpora": list(corpora), "chunking": dict(chunking), "analysis": analysis,
            "embedding": {m: {"model": e["model"], "dimension": e["dimension"]} for m, e in sorted(embedding.items())},
            "index_version": INDEX_VERSION}


def identity_digest(identity: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def index_name(identity: Mapping[str, Any]) -> str:
    return INDEX_PREFIX + identity_digest(identity)[:16]


def doc_source(doc: IndexDoc, vectors: Mapping[str, np.ndarray], models: Mapping[str, str],
               indexed_at: int) -> dict[str, Any]:
    """The _source of one document: the fields the legs read, its vectors and who made them."""
    source: dict[str, Any] = {
        "id": doc.id, "doc_type": doc.doc_type, "file_uuid": doc.file_uuid, "chunk_index": doc.chunk_index,
        "speaker": doc.speaker, "content": doc.content, "title": doc.title, "indexed_at": indexed_at,
        "embedding_model": {mode: models[mode] for mode in sorted(models)},
    }
    for mode in sorted(vectors):
        # float32 -> double is exact and its repr round-trips, so the node parses the same float32
        source[f"vector_{mode}"] = np.asarray(vectors[mode], dtype=np.float32).tolist()
    return source

