"""The embedded search backend: tantivy BM25 + exact dense kNN over a memory-mapped matrix.

It stands in for OpenSearch hybrid search, so it mirrors its choices:

* BM25 leg: Lucene-style BM25 (tantivy) over ``content`` and ``title`` (English
  stemming), scores summed across the two fields like a ``multi_match`` of type
  ``most_fields``; the chunk plane only (``doc_type`` chunk).
* Vector leg: exact cosine over L2-normalised float32 vectors, scored
  ``(1 + cos) / 2`` as OpenSearch's Lucene engine scores ``cosinesimil``.
* An exact, unstemmed ``content_exact`` field with positions for phrase matching, and a
  terms aggregation on ``file_uuid`` for the answers engine.

Layout of an index folder: ``meta.json``, ``docs.jsonl`` (one document per row, row
order = vector row order), ``vectors-{mode}.npy`` (rows x dimension float32, memory-mapped) per
embedding-text mode, and ``tantivy/``. Built once, then opened read-only by any number
of processes at once. The writer runs single-threaded so segment layout — and with it
the order of equal BM25 scores — is the same on every build. An embedder behind the
embedding cache (harness.index.embedcache) encodes its misses first, then answers the windows;
one that encodes in pieces (harness.index.encoder) is given every distinct text at once.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import InputDataError, IntegrityError, UsageError
from harness.index.backend import DocRecord, LegHit
from harness.index.documents import EmbeddingTextMode, IndexDoc, embedding_text
from harness.index.embed import Embedder, check_encoded, encode_pieces
from harness.index.embedcache import CachingEmbedder

INDEX_VERSION = 1
_QUERY_SAFE = re.compile(r"[^\w]+", re.UNICODE)


def _labelled(progress: Callable[[str, int, int], None] | None, label: str) -> Callable[[int, int], None] | None:
    if progress is None:
        return None
    return lambda done, total: progress(label, done, total)


def _embed(matrix: np.ndarray, texts: list[str], embedder: Embedder, window: int,
           progress: Callable[[str, int, int], None] | None, mode: str) -> None:
    """Row i of ``matrix`` := the vector of ``texts[i]``. An embedder that encodes in pieces gets every
    distinct text at once (it groups them before encoding any); any other is asked window by window,
    in document order, after the cache (if it is one) has encoded its misses."""
    report = _labelled(progress, f"embedding ({mode})")
    if isinstance(embedder, CachingEmbedder):
        embedder.prepare(texts, progress=_labelled(progress, f"encoding ({mode})"))
    elif callable(getattr(embedder, "encode_pieces", None)):
        rows: dict[str, list[int]] = {}
        for row, text in enumerate(texts):
            rows.setdefault(text, []).append(row)
        done = 0
        for part, encoded in encode_pieces(embedder, list(rows), window):
            vectors = check_encoded(embedder.identity, part, encoded, embedder.dimension)
            for text, vector in zip(part, vectors, strict=True):
                matrix[rows[text]] = vector
            done += len(part)
            if report:
                report(done, len(rows))
        return
    for lo in range(0, len(texts), window):
        part = texts[lo:lo + window]  # checked before it is written: an encoder's NaN is named by its text
        matrix[lo:lo + window] = check_encoded(embedder.identity, part, embedder.encode(part), embedder.dimension)
        if report:
            report(min(lo + window, len(texts)), len(texts))


def _schema() -> Any:
    import tantivy

    b = tantivy.SchemaBuilder()
    b.add_integer_field("row", stored=True, indexed=True, fast=True)
    b.add_text_field("file_uuid", stored=False, tokenizer_name="raw", fast=True)
    b.add_text_field("doc_type", stored=False, tokenizer_name="raw", fast=True)
    b.add_text_field("speaker", stored=False, tokenizer_name="raw")
    b.add_text_field("title", stored=False, tokenizer_name="en_stem")
    b.add_text_field("content", stored=False, tokenizer_name="en_stem")
    b.add_text_field("content_exact", stored=False, tokenizer_name="default", index_option="position")
    return b.build()


def _reserve(path: Path) -> None:
    """Give a new memory-mapped file its blocks now: a sparse one on a disk that fills is a SIGBUS at the
    first write to a page (the process dies, its temporary folders left behind); reserved, it is an OSError
    here (ENOSPC), which the builder cleans up after and the CLI says in one line."""
    if not hasattr(os, "posix_fallocate"):  # macOS: left sparse, as before
        return
    with path.open("r+b") as fh:
        try:
            os.posix_fallocate(fh.fileno(), 0, path.stat().st_size)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):  # a file system that cannot: sparse
                raise


def build_index(
    out_dir: Path,
    docs: Sequence[IndexDoc],
    embedders: dict[EmbeddingTextMode, Embedder],
    *,
    progress: Callable[[str, int, int], None] | None = None,
    encode_batch: int = 4096,
) -> dict[str, Any]:
    """Write a complete index folder (to a temporary sibling, renamed at the end)."""
    import tantivy

    if out_dir.exists():
        raise UsageError(f"{out_dir} already exists; remove it or build into a new state")
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "tantivy").mkdir(parents=True)
    try:
        embedding_block: dict[str, Any] = {}
        for mode, embedder in sorted(embedders.items()):
            texts = [embedding_text(d, mode) for d in docs]
            matrix = np.lib.format.open_memmap(
                tmp / f"vectors-{mode}.npy", mode="w+", dtype=np.float32, shape=(len(docs), embedder.dimension)
            )
            _reserve(tmp / f"vectors-{mode}.npy")
            _embed(matrix, texts, embedder, encode_batch, progress, mode)
            matrix.flush()
            del matrix
            embedding_block[mode] = {"model": embedder.identity, "dimension": embedder.dimension,
                                     "file": f"vectors-{mode}.npy"}
        index = tantivy.Index(_schema(), path=str(tmp / "tantivy"))
        writer = index.writer(heap_size=128_000_000, num_threads=1)
        with (tmp / "docs.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
            for row, doc in enumerate(docs):
                record = {**asdict(doc), "row": row,
                          "embedding_model": {mode: e.identity for mode, e in sorted(embedders.items())}}
                fh.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
                writer.add_document(tantivy.Document(
                    row=row, file_uuid=doc.file_uuid, doc_type=doc.doc_type, speaker=doc.speaker or "",
                    title=doc.title, content=doc.content, content_exact=doc.content,
                ))
        writer.commit()
        writer.wait_merging_threads()
        meta = {
            "_meta": {"version": INDEX_VERSION},
            "documents": len(docs),
            "chunk_documents": sum(1 for d in docs if d.doc_type == "chunk"),
            "digest_documents": sum(1 for d in docs if d.doc_type == "digest"),
            "files": len({d.file_uuid for d in docs}),
            "embedding": embedding_block,
            "backend": {"name": "embedded", "bm25": str(getattr(tantivy, "__version__", "tantivy")),
                        "vector": "exact cosine, score (1+cos)/2, float32"},
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return meta


def _open_tantivy(folder: Path) -> Any:
    """tantivy's index at ``folder``. tantivy takes a lock file beside the index even to read it, so an index
    in a read-only folder (a read-only mount, a state shared read-only) is opened from a private copy
    of its files, removed when the process ends: a state is documented as opened read-only."""
    import atexit
    import tempfile

    import tantivy

    try:
        return tantivy.Index.open(str(folder))
    except ValueError as e:
        if "Lockfile" not in str(e):
            raise IntegrityError(f"{folder}: tantivy cannot open it ({e}); rebuild the state") from e
    copy = Path(tempfile.mkdtemp(prefix="ragsweep-tantivy-"))
    atexit.register(shutil.rmtree, copy, True)
    for file in folder.iterdir():
        if file.is_file() and not file.name.endswith(".lock"):
            shutil.copyfile(file, copy / file.name)
    try:
        return tantivy.Index.open(str(copy))
    except ValueError as e:
        raise IntegrityError(f"{folder}: tantivy cannot open it ({e}); rebuild the state") from e


def top_by_score_then_row(scores: np.ndarray, k: int) -> list[int]:
    """Positions of the ``k`` highest ``scores``, ordered by score descending, then position.

    Positions index rows in ascending row order, so ties are broken by row at the cut too: a row
    tied with the k-th score is kept before any later row with that score, and the top k is the
    first k of any deeper top (argpartition alone keeps an arbitrary subset of the tied rows)."""
    take = min(k, scores.size)
    if take < 1:
        return []
    if take < scores.size:
        kth = np.partition(scores, scores.size - take)[scores.size - take]  # the take-th highest score
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: take - above.size]
        top = np.concatenate([above, tied])
    else:
        top = np.arange(scores.size)
    return sorted(top.tolist(), key=lambda i: (-scores[i], i))


class EmbeddedIndex:
    """A built index, opened read-only."""

    def __init__(self, path: Path) -> None:
        meta_path = path / "meta.json"
        if not meta_path.is_file():
            raise IntegrityError(f"{path}: not an index folder (no meta.json); build the state first")
        self.path = path
        self.meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
        if self.meta["_meta"]["version"] != INDEX_VERSION:
            raise IntegrityError(f"{path}: index version {self.meta['_meta']['version']} != {INDEX_VERSION}")
        self.docs: list[dict[str, Any]] = []
        with (path / "docs.jsonl").open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                try:
                    self.docs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise InputDataError(f"{path / 'docs.jsonl'}:{n}: {e.msg}") from e
        if len(self.docs) != self.meta["documents"]:
            raise IntegrityError(f"{path}: docs.jsonl has {len(self.docs)} rows, meta says {self.meta['documents']}")
        self._index = _open_tantivy(path / "tantivy")
        self._searcher = self._index.searcher()
        self._vectors: dict[str, np.ndarray] = {}
        # (embedded text, doc type) -> the rows of that plane and their vectors, gathered once
        self._planes: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._planes_lock = threading.Lock()
        files = sorted({d["file_uuid"] for d in self.docs})
        self.file_ids = {f: i for i, f in enumerate(files)}
        self._row_of = {d["id"]: i for i, d in enumerate(self.docs)}
        self._row_file = np.array([self.file_ids[d["file_uuid"]] for d in self.docs], dtype=np.int32)
        self._row_is_chunk = np.array([d["doc_type"] == "chunk" for d in self.docs], dtype=bool)

    name = "embedded"

    # -- documents ---------------------------------------------------------------------------
    def record(self, doc_id: str) -> DocRecord:
        d = self.docs[self._row_of[doc_id]]
        return DocRecord(id=d["id"], file_uuid=d["file_uuid"], chunk_index=d["chunk_index"], doc_type=d["doc_type"],
                         speaker=d["speaker"], content=d["content"])

    def embedding_models(self, mode: EmbeddingTextMode) -> list[str | None]:
        return [d["embedding_model"].get(mode) for d in self.docs]

    def describe(self) -> dict[str, Any]:
        return {"_meta": self.meta["_meta"], "backend": self.meta["backend"], "documents": self.meta["documents"],
                "chunk_documents": self.meta["chunk_documents"], "digest_documents": self.meta["digest_documents"],
                "files": self.meta["files"]}

    def vectors(self, mode: EmbeddingTextMode) -> np.ndarray:
        if mode not in self.meta["embedding"]:
            raise UsageError(
                f"{self.path}: no vectors for embedding_text {mode!r} (built: {', '.join(self.meta['embedding'])}); "
                f"rebuild the state with --embedding-text {mode}"
            )
        if mode not in self._vectors:
            self._vectors[mode] = np.load(self.path / self.meta["embedding"][mode]["file"], mmap_mode="r")
        return self._vectors[mode]

    def num_docs(self) -> int:
        return int(self._searcher.num_docs)

    # -- legs ----------------------------------------------------------------------------
    def _filter_query(self, doc_type: str, file_uuids: Sequence[str] | None, speaker: str | None) -> list[Any]:
        import tantivy

        # Filters must not score (OpenSearch's bool filter context): each is wrapped in a
        # constant-score query worth 0, so a leg's BM25 scores are the text query's alone.
        # A scoring filter adds a constant to every hit, which l2 normalisation does see.
        schema = self._index.schema
        filters = [tantivy.Query.term_query(schema, "doc_type", doc_type)]
        if file_uuids is not None:
            filters.append(tantivy.Query.term_set_query(schema, "file_uuid", list(file_uuids)))
        if speaker is not None:
            filters.append(tantivy.Query.term_query(schema, "speaker", speaker))
        return [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]

    def bm25(self, text: str, k: int, *, doc_type: str = "chunk", file_uuids: Sequence[str] | None = None,
             speaker: str | None = None) -> list[LegHit]:
        import tantivy

        # lowercased: the analyzers lowercase anyway, and the query parser would read an
        # uppercase AND / OR / NOT / IN in a user's question as an operator
        cleaned = _QUERY_SAFE.sub(" ", text).strip().lower()
        if not cleaned or k < 1:
            return []
        text_query = self._index.parse_query(cleaned, ["content", "title"])
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text_query), *self._filter_query(doc_type, file_uuids, speaker)]
        )
        result = self._searcher.search(query, limit=k, count=False)
        rows = sorted(((float(score), int(self._searcher.doc(addr)["row"][0])) for score, addr in result.hits),
                      key=lambda h: (-h[0], h[1]))
        return [LegHit(doc_id=self.docs[row]["id"], score=score) for score, row in rows]

    def knn(self, query_vector: np.ndarray, k: int, *, mode: EmbeddingTextMode, doc_type: str = "chunk",
            file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> list[LegHit]:
        if file_uuids is None and speaker is None:
            rows, candidates = self._plane(mode, doc_type)
        else:
            mask = self._type_mask(doc_type)
            if file_uuids is not None:
                wanted = [self.file_ids[f] for f in file_uuids if f in self.file_ids]
                mask = mask & np.isin(self._row_file, np.array(wanted, dtype=np.int32))
            if speaker is not None:
                mask = mask & np.array([d["speaker"] == speaker for d in self.docs], dtype=bool)
            rows = np.flatnonzero(mask)
            candidates = self.vectors(mode)[rows]
        if rows.size == 0 or k < 1:
            return []
        cos = candidates @ query_vector.astype(np.float32)
        scores = (1.0 + cos.astype(np.float64)) / 2.0
        order = top_by_score_then_row(scores, k)
        return [LegHit(doc_id=self.docs[int(rows[i])]["id"], score=float(scores[i])) for i in order]

    def _plane(self, mode: EmbeddingTextMode, doc_type: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows of ``doc_type`` and their ``mode`` vectors, gathered once (a float32 copy the size
        of the plane, kept for the index's life). An unfiltered kNN leg multiplies them as they are:
        gathering them again for every query cost four times the multiplication (164,421 header
        vectors: 107 of 131 ms a query), and the product is the same bytes either way, the same
        contiguous rows in a fresh array of the same size."""
        with self._planes_lock:
            plane = self._planes.get((mode, doc_type))
            if plane is None:
                rows = np.flatnonzero(self._type_mask(doc_type))
                plane = self._planes[(mode, doc_type)] = (rows, self.vectors(mode)[rows])
            return plane

    def _type_mask(self, doc_type: str) -> np.ndarray:
        return self._row_is_chunk if doc_type == "chunk" else ~self._row_is_chunk

    # -- aggregations (answers engine) ----------------------------------------------------------
    def phrase_file_buckets(self, phrase: str, *, size: int = 10_000) -> dict[str, int]:
        """file_uuid -> matching chunk documents for an exact phrase; raises if truncated."""
        import tantivy

        words: list[str | tuple[int, str]] = [w for w in _QUERY_SAFE.sub(" ", phrase.casefold()).split() if w]
        if not words:
            raise UsageError("empty phrase")
        schema = self._index.schema
        phrase_query = (tantivy.Query.phrase_query(schema, "content_exact", words) if len(words) > 1
                        else tantivy.Query.term_query(schema, "content_exact", words[0]))
        query = tantivy.Query.boolean_query([(tantivy.Occur.Must, phrase_query),
                                             *self._filter_query("chunk", None, None)])
        result = self._searcher.aggregate(query, {"files": {"terms": {"field": "file_uuid", "size": size}}})
        files = result["files"]
        if files.get("sum_other_doc_count", 0):
            raise IntegrityError(
                f"terms aggregation truncated at size {size}: {files['sum_other_doc_count']} documents "
                "in buckets not returned; a count from it would look right and be wrong"
            )
        return {b["key"]: int(b["doc_count"]) for b in files["buckets"]}
