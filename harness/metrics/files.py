"""File-level measures derived from the chunk run.

The methodology shows most of the loss is picking the wrong recording, so each query
also gets file measures: the run is reduced to distinct files in order of each file's
first chunk, and the gold files are the files holding at least one relevant chunk.

* ``fileR@k``: share of gold files among the first k distinct files.
* ``fileRank``: 1-based rank of the best-ranked gold file; ``inf`` when none surfaced.
  Its aggregate is the median across queries (``inf`` when more than half never
  surfaced one), never a mean.
"""

from __future__ import annotations

import math
import statistics

from harness.model import RankedDoc


def file_order(docs: tuple[RankedDoc, ...] | list[RankedDoc]) -> list[str]:
    seen: dict[str, None] = {}
    for doc in docs:
        seen.setdefault(doc.file_uuid, None)
    return list(seen)


def file_measures(docs: tuple[RankedDoc, ...] | list[RankedDoc], gold_files: set[str]) -> dict[str, float]:
    order = file_order(docs)
    if not gold_files:
        raise ValueError("file measures need at least one gold file")
    rank = next((i + 1 for i, f in enumerate(order) if f in gold_files), math.inf)
    return {
        "fileR@1": len(gold_files.intersection(order[:1])) / len(gold_files),
        "fileR@10": len(gold_files.intersection(order[:10])) / len(gold_files),
        "fileRank": float(rank),
    }


def median_rank(ranks: list[float]) -> float:
    return float(statistics.median(ranks)) if ranks else math.inf
