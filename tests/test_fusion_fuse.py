"""fuse(): every normalization x combination, single-leg hits, edge legs, weights, leg checks.

Fixture legs used throughout (best first, as a backend returns them):

    BM25   a 4.0  b 3.0  c 2.0
    vector b 0.75 d 0.625 a 0.5

so a and b are two-leg hits, c is BM25-only and d is vector-only.

Per leg, by hand:
    min_max  BM25   a (4-2)/2 = 1.0, b 0.5, c 0 -> 0.001
             vector b (0.75-0.5)/0.25 = 1.0, d 0.5, a 0 -> 0.001
    l2       BM25   /sqrt(29):     a 0.742781, b 0.557086, c 0.371391
             vector /sqrt(1.203125): b 0.683763, d 0.569803, a 0.455842
    z_score  BM25   mean 3, sample std 1:     a z=1.0, b == mean -> raw max 4.0, c z=-1 -> 0.001
             vector mean 0.625, std 0.125:    b z=1.0, d == mean -> raw max 0.75, a z=-1 -> 0.001
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.retrieval.fusion import FusionConfig, fuse

BM25 = [("a", 4.0), ("b", 3.0), ("c", 2.0)]
VECTOR = [("b", 0.75), ("d", 0.625), ("a", 0.5)]
F = 0.001  # the min_max / z_score floor

L2_BM25 = {"a": 4 / math.sqrt(29), "b": 3 / math.sqrt(29), "c": 2 / math.sqrt(29)}
L2_VEC = {"b": 0.75 / math.sqrt(1.203125), "d": 0.625 / math.sqrt(1.203125), "a": 0.5 / math.sqrt(1.203125)}


def norm(normalization: str, combination: str, weights: tuple[float, float] | None = None) -> FusionConfig:
    return FusionConfig(
        method="normalization",
        normalization_technique=normalization,
        combination_technique=combination,
        weights=weights,
        selected_explicitly=True,
    )


def gm(x: float, y: float) -> float:
    return math.sqrt(x * y)


def hm(x: float, y: float) -> float:
    return 2 / (1 / x + 1 / y)


# expected fused scores; absent-leg rules: arithmetic counts the 0 (halves a one-leg hit),
# geometric and harmonic skip it (a one-leg hit keeps its own normalized score)
TABLE = [
    # min_max
    ("min_max", "arithmetic_mean", None, {"a": (1 + F) / 2, "b": (0.5 + 1) / 2, "c": F / 2, "d": 0.5 / 2}),
    ("min_max", "geometric_mean", None, {"a": gm(1, F), "b": gm(0.5, 1), "c": F, "d": 0.5}),
    ("min_max", "harmonic_mean", None, {"a": hm(1, F), "b": hm(0.5, 1), "c": F, "d": 0.5}),
    # 70/30: BM25 weighs 0.7
    ("min_max", "arithmetic_mean", (0.7, 0.3),
     {"a": 0.7 * 1 + 0.3 * F, "b": 0.7 * 0.5 + 0.3 * 1, "c": 0.7 * F, "d": 0.3 * 0.5}),
    ("min_max", "arithmetic_mean", (0.3, 0.7),
     {"a": 0.3 * 1 + 0.7 * F, "b": 0.3 * 0.5 + 0.7 * 1, "c": 0.3 * F, "d": 0.7 * 0.5}),
    ("min_max", "geometric_mean", (0.7, 0.3),
     {"a": F**0.3, "b": 0.5**0.7, "c": F, "d": 0.5}),
    ("min_max", "harmonic_mean", (0.7, 0.3),
     {"a": 1 / (0.7 / 1 + 0.3 / F), "b": 1 / (0.7 / 0.5 + 0.3 / 1), "c": F, "d": 0.5}),
    # l2
    ("l2", "arithmetic_mean", None, {
        "a": (L2_BM25["a"] + L2_VEC["a"]) / 2, "b": (L2_BM25["b"] + L2_VEC["b"]) / 2,
        "c": L2_BM25["c"] / 2, "d": L2_VEC["d"] / 2}),
    ("l2", "geometric_mean", None, {
        "a": gm(L2_BM25["a"], L2_VEC["a"]), "b": gm(L2_BM25["b"], L2_VEC["b"]),
        "c": L2_BM25["c"], "d": L2_VEC["d"]}),
    ("l2", "harmonic_mean", None, {
        "a": hm(L2_BM25["a"], L2_VEC["a"]), "b": hm(L2_BM25["b"], L2_VEC["b"]),
        "c": L2_BM25["c"], "d": L2_VEC["d"]}),
    # z_score (b and d sit exactly on their leg's mean, so they carry the raw max)
    ("z_score", "arithmetic_mean", None, {"a": (1 + F) / 2, "b": (4.0 + 1) / 2, "c": F / 2, "d": 0.75 / 2}),
    ("z_score", "geometric_mean", None, {"a": gm(1, F), "b": gm(4.0, 1), "c": F, "d": 0.75}),
    ("z_score", "harmonic_mean", None, {"a": hm(1, F), "b": hm(4.0, 1), "c": F, "d": 0.75}),
]


@pytest.mark.parametrize(("normalization", "combination", "weights", "expected"), TABLE)
def test_every_technique_on_the_fixture_legs(
    normalization: str, combination: str, weights: tuple[float, float] | None, expected: dict[str, float]
) -> None:
    fused = fuse(norm(normalization, combination, weights), BM25, VECTOR)
    assert sorted(doc for doc, _ in fused) == ["a", "b", "c", "d"]
    for doc, score in fused:
        assert score == pytest.approx(expected[doc], rel=1e-5), doc
        assert float(np.float32(score)) == score  # an engine float, not a double
    order = sorted(expected, key=lambda doc: (-expected[doc], doc))
    assert [doc for doc, _ in fused] == order


def test_weights_flip_the_winner() -> None:
    # min_max arithmetic: 70/30 puts a (BM25 top) first, 30/70 puts b (vector top) first
    assert fuse(norm("min_max", "arithmetic_mean", (0.7, 0.3)), BM25, VECTOR)[0][0] == "a"
    assert fuse(norm("min_max", "arithmetic_mean", (0.3, 0.7)), BM25, VECTOR)[0][0] == "b"


# Single-leg hits at the top of their leg, beside a hit both legs found:
#   BM25   bm25_top 8.0  both 6.0  bm25_bottom 4.0    -> min_max 1.0, 0.5, 0.001
#   vector vec_top 0.875 both 0.75 vec_bottom 0.625   -> min_max 1.0, 0.5, 0.001
SINGLE_BM25 = [("bm25_top", 8.0), ("both", 6.0), ("bm25_bottom", 4.0)]
SINGLE_VEC = [("vec_top", 0.875), ("both", 0.75), ("vec_bottom", 0.625)]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # arithmetic: one-leg hits halved: 1.0/2 = 0.5; both (0.5+0.5)/2 = 0.5 -> a three-way tie
        (norm("min_max", "arithmetic_mean"),
         {"bm25_top": 0.5, "vec_top": 0.5, "both": 0.5, "bm25_bottom": F / 2, "vec_bottom": F / 2}),
        # geometric / harmonic: one-leg hits keep 1.0 and outrank the two-leg hit's 0.5
        (norm("min_max", "geometric_mean"),
         {"bm25_top": 1.0, "vec_top": 1.0, "both": 0.5, "bm25_bottom": F, "vec_bottom": F}),
        (norm("min_max", "harmonic_mean"),
         {"bm25_top": 1.0, "vec_top": 1.0, "both": 0.5, "bm25_bottom": F, "vec_bottom": F}),
        # weights: arithmetic scales a one-leg hit by its leg's weight ...
        (norm("min_max", "arithmetic_mean", (0.7, 0.3)),
         {"bm25_top": 0.7, "vec_top": 0.3, "both": 0.5, "bm25_bottom": 0.7 * F, "vec_bottom": 0.3 * F}),
        # ... geometric and harmonic cancel it: w ln s / w, w / (w / s)
        (norm("min_max", "geometric_mean", (0.7, 0.3)),
         {"bm25_top": 1.0, "vec_top": 1.0, "both": 0.5, "bm25_bottom": F, "vec_bottom": F}),
        (norm("min_max", "harmonic_mean", (0.3, 0.7)),
         {"bm25_top": 1.0, "vec_top": 1.0, "both": 0.5, "bm25_bottom": F, "vec_bottom": F}),
        # rrf k=30: one-leg hits 1/31; both 1/32 + 1/32 = 1/16
        (FusionConfig(),
         {"bm25_top": 1 / 31, "vec_top": 1 / 31, "both": 1 / 16,
          "bm25_bottom": 1 / 33, "vec_bottom": 1 / 33}),
    ],
)
def test_single_leg_hits_under_each_combination(config: FusionConfig, expected: dict[str, float]) -> None:
    fused = fuse(config, SINGLE_BM25, SINGLE_VEC)
    for doc, score in fused:
        assert score == pytest.approx(expected[doc], rel=1e-5), doc
    assert [doc for doc, _ in fused] == sorted(expected, key=lambda doc: (-round(expected[doc], 9), doc))


def test_equal_score_legs() -> None:
    # min_max: all-equal legs score 1.0 each; arithmetic: p, q BM25-only (1+0)/2 = 0.5,
    # r in both (1+1)/2 = 1.0; p and q tie and fall to doc_id order
    fused = fuse(norm("min_max", "arithmetic_mean"), [("q", 2.0), ("p", 2.0), ("r", 2.0)], [("r", 0.5)])
    assert fused == [("r", 1.0), ("p", 0.5), ("q", 0.5)]


def test_a_leg_with_one_doc() -> None:
    # BM25 [a 3.7] -> 1.0; vector [a 0.9, b 0.6] -> a 1.0, b 0.001
    # arithmetic: a (1+1)/2 = 1.0, b (0+0.001)/2 = 0.0005
    fused = fuse(norm("min_max", "arithmetic_mean"), [("a", 3.7)], [("a", 0.9), ("b", 0.6)])
    assert fused[0] == ("a", 1.0)
    assert fused[1][0] == "b"
    assert fused[1][1] == pytest.approx(0.0005, rel=1e-6)


def test_an_empty_leg() -> None:
    # BM25 returned nothing: arithmetic halves every vector hit, geometric keeps it
    arithmetic = fuse(norm("min_max", "arithmetic_mean"), [], VECTOR)
    assert arithmetic[0] == ("b", 0.5) and arithmetic[1] == ("d", 0.25)
    geometric = fuse(norm("min_max", "geometric_mean"), [], VECTOR)
    assert geometric[0] == ("b", 1.0) and geometric[1] == ("d", 0.5)
    rrf = fuse(FusionConfig(), [("x", 1.0)], [])
    assert rrf == [("x", pytest.approx(1 / 31, rel=1e-6))]


def test_both_legs_empty() -> None:
    for config in (FusionConfig(), norm("z_score", "harmonic_mean")):
        assert fuse(config, [], []) == []


def test_inputs_are_not_modified_and_a_new_list_is_returned() -> None:
    bm25, vector = list(BM25), list(VECTOR)
    fuse(FusionConfig(), bm25, vector)
    assert bm25 == BM25 and vector == VECTOR


@pytest.mark.parametrize(
    ("leg", "message"),
    [
        ([("a", 2.0), ("a", 1.0)], "twice"),
        ([("a", 0.0)], "score"),
        ([("a", -1.0)], "score"),
        ([("a", float("nan"))], "score"),
        ([("a", float("inf"))], "score"),
        ([("a", 1.0), ("b", 2.0)], "best-first"),
        ([("a", 1e-50)], "0 as a float"),
    ],
)
def test_malformed_legs_are_refused(leg: list[tuple[str, float]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fuse(FusionConfig(), leg, [])
    with pytest.raises(ValueError, match=message):
        fuse(FusionConfig(), [], leg)
