"""z_score normalization, as neural-search's ZScoreNormalizationTechnique.

Not in OpenSearch 2.19: it first shipped in neural-search 3.0.0.0 and is unchanged through
3.8.0.0. A 2.19 cluster refuses a pipeline naming it ("provided normalization technique
is not supported"); the embedded backend computes it as 3.x does (docs/fusion.md).

Per sub-query, the statistics are commons-math3 3.6.1 ``DescriptiveStatistics`` over the
hits' scores in leg order, in double, then cast to float:

* mean: ``xbar = sum / n``, corrected by ``+ sum(x - xbar) / n`` (``Mean``);
* standard deviation: the *sample* one, ``sqrt((sum(d^2) - (sum d)^2 / n) / (n - 1))``
  with ``d = x - mean`` (``Variance`` is bias-corrected by default); ``0.0`` for one hit;
* max and min of the leg.

Each hit then becomes, in this order of checks:

* the leg's raw *max* score if its score equals the (float) mean - a one-hit leg, a leg
  of equal scores, and the middle hit of an evenly spaced leg all take this branch, so
  a raw BM25 score can enter the combination unnormalized;
* the leg's raw *min* score if the standard deviation is 0;
* otherwise ``z = (score - mean) / std`` in float, and any ``z <= 0`` becomes ``0.001``.

So no negative z-score ever reaches the combiner: everything at or below the mean is
0.001, which arithmetic_mean counts as a (tiny) hit rather than skipping it.
"""

from __future__ import annotations

import math

import numpy as np

from harness.retrieval.fusion.base import ScoredLeg, f32

MIN_SCORE = np.float32(0.001)


def _mean(values: list[float]) -> float:
    total = 0.0
    for value in values:
        total += value
    n = float(len(values))
    xbar = total / n
    correction = 0.0
    for value in values:
        correction += value - xbar
    return xbar + correction / n


def _sample_std(values: list[float]) -> float:
    if len(values) == 1:
        return 0.0
    mean = _mean(values)
    accum = 0.0
    accum2 = 0.0
    for value in values:
        dev = value - mean
        accum += dev * dev
        accum2 += dev
    n = float(len(values))
    variance = (accum - (accum2 * accum2 / n)) / (n - 1.0)
    # Java's Math.sqrt of a (rounding-)negative variance is NaN, not an exception.
    return math.sqrt(variance) if variance >= 0 else math.nan


def normalize_score(
    score: np.float32, std: np.float32, mean: np.float32, highest: np.float32, lowest: np.float32
) -> np.float32:
    if mean == score:
        return highest
    if std == 0.0:
        return lowest
    z = (score - mean) / std
    return MIN_SCORE if z <= 0.0 else z


def normalize(leg: ScoredLeg) -> ScoredLeg:
    if not leg:
        return []
    values = [float(score) for _, score in leg]
    mean = f32(_mean(values))
    std = f32(_sample_std(values))
    highest = f32(max(values))
    lowest = f32(min(values))
    return [(doc_id, normalize_score(score, std, mean, highest, lowest)) for doc_id, score in leg]
