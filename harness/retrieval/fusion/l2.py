"""l2 normalization, as neural-search's L2ScoreNormalizationTechnique (2.19.x).

Per sub-query: ``norm = sqrt(sum of score^2)`` accumulated in float (``acc += s * s``),
the square root taken in double and cast back to float; each hit becomes
``score / norm`` in float, or ``0.0`` when the norm is 0. No floor, no special case for a
one-hit leg (it becomes ``s / s = 1.0``); a leg of ``n`` equal scores becomes
``1/sqrt(n)`` each.
"""

from __future__ import annotations

import math

import numpy as np

from harness.retrieval.fusion.base import ZERO, ScoredLeg, f32

MIN_SCORE = ZERO


def l2_norm(leg: ScoredLeg) -> np.float32:
    accumulated = ZERO
    for _, score in leg:
        accumulated = accumulated + score * score
    return f32(math.sqrt(float(accumulated)))


def normalize(leg: ScoredLeg) -> ScoredLeg:
    norm = l2_norm(leg)
    return [(doc_id, MIN_SCORE if norm == 0 else score / norm) for doc_id, score in leg]
