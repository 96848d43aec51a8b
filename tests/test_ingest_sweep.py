"""The reindex ledger and the orphan sweep that fails closed.

Methodology, "A reindex could delete most of the index": with the lock cleared mid-run a
second coordinator rewrote the shared state, completion fired holding 22 of 432 uuids and
the sweep targeted 195,930 documents. Here the sweep must decline (delete nothing) unless
indexed + failed accounts for every snapshotted file, the ledger still holds this run's
snapshot and this run still holds the lock.

Every scenario runs over the in-process ledger and, with the stack up, over Redis.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.errors import RefusedError
from harness.index.chunking import ChunkingPolicy
from harness.index.documents import meeting_documents
from harness.index.ingest.coordinator import finish_reindex, index_file, start_reindex
from harness.index.ingest.ledger import Ledger, MemoryLedger, RedisLedger, lock_key, state_key, uuids_key
from harness.index.ingest.messages import ReindexRequest, ReindexRun, SinkSpec, StoreSpec, SweepReport, file_jobs
from harness.index.ingest.sinks import ShardSink
from harness.store import SqliteStore
from tests.test_ingest_eager import HashEmbedder, meeting

A = meeting("a", [("Ann", 0.0, 1.0, "first file")])
B = meeting("b", [("Ben", 0.0, 1.0, "second file")])
C = meeting("c", [("Cy", 0.0, 1.0, "third file")])
ORPHAN = meeting("orphan", [("Old", 0.0, 1.0, "a file deleted from the store")])


def _redis_url() -> str:
    url = os.environ.get("RAGSWEEP_REDIS_URL")
    reason = None if url else "RAGSWEEP_REDIS_URL is unset: the local stack is not up (run `make stack-up`)"
    if url:
        try:
            import redis  # noqa: F401
        except ImportError:
            reason = "the redis client is not installed (pip install 'celery[redis]>=5.3,<6')"
    if reason:
        if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
            pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
        pytest.skip(reason)
    assert url
    return url


@pytest.fixture(params=[pytest.param("memory"), pytest.param("redis", marks=pytest.mark.integration)])
def ledger(request: pytest.FixtureRequest) -> Iterator[Ledger]:
    if request.param == "memory":
        yield MemoryLedger()
        return
    led = RedisLedger.from_url(_redis_url())
    yield led
    # every key a test made carries its unique target or run id; drop them
    for pattern in ("reindex_lock:*test-sweep*", "reindex_uuids:test-sweep*", "reindex_state:test-sweep*"):
        for key in led.client.scan_iter(pattern):
            led.client.delete(key)


@pytest.fixture
def world(tmp_path: Path) -> tuple[ReindexRequest, ShardSink]:
    """A store holding A, B, C; an index (shards) from an earlier run holding A, B, C and ORPHAN."""
    with SqliteStore.open(tmp_path / "store.sqlite") as store:
        store.inject([A, B, C])
    sink = ShardSink(tmp_path / "test-sweep-shards")
    for m in (A, B, C, ORPHAN):
        docs = meeting_documents(m, ChunkingPolicy())
        sink.write_file(m.file_uuid, docs, {"header": np.zeros((len(docs), 8), np.float32)}, {"earlier": True})
    request = ReindexRequest(store=StoreSpec("sqlite", str(tmp_path / "store.sqlite")),
                                    sink=SinkSpec("embedded", str(tmp_path / "test-sweep-shards")),
                                    embedding={"header": "object:hash-embedder@1"})
    return request, sink


def _run_id() -> str:
    return f"test-sweep-{uuid.uuid4().hex[:12]}"


class LosingLedger:
    """Passes everything through, except that the outcomes of some files never arrive."""

    def __init__(self, inner: Ledger, lose: set[str]) -> None:
        self.inner = inner
        self.lose = lose

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def record(self, run_id: str, target: str, file_uuid: str, result: Mapping[str, Any]) -> None:
        if file_uuid not in self.lose:
            self.inner.record(run_id, target, file_uuid, result)


def _index_all(run: ReindexRun, ledger: Ledger) -> None:
    for job in file_jobs(run):
        index_file(job, ledger, {"header": HashEmbedder()})


# -- the sweep --------------------------------------------------------------------------------


def test_a_complete_tally_sweeps_the_orphan_and_keeps_every_snapshotted_file(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    run = start_reindex(request, ledger, run_id=_run_id())
    assert run.snapshot == {A.file_uuid, B.file_uuid, C.file_uuid}
    _index_all(run, ledger)
    report = finish_reindex(run, ledger)
    # ORPHAN's one turn made one chunk and one digest section: two documents
    assert report.sweep == SweepReport(True, "complete tally", orphans=(ORPHAN.file_uuid,),
                                              documents_deleted=2)
    assert sink.files() == {A.file_uuid, B.file_uuid, C.file_uuid}
    assert ledger.holder(run.target) is None          # released


def test_failed_files_count_as_accounted_and_keep_their_earlier_documents(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    run = start_reindex(request, ledger, run_id=_run_id())
    for job in file_jobs(run):
        embedder = HashEmbedder()
        if job.file_uuid == B.file_uuid:
            embedder.encode = lambda texts: (_ for _ in ()).throw(RuntimeError("GPU fell off"))  # type: ignore[method-assign]
        index_file(job, ledger, {"header": embedder})
    report = finish_reindex(run, ledger)
    assert report.failed == [B.file_uuid] and report.sweep.ran and report.sweep.orphans == (ORPHAN.file_uuid,)
    assert sink.read(B.file_uuid)[2]["earlier"] is True   # B's old shard was not touched
    assert sink.files() == {A.file_uuid, B.file_uuid, C.file_uuid}


def test_a_lost_completion_makes_the_sweep_decline_and_delete_nothing(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    losing = LosingLedger(ledger, lose={C.file_uuid})
    run = start_reindex(request, losing, run_id=_run_id())
    _index_all(run, losing)
    report = finish_reindex(run, losing)
    assert not report.sweep.ran and report.sweep.unaccounted == 1
    assert "indexed 2 + failed 0 accounts for 2 of 3" in report.sweep.reason
    assert report.unaccounted == [C.file_uuid]
    assert ORPHAN.file_uuid in sink.files()            # nothing deleted
    assert ledger.holder(run.target) is None           # the finished coordinator still lets go


def test_a_coordinator_killed_after_the_snapshot_leaves_nothing_a_sweep_would_run_on(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    run = start_reindex(request, ledger, run_id=_run_id())
    first = file_jobs(run)[0]
    index_file(first, ledger, {"header": HashEmbedder()})
    # ... the coordinator dies here; whoever finishes the run later finds the tally short
    report = finish_reindex(run, ledger)
    assert not report.sweep.ran and report.sweep.unaccounted == 2
    assert sink.files() == {A.file_uuid, B.file_uuid, C.file_uuid, ORPHAN.file_uuid}


def test_the_sweep_declines_when_the_run_lost_its_lock(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    run = start_reindex(request, ledger, run_id=_run_id())
    _index_all(run, ledger)
    # the lock vanished mid-run (cleared by someone else) and a second coordinator took it
    assert ledger.release(run.target, run.run_id)
    intruder = _run_id()
    ledger.acquire(run.target, intruder)
    report = finish_reindex(run, ledger)
    assert not report.sweep.ran and f"held by {intruder}" in report.sweep.reason
    assert ORPHAN.file_uuid in sink.files()
    assert ledger.holder(run.target) == intruder       # not ours to release
    ledger.release(run.target, intruder)


def test_the_sweep_declines_when_the_ledger_lost_the_snapshot(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    run = start_reindex(request, ledger, run_id=_run_id())
    _index_all(run, ledger)
    if isinstance(ledger, RedisLedger):
        ledger.client.delete(uuids_key(run.run_id))     # as if its TTL ran out
    else:
        assert isinstance(ledger, MemoryLedger)
        del ledger.snapshots[run.run_id]
    report = finish_reindex(run, ledger)
    assert not report.sweep.ran and "no longer holds this run's snapshot" in report.sweep.reason
    assert ORPHAN.file_uuid in sink.files()


def test_the_sweep_declines_on_an_outcome_from_outside_the_snapshot(
        ledger: Ledger, world: tuple[ReindexRequest, ShardSink]) -> None:
    request, sink = world
    run = start_reindex(request, ledger, run_id=_run_id())
    _index_all(run, ledger)
    ledger.record(run.run_id, run.target, ORPHAN.file_uuid, {"file_uuid": ORPHAN.file_uuid, "status": "indexed"})
    report = finish_reindex(run, ledger)
    assert not report.sweep.ran and "outside the snapshot" in report.sweep.reason
    assert ORPHAN.file_uuid in sink.files()


# -- the ledger -------------------------------------------------------------------------------------


def test_one_coordinator_per_target(ledger: Ledger) -> None:
    target, first, second = f"embedded:/x/test-sweep-{uuid.uuid4().hex[:6]}", _run_id(), _run_id()
    ledger.acquire(target, first)
    with pytest.raises(RefusedError, match=f"run {first}"):
        ledger.acquire(target, second)
    assert not ledger.release(target, second)          # a non-holder cannot release
    assert ledger.holder(target) == first
    assert ledger.release(target, first)
    ledger.acquire(target, second)
    assert ledger.release(target, second)


def test_an_empty_snapshot_is_a_snapshot(ledger: Ledger) -> None:
    run_id = _run_id()
    assert ledger.snapshot(run_id) is None
    ledger.begin(run_id, "embedded:/nowhere/test-sweep", [])
    assert ledger.snapshot(run_id) == frozenset()


@pytest.mark.integration
def test_redis_keys_carry_ttls_and_a_live_run_keeps_its_lock(
        world: tuple[ReindexRequest, ShardSink]) -> None:
    request, _ = world
    led = RedisLedger.from_url(_redis_url(), lock_ttl_s=120, state_ttl_s=600)
    run = start_reindex(request, led, run_id=_run_id())
    try:
        keys = [lock_key(run.target), uuids_key(run.run_id), state_key(run.run_id)]
        ttls = [led.client.ttl(k) for k in keys]
        assert 0 < ttls[0] <= 120 and 0 < ttls[1] <= 600 and 0 < ttls[2] <= 600
        led.client.expire(keys[0], 5)
        _index_all(run, led)                            # each recorded outcome refreshes the lock
        assert led.client.ttl(keys[0]) > 5
        assert led.client.smembers(keys[1]) == {A.file_uuid, B.file_uuid, C.file_uuid}
        assert sorted(led.outcomes(run.run_id)) == sorted(run.snapshot)
    finally:
        finish_reindex(run, led)
        for key in (uuids_key(run.run_id), state_key(run.run_id)):
            led.client.delete(key)
