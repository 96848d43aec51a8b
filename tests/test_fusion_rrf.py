"""RRF: neural-search 2.19.x score-ranker-processor (RRF normalization + RRF combination)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.retrieval.fusion import FusionConfig, fuse, rrf
from harness.retrieval.fusion.base import check_leg

RRF30 = FusionConfig()
RRF60 = FusionConfig(method="rrf", rank_constant=60, selected_explicitly=True)


def test_reciprocal_rank_is_rounded_to_ten_places_then_to_float() -> None:
    # 1/31 = 0.03225806451..., 10 places HALF_UP: 0.0322580645
    assert rrf.reciprocal_rank_score(30, 1) == np.float32(0.0322580645)
    assert float(rrf.reciprocal_rank_score(30, 1)) == pytest.approx(1 / 31, rel=1e-7)


def test_half_up_rounding_is_visible_in_the_float() -> None:
    # 1/(2000+48) = 1/2048 = 0.00048828125 exactly; to 10 places HALF_UP: 0.0004882813,
    # which as a float is one ulp above 2^-11. A plain 1/2048 would be 2^-11 itself.
    assert rrf.reciprocal_rank_score(2000, 48) == np.float32(0.0004882813)
    assert rrf.reciprocal_rank_score(2000, 48) != np.float32(2**-11)


def test_rank_is_position_in_the_leg_not_the_raw_score() -> None:
    # equal raw scores still get ranks 1 and 2: 1/31 and 1/32
    leg = check_leg([("a", 2.0), ("b", 2.0)], "bm25")
    assert rrf.normalize(leg, 30) == [
        ("a", rrf.reciprocal_rank_score(30, 1)),
        ("b", rrf.reciprocal_rank_score(30, 2)),
    ]


def test_ranx_style_k60() -> None:
    # doc at rank 3 in BM25 and rank 1 in the vector leg: 1/(60+3) + 1/(60+1) = 0.0322664
    fused = dict(fuse(RRF60, [("x", 9.0), ("y", 8.0), ("d", 7.0)], [("d", 0.9), ("z", 0.8)]))
    assert fused["d"] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1), rel=1e-6)
    assert fused["x"] == pytest.approx(1 / (60 + 1), rel=1e-6)
    assert fused["z"] == pytest.approx(1 / (60 + 2), rel=1e-6)


def test_k30_both_legs_and_single_leg_hits() -> None:
    # BM25: a b c; vector: b d a
    # b: 1/(30+2) + 1/(30+1) = 0.0635081   a: 1/31 + 1/33 = 0.0625611
    # d: 1/32 = 0.03125 (vector only)      c: 1/33 = 0.0303030 (BM25 only)
    fused = fuse(RRF30, [("a", 4.0), ("b", 3.0), ("c", 2.0)], [("b", 0.75), ("d", 0.625), ("a", 0.5)])
    assert [doc for doc, _ in fused] == ["b", "a", "d", "c"]
    expected = {"b": 1 / 32 + 1 / 31, "a": 1 / 31 + 1 / 33, "d": 1 / 32, "c": 1 / 33}
    for doc, score in fused:
        assert score == pytest.approx(expected[doc], rel=1e-6)


def test_fused_score_is_the_float_sum_of_the_rounded_terms() -> None:
    # exactly what the engine computes: 0f + float(0.0322580645) + float(0.0303030303)
    fused = dict(fuse(RRF30, [("a", 4.0)], [("x", 0.9), ("y", 0.8), ("a", 0.7)]))
    expected = np.float32(0.0) + np.float32(0.0322580645) + np.float32(0.0303030303)
    assert fused["a"] == float(expected)


def test_structural_ties_break_by_doc_id_whatever_the_leg_order() -> None:
    # rank 1 in one leg only: 1/31 each, a tie; broken by doc_id ascending
    assert fuse(RRF30, [("x", 1.0)], [("w", 0.5)]) == fuse(RRF30, [("w", 1.0)], [("x", 0.5)])
    assert [doc for doc, _ in fuse(RRF30, [("x", 1.0)], [("w", 0.5)])] == ["w", "x"]


def test_rank_constant_range_is_the_engine_s() -> None:
    for bad in (0, 10_001):
        with pytest.raises(ValueError, match="rank constant"):
            rrf.reciprocal_rank_score(bad, 1)
    assert rrf.reciprocal_rank_score(10_000, 1) == np.float32(0.0000999900)


def test_rrf_combination_takes_no_weights() -> None:
    with pytest.raises(ValueError, match="no weights"):
        rrf.combine([np.float32(0.1), np.float32(0.2)], (np.float32(0.7), np.float32(0.3)))
