"""z_score normalization (neural-search ZScoreNormalizationTechnique, 3.0.0.0 - 3.8.0.0)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.retrieval.fusion import z_score
from harness.retrieval.fusion.base import check_leg

FLOOR = float(np.float32(0.001))


def normalized(leg: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(doc, float(score)) for doc, score in z_score.normalize(check_leg(leg, "test"))]


def test_sample_standard_deviation_not_population() -> None:
    # scores 10, 4, 1: mean 5, deviations 5, -1, -4, squares 25 + 1 + 16 = 42
    # sample std sqrt(42 / 2) = sqrt(21) = 4.5826 -> z(10) = 5 / 4.5826 = 1.0911
    # (population std sqrt(42 / 3) = sqrt(14) would give 1.3363)
    (_, top), (_, middle), (_, bottom) = normalized([("a", 10.0), ("b", 4.0), ("c", 1.0)])
    assert top == pytest.approx(5 / math.sqrt(21), rel=1e-6)
    assert top != pytest.approx(5 / math.sqrt(14), rel=1e-3)
    # z(4) = -0.218 and z(1) = -0.873: every z <= 0 becomes 0.001, never negative
    assert middle == FLOOR
    assert bottom == FLOOR


def test_a_score_equal_to_the_mean_becomes_the_raw_maximum() -> None:
    # 4, 3, 2: mean 3, sample std sqrt((1 + 0 + 1) / 2) = 1
    # a: z = (4 - 3) / 1 = 1.0;  b: score == mean -> the leg's RAW max, 4.0;  c: z = -1 -> 0.001
    # so the middle hit outranks the top hit: the engine's edge rule, reproduced on purpose
    assert normalized([("a", 4.0), ("b", 3.0), ("c", 2.0)]) == [("a", 1.0), ("b", 4.0), ("c", FLOOR)]


def test_one_hit_leg_keeps_its_raw_score() -> None:
    # one score: mean == score -> raw max, i.e. the raw score itself (min_max would give 1.0)
    assert normalized([("a", 7.5)]) == [("a", 7.5)]


def test_equal_scores_keep_their_raw_score() -> None:
    # all 2.0: mean == score for each -> raw max 2.0
    assert normalized([("a", 2.0), ("b", 2.0), ("c", 2.0)]) == [("a", 2.0), ("b", 2.0), ("c", 2.0)]


def test_zero_std_with_a_score_off_the_mean_returns_the_raw_minimum() -> None:
    # the second edge rule, reached directly: std 0 and score != mean -> raw min
    result = z_score.normalize_score(
        np.float32(2.0), np.float32(0.0), np.float32(3.0), np.float32(5.0), np.float32(1.5)
    )
    assert result == np.float32(1.5)


def test_empty_leg() -> None:
    assert normalized([]) == []
