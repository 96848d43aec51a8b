"""Paired randomization, bootstrap and Holm, against values worked out by hand."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from harness.sweep.stats import holm, paired_bootstrap, paired_deltas, paired_randomization, paired_test


def test_all_zero_deltas() -> None:
    result = paired_test([0.0] * 40, permutations=500, resamples=500, seed=1)
    assert result.p_value == 1.0
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert result.mean_delta == 0.0


def test_exact_enumeration_by_hand() -> None:
    # d = (1, 2, 3): the eight sign assignments sum to ±6, ±4, ±2, 0, 0. |sum| >= 6 for two of
    # them (all +, all -), so p = 2/8.
    result = paired_randomization([1.0, 2.0, 3.0], permutations=1000)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(0.25)
    # d = (1, 1, 1, 1): |sum| = 4 only for all + and all -: 2/16.
    assert paired_randomization([1.0] * 4, permutations=16).p_value == pytest.approx(0.125)
    # d = (3, -1): sums 2, 4, -4, -2; |sum| >= 2 for all four.
    assert paired_randomization([3.0, -1.0]).p_value == 1.0


def test_rounding_cannot_hide_a_tie() -> None:
    # The true sum is 0, so every relabelling reaches it and p = 1. In floating point the observed
    # sum is 1.1e-16 while the identity relabelling's (a matrix product) is 5.6e-17: compared
    # exactly, two of sixteen would miss and p would read 14/16.
    assert paired_randomization([0.1, 0.2, 0.3, -0.6]).p_value == 1.0


def test_monte_carlo_p_is_plus_one_corrected_and_seeded() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(1.0, 0.1, size=30)  # every delta positive: no relabelling reaches the observed |sum|
    result = paired_randomization(d, permutations=999, seed=5)
    assert result.method == "monte-carlo"
    assert result.p_value == pytest.approx(1 / 1000)
    noisy = rng.normal(0.0, 1.0, size=50)
    a = paired_randomization(noisy, permutations=2000, seed=11)
    b = paired_randomization(noisy, permutations=2000, seed=11)
    c = paired_randomization(noisy, permutations=2000, seed=12)
    assert a == b
    assert a.p_value is not None and c.p_value is not None
    assert a.p_value != c.p_value  # another seed draws other relabellings (fixed inputs: not flaky)
    assert 0.0 < a.p_value <= 1.0


def test_sign_is_irrelevant_to_two_sided_p() -> None:
    d = np.linspace(-0.3, 1.0, 25)
    assert paired_randomization(d, permutations=3000, seed=3).p_value == \
        paired_randomization(-d, permutations=3000, seed=3).p_value


def test_bootstrap_interval() -> None:
    constant = paired_bootstrap([0.25] * 10, resamples=300, seed=2)
    assert (constant.low, constant.high) == (0.25, 0.25)
    single = paired_bootstrap([0.5], resamples=100, seed=2)
    assert (single.low, single.high) == (0.5, 0.5)
    # Two values: a resample's mean is 0 (both first), 0.5 or 1 (both second): the interval lies in [0, 1]
    # and, with enough resamples, reaches both ends.
    two = paired_bootstrap([0.0, 1.0], resamples=4000, seed=2)
    assert (two.low, two.high) == (0.0, 1.0)
    d = np.random.default_rng(1).normal(0.2, 0.05, size=200)
    wide = paired_bootstrap(d, resamples=2000, seed=9)
    assert wide.low is not None and wide.high is not None
    assert wide.low < float(d.mean()) < wide.high
    assert wide == paired_bootstrap(d, resamples=2000, seed=9)


def test_empty_is_undefined() -> None:
    result = paired_test([], permutations=10, resamples=10)
    assert (result.n, result.p_value, result.ci_low, result.mean_delta) == (0, None, None, None)


def test_refuses_non_finite() -> None:
    with pytest.raises(ValueError, match="finite"):
        paired_randomization([1.0, float("inf")])
    with pytest.raises(ValueError, match="length"):
        paired_deltas([1.0], [1.0, 2.0])


def test_holm_by_hand() -> None:
    # sorted: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> running max 0.06.
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_keeps_none_and_is_monotone() -> None:
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([None, 0.02, None, 0.04]) == [None, pytest.approx(0.04), None, pytest.approx(0.04)]
    assert holm([]) == []
    raw = [0.001, 0.2, 0.013, 0.04, 0.5, 0.011]
    adjusted = holm(raw)
    order = np.argsort(raw)
    values = [adjusted[i] for i in order]
    assert all(v is not None for v in values)
    assert values == sorted(v for v in values if v is not None)
    assert all(a is not None and a >= p for a, p in zip(adjusted, raw, strict=True))
    with pytest.raises(ValueError):
        holm([1.5])


def test_independent_of_pythonhashseed() -> None:
    code = ("from harness.sweep.stats import paired_test;"
            "r = paired_test([0.1*i - 0.4 for i in range(30)], permutations=700, resamples=700, seed=4);"
            "print(repr((r.p_value, r.ci_low, r.ci_high)))")
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outputs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True).stdout)
    assert len(outputs) == 1
