"""The verdict the gate (:class:`harness.sweep.gatespec.GateSpec`) gives an arm.

Verdicts, in the order they are decided:

* instrument controls (flag-inertness, repeatability): ``identical to control`` when every row
  and every query equals the control's, otherwise ``control moved`` — the instrument moved, so
  no delta in the family is attributable;
* one corpus measured: ``single-corpus: not adoptable`` (the gate needs two);
* ``inert``: every delta on every corpus, class and measure exactly 0, per query as well;
* ``win``; ``lookup regressed`` (the gate measure rose on every corpus, but a protected measure
  of the protected class fell somewhere: the why names every such cell, by corpus);
  ``loss on both``; ``split`` (anything else: opposite signs, or no movement on one corpus);
* ``not comparable``: a cell the gate reads is missing from the arm or the control.

Latency never enters here: comparison.json stays byte-identical across reruns, and a duration
cannot. A budget's verdicts (``latency over budget``, ``latency not measured``) are given over
the interleaved measurement by :mod:`harness.sweep.latencygate`.

``hinges_on``: the deciding cells whose |delta| is below the gate's tolerance and which, set to
0 or to their negation, would change the verdict. The verdict stands; it is not a finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.sweep.catalogue import Arm
from harness.sweep.gatespec import DEFAULT_GATE, GateSpec

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
LATENCY_OVER = "latency over budget"
LATENCY_NOT_MEASURED = "latency not measured"

Key = tuple[str, str, str]  # (corpus, query class, measure)


def find_cell(cells: Sequence[dict[str, Any]], corpus: str, query_class: str, measure: str) -> dict[str, Any] | None:
    for cell in cells:
        if (cell["corpus"], cell["query_class"], cell["measure"]) == (corpus, query_class, measure):
            return cell
    return None


def regressed_verdict(spec: GateSpec) -> str:
    """``lookup regressed`` under the default gate; the protected class's name under another."""
    return f"{spec.protected_class} regressed"


def _by_corpus(keys: Sequence[Key], deltas: Mapping[Key, float], corpora: Sequence[str]) -> str:
    parts = []
    for corpus in corpora:
        mine = [f"{k[2]} {deltas[k]:+.4f}" for k in keys if k[0] == corpus]
        if mine:
            parts.append(f"{corpus} {', '.join(mine)}")
    return "; ".join(parts)


def decide(spec: GateSpec, deltas: Mapping[Key, float], corpora: Sequence[str]) -> tuple[str, str]:
    """The gate over the cells it reads: ``deltas`` holds every (corpus, class, measure) it names."""
    gate = [(c, spec.query_class, spec.measure) for c in corpora]
    shown = ", ".join(f"{c} {deltas[k]:+.4f}" for c, k in zip(corpora, gate, strict=True))
    if all(deltas[k] > 0 for k in gate):
        protected = [(c, spec.protected_class, m) for c in corpora for m in spec.protected_measures]
        fell = [k for k in protected if deltas[k] < 0]
        if fell:
            return regressed_verdict(spec), _by_corpus(fell, deltas, corpora)
        return WIN, shown
    if all(deltas[k] < 0 for k in gate):
        return LOSS, shown
    return SPLIT, shown


def hinges(spec: GateSpec, deltas: Mapping[Key, float], corpora: Sequence[str], decided: str) -> list[str]:
    """The cells within tolerance whose value decides the verdict (0 or the negated delta changes it)."""
    out = []
    for key, value in deltas.items():
        if value == 0.0 or abs(value) >= spec.tolerance:
            continue
        if any(decide(spec, {**deltas, key: moved}, corpora)[0] != decided for moved in (0.0, -value)):
            out.append(f"{key[0]} {key[1]} {key[2]} {value:+.4f}")
    return out


def verdict(arm: Arm, cells: Sequence[dict[str, Any]], corpora: Sequence[str],
            spec: GateSpec = DEFAULT_GATE) -> tuple[str, str, list[str]]:
    """(verdict, why, hinges_on) of one arm's cells against its control under ``spec``."""
    identical = bool(cells) and all(c["delta"] == 0.0 and c["per_query_identical"] and c["counts_match"]
                                    for c in cells)
    if arm.is_instrument_control:
        if identical:
            return IDENTICAL, "every row and every query equal to the control's", []
        moved = sum(1 for c in cells if c["delta"] != 0.0 or not c["per_query_identical"])
        return CONTROL_MOVED, (f"{moved} of {len(cells)} cells differ from the control; "
                               "no delta in this family is attributable"), []
    if len(corpora) < 2:
        inert = " (inert: every delta exactly 0)" if identical else ""
        return SINGLE_CORPUS, f"one corpus: the gate needs two{inert}", []
    if identical:
        return INERT, "every delta on every corpus, class and measure is exactly 0", []
    deltas: dict[Key, float] = {}
    for corpus in corpora:
        for query_class, measures in ((spec.query_class, (spec.measure,)),
                                      (spec.protected_class, spec.protected_measures)):
            for measure in measures:
                cell = find_cell(cells, corpus, query_class, measure)
                if cell is None:
                    return NOT_COMPARABLE, (f"no {corpus} {query_class} {measure} in both the arm and the control, "
                                            "so the gate cannot be read"), []
                deltas[(corpus, query_class, measure)] = cell["delta"]
    decided, why = decide(spec, deltas, corpora)
    return decided, why, hinges(spec, deltas, corpora, decided)
