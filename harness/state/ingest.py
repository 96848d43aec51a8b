"""The state build's ingest path (``state build --dispatch/--store``, docs/ingest.md).

Snapshot, ``index_file`` per file, the fail-closed sweep, then the embedded index
assembled from the shards, eagerly in-process or through the Celery workers. The Celery
app (:mod:`harness.index.ingest.tasks`) is imported only when ``--dispatch celery`` runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from harness.errors import IntegrityError, UsageError
from harness.index.chunking import ChunkingPolicy
from harness.index.documents import EmbeddingTextMode, embedding_text, meeting_documents
from harness.index.embed import Embedder
from harness.index.ingest.assemble import assemble_embedded_index
from harness.index.ingest.coordinator import CODE_DIGEST, cached, check_report, run_eager
from harness.index.ingest.ledger import Ledger
from harness.index.ingest.messages import (
    NO_ENDPOINTS,
    PG_DSN_ENV,
    PG_SCHEMA_ENV,
    Endpoints,
    ReindexReport,
    ReindexRequest,
    SinkSpec,
    StoreEngine,
    StoreSpec,
)
from harness.index.ingest.sinks import ShardSink
from harness.index.sentences import SPLITTER_IDENTITY
from harness.model import Meeting

Dispatch = Literal["eager", "celery"]
DISPATCH_MODES: tuple[Dispatch, ...] = ("eager", "celery")


def run_celery(request: ReindexRequest, embedders: Mapping[str, Embedder] | None = None, *,
               ledger: Ledger | None = None, progress: Callable[[str, int, int], None] | None = None) -> ReindexReport:
    from harness.index.ingest.tasks import dispatch_reindex  # celery only when dispatched to it

    return dispatch_reindex(request, progress=progress)


DISPATCHERS: Final[dict[str, Callable[..., ReindexReport]]] = {"eager": run_eager, "celery": run_celery}


def state_store(state_dir: Path, engine: StoreEngine, meetings: Sequence[Meeting], *,
                schema: str | None = None, endpoints: Endpoints = NO_ENDPOINTS) -> StoreSpec:
    """The store the ingest reads: the state's own SQLite file, or the stack's Postgres.

    The state's store.sqlite is already injected. For Postgres the meetings are injected
    into ``schema`` (RAGSWEEP_PG_SCHEMA at the CLI; default: the DSN's search path) and read back: the skip
    path keeps a present file's old segments, and an index cut from them would not be
    this corpus's, so any difference is refused.
    """
    if engine == "sqlite":
        return StoreSpec("sqlite", str((state_dir / "store.sqlite").resolve()))
    spec = StoreSpec("postgres", PG_DSN_ENV, schema)
    with spec.open(readonly=False, endpoints=endpoints) as store:
        store.inject(meetings)
        stored = {m.file_uuid: m for m in store.meetings()}
    differ = sorted(m.file_uuid for m in meetings if stored.get(m.file_uuid) != m)
    if differ:
        raise IntegrityError(f"the Postgres store holds different content for {len(differ)} of {len(meetings)} "
                             f"files (first: {differ[0]}): injection's skip path refreshes dates only. Use a "
                             f"fresh {PG_SCHEMA_ENV} or reinject those files with force")
    return spec


def warm_cache(meetings: Sequence[Meeting], embedders: Mapping[str, Embedder], cache: str, *,
               policy: ChunkingPolicy, progress: Callable[[str, int, int], None] | None = None,
               team: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    """Encode every embedding text of ``meetings`` the cache lacks, here, in one batch-independent pass
    per model (what the in-process builder does), so the tasks find them all. Returns the texts found
    cached and the texts encoded."""
    texts: dict[int, list[str]] = {}
    for mode, embedder in sorted(embedders.items()):
        if getattr(embedder, "batching", True) is None:
            raise UsageError(f"embedding_text {mode}: the embedding cache holds batch-independent vectors only; "
                             "give the host a batch-independent embedder (harness.index.encoder)")
        for meeting in meetings:
            texts.setdefault(id(embedder), []).extend(
                embedding_text(d, mode) for d in meeting_documents(meeting, policy))  # type: ignore[arg-type]
    hits = encoded = from_team = 0
    vectors = []
    for key, embedder in {id(e): e for e in embedders.values()}.items():
        wrapper = cached(embedder, cache, team)
        before = (wrapper.hits, wrapper.encoded, wrapper.from_shared)
        wrapper.prepare(texts[key], (lambda done, total: progress("embedding cache warm-up", done, total))
                        if progress else None)
        hits += wrapper.hits - before[0]
        encoded += wrapper.encoded - before[1]
        from_team += wrapper.from_shared - before[2]
        vectors.append(wrapper.provenance())
    return {"hits": hits, "encoded": encoded, "from_team": from_team, "vectors": vectors}


def task_cache_counts(results: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The tasks' embedding-cache counts summed over files: texts read from the cache, texts encoded."""
    counts = [r.get("embedding_cache") or {} for r in results]
    return {"hits": sum(int(c.get("hits", 0)) for c in counts),
            "encoded": sum(int(c.get("encoded", 0)) for c in counts)}


def build_state_index(state_dir: Path, meetings: Sequence[Meeting], embedders: Mapping[EmbeddingTextMode, Embedder], *,
                      policy: ChunkingPolicy, dispatch: Dispatch, store_engine: StoreEngine,
                      pg_schema: str | None = None, endpoints: Endpoints = NO_ENDPOINTS, shards: str | None = None,
                      progress: Callable[[str, int, int], None] | None = None,
                      embedding_cache: Path | None = None,
                      team: tuple[str | None, str | None] = (None, None)) -> dict[str, Any]:
    """Index a state through the tasks: snapshot, index_file per file, sweep, assemble shards.

    With ``embedding_cache`` (a folder every task's process sees at the same path: on Kubernetes a
    volume the injector and the workers mount), this process first encodes, in one batch-independent
    pass, every text the cache lacks (:func:`warm_cache`); the tasks then read their vectors from it,
    so a warm cache encodes nothing anywhere, and the vectors are the in-process builder's.

    Writes ``STATE/index`` and ``STATE/ingest.json`` (how it was indexed: dispatch, store,
    run, per-file outcomes; provenance outside the claim, like runinfo.json). The workers leave
    their shards at ``shards`` (default ``STATE/shards``; ``s3://bucket/prefix`` when they run in
    other pods), emptied before the run and after assembly.
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
    location = shards if shards and shards.startswith("s3://") else str(Path(shards or state_dir / "shards").resolve())
    sink = ShardSink(location, endpoints.s3_endpoint)
    sink.clear()  # shards a failed earlier run left behind are never assembled into this one
    cache = str(Path(embedding_cache).resolve()) if embedding_cache is not None else None
    warmed = warm_cache(meetings, by_mode, cache, policy=policy, progress=progress, team=team) if cache else None
    if warmed is not None and warmed["vectors"] and warmed["vectors"][0]["team_cache_unreachable"]:
        team = (None, None)  # the warm-up fell back to this machine's own cache: so do the tasks
    request = ReindexRequest(store=state_store(state_dir, store_engine, meetings, schema=pg_schema,
                                               endpoints=endpoints),
                             sink=SinkSpec("embedded", location), embedding=specs,
                             max_words=policy.max_words, files=tuple(sorted(m.file_uuid for m in meetings)),
                             embedding_cache=cache, team_cache=team[0], team_cache_endpoint=team[1])
    if dispatch == "eager":
        report = run_eager(request, by_mode, progress=progress, endpoints=endpoints)
    else:
        report = DISPATCHERS[dispatch](request, progress=progress)
    check_report(report, policy=policy, embedding={m: e.identity for m, e in by_mode.items()})
    meta = assemble_embedded_index(sink, state_dir / "index", report.snapshot)
    sink.clear()
    record = {
        "dispatch": dispatch, "store": request.store.describe(), "run_id": report.run_id,
        "files": len(report.snapshot), "indexed": len(report.indexed), "failed": len(report.failed),
        "sweep": report.sweep.to_dict(), "splitter": SPLITTER_IDENTITY, "code_sha256": CODE_DIGEST,
        "queues": dict(request.queues) if dispatch == "celery" else None,
        "workers": [json.loads(w) for w in sorted({json.dumps(r["worker"], sort_keys=True)
                                                   for r in report.results})],
        "per_file": [{k: r.get(k) for k in ("file_uuid", "segments", "documents", "chunk_documents",
                                            "digest_documents", "sha256")} for r in report.results],
        "embedding_cache": None if cache is None else {"root": cache,
                                                       "warm_up": {k: warmed[k] for k in ("hits", "encoded")}
                                                       if warmed else None,
                                                       "vectors": warmed["vectors"] if warmed else None,
                                                       "tasks": task_cache_counts(report.results)},
    }
    if cache is not None and warmed is not None:
        tasks = task_cache_counts(report.results)
        print(f"  embedding cache {cache}: warm-up {warmed['hits']} texts cached, {warmed['from_team']} from the "
              f"team's, {warmed['encoded']} encoded; "
              f"the tasks {tasks['hits']} read from it, {tasks['encoded']} encoded", file=sys.stderr)
    (state_dir / "ingest.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return meta
