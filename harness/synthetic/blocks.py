"""Planted blocks: the few logical turns that carry a fact, a topic or a marker.

A block is a list of :class:`LTurn` placed contiguously among filler. Each turn records the
planted phrases it says (and how often) and, for rank-scored material, the gold tag whose
inclusive turn range it belongs to. Every planted phrase sits mid-sentence, after a
lower-case word or a comma, so a marker always appears in its exact case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from harness.synthetic.filler import LONG, MEDIUM, SHORT, FillerWriter
from harness.synthetic.planting import LookupPlan, MarkerPlan, TopicPlan


@dataclass(frozen=True)
class LTurn:
    """A logical turn before timing: who says what, and what it plants."""

    speaker: str
    text: str
    tag: str | None = None
    mentions: tuple[tuple[str, int], ...] = ()
    backchannel_percent: int = 20


PROMPTS = (
    "{first}, where are we on {s}?",
    "Can we get a quick update on {s}?",
    "{first}, you were looking into {s}, right?",
    "What's the latest with {s}?",
    "Before we move on, {first}, any news on {s}?",
)
FACT_LEADS = ("Yes, so ", "Right, so ", "Sure. So ", "Yeah, so ", "Okay, so ", "Good question. So ")
ACKS = ("Okay, noted.", "Great, thanks {first}.", "Good to know.", "Okay, that helps.", "Thanks, that's clear.")
SUBJECT_MENTIONS = (
    "Honestly, {s} is still on my list, but there's nothing new.",
    "Has anyone looked at {s} since last time?",
    "We should come back to {s} at some point.",
    "I saw a thread about {s} but didn't read it yet.",
    "No update from me on {s}, sorry.",
    "I keep meaning to ask about {s}.",
)
TOPIC_OPENS = (
    "{first}, I wanted to come back to {t}.",
    "Next on the list is {t}.",
    "Can we spend five minutes on {t}?",
    "I'd like to pick up {t} again.",
    "So, about {t}.",
)
# The archive regime's conclusions refer back to the topic, as people do, instead of naming it again.
TOPIC_CLOSES_BACK = (
    "So, to wrap that one up: {c}.",
    "Okay, on that then: {c}.",
    "Let's write it down: {c}.",
    "Right, so where we landed: {c}.",
)
TOPIC_CLOSES = (
    "So for {t}, {c}.",
    "Okay, on {t} then: {c}.",
    "Let's write it down: for {t}, {c}.",
    "Right, so with {t}, {c}.",
)
MARKER_MENTIONS = (
    "We also touched on {x} briefly.",
    "I sent round some notes on {x}.",
    "{first} raised {x} again.",
    "There's a short update on {x} in the doc.",
    "Quick one: {x} came up with the client as well.",
    "Before I forget, {x} is still waiting on sign-off.",
    "Does anyone have news on {x}?",
)
R5_SINGLE = (
    "We agreed to {v} {x} again.",
    "I'd say we {v} {x} for now.",
    "Fine, let's {v} {x}.",
    "So we {vp} {x}, as expected.",
)
R5_DOUBLE = (
    "We {vp} {x} last time, and honestly I'd {v} {x} again today.",
    "If we {v} {x} now, we'll just {v} {x} again next month.",
)


def _pick(rng: random.Random, options: tuple[str, ...]) -> str:
    return options[rng.randrange(len(options))]


def lookup_block(
    rng: random.Random, writer: FillerWriter, plan: LookupPlan, first: dict[str, str], attendees: tuple[str, ...]
) -> list[LTurn]:
    tag = f"lookup:{plan.meeting_id}:{plan.slot}"
    prompt = _pick(rng, PROMPTS).format(first=first[plan.speaker], s=plan.subject)
    tail = writer.turn(MEDIUM, first[plan.speaker])
    fact = f"{_pick(rng, FACT_LEADS)}{plan.fact}. {tail}"
    turns = [
        LTurn(plan.asker, prompt, tag, ((plan.subject, 1),)),
        LTurn(plan.speaker, fact, tag, ((plan.fact, 1), (plan.subject, 1)), backchannel_percent=60),
    ]
    if rng.randint(1, 100) <= 50:
        others = [a for a in attendees if a != plan.speaker]
        who = others[rng.randrange(len(others))]
        turns.append(LTurn(who, _pick(rng, ACKS).format(first=first[plan.speaker]), tag))
    return turns


def subject_block(rng: random.Random, subject: str, attendees: tuple[str, ...]) -> list[LTurn]:
    who = attendees[rng.randrange(len(attendees))]
    return [LTurn(who, _pick(rng, SUBJECT_MENTIONS).format(s=subject), None, ((subject, 1),))]


def topic_block(
    rng: random.Random,
    writer: FillerWriter,
    plan: TopicPlan,
    conclusion: str,
    first: dict[str, str],
    attendees: tuple[str, ...],
    discussion: int = 0,
) -> list[LTurn]:
    tag = f"topic:{plan.topic}"
    a, b = rng.sample(attendees, 2)
    opening = _pick(rng, TOPIC_OPENS).format(first=first[b], t=plan.topic)
    turns = [
        LTurn(a, opening, tag, ((plan.topic, 1),)),
        LTurn(b, writer.turn(LONG if rng.randint(1, 2) == 1 else MEDIUM, first[b]), tag),
    ]
    for k in range(discussion):  # the archive regime: a discussion of several turns, naming the topic only twice
        who = (a, b)[k % 2] if len(attendees) < 3 or rng.randint(1, 3) > 1 else attendees[rng.randrange(len(attendees))]
        turns.append(LTurn(who, writer.turn(writer.size(), first[who]), tag))
    closer = a
    if len(attendees) > 2 and rng.randint(1, 100) <= 50:
        c = [x for x in attendees if x not in (a, b)][rng.randrange(len(attendees) - 2)]
        turns.append(LTurn(c, writer.turn(SHORT, first[c]), tag))
        closer = c if rng.randint(1, 2) == 1 else a
    if discussion:  # the archive regime
        turns.append(LTurn(closer, _pick(rng, TOPIC_CLOSES_BACK).format(c=conclusion), tag))
        return turns
    closing = _pick(rng, TOPIC_CLOSES).format(t=plan.topic, c=conclusion)
    turns.append(LTurn(closer, closing, tag, ((plan.topic, 1),)))
    return turns


def marker_blocks(
    rng: random.Random,
    writer: FillerWriter,
    plan: MarkerPlan,
    n_turns: int,
    double: bool,
    first: dict[str, str],
    attendees: tuple[str, ...],
) -> list[list[LTurn]]:
    """One single-turn block per mention turn; with ``double`` the first says it twice."""
    blocks = []
    for k in range(n_turns):
        who = attendees[rng.randrange(len(attendees))]
        others = [first[a] for a in attendees if a != who]
        if plan.verb is not None:
            v, vp = plan.verb
            if double and k == 0:
                said, count = _pick(rng, R5_DOUBLE).format(v=v, vp=vp, x=plan.phrase), 2
            else:
                said, count = _pick(rng, R5_SINGLE).format(v=v, vp=vp, x=plan.phrase), 1
        else:
            said = _pick(rng, MARKER_MENTIONS).format(first=others[rng.randrange(len(others))], x=plan.phrase)
            count = 1
        extra = writer.turn(MEDIUM, first[who]) if rng.randint(1, 100) <= 50 else ""
        text = f"{extra} {said}" if extra and rng.randint(1, 2) == 1 else f"{said} {extra}".strip()
        blocks.append([LTurn(who, text, None, ((plan.phrase, count),))])
    return blocks
