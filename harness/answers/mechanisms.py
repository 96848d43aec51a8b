"""The exact mechanisms every answerer shares: aggregations and store queries, no model.

An answerer parses a question into an :class:`~harness.answers.model.Intent`; this module
executes it. It sees the search backend and the store only through two narrow
protocols, so no mechanism can issue a retrieval (a hybrid body, a BM25 or kNN leg):

* :class:`PhraseAggregator`: ``phrase_file_buckets`` — match_phrase on the exact content
  field + a terms aggregation over file_uuid. A bucket list truncated at its size limit
  raises ``IntegrityError``; nothing here catches it.
* :class:`AnswerStore`: ``count_phrase_occurrences``, ``files_in_period``,
  ``speaker_sessions`` — the relational store's exact reads.

Both ``harness.index.backend.SearchBackend`` and ``harness.store.Store`` satisfy them,
whatever the engine (embedded tantivy/SQLite, or OpenSearch/PostgreSQL).
"""

from __future__ import annotations

import calendar
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from harness.answers.model import Answer, Intent, IntentName, SpeakerAnswer, declined
from harness.store.records import PeriodFiles, SpeakerSessions

DEFAULT_BUCKET_SIZE = 10_000


class PhraseAggregator(Protocol):
    name: str

    def phrase_file_buckets(self, phrase: str, *, size: int = DEFAULT_BUCKET_SIZE) -> dict[str, int]: ...


class AnswerStore(Protocol):
    def count_phrase_occurrences(self, phrase: str, file_uuids: Iterable[str] | None = None) -> int: ...

    def files_in_period(self, start: date, end: date) -> PeriodFiles: ...

    def speaker_sessions(self, title_like: str) -> list[SpeakerSessions]: ...


@dataclass(frozen=True)
class Sources:
    """Where answers come from: the index's phrase aggregation and the relational store."""

    search: PhraseAggregator
    store: AnswerStore
    bucket_size: int = DEFAULT_BUCKET_SIZE


MECHANISMS: dict[IntentName, str] = {
    "count_files": "phrase_file_buckets: match_phrase(content_exact) + terms(file_uuid) aggregation; "
                   "answer = number of buckets",
    "list_files": "phrase_file_buckets: match_phrase(content_exact) + terms(file_uuid) aggregation; "
                  "answer = bucket keys, sorted",
    "count_events": "store.count_phrase_occurrences: exact-phrase regex count over transcript_segment.text "
                    "(segments, not chunks: chunk overlap double-counts a long turn's tail)",
    "speaker_top": "store.speaker_sessions(title LIKE '<team> — <kind> #%'): speaker x file attendance; "
                   "answer = the top speaker and their sessions; a tie at the top is declined",
    "temporal_count": "phrase_file_buckets ∩ store.files_in_period(recorded_date within the month); "
                      "undated files are excluded and reported in coverage",
}


def _phrase_files(sources: Sources, phrase: str) -> tuple[str, ...]:
    return tuple(sorted(sources.search.phrase_file_buckets(phrase, size=sources.bucket_size)))


def _count_files(sources: Sources, intent: Intent) -> Answer:
    assert intent.phrase is not None
    files = _phrase_files(sources, intent.phrase)
    return Answer(value=len(files), intent=intent)


def _list_files(sources: Sources, intent: Intent) -> Answer:
    assert intent.phrase is not None
    return Answer(value=_phrase_files(sources, intent.phrase), intent=intent)


def _count_events(sources: Sources, intent: Intent) -> Answer:
    assert intent.phrase is not None
    return Answer(value=sources.store.count_phrase_occurrences(intent.phrase), intent=intent)


def session_title_pattern(team: str, kind: str) -> str:
    """The LIKE pattern of one (team, kind) series' titles: ``"{team} — {kind} #%"``."""
    return f"{team} — {kind} #%"


def _speaker_top(sources: Sources, intent: Intent) -> Answer:
    assert intent.team is not None and intent.kind is not None
    if any(ch in "%_" for ch in intent.team + intent.kind):
        return declined("team or kind contains a LIKE wildcard (% or _); it would widen the title scope", intent)
    pattern = session_title_pattern(intent.team, intent.kind)
    ranked = sources.store.speaker_sessions(pattern)
    evidence = {"title_like": pattern, "speakers_in_scope": len(ranked)}
    if not ranked:
        return Answer(value=None, intent=intent, declined=f"no session title matches {pattern!r}", evidence=evidence)
    top = ranked[0]
    if len(ranked) > 1 and ranked[1].sessions == top.sessions:
        tied = sorted(r.speaker for r in ranked if r.sessions == top.sessions)
        return Answer(value=None, intent=intent, evidence=evidence,
                      declined=f"tie at the top ({', '.join(tied)}: {top.sessions} sessions each); not guessed")
    return Answer(value=SpeakerAnswer(name=top.speaker, count=top.sessions), intent=intent, evidence=evidence)


def month_period(year: int, month: int) -> tuple[date, date]:
    """First and last day of a month, both inclusive."""
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _temporal_count(sources: Sources, intent: Intent) -> Answer:
    assert intent.phrase is not None and intent.year is not None and intent.month is not None
    start, end = month_period(intent.year, intent.month)
    files = frozenset(_phrase_files(sources, intent.phrase))
    period = sources.store.files_in_period(start, end)
    inside = files & frozenset(period.files)
    evidence = {
        "period": [start.isoformat(), end.isoformat()],
        "phrase_files": len(files),
        "undated_files_excluded": len(period.undated),
        "phrase_files_undated": sorted(files & frozenset(period.undated)),
    }
    return Answer(value=len(inside), intent=intent, evidence=evidence)


_EXECUTORS: dict[IntentName, Callable[[Sources, Intent], Answer]] = {
    "count_files": _count_files,
    "list_files": _list_files,
    "count_events": _count_events,
    "speaker_top": _speaker_top,
    "temporal_count": _temporal_count,
}

# the slots each intent needs before it can run
REQUIRED_SLOTS: dict[IntentName, tuple[str, ...]] = {
    "count_files": ("phrase",),
    "list_files": ("phrase",),
    "count_events": ("phrase",),
    "speaker_top": ("team", "kind"),
    "temporal_count": ("phrase", "year", "month"),
}


def execute(intent: Intent, sources: Sources) -> Answer:
    """Run the intent's mechanism. Errors from the backend or store (a truncated bucket
    list above all) propagate: a count that might be wrong is never returned."""
    missing = [slot for slot in REQUIRED_SLOTS[intent.name] if getattr(intent, slot) in (None, "")]
    if missing:
        return declined(f"intent {intent.name} is missing {', '.join(missing)}", intent)
    if intent.month is not None and not 1 <= intent.month <= 12:
        return declined(f"month {intent.month} is not a month", intent)
    return _EXECUTORS[intent.name](sources, intent)
