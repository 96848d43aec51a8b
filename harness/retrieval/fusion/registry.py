"""Name -> implementation, one line per technique (a new technique is one file plus one line)."""

from __future__ import annotations

from harness.retrieval.fusion import arithmetic, geometric, harmonic, l2, min_max, z_score
from harness.retrieval.fusion.base import (
    CombinationTechniqueName,
    Combiner,
    NormalizationTechniqueName,
    Normalizer,
)

NORMALIZATION_TECHNIQUES: dict[NormalizationTechniqueName, Normalizer] = {
    "min_max": min_max.normalize,
    "l2": l2.normalize,
    "z_score": z_score.normalize,
}

COMBINATION_TECHNIQUES: dict[CombinationTechniqueName, Combiner] = {
    "arithmetic_mean": arithmetic.combine,
    "geometric_mean": geometric.combine,
    "harmonic_mean": harmonic.combine,
}
