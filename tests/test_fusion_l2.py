"""l2 normalization (neural-search L2ScoreNormalizationTechnique, 2.19.x)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.retrieval.fusion import l2
from harness.retrieval.fusion.base import check_leg


def normalized(leg: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(doc, float(score)) for doc, score in l2.normalize(check_leg(leg, "test"))]


def test_divides_by_the_root_of_the_sum_of_squares() -> None:
    # sqrt(4^2 + 3^2) = 5: 4/5 = 0.8, 3/5 = 0.6 (as floats)
    assert normalized([("a", 4.0), ("b", 3.0)]) == [
        ("a", float(np.float32(0.8))),
        ("b", float(np.float32(0.6))),
    ]


def test_three_hits() -> None:
    # sqrt(16 + 9 + 4) = sqrt(29) = 5.385164807
    result = dict(normalized([("a", 4.0), ("b", 3.0), ("c", 2.0)]))
    assert result["a"] == pytest.approx(4 / math.sqrt(29), rel=1e-6)  # 0.742781
    assert result["b"] == pytest.approx(3 / math.sqrt(29), rel=1e-6)  # 0.557086
    assert result["c"] == pytest.approx(2 / math.sqrt(29), rel=1e-6)  # 0.371391


def test_one_hit_leg_scores_one() -> None:
    # s / sqrt(s^2) = 1
    assert normalized([("a", 7.0)]) == [("a", 1.0)]


def test_equal_scores_score_one_over_root_n() -> None:
    # four 2.0s: 2 / sqrt(4 * 4) = 0.5 each; no special case as in min_max
    assert normalized([("a", 2.0), ("b", 2.0), ("c", 2.0), ("d", 2.0)]) == [
        ("a", 0.5),
        ("b", 0.5),
        ("c", 0.5),
        ("d", 0.5),
    ]


def test_no_floor_the_bottom_hit_keeps_its_share() -> None:
    # l2 has no 0.001 floor and never produces 0 for a positive score
    assert normalized([("a", 100.0), ("b", 1.0)])[1][1] == pytest.approx(1 / math.sqrt(10001), rel=1e-6)


def test_empty_leg() -> None:
    assert normalized([]) == []
