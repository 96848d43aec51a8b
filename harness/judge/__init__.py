"""Gold turn ranges -> graded chunk judgements (qrels).

Turn -> chunk is by time overlap restricted to the chunk's own speaker: a chunk holds
only its speaker's words, while overlapping speech means another speaker's turn often
shares its time window, so without the restriction a neighbour's words would be
attributed to the chunk.

Coverage of a chunk is ``sum(gold contributions) / sum(all contributions)`` where a turn
of the chunk's speaker contributes ``words x (seconds of the turn inside the chunk /
turn duration)``. A zero-length turn contributes all its words when its instant lies
inside the chunk's closed interval. Spans of one file are unioned before grading.

A rank-scored query whose gold maps to no chunk with grade > 0 is dropped and counted
(``dropped_unjudgeable``), never scored.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.judge.policy import RelevancePolicy
from harness.model import Chunk, Meeting, Qrels, Query, Turn

__all__ = ["Judgements", "RelevancePolicy", "chunk_contributions", "coverage", "judge"]


@dataclass(frozen=True)
class Judgements:
    qrels: Qrels
    dropped_unjudgeable: tuple[str, ...]
    judged_queries: tuple[str, ...]

    @property
    def judged_documents(self) -> int:
        return sum(len(docs) for docs in self.qrels.judgements.values())


def _overlap(turn: Turn, start: float, end: float) -> float:
    """The share of the turn's duration that lies inside [start, end]."""
    if turn.duration <= 0.0:
        return 1.0 if start <= turn.start <= end else 0.0
    inside = min(turn.end, end) - max(turn.start, start)
    return max(0.0, inside) / turn.duration


class _SpeakerTimeline:
    """One file's turns per speaker, sorted by start, for overlap look-ups."""

    def __init__(self, turns: Iterable[Turn]) -> None:
        by_speaker: dict[str, list[Turn]] = defaultdict(list)
        for turn in turns:
            by_speaker[turn.speaker].append(turn)
        self._turns = {s: sorted(ts, key=lambda t: (t.start, t.end, t.index)) for s, ts in by_speaker.items()}
        self._starts = {s: [t.start for t in ts] for s, ts in self._turns.items()}
        self._longest = {s: max(t.duration for t in ts) for s, ts in self._turns.items()}

    def overlapping(self, speaker: str, start: float, end: float) -> list[Turn]:
        turns = self._turns.get(speaker, [])
        if not turns:
            return []
        starts = self._starts[speaker]
        lo = bisect.bisect_left(starts, start - self._longest[speaker])
        hi = bisect.bisect_right(starts, end)
        return [t for t in turns[lo:hi] if _overlap(t, start, end) > 0.0]


def chunk_contributions(chunk: Chunk, timeline: _SpeakerTimeline) -> dict[int, float]:
    """turn index -> words attributed to this chunk (speaker-restricted)."""
    if chunk.speaker is None:
        return {}
    return {
        t.index: t.words * _overlap(t, chunk.start, chunk.end)
        for t in timeline.overlapping(chunk.speaker, chunk.start, chunk.end)
    }


def coverage(contributions: dict[int, float], gold_turns: frozenset[int]) -> float:
    total = sum(contributions.values())
    if total <= 0.0:
        return 0.0
    return sum(w for i, w in contributions.items() if i in gold_turns) / total


def judge(
    queries: Sequence[Query],
    meetings: Sequence[Meeting],
    chunks: Sequence[Chunk],
    policy: RelevancePolicy | None = None,
) -> Judgements:
    """Graded qrels for every rank-scored query; unjudgeable ones dropped and counted."""
    policy = policy or RelevancePolicy()
    meetings_by_file = {m.file_uuid: m for m in meetings}
    chunks_by_file: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        if chunk.doc_type == "chunk":
            chunks_by_file[chunk.file_uuid].append(chunk)

    contributions_cache: dict[str, list[tuple[Chunk, dict[int, float]]]] = {}

    def contributions_of(file_uuid: str) -> list[tuple[Chunk, dict[int, float]]]:
        if file_uuid not in contributions_cache:
            meeting = meetings_by_file.get(file_uuid)
            if meeting is None:
                contributions_cache[file_uuid] = []
            else:
                timeline = _SpeakerTimeline(meeting.turns)
                contributions_cache[file_uuid] = [
                    (c, chunk_contributions(c, timeline))
                    for c in sorted(chunks_by_file.get(file_uuid, []), key=lambda c: c.chunk_index)
                ]
        return contributions_cache[file_uuid]

    judgements: dict[str, dict[str, int]] = {}
    dropped: list[str] = []
    for query in sorted(queries, key=lambda q: q.id):
        if query.scored_on != "rank":
            continue
        gold_by_file: dict[str, set[int]] = defaultdict(set)
        for span in query.gold:
            gold_by_file[span.file_uuid].update(range(span.start_turn, span.end_turn + 1))
        graded: dict[str, int] = {}
        for file_uuid in sorted(gold_by_file):
            gold = frozenset(gold_by_file[file_uuid])
            for chunk, contrib in contributions_of(file_uuid):
                grade = policy.grade(coverage(contrib, gold))
                if grade > 0:
                    graded[chunk.id] = grade
        if graded:
            judgements[query.id] = graded
        else:
            dropped.append(query.id)
    return Judgements(
        qrels=Qrels(judgements=judgements),
        dropped_unjudgeable=tuple(dropped),
        judged_queries=tuple(sorted(judgements)),
    )
