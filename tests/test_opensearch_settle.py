"""Unit tests of harness.index.opensearch.settle against a scripted client (no server)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from harness.errors import IntegrityError
from harness.index.opensearch.settle import IndexingGuard, Poll, await_settled, poll_body, prepare, unsettled_reasons


class ScriptedClient:
    """Answers settle's requests from scripted polls and stats; records every request."""

    def __init__(self, polls: list[Poll] | None = None, totals: list[int] | None = None,
                 segments: int = 1, deleted: int = 0) -> None:
        self.polls = list(polls or [])
        self.totals = list(totals or [])
        self.segments = segments
        self.deleted = deleted
        self.calls: list[tuple[str, str]] = []

    def request(self, method: str, path: str, body: Any = None, *, params: Mapping[str, Any] | None = None,
                missing_ok: bool = False) -> Any:
        self.calls.append((method, path))
        if path.endswith("/_search"):
            p = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
            aggs: dict[str, Any] = {"chunks": {"files": {
                "buckets": [{"key": f, "doc_count": n} for f, n in sorted(p.files.items())],
                "sum_other_doc_count": 0}}}
            if "stale" in body["aggs"]:
                aggs["stale"] = {"doc_count": p.stale}
            return {"aggregations": aggs}
        if path.endswith("/_stats/indexing"):
            return {"_all": {"primaries": {"indexing": {"index_total": self.totals.pop(0)}}}}
        if path.endswith("/_stats/segments,docs"):
            return {"_all": {"primaries": {"segments": {"count": self.segments}, "docs": {"deleted": self.deleted}}}}
        return {"acknowledged": True}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


FILES = {"f1", "f2"}


def test_every_condition_is_a_reason_on_its_own() -> None:
    full = Poll(files={"f1": 3, "f2": 2})
    assert unsettled_reasons(full, full, FILES) == []
    # 1. a file the reindex deleted and has not written again
    smaller = Poll(files={"f1": 3})
    assert unsettled_reasons(smaller, smaller, FILES) == [
        "1 of 2 expected files have no chunks yet (first: f2)"]
    # 2. the counts moved between two polls (a plateau is not the end of a reindex)
    assert unsettled_reasons(Poll(files={"f1": 3, "f2": 1}), full, FILES) == [
        "(files, chunks) moved from (2, 4) to (2, 5) between polls"]
    assert unsettled_reasons(None, full, FILES) == ["only one poll so far; (files, chunks) must hold over two"]
    # same shape, different distribution is movement too
    assert unsettled_reasons(Poll(files={"f1": 2, "f2": 3}), full, FILES) == [
        "(files, chunks) moved from (2, 5) to (2, 5) between polls"]
    # 3. documents older than the dispatch: a reindex dispatched and not started
    stale = Poll(files={"f1": 3, "f2": 2}, stale=5)
    assert unsettled_reasons(stale, stale, FILES) == [
        "5 documents were indexed before the dispatch (a reindex not yet started)"]


def test_poll_body_counts_stale_documents_only_with_a_dispatch_time() -> None:
    assert "stale" not in poll_body(None, 10)["aggs"]
    assert poll_body(1700, 10)["aggs"]["stale"] == {"filter": {"range": {"indexed_at": {"lt": 1700}}}}
    assert poll_body(None, 10)["aggs"]["chunks"]["filter"] == {"term": {"doc_type": "chunk"}}


def test_settles_after_two_equal_complete_polls() -> None:
    clock = FakeClock()
    growing = [Poll(files={"f1": 1}), Poll(files={"f1": 3}), Poll(files={"f1": 3, "f2": 2}),
               Poll(files={"f1": 3, "f2": 2})]
    client = ScriptedClient(growing)
    report = await_settled(client, "ix", FILES, 100, interval=1.0, timeout=60, sleep=clock.sleep,  # type: ignore[arg-type]
                           clock=clock)
    assert (report.polls, report.files, report.chunks) == (4, 2, 5)
    # every poll refreshes first, so it sees what was written
    assert client.calls.count(("POST", "/ix/_refresh")) == 4


def test_refuses_an_incomplete_index_at_the_timeout() -> None:
    clock = FakeClock()
    client = ScriptedClient([Poll(files={"f1": 3})])
    with pytest.raises(IntegrityError, match=r"did not settle in 5s \(6 polls\): 1 of 2 expected files"):
        await_settled(client, "ix", FILES, None, interval=1.0, timeout=5, sleep=clock.sleep,  # type: ignore[arg-type]
                      clock=clock)


def test_refuses_an_index_older_than_the_dispatch() -> None:
    clock = FakeClock()
    client = ScriptedClient([Poll(files={"f1": 3, "f2": 2}, stale=5)])
    with pytest.raises(IntegrityError, match="indexed before the dispatch"):
        await_settled(client, "ix", FILES, 100, interval=1.0, timeout=3, sleep=clock.sleep,  # type: ignore[arg-type]
                      clock=clock)


def test_prepare_is_refresh_forcemerge_refresh_until_one_segment_without_deletes() -> None:
    client = ScriptedClient()
    assert prepare(client, "ix") == (1, 0)  # type: ignore[arg-type]
    assert client.calls[:3] == [("POST", "/ix/_refresh"), ("POST", "/ix/_forcemerge"), ("POST", "/ix/_refresh")]
    clock = FakeClock()
    with pytest.raises(IntegrityError, match=r"3 segments and 0 deleted documents after force-merging to one "
                                             r"for 10s"):
        prepare(ScriptedClient(segments=3), "ix", timeout=10, sleep=clock.sleep, clock=clock)  # type: ignore[arg-type]


def test_prepare_merges_again_while_a_retention_lease_holds_deletes() -> None:
    class LeaseClient(ScriptedClient):
        """Soft deletes survive the first merges, as under a retention lease."""

        def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
            if path.endswith("/_forcemerge"):
                self.merges = getattr(self, "merges", 0) + 1
                if self.merges == 3:
                    self.deleted = 0
            return super().request(method, path, body, **kwargs)

    clock = FakeClock()
    client = LeaseClient(deleted=80)
    assert prepare(client, "ix", timeout=60, interval=5, sleep=clock.sleep, clock=clock) == (1, 0)  # type: ignore[arg-type]
    assert client.merges == 3 and clock.now == 10


def test_indexing_guard_voids_a_measurement_the_index_changed_under() -> None:
    with IndexingGuard(ScriptedClient(totals=[80, 80]), "ix") as guard:  # type: ignore[arg-type]
        pass
    assert (guard.before, guard.after) == (80, 80)
    with pytest.raises(IntegrityError, match=r"took 1 writes during the measurement \(indexing.total 80 -> 81\)"), \
            IndexingGuard(ScriptedClient(totals=[80, 81]), "ix"):  # type: ignore[arg-type]
        pass
    with pytest.raises(IntegrityError, match="before the measurement started"):
        IndexingGuard(ScriptedClient(), "ix").verify()  # type: ignore[arg-type]
