"""``ragsweep state build``: inject the corpora into the store and build the index, once per state.

Without ``--dispatch`` (and with the SQLite store) the index is built in-process; with it,
through the ingest tasks (:mod:`harness.state.ingest`). ``--backend stack`` also indexes
the same documents and vectors into OpenSearch (:mod:`harness.state.stack`).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.corpora.checks import check_corpora
from harness.corpora.integrity import checksum_digest
from harness.errors import UsageError
from harness.index.chunking import ChunkingPolicy
from harness.index.documents import EmbeddingTextMode, IndexDoc, meeting_documents
from harness.index.embed import Embedder
from harness.index.embedcache import CachingEmbedder
from harness.index.embedded import build_index
from harness.index.encoder import numerical_path
from harness.index.ingest.messages import Endpoints, StoreEngine
from harness.index.teamcache import TeamCachingEmbedder, caching
from harness.model import Corpus
from harness.state import BUILD_SCHEMA, STACK_TIMINGS, STATE_SCHEMA
from harness.state.contents import contents_block
from harness.state.ingest import Dispatch, build_state_index
from harness.state.lock import build_lock, partial_folder
from harness.state.stack import index_state
from harness.store.sqlite import SqliteStore
from harness.synthetic.folders import check_destination, swap_in

_LOGGED_TENTHS: dict[str, int] = {}


def _progress(label: str, done: int, total: int) -> None:
    """A redrawn bar on a terminal; in a log (a pod's, CI's, a file) one line per tenth done, so a
    long stage shows it is moving without filling the log."""
    width = 30
    filled = width * done // max(total, 1)
    line = f"  {label:<22} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
    if sys.stderr.isatty():
        print(line, end="\n" if done == total else "\r", file=sys.stderr, flush=True)
        return
    tenth = 10 * done // max(total, 1)
    if done == total:
        _LOGGED_TENTHS.pop(label, None)  # the next build's stage of this name starts again
        print(line, file=sys.stderr, flush=True)
    elif tenth > _LOGGED_TENTHS.get(label, 0):
        _LOGGED_TENTHS[label] = tenth
        print(line, file=sys.stderr, flush=True)


def _cached(embedders: dict[EmbeddingTextMode, Embedder], root: Path | None,
            team: tuple[str | None, str | None]) -> dict[EmbeddingTextMode, Embedder]:
    """Each embedder behind the cache at ``root`` and the team's tier (one wrapper per model object, shared by
    its modes)."""
    if root is None:
        return embedders
    wrapped: dict[int, Embedder] = {}
    for embedder in embedders.values():
        if id(embedder) not in wrapped:
            wrapped[id(embedder)] = caching(embedder, root, team)
    return {mode: wrapped[id(e)] for mode, e in embedders.items()}


def corpus_summary(corpus: Corpus) -> dict[str, Any]:
    return {"name": corpus.name, "version": corpus.version, "tier": corpus.tier, "files": len(corpus.meetings),
            "queries": len(corpus.queries), "artefacts_sha256": checksum_digest(corpus.checksums),
            "seed": corpus.seed}


def check_sources(corpora: Sequence[Corpus], folders: Mapping[str, Path]) -> None:
    """What ``state build`` checks of the corpora it read from ``folders`` (name -> folder), before it loads
    a model: the id and gold rules of harness.corpora.checks (exit 4, naming the folder), then, for the
    synthetic tier, its own validator's ten checks, every gold set re-derived from the text (exit 7): a
    corpus whose files were edited and their sha256 re-recorded in corpus.json reads, but does not pass."""
    check_corpora(corpora, {name: str(folder) for name, folder in folders.items()})
    from harness.synthetic.formats import CORPUS_NAME
    from harness.synthetic.validate import validate_or_raise

    for corpus in corpora:
        if corpus.name == CORPUS_NAME and corpus.name in folders:
            validate_or_raise(Path(folders[corpus.name]))


def build_state(
    out: Path,
    corpora: Sequence[Corpus],
    embedders: dict[EmbeddingTextMode, Embedder],
    *,
    policy: ChunkingPolicy | None = None,
    force: bool = False,
    dispatch: Dispatch | None = None,
    store_engine: StoreEngine = "sqlite",
    backend: str = "embedded",
    stack_analysis: str = "mirror",
    opensearch_url: str | None = None,
    pg_schema: str | None = None,
    pg_dsn: str | None = None,
    shards: str | None = None,
    s3_endpoint: str | None = None,
    embedding_cache: Path | None = None,
    team_cache: tuple[str | None, str | None] = (None, None),
) -> dict[str, Any]:
    """Build a state. Without ``dispatch`` (and with the SQLite store) the index is built
    in-process exactly as it always was; with it, it goes through the ingest tasks
    (harness.state.ingest: eager in-process, or celery workers), which also writes
    ``ingest.json``. ``store_engine="postgres"`` reads segments from the stack's Postgres and
    implies ``dispatch="eager"`` when none is given, and injects into ``pg_schema`` (default: the
    DSN's search path) at ``pg_dsn``. ``opensearch_url`` is where ``backend="stack"`` indexes.
    ``shards`` is where the ingest tasks leave per-file shards for assembly (default: a folder in
    the state; ``s3://bucket/prefix`` at ``s3_endpoint`` when the workers run elsewhere).
    ``embedding_cache`` is the embedding cache's root (harness.index.embedcache): the in-process
    builder encodes only texts it does not hold; through the ingest tasks this process warms it and
    the tasks read from it (harness.state.ingest; it must be the same folder where they run).
    ``team_cache`` (spec, endpoint) is the team's tier under it (harness.index.teamcache): the vectors it
    holds are used, the ones encoded here published; build.json says where the vectors came from.
    """
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise UsageError(f"corpus given twice: {', '.join(names)}")
    check_corpora(corpora)  # what is indexed: ids and gold (the command checked them already, naming folders)
    check_destination(out, force=force, marker="state.json", kind="state")  # writable, before the lock beside it
    with build_lock(out):  # one build per --out; dead builds' temporary folders removed (harness.state.lock)
        return _build_locked(out, corpora, embedders, policy=policy or ChunkingPolicy(), force=force,
                             dispatch=dispatch, store_engine=store_engine, backend=backend,
                             stack_analysis=stack_analysis, opensearch_url=opensearch_url, pg_schema=pg_schema,
                             pg_dsn=pg_dsn, shards=shards, s3_endpoint=s3_endpoint, embedding_cache=embedding_cache,
                             team_cache=team_cache)


def _build_locked(out: Path, corpora: Sequence[Corpus], embedders: dict[EmbeddingTextMode, Embedder], *,
                  policy: ChunkingPolicy, force: bool, dispatch: Dispatch | None, store_engine: StoreEngine,
                  backend: str, stack_analysis: str, opensearch_url: str | None, pg_schema: str | None,
                  pg_dsn: str | None, shards: str | None, s3_endpoint: str | None,
                  embedding_cache: Path | None, team_cache: tuple[str | None, str | None]) -> dict[str, Any]:
    """build_state's work, under --out's build lock, in a temporary folder of its own."""
    check_destination(out, force=force, marker="state.json", kind="state")
    tmp = partial_folder(out)
    (tmp / "corpora").mkdir(parents=True)
    try:
        for corpus in corpora:
            (tmp / "corpora" / f"{corpus.name}.json").write_text(corpus.model_dump_json() + "\n", encoding="utf-8")
        meetings = sorted((m for c in corpora for m in c.meetings), key=lambda m: m.file_uuid)
        store = SqliteStore.open(tmp / "store.sqlite")
        try:
            store.inject(meetings)
        finally:
            store.close()
        if dispatch is None and store_engine == "sqlite":
            docs: list[IndexDoc] = []
            for i, meeting in enumerate(meetings, start=1):
                docs.extend(meeting_documents(meeting, policy))
                if i % 50 == 0 or i == len(meetings):
                    _progress("chunking", i, len(meetings))
            cached = _cached(embedders, embedding_cache, team_cache)
            meta = build_index(tmp / "index", docs, cached, progress=_progress)
            vectors = []
            for embedder in {id(e): e for e in cached.values() if isinstance(e, CachingEmbedder)}.values():
                team = f", {embedder.from_shared} from the team's" if isinstance(embedder, TeamCachingEmbedder) else ""
                print(f"  embedding cache {embedder.folder}: {embedder.hits} texts cached{team}, "
                      f"{embedder.encoded} encoded", file=sys.stderr)
                vectors.append(embedder.provenance())
        else:
            # -- through ingest (--dispatch / --store): harness/state/ingest.py ------------------
            meta = build_state_index(tmp, meetings, embedders, policy=policy, dispatch=dispatch or "eager",
                                     store_engine=store_engine, pg_schema=pg_schema, shards=shards,
                                     endpoints=Endpoints(pg_dsn=pg_dsn, opensearch_url=opensearch_url,
                                                         s3_endpoint=s3_endpoint),
                                     progress=_progress, embedding_cache=embedding_cache, team=team_cache)
            record = json.loads((tmp / "ingest.json").read_text(encoding="utf-8")).get("embedding_cache") or {}
            vectors = record.get("vectors") or []
        state = {
            "schema": STATE_SCHEMA,
            "built_with": f"ragsweep {__version__}",
            "corpora": [corpus_summary(c) for c in sorted(corpora, key=lambda c: c.name)],
            "chunking": policy.to_dict(),
            "index": {k: meta[k] for k in ("_meta", "documents", "chunk_documents", "digest_documents", "files",
                                           "embedding", "backend")},
        }
        # -- --backend stack: the same documents and vectors into OpenSearch too (docs/opensearch.md) --
        # where the vectors came from (the team's tier, this machine's cache, encoded here, and by which
        # numerical path): why two states' identities agree or differ; provenance, never part of the identity
        build: dict[str, Any] = {"schema": BUILD_SCHEMA, "encoder_numerics": numerical_path(), "vectors": vectors}
        if backend == "stack":
            state["backend"] = "stack"
            block = index_state(tmp / "index", state, analysis=stack_analysis,  # type: ignore[arg-type]
                                url=opensearch_url)
            # when it was dispatched and how long it took to settle: not what the state holds
            build["stack"] = {k: block.pop(k) for k in STACK_TIMINGS if k in block}
            state["stack"] = block
        elif backend != "embedded":
            raise UsageError(f"--backend {backend!r}: expected embedded or stack")
        state["contents"] = contents_block(tmp, state)
        (tmp / "build.json").write_text(json.dumps(build, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (tmp / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        check_destination(out, force=force, marker="state.json", kind="state")  # it may have changed meanwhile
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return state
