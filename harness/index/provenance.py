"""The embedding provenance survey: read from the documents, never from settings.

Verdicts: ``empty`` (no documents), ``unattributed`` (no document names its model),
``uniform`` (every document names the same model), ``partially_unattributed`` (one
named model plus unattributed documents), ``mixed`` (two or more named models). A mixed
vector space fused two incomparable populations: results over it are refused (exit 3).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from harness.errors import RefusedError

UNATTRIBUTED = {"", "neural", "unknown", None}


def survey(models: Iterable[str | None], *, dimension: int | None, configured: str | None) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    unattributed = 0
    total = 0
    for model in models:
        total += 1
        if model in UNATTRIBUTED:
            unattributed += 1
        else:
            counts[str(model)] += 1
    if total == 0:
        verdict = "empty"
    elif not counts:
        verdict = "unattributed"
    elif len(counts) > 1:
        verdict = "mixed"
    elif unattributed:
        verdict = "partially_unattributed"
    else:
        verdict = "uniform"
    return {
        "embedding_models": dict(sorted(counts.items())),
        "embedding_verdict": verdict,
        "embedding_unattributed": unattributed,
        "embedding_dimension": dimension,
        "configured_embedding_model": configured,
        "documents": total,
    }


def refuse_mixed(block: dict[str, Any]) -> None:
    if block["embedding_verdict"] == "mixed":
        models = ", ".join(block["embedding_models"])
        raise RefusedError(
            f"the index holds a mixed vector space ({models}); cosine across two models is not a "
            "similarity, so no results are written — rebuild the index with one model"
        )
