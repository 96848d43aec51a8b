from __future__ import annotations

import pytest

from harness.retrieval.router import route

CASES = [
    ("How many meetings mentioned the Cedar Lantern compliance audit?", "aggregation", ("chunk",)),
    ("Which meetings discussed the vendor contract?", "aggregation", ("chunk",)),
    ("Who attended the most sprint retrospective sessions for the logistics team?", "aggregation", ("chunk",)),
    ("Summarize the discussion about the remote control buttons.", "summarize", ("chunk", "digest")),
    ('Summarise what was said about "battery life".', "summarize", ("chunk",)),
    ("What was the discussion about the budget?", "summarize", ("chunk", "digest")),
    ("Across the sprint retrospective sessions for the logistics team, what did we conclude about "
     "the release train?", "multi_file", ("chunk",)),
    ("What did Dana say about pricing?", "lookup", ("chunk",)),
    ("Why did the Project Manager reject the rubber case?", "lookup", ("chunk",)),
]


@pytest.mark.parametrize(("text", "query_class", "tiers"), CASES)
def test_route(text: str, query_class: str, tiers: tuple[str, ...]) -> None:
    decision = route(text)
    assert decision.query_class == query_class
    assert decision.tiers == tiers


def test_quoted_phrase_removes_the_digest_tier_and_is_recorded() -> None:
    decision = route('Summarize everything said about "the Cedar Lantern audit"')
    assert decision.query_class == "summarize" and decision.quoted_phrase and decision.tiers == ("chunk",)
