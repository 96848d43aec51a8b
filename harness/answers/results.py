"""The ``answers`` block of metrics.json: rows, scoring rules, answerer, coverage, per query.

Deterministic by construction (no timings, hosts or unsorted sets), so it is
byte-identical across runs over an unchanged index and store.

The answers stage builds the block, so its model (:class:`AnswersBlock`) lives here; the
report stage's ``MetricsDoc`` reads metrics.json's ``answers`` through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from harness.answers.answerers import ANSWERERS, describe, make_answerer
from harness.answers.evaluate import ROW_MEASURES, AnswerRecord, build_rows, evaluate_answers
from harness.answers.mechanisms import DEFAULT_BUCKET_SIZE, Sources
from harness.answers.scoring import ANSWER_MEASURES, ScoringPolicy
from harness.errors import UsageError
from harness.model import Corpus

SCHEMA = "ragsweep.answers/1"


@dataclass(frozen=True)
class AnswerSettings:
    """What bench's --answerer / --answer-count-tolerance / --answer-set-credit select."""

    answerer: str = "reference"
    policy: ScoringPolicy = field(default_factory=ScoringPolicy)
    bucket_size: int = DEFAULT_BUCKET_SIZE

    def __post_init__(self) -> None:
        if self.answerer not in ANSWERERS:
            raise UsageError(f"--answerer {self.answerer!r} is not one of {', '.join(ANSWERERS)}")
        if self.bucket_size < 1:
            raise UsageError("the terms-aggregation bucket size must be at least 1")


def coverage(records: Sequence[AnswerRecord]) -> dict[str, Any]:
    """What period-filtered answers could not see: undated files are excluded, so a
    period count over a partly dated corpus is a floor."""
    temporal = [r.answer.evidence for r in records if "undated_files_excluded" in r.answer.evidence]
    undated_matching = sorted({f for e in temporal for f in e["phrase_files_undated"]})
    return {
        "period_filtered_answers": len(temporal),
        "undated_files_excluded": max((e["undated_files_excluded"] for e in temporal), default=0),
        "undated_files_matching_a_phrase": undated_matching,
    }


def answers_block(corpora: Sequence[Corpus], sources: Sources, settings: AnswerSettings) -> dict[str, Any]:
    """Evaluate the chosen answerer over every answer-scored query of ``corpora``."""
    answerer = make_answerer(settings.answerer, sources)
    queries = [q for c in corpora for q in c.queries]
    records = evaluate_answers(queries, answerer, settings.policy)
    tiers = {c.name: c.tier for c in corpora}
    return {
        "schema": SCHEMA,
        "answerer": {**describe(answerer), "search_backend": sources.search.name,
                     "bucket_size": settings.bucket_size},
        "scoring": settings.policy.to_dict(),
        "measures": {name: ANSWER_MEASURES[name] for name in ROW_MEASURES},
        "queries": {"scored": len(records), "unanswered": sum(1 for r in records if not r.answer.answered)},
        "coverage": coverage(records),
        "rows": build_rows(records, tiers),
        "per_query": {r.query.id: r.to_dict() for r in records},
    }


# --- the block's model: what a reader of metrics.json's ``answers`` may rely on ------------------------

class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnswererInfo(_Part):
    name: StrictStr
    is_production_path: StrictBool
    parser: StrictStr
    mechanisms: dict[str, StrictStr]
    search_backend: StrictStr
    bucket_size: StrictInt
    store: dict[str, Any] | None = None  # bench adds it when the answers came from PostgreSQL


class AnswerRow(_Part):
    corpus: StrictStr
    tier: StrictStr
    query_class: StrictStr
    rule: StrictStr
    n: StrictInt
    unanswered: StrictInt
    measures: dict[str, float | None]  # setF1 is null where a row mixes rules


class AnswerRecordDoc(_Part):
    corpus: StrictStr
    rule: StrictStr | None
    question: StrictStr
    gold: Any
    answer: Any
    declined: StrictStr | None
    intent: StrictStr | None
    slots: dict[str, Any]
    evidence: dict[str, Any]
    measures: dict[str, float]


class AnswerCoverage(_Part):
    period_filtered_answers: StrictInt
    undated_files_excluded: StrictInt
    undated_files_matching_a_phrase: list[StrictStr]


class AnswerCounts(_Part):
    scored: StrictInt
    unanswered: StrictInt


class AnswersBlock(_Part):
    """metrics.json's ``answers`` block, as :func:`answers_block` builds it."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: Literal["ragsweep.answers/1"] = Field(alias="schema")
    answerer: AnswererInfo
    scoring: dict[str, Any]
    measures: dict[str, StrictStr]
    queries: AnswerCounts
    coverage: AnswerCoverage
    rows: list[AnswerRow]
    per_query: dict[str, AnswerRecordDoc]
