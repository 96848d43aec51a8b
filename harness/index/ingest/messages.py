"""What travels in an ingest task message, and what comes back: plain dataclasses with JSON round trips.

A store or sink is named, never opened, in a message: for Postgres the spec names the
environment variable holding the DSN, so no password travels in a task message. The
addresses themselves (:class:`Endpoints`) are the opening process's, handed in by its entrypoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import UsageError
from harness.index.chunking import DEFAULT_MAX_WORDS, ChunkingPolicy
from harness.store import PostgresStore, SqliteStore, SqlStore

StoreEngine = Literal["sqlite", "postgres"]
STORE_ENGINES: tuple[StoreEngine, ...] = ("sqlite", "postgres")
PG_DSN_ENV: Final = "RAGSWEEP_PG_DSN"
PG_SCHEMA_ENV: Final = "RAGSWEEP_PG_SCHEMA"
S3_ENDPOINT_ENV: Final = "RAGSWEEP_S3_ENDPOINT"  # an embedded sink at s3://... (a Celery worker reads it)
DEFAULT_QUEUES: Final[Mapping[str, str]] = {"embedding": "embedding", "cpu": "cpu"}


@dataclass(frozen=True)
class Endpoints:
    """Where this process reaches the stack; never part of a message (a DSN may hold a password).

    The entrypoint fills it: the CLI and jobs/ from their Settings, a Celery worker from the
    environment it was started with (harness.index.ingest.tasks).
    """

    pg_dsn: str | None = None
    opensearch_url: str | None = None
    s3_endpoint: str | None = None  # for an embedded sink at s3://... (credentials: boto3's own chain)


NO_ENDPOINTS: Final = Endpoints()


@dataclass(frozen=True)
class StoreSpec:
    """How a worker opens the relational store: a SQLite file, or a Postgres schema.

    For Postgres, ``location`` names the environment variable holding the DSN, so no
    password travels in a task message; the DSN itself comes from the opener's ``endpoints``.
    """

    engine: StoreEngine
    location: str
    schema: str | None = None

    def open(self, *, readonly: bool, endpoints: Endpoints = NO_ENDPOINTS) -> SqlStore:
        if self.engine == "sqlite":
            return SqliteStore.open(self.location, readonly=readonly)
        dsn = endpoints.pg_dsn
        if not dsn:
            raise UsageError(f"the Postgres store needs {self.location} (make stack-up; eval \"$(stack/env.sh)\")")
        return PostgresStore.open(dsn, schema=self.schema, readonly=readonly)

    def describe(self) -> dict[str, Any]:
        if self.engine == "sqlite":
            return {"engine": "sqlite", "file": Path(self.location).name}
        return {"engine": "postgres", "dsn_from": self.location, "schema": self.schema}


@dataclass(frozen=True)
class SinkSpec:
    """Where index_file writes: ``embedded`` (shards in a folder or at ``s3://bucket/prefix``) or
    ``opensearch`` (an index name)."""

    backend: str
    location: str

    @property
    def target(self) -> str:
        """The name the reindex lock is taken on: one coordinator per index."""
        return f"{self.backend}:{self.location}"



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
    # the embedding cache (harness.index.embedcache) as every task's process sees it (a folder the
    # workers share: a volume in their pods). Set, the tasks encode batch-independently and only the
    # texts the cache lacks; None, sentence-transformers' encode(), uncached.
    embedding_cache: str | None = None
    # the team's tier behind it (harness.index.teamcache): its spec and endpoint, as every task reaches it
    team_cache: str | None = None
    team_cache_endpoint: str | None = None

    def policy(self) -> ChunkingPolicy:
        return ChunkingPolicy(max_words=self.max_words)

    def to_dict(self) -> dict[str, Any]:
        return {"store": asdict(self.store), "sink": asdict(self.sink), "embedding": dict(self.embedding),
                "max_words": self.max_words, "digests": self.digests,
                "files": None if self.files is None else list(self.files), "queues": dict(self.queues),
                "embedding_cache": self.embedding_cache, "team_cache": self.team_cache,
                "team_cache_endpoint": self.team_cache_endpoint}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReindexRequest:
        files = data.get("files")
        return cls(store=StoreSpec(**data["store"]), sink=SinkSpec(**data["sink"]),
                   embedding=dict(data["embedding"]), max_words=int(data["max_words"]), digests=bool(data["digests"]),
                   files=None if files is None else tuple(files), queues=dict(data["queues"]),
                   embedding_cache=data.get("embedding_cache"), team_cache=data.get("team_cache"),
                   team_cache_endpoint=data.get("team_cache_endpoint"))


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



@dataclass(frozen=True)
class SweepReport:
    ran: bool
    reason: str
    unaccounted: int = 0
    orphans: tuple[str, ...] = ()
    documents_deleted: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "orphans": list(self.orphans)}



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



def with_queues(request: ReindexRequest, queues: Mapping[str, str]) -> ReindexRequest:
    """The same request routed to other queue names (tests run private workers)."""
    return replace(request, queues={**DEFAULT_QUEUES, **queues})
