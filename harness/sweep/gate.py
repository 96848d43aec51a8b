"""The gate, and the verdict it gives an arm.

The rule applied to every adoptable arm (the methodology's Stage 5 rule, now measured rather
than asserted): a win must hold on BOTH corpora — a positive nDCG@10 delta on the ``all`` row
of each — with the ``lookup`` class never regressing (nDCG@10 delta >= 0) on either.

Verdicts, in the order they are decided:

* instrument controls (flag-inertness, repeatability): ``identical to control`` when every row
  and every query equals the control's, otherwise ``control moved`` — the instrument moved, so
  no delta in the family is attributable;
* one corpus measured: ``single-corpus: not adoptable`` (the gate needs two);
* ``inert``: every delta on every corpus, class and measure exactly 0, per query as well;
* ``win``; ``lookup regressed`` (won both all rows, lost lookup somewhere);
  ``loss on both``; ``split`` (anything else: opposite signs, or no movement on one corpus);
* ``not comparable``: a corpus's all or lookup row is missing from the arm or the control.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.sweep.catalogue import Arm

GATE_MEASURE = "nDCG@10"
GATE_CLASS = "all"
PROTECTED_CLASS = "lookup"
ALPHA = 0.05  # for the "significant on" note beside a verdict; the verdict itself is the gate
CLASS_ORDER: tuple[str, ...] = ("lookup", "summarize", "multi_file", "aggregation", "all")

WIN = "win"
LOOKUP_REGRESSED = "lookup regressed"
LOSS = "loss on both"
SPLIT = "split"
INERT = "inert"
IDENTICAL = "identical to control"
CONTROL_MOVED = "control moved: the instrument is not holding still"
SINGLE_CORPUS = "single-corpus: not adoptable"
NOT_COMPARABLE = "not comparable"



def find_cell(cells: Sequence[dict[str, Any]], corpus: str, query_class: str, measure: str) -> dict[str, Any] | None:
    for cell in cells:
        if (cell["corpus"], cell["query_class"], cell["measure"]) == (corpus, query_class, measure):
            return cell
    return None


def verdict(arm: Arm, cells: Sequence[dict[str, Any]], corpora: Sequence[str]) -> tuple[str, str]:
    """(verdict, why). The gate: a positive all-row nDCG@10 delta on every corpus, lookup never < 0."""
    identical = bool(cells) and all(c["delta"] == 0.0 and c["per_query_identical"] and c["counts_match"]
                                    for c in cells)
    if arm.is_instrument_control:
        if identical:
            return IDENTICAL, "every row and every query equal to the control's"
        moved = sum(1 for c in cells if c["delta"] != 0.0 or not c["per_query_identical"])
        return CONTROL_MOVED, (f"{moved} of {len(cells)} cells differ from the control; "
                               "no delta in this family is attributable")
    if len(corpora) < 2:
        inert = " (inert: every delta exactly 0)" if identical else ""
        return SINGLE_CORPUS, f"one corpus: the gate needs two{inert}"
    if identical:
        return INERT, "every delta on every corpus, class and measure is exactly 0"
    gate: dict[str, float] = {}
    lookup: dict[str, float] = {}
    for corpus in corpora:
        all_cell = find_cell(cells, corpus, GATE_CLASS, GATE_MEASURE)
        lookup_cell = find_cell(cells, corpus, PROTECTED_CLASS, GATE_MEASURE)
        if all_cell is None:
            return NOT_COMPARABLE, f"no {corpus} {GATE_CLASS} row in both the arm and the control"
        if lookup_cell is None:
            return NOT_COMPARABLE, f"no {corpus} {PROTECTED_CLASS} row, so the lookup condition cannot be checked"
        gate[corpus] = all_cell["delta"]
        lookup[corpus] = lookup_cell["delta"]
    shown = ", ".join(f"{c} {gate[c]:+.4f}" for c in corpora)
    if all(d > 0 for d in gate.values()):
        regressed = [c for c in corpora if lookup[c] < 0]
        if regressed:
            return LOOKUP_REGRESSED, "lookup " + ", ".join(f"{c} {lookup[c]:+.4f}" for c in regressed)
        return WIN, shown
    if all(d < 0 for d in gate.values()):
        return LOSS, shown
    return SPLIT, shown


