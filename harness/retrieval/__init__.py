"""Retrieval: hybrid fusion, the fusion window, diversity sampling (rerank and the router join later).

Fusion arithmetic lives in :mod:`harness.retrieval.fusion` and reproduces OpenSearch's
neural-search search pipelines client-side (docs/fusion.md names the source it follows).
"""

from harness.retrieval.diversity import diversity_sample
from harness.retrieval.window import fusion_window

__all__ = ["diversity_sample", "fusion_window"]
