"""Client-side hybrid fusion with the arithmetic of OpenSearch neural-search 2.19.x.

One module per technique (min_max, l2, z_score; arithmetic, geometric, harmonic; rrf), a
registry naming them, the arm's config and its pipeline id, and ``fuse``. docs/fusion.md
states every formula with the engine source it was read from.
"""

from harness.retrieval.fusion.base import Fused, Leg
from harness.retrieval.fusion.config import (
    CONFIGURED_RANK_CONSTANT,
    RESERVED_PIPELINE_ID,
    FusionConfig,
    parse_fusion_args,
)
from harness.retrieval.fusion.fuse import fuse
from harness.retrieval.fusion.registry import COMBINATION_TECHNIQUES, NORMALIZATION_TECHNIQUES

__all__ = [
    "COMBINATION_TECHNIQUES",
    "CONFIGURED_RANK_CONSTANT",
    "NORMALIZATION_TECHNIQUES",
    "RESERVED_PIPELINE_ID",
    "Fused",
    "FusionConfig",
    "Leg",
    "fuse",
    "parse_fusion_args",
]
