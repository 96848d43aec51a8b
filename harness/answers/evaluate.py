"""The answer engine: iterate the gold set, ask the answerer, score, aggregate.

Every answer-scored query in the gold set is scored; a query the answerer declined
scores zero and is counted (``unanswered``), as trec_eval -c counts a query the run did
not return. A mean over only the answered queries is the bug this prevents: one right
answer and one declined read 1.000 that way, and 0.500 here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.answers.answerers import Answerer
from harness.answers.model import Answer
from harness.answers.scoring import AnswerScores, ScoringPolicy, rule_kind, score_answer
from harness.model import Query

ROW_MEASURES: tuple[str, ...] = ("EM", "partial", "answered", "setF1")


@dataclass(frozen=True)
class AnswerRecord:
    query: Query
    answer: Answer
    scores: AnswerScores

    def to_dict(self) -> dict[str, Any]:
        intent = self.answer.intent
        return {
            "corpus": self.query.corpus,
            "rule": self.query.rule,
            "question": self.query.text,
            "gold": self.query.answer,
            "answer": self.answer.value_json(),
            "declined": self.answer.declined,
            "intent": intent.name if intent else None,
            "slots": intent.slots() if intent else {},
            "evidence": self.answer.evidence,
            "measures": self.scores.to_dict(),
        }


def answer_queries(queries: Sequence[Query]) -> list[Query]:
    """The gold set: every answer-scored query, in id order."""
    return sorted((q for q in queries if q.scored_on == "answer"), key=lambda q: q.id)


def evaluate_answers(queries: Sequence[Query], answerer: Answerer, policy: ScoringPolicy) -> list[AnswerRecord]:
    """One record per answer-scored query of ``queries``, declined ones included."""
    records = []
    for query in answer_queries(queries):
        rule_kind(query.rule)  # refuse an unscoreable rule before asking anything
        answer = answerer.answer(query.text)
        records.append(AnswerRecord(query=query, answer=answer,
                                    scores=score_answer(query.rule, query.answer, answer, policy)))
    return records


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def aggregate(records: Sequence[AnswerRecord]) -> dict[str, float | None]:
    """Means over every record given (declined ones scored 0). setF1 only when every
    record is of a file-set rule; otherwise None."""
    out: dict[str, float | None] = {
        "EM": _mean([r.scores.EM for r in records]),
        "partial": _mean([r.scores.partial for r in records]),
        "answered": _mean([r.scores.answered for r in records]),
    }
    f1 = [r.scores.setF1 for r in records]
    out["setF1"] = _mean([v for v in f1 if v is not None]) if all(v is not None for v in f1) else None
    return out


def _row(corpus: str, tier: str, query_class: str, rule: str, records: Sequence[AnswerRecord]) -> dict[str, Any]:
    return {"corpus": corpus, "tier": tier, "query_class": query_class, "rule": rule, "n": len(records),
            "unanswered": sum(1 for r in records if not r.answer.answered), "measures": aggregate(records)}


def build_rows(records: Sequence[AnswerRecord], tiers: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per corpus x tier x class: an ``all`` row, then one row per rule (sorted)."""
    groups: dict[tuple[str, str, str], dict[str, list[AnswerRecord]]] = defaultdict(lambda: defaultdict(list))
    for record in sorted(records, key=lambda r: r.query.id):
        q = record.query
        groups[(q.corpus, tiers.get(q.corpus, q.tier), q.query_class)][q.rule or ""].append(record)
    rows: list[dict[str, Any]] = []
    for (corpus, tier, query_class), rules in sorted(groups.items()):
        everything = sorted((r for rs in rules.values() for r in rs), key=lambda r: r.query.id)
        rows.append(_row(corpus, tier, query_class, "all", everything))
        rows.extend(_row(corpus, tier, query_class, rule, rules[rule]) for rule in sorted(rules))
    return rows
