"""The product's generic parser: the generator's wordings, paraphrases it was not written
for, and what it declines."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from harness.answers.model import Intent
from harness.answers.product import parse
from harness.synthetic import vocab
from harness.synthetic.formats import QUERIES
from harness.synthetic.generator import generate
from harness.synthetic.queries import AGGREGATION_TEMPLATES, month_label

INTENT_OF_RULE = {"R3-agg-count-files": "count_files", "R4-agg-list-files": "list_files",
                  "R5-agg-count-events": "count_events", "R6-agg-speaker-top": "speaker_top",
                  "R7-agg-temporal-count": "temporal_count"}
# the product drops a leading article from the subject: "the X" and "X" match the same text
PHRASES = (("the Cedar Lantern compliance audit", "Cedar Lantern compliance audit"),
           ("the Misty Osprey data cleanup", "Misty Osprey data cleanup"),
           ("the Autumn Windmill office move", "Autumn Windmill office move"))
MONTHS = ("2024-01", "2024-05", "2025-12")
TEMPLATES = [(rule, template) for rule, templates in sorted(AGGREGATION_TEMPLATES.items()) for template in templates]


def _expected(rule: str, template: str) -> list[tuple[str, dict[str, Any]]]:
    if rule == "R6-agg-speaker-top":
        return [(template.format(team=team, kind=kind), {"team": team, "kind": kind})
                for team, kind in itertools.product(vocab.TEAMS, vocab.KINDS)]
    out = []
    for (phrase, subject), (verb, _past), month in itertools.product(PHRASES, vocab.R5_VERBS, MONTHS):
        slots: dict[str, Any] = {"phrase": subject}
        if rule == "R7-agg-temporal-count":
            slots.update(year=int(month[:4]), month=int(month[5:]))
        out.append((template.format(x=phrase, v=verb, month=month_label(month)), slots))
    return out


@pytest.mark.parametrize(("rule", "template"), TEMPLATES)
def test_every_generator_wording_parses(rule: str, template: str) -> None:
    for question, slots in _expected(rule, template):
        intent = parse(question)
        assert isinstance(intent, Intent), (question, intent)
        assert intent.name == INTENT_OF_RULE[rule], question
        assert intent.slots() == slots, question


def test_generated_queries_parse_to_their_construction_keys() -> None:
    generated = json.loads(generate(20260812, 40, "easy")[QUERIES])["queries"]
    queries = [q for q in generated if q["query_class"] == "aggregation"]
    for q in queries:
        intent = parse(q["text"])
        assert isinstance(intent, Intent), (q["text"], intent)
        assert intent.name == INTENT_OF_RULE[q["rule"]]
        if q["rule"] == "R6-agg-speaker-top":
            assert (intent.team, intent.kind) == (q["team"], q["kind"])
        else:
            assert intent.phrase == q["phrase"].removeprefix("the ")


X = "the Cedar Lantern compliance audit"
S = "Cedar Lantern compliance audit"


@pytest.mark.parametrize(("question", "expected"), [
    # wordings the reference declines: the product is generic, not matched to the generator
    (f"How many meetings covered {X}?", Intent("count_files", phrase=S)),
    (f"how many sessions discussed {X}", Intent("count_files", phrase=S)),
    (f"Which recordings mention {X}?", Intent("list_files", phrase=S)),
    (f"Show the meetings that discussed {X}.", Intent("list_files", phrase=S)),
    (f"How many times did we mention {X}?", Intent("count_events", phrase=S)),
    (f"Number of meetings in Mar 2025 that discussed {X}", Intent("temporal_count", phrase=S, year=2025, month=3)),
    (f"In 2025-03, how many meetings discussed {X}?", Intent("temporal_count", phrase=S, year=2025, month=3)),
    ("who spoke in the most design review sessions for the Payments team?",
     Intent("speaker_top", kind="design review", team="Payments")),
    ("Which attendee joined the most weekly standup meetings of Platform?",
     Intent("speaker_top", kind="weekly standup", team="Platform")),
])
def test_paraphrases_parse(question: str, expected: Intent) -> None:
    assert parse(question) == expected


@pytest.mark.parametrize(("question", "reason"), [
    ("What is the deadline for the loading dock scheduling rules?", "no interrogative frame"),
    ("How many more people does the loading dock staffing plan need?", "no interrogative frame"),
    ("Who owns the loading dock scheduling rules?", "without 'most'"),
    ("Who attended the most?", "scope"),
    (f"Which meetings in March 2025 mention {X}?", "period-filtered file list"),
    ("How many meetings were there?", "no subject"),
    ("", "empty"),
])
def test_what_it_declines_says_why(question: str, reason: str) -> None:
    result = parse(question)
    assert isinstance(result, str) and reason in result
