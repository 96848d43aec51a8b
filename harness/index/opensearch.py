"""The stack search backend: OpenSearch (k-NN + neural-search), and the writer of its index.

One index per corpus state, named from the state's identity (``ragsweep-state-<sha>``),
one shard, no replicas. Documents are the embedded builder's ``IndexDoc`` list with the
embedded build's own vectors (its ``vectors-{mode}.npy``), so both backends hold the same
documents and the same float32 vectors.

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
* **kNN.** The field is ``hnsw`` / ``lucene`` / ``cosinesimil`` (the local stack has no
  native engines). Lucene HNSW is approximate, so the default query strategy ``exact`` is
  a ``script_score`` with the k-NN plugin's ``cosineSimilarity`` over every document the
  filter admits, scored ``(1 + cos) / 2``: the very value the Lucene engine's HNSW would
  give the same pair, with no recall loss. ``hnsw`` is the approximate ``knn`` query with
  ``k`` and ``ef_search`` at the leg depth, kept for comparison.

HTTP is stdlib ``urllib``: no client library, so nothing heavy is imported.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from harness.errors import IntegrityError, UsageError
from harness.index.backend import DocRecord, LegHit
from harness.index.documents import EmbeddingTextMode, IndexDoc

INDEX_VERSION = 1
INDEX_PREFIX = "ragsweep-state-"
URL_ENV = "RAGSWEEP_OPENSEARCH_URL"
AnalysisProfile = Literal["mirror", "english"]
KnnStrategy = Literal["exact", "hnsw"]
ANALYSIS_PROFILES: tuple[AnalysisProfile, ...] = ("mirror", "english")
KNN_STRATEGIES: tuple[KnnStrategy, ...] = ("exact", "hnsw")
SOURCE_FIELDS = ("id", "file_uuid", "chunk_index", "doc_type", "speaker", "content")
# tantivy's SimpleTokenizer splits on !char::is_alphanumeric(): Alphabetic or Numeric.
_NOT_ALPHANUMERIC = r"[^\p{IsAlphabetic}\p{N}]+"
# tantivy's RemoveLongFilter::limit(40) keeps tokens shorter than 40 bytes.
_MAX_TOKEN = 39
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
# the embedded backend's query cleaning (harness.index.embedded._QUERY_SAFE; a test keeps them equal)
QUERY_SAFE = re.compile(r"[^\w]+", re.UNICODE)


# ------------------------------------------------------------------------------ HTTP client


class OpenSearchClient:
    """JSON over HTTP to one node. Idempotent reads retry with capped backoff; writes never do."""

    def __init__(self, url: str, *, timeout: float = 120.0, deadline: float = 30.0) -> None:
        if not url:
            raise UsageError(f"no OpenSearch URL: set {URL_ENV} (make stack-up; eval \"$(stack/env.sh)\")")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.deadline = deadline

    def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, Any] | None = None,
                missing_ok: bool = False) -> Any:
        """One request; a list body goes as NDJSON (``_bulk``). 404 -> None when ``missing_ok``."""
        url = self.url + path
        if params:
            url += "?" + urllib.parse.urlencode({k: str(v).lower() if isinstance(v, bool) else v
                                                 for k, v in params.items()})
        headers: dict[str, str] = {}
        data = None
        if isinstance(body, list):
            data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in body).encode("utf-8")
            headers["Content-Type"] = "application/x-ndjson"
        elif body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        retry = method in {"GET", "HEAD"} or path.endswith(("/_search", "/_count", "/_refresh"))
        give_up = time.monotonic() + self.deadline
        delay = 0.1
        while True:
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as response:
                    raw = response.read()
                return json.loads(raw) if raw else None
            except urllib.error.HTTPError as e:
                text = e.read().decode("utf-8", errors="replace")
                if e.code == 404 and missing_ok:
                    return None
                if not (retry and e.code in _RETRY_STATUSES and time.monotonic() < give_up):
                    raise IntegrityError(f"OpenSearch {method} {path} -> HTTP {e.code}: {text[:2000]}") from e
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                if not (retry and time.monotonic() < give_up):
                    raise UsageError(f"OpenSearch at {self.url} did not answer {method} {path} ({e}); "
                                     "is the stack up? (make stack-up)") from e
            time.sleep(delay)
            delay = min(delay * 2, 2.0)

    def version(self) -> str:
        return str(self.request("GET", "/")["version"]["number"])


def client_from_env(environ: Mapping[str, str]) -> OpenSearchClient:
    return OpenSearchClient(environ.get(URL_ENV, ""))


# ------------------------------------------------------------------------- index definition


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


# ---------------------------------------------------------------------------------- queries


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


# ----------------------------------------------------------------------------------- writer


def create_index(client: OpenSearchClient, name: str, body: Mapping[str, Any]) -> None:
    """(Re)create ``name``: an existing index of that name is deleted first (a full reindex)."""
    client.request("DELETE", f"/{name}", missing_ok=True)
    client.request("PUT", f"/{name}", dict(body))


def bulk_index(client: OpenSearchClient, name: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
               models: Mapping[str, str], *, batch: int = 500, clock: Any = time.time) -> int:
    """Index every document in order, one bulk request per ``batch``; returns how many were written."""
    written = 0
    for lo in range(0, len(docs), batch):
        lines: list[dict[str, Any]] = []
        stamp = int(clock() * 1000)
        for row in range(lo, min(lo + batch, len(docs))):
            doc = docs[row]
            lines.append({"index": {"_index": name, "_id": doc.id}})
            lines.append(doc_source(doc, {m: v[row] for m, v in vectors.items()}, models, stamp))
        result = client.request("POST", "/_bulk", lines)
        if result.get("errors"):
            failed = [item["index"] for item in result["items"] if item["index"].get("error")]
            raise IntegrityError(f"bulk indexing into {name}: {len(failed)} documents failed, first: {failed[0]}")
        written += len(result["items"])
    return written


def build_stack_index(index_dir: Path, docs: Sequence[IndexDoc], identity: Mapping[str, Any], *,
                      client: OpenSearchClient, analysis: AnalysisProfile = "mirror") -> dict[str, Any]:
    """Index a built embedded index folder's documents and vectors into a fresh OpenSearch index.

    Returns the state's ``stack`` block: index name, version, mapping, dispatch time and counts.
    Settling (refresh, force-merge, the three conditions) is the measurement's job (harness.index.settle).
    """
    meta = json.loads((index_dir / "meta.json").read_text(encoding="utf-8"))
    embedding = meta["embedding"]
    vectors = {mode: np.load(index_dir / e["file"], mmap_mode="r") for mode, e in sorted(embedding.items())}
    for mode, matrix in vectors.items():
        if matrix.shape[0] != len(docs):
            raise IntegrityError(f"{index_dir}: vectors-{mode} has {matrix.shape[0]} rows for {len(docs)} documents")
    name = index_name(identity)
    digest = identity_digest(identity)
    body = index_body({m: e["dimension"] for m, e in embedding.items()}, analysis=analysis,
                      meta={"state_identity": digest, "analysis": analysis})
    create_index(client, name, body)
    dispatched_at = int(time.time() * 1000)
    written = bulk_index(client, name, docs, vectors, {m: e["model"] for m, e in embedding.items()})
    return {
        "backend": "stack",
        "engine": f"OpenSearch {client.version()}",
        "index": name,
        "state_identity": digest,
        "_meta": {"version": INDEX_VERSION},
        "analysis": analysis,
        "knn_field": {"method": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
        "mapping_sha256": hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest(),
        "dispatched_at": dispatched_at,
        "documents": written,
        "chunk_documents": sum(1 for d in docs if d.doc_type == "chunk"),
        "digest_documents": sum(1 for d in docs if d.doc_type == "digest"),
        "files": len({d.file_uuid for d in docs}),
    }


def index_state(index_dir: Path, state: Mapping[str, Any], *, analysis: AnalysisProfile = "mirror",
                url: str | None = None, client: OpenSearchClient | None = None,
                settle_timeout: float | None = None) -> dict[str, Any]:
    """``state build --backend stack``: index the built state's documents, settle, survey them back.

    Documents come from the embedded build's ``docs.jsonl`` (whichever path wrote it) and
    vectors from its ``vectors-{mode}.npy``. Returns the state's ``stack`` block, with the
    provenance read from the indexed documents.
    """
    import os

    from harness.index.provenance import survey
    from harness.index.settle import DEFAULT_SETTLE_TIMEOUT, settle_for_measurement
    from harness.index.state import doc_from_record

    if client is None:
        client = OpenSearchClient(url or os.environ.get(URL_ENV, ""))
    with (index_dir / "docs.jsonl").open(encoding="utf-8") as fh:
        docs = [doc_from_record(json.loads(line)) for line in fh]
    embedding = state["index"]["embedding"]
    identity = state_identity(state["corpora"], state["chunking"], embedding, analysis)
    block = build_stack_index(index_dir, docs, identity, client=client, analysis=analysis)
    report = settle_for_measurement(client, block["index"], {d.file_uuid for d in docs if d.doc_type == "chunk"},
                                    block["dispatched_at"], timeout=settle_timeout or DEFAULT_SETTLE_TIMEOUT)
    backend = OpenSearchBackend(client, block["index"])
    block["settle"] = report.to_dict()
    block["provenance"] = {
        mode: survey(backend.embedding_models(mode), dimension=backend.dimension(mode),
                     configured=embedding[mode]["model"])
        for mode in sorted(embedding)
    }
    return block


# ---------------------------------------------------------------------------------- backend


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
