"""What is planted where: gold known by construction, decided before any text is written.

Rules (docs/synthetic.md, "Planting"):

* lookup: each meeting carries 0, 1 or 2 facts ``"{fact about a subject}"`` said once by
  one attendee, after another attendee asks about the subject. The subject (``the {area}
  {artifact}``) is also mentioned, neutrally, in 0–3 other meetings of the same team:
  distractors that share the query's words but not its answer.
* multi_file: each series discusses 1–3 topics, each in 2–4 of its sessions and nowhere
  else. Queries name the series by team and kind (words that live in titles) or by an
  attendee (a word that lives in the roster).
* aggregation: markers ``the {Codename} {Codename} {noun}`` planted for R3/R4/R5/R7, most
  inside one series (a closure of 2–7 meetings), some across several series (closures a
  200-meeting budget cannot afford: the full corpus has them, a selection drops them). R6
  needs no marker: its closure is the whole series.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from harness.synthetic import vocab
from harness.synthetic.formats import (
    RULE_COUNT_EVENTS,
    RULE_COUNT_FILES,
    RULE_LIST_FILES,
    RULE_TEMPORAL,
)
from harness.synthetic.seeds import rng_for
from harness.synthetic.skeleton import MeetingPlan, Series, Skeleton

AREAS_PER_TEAM = 20
# Which marker rules a series plants for sure, by series index: every corpus of three or
# more series gets every rule, however small.
ROTATION: tuple[tuple[str, ...], ...] = (
    (RULE_COUNT_FILES, RULE_LIST_FILES),
    (RULE_COUNT_EVENTS, RULE_TEMPORAL),
    (RULE_LIST_FILES, RULE_COUNT_EVENTS),
    (RULE_COUNT_FILES, RULE_TEMPORAL),
)
MARKER_RULES = (RULE_COUNT_FILES, RULE_LIST_FILES, RULE_COUNT_EVENTS, RULE_TEMPORAL)
EXTRA_RULE_PERCENT = 25
REGULAR_R6_PERCENT = 25
CROSS_SERIES_EVERY = 250  # one cross-series marker per rule per this many meetings
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine")


@dataclass(frozen=True)
class LookupPlan:
    meeting_id: str
    slot: int
    subject: str
    fact_type: str
    fact: str
    value: str
    speaker: str
    asker: str
    distractors: tuple[str, ...]


@dataclass(frozen=True)
class TopicPlan:
    series_index: int
    slot: int
    topic: str
    meeting_ids: tuple[str, ...]
    conclusions: tuple[str, ...]
    person: str  # attends every gold meeting (the series lead)


@dataclass(frozen=True)
class MarkerPlan:
    rule: str
    key: str  # stable order key for ids
    phrase: str
    mentions: tuple[tuple[str, int], ...]  # (meeting_id, mention turns), sorted
    double_turn: str | None  # R5: the meeting where one turn says the phrase twice
    verb: tuple[str, str] | None
    month: str | None  # R7: "YYYY-MM"


@dataclass(frozen=True)
class SpeakerTopPlan:
    series_index: int


@dataclass(frozen=True)
class Plan:
    lookups: tuple[LookupPlan, ...]
    topics: tuple[TopicPlan, ...]
    markers: tuple[MarkerPlan, ...]
    speaker_tops: tuple[SpeakerTopPlan, ...]


class Phrases:
    """Hands out phrases that are unique across the corpus."""

    def __init__(self, seed: int) -> None:
        rng = rng_for(seed, "phrases")
        pairs = [(a, b) for a in vocab.CODENAME_A for b in vocab.CODENAME_B]
        rng.shuffle(pairs)
        self._codenames = pairs
        self._rng = rng
        self._team_pools: dict[str, list[str]] = {}
        for team in vocab.TEAMS:
            areas = rng.sample(vocab.AREAS, AREAS_PER_TEAM)
            pool = [f"the {area} {artifact}" for area in areas for artifact in vocab.ARTIFACTS]
            rng.shuffle(pool)
            self._team_pools[team] = pool
        self._used: set[str] = set()

    def marker(self) -> str:
        if not self._codenames:
            raise RuntimeError("ran out of codename pairs: the corpus is larger than the vocabulary allows")
        a, b = self._codenames.pop()
        return f"the {a} {b} {self._rng.choice(vocab.MARKER_NOUNS)}"

    def subject(self, team: str) -> str:
        pool = self._team_pools[team]
        while pool:
            phrase = pool.pop()
            if phrase not in self._used:
                self._used.add(phrase)
                return phrase
        raise RuntimeError(f"ran out of subjects for team {team}: the corpus is larger than the vocabulary allows")


# What a regime may plant its own way (harness.synthetic.archive): lookups, and multi-file topics.
LookupPlanner = Callable[[Skeleton, "Phrases"], list[LookupPlan]]
TopicPlanner = Callable[[Skeleton, "Phrases"], list[TopicPlan]]


def build_plan(skeleton: Skeleton, lookups_by: LookupPlanner | None = None,
               topics_by: TopicPlanner | None = None) -> Plan:
    """The plan; ``lookups_by``/``topics_by`` replace the easy regime's lookups and topics."""
    seed = skeleton.seed
    phrases = Phrases(seed)
    by_id = {m.meeting_id: m for m in skeleton.meetings}
    team_meetings: dict[str, list[str]] = {}
    for m in skeleton.meetings:
        team_meetings.setdefault(m.team, []).append(m.meeting_id)

    lookups: list[LookupPlan] = [] if lookups_by is None else lookups_by(skeleton, phrases)
    for m in skeleton.meetings if lookups_by is None else ():
        rng = rng_for(seed, "lookups", m.meeting_id)
        roll = rng.randint(1, 100)
        count = 0 if roll <= 40 else 1 if roll <= 85 else 2
        for slot in range(count):
            lookups.append(_lookup(rng, m, slot, phrases.subject(m.team), team_meetings[m.team]))

    topics: list[TopicPlan] = []
    markers: list[MarkerPlan] = []
    speaker_tops: list[SpeakerTopPlan] = []
    for series in skeleton.series:
        rng = rng_for(seed, "series-plants", series.team, series.kind)
        sessions = [by_id[i] for i in series.meeting_ids]
        n_topics = 0 if topics_by is not None else 2 if series.focus else rng.randint(1, 3)
        for slot in range(n_topics if len(sessions) >= 2 else 0):
            k = rng.randint(2, min(4, len(sessions)))
            chosen = sorted(rng.sample(series.meeting_ids, k))
            topics.append(
                TopicPlan(series.index, slot, phrases.subject(series.team), tuple(chosen),
                          tuple(rng.sample(vocab.CONCLUSIONS, k)), series.lead)
            )
        rules = list(ROTATION[series.index % len(ROTATION)])
        rules += [r for r in MARKER_RULES if r not in rules and rng.randint(1, 100) <= EXTRA_RULE_PERCENT]
        for rule in rules:
            marker = _series_marker(rng, rule, series, sessions, phrases.marker())
            if marker is not None:
                markers.append(marker)
        if len(sessions) >= 3 and (series.focus or rng.randint(1, 100) <= REGULAR_R6_PERCENT):
            speaker_tops.append(SpeakerTopPlan(series.index))
    if topics_by is not None:
        topics = topics_by(skeleton, phrases)

    rng = rng_for(seed, "cross-series")
    for rule in MARKER_RULES:
        for k in range(max(1, len(skeleton.meetings) // CROSS_SERIES_EVERY)):
            marker = _cross_marker(rng, rule, f"cross-{k:04d}", skeleton, phrases.marker())
            if marker is not None:
                markers.append(marker)
    return Plan(tuple(lookups), tuple(topics), tuple(markers), tuple(speaker_tops))


# fact type -> (draws the value, the fact sentence): the value is what the query asks for
FACTS: dict[str, tuple[Callable[[random.Random, MeetingPlan, str], str], str]] = {
    "deadline": (lambda rng, m, sp: f"{rng.randint(1, 28)} {rng.choice(vocab.MONTHS)}",
                 "the deadline for {subject} is {value}"),
    "budget": (lambda rng, m, sp: f"{rng.randint(8, 240) * 500:,} euros",
               "the budget for {subject} is capped at {value}"),
    "owner": (lambda rng, m, sp: rng.choice([a for a in m.attendees if a != sp]),
              "{value} will own {subject} from here on"),
    "vendor": (lambda rng, m, sp: rng.choice(vocab.VENDORS), "we signed with {value} for {subject}"),
    "metric": (lambda rng, m, sp: f"{rng.randint(2, 19)}.{rng.choice((0, 5))} percent",
               "{subject} cut the error rate to {value}"),
    "risk": (lambda rng, m, sp: rng.choice(vocab.RISKS), "the biggest risk with {subject} is {value}"),
    "headcount": (lambda rng, m, sp: rng.choice(NUMBER_WORDS), "we need {value} more people for {subject}"),
}
FACT_TYPES = tuple(FACTS)


def _lookup(rng: random.Random, m: MeetingPlan, slot: int, subject: str, team_ids: list[str]) -> LookupPlan:
    speaker, asker = rng.sample(m.attendees, 2)
    fact_type = rng.choice(FACT_TYPES)
    draw, sentence = FACTS[fact_type]
    value = draw(rng, m, speaker)
    fact = sentence.format(subject=subject, value=value)
    others = [i for i in team_ids if i != m.meeting_id]
    distractors = tuple(sorted(rng.sample(others, min(len(others), rng.randint(0, 3)))))
    return LookupPlan(m.meeting_id, slot, subject, fact_type, fact, value, speaker, asker, distractors)


def _mention_turns(rng: random.Random, rule: str) -> int:
    if rule == RULE_COUNT_EVENTS:
        return rng.randint(1, 3)
    return 2 if rng.randint(1, 100) <= 25 else 1


def _finish(
    rng: random.Random, rule: str, key: str, phrase: str, meeting_ids: list[str], month: str | None
) -> MarkerPlan:
    mentions = [(i, _mention_turns(rng, rule)) for i in sorted(meeting_ids)]
    double = None
    verb = None
    if rule == RULE_COUNT_EVENTS:
        verb = rng.choice(vocab.R5_VERBS)
        double = rng.choice(sorted(meeting_ids))
        # at least one file says it more than once (a turn with two counts as two)
    return MarkerPlan(rule, key, phrase, tuple(mentions), double, verb, month)


def _series_marker(
    rng: random.Random, rule: str, series: Series, sessions: list[MeetingPlan], phrase: str
) -> MarkerPlan | None:
    key = f"s{series.index:04d}-{rule}"
    ids = [m.meeting_id for m in sessions]
    if rule != RULE_TEMPORAL:
        k = rng.randint(2, min(5, len(ids))) if len(ids) >= 2 else 1
        return _finish(rng, rule, key, phrase, rng.sample(ids, k), None)
    months: dict[str, list[str]] = {}
    for m in sessions:
        months.setdefault(_month(m), []).append(m.meeting_id)
    if len(months) < 2:
        return None
    month = rng.choice(sorted(months))
    inside = months[month]
    outside = [i for i in ids if i not in inside]
    chosen = rng.sample(inside, rng.randint(1, min(3, len(inside))))
    chosen += rng.sample(outside, rng.randint(1, min(3, len(outside))))
    return _finish(rng, rule, key, phrase, chosen, month)


def _cross_marker(rng: random.Random, rule: str, key: str, skeleton: Skeleton, phrase: str) -> MarkerPlan | None:
    if rule != RULE_TEMPORAL:
        picked_series = rng.sample(skeleton.series, min(len(skeleton.series), rng.randint(2, 3)))
        chosen: list[str] = []
        for series in picked_series:
            chosen += rng.sample(series.meeting_ids, min(len(series.meeting_ids), rng.randint(2, 3)))
        return _finish(rng, rule, key, phrase, chosen, None)
    months: dict[str, list[str]] = {}
    for m in skeleton.meetings:
        months.setdefault(_month(m), []).append(m.meeting_id)
    month = rng.choice(sorted(months))
    inside = months[month]
    outside = [m.meeting_id for m in skeleton.meetings if _month(m) != month]
    chosen = rng.sample(inside, rng.randint(1, min(3, len(inside))))
    chosen += rng.sample(outside, rng.randint(2, min(4, len(outside))))
    return _finish(rng, rule, key, phrase, chosen, month)


def _month(m: MeetingPlan) -> str:
    return f"{m.recorded_date.year:04d}-{m.recorded_date.month:02d}"
