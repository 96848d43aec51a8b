"""geometric_mean combination (neural-search GeometricMeanScoreCombinationTechnique, 2.19.x)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.fusion import geometric

W70_30 = (np.float32(0.7), np.float32(0.3))


def combine(scores: tuple[float, ...], weights: tuple[np.float32, ...] | None = None) -> float:
    return float(geometric.combine([np.float32(s) for s in scores], weights))


def test_unweighted_geometric_mean() -> None:
    # exp((ln 1.0 + ln 0.25) / 2) = sqrt(0.25) = 0.5
    assert combine((1.0, 0.25)) == pytest.approx(0.5, rel=1e-6)


def test_an_absent_leg_is_skipped_so_a_one_leg_hit_keeps_its_score() -> None:
    # slot 0.0 <= 0 is skipped: exp(ln 0.8 / 1) = 0.8. NOT zero, whatever the methodology says
    assert combine((0.8, 0.0)) == pytest.approx(0.8, rel=1e-6)
    assert combine((0.0, 0.8)) == pytest.approx(0.8, rel=1e-6)


def test_weights_cancel_for_a_one_leg_hit() -> None:
    # exp(0.3 ln 0.8 / 0.3) = 0.8: the weight appears above and below
    assert combine((0.0, 0.8), W70_30) == pytest.approx(0.8, rel=1e-6)


def test_weighted_both_legs() -> None:
    # exp((0.7 ln 0.5 + 0.3 ln 1.0) / 1.0) = 0.5^0.7 = 0.6155722
    assert combine((0.5, 1.0), W70_30) == pytest.approx(0.5**0.7, rel=1e-6)


def test_the_min_max_floor_drags_a_two_leg_hit_below_a_one_leg_hit() -> None:
    # top of BM25 (1.0) and bottom of vector (0.001): sqrt(1.0 * 0.001) = 0.0316
    # whereas the same doc absent from the vector leg would score 1.0
    assert combine((1.0, 0.001)) == pytest.approx(0.001**0.5, rel=1e-6)
    assert combine((1.0, 0.0)) == 1.0


def test_nothing_counted_is_zero() -> None:
    assert combine((0.0, 0.0)) == 0.0
    assert combine((-0.5, 0.0)) == 0.0
