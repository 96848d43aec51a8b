"""harmonic_mean combination (neural-search HarmonicMeanScoreCombinationTechnique, 2.19.x)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.fusion import harmonic

W70_30 = (np.float32(0.7), np.float32(0.3))


def combine(scores: tuple[float, ...], weights: tuple[np.float32, ...] | None = None) -> float:
    return float(harmonic.combine([np.float32(s) for s in scores], weights))


def test_unweighted_harmonic_mean() -> None:
    # 2 / (1/0.5 + 1/1.0) = 2 / 3
    assert combine((0.5, 1.0)) == pytest.approx(2 / 3, rel=1e-6)


def test_an_absent_leg_is_skipped_so_a_one_leg_hit_keeps_its_score() -> None:
    # 1 / (1/0.8) = 0.8, not 0
    assert combine((0.8, 0.0)) == pytest.approx(0.8, rel=1e-6)
    assert combine((0.0, 0.8), W70_30) == pytest.approx(0.8, rel=1e-6)  # 0.3 / (0.3/0.8)


def test_weighted_both_legs() -> None:
    # (0.7 + 0.3) / (0.7/0.5 + 0.3/1.0) = 1 / 1.7 = 0.5882353
    assert combine((0.5, 1.0), W70_30) == pytest.approx(1 / 1.7, rel=1e-6)


def test_the_min_max_floor_drags_a_two_leg_hit_down() -> None:
    # 2 / (1/1.0 + 1/0.001) = 2 / 1001 = 0.001998
    assert combine((1.0, 0.001)) == pytest.approx(2 / 1001, rel=1e-6)


def test_nothing_counted_is_zero() -> None:
    assert combine((0.0, 0.0)) == 0.0
