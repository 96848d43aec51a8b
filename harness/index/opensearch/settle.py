"""Settle checks for the stack index: refuse to measure an index that is still moving.

The methodology's three ways a number is recorded against the wrong index each have a
check here (docs/opensearch.md, "Settling"):

1. ``await_settled`` refuses to measure until, together,
   every expected file carries chunk documents (a reindex deletes a file before it
   writes it again, so a mid-run poll sees a corpus that is merely smaller);
   ``(files, chunks)`` is identical on two consecutive polls (a plateau of one count is
   not the end of a reindex); and nothing predates the dispatch timestamp, read from
   each document's ``indexed_at`` (two polls of an index whose reindex was dispatched
   and has not started would otherwise certify the old index as the new one).
2. ``prepare`` refreshes, force-merges to one segment and refreshes again, so deleted
   documents' term statistics stop counting toward IDF, and checks one segment remains.
3. ``IndexingGuard`` reads ``indexing.index_total`` before and after the measurement; a
   change means something wrote during it, and the measurement is void (IntegrityError).

Each poll is one search (an aggregation over the documents, never over a hybrid body).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.errors import IntegrityError
from harness.index.opensearch.backend import OpenSearchBackend
from harness.index.opensearch.client import OpenSearchClient
from harness.index.opensearch.queries import checked_buckets

DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_SETTLE_TIMEOUT = 120.0


@dataclass(frozen=True)
class Poll:
    """One look at the index: chunk documents per file, and how many documents predate the dispatch."""

    files: Mapping[str, int]
    stale: int = 0

    @property
    def chunks(self) -> int:
        return sum(self.files.values())

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.files), self.chunks


@dataclass(frozen=True)
class SettleReport:
    polls: int
    files: int
    chunks: int
    seconds: float
    dispatched_at: int | None
    segments: int | None = None
    docs_deleted: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"polls": self.polls, "files": self.files, "chunks": self.chunks, "seconds": round(self.seconds, 3),
                "dispatched_at": self.dispatched_at, "segments": self.segments, "docs_deleted": self.docs_deleted}


def poll_body(dispatched_at: int | None, max_files: int) -> dict[str, Any]:
    aggs: dict[str, Any] = {
        "chunks": {"filter": {"term": {"doc_type": "chunk"}},
                   "aggs": {"files": {"terms": {"field": "file_uuid", "size": max_files, "order": {"_key": "asc"}}}}},
    }
    if dispatched_at is not None:
        aggs["stale"] = {"filter": {"range": {"indexed_at": {"lt": dispatched_at}}}}
    return {"size": 0, "track_total_hits": True, "query": {"match_all": {}}, "aggs": aggs}


def poll(client: OpenSearchClient, index: str, dispatched_at: int | None, *, max_files: int = 65_536) -> Poll:
    client.request("POST", f"/{index}/_refresh")
    result = client.request("POST", f"/{index}/_search", poll_body(dispatched_at, max_files))
    aggs = result["aggregations"]
    files = checked_buckets(aggs["chunks"]["files"], max_files, f"{index} settle poll")
    stale = int(aggs["stale"]["doc_count"]) if dispatched_at is not None else 0
    return Poll(files=files, stale=stale)


def unsettled_reasons(previous: Poll | None, current: Poll, expected_files: Collection[str]) -> list[str]:
    """Why ``current`` may not be measured yet (empty: settled). Pure, so each condition is tested alone."""
    reasons: list[str] = []
    missing = sorted(set(expected_files) - {f for f, n in current.files.items() if n > 0})
    if missing:
        reasons.append(f"{len(missing)} of {len(expected_files)} expected files have no chunks yet "
                       f"(first: {missing[0]})")
    if previous is None:
        reasons.append("only one poll so far; (files, chunks) must hold over two")
    elif previous.shape != current.shape or dict(previous.files) != dict(current.files):
        reasons.append(f"(files, chunks) moved from {previous.shape} to {current.shape} between polls")
    if current.stale:
        reasons.append(f"{current.stale} documents were indexed before the dispatch (a reindex not yet started)")
    return reasons


def await_settled(client: OpenSearchClient, index: str, expected_files: Collection[str],
                  dispatched_at: int | None = None, *, interval: float = DEFAULT_POLL_INTERVAL,
                  timeout: float = DEFAULT_SETTLE_TIMEOUT, sleep: Callable[[float], None] = time.sleep,
                  clock: Callable[[], float] = time.monotonic) -> SettleReport:
    """Poll until the three conditions hold together; IntegrityError naming them at ``timeout``."""
    started = clock()
    previous: Poll | None = None
    polls = 0
    while True:
        current = poll(client, index, dispatched_at)
        polls += 1
        reasons = unsettled_reasons(previous, current, expected_files)
        if not reasons:
            return SettleReport(polls=polls, files=len(current.files), chunks=current.chunks,
                                seconds=clock() - started, dispatched_at=dispatched_at)
        if clock() - started >= timeout:
            raise IntegrityError(f"index {index} did not settle in {timeout:g}s ({polls} polls): "
                                 f"{'; '.join(reasons)}; refusing to measure it")
        previous = current
        sleep(interval)


def segment_stats(client: OpenSearchClient, index: str) -> tuple[int, int]:
    """(segments, deleted documents) of the index's primaries."""
    stats = client.request("GET", f"/{index}/_stats/segments,docs")["_all"]["primaries"]
    return int(stats["segments"]["count"]), int(stats["docs"]["deleted"])


def prepare(client: OpenSearchClient, index: str, *, timeout: float = DEFAULT_SETTLE_TIMEOUT,
            interval: float = 2.0, sleep: Callable[[float], None] = time.sleep,
            clock: Callable[[], float] = time.monotonic) -> tuple[int, int]:
    """refresh -> force-merge(max_num_segments=1) -> refresh until one segment and no deleted documents.

    OpenSearch keeps soft-deleted documents that the shard's peer-recovery retention lease
    still covers, and a force-merge keeps them too (their terms still count toward IDF)
    until the lease advances, about 30 s after the write on 3.6 (docs/opensearch.md). So the
    merge is repeated until ``docs.deleted`` is 0; still there at ``timeout``: IntegrityError.
    """
    started = clock()
    while True:
        client.request("POST", f"/{index}/_refresh")
        client.request("POST", f"/{index}/_forcemerge", params={"max_num_segments": 1, "wait_for_completion": True})
        client.request("POST", f"/{index}/_refresh")
        segments, deleted = segment_stats(client, index)
        if segments <= 1 and not deleted:
            return segments, deleted
        if clock() - started >= timeout:
            raise IntegrityError(f"index {index} still has {segments} segments and {deleted} deleted documents "
                                 f"after force-merging to one for {timeout:g}s; something is writing to it (or a "
                                 "retention lease holds the deletes). Stop the writers and rerun")
        sleep(interval)


def settle_for_measurement(client: OpenSearchClient, index: str, expected_files: Collection[str],
                           dispatched_at: int | None = None, **kwargs: Any) -> SettleReport:
    """await_settled, then prepare: the index a measurement may run against."""
    report = await_settled(client, index, expected_files, dispatched_at, **kwargs)
    segments, deleted = prepare(client, index, timeout=kwargs.get("timeout", DEFAULT_SETTLE_TIMEOUT))
    return SettleReport(polls=report.polls, files=report.files, chunks=report.chunks, seconds=report.seconds,
                        dispatched_at=dispatched_at, segments=segments, docs_deleted=deleted)


def indexing_total(client: OpenSearchClient, index: str) -> int:
    """``indexing.index_total`` of the index's primaries: every document write it has taken."""
    stats = client.request("GET", f"/{index}/_stats/indexing")["_all"]["primaries"]["indexing"]
    return int(stats["index_total"])


@dataclass
class IndexingGuard:
    """Read indexing.total before a measurement and again after; a change voids the measurement."""

    client: OpenSearchClient
    index: str
    before: int | None = None
    after: int | None = None
    _entered: bool = field(default=False, repr=False)

    def __enter__(self) -> IndexingGuard:
        self.before = indexing_total(self.client, self.index)
        self._entered = True
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.verify()

    def verify(self) -> dict[str, int]:
        if not self._entered or self.before is None:
            raise IntegrityError("IndexingGuard.verify() before the measurement started")
        self.after = indexing_total(self.client, self.index)
        if self.after != self.before:
            raise IntegrityError(
                f"index {self.index} took {self.after - self.before} writes during the measurement "
                f"(indexing.total {self.before} -> {self.after}); the measurement is void and no results "
                "are written. Stop whatever writes to the index (celery beat, a reindex) and rerun")
        return {"before": self.before, "after": self.after}


def open_for_measurement(stack: Mapping[str, Any], expected_files: Collection[str], expected_chunks: int, *,
                         client: OpenSearchClient, knn_strategy: str = "exact",
                         timeout: float = DEFAULT_SETTLE_TIMEOUT,
                         interval: float = DEFAULT_POLL_INTERVAL) -> tuple[Any, SettleReport]:
    """The state's OpenSearch index, settled and checked to hold exactly the state's chunks.

    Refuses (IntegrityError) an index of another state (``_meta.state_identity``), one that
    does not settle, and one whose files or chunk count differ from what the judge reads.
    """
    index = stack["index"]
    backend = OpenSearchBackend(client, index, knn_strategy=knn_strategy)  # type: ignore[arg-type]
    identity = backend.mapping.get("_meta", {}).get("state_identity")
    if identity != stack["state_identity"]:
        raise IntegrityError(f"OpenSearch index {index} was built for state {identity}, not this state "
                             f"({stack['state_identity']}); rebuild the state with --backend stack")
    report = settle_for_measurement(client, index, expected_files, stack.get("dispatched_at"),
                                    timeout=timeout, interval=interval)
    if report.chunks != expected_chunks or report.files != len(set(expected_files)):
        raise IntegrityError(f"OpenSearch index {index} holds {report.files} files / {report.chunks} chunks, the "
                             f"state {len(set(expected_files))} / {expected_chunks}; the judge would grade chunks the "
                             "index does not hold. Rebuild the state with --backend stack")
    return backend, report
