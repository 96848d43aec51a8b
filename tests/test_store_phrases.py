"""Phrase counting semantics, and the LIKE prefilter that must never drop a match."""

from __future__ import annotations

import sqlite3

import pytest

from harness.errors import UsageError
from harness.store.phrases import count_occurrences, like_needle, title_matches

PHRASE = "Cedar Lantern audit"


@pytest.mark.parametrize(("text", "expected"), [
    ("we deferred the Cedar Lantern audit", 1),
    ("cedar lantern AUDIT and again the Cedar Lantern audit.", 2),   # case; twice in one text
    ("the Cedar  Lantern\naudit", 1),                                # any whitespace run
    ("Cedar Lantern audits", 0),                                     # word boundary after
    ("xCedar Lantern audit", 0),                                     # word boundary before
    ("Cedar Lantern audit_log", 0),                                  # underscore is a word char
    ("(Cedar Lantern audit)", 1),                                    # punctuation is a boundary
    ("Cedar Lantern", 0),
    ("Cedar-Lantern audit", 0),                                      # a hyphen is not whitespace
    ("CEDAR LANTERN AUD\u0130T", 1),                                 # IGNORECASE: i ~ U+0130
])
def test_count_occurrences(text: str, expected: int) -> None:
    assert count_occurrences(PHRASE, text) == expected


def test_occurrences_do_not_overlap() -> None:
    # regexp_count semantics: leftmost, non-overlapping. "ha ha" in "ha ha ha" is 1.
    assert count_occurrences("ha ha", "ha ha ha") == 1
    assert count_occurrences("ha ha", "ha ha ha ha") == 2


def test_phrase_edges_that_are_not_word_characters_need_no_boundary() -> None:
    assert count_occurrences("audit.", "the audit.Next") == 1
    assert count_occurrences("  audit  ", "audit") == 1


def test_empty_phrase_is_refused() -> None:
    with pytest.raises(UsageError, match="empty"):
        count_occurrences("   ", "anything")


def test_like_needle_keeps_only_what_every_engine_folds_alike() -> None:
    assert like_needle(PHRASE) == "%cedar%lantern%aud%t%"
    assert like_needle("50% off_now!") == "%50!%%off!_now!!%"
    assert like_needle("Ärger") == "%rger%"
    assert like_needle("ıı") == "%"


@pytest.mark.parametrize(("phrase", "text"), [
    (PHRASE, "the CEDAR LANTERN AUD\u0130T"),           # U+0130 matches i under IGNORECASE
    ("task kickoff", "ta\u017fk \u212aickoff"),          # U+017F ~ s, U+212A (Kelvin) ~ k
    (PHRASE, "Cedar\tLantern \n  audit"),                # whitespace runs
])
def test_prefilter_keeps_texts_a_naive_like_would_drop(phrase: str, text: str) -> None:
    # SQLite's lower() folds ASCII only, so lower(text) LIKE lower(phrase) misses these;
    # the needle must still select every text the regex counts in.
    assert count_occurrences(phrase, text) == 1
    conn = sqlite3.connect(":memory:")
    like = "SELECT lower(?) LIKE ? ESCAPE '!'"
    (naive,) = conn.execute(like, (text, f"%{phrase.lower()}%")).fetchone()
    (needle,) = conn.execute(like, (text, like_needle(phrase))).fetchone()
    conn.close()
    assert (naive, needle) == (0, 1)


@pytest.mark.parametrize(("pattern", "title", "expected"), [
    ("Cedar — standup%", "Cedar — standup #3", True),
    ("cedar — STANDUP%", "Cedar — standup #3", True),      # case-insensitive in every engine
    ("Cedar", "Cedar — standup #3", False),                  # whole title, like LIKE
    ("%standup #_", "Birch — standup #1", True),
    ("%standup #_", "Birch — standup #12", False),
    ("Cedar.*", "Cedar — standup", False),                   # regex characters are literal
])
def test_title_patterns_have_like_semantics(pattern: str, title: str, expected: bool) -> None:
    assert title_matches(pattern, title) is expected
