"""The gate as data: what an arm must do against its control to be adoptable.

A manifest carries one ``gate`` block (``ragsweep sweep emit-manifest`` prints the default);
comparison.json writes it back in its ``gate`` block and comparison.md prints its rule first.
The default is the methodology's Stage 5 rule as it applied it: a positive nDCG@10 delta on
the ``all`` row of every corpus, and the ``lookup`` class never regressing on any reported
retrieval measure on any corpus (candidate_pool 12 was rejected for synthetic lookup nDCG@5
and MRR alone, while its nDCG@10 rose on every class). No latency budget by default: the
methodology had no interleaved measurement to gate on.

Measure names are harness.metrics.measures' (``ndcg@5`` is read as ``nDCG@5``); only measures
where higher is better may be gated on (``fileRank`` is a rank, lower is better).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.errors import UsageError
from harness.metrics.measures import RETRIEVAL_MEASURES, parse_measure

# the query classes a row can carry (harness.model.QueryClass) and the all row
GATE_CLASSES: tuple[str, ...] = ("lookup", "summarize", "multi_file", "aggregation", "all")
LOWER_IS_BETTER = frozenset({"fileRank"})
DEFAULT_TOLERANCE = 0.0005


def _measure(name: Any) -> Any:
    if not isinstance(name, str):
        return name  # pydantic names the type it expected
    try:
        measure = parse_measure(name).name
    except UsageError as e:
        raise ValueError(str(e)) from e
    if measure in LOWER_IS_BETTER:
        raise ValueError(f"{measure} is a rank (lower is better); the gate reads deltas where higher is better")
    return measure


class LatencyBudget(BaseModel):
    """What an arm may add to the control's p95 retrieval latency, measured interleaved with it.

    ``p95_added_ms``: arm p95 minus control p95, in milliseconds; ``p95_ratio``: arm p95 over
    control p95 (1.10 allows 10% more). Either or both; an arm over either is over budget."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # strict: a number, not true or "0.5"; finite: not Infinity or NaN (Python's json reads both)
    p95_added_ms: float | None = Field(None, ge=0, strict=True, allow_inf_nan=False)
    p95_ratio: float | None = Field(None, ge=1.0, strict=True, allow_inf_nan=False)

    @model_validator(mode="after")
    def _some(self) -> LatencyBudget:
        if self.p95_added_ms is None and self.p95_ratio is None:
            raise ValueError("a latency budget needs p95_added_ms or p95_ratio (or drop the block: no budget)")
        return self

    def describe(self) -> str:
        parts = []
        if self.p95_added_ms is not None:
            parts.append(f"p95 +{self.p95_added_ms:g} ms")
        if self.p95_ratio is not None:
            parts.append(f"p95 x{self.p95_ratio:g}")
        return " and ".join(parts)


class GateSpec(BaseModel):
    """The gate. ``measure`` on ``query_class`` must rise (delta > 0) on every corpus; every
    ``protected_measures`` on ``protected_class`` must not fall (delta >= 0) on any corpus.
    ``tolerance``: a verdict that one delta smaller than it decides is flagged, not changed (a finite
    number: not a boolean, a string, Infinity or NaN). ``latency``: an optional budget against the
    control, read from the interleaved measurement."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    measure: str = "nDCG@10"
    query_class: str = "all"
    protected_class: str = "lookup"
    protected_measures: tuple[str, ...] = RETRIEVAL_MEASURES
    tolerance: float = Field(DEFAULT_TOLERANCE, ge=0.0, strict=True, allow_inf_nan=False)
    latency: LatencyBudget | None = None

    @field_validator("measure", mode="before")
    @classmethod
    def _gate_measure(cls, value: Any) -> Any:
        return _measure(value)

    @field_validator("protected_measures", mode="before")
    @classmethod
    def _measures(cls, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, list | tuple):
            return value
        names = [_measure(v) for v in value]
        if not names:
            raise ValueError(f"name at least one measure (default: {', '.join(RETRIEVAL_MEASURES)})")
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"measure named twice: {', '.join(twice)}")
        return tuple(names)

    @field_validator("query_class", "protected_class")
    @classmethod
    def _class(cls, value: str) -> str:
        if value not in GATE_CLASSES:
            raise ValueError(f"unknown query class {value!r}; known: {', '.join(GATE_CLASSES)}")
        return value

    @property
    def measures(self) -> tuple[str, ...]:
        """Every measure the gate reads, the gate measure first."""
        return tuple(dict.fromkeys((self.measure, *self.protected_measures)))

    def rule(self) -> str:
        text = (f"win: {self.measure} delta > 0 on the {self.query_class} row of every corpus, and no "
                f"{self.protected_class} delta < 0 on any corpus in {', '.join(self.protected_measures)}")
        if self.latency is not None:
            text += f"; p95 latency added against the control, measured interleaved, within {self.latency.describe()}"
        return text


DEFAULT_GATE = GateSpec()
