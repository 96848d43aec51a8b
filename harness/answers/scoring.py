"""Answer scoring: EM (the gate), partial (diagnostic), answered, and setF1 for file sets.

The rules (every one a parameter written into the results, docs/answers.md):

* a count is exact: ``|answer - gold| <= count_tolerance`` (default 0), and partial = EM;
* a file set is exact for EM; setF1 is reported beside it; partial = setF1 under
  ``set_credit="f1"`` and = EM under ``set_credit="exact"``;
* a speaker answer is two fields, name and session count; EM needs both, partial is the
  fraction right; names compare casefolded with whitespace collapsed, nothing else;
* a declined query scores zero on every measure and answered 0 (the caller iterates the
  gold set, so it is counted: trec_eval -c semantics);
* an answer of the wrong shape for its rule (a list for a count) is answered and wrong.

Measure names are disjoint from the retrieval table's (nDCG@k, R@k, MRR, fileR@k,
fileRank), so an answer score cannot be read as a retrieval score.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from harness.answers.model import Answer, AnswerValue, SpeakerAnswer
from harness.errors import InputDataError, UsageError
from harness.synthetic.formats import (
    RULE_COUNT_EVENTS,
    RULE_COUNT_FILES,
    RULE_LIST_FILES,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
)

RuleKind = Literal["count", "file_set", "speaker"]
SetCredit = Literal["f1", "exact"]
SET_CREDITS: tuple[SetCredit, ...] = ("f1", "exact")

# rule id -> the shape of its gold answer
RULE_KINDS: dict[str, RuleKind] = {
    RULE_COUNT_FILES: "count",
    RULE_LIST_FILES: "file_set",
    RULE_COUNT_EVENTS: "count",
    RULE_SPEAKER_TOP: "speaker",
    RULE_TEMPORAL: "count",
}

ANSWER_MEASURES: dict[str, str] = {
    "EM": "exact match under the scoring rules: the gate",
    "partial": "diagnostic partial credit (counts: = EM; file sets: setF1 or EM; speaker: fraction of fields)",
    "answered": "share of the gold queries the answerer attempted (declined = 0)",
    "setF1": "file-set rules only: F1 of the answered file set against the gold set (diagnostic)",
}


@dataclass(frozen=True)
class ScoringPolicy:
    count_tolerance: int = 0
    set_credit: SetCredit = "f1"

    def __post_init__(self) -> None:
        if isinstance(self.count_tolerance, bool) or not isinstance(self.count_tolerance, int) \
                or self.count_tolerance < 0:
            raise UsageError(f"--answer-count-tolerance must be a whole number >= 0 (got {self.count_tolerance!r})")
        if self.set_credit not in SET_CREDITS:
            raise UsageError(f"--answer-set-credit must be one of {', '.join(SET_CREDITS)} (got {self.set_credit!r})")

    def to_dict(self) -> dict[str, Any]:
        return {
            "count_tolerance": self.count_tolerance,
            "count_rule": f"|answer - gold| <= {self.count_tolerance}; partial = EM (no interpolated credit); "
                          "applies to every count, a speaker's session count included",
            "set_credit": self.set_credit,
            "set_rule": "EM = the exact file set; setF1 reported beside it; partial = "
                        + ("setF1" if self.set_credit == "f1" else "EM (partial credit collapsed)"),
            "speaker_rule": "fields name and count; EM needs both; partial = fraction of fields right",
            "name_comparison": "casefolded, whitespace runs collapsed, ends stripped; nothing else",
            "unanswered": "scores 0 on every measure and is counted (the gold set is iterated)",
            "wrong_shape": "an answer of another shape than the rule's gold is answered and wrong",
            "sets_emitted": "sorted",
        }


@dataclass(frozen=True)
class AnswerScores:
    EM: float
    partial: float
    answered: float
    setF1: float | None = None  # file-set rules only

    def to_dict(self) -> dict[str, float]:
        out = {"EM": self.EM, "partial": self.partial, "answered": self.answered}
        if self.setF1 is not None:
            out["setF1"] = self.setF1
        return out


def normalise_name(name: str) -> str:
    """The one tolerance in the answer path: casefold and collapse whitespace."""
    return " ".join(name.casefold().split())


def rule_kind(rule: str | None) -> RuleKind:
    kind = RULE_KINDS.get(rule or "")
    if kind is None:
        raise InputDataError(f"answer-scored query with rule {rule!r}: no scoring rule for it "
                             f"(known: {', '.join(sorted(RULE_KINDS))}); fix the corpus or add the rule")
    return kind


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(gold: Any, value: AnswerValue, policy: ScoringPolicy) -> AnswerScores:
    if not _is_count(gold):
        raise InputDataError(f"a count rule's gold answer must be an integer, got {gold!r}")
    em = float(_is_count(value) and abs(int(value) - gold) <= policy.count_tolerance)  # type: ignore[arg-type]
    return AnswerScores(EM=em, partial=em, answered=1.0)


def set_f1(answer: frozenset[str], gold: frozenset[str]) -> float:
    if not answer and not gold:
        return 1.0
    return 2 * len(answer & gold) / (len(answer) + len(gold))


def _file_set(gold: Any, value: AnswerValue, policy: ScoringPolicy) -> AnswerScores:
    if not isinstance(gold, list | tuple) or not all(isinstance(f, str) for f in gold):
        raise InputDataError(f"a file-set rule's gold answer must be a list of file_uuids, got {gold!r}")
    if not isinstance(value, tuple):
        return AnswerScores(EM=0.0, partial=0.0, answered=1.0, setF1=0.0)
    answer, expected = frozenset(value), frozenset(gold)
    em = float(answer == expected)
    f1 = set_f1(answer, expected)
    return AnswerScores(EM=em, partial=f1 if policy.set_credit == "f1" else em, answered=1.0, setF1=f1)


def _speaker(gold: Any, value: AnswerValue, policy: ScoringPolicy) -> AnswerScores:
    if not (isinstance(gold, dict) and isinstance(gold.get("name"), str) and _is_count(gold.get("count"))):
        raise InputDataError(f"a speaker rule's gold answer must be {{'name': str, 'count': int}}, got {gold!r}")
    if not isinstance(value, SpeakerAnswer):
        return AnswerScores(EM=0.0, partial=0.0, answered=1.0)
    name_right = normalise_name(value.name) == normalise_name(gold["name"])
    count_right = _is_count(value.count) and abs(value.count - gold["count"]) <= policy.count_tolerance
    return AnswerScores(EM=float(name_right and count_right), partial=(name_right + count_right) / 2, answered=1.0)


_SCORERS: dict[RuleKind, Callable[[Any, AnswerValue, ScoringPolicy], AnswerScores]] = {
    "count": _count,
    "file_set": _file_set,
    "speaker": _speaker,
}


def score_answer(rule: str | None, gold: Any, answer: Answer, policy: ScoringPolicy) -> AnswerScores:
    """One query's measures. A declined answer scores zero (and answered 0)."""
    kind = rule_kind(rule)
    if answer.value is None:
        return AnswerScores(EM=0.0, partial=0.0, answered=0.0, setF1=0.0 if kind == "file_set" else None)
    return _SCORERS[kind](gold, answer.value, policy)
