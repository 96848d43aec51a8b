"""runinfo.json: what one bench run cost and where it ran, outside the claim.

``bench.run`` builds it (durations, host, latency: never byte-identical, so kept out of
metrics.json) and checks the dict against :class:`RunInfo` before the report stage writes it.
No stage reads it back today; a reader would read it through this model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr


class Latency(BaseModel):
    """Per-query retrieval latency in milliseconds (``bench.latency.percentiles``); no samples, no values."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    samples: StrictInt
    concurrency: StrictInt
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    mean: float | None = None


class RunInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    control_name: StrictStr
    elapsed_seconds: float
    started_at: StrictStr
    host: StrictStr
    state: StrictStr
    workers: StrictInt
    retrieval_latency_ms: Latency
    # --time-also: the same latencies per backend and how far the two rankings agree
    retrieval_latency_ms_by_backend: dict[str, Any] | None = None
    backend_agreement: dict[str, Any] | None = None
    stack: dict[str, Any] | None = None  # --backend stack: the settled index's counters
    # an arm run in a group (harness.bench.group): its legs key, its place in the group, the seconds the
    # shared context took to open (once for the group), and how many leg requests it fetched or reused
    legs: dict[str, Any] | None = None
    # a rerank arm: the pairs it had the cross-encoder score, found in its process's memory, or read from
    # the machine's score cache (harness.retrieval.scorecache), and that cache's folder (None: no cache)
    rerank: dict[str, Any] | None = None
