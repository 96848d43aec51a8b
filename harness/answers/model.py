"""What an answerer produces: a parsed intent and an answer, or a declined query.

Shared by every answerer as plain data; no parsing lives here (the reference and the
product answerers parse questions with code that shares nothing, see docs/answers.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

IntentName = Literal["count_files", "list_files", "count_events", "speaker_top", "temporal_count"]
INTENTS: tuple[IntentName, ...] = ("count_files", "list_files", "count_events", "speaker_top", "temporal_count")


@dataclass(frozen=True)
class Intent:
    """A question reduced to an aggregation and its slots; unused slots stay None.

    ``phrase``: the subject phrase to match exactly (R3/R4/R5/R7); ``year``/``month``: the
    period (R7); ``team``/``kind``: the session scope (R6); ``verb``: R5's verb, recorded
    only (an occurrence count counts the phrase, whatever was done to it).
    """

    name: IntentName
    phrase: str | None = None
    year: int | None = None
    month: int | None = None
    team: str | None = None
    kind: str | None = None
    verb: str | None = None

    def slots(self) -> dict[str, Any]:
        """The filled slots, for the results file."""
        values = {"phrase": self.phrase, "year": self.year, "month": self.month, "team": self.team,
                  "kind": self.kind, "verb": self.verb}
        return {k: v for k, v in values.items() if v is not None}


@dataclass(frozen=True)
class SpeakerAnswer:
    """R6: who attended the most sessions, and how many."""

    name: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "name": self.name}


AnswerValue = int | tuple[str, ...] | SpeakerAnswer


@dataclass(frozen=True)
class Answer:
    """One answerer's answer to one question.

    ``value`` is None exactly when the query was declined, and then ``declined`` says why.
    A file set is a tuple of file_uuids, always sorted. ``evidence`` holds what the
    mechanism saw (e.g. undated files a period filter excluded), JSON-ready and sorted.
    """

    value: AnswerValue | None
    intent: Intent | None = None
    declined: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.value is None) == (self.declined is None):
            raise ValueError("an answer has a value or a reason it was declined, exactly one of them")
        if isinstance(self.value, tuple) and list(self.value) != sorted(set(self.value)):
            raise ValueError("a file set is emitted sorted and without repeats")

    @property
    def answered(self) -> bool:
        return self.value is not None

    def value_json(self) -> Any:
        """The value as written into results: int, sorted list, or {"name", "count"}."""
        if isinstance(self.value, SpeakerAnswer):
            return self.value.to_json()
        if isinstance(self.value, tuple):
            return list(self.value)
        return self.value


def declined(reason: str, intent: Intent | None = None) -> Answer:
    return Answer(value=None, intent=intent, declined=reason)
