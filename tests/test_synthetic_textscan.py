"""Phrase counting and the near-duplicate rate, against hand-computed expectations."""

from __future__ import annotations

import json

import pytest

from harness.synthetic.formats import NativeMeeting, NativeTurn
from harness.synthetic.generator import generate
from harness.synthetic.neardup import near_duplicates
from harness.synthetic.textscan import codename_turns, count_in, scan


def _meeting(meeting_id: str, *texts: str) -> NativeMeeting:
    turns = tuple(NativeTurn(speaker="A", start=float(i), end=i + 0.5, text=t) for i, t in enumerate(texts))
    return NativeMeeting(meeting_id=meeting_id, file_uuid="u", title="t", team="Logistics", kind="design review",
                         series_number=1, recorded_date="2024-01-02", roster=("A",), turns=turns)


def test_count_is_case_insensitive_whole_word_and_whitespace_tolerant() -> None:
    text = ("THE cedar lantern audit, then the Cedar \t Lantern audit; the Cedar Lantern audits; "
            "bathe Cedar Lantern audit")
    # 1: THE cedar lantern audit; 2: whitespace run; not "audits"; not "bathe ..." (no word start)
    assert count_in("the Cedar Lantern audit", text) == 2
    assert count_in("the Cedar Lantern audit", text, exact_case=True) == 1


def test_scan_finds_the_phrases_and_facts_that_contain_them() -> None:
    subject = "the loading dock scheduling rules"
    fact = f"the deadline for {subject} is 14 March"
    other_fact = "we signed with Orbital Data for the night shift rollout plan"
    meetings = [
        _meeting("m1", f"So, {fact}.", f"And {subject} again, {subject}.", "the loading dock is fine"),
        _meeting("m2", f"Has anyone looked at {subject.upper()}?", other_fact),
    ]
    occ = scan(meetings, [subject, fact, other_fact, "the night shift rollout plan"])
    assert occ.of(subject) == {("m1", 0): 1, ("m1", 1): 2, ("m2", 0): 1}
    assert occ.of(fact) == {("m1", 0): 1}
    assert occ.of(other_fact) == {("m2", 1): 1}  # a fact found through the "the" phrase inside it
    assert occ.files(subject) == ["m1", "m2"] and occ.total(subject) == 4


def test_a_fact_with_no_the_phrase_inside_is_scanned_everywhere() -> None:
    occ = scan([_meeting("m1", "x", "we need three more people"), _meeting("m2", "We need three more people!")],
               ["we need three more people"])
    assert occ.of("we need three more people") == {("m1", 1): 1, ("m2", 0): 1}


def test_codename_words_are_found_in_any_case() -> None:
    found = codename_turns([_meeting("m1", "the cedar tree", "a LANTERN and a lamp", "nothing here")])
    assert found == {("m1", 0): ["cedar"], ("m1", 1): ["lantern"]}


def test_counts_agree_with_the_store_definition() -> None:
    phrases_module = pytest.importorskip("harness.store.phrases")
    files = generate(20260812, 25, "easy")
    plants = json.loads(files["plants.json"])["plants"]
    meetings = [NativeMeeting.model_validate_json(data) for rel, data in sorted(files.items())
                if rel.startswith("meetings/")]
    occ = scan(meetings, [p["phrase"] for p in plants])
    for plant in plants[:: max(1, len(plants) // 60)]:
        for m in meetings:
            for i, turn in enumerate(m.turns):
                expected = phrases_module.count_occurrences(plant["phrase"], turn.text)
                assert occ.of(plant["phrase"]).get((m.meeting_id, i), 0) == expected


def _words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def test_near_duplicate_rate_by_hand() -> None:
    # a: a0..a7 -> shingles a0-4, a1-5, a2-6, a3-7.  b: a0..a5 b6 b7 -> shares a0-4 and a1-5 only,
    # so Jaccard = 2 / (4 + 4 - 2) = 1/3.  c is a verbatim copy of a: Jaccard 1.  d shares nothing.
    a = _meeting("a", _words("a", 8))
    b = _meeting("b", _words("a", 6) + " b6 b7")
    c = _meeting("c", _words("a", 4), "a4 a5 a6 a7")  # the same words split over two turns
    d = _meeting("d", _words("d", 8))
    report = near_duplicates([a, b, c, d])
    assert [(p["a"], p["b"], p["jaccard"]) for p in report["pairs"]] == [("a", "c", 1.0)]
    assert report["meetings_with_near_duplicate"] == 2 and report["rate"] == 0.5
    lower = near_duplicates([a, b, c, d], threshold=0.3)
    assert {(p["a"], p["b"]) for p in lower["pairs"]} == {("a", "b"), ("a", "c"), ("b", "c")}
    assert next(p["jaccard"] for p in lower["pairs"] if (p["a"], p["b"]) == ("a", "b")) == round(1 / 3, 6)
    assert lower["rate"] == 0.75


def test_generated_meetings_are_not_near_duplicates() -> None:
    files = generate(20260812, 40, "easy")
    meetings = [NativeMeeting.model_validate_json(data) for rel, data in sorted(files.items())
                if rel.startswith("meetings/")]
    report = near_duplicates(meetings)
    assert report["rate"] == 0.0
    assert report["nearest_neighbour_jaccard_sample"]["max"] < 0.2
