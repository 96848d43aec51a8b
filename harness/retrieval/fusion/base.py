"""Types and float32 helpers shared by every fusion technique.

OpenSearch holds every score as a Java ``float`` and the neural-search processors do their
arithmetic in ``float`` (IEEE binary32, round-to-nearest-even; Java 17 is strict IEEE).
Scores here are therefore ``numpy.float32`` from the moment a leg is checked until the
fused list is returned, so the embedded backend produces the engine's values bit for bit
and, above all, the engine's ties: the harness's tie policy only matters where scores tie,
and double arithmetic would tie (and untie) different documents than the engine does.

A *leg* is one sub-query's hits as the engine hands them to the processor: best first,
each document once, every score a finite number > 0. The hybrid query's collector never
puts a document into a sub-query's list with score 0 (0 means "this sub-query did not
match"), and BM25 and k-NN scores are never negative, so a leg that breaks those rules is
a bug in the backend that produced it and is refused here rather than fused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Literal

import numpy as np

FusionMethod = Literal["rrf", "normalization"]
NormalizationTechniqueName = Literal["min_max", "l2", "z_score"]
CombinationTechniqueName = Literal["arithmetic_mean", "geometric_mean", "harmonic_mean"]

# A leg as a backend returns it: (doc_id, raw score), best first.
Leg = Sequence[tuple[str, float]]
# A checked leg, or one after normalization: scores as the engine's float.
ScoredLeg = list[tuple[str, np.float32]]
# The fused list: (doc_id, fused score), sorted by fused_order().
Fused = list[tuple[str, float]]

# leg -> normalized leg (one sub-query at a time: our index is one shard, see docs/fusion.md)
Normalizer = Callable[[ScoredLeg], ScoredLeg]
# scores of one document, one per leg (0.0 where the leg did not return it), and the
# weights (None: every leg weighs 1.0) -> the combined score
Combiner = Callable[[Sequence[np.float32], Sequence[np.float32] | None], np.float32]

ZERO = np.float32(0.0)
ONE = np.float32(1.0)


def f32(value: float) -> np.float32:
    """Round a double to the nearest float, as Java's ``(float)`` cast does."""
    return np.float32(value)


def fraction_to_f32(value: Fraction) -> np.float32:
    """The float nearest to an exact rational (no double rounding through a double).

    ``float(Fraction)`` is correctly rounded to double; rounding that double to float can
    land one float off when the double sits on a float midpoint, so the neighbours are
    compared exactly.
    """
    guess = np.float32(float(value))
    candidates = (
        np.nextafter(guess, np.float32(-np.inf)),
        guess,
        np.nextafter(guess, np.float32(np.inf)),
    )
    return min(candidates, key=lambda c: abs(Fraction(float(c)) - value))


def weight_for(weights: Sequence[np.float32] | None, index: int) -> np.float32:
    """The weight of sub-query ``index``: the configured one, else 1.0 (ScoreCombinationUtil)."""
    if weights is None or index >= len(weights):
        return ONE
    return weights[index]


def check_weights(scores: Sequence[np.float32], weights: Sequence[np.float32] | None) -> None:
    """The engine refuses a weight list whose length differs from the number of sub-queries."""
    if weights is not None and len(weights) != len(scores):
        raise ValueError(
            f"number of weights [{len(weights)}] must match number of sub-queries [{len(scores)}]"
        )


def check_leg(leg: Leg, name: str) -> ScoredLeg:
    """Validate one leg and return it with float32 scores; raises ValueError on a bad leg."""
    checked: ScoredLeg = []
    seen: set[str] = set()
    previous: np.float32 | None = None
    for position, (doc_id, score) in enumerate(leg):
        if doc_id in seen:
            raise ValueError(f"{name} leg lists {doc_id!r} twice; a sub-query returns each document once")
        seen.add(doc_id)
        if not math.isfinite(score) or score <= 0:
            raise ValueError(
                f"{name} leg: {doc_id!r} at position {position} has score {score!r}; the engine only "
                "fuses finite scores > 0 (a 0 means the sub-query did not match)"
            )
        as_float = f32(score)
        if as_float == 0:
            raise ValueError(f"{name} leg: {doc_id!r} has score {score!r}, which is 0 as a float")
        if previous is not None and as_float > previous:
            raise ValueError(
                f"{name} leg is not best-first: {doc_id!r} at position {position} scores {score!r}, "
                "above the hit before it; rank order is what RRF reads"
            )
        previous = as_float
        checked.append((doc_id, as_float))
    return checked


def fused_order(combined: Mapping[str, np.float32]) -> Fused:
    """Sort by fused score, highest first, then by doc_id ascending.

    The engine sorts by ``Float.compare`` descending (NaN above everything) with ties left
    in ``HashMap`` iteration order over Lucene's internal doc ids, which nothing outside
    the shard can reproduce. Here ties fall to ``doc_id`` so the output is deterministic;
    the retrieve stage re-sorts by ``(-score, doc_type, file_uuid, chunk_index)`` anyway.
    """

    def key(item: tuple[str, np.float32]) -> tuple[bool, float, str]:
        doc_id, score = item
        is_nan = math.isnan(score)
        return (not is_nan, 0.0 if is_nan else -float(score), doc_id)

    return [(doc_id, float(score)) for doc_id, score in sorted(combined.items(), key=key)]
