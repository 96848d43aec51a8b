"""diversity_sample: round-robin by file, per-file cap, prefix-invariant in its caps."""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import UsageError
from harness.model import RankedDoc
from harness.retrieval.diversity import diversity_sample

# a1 a2 a3 from file A, b1 b2 from B, c1 from C, in this (rerank) order
HITS = [("a1", "A"), ("a2", "A"), ("b1", "B"), ("a3", "A"), ("c1", "C"), ("b2", "B")]


def ids(hits: list) -> list[str]:
    return [hit[0] if isinstance(hit, tuple) else hit.doc_id for hit in hits]


@pytest.mark.parametrize(
    ("final_chunks", "max_per_file", "expected"),
    [
        # round 0 takes each file's first hit in first-appearance order: a1 b1 c1;
        # round 1 the second hits: a2 b2 (C has none); round 2: a3
        (10, 3, ["a1", "b1", "c1", "a2", "b2", "a3"]),
        (10, 2, ["a1", "b1", "c1", "a2", "b2"]),
        (10, 1, ["a1", "b1", "c1"]),
        (4, 3, ["a1", "b1", "c1", "a2"]),
        (2, 3, ["a1", "b1"]),
        (0, 3, []),
    ],
)
def test_round_robin_by_file(final_chunks: int, max_per_file: int, expected: list[str]) -> None:
    assert ids(diversity_sample(HITS, final_chunks, max_per_file)) == expected


def test_one_long_recording_cannot_crowd_out_the_rest() -> None:
    # twelve hits from A ahead of one from B: B still makes the second slot
    hits = [(f"a{i}", "A") for i in range(12)] + [("b0", "B")]
    assert ids(diversity_sample(hits, 4, 4)) == ["a0", "b0", "a1", "a2"]


def test_objects_with_file_uuid() -> None:
    class Hit(NamedTuple):  # a tuple too: the attribute wins over position
        file_uuid: str
        doc_id: str

    docs = [
        RankedDoc(doc_id="x1", score=3.0, file_uuid="X"),
        RankedDoc(doc_id="x2", score=2.0, file_uuid="X"),
        RankedDoc(doc_id="y1", score=1.0, file_uuid="Y"),
    ]
    assert ids(diversity_sample(docs, 3, 1)) == ["x1", "y1"]
    named = [Hit("X", "x1"), Hit("X", "x2"), Hit("Y", "y1")]
    assert [h.doc_id for h in diversity_sample(named, 3, 2)] == ["x1", "y1", "x2"]


def test_returns_a_new_list_and_leaves_the_input_alone() -> None:
    hits = list(HITS)
    out = diversity_sample(hits, 100, 100)
    assert hits == HITS
    assert out is not hits
    assert sorted(out) == sorted(HITS)


def test_empty_input() -> None:
    assert diversity_sample([], 12, 4) == []


@pytest.mark.parametrize(("final_chunks", "max_per_file"), [(-1, 4), (12, 0), (12, -2), (True, 4), (12, 1.5)])
def test_bad_caps_are_refused(final_chunks: object, max_per_file: object) -> None:
    with pytest.raises(UsageError):
        diversity_sample(HITS, final_chunks, max_per_file)  # type: ignore[arg-type]


def test_a_hit_without_a_file_is_refused() -> None:
    with pytest.raises(TypeError, match="file_uuid"):
        diversity_sample([("only-an-id",)], 3, 1)  # type: ignore[type-var]


# Random inputs: unique doc ids over a handful of files (so files repeat and caps bind).
hit_lists = st.lists(st.sampled_from("ABCDEFG"), max_size=60).map(
    lambda files: [(f"d{i}", file) for i, file in enumerate(files)]
)
caps = st.integers(min_value=0, max_value=70)
per_file = st.integers(min_value=1, max_value=12)


@settings(max_examples=200)  # the methodology's check ran over 200 random inputs
@given(hit_lists, caps, caps, per_file)
def test_prefix_invariant_in_final_chunks(hits: list, k1: int, k2: int, m: int) -> None:
    small, large = sorted((k1, k2))
    assert diversity_sample(hits, small, m) == diversity_sample(hits, large, m)[:small]


@settings(max_examples=200)
@given(hit_lists, st.integers(min_value=1, max_value=11))
def test_prefix_invariant_in_max_chunks_per_file(hits: list, m: int) -> None:
    narrower = diversity_sample(hits, len(hits), m)
    wider = diversity_sample(hits, len(hits), m + 1)
    assert wider[: len(narrower)] == narrower


@given(hit_lists, caps, per_file)
def test_caps_hold_and_nothing_is_invented_or_duplicated(hits: list, final_chunks: int, m: int) -> None:
    out = diversity_sample(hits, final_chunks, m)
    per_file_counts = Counter(file for _, file in out)
    assert all(count <= m for count in per_file_counts.values())
    assert len(out) <= final_chunks
    assert len(set(out)) == len(out)
    assert set(out) <= set(hits)
    available = Counter(file for _, file in hits)
    assert len(out) == min(final_chunks, sum(min(n, m) for n in available.values()))
    # each file contributes a prefix of its own hits, in their given order
    for file in per_file_counts:
        theirs = [hit for hit in hits if hit[1] == file]
        assert [hit for hit in out if hit[1] == file] == theirs[: per_file_counts[file]]


@given(hit_lists, caps, per_file)
def test_the_first_round_is_every_file_in_first_appearance_order(
    hits: list, final_chunks: int, m: int
) -> None:
    out = diversity_sample(hits, final_chunks, m)
    first_seen = list(dict.fromkeys(file for _, file in hits))
    head = min(final_chunks, len(first_seen))
    assert [file for _, file in out[:head]] == first_seen[:head]


repeating_hits = st.lists(st.tuples(st.sampled_from(["d0", "d1", "d2"]), st.sampled_from("AB")), max_size=30)


@given(repeating_hits, caps, per_file)
def test_repeated_hits_are_never_multiplied(hits: list, final_chunks: int, m: int) -> None:
    # the same (doc, file) pair given twice may come back at most twice
    out = Counter(diversity_sample(hits, final_chunks, m))
    given_counts = Counter(hits)
    assert all(out[hit] <= given_counts[hit] for hit in out)
