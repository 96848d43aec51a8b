"""Aggregation answers and closures recomputed from written text: one definition, used by
the validator (to check what the generator stored) and by selection (to restate answers
over the selected meetings).

* R3: files whose turns mention the phrase; answer = how many.
* R4: the same files; answer = their file_uuids, sorted.
* R5: occurrences of the phrase summed over every turn; closure = files mentioning it.
* R6: sessions = meetings of the query's team and kind; a person attended a session when
  they speak in it; answer = the unique person with most sessions and that count.
* R7: files mentioning the phrase whose recorded date falls in the month; closure = every
  file mentioning it, in the month or not (the out-of-month ones decide that an
  unfiltered count would be wrong).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.model import file_uuid_for
from harness.synthetic.formats import (
    CORPUS_NAME,
    RULE_COUNT_EVENTS,
    RULE_COUNT_FILES,
    RULE_LIST_FILES,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
    NativeMeeting,
    NativeQuery,
)
from harness.synthetic.textscan import Occurrences


@dataclass(frozen=True)
class Recomputed:
    answer: Any
    closure: tuple[str, ...]
    problem: str | None = None  # why the text cannot support a unique answer
    outside_period: int = 0  # R7: files mentioning the phrase outside the month


def recompute(query: NativeQuery, meetings: Sequence[NativeMeeting], occ: Occurrences) -> Recomputed:
    rule = _RULES.get(query.rule or "")
    if rule is None:
        return Recomputed(None, (), f"unknown rule {query.rule!r}")
    return rule(query, meetings, occ)


def _phrase_files(query: NativeQuery, occ: Occurrences) -> tuple[str, ...] | None:
    return tuple(occ.files(query.phrase)) if query.phrase else None


def _count_files(query: NativeQuery, meetings: Sequence[NativeMeeting], occ: Occurrences) -> Recomputed:
    files = _phrase_files(query, occ)
    return Recomputed(None, (), "no phrase to count") if files is None else Recomputed(len(files), files)


def _list_files(query: NativeQuery, meetings: Sequence[NativeMeeting], occ: Occurrences) -> Recomputed:
    files = _phrase_files(query, occ)
    if files is None:
        return Recomputed(None, (), "no phrase to count")
    return Recomputed(sorted(file_uuid_for(CORPUS_NAME, f) for f in files), files)


def _count_events(query: NativeQuery, meetings: Sequence[NativeMeeting], occ: Occurrences) -> Recomputed:
    files = _phrase_files(query, occ)
    if files is None or not query.phrase:
        return Recomputed(None, (), "no phrase to count")
    return Recomputed(occ.total(query.phrase), files)


def _temporal(query: NativeQuery, meetings: Sequence[NativeMeeting], occ: Occurrences) -> Recomputed:
    files = _phrase_files(query, occ)
    if files is None:
        return Recomputed(None, (), "no phrase to count")
    if not query.month:
        return Recomputed(None, files, "no month to filter on")
    dates = {m.meeting_id: m.recorded_date for m in meetings}
    inside = [f for f in files if dates[f][:7] == query.month]
    return Recomputed(len(inside), files, None, len(files) - len(inside))


def _speaker_top(query: NativeQuery, meetings: Sequence[NativeMeeting], occ: Occurrences) -> Recomputed:
    sessions = [m for m in meetings if m.team == query.team and m.kind == query.kind]
    if not sessions:
        return Recomputed(None, (), f"no sessions of {query.kind!r} for {query.team!r}")
    attended: Counter[str] = Counter()
    for m in sessions:
        attended.update({t.speaker for t in m.turns})
    ranked = sorted(attended.items(), key=lambda kv: (-kv[1], kv[0]))
    closure = tuple(sorted(m.meeting_id for m in sessions))
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return Recomputed(None, closure, f"tie for most sessions: {ranked[0][0]} and {ranked[1][0]} ({ranked[0][1]})")
    name, count = ranked[0]
    return Recomputed({"count": count, "name": name}, closure)


_RULES: dict[str, Callable[[NativeQuery, Sequence[NativeMeeting], Occurrences], Recomputed]] = {
    RULE_COUNT_FILES: _count_files,
    RULE_LIST_FILES: _list_files,
    RULE_COUNT_EVENTS: _count_events,
    RULE_SPEAKER_TOP: _speaker_top,
    RULE_TEMPORAL: _temporal,
}
