"""min_max normalization (neural-search MinMaxScoreNormalizationTechnique, 2.19.x)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.fusion import min_max
from harness.retrieval.fusion.base import check_leg


def normalized(leg: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(doc, float(score)) for doc, score in min_max.normalize(check_leg(leg, "test"))]


def test_three_hits_top_is_one_and_bottom_is_floored_not_zero() -> None:
    # min 2, max 4: a (4-2)/2 = 1.0, b (3-2)/2 = 0.5, c (2-2)/2 = 0 -> MIN_SCORE 0.001
    assert normalized([("a", 4.0), ("b", 3.0), ("c", 2.0)]) == [
        ("a", 1.0),
        ("b", 0.5),
        ("c", float(np.float32(0.001))),
    ]


def test_two_hits_bottom_is_the_floor() -> None:
    # (5-1)/4 = 1.0; (1-1)/4 = 0 -> 0.001
    assert normalized([("a", 5.0), ("b", 1.0)]) == [("a", 1.0), ("b", float(np.float32(0.001)))]


def test_one_hit_leg_scores_one() -> None:
    # max == min == score: SINGLE_RESULT_SCORE
    assert normalized([("a", 7.25)]) == [("a", 1.0)]


def test_equal_scores_all_score_one() -> None:
    # max == min and every score equals them: 1.0 each (not 0, not 0.001)
    assert normalized([("a", 2.0), ("b", 2.0), ("c", 2.0)]) == [("a", 1.0), ("b", 1.0), ("c", 1.0)]


def test_empty_leg() -> None:
    assert normalized([]) == []


def test_scores_are_compared_as_the_engine_s_floats() -> None:
    # 1.00000001 and 1.0 differ as doubles but are the same float (1.0f): the leg is
    # "all equal", so both score 1.0. In double arithmetic b would be 0 -> 0.001.
    assert normalized([("a", 1.00000001), ("b", 1.0)]) == [("a", 1.0), ("b", 1.0)]


def test_middle_value_is_float_division() -> None:
    # (0.2f - 0.1f) / (0.3f - 0.1f) is 0.5 up to float rounding
    (_, top), (_, middle), (_, bottom) = normalized([("a", 0.3), ("b", 0.2), ("c", 0.1)])
    assert top == 1.0
    assert middle == pytest.approx(0.5, rel=1e-6)
    assert float(np.float32(middle)) == middle
    assert bottom == float(np.float32(0.001))
