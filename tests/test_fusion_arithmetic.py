"""arithmetic_mean combination (neural-search ArithmeticMeanScoreCombinationTechnique, 2.19.x)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.fusion import arithmetic

W70_30 = (np.float32(0.7), np.float32(0.3))
W30_70 = (np.float32(0.3), np.float32(0.7))


def combine(scores: tuple[float, ...], weights: tuple[np.float32, ...] | None = None) -> float:
    return float(arithmetic.combine([np.float32(s) for s in scores], weights))


def test_unweighted_mean() -> None:
    # (1.0 + 0.5) / 2 = 0.75
    assert combine((1.0, 0.5)) == 0.75


def test_an_absent_leg_counts_as_zero_with_its_weight() -> None:
    # the vector leg did not return the doc: slot is 0.0, and 0.0 >= 0.0 is counted:
    # (0.8 + 0.0) / (1 + 1) = 0.4, not 0.8
    assert combine((0.8, 0.0)) == pytest.approx(0.4, rel=1e-6)


@pytest.mark.parametrize(
    ("scores", "weights", "expected"),
    [
        # 0.7*1.0 + 0.3*0.0 over 0.7 + 0.3 = 0.7
        ((1.0, 0.0), W70_30, 0.7),
        # 0.7*0.0 + 0.3*1.0 = 0.3
        ((0.0, 1.0), W70_30, 0.3),
        # 0.7*0.5 + 0.3*1.0 = 0.65
        ((0.5, 1.0), W70_30, 0.65),
        # 0.3*0.5 + 0.7*1.0 = 0.85
        ((0.5, 1.0), W30_70, 0.85),
        # 0.3*1.0 + 0.7*0.0 = 0.3
        ((1.0, 0.0), W30_70, 0.3),
    ],
)
def test_weighted(scores: tuple[float, ...], weights: tuple[np.float32, ...], expected: float) -> None:
    assert combine(scores, weights) == pytest.approx(expected, rel=1e-6)


def test_negative_scores_are_skipped_weight_and_all() -> None:
    # -1 < 0: only 0.5 counts, over its own weight: 0.5
    assert combine((-1.0, 0.5)) == 0.5


def test_nothing_counted_is_zero() -> None:
    assert combine((-1.0, -2.0)) == 0.0


def test_weights_must_match_the_number_of_legs() -> None:
    with pytest.raises(ValueError, match="number of weights"):
        combine((1.0, 0.5, 0.2), W70_30)
