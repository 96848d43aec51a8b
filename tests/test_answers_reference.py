"""The reference intent parser over every wording of the generator's five question frames."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from harness.answers.reference import FRAMES, parse
from harness.synthetic import vocab
from harness.synthetic.formats import QUERIES
from harness.synthetic.generator import generate
from harness.synthetic.queries import AGGREGATION_TEMPLATES, month_label

INTENT_OF_RULE = {"R3-agg-count-files": "count_files", "R4-agg-list-files": "list_files",
                  "R5-agg-count-events": "count_events", "R6-agg-speaker-top": "speaker_top",
                  "R7-agg-temporal-count": "temporal_count"}
PHRASES = ("the Cedar Lantern compliance audit", "the Misty Osprey data cleanup", "the Autumn Windmill office move")
MONTHS = ("2024-01", "2024-05", "2025-12")


def renderings(rule: str, template: str) -> list[tuple[str, dict[str, Any]]]:
    """(question, expected slots) for one template over a spread of slot values."""
    if rule == "R6-agg-speaker-top":
        return [(template.format(team=team, kind=kind), {"team": team, "kind": kind})
                for team, kind in itertools.product(vocab.TEAMS, vocab.KINDS)]
    out = []
    for phrase, (verb, _past), month in itertools.product(PHRASES, vocab.R5_VERBS, MONTHS):
        slots: dict[str, Any] = {"phrase": phrase}
        if rule == "R5-agg-count-events":
            slots["verb"] = verb
        if rule == "R7-agg-temporal-count":
            slots.update(year=int(month[:4]), month=int(month[5:]))
        out.append((template.format(x=phrase, v=verb, month=month_label(month)), slots))
    return out


TEMPLATES = [(rule, template) for rule, templates in sorted(AGGREGATION_TEMPLATES.items()) for template in templates]


def test_one_frame_per_wording() -> None:
    assert len(FRAMES) == len(TEMPLATES) == 15


@pytest.mark.parametrize(("rule", "template"), TEMPLATES)
def test_every_template_parses_to_its_intent_and_verbatim_slots(rule: str, template: str) -> None:
    for question, slots in renderings(rule, template):
        intent = parse(question)
        assert intent is not None, question
        assert intent.name == INTENT_OF_RULE[rule]
        assert intent.slots() == slots, question


def test_generated_queries_parse_to_their_construction_keys() -> None:
    """The generator's own aggregation queries: phrase, team, kind, month and verb as built."""
    generated = json.loads(generate(20260812, 40, "easy")[QUERIES])["queries"]
    queries = [q for q in generated if q["query_class"] == "aggregation"]
    assert {q["rule"] for q in queries} == set(INTENT_OF_RULE)
    for q in queries:
        intent = parse(q["text"])
        assert intent is not None, q["text"]
        assert intent.name == INTENT_OF_RULE[q["rule"]]
        if q["rule"] == "R6-agg-speaker-top":
            assert (intent.team, intent.kind) == (q["team"], q["kind"])
        else:
            assert intent.phrase == q["phrase"]
        if q["rule"] == "R7-agg-temporal-count":
            assert f"{intent.year:04d}-{intent.month:02d}" == q["month"]
        if q["rule"] == "R5-agg-count-events":
            assert intent.verb == q["verb"]


@pytest.mark.parametrize("question", [
    "How many meetings covered the Cedar Lantern compliance audit?",  # a paraphrase: declined
    "Which recordings mention the Cedar Lantern compliance audit?",
    "how many meetings mention the Cedar Lantern compliance audit",  # no question mark
    "Who attended the most sprint retrospective meetings for Logistics?",
    "How many meetings in Spring 2025 discussed the Cedar Lantern compliance audit?",
    "What is the deadline for the loading dock scheduling rules?",
    "",
])
def test_other_wordings_are_declined(question: str) -> None:
    assert parse(question) is None


def test_frames_tolerate_case_and_whitespace_only() -> None:
    intent = parse("  how  many meetings MENTION the Cedar Lantern compliance audit? ")
    assert intent is not None and intent.phrase == "the Cedar Lantern compliance audit"
