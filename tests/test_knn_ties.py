"""The embedded exact kNN leg's top k: by score, ties broken by row, at the cut as above it.

np.argpartition keeps an arbitrary subset of the rows tied with the k-th score; the leg must keep
the earliest rows, so that the top k is what sorting every row by (-score, row) and cutting at k
gives, and so the first k of a deeper leg (harness.index.embedded.top_by_score_then_row).
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.index.embedded import top_by_score_then_row


def _reference(scores: np.ndarray, k: int) -> list[int]:
    return sorted(range(scores.size), key=lambda i: (-scores[i], i))[:k]


def test_rows_tied_at_the_cut_are_kept_earliest_first() -> None:
    scores = np.array([0.5, 0.9, 0.7, 0.7, 0.2, 0.7, 0.7, 0.9])
    assert top_by_score_then_row(scores, 3) == [1, 7, 2]
    assert top_by_score_then_row(scores, 4) == [1, 7, 2, 3]
    assert top_by_score_then_row(scores, 5) == [1, 7, 2, 3, 5]


@pytest.mark.parametrize("seed", range(20))
def test_the_top_k_is_the_full_sort_cut_at_k_and_a_prefix_of_any_deeper_top(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # few distinct values, so most cuts fall inside a run of ties (duplicate texts, equal vectors)
    scores = rng.integers(0, 6, size=300).astype(np.float64) / 7.0
    deep = top_by_score_then_row(scores, 250)
    assert deep == _reference(scores, 250)
    for k in (1, 12, 48, 100, 128, 192, 249):
        top = top_by_score_then_row(scores, k)
        assert top == _reference(scores, k)
        assert top == deep[:k]


def test_k_beyond_the_rows_and_k_zero() -> None:
    scores = np.array([0.1, 0.3, 0.3])
    assert top_by_score_then_row(scores, 10) == [1, 2, 0]
    assert top_by_score_then_row(scores, 0) == []
    assert top_by_score_then_row(np.array([]), 5) == []
