"""runinfo.json: what one bench run cost and where it ran, outside the claim.

``bench.run`` builds it (durations, host, latency: never byte-identical, so kept out of
metrics.json) and checks the dict against :class:`RunInfo` before the report stage writes it.
It also records ``state_measured``, the state's measurement identity (harness.state.contents):
``bench --compare`` reads the control's back (:func:`check_compare`) and refuses a control measured on
another state.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr

from harness.errors import IntegrityError
from harness.inputfiles import parse_json_input, read_input_text


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
    state_measured: StrictStr | None = None  # the state's measurement identity (None: written before it was)
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


def check_compare(compare: Path, measured: str) -> None:
    """``bench --compare``: the control's metrics.json was measured on the state this run measures, by the
    ``state_measured`` of the runinfo.json beside it (exit 5 when another; a note when none is recorded)."""
    runinfo = compare.with_name("runinfo.json")
    doc = parse_json_input(read_input_text(runinfo), str(runinfo)) if runinfo.is_file() else None
    recorded = doc.get("state_measured") if isinstance(doc, dict) else None
    if not isinstance(recorded, str):
        print(f"note: --compare {compare}: no runinfo.json recording state_measured beside it (written before "
              "runs recorded it): which state its control measured is not checked", file=sys.stderr)
    elif recorded != measured:
        raise IntegrityError(f"--compare {compare}: its control was measured on {recorded[:12]} ({runinfo}: "
                             f"state_measured), this run measures {measured[:12]}: two measurements cannot be "
                             "compared; compare with a control run on this state")
