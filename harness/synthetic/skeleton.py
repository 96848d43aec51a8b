"""The corpus skeleton: people, teams, meeting series, dates and who attends what.

A *series* is every session of one (team, kind), titled "{Team} — {kind} #{n}" with ``n``
counting sessions in date order. About two series in five are short (4–7 sessions, the
"focus" series): they are what makes a whole-series question (R6) closable inside a
200-meeting budget. The rest run 8–30 sessions.

Attendance is built so every series has a unique most-frequent attendee: its ``lead``
attends every session and everyone else misses at least one, so R6's answer is unique by
construction (and re-checked from the written turns by the validator).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta

from harness.errors import UsageError
from harness.synthetic import vocab
from harness.synthetic.formats import DATE_FIRST, DATE_LAST, MIN_MEETINGS
from harness.synthetic.seeds import rng_for

TEAM_SIZE = 8
EXTERNALS = 16
MEAN_SERIES_SIZE = 14
FOCUS_SIZES = (4, 7)
REGULAR_SIZES = (8, 30)
MIN_ATTENDEES = 3


@dataclass(frozen=True)
class Person:
    name: str
    first: str
    team: str | None  # None: a guest from outside every team


@dataclass(frozen=True)
class Series:
    index: int
    team: str
    kind: str
    focus: bool
    lead: str
    meeting_ids: tuple[str, ...]  # in session order (#1, #2, ...)


@dataclass(frozen=True)
class MeetingPlan:
    meeting_id: str
    series_index: int
    team: str
    kind: str
    series_number: int
    recorded_date: date
    attendees: tuple[str, ...]  # invitation order; the roster is first-speaking order

    @property
    def title(self) -> str:
        return f"{self.team} — {self.kind} #{self.series_number}"


@dataclass(frozen=True)
class Skeleton:
    seed: int
    people: tuple[Person, ...]
    series: tuple[Series, ...]
    meetings: tuple[MeetingPlan, ...]  # sorted by meeting_id

    def first_name(self) -> dict[str, str]:
        return {p.name: p.first for p in self.people}

    def team_of(self) -> dict[str, str | None]:
        return {p.name: p.team for p in self.people}


def build_skeleton(seed: int, n_meetings: int) -> Skeleton:
    if n_meetings < MIN_MEETINGS:
        raise UsageError(f"--meetings {n_meetings}: at least {MIN_MEETINGS} are needed to plant every class")
    rng = rng_for(seed, "skeleton")
    people, members = _people(rng)
    pairs = _series_pairs(rng)
    n_series = min(len(pairs), max(3, round(n_meetings / MEAN_SERIES_SIZE)))
    focus = [i % 5 in (0, 2) for i in range(n_series)]
    drawn = [rng.randint(*FOCUS_SIZES) if f else rng.randint(*REGULAR_SIZES) for f in focus]
    sizes = _fit_sizes(drawn, focus, n_meetings)

    drafts = []
    for i, ((team, kind), size) in enumerate(zip(pairs, sizes, strict=False)):
        srng = rng_for(seed, "series", team, kind)
        dates = _session_dates(srng, size, focus[i])
        guests_pool = [p.name for p in people if p.team != team]
        lead, attendance = _attendance(srng, members[team], guests_pool, size)
        drafts.append((i, team, kind, focus[i], lead, dates, attendance))

    ordered = sorted(
        (dates[n], team, kind, i, n)
        for i, team, kind, _f, _lead, dates, _att in drafts
        for n in range(len(dates))
    )
    width = max(5, len(str(len(ordered))))
    ids: dict[tuple[int, int], str] = {}
    for k, (_d, _team, _kind, i, n) in enumerate(ordered, start=1):
        ids[(i, n)] = f"m{k:0{width}d}"

    series: list[Series] = []
    meetings: list[MeetingPlan] = []
    for i, team, kind, is_focus, lead, dates, attendance in drafts:
        series_ids = tuple(ids[(i, n)] for n in range(len(dates)))
        series.append(Series(i, team, kind, is_focus, lead, series_ids))
        for n, meeting_id in enumerate(series_ids):
            meetings.append(MeetingPlan(meeting_id, i, team, kind, n + 1, dates[n], attendance[n]))
    meetings.sort(key=lambda m: m.meeting_id)
    return Skeleton(seed, tuple(people), tuple(series), tuple(meetings))


def _people(rng: random.Random) -> tuple[list[Person], dict[str, list[str]]]:
    firsts = list(vocab.FIRST_NAMES)
    lasts = list(vocab.LAST_NAMES)
    rng.shuffle(firsts)
    rng.shuffle(lasts)
    people: list[Person] = []
    members: dict[str, list[str]] = {}
    used: set[str] = set()
    k = 0
    groups: list[str | None] = [*vocab.TEAMS, None]
    for team in groups:
        count = TEAM_SIZE if team is not None else EXTERNALS
        firsts_here: set[str] = set()
        names: list[str] = []
        while len(names) < count:
            first = firsts[k % len(firsts)]
            last = lasts[(k * 7 + k // len(firsts)) % len(lasts)]
            k += 1
            name = f"{first} {last}"
            if name in used or first in firsts_here:
                continue
            used.add(name)
            firsts_here.add(first)
            names.append(name)
            people.append(Person(name, first, team))
        if team is not None:
            members[team] = names
    return people, members


def _series_pairs(rng: random.Random) -> list[tuple[str, str]]:
    """(team, kind) pairs interleaved across teams, so any prefix spreads over teams."""
    teams = list(vocab.TEAMS)
    rng.shuffle(teams)
    per_team = {}
    for team in teams:
        kinds = list(vocab.KINDS)
        rng.shuffle(kinds)
        per_team[team] = kinds
    return [(team, per_team[team][r]) for r in range(len(vocab.KINDS)) for team in teams]


def _fit_sizes(drawn: list[int], focus: list[bool], total: int) -> list[int]:
    """The drawn sizes adjusted (regular series first) until they sum to ``total``."""
    sizes = list(drawn)
    regular = [i for i, f in enumerate(focus) if not f] or list(range(len(sizes)))
    k = 0
    while sum(sizes) < total:
        sizes[regular[k % len(regular)]] += 1
        k += 1
    floors = [(REGULAR_SIZES[0], regular), (3, list(range(len(sizes))))]
    for floor, order in floors:
        k = 0
        stuck = 0
        while sum(sizes) > total and stuck < len(order):
            i = order[k % len(order)]
            if sizes[i] > floor:
                sizes[i] -= 1
                stuck = 0
            else:
                stuck += 1
            k += 1
    if sum(sizes) != total:
        raise UsageError(f"cannot lay out {total} meetings in {len(sizes)} series")
    return sizes


def _session_dates(rng: random.Random, size: int, focus: bool) -> list[date]:
    span_days = (DATE_LAST - DATE_FIRST).days
    cadence = rng.choice((7, 14)) if focus or size <= 24 else 14
    length = (size - 1) * cadence + 4
    if length > span_days:
        cadence = 7
        length = (size - 1) * cadence + 4
    if length > span_days:
        raise UsageError(f"a series of {size} sessions does not fit between {DATE_FIRST} and {DATE_LAST}")
    base = DATE_FIRST + timedelta(days=rng.randint(0, span_days - length))
    dates = []
    for n in range(size):
        day = base + timedelta(days=n * cadence + rng.randint(0, 2))
        if day.weekday() == 5:
            day += timedelta(days=2)
        elif day.weekday() == 6:
            day += timedelta(days=1)
        dates.append(day)
    return dates


def _attendance(
    rng: random.Random, members: list[str], guests_pool: list[str], size: int
) -> tuple[str, list[tuple[str, ...]]]:
    """Who attends each session: the lead always, everyone else at most ``size - 1`` times."""
    core = rng.sample(members, rng.randint(4, 6))
    lead = core[0]
    guests = rng.sample(guests_pool, rng.randint(0, 2))
    sessions: list[list[str]] = [[lead] for _ in range(size)]
    counts = {name: 0 for name in [*core, *guests]}
    counts[lead] = size
    for name in [*core[1:], *guests]:
        p = rng.randint(50, 85) if name in core else rng.randint(10, 30)
        present = [rng.randint(1, 100) <= p for _ in range(size)]
        if all(present):
            present[rng.randrange(size)] = False
        for n, here in enumerate(present):
            if here:
                sessions[n].append(name)
                counts[name] += 1
    others = [m for m in members if m not in counts]
    for n in range(size):
        candidates = [c for c in [*core[1:], *guests, *others] if c not in sessions[n]]
        while len(sessions[n]) < MIN_ATTENDEES:
            eligible = [c for c in candidates if counts.get(c, 0) <= size - 2]
            if not eligible:
                eligible = [g for g in guests_pool if g not in counts]
                candidates.extend(eligible)
            pick = eligible[rng.randrange(len(eligible))]
            candidates.remove(pick)
            sessions[n].append(pick)
            counts[pick] = counts.get(pick, 0) + 1
    return lead, [tuple(s) for s in sessions]
