"""Ingest: the relational store's segments -> chunk documents -> an index, one task per file.

The same functions run in both dispatch modes (docs/ingest.md):

* ``index_file``: read one file's segments from the store in the total order
  ``(start_time, end_time, id)``, chunk them (the pinned splitter), embed, and write the
  file's documents to a :class:`DocumentSink`; record the outcome in the ledger. It
  never raises for a bad file: the failure is recorded, so the tally stays complete.
* the coordinator: ``start_reindex`` takes the lock and snapshots the file list;
  ``finish_reindex`` tallies and runs the orphan sweep, which FAILS CLOSED: it deletes
  nothing unless indexed + failed accounts for every snapshotted file, the ledger still
  holds this run's snapshot and this run still holds the lock.

``--dispatch eager`` calls them in-process with a :class:`MemoryLedger`; ``--dispatch
celery`` sends them to workers (harness.index.tasks) with a :class:`RedisLedger`.

The embedded backend's sink writes one shard folder per file; ``assemble_embedded_index``
turns the shards, in file_uuid order, into the state's index with the vectors the tasks
computed. The OpenSearch sink writes through harness.index.opensearch's bulk writer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal, Protocol

import numpy as np

from harness.errors import IntegrityError, RefusedError, UsageError
from harness.index import chunking, documents, sentences
from harness.index.chunking import DEFAULT_MAX_WORDS, ChunkingPolicy, chronological
from harness.index.documents import EmbeddingTextMode, IndexDoc, embedding_text, meeting_documents
from harness.index.embed import Embedder
from harness.index.sentences import SPLITTER_IDENTITY
from harness.model import Meeting
from harness.store import PostgresStore, Segment, SqliteStore, SqlStore

Dispatch = Literal["eager", "celery"]
DISPATCH_MODES: tuple[Dispatch, ...] = ("eager", "celery")
StoreEngine = Literal["sqlite", "postgres"]
STORE_ENGINES: tuple[StoreEngine, ...] = ("sqlite", "postgres")

# A live coordinator refreshes its lock with every recorded outcome; a dead one stops
# blocking the next reindex after this long (the API must never clear these keys).
LOCK_TTL_S: Final = 3600
# Snapshot and outcomes outlive the run by a day, for the post-mortem.
STATE_TTL_S: Final = 86_400
PG_DSN_ENV: Final = "RAGSWEEP_PG_DSN"
PG_SCHEMA_ENV: Final = "RAGSWEEP_PG_SCHEMA"
DEFAULT_QUEUES: Final[Mapping[str, str]] = {"embedding": "embedding", "cpu": "cpu"}


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


# -- where documents come from and go to -------------------------------------------------


@dataclass(frozen=True)
class StoreSpec:
    """How a worker opens the relational store: a SQLite file, or a Postgres schema.

    For Postgres, ``location`` names the environment variable holding the DSN, so no
    password travels in a task message.
    """

    engine: StoreEngine
    location: str
    schema: str | None = None

    def open(self, *, readonly: bool) -> SqlStore:
        if self.engine == "sqlite":
            return SqliteStore.open(self.location, readonly=readonly)
        dsn = os.environ.get(self.location)
        if not dsn:
            raise UsageError(f"the Postgres store needs {self.location} (make stack-up; eval \"$(stack/env.sh)\")")
        return PostgresStore.open(dsn, schema=self.schema, readonly=readonly)

    def describe(self) -> dict[str, Any]:
        if self.engine == "sqlite":
            return {"engine": "sqlite", "file": Path(self.location).name}
        return {"engine": "postgres", "dsn_from": self.location, "schema": self.schema}


@dataclass(frozen=True)
class SinkSpec:
    """Where index_file writes: ``embedded`` (a shard folder) or ``opensearch`` (an index name)."""

    backend: str
    location: str

    @property
    def target(self) -> str:
        """The name the reindex lock is taken on: one coordinator per index."""
        return f"{self.backend}:{self.location}"


class DocumentSink(Protocol):
    """The small interface index_file and the orphan sweep write through."""

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        """Replace one file's documents; return a sha256 of what was written."""
        ...

    def files(self) -> set[str]:
        """file_uuids that have documents in the index."""
        ...

    def delete_files(self, file_uuids: Collection[str]) -> int:
        """Delete every document of these files; return how many were deleted."""
        ...


class ShardSink:
    """Per-file shards for the embedded backend: ``ROOT/<file_uuid>/{docs.jsonl, vectors-<mode>.npy, shard.json}``.

    A shard is written to a hidden sibling and renamed into place, ``shard.json`` last,
    so a reader sees a file's old shard or its new one, never half of one.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _dir(self, file_uuid: str) -> Path:
        if not file_uuid or "/" in file_uuid or file_uuid.startswith("."):
            raise UsageError(f"not a file_uuid: {file_uuid!r}")
        return self.root / file_uuid

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        final = self._dir(file_uuid)
        tmp = self.root / f".tmp-{file_uuid}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            h = hashlib.sha256()
            body = "".join(json.dumps(asdict(d), sort_keys=True, ensure_ascii=False) + "\n" for d in docs)
            (tmp / "docs.jsonl").write_text(body, encoding="utf-8", newline="\n")
            h.update(body.encode("utf-8"))
            for mode in sorted(vectors):
                np.save(tmp / f"vectors-{mode}.npy", np.ascontiguousarray(vectors[mode], dtype=np.float32))
                h.update((tmp / f"vectors-{mode}.npy").read_bytes())
            digest = h.hexdigest()
            meta = {**provenance, "file_uuid": file_uuid, "documents": len(docs), "modes": sorted(vectors),
                    "sha256": digest}
            (tmp / "shard.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            old = self.root / f".old-{file_uuid}-{uuid.uuid4().hex[:8]}"
            if final.exists():
                final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return digest

    def files(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        return {p.name for p in self.root.iterdir() if not p.name.startswith(".") and (p / "shard.json").is_file()}

    def delete_files(self, file_uuids: Collection[str]) -> int:
        deleted = 0
        for file_uuid in sorted(file_uuids):
            path = self._dir(file_uuid)
            if (path / "shard.json").is_file():
                deleted += int(json.loads((path / "shard.json").read_text(encoding="utf-8"))["documents"])
            shutil.rmtree(path, ignore_errors=True)
        return deleted

    def read(self, file_uuid: str) -> tuple[list[IndexDoc], dict[str, np.ndarray], dict[str, Any]]:
        from harness.index.state import doc_from_record

        path = self._dir(file_uuid)
        if not (path / "shard.json").is_file():
            raise IntegrityError(f"{path}: no shard for {file_uuid}; the reindex did not index it")
        meta = json.loads((path / "shard.json").read_text(encoding="utf-8"))
        with (path / "docs.jsonl").open(encoding="utf-8") as fh:
            docs = [doc_from_record(json.loads(line)) for line in fh]
        vectors = {mode: np.load(path / f"vectors-{mode}.npy") for mode in meta["modes"]}
        for mode, matrix in vectors.items():
            if matrix.shape[0] != len(docs):
                raise IntegrityError(f"{path}: vectors-{mode} has {matrix.shape[0]} rows for {len(docs)} documents")
        return docs, vectors, meta


class OpenSearchSink:
    """The stack index through harness.index.opensearch's bulk writer (the index must exist)."""

    def __init__(self, index: str) -> None:
        from harness.index import opensearch

        self._os = opensearch
        self.index = index
        self.client = opensearch.client_from_env(os.environ)

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        # delete-then-write, as the product's indexer does: a mid-run poll sees the file
        # missing, never half old and half new (the settle check's first condition)
        self.delete_files([file_uuid])
        self._os.bulk_index(self.client, self.index, docs, vectors, dict(provenance["embedding"]))
        h = hashlib.sha256()
        for d in docs:
            h.update((json.dumps(asdict(d), sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
        for mode in sorted(vectors):
            h.update(np.ascontiguousarray(vectors[mode], dtype=np.float32).tobytes())
        return h.hexdigest()

    def files(self, size: int = 65_536) -> set[str]:
        self.client.request("POST", f"/{self.index}/_refresh")
        body = {"size": 0, "aggs": {"files": {"terms": {"field": "file_uuid", "size": size}}}}
        result = self.client.request("POST", f"/{self.index}/_search", body)
        return set(self._os.checked_buckets(result["aggregations"]["files"], size, f"files in {self.index}"))

    def delete_files(self, file_uuids: Collection[str]) -> int:
        if not file_uuids:
            return 0
        body = {"query": {"terms": {"file_uuid": sorted(file_uuids)}}}
        result = self.client.request("POST", f"/{self.index}/_delete_by_query", body,
                                     params={"refresh": True, "conflicts": "proceed"})
        return int(result.get("deleted", 0))


SINKS: Final[dict[str, Callable[[str], DocumentSink]]] = {"embedded": ShardSink, "opensearch": OpenSearchSink}


def open_sink(spec: SinkSpec) -> DocumentSink:
    try:
        factory = SINKS[spec.backend]
    except KeyError as e:
        raise UsageError(f"unknown index backend {spec.backend!r}; expected one of {sorted(SINKS)}") from e
    return factory(spec.location)


# -- the ledger: lock, snapshot and outcomes of one reindex run -----------------------------


def lock_key(target: str) -> str:
    return f"reindex_lock:{target}"


def uuids_key(run_id: str) -> str:
    return f"reindex_uuids:{run_id}"


def state_key(run_id: str) -> str:
    return f"reindex_state:{run_id}"


class Ledger(Protocol):
    """Per-run bookkeeping. Keys are per run, so a second coordinator cannot write into ours."""

    def acquire(self, target: str, run_id: str) -> None:
        """Take the target's lock or raise RefusedError naming the holder."""
        ...

    def holder(self, target: str) -> str | None: ...

    def begin(self, run_id: str, target: str, file_uuids: Collection[str]) -> None:
        """Record the snapshot and the run's metadata."""
        ...

    def snapshot(self, run_id: str) -> frozenset[str] | None:
        """The recorded snapshot, or None when the run's state is gone (expired, cleared)."""
        ...

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None: ...

    def outcomes(self, run_id: str) -> dict[str, dict[str, Any]]: ...

    def release(self, target: str, run_id: str) -> bool:
        """Delete the lock if this run holds it."""
        ...


@dataclass
class MemoryLedger:
    """The in-process ledger of ``--dispatch eager`` (one process: TTLs do not apply)."""

    locks: dict[str, str] = field(default_factory=dict)
    snapshots: dict[str, frozenset[str]] = field(default_factory=dict)
    results: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def acquire(self, target: str, run_id: str) -> None:
        holder = self.locks.setdefault(target, run_id)
        if holder != run_id:
            raise RefusedError(f"another reindex (run {holder}) holds {lock_key(target)}; wait for it to finish")

    def holder(self, target: str) -> str | None:
        return self.locks.get(target)

    def begin(self, run_id: str, target: str, file_uuids: Collection[str]) -> None:
        self.snapshots[run_id] = frozenset(file_uuids)
        self.results[run_id] = {}

    def snapshot(self, run_id: str) -> frozenset[str] | None:
        return self.snapshots.get(run_id)

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None:
        self.results.setdefault(run_id, {})[file_uuid] = json.loads(json.dumps(result))

    def outcomes(self, run_id: str) -> dict[str, dict[str, Any]]:
        return dict(self.results.get(run_id, {}))

    def release(self, target: str, run_id: str) -> bool:
        if self.locks.get(target) == run_id:
            del self.locks[target]
            return True
        return False


# Record one outcome, keep the run's state alive, and refresh the lock only while this run
# holds it (a lock another run took over is never extended or deleted by us).
_RECORD_LUA: Final = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
if redis.call('GET', KEYS[2]) == ARGV[4] then redis.call('EXPIRE', KEYS[2], ARGV[5]) end
return 1
"""
_RELEASE_LUA: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisLedger:
    """The ledger of ``--dispatch celery``: ``reindex_lock:<target>`` (run id, TTL LOCK_TTL_S,
    SET NX), ``reindex_uuids:<run>`` (set of snapshotted file_uuids) and
    ``reindex_state:<run>`` (hash: ``meta`` and one ``file:<uuid>`` outcome per file), both
    with TTL STATE_TTL_S."""

    def __init__(self, client: Any, *, lock_ttl_s: int = LOCK_TTL_S, state_ttl_s: int = STATE_TTL_S) -> None:
        self.client = client
        self.lock_ttl_s = lock_ttl_s
        self.state_ttl_s = state_ttl_s
        self._record = client.register_script(_RECORD_LUA)
        self._release = client.register_script(_RELEASE_LUA)

    @classmethod
    def from_url(cls, url: str, **ttls: int) -> RedisLedger:
        import redis

        return cls(redis.Redis.from_url(url, decode_responses=True), **ttls)

    def acquire(self, target: str, run_id: str) -> None:
        if not self.client.set(lock_key(target), run_id, nx=True, ex=self.lock_ttl_s):
            holder = self.client.get(lock_key(target))
            ttl = self.client.ttl(lock_key(target))
            raise RefusedError(f"another reindex (run {holder}) holds {lock_key(target)} for {ttl} s more; "
                               "wait for it to finish (a dead coordinator's lock expires by itself)")

    def holder(self, target: str) -> str | None:
        value = self.client.get(lock_key(target))
        return None if value is None else str(value)

    def begin(self, run_id: str, target: str, file_uuids: Collection[str]) -> None:
        meta = json.dumps({"target": target, "snapshot": len(file_uuids)}, sort_keys=True)
        with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(uuids_key(run_id), state_key(run_id))
            if file_uuids:
                pipe.sadd(uuids_key(run_id), *sorted(file_uuids))
                pipe.expire(uuids_key(run_id), self.state_ttl_s)
            pipe.hset(state_key(run_id), "meta", meta)
            pipe.expire(state_key(run_id), self.state_ttl_s)
            pipe.execute()

    def snapshot(self, run_id: str) -> frozenset[str] | None:
        meta = self.client.hget(state_key(run_id), "meta")
        if meta is None:
            return None
        members = frozenset(str(u) for u in self.client.smembers(uuids_key(run_id)))
        # an empty snapshot has no set in Redis; a non-empty one whose set expired is gone
        return members if len(members) == json.loads(meta)["snapshot"] else None

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None:
        self._record(keys=[state_key(run_id), lock_key(target)],
                     args=[f"file:{file_uuid}", json.dumps(result, sort_keys=True), self.state_ttl_s, run_id,
                           self.lock_ttl_s])

    def outcomes(self, run_id: str) -> dict[str, dict[str, Any]]:
        raw = self.client.hgetall(state_key(run_id))
        return {k[len("file:"):]: json.loads(v) for k, v in raw.items() if k.startswith("file:")}

    def release(self, target: str, run_id: str) -> bool:
        return bool(self._release(keys=[lock_key(target)], args=[run_id]))


# -- requests, runs, jobs -----------------------------------------------------------------


@dataclass(frozen=True)
class ReindexRequest:
    """One reindex: which store, which index, how to chunk and embed, which files."""

    store: StoreSpec
    sink: SinkSpec
    embedding: Mapping[str, str]            # embedding-text mode -> model spec
    max_words: int = DEFAULT_MAX_WORDS
    digests: bool = True
    # the files the index holds (None: every file in the store); the sweep deletes the rest
    files: tuple[str, ...] | None = None
    queues: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_QUEUES))

    def policy(self) -> ChunkingPolicy:
        return ChunkingPolicy(max_words=self.max_words)

    def to_dict(self) -> dict[str, Any]:
        return {"store": asdict(self.store), "sink": asdict(self.sink), "embedding": dict(self.embedding),
                "max_words": self.max_words, "digests": self.digests,
                "files": None if self.files is None else list(self.files), "queues": dict(self.queues)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReindexRequest:
        files = data.get("files")
        return cls(store=StoreSpec(**data["store"]), sink=SinkSpec(**data["sink"]),
                   embedding=dict(data["embedding"]), max_words=int(data["max_words"]), digests=bool(data["digests"]),
                   files=None if files is None else tuple(files), queues=dict(data["queues"]))


@dataclass(frozen=True)
class ReindexRun:
    """A started run: its id, its request and the snapshot (media_file rows, file_uuid order)."""

    run_id: str
    request: ReindexRequest
    headers: tuple[Mapping[str, Any], ...]

    @property
    def target(self) -> str:
        return self.request.sink.target

    @property
    def snapshot(self) -> frozenset[str]:
        return frozenset(h["file_uuid"] for h in self.headers)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "request": self.request.to_dict(), "headers": [dict(h) for h in self.headers]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReindexRun:
        return cls(run_id=data["run_id"], request=ReindexRequest.from_dict(data["request"]),
                   headers=tuple(data["headers"]))


@dataclass(frozen=True)
class IndexFileJob:
    run_id: str
    request: ReindexRequest
    header: Mapping[str, Any]

    @property
    def file_uuid(self) -> str:
        return str(self.header["file_uuid"])

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "request": self.request.to_dict(), "header": dict(self.header)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexFileJob:
        return cls(run_id=data["run_id"], request=ReindexRequest.from_dict(data["request"]), header=data["header"])


def file_jobs(run: ReindexRun) -> list[IndexFileJob]:
    return [IndexFileJob(run.run_id, run.request, header) for header in run.headers]


# -- the task functions -------------------------------------------------------------------


@lru_cache(maxsize=4)
def embedder_for(spec: str) -> Embedder:
    """One loaded model per spec per process (a worker loads it at its first file)."""
    from harness.index.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec)


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


def index_file(job: IndexFileJob, ledger: Ledger, embedders: Mapping[str, Embedder] | None = None) -> dict[str, Any]:
    """Chunk, embed and write one file; record and return its outcome (never raises for the file)."""
    request = job.request
    policy = request.policy()
    result: dict[str, Any] = {"file_uuid": job.file_uuid, "run_id": job.run_id, "splitter": SPLITTER_IDENTITY,
                              "chunking": policy.to_dict(), "worker": worker_identity()}
    try:
        with request.store.open(readonly=True) as store:
            segments = store.segments(job.file_uuid)
        meeting = meeting_from_segments(job.header, segments)
        docs = meeting_documents(meeting, policy, digests=request.digests)
        resolved = {mode: (embedders[mode] if embedders is not None else embedder_for(spec))
                    for mode, spec in sorted(request.embedding.items())}
        vectors = {mode: _encode(e, [embedding_text(d, mode) for d in docs])  # type: ignore[arg-type]
                   for mode, e in resolved.items()}
        identities = {mode: e.identity for mode, e in resolved.items()}
        provenance = {"splitter": SPLITTER_IDENTITY, "chunking": policy.to_dict(), "embedding": identities,
                      "dimension": {mode: e.dimension for mode, e in resolved.items()}}
        digest = open_sink(request.sink).write_file(job.file_uuid, docs, vectors, provenance)
        result.update(status="indexed", segments=len(segments), documents=len(docs),
                      chunk_documents=sum(1 for d in docs if d.doc_type == "chunk"),
                      digest_documents=sum(1 for d in docs if d.doc_type == "digest"),
                      embedding=identities, sha256=digest)
    except Exception as e:  # recorded as this file's outcome: the tally must stay complete
        result.update(status="failed", error=f"{type(e).__name__}: {e}")
    ledger.record(job.run_id, request.sink.target, job.file_uuid, result)
    return result


def start_reindex(request: ReindexRequest, ledger: Ledger, *, run_id: str | None = None) -> ReindexRun:
    """Take the target's lock, snapshot the file list from the store, record the snapshot."""
    run_id = run_id or uuid.uuid4().hex
    ledger.acquire(request.sink.target, run_id)
    try:
        with request.store.open(readonly=True) as store:
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


# -- the fail-closed orphan sweep -----------------------------------------------------------


@dataclass(frozen=True)
class SweepReport:
    ran: bool
    reason: str
    unaccounted: int = 0
    orphans: tuple[str, ...] = ()
    documents_deleted: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "orphans": list(self.orphans)}


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


@dataclass(frozen=True)
class ReindexReport:
    run_id: str
    target: str
    snapshot: tuple[str, ...]
    results: tuple[Mapping[str, Any], ...]   # the recorded outcomes, file_uuid order
    sweep: SweepReport

    def _status(self, status: str) -> list[str]:
        return [r["file_uuid"] for r in self.results if r.get("status") == status]

    @property
    def indexed(self) -> list[str]:
        return self._status("indexed")

    @property
    def failed(self) -> list[str]:
        return self._status("failed")

    @property
    def unaccounted(self) -> list[str]:
        seen = {r["file_uuid"] for r in self.results}
        return [u for u in self.snapshot if u not in seen]

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "target": self.target, "snapshot": list(self.snapshot),
                "results": [dict(r) for r in self.results], "sweep": self.sweep.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReindexReport:
        sweep = dict(data["sweep"])
        sweep["orphans"] = tuple(sweep["orphans"])
        return cls(run_id=data["run_id"], target=data["target"], snapshot=tuple(data["snapshot"]),
                   results=tuple(data["results"]), sweep=SweepReport(**sweep))


def finish_reindex(run: ReindexRun, ledger: Ledger) -> ReindexReport:
    """Tally from the ledger (the source of truth), sweep or decline, release the lock."""
    sweep = orphan_sweep(run, ledger, open_sink(run.request.sink))
    outcomes = ledger.outcomes(run.run_id)
    ledger.release(run.target, run.run_id)
    return ReindexReport(run_id=run.run_id, target=run.target, snapshot=tuple(sorted(run.snapshot)),
                         results=tuple(outcomes[u] for u in sorted(outcomes)), sweep=sweep)


def run_eager(request: ReindexRequest, embedders: Mapping[str, Embedder] | None = None, *,
              ledger: Ledger | None = None, progress: Callable[[str, int, int], None] | None = None) -> ReindexReport:
    """The coordinator in-process: the same functions the workers run, one file after another."""
    ledger = ledger if ledger is not None else MemoryLedger()
    run = start_reindex(request, ledger)
    jobs = file_jobs(run)
    for i, job in enumerate(jobs, start=1):
        index_file(job, ledger, embedders)
        if progress:
            progress("indexing (eager)", i, len(jobs))
    return finish_reindex(run, ledger)


def run_celery(request: ReindexRequest, embedders: Mapping[str, Embedder] | None = None, *,
               ledger: Ledger | None = None, progress: Callable[[str, int, int], None] | None = None) -> ReindexReport:
    from harness.index.tasks import dispatch_reindex

    return dispatch_reindex(request, progress=progress)


DISPATCHERS: Final[dict[str, Callable[..., ReindexReport]]] = {"eager": run_eager, "celery": run_celery}


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


# -- assembling the embedded index from shards ------------------------------------------------


class _ReplayEmbedder:
    """Hands build_index the vectors the tasks computed, in document order, checking each batch's texts."""

    def __init__(self, identity: str, texts: list[str], matrix: np.ndarray) -> None:
        self.identity = identity
        self.dimension = int(matrix.shape[1])
        self._texts = texts
        self._matrix = matrix
        self._cursor = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        lo, hi = self._cursor, self._cursor + len(texts)
        if list(texts) != self._texts[lo:hi]:
            raise IntegrityError(f"assembly asked for texts {lo}..{hi} out of document order")
        self._cursor = hi
        return self._matrix[lo:hi]


def assemble_embedded_index(shards: ShardSink, out_dir: Path, file_uuids: Sequence[str]) -> dict[str, Any]:
    """Build the embedded index from per-file shards, files in the given order, documents as written."""
    from harness.index.embedded import build_index

    docs: list[IndexDoc] = []
    parts: dict[str, list[np.ndarray]] = {}
    identities: dict[str, set[str]] = {}
    for file_uuid in file_uuids:
        file_docs, vectors, meta = shards.read(file_uuid)
        docs.extend(file_docs)
        for mode, matrix in vectors.items():
            parts.setdefault(mode, []).append(matrix)
            identities.setdefault(mode, set()).add(meta["embedding"][mode])
    embedders: dict[str, Embedder] = {}
    for mode, blocks in sorted(parts.items()):
        if len(identities[mode]) != 1:
            raise RefusedError(f"shards of embedding_text {mode} come from {sorted(identities[mode])}; "
                               "a mixed vector space is refused")
        texts = [embedding_text(d, mode) for d in docs]  # type: ignore[arg-type]
        embedders[mode] = _ReplayEmbedder(identities[mode].pop(), texts, np.concatenate(blocks, axis=0))
    return build_index(out_dir, docs, embedders)  # type: ignore[arg-type]


# -- the state build's ingest path ----------------------------------------------------------------


def state_store(state_dir: Path, engine: StoreEngine, meetings: Sequence[Meeting]) -> StoreSpec:
    """The store the ingest reads: the state's own SQLite file, or the stack's Postgres.

    The state's store.sqlite is already injected. For Postgres the meetings are injected
    into RAGSWEEP_PG_SCHEMA (default: the DSN's search path) and read back: the skip
    path keeps a present file's old segments, and an index cut from them would not be
    this corpus's, so any difference is refused.
    """
    if engine == "sqlite":
        return StoreSpec("sqlite", str((state_dir / "store.sqlite").resolve()))
    spec = StoreSpec("postgres", PG_DSN_ENV, os.environ.get(PG_SCHEMA_ENV) or None)
    with spec.open(readonly=False) as store:
        store.inject(meetings)
        stored = {m.file_uuid: m for m in store.meetings()}
    differ = sorted(m.file_uuid for m in meetings if stored.get(m.file_uuid) != m)
    if differ:
        raise IntegrityError(f"the Postgres store holds different content for {len(differ)} of {len(meetings)} "
                             f"files (first: {differ[0]}): injection's skip path refreshes dates only. Use a "
                             f"fresh {PG_SCHEMA_ENV} or reinject those files with force")
    return spec


def build_state_index(state_dir: Path, meetings: Sequence[Meeting], embedders: Mapping[EmbeddingTextMode, Embedder], *,
                      policy: ChunkingPolicy, dispatch: Dispatch, store_engine: StoreEngine,
                      progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Index a state through the tasks: snapshot, index_file per file, sweep, assemble shards.

    Writes ``STATE/index`` and ``STATE/ingest.json`` (how it was indexed: dispatch, store,
    run, per-file outcomes; provenance outside the claim, like runinfo.json).
    """
    by_mode: dict[str, Embedder] = {str(mode): e for mode, e in embedders.items()}
    if dispatch not in DISPATCHERS:
        raise UsageError(f"unknown dispatch {dispatch!r}; expected one of {sorted(DISPATCHERS)}")
    specs = {}
    for mode, embedder in sorted(by_mode.items()):
        spec = getattr(embedder, "spec", None)
        if spec is None and dispatch == "celery":
            raise UsageError(f"embedding_text {mode}: a worker can only load a model from a spec; "
                             "give --embedding-model a package or folder")
        specs[mode] = spec or f"object:{embedder.identity}"
    shard_dir = (state_dir / "shards").resolve()
    request = ReindexRequest(store=state_store(state_dir, store_engine, meetings),
                             sink=SinkSpec("embedded", str(shard_dir)), embedding=specs,
                             max_words=policy.max_words, files=tuple(sorted(m.file_uuid for m in meetings)))
    if dispatch == "eager":
        report = run_eager(request, by_mode, progress=progress)
    else:
        report = DISPATCHERS[dispatch](request, progress=progress)
    check_report(report, policy=policy, embedding={m: e.identity for m, e in by_mode.items()})
    meta = assemble_embedded_index(ShardSink(shard_dir), state_dir / "index", report.snapshot)
    shutil.rmtree(shard_dir)
    record = {
        "dispatch": dispatch, "store": request.store.describe(), "run_id": report.run_id,
        "files": len(report.snapshot), "indexed": len(report.indexed), "failed": len(report.failed),
        "sweep": report.sweep.to_dict(), "splitter": SPLITTER_IDENTITY, "code_sha256": CODE_DIGEST,
        "queues": dict(request.queues) if dispatch == "celery" else None,
        "workers": [json.loads(w) for w in sorted({json.dumps(r["worker"], sort_keys=True)
                                                   for r in report.results})],
        "per_file": [{k: r.get(k) for k in ("file_uuid", "segments", "documents", "chunk_documents",
                                            "digest_documents", "sha256")} for r in report.results],
    }
    (state_dir / "ingest.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return meta


def with_queues(request: ReindexRequest, queues: Mapping[str, str]) -> ReindexRequest:
    """The same request routed to other queue names (tests run private workers)."""
    return replace(request, queues={**DEFAULT_QUEUES, **queues})
