"""The ``answers`` block of metrics.json: rows, scoring rules, answerer, coverage, per query.

Deterministic by construction (no timings, hosts or unsorted sets), so it is
byte-identical across runs over an unchanged index and store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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
