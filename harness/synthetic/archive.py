"""The archive regime's planting: standing items stated again with other values, and topics
several series discuss (:mod:`harness.synthetic.regime`).

* :func:`sibling_lookups` — per series, a few *standing items* (``the {area} {artifact}``),
  each with one fact type, stated in 5–9 of the series' sessions with a different value
  each time ("the budget for S is capped at 38,500 euros" in one session, "... 41,000
  euros" in another) and mentioned without a value in two to four more. Every statement is
  a lookup query of its own; its question tells the session apart by date or by who
  attended (:func:`harness.synthetic.queries.archive_lookup_text`), never by a phrase that
  only that session says. The query's closure is every session stating the item: the
  meetings the question's cue has to tell apart.
* :func:`shared_topics` — a multi-file topic discussed by two or three series (2–4 sessions
  each); one query per (topic, series), cued by the series' team and kind. Closure: every
  session that discusses the topic, in any series.

Draws come from streams of their own (``archive-lookups``, ``archive-topics``), so the
easy regime's streams are untouched.
"""

from __future__ import annotations

from collections import defaultdict

from harness.synthetic import vocab
from harness.synthetic.planting import FACT_TYPES, FACTS, NUMBER_WORDS, LookupPlan, Phrases, TopicPlan
from harness.synthetic.queries import day_label
from harness.synthetic.seeds import rng_for
from harness.synthetic.skeleton import MeetingPlan, Skeleton

STANDING_ITEMS_PER_SESSION = 0.2  # standing items a series carries, per session it has
STATING_SESSIONS = (5, 9)  # sessions that state a standing item, each with its own value
MENTIONING_SESSIONS = (2, 4)  # further sessions that mention it with no value
TOPIC_SERIES = (2, 3)  # series that discuss one shared topic
TOPIC_SESSIONS = (2, 4)  # sessions of each of them that discuss it


def date_label(m: MeetingPlan) -> str:
    """``2024-03-12`` -> ``12 March 2024``: how a person names a meeting's day."""
    return day_label(m.recorded_date.isoformat())


def _values(fact_type: str, people: int) -> int:
    """How many different values a fact type can take in a series of ``people`` people."""
    return {"owner": people, "headcount": len(NUMBER_WORDS), "risk": len(vocab.RISKS),
            "vendor": len(vocab.VENDORS)}.get(fact_type, 30)


def _free_value(rng_value: object, m: MeetingPlan, fact_type: str) -> bool:
    """A deadline value never equals the session's own day (a date-cued question would contain it)."""
    return not (fact_type == "deadline" and rng_value == date_label(m).rsplit(" ", 1)[0])


def sibling_lookups(skeleton: Skeleton, phrases: Phrases) -> list[LookupPlan]:
    by_id = {m.meeting_id: m for m in skeleton.meetings}
    slots: dict[str, int] = defaultdict(int)
    out: list[LookupPlan] = []
    for series in skeleton.series:
        ids = list(series.meeting_ids)
        if len(ids) < 2:
            continue
        rng = rng_for(skeleton.seed, "archive-lookups", series.team, series.kind)
        people = sorted({a for i in ids for a in by_id[i].attendees})
        for _ in range(max(1, round(len(ids) * STANDING_ITEMS_PER_SESSION))):
            subject = phrases.subject(series.team)
            fact_type = rng.choice(FACT_TYPES)
            k = rng.randint(min(STATING_SESSIONS[0], len(ids)), min(STATING_SESSIONS[1], len(ids)))
            # a fact type with too few values for k different ones (owners: the series' people) is drawn again
            roomy = [t for t in FACT_TYPES if _values(t, len(people)) >= k + 3]
            if fact_type not in roomy:
                fact_type = rng.choice(roomy)
            draw, sentence = FACTS[fact_type]
            stating = sorted(rng.sample(ids, k))
            rest = [i for i in ids if i not in stating]
            mentioning = tuple(sorted(rng.sample(rest, min(len(rest), rng.randint(*MENTIONING_SESSIONS)))))
            values: set[str] = set()
            for n, meeting_id in enumerate(stating):
                m = by_id[meeting_id]
                speaker, asker = rng.sample(m.attendees, 2)
                for _attempt in range(100):
                    # an owner may be anyone of the series, not only someone in the room
                    value = (people[rng.randrange(len(people))] if fact_type == "owner"
                             else draw(rng, m, speaker))
                    if value not in values and value != speaker and _free_value(value, m, fact_type):
                        break
                else:  # pragma: no cover - every fact type has far more values than sessions
                    raise RuntimeError(f"no fresh {fact_type} value for {subject} in {meeting_id}")
                values.add(value)
                out.append(LookupPlan(meeting_id, slots[meeting_id], subject, fact_type,
                                      sentence.format(subject=subject, value=value), value, speaker, asker,
                                      mentioning if n == 0 else ()))
                slots[meeting_id] += 1
    return out


def shared_topics(skeleton: Skeleton, phrases: Phrases) -> list[TopicPlan]:
    """Topics each discussed by 2–3 series; one plan per (topic, series)."""
    rng = rng_for(skeleton.seed, "archive-topics")
    demand: list[int] = []  # topic slots per series, in series order
    for series in skeleton.series:
        n = 2 if series.focus else rng.randint(1, 3)
        demand.append(n if len(series.meeting_ids) >= 2 else 0)
    slots = [(s, n) for s, d in zip(skeleton.series, demand, strict=True) for n in range(d)]
    order = list(range(len(slots)))
    rng.shuffle(order)
    # group the shuffled slots into topics of 2-3 series each, never one series twice in a topic
    groups: list[list[int]] = []
    open_groups: list[tuple[list[int], int]] = []
    for k in order:
        series_index = slots[k][0].index
        for members, want in open_groups:
            if len(members) < want and all(slots[j][0].index != series_index for j in members):
                members.append(k)
                break
        else:
            members = [k]
            open_groups.append((members, rng.randint(*TOPIC_SERIES)))
            groups.append(members)
        open_groups = [(g, w) for g, w in open_groups if len(g) < w]
    out: list[TopicPlan] = []
    for members in groups:
        owner = slots[min(members)][0]  # the topic's words come from one of its series' teams
        topic = phrases.subject(owner.team)
        for k in sorted(members, key=lambda j: slots[j][0].index):
            series, slot = slots[k]
            size = rng.randint(TOPIC_SESSIONS[0], min(TOPIC_SESSIONS[1], len(series.meeting_ids)))
            chosen = sorted(rng.sample(series.meeting_ids, size))
            out.append(TopicPlan(series.index, slot, topic, tuple(chosen),
                                 tuple(rng.sample(vocab.CONCLUSIONS, size)), series.lead))
    return out


def series_things(seed: int, team: str, kind: str) -> tuple[str, ...]:
    """A series' own vocabulary: six of its kind's things and six generic ones, every session."""
    rng = rng_for(seed, "archive-vocabulary", team, kind)
    return (*rng.sample(vocab.KIND_THINGS[kind], 6), *rng.sample(vocab.GENERIC_THINGS, 6))
