"""geometric_mean combination, as neural-search's GeometricMeanScoreCombinationTechnique.

``exp(sum(w_i * ln s_i) / sum(w_i))`` over the legs with ``s_i > 0`` only: a score
``<= 0`` is skipped, weight and all ("ln() of 0 is not defined"). Because an absent leg
is ``0.0``, a one-leg hit is not annihilated, it keeps its own normalized score:
``exp(w ln s / w) = s`` whatever the weights. Float/double mix as in the source: the
running log-sum is a float, each term ``w * Math.log(s)`` is added in double and the sum
cast back to float; ``exp`` is taken in double of the float quotient and cast to float.
``0.0`` if no leg counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.retrieval.fusion.base import ZERO, check_weights, f32, weight_for


def combine(scores: Sequence[np.float32], weights: Sequence[np.float32] | None) -> np.float32:
    check_weights(scores, weights)
    weighted_ln_sum = ZERO
    sum_of_weights = ZERO
    for index, score in enumerate(scores):
        if score <= 0:
            continue
        weight = weight_for(weights, index)
        sum_of_weights = sum_of_weights + weight
        weighted_ln_sum = f32(float(weighted_ln_sum) + float(weight) * math.log(float(score)))
    if sum_of_weights == 0:
        return ZERO
    return f32(math.exp(float(weighted_ln_sum / sum_of_weights)))
