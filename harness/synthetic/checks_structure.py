"""Validator checks on the corpus's structure: manifest, ids, titles and dates, rosters, turn timings.

Each ``check_*`` takes the :class:`~harness.synthetic.checkkit.Context` and adds what it finds to
the :class:`~harness.synthetic.checkkit.Problems`; docs/synthetic.md describes each check.
"""

from __future__ import annotations

import re
from datetime import date
from itertools import pairwise

from harness.corpora.checks import id_problem, repeated
from harness.model import file_uuid_for
from harness.synthetic import vocab
from harness.synthetic.checkkit import Context, Problems
from harness.synthetic.formats import (
    CORPUS_NAME,
    FORMAT,
    LICENCE,
    MANIFEST,
    PLANTS,
    QUERIES,
    TIER,
    NativeMeeting,
    query_counts,
)

BACKCHANNEL_MAX_WORDS = 3
_MEETING_ID = re.compile(r"^m[0-9]{5,}$")
_QUERY_ID = re.compile(r"^(lookup-[0-9]{5}|multi-[0-9]{5}|agg-R[3-7]-[0-9]{4})$")


def check_manifest(ctx: Context, p: Problems) -> None:
    c = ctx.corpus
    man = c.manifest
    expected = {"format": FORMAT, "corpus": CORPUS_NAME, "tier": TIER, "licence": LICENCE}
    for key, value in expected.items():
        if getattr(man, key) != value:
            p.add(f"{MANIFEST}: {key} is {getattr(man, key)!r}, expected {value!r}")
    listed = dict(man.files)
    present = {*c.meeting_files, QUERIES, PLANTS}
    for rel in sorted(present - set(listed)):
        p.add(f"{rel} is present but not listed in {MANIFEST}")
    for rel in sorted(set(listed) - present):
        p.add(f"{rel} is listed in {MANIFEST} but missing")
    for rel in sorted(set(listed) & present):
        p.checked += 1
        if listed[rel] != c.file_sha256.get(rel):
            p.add(f"{rel}: sha256 {c.file_sha256.get(rel)} differs from the manifest's {listed[rel]}")
    if man.meetings != len(c.meetings):
        p.add(f"{MANIFEST} says {man.meetings} meetings, {len(c.meetings)} found")
    counted = query_counts([q.model_dump() for q in c.queries])
    if man.queries != counted:
        p.add(f"{MANIFEST} query counts {man.queries} differ from {QUERIES}: {counted}")
    try:
        first, last = (date.fromisoformat(d) for d in man.date_range)
        if first > last:
            p.add(f"{MANIFEST}: date_range {man.date_range} is reversed")
    except ValueError:
        p.add(f"{MANIFEST}: date_range {man.date_range} is not two ISO dates")


def check_ids(ctx: Context, p: Problems) -> None:
    c = ctx.corpus
    for rel in c.meeting_files:
        stem = rel.rsplit("/", 1)[-1].removesuffix(".json")
        if stem not in ctx.meetings:
            p.add(f"{rel} holds a meeting whose id is not {stem}")
    for kind, ids in (
        ("meeting id", [m.meeting_id for m in c.meetings]),
        ("file_uuid", [m.file_uuid for m in c.meetings]),
        ("title", [m.title for m in c.meetings]),
        ("query id", [q.id for q in c.queries]),
        ("plant id", [pl.id for pl in c.plants]),
    ):
        p.checked += len(ids)
        if kind != "title":  # the id rules every reader applies (harness.corpora.checks), state build too
            for value in ids:
                problem = id_problem(kind, value)
                if problem:
                    p.add(problem)
        for problem in repeated(kind, ids):
            p.add(problem)
    for m in c.meetings:
        if not _MEETING_ID.match(m.meeting_id):
            p.add(f"meeting id {m.meeting_id!r} does not look like m00001")
        if m.file_uuid != file_uuid_for(CORPUS_NAME, m.meeting_id):
            p.add(f"{m.meeting_id}: file_uuid {m.file_uuid} is not file_uuid_for({CORPUS_NAME!r}, {m.meeting_id!r})")
    for q in c.queries:
        if not _QUERY_ID.match(q.id):
            p.add(f"query id {q.id!r} does not look like lookup-00001, multi-00001 or agg-R3-0001")
        for ref in [*q.closure, *(s.meeting_id for s in q.gold)]:
            if ref not in ctx.meetings:
                p.add(f"query {q.id} refers to meeting {ref}, which does not exist")
    for pl in c.plants:
        for mention in pl.mentions:
            host = ctx.meetings.get(mention.meeting_id)
            if host is None or not 0 <= mention.turn < len(host.turns):
                p.add(f"plant {pl.id} records a mention at {mention.meeting_id} turn {mention.turn}, "
                      "which does not exist")


def check_titles_dates(ctx: Context, p: Problems) -> None:
    man = ctx.corpus.manifest
    first, last = (date.fromisoformat(d) for d in man.date_range)
    series: dict[tuple[str, str], list[tuple[int, date, str]]] = {}
    for m in ctx.corpus.meetings:
        p.checked += 1
        if m.team not in vocab.TEAMS or m.kind not in vocab.KINDS:
            p.add(f"{m.meeting_id}: unknown team {m.team!r} or kind {m.kind!r}")
        expected = f"{m.team} — {m.kind} #{m.series_number}"
        if m.title != expected or m.series_number < 1:
            p.add(f"{m.meeting_id}: title {m.title!r}, expected {expected!r}")
        try:
            day = date.fromisoformat(m.recorded_date)
        except ValueError:
            p.add(f"{m.meeting_id}: recorded_date {m.recorded_date!r} is not an ISO date")
            continue
        if day.isoformat() != m.recorded_date or not first <= day <= last:
            p.add(f"{m.meeting_id}: recorded_date {m.recorded_date} is outside "
                  f"{man.date_range[0]}..{man.date_range[1]}")
        series.setdefault((m.team, m.kind), []).append((m.series_number, day, m.meeting_id))
    for (team, kind), sessions in sorted(series.items()):
        sessions.sort()
        for (n1, d1, id1), (n2, d2, id2) in pairwise(sessions):
            if n1 == n2 or d1 >= d2:
                p.add(f"{team} — {kind}: #{n1} ({id1}, {d1}) and #{n2} ({id2}, {d2}) are not in date order")


def check_rosters(ctx: Context, p: Problems) -> None:
    for m in ctx.corpus.meetings:
        p.checked += 1
        spoken: dict[str, None] = {}
        for t in m.turns:
            spoken.setdefault(t.speaker, None)
        if list(m.roster) != list(spoken):
            p.add(f"{m.meeting_id}: roster {list(m.roster)} is not the speakers in order of first turn {list(spoken)}")
        elif len(m.roster) < 3:
            p.add(f"{m.meeting_id}: roster has {len(m.roster)} people, expected at least 3")


def check_turn_timings(ctx: Context, p: Problems) -> None:
    for m in ctx.corpus.meetings:
        p.checked += 1
        problem = _timing_problem(m)
        if problem:
            p.add(f"{m.meeting_id}: {problem}")


def _timing_problem(m: NativeMeeting) -> str | None:
    turns = m.turns
    if not turns:
        return "no turns"
    for i, t in enumerate(turns):
        if not t.text.strip() or not t.speaker.strip():
            return f"turn {i} has an empty text or speaker"
        if not 0 <= t.start < t.end:
            return f"turn {i} runs from {t.start} to {t.end}"
        if round(t.start, 2) != t.start or round(t.end, 2) != t.end:
            return f"turn {i} times {t.start}/{t.end} have more than two decimals"
    keys = [(t.start, t.end, t.speaker) for t in turns]
    for i in range(1, len(keys)):
        if keys[i] <= keys[i - 1]:
            return f"turns {i - 1} and {i} are not in (start, end, speaker) order"
    last_end: dict[str, tuple[float, int]] = {}
    for i, t in enumerate(turns):
        prev = last_end.get(t.speaker)
        if prev is not None and t.start < prev[0]:
            return (f"{t.speaker} overlaps themselves: turn {i} starts at {t.start} "
                    f"before turn {prev[1]} ends at {prev[0]}")
        last_end[t.speaker] = (max(t.end, prev[0]) if prev else t.end, i)
    if not any(a.start == b.start and a.speaker != b.speaker for a, b in pairwise(turns)):
        return "no two speakers share a start time"
    if not _has_backchannel(m):
        return f"no backchannel (a turn of at most {BACKCHANNEL_MAX_WORDS} words inside another speaker's turn)"
    return None


def _has_backchannel(m: NativeMeeting) -> bool:
    turns = m.turns
    for i, t in enumerate(turns):
        if len(t.text.split()) > BACKCHANNEL_MAX_WORDS:
            continue
        for j in range(i - 1, max(-1, i - 6), -1):
            host = turns[j]
            if host.speaker != t.speaker and host.start < t.start and t.end < host.end:
                return True
    return False
