"""The gate's verdict (harness.sweep.gate) over hand-written cells: every delta below is written
by hand (the candidate_pool 12 ones are the methodology's Stage 5 numbers), none copied from a run."""

from __future__ import annotations

from typing import Any

import pytest

from harness.metrics.measures import RETRIEVAL_MEASURES
from harness.sweep.catalogue import Arm
from harness.sweep.gate import LOOKUP_REGRESSED, LOSS, NOT_COMPARABLE, SPLIT, WIN, verdict
from harness.sweep.gatespec import GateSpec

CORPORA = ("qmsum", "synthetic")
ARM = Arm(name="pool-12", family="pool", axis="candidate_pool", config={"stage": "retrieve"})


def cells(deltas: dict[tuple[str, str, str], float], default: float = 0.0) -> list[dict[str, Any]]:
    """Every corpus x class x retrieval measure; ``deltas`` overrides ``default``. A row delta of 0 on a
    cell whose queries still moved (``per_query_identical`` False) keeps the arm from reading as inert."""
    out = []
    for corpus, classes in (("qmsum", ("lookup", "summarize", "all")), ("synthetic", ("lookup", "multi_file", "all"))):
        for query_class in classes:
            for measure in RETRIEVAL_MEASURES:
                delta = deltas.get((corpus, query_class, measure), default)
                out.append({"corpus": corpus, "query_class": query_class, "measure": measure, "delta": delta,
                            "per_query_identical": False, "counts_match": True})
    return out


# Stage 5's candidate_pool 12 against pool 48: nDCG@10 up on every class of both corpora,
# synthetic lookup nDCG@5 -0.0155 and MRR -0.0178; everything else is taken as >= 0 (here +0.001).
POOL_12 = {
    ("qmsum", "all", "nDCG@10"): 0.0128, ("synthetic", "all", "nDCG@10"): 0.0342,
    ("qmsum", "lookup", "nDCG@10"): 0.0125, ("qmsum", "summarize", "nDCG@10"): 0.0137,
    ("synthetic", "lookup", "nDCG@10"): 0.0180, ("synthetic", "multi_file", "nDCG@10"): 0.0667,
    ("synthetic", "lookup", "nDCG@5"): -0.0155, ("synthetic", "lookup", "MRR"): -0.0178,
}


def test_candidate_pool_12_is_rejected_for_synthetic_lookup_ndcg5_and_mrr() -> None:
    decided, why, hinges = verdict(ARM, cells(POOL_12, default=0.001), CORPORA)
    assert decided == LOOKUP_REGRESSED
    assert why == "synthetic nDCG@5 -0.0155, MRR -0.0178"
    assert hinges == []


def test_the_old_ndcg10_only_gate_called_candidate_pool_12_a_win() -> None:
    """Why the protected measures are every reported one: nDCG@10 alone passes the arm the methodology rejected."""
    only_ndcg10 = GateSpec(protected_measures=("nDCG@10",))
    assert verdict(ARM, cells(POOL_12, default=0.001), CORPORA, only_ndcg10)[0] == WIN


ALL10 = ("all", "nDCG@10")
LOOKUP = "lookup"


@pytest.mark.parametrize(("deltas", "expected", "why", "hinges"), [
    # both all rows up, nothing protected down: a win, the gate deltas shown
    ({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): 0.02}, WIN, "qmsum +0.0100, synthetic +0.0200", []),
    # opposite signs
    ({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): -0.02}, SPLIT, "qmsum +0.0100, synthetic -0.0200", []),
    # no movement on one corpus is not a win
    ({("qmsum", *ALL10): 0.01}, SPLIT, "qmsum +0.0100, synthetic +0.0000", []),
    ({("qmsum", *ALL10): -0.01, ("synthetic", *ALL10): -0.02}, LOSS, "qmsum -0.0100, synthetic -0.0200", []),
    # regressions on both corpora, grouped by corpus in corpus order, measures in the gate's order
    ({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): 0.02, ("synthetic", LOOKUP, "R@20"): -0.003,
      ("qmsum", LOOKUP, "MRR"): -0.002, ("synthetic", LOOKUP, "nDCG@5"): -0.001},
     LOOKUP_REGRESSED, "qmsum MRR -0.0020; synthetic nDCG@5 -0.0010, R@20 -0.0030", []),
    # a win whose qmsum gain is within tolerance: it stands, flagged
    ({("qmsum", *ALL10): 0.0003, ("synthetic", *ALL10): 0.02}, WIN, "qmsum +0.0003, synthetic +0.0200",
     ["qmsum all nDCG@10 +0.0003"]),
    # a win that a lookup gain within tolerance would lose if it were negative: flagged
    ({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): 0.02, ("qmsum", LOOKUP, "R@5"): 0.0001}, WIN,
     "qmsum +0.0100, synthetic +0.0200", ["qmsum lookup R@5 +0.0001"]),
    # a regression decided by one delta within tolerance alone: flagged
    ({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): 0.02, ("synthetic", LOOKUP, "MRR"): -0.0004},
     LOOKUP_REGRESSED, "synthetic MRR -0.0004", ["synthetic lookup MRR -0.0004"]),
    # ... but not when another, larger regression decides it anyway
    ({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): 0.02, ("synthetic", LOOKUP, "MRR"): -0.0004,
      ("synthetic", LOOKUP, "nDCG@5"): -0.01}, LOOKUP_REGRESSED, "synthetic nDCG@5 -0.0100, MRR -0.0004", []),
    # a split whose sign on one corpus is tiny: zeroing it leaves a split, negating it makes a loss
    ({("qmsum", *ALL10): 0.0002, ("synthetic", *ALL10): -0.02}, SPLIT, "qmsum +0.0002, synthetic -0.0200",
     ["qmsum all nDCG@10 +0.0002"]),
])
def test_verdicts(deltas: dict[tuple[str, str, str], float], expected: str, why: str, hinges: list[str]) -> None:
    assert verdict(ARM, cells(deltas), CORPORA) == (expected, why, hinges)


def test_a_missing_protected_cell_is_not_comparable_naming_it() -> None:
    shown = [c for c in cells({("qmsum", *ALL10): 0.01, ("synthetic", *ALL10): 0.02})
             if (c["corpus"], c["query_class"], c["measure"]) != ("synthetic", "lookup", "R@20")]
    decided, why, _ = verdict(ARM, shown, CORPORA)
    assert decided == NOT_COMPARABLE and "synthetic lookup R@20" in why


def test_a_custom_gate_reads_its_own_measure_class_and_protected_class() -> None:
    spec = GateSpec(measure="MRR", query_class="all", protected_class="summarize", protected_measures=("nDCG@5",))
    deltas = {("qmsum", "all", "MRR"): 0.01, ("synthetic", "all", "MRR"): 0.01,
              ("qmsum", "summarize", "nDCG@5"): -0.02,
              # the default gate's cells: ignored by this one
              ("qmsum", *ALL10): -0.5, ("synthetic", LOOKUP, "nDCG@5"): -0.5}
    shown = [*cells(deltas), {"corpus": "synthetic", "query_class": "summarize", "measure": "nDCG@5",
                              "delta": 0.0, "per_query_identical": False, "counts_match": True}]
    assert verdict(ARM, shown, CORPORA, spec) == ("summarize regressed", "qmsum nDCG@5 -0.0200", [])
