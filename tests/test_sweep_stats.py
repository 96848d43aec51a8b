"""Paired randomization, bootstrap and Holm, against values worked out by hand."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as scipy_stats

from harness.sweep.stats import (
    holm,
    paired_bootstrap,
    paired_deltas,
    paired_randomization,
    paired_test,
    paired_tests,
)


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


# --- against scipy.stats on the same seeded data --------------------------------------------------
# scipy cannot replace these functions (Holm is not in scipy.stats, and the sign-flip test's
# seeding and chunking are part of the committed results), but it is an independent
# implementation of both: where it enumerates, the answers must be equal; where both sample, they
# must agree within their Monte-Carlo error. The seeds are fixed, so none of this is flaky.

def _mean_delta(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def _scipy_sign_flip(treatment: np.ndarray, control: np.ndarray, n_resamples: float, seed: int = 0) -> float:
    # permutation_type="samples" swaps treatment and control within each pair: a sign flip of that delta.
    result = scipy_stats.permutation_test((treatment, control), _mean_delta, permutation_type="samples",
                                          n_resamples=n_resamples, vectorized=True,
                                          random_state=np.random.default_rng(seed))
    return float(result.pvalue)


# (treatment, control) per query: measure-like values with ties, a float-rounding tie, no overlap at all.
_EXACT_CASES = {
    "ndcg-like, with ties": ([0.6131, 1.0, 0.0, 0.3869, 0.5, 1.0, 0.6309, 0.0, 0.4307, 1.0],
                             [0.5, 1.0, 0.0, 0.3869, 0.6309, 0.6131, 0.5, 0.0, 0.3869, 0.75]),
    "reciprocal ranks": ([1.0, 0.5, 1 / 3, 0.25, 1.0, 0.0, 1.0], [0.5, 0.5, 1.0, 1 / 3, 1.0, 0.2, 0.5]),
    "a tie only rounding hides": ([0.1, 0.2, 0.3, -0.6], [0.0, 0.0, 0.0, 0.0]),
    "every delta positive": ([float(i) for i in range(1, 11)], [0.0] * 10),
    "two pairs": ([0.7, 0.2], [0.1, 0.3]),
}


@pytest.mark.parametrize("case", sorted(_EXACT_CASES))
def test_exact_sign_flip_p_equals_scipys_enumeration(case: str) -> None:
    # With n_resamples=inf scipy enumerates all 2**n within-pair swaps; paired_randomization enumerates
    # them too when 2**n <= permutations. Its two-sided p is 2 x min(one-sided p); the sign-flip null is
    # symmetric, so that is the share of |sum| >= observed: the same number, not merely a close one.
    treatment, control = (np.array(v) for v in _EXACT_CASES[case])
    ours = paired_randomization(paired_deltas(treatment, control), permutations=2 ** treatment.size)
    assert ours.method == "exact"
    assert ours.p_value == _scipy_sign_flip(treatment, control, np.inf)


def _seeded_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20260812)
    treatment = np.round(rng.uniform(0.0, 1.0, n), 4)
    control = np.round(np.clip(treatment - rng.normal(0.08, 0.2, n), 0.0, 1.0), 4)
    return treatment, control


def test_monte_carlo_sign_flip_p_agrees_with_scipy_within_its_error() -> None:
    # 16 pairs: 65,536 sign assignments, enumerated here for the true p; both sample 10,000 of them.
    # Ours estimates p by a share of B draws (SE sqrt(p(1-p)/B)); scipy doubles a one-sided share
    # (SE sqrt(p(2-p)/B)). Each is held to 3 SE of the truth, and the two to 3 SE of their
    # difference; the +1 corrections add at most 2/(B+1). A test that halved p (one-sided by
    # mistake) would miss by p/2 ~ 0.065, over three times the tolerance (~0.018).
    treatment, control = _seeded_pairs(16)
    deltas = paired_deltas(treatment, control)
    exact = paired_randomization(deltas, permutations=2 ** 16)
    assert exact.method == "exact" and exact.p_value is not None
    p, b = exact.p_value, 10_000
    ours = paired_randomization(deltas, permutations=b, seed=20260812)
    assert ours.method == "monte-carlo" and ours.p_value is not None
    theirs = _scipy_sign_flip(treatment, control, b, seed=20260812)
    se_ours, se_theirs = math.sqrt(p * (1 - p) / b), math.sqrt(p * (2 - p) / b)
    slack = 2 / (b + 1)
    assert 0.05 < p < 0.5  # a p where the comparison has power
    assert abs(ours.p_value - p) <= 3 * se_ours + slack
    assert abs(theirs - p) <= 3 * se_theirs + slack
    assert abs(ours.p_value - theirs) <= 3 * math.hypot(se_ours, se_theirs) + slack


def _scipy_percentile_interval(deltas: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    result = scipy_stats.bootstrap((deltas,), np.mean, n_resamples=resamples, method="percentile",
                                   confidence_level=0.95, vectorized=True,
                                   random_state=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def test_bootstrap_interval_agrees_with_scipy_within_its_error() -> None:
    # Independent streams (scipy gets another seed). A percentile estimated from B resamples has
    # SE sqrt(q(1-q)/B) / f(x_q); with the bootstrap distribution of the mean near normal
    # (sd s/sqrt(n), s the deltas' sd) f(x_q) = phi(z_q) * sqrt(n) / s. The two estimates are
    # held to 3 SE of their difference, sqrt(2) x that: here ~0.11 bootstrap sd, while a
    # 90% interval mistaken for 95% would move each end by ~0.32 sd.
    treatment, control = _seeded_pairs(60)
    deltas = paired_deltas(treatment, control)
    b = 10_000
    ours = paired_bootstrap(deltas, resamples=b, seed=20260812)
    assert ours.low is not None and ours.high is not None
    low, high = _scipy_percentile_interval(deltas, b, seed=7)
    sd = float(deltas.std()) / math.sqrt(deltas.size)
    q, z = 0.025, 1.959963984540054
    se = math.sqrt(q * (1 - q) / b) * sd / (math.exp(-z * z / 2) / math.sqrt(2 * math.pi))
    tolerance = 3 * math.sqrt(2) * se
    assert abs(ours.low - low) <= tolerance
    assert abs(ours.high - high) <= tolerance


def test_bootstrap_interval_equals_scipys_on_the_same_stream() -> None:
    # Both draw resamples as Generator(PCG64(seed)).integers(0, n, (B, n)) and take linear-interpolated
    # percentiles of the means, so the same seed gives the same interval (to rounding in the means'
    # summation order). This holds for the scipy pinned here; if a scipy release changes how it
    # draws, this test fails and the tolerance test above still states the agreement that matters.
    deltas = paired_deltas(*_seeded_pairs(40))
    ours = paired_bootstrap(deltas, resamples=5_000, seed=11)
    assert (ours.low, ours.high) == pytest.approx(_scipy_percentile_interval(deltas, 5_000, seed=11),
                                                  rel=0, abs=1e-12)


def test_tests_together_are_each_test_alone() -> None:
    # what the collector does per corpus x class (every measure at once, draws shared by length) gives
    # each test's result alone: exact and Monte Carlo lengths, all-zero, constant and empty deltas mixed
    rng = np.random.default_rng(21)
    many = [rng.normal(0.0, 1.0, 40), rng.normal(0.3, 1.0, 40), [0.0] * 40, [0.25] * 40, [],
            rng.normal(0.1, 0.2, 9), rng.normal(-0.2, 0.5, 9), rng.normal(0.0, 1.0, 40) * 1e-3]
    together = paired_tests(many, permutations=1500, resamples=1200, seed=8)
    alone = [paired_test(d, permutations=1500, resamples=1200, seed=8) for d in many]
    assert together == alone
    assert {r.method for r in together} == {"exact", "monte-carlo", "undefined"}
    assert len({r.p_value for r in together[:2]}) == 2  # two different tests, not one result copied
