"""The ingest task functions and the coordinator (docs/ingest.md).

* ``index_file``: read one file's segments from the store in the total order
  ``(start_time, end_time, id)``, chunk them (the pinned splitter), embed, and write the
  file's documents to a :class:`~harness.index.ingest.sinks.DocumentSink`; record the
  outcome in the ledger. It never raises for a bad file: the failure is recorded, so the
  tally stays complete.
* the coordinator: ``start_reindex`` takes the lock and snapshots the file list;
  ``finish_reindex`` tallies and runs the orphan sweep, which FAILS CLOSED: it deletes
  nothing unless indexed + failed accounts for every snapshotted file, the ledger still
  holds this run's snapshot and this run still holds the lock.

``--dispatch eager`` calls them in-process (``run_eager``) with a
:class:`~harness.index.ingest.ledger.MemoryLedger`; ``--dispatch celery`` sends them to
workers (:mod:`harness.index.ingest.tasks`) with a
:class:`~harness.index.ingest.ledger.RedisLedger`.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

import numpy as np

from harness.errors import IntegrityError, RefusedError, UsageError
from harness.index import chunking, documents, sentences
from harness.index.chunking import ChunkingPolicy, chronological
from harness.index.documents import embedding_text, meeting_documents
from harness.index.embed import Embedder, SentenceTransformerEmbedder
from harness.index.embedcache import CachingEmbedder
from harness.index.ingest.ledger import Ledger, MemoryLedger, lock_key
from harness.index.ingest.messages import (
    NO_ENDPOINTS,
    Endpoints,
    IndexFileJob,
    ReindexReport,
    ReindexRequest,
    ReindexRun,
    SweepReport,
    file_jobs,
)
from harness.index.ingest.sinks import DocumentSink, open_sink
from harness.index.sentences import SPLITTER_IDENTITY
from harness.index.teamcache import caching
from harness.model import Meeting
from harness.store import Segment


def _code_digest() -> str:
    """sha256 of the modules that decide a chunk, as this process loaded them (a stale worker shows)."""
    h = hashlib.sha256()
    for module in (chunking, sentences, documents, sys.modules[__name__]):
        h.update(Path(str(module.__file__)).read_bytes())
    return h.hexdigest()[:16]


CODE_DIGEST: Final = _code_digest()


def worker_identity() -> dict[str, Any]:
    """What indexed: the splitter and code every process must share, and where it ran."""
    return {"splitter": SPLITTER_IDENTITY, "code_sha256": CODE_DIGEST, "python": sys.version.split()[0],
            "prefix": sys.prefix, "host": socket.gethostname(), "pid": os.getpid()}



@lru_cache(maxsize=4)
def embedder_for(spec: str, cache: str | None = None, team: tuple[str | None, str | None] = (None, None)) -> Embedder:
    """One loaded model per spec per process (a worker loads it at its first file).

    Uncached, a task encodes one file per call with sentence-transformers' own batches
    (harness.index.encoder's one-length batches would be mostly fill copies there), so a file's
    vectors depend on that file's texts. With the request's embedding cache, the model is the
    batch-independent encoder behind that cache (harness.index.embedcache): a text's vector is the
    one every build gives it, read from the cache when an earlier build (or the host's warm-up,
    harness.state.ingest) encoded it, so a warm cache encodes nothing."""
    if cache is None:
        return SentenceTransformerEmbedder(spec, batching=None)
    return cached(SentenceTransformerEmbedder(spec), cache, team)


_CACHED: dict[tuple[int, str, str | None, str | None], CachingEmbedder] = {}


def cached(embedder: Embedder, cache: str, team: tuple[str | None, str | None] = (None, None)) -> CachingEmbedder:
    """``embedder`` behind the embedding cache at ``cache`` (and the team's tier ``team``: spec, endpoint, as
    harness.index.teamcache.SharedTier.from_spec takes them): one wrapper per (model object, cache, tier) in
    a process, so a worker lists and verifies the cache's shards once, not per file."""
    key = (id(embedder), cache, *team)
    if key not in _CACHED:
        _CACHED[key] = caching(embedder, Path(cache), team)
    return _CACHED[key]


def _cache_counts(resolved: Mapping[str, Embedder], texts: Mapping[str, list[str]],
                  encoded_before: Mapping[int, int]) -> dict[str, int]:
    """One call's texts read from the cache and encoded, over the distinct cached embedders."""
    hits = encoded = 0
    for key, embedder in {id(e): e for e in resolved.values()}.items():
        if not isinstance(embedder, CachingEmbedder):
            continue
        wanted = {t for mode, e in resolved.items() if id(e) == key for t in texts[mode]}
        added = embedder.encoded - encoded_before[key]
        encoded += added
        hits += len(wanted) - added
    return {"hits": hits, "encoded": encoded}


def encoder_rule(embedder: Embedder) -> str | None:
    """What besides the weights decided the vectors' bits (its describe()'s encoder), when it says."""
    describe = getattr(embedder, "describe", None)
    return describe().get("encoder") if callable(describe) else None


def meeting_from_segments(header: Mapping[str, Any], segments: Sequence[Segment]) -> Meeting:
    """A Meeting rebuilt from its media_file row and its segments as the store returned them.

    The store's order ``(start_time, end_time, id)`` and the chunker's ``(start, end,
    turn index)`` must agree (ids ascend in turn order within a file); if they ever do
    not, chunk boundaries would depend on which one ran, so this refuses.
    """
    by_turn = sorted(segments, key=lambda s: s.turn_index)
    meeting = Meeting.model_validate({**header, "turns": [s.to_turn() for s in by_turn]})
    if [s.turn_index for s in segments] != [t.index for t in chronological(meeting.turns)]:
        raise IntegrityError(f"{meeting.file_uuid}: the store's (start_time, end_time, id) order differs from "
                             "(start, end, turn index); segment ids do not ascend in turn order")
    return meeting


def _encode(embedder: Embedder, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.asarray(embedder.encode(texts), dtype=np.float32)


def index_file(job: IndexFileJob, ledger: Ledger, embedders: Mapping[str, Embedder] | None = None, *,
               endpoints: Endpoints = NO_ENDPOINTS) -> dict[str, Any]:
    """Chunk, embed and write one file; record and return its outcome (never raises for the file)."""
    request = job.request
    policy = request.policy()
    result: dict[str, Any] = {"file_uuid": job.file_uuid, "run_id": job.run_id, "splitter": SPLITTER_IDENTITY,
                              "chunking": policy.to_dict(), "worker": worker_identity()}
    try:
        with request.store.open(readonly=True, endpoints=endpoints) as store:
            segments = store.segments(job.file_uuid)
        meeting = meeting_from_segments(job.header, segments)
        docs = meeting_documents(meeting, policy, digests=request.digests)
        cache = request.embedding_cache
        team = (request.team_cache, request.team_cache_endpoint)
        resolved = {mode: (embedder_for(spec, cache, team) if embedders is None
                           else cached(embedders[mode], cache, team) if cache else embedders[mode])
                    for mode, spec in sorted(request.embedding.items())}
        texts = {mode: [embedding_text(d, mode) for d in docs] for mode in resolved}  # type: ignore[arg-type]
        before = {id(e): e.encoded for e in resolved.values() if isinstance(e, CachingEmbedder)}
        vectors = {mode: _encode(e, texts[mode]) for mode, e in resolved.items()}
        identities = {mode: e.identity for mode, e in resolved.items()}
        result.update(encoder={mode: encoder_rule(e) for mode, e in resolved.items()},
                      embedding_cache=_cache_counts(resolved, texts, before) if cache else None)
        provenance = {"splitter": SPLITTER_IDENTITY, "chunking": policy.to_dict(), "embedding": identities,
                      "dimension": {mode: e.dimension for mode, e in resolved.items()}}
        digest = open_sink(request.sink, endpoints).write_file(job.file_uuid, docs, vectors, provenance)
        result.update(status="indexed", segments=len(segments), documents=len(docs),
                      chunk_documents=sum(1 for d in docs if d.doc_type == "chunk"),
                      digest_documents=sum(1 for d in docs if d.doc_type == "digest"),
                      embedding=identities, sha256=digest)
    except Exception as e:  # recorded as this file's outcome: the tally must stay complete
        result.update(status="failed", error=f"{type(e).__name__}: {e}")
    ledger.record(job.run_id, request.sink.target, job.file_uuid, result)
    return result


def start_reindex(request: ReindexRequest, ledger: Ledger, *, run_id: str | None = None,
                  endpoints: Endpoints = NO_ENDPOINTS) -> ReindexRun:
    """Take the target's lock, snapshot the file list from the store, record the snapshot."""
    run_id = run_id or uuid.uuid4().hex
    ledger.acquire(request.sink.target, run_id)
    try:
        with request.store.open(readonly=True, endpoints=endpoints) as store:
            meetings = store.meetings()
        headers = {m.file_uuid: m.model_dump(mode="json", exclude={"turns"}) for m in meetings}
        if request.files is not None:
            missing = sorted(set(request.files) - set(headers))
            if missing:
                raise UsageError(f"{len(missing)} file(s) to index are not in the store (first: {missing[0]}); "
                                 "inject them first")
            headers = {u: headers[u] for u in request.files}
        run = ReindexRun(run_id, request, tuple(headers[u] for u in sorted(headers)))
        ledger.begin(run_id, run.target, run.snapshot)
    except BaseException:
        ledger.release(request.sink.target, run_id)
        raise
    return run



def orphan_sweep(run: ReindexRun, ledger: Ledger, sink: DocumentSink) -> SweepReport:
    """Delete documents of files not in the snapshot, only on a complete tally.

    Declines (deletes nothing) when this run no longer holds the lock, when the ledger no
    longer holds this run's snapshot, or when indexed + failed does not account for every
    snapshotted file. Skipping leaves stale documents the next full reindex removes;
    sweeping on an incomplete tally deletes an index nothing recovers.
    """
    holder = ledger.holder(run.target)
    if holder != run.run_id:
        return SweepReport(False, f"declined: {lock_key(run.target)} is held by {holder or 'nobody'}, not this "
                                  f"run {run.run_id}; another coordinator may be running")
    stored = ledger.snapshot(run.run_id)
    if stored is None or stored != run.snapshot:
        return SweepReport(False, f"declined: the ledger no longer holds this run's snapshot of {len(run.snapshot)} "
                                  "files (expired or overwritten)")
    outcomes = ledger.outcomes(run.run_id)
    foreign = sorted(set(outcomes) - run.snapshot)
    if foreign:
        return SweepReport(False, f"declined: {len(foreign)} outcome(s) for files outside the snapshot "
                                  f"(first: {foreign[0]})")
    unaccounted = sorted(run.snapshot - set(outcomes))
    if unaccounted:
        indexed = sum(1 for r in outcomes.values() if r.get("status") == "indexed")
        return SweepReport(False, f"declined: indexed {indexed} + failed {len(outcomes) - indexed} accounts for "
                                  f"{len(outcomes)} of {len(run.snapshot)} snapshotted files (first missing: "
                                  f"{unaccounted[0]})", unaccounted=len(unaccounted))
    orphans = tuple(sorted(sink.files() - run.snapshot))
    return SweepReport(True, "complete tally", orphans=orphans, documents_deleted=sink.delete_files(orphans))



def finish_reindex(run: ReindexRun, ledger: Ledger, *, endpoints: Endpoints = NO_ENDPOINTS) -> ReindexReport:
    """Tally from the ledger (the source of truth), sweep or decline, release the lock."""
    sweep = orphan_sweep(run, ledger, open_sink(run.request.sink, endpoints))
    outcomes = ledger.outcomes(run.run_id)
    ledger.release(run.target, run.run_id)
    return ReindexReport(run_id=run.run_id, target=run.target, snapshot=tuple(sorted(run.snapshot)),
                         results=tuple(outcomes[u] for u in sorted(outcomes)), sweep=sweep)


def run_eager(request: ReindexRequest, embedders: Mapping[str, Embedder] | None = None, *,
              ledger: Ledger | None = None, progress: Callable[[str, int, int], None] | None = None,
              endpoints: Endpoints = NO_ENDPOINTS) -> ReindexReport:
    """The coordinator in-process: the same functions the workers run, one file after another."""
    ledger = ledger if ledger is not None else MemoryLedger()
    run = start_reindex(request, ledger, endpoints=endpoints)
    jobs = file_jobs(run)
    for i, job in enumerate(jobs, start=1):
        index_file(job, ledger, embedders, endpoints=endpoints)
        if progress:
            progress("indexing (eager)", i, len(jobs))
    return finish_reindex(run, ledger, endpoints=endpoints)



def check_report(report: ReindexReport, *, policy: ChunkingPolicy, embedding: Mapping[str, str]) -> None:
    """Refuse a reindex that does not describe one complete index cut and embedded one way.

    ``embedding`` is the host's model identity per mode. Every file must be indexed, by
    the host's splitter and chunking policy (the punkt lesson: a worker that cuts
    differently builds a different index from the same corpus), into one vector space.
    """
    if not report.sweep.ran:
        raise IntegrityError(f"reindex {report.run_id} is incomplete, so the orphan sweep {report.sweep.reason}; "
                             "no index was assembled (are the workers up? stack/celery.sh status)")
    if report.failed:
        first = next(r for r in report.results if r.get("status") == "failed")
        raise IntegrityError(f"reindex {report.run_id}: {len(report.failed)} of {len(report.snapshot)} files failed "
                             f"(first: {first['file_uuid']}: {first.get('error')}); fix it and rebuild")
    splitters = sorted({r["splitter"] for r in report.results})
    if splitters and splitters != [SPLITTER_IDENTITY]:
        raise IntegrityError(f"files were chunked by splitter(s) {splitters}, this process has {SPLITTER_IDENTITY}; "
                             "restart the workers on this code (stack/celery.sh restart)")
    policies = {json.dumps(r["chunking"], sort_keys=True) for r in report.results}
    if policies - {json.dumps(policy.to_dict(), sort_keys=True)}:
        raise IntegrityError(f"files were chunked with {sorted(policies)}, expected {policy.to_dict()}")
    for mode, identity in sorted(embedding.items()):
        seen = sorted({r["embedding"][mode] for r in report.results})
        if seen and seen != [identity]:
            raise RefusedError(f"embedding_text {mode}: documents embedded by {seen}, configured {identity}; "
                               "a mixed or foreign vector space is refused")
        rules = sorted({str(r.get("encoder", {}).get(mode)) for r in report.results})
        if len(rules) > 1:  # the same weights through other batching, torch or CPU kernels: other last bits
            raise RefusedError(f"embedding_text {mode}: files encoded under {len(rules)} rules ({'; '.join(rules)}); "
                               "restart the workers on one image and CPU kind and rebuild")
