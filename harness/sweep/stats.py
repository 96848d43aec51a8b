"""Paired statistics over per-query values: a sign-flip randomization test, a bootstrap
interval of the mean delta, and Holm's step-down correction across a family.

Every random draw comes from ``numpy.random.Generator(PCG64(seed))``, so a result depends on
the seed and the inputs' order only, never on PYTHONHASHSEED, the platform or the thread count.
Callers pass deltas in a fixed order (sorted query ids).

* ``paired_randomization``: under H0 (the arm and the control are exchangeable per query) each
  per-query delta's sign is a coin flip. The two-sided p-value is the share of sign assignments
  whose |mean| reaches the observed |mean|. With ``2**n <= permutations`` every assignment is
  enumerated (exact); otherwise ``permutations`` random ones are drawn and the identity is
  counted in, ``p = (hits + 1) / (permutations + 1)``, so p is never 0 (Phipson & Smyth 2010).
* ``paired_bootstrap``: resample the query set with replacement, take the mean delta; the
  interval is the 2.5th and 97.5th percentiles of those means (percentile bootstrap).
* ``holm``: sort p ascending, multiply the i-th (0-based) by ``m - i``, cap at 1, and carry the
  running maximum so adjusted values never decrease with the raw ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.random import PCG64, Generator

DEFAULT_SEED = 20260812
DEFAULT_PERMUTATIONS = 10_000
DEFAULT_RESAMPLES = 10_000
DEFAULT_LEVEL = 0.95
_CHUNK = 1_000  # draws per block: bounds memory at CHUNK x n floats
# |mean| comparisons tolerate rounding: a relabelling with the same |sum| must count as a hit.
_RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RandomizationResult:
    n: int
    mean_delta: float | None
    p_value: float | None
    method: str  # "exact" | "monte-carlo" | "undefined"
    permutations: int
    seed: int


@dataclass(frozen=True)
class BootstrapResult:
    n: int
    mean_delta: float | None
    low: float | None
    high: float | None
    level: float
    resamples: int
    seed: int


@dataclass(frozen=True)
class PairedResult:
    """A delta's whole paired evidence: the randomization p and the bootstrap interval."""

    n: int
    mean_delta: float | None
    p_value: float | None
    method: str
    ci_low: float | None
    ci_high: float | None
    level: float
    permutations: int
    resamples: int
    seed: int


def _as_array(deltas: Sequence[float] | np.ndarray) -> np.ndarray:
    values = np.asarray(deltas, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"deltas must be one-dimensional, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise ValueError("deltas must be finite (a per-query measure was inf or nan)")
    return values


def paired_deltas(treatment: Sequence[float], control: Sequence[float]) -> np.ndarray:
    """Per-query ``treatment - control``, in the order given."""
    a, b = _as_array(treatment), _as_array(control)
    if a.shape != b.shape:
        raise ValueError(f"paired values differ in length: {a.shape[0]} vs {b.shape[0]}")
    return a - b


def _hits(sums: np.ndarray, observed: float) -> int:
    threshold = observed - _RELATIVE_TOLERANCE * max(1.0, observed)
    return int(np.count_nonzero(np.abs(sums) >= threshold))


def paired_randomization(deltas: Sequence[float] | np.ndarray, *, permutations: int = DEFAULT_PERMUTATIONS,
                         seed: int = DEFAULT_SEED) -> RandomizationResult:
    """Two-sided sign-flip test of mean(deltas) == 0."""
    return randomizations([deltas], permutations=permutations, seed=seed)[0]


def randomizations(many: Sequence[Sequence[float] | np.ndarray], *, permutations: int = DEFAULT_PERMUTATIONS,
                   seed: int = DEFAULT_SEED) -> list[RandomizationResult]:
    """``paired_randomization`` of each of ``many``. The relabellings depend on the seed and the number of
    deltas only, so tests of the same length share them: each block of signs is drawn once and multiplied
    with all their deltas at once (one matrix product instead of one per test). A test's p is the one it
    gets alone: the same relabellings, and ``_hits``'s tolerance absorbs the products' rounding."""
    if permutations < 1:
        raise ValueError("permutations must be at least 1")
    arrays = [_as_array(d) for d in many]
    results: list[RandomizationResult | None] = [None] * len(arrays)
    by_length: dict[int, list[int]] = {}
    for i, d in enumerate(arrays):
        n = d.size
        if n == 0:
            results[i] = RandomizationResult(0, None, None, "undefined", permutations, seed)
        elif not d.any():  # every relabelling of all-zero deltas reaches |sum| = 0: p = 1, exactly
            results[i] = RandomizationResult(n, float(d.mean()), 1.0, "exact", permutations, seed)
        else:
            by_length.setdefault(n, []).append(i)
    for n, members in by_length.items():
        stacked = np.stack([arrays[i] for i in members], axis=1)  # n x tests
        # Compare |sum| rather than |mean|: the same statistic, without a division's rounding.
        observed = [float(abs(arrays[i].sum())) for i in members]
        hits = np.zeros(len(members), dtype=np.int64)
        exact = n <= 62 and 2 ** n <= permutations
        for signs in _sign_blocks(n, permutations, seed, exact):
            hits += _hits_each(signs @ stacked, observed)
        for j, i in enumerate(members):
            mean = float(arrays[i].mean())
            if exact:
                results[i] = RandomizationResult(n, mean, int(hits[j]) / 2 ** n, "exact", permutations, seed)
            else:
                results[i] = RandomizationResult(n, mean, (int(hits[j]) + 1) / (permutations + 1), "monte-carlo",
                                                 permutations, seed)
    return [r for r in results if r is not None]


def _sign_blocks(n: int, permutations: int, seed: int, exact: bool) -> Iterator[np.ndarray]:
    """The relabellings of ``n`` deltas as rows of +-1: every one when ``exact``, else ``permutations``
    drawn from the seed in blocks of ``_CHUNK``."""
    if exact:
        yield np.array(list(itertools.product((1.0, -1.0), repeat=n)), dtype=np.float64)
        return
    rng = Generator(PCG64(seed))
    remaining = permutations
    while remaining:
        block = min(_CHUNK, remaining)
        yield rng.integers(0, 2, size=(block, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        remaining -= block


def _hits_each(sums: np.ndarray, observed: Sequence[float]) -> np.ndarray:
    """``_hits`` of each column of ``sums`` (relabellings x tests) against its test's observed |sum|."""
    return np.array([_hits(sums[:, j], o) for j, o in enumerate(observed)], dtype=np.int64)


def paired_bootstrap(deltas: Sequence[float] | np.ndarray, *, resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL) -> BootstrapResult:
    """Percentile bootstrap interval of the mean delta (queries resampled with replacement)."""
    return bootstraps([deltas], resamples=resamples, seed=seed, level=level)[0]


def bootstraps(many: Sequence[Sequence[float] | np.ndarray], *, resamples: int = DEFAULT_RESAMPLES,
               seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL) -> list[BootstrapResult]:
    """``paired_bootstrap`` of each of ``many``: tests of the same length share each block of resampled
    indices (drawn once), and each test's means are computed from them as it computes them alone, so
    every interval is the bytes it is alone."""
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    arrays = [_as_array(d) for d in many]
    results: list[BootstrapResult | None] = [None] * len(arrays)
    by_length: dict[int, list[int]] = {}
    for i, d in enumerate(arrays):
        n = d.size
        if n == 0:
            results[i] = BootstrapResult(0, None, None, None, level, resamples, seed)
        elif np.all(d == d[0]):  # every resample of a constant has the same mean
            results[i] = BootstrapResult(n, float(d[0]), float(d[0]), float(d[0]), level, resamples, seed)
        else:
            by_length.setdefault(n, []).append(i)
    tail = (1.0 - level) / 2.0
    for n, members in by_length.items():
        rng = Generator(PCG64(seed))
        means = {i: np.empty(resamples, dtype=np.float64) for i in members}
        done = 0
        while done < resamples:
            block = min(_CHUNK, resamples - done)
            idx = rng.integers(0, n, size=(block, n))
            for i in members:
                means[i][done:done + block] = arrays[i][idx].mean(axis=1)
            done += block
        for i in members:
            low, high = np.quantile(means[i], [tail, 1.0 - tail])
            results[i] = BootstrapResult(n, float(arrays[i].mean()), float(low), float(high), level, resamples, seed)
    return [r for r in results if r is not None]


def paired_test(deltas: Sequence[float] | np.ndarray, *, permutations: int = DEFAULT_PERMUTATIONS,
                resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                level: float = DEFAULT_LEVEL) -> PairedResult:
    return paired_tests([deltas], permutations=permutations, resamples=resamples, seed=seed, level=level)[0]


def paired_tests(many: Sequence[Sequence[float] | np.ndarray], *, permutations: int = DEFAULT_PERMUTATIONS,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                 level: float = DEFAULT_LEVEL) -> list[PairedResult]:
    """``paired_test`` of each of ``many``, the random draws shared by tests of the same length
    (``randomizations``, ``bootstraps``): what a collector comparing every measure of one row calls."""
    tests = randomizations(many, permutations=permutations, seed=seed)
    intervals = bootstraps(many, resamples=resamples, seed=seed, level=level)
    return [PairedResult(n=t.n, mean_delta=t.mean_delta, p_value=t.p_value, method=t.method, ci_low=b.low,
                         ci_high=b.high, level=level, permutations=permutations, resamples=resamples, seed=seed)
            for t, b in zip(tests, intervals, strict=True)]


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values, in the input's order; ``None`` stays ``None``.

    ``m`` counts the defined p-values only: an undefined test is not a test that was run.
    """
    defined = [(p, i) for i, p in enumerate(p_values) if p is not None]
    for p, _ in defined:
        if not (0.0 <= p <= 1.0) or math.isnan(p):
            raise ValueError(f"p-value {p!r} is not in [0, 1]")
    m = len(defined)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(defined, key=lambda pair: (pair[0], pair[1]))):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
