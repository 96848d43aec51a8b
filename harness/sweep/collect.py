"""The collector: every arm of a sweep against its family's control, with paired evidence.

For each family, each arm's delta against the family control (and each declared contrast)
per corpus x query class x measure: the row delta from the two metrics.json files, and over
the per-query values matched by query id the sign-flip p-value, its Holm adjustment across the
family (per corpus x class x measure) and a bootstrap 95% interval. Then the gate's verdict per
arm, the winner per family per corpus, and the checks that make a comparison legitimate: every
arm measured on the same corpus state and the same query set as its control.

Arms with no complete artefact set are listed by name and status (missing / incomplete /
failed, with the executor's error); nothing is silently omitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.errors import UsageError
from harness.report.files import dumps
from harness.sweep.catalogue import CATALOGUE, Arm, Family
from harness.sweep.comparison import COMPARISON_SCHEMA, ComparisonDoc
from harness.sweep.gate import ALPHA, CLASS_ORDER, NOT_COMPARABLE, WIN, find_cell, verdict
from harness.sweep.gatespec import DEFAULT_GATE, GateSpec
from harness.sweep.markdown import render_comparison
from harness.sweep.measured import check_one_measurement
from harness.sweep.results import ArmResults, load_from_store, state_fingerprint
from harness.sweep.stats import DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES, DEFAULT_SEED, holm, paired_tests
from harness.sweep.storage import ArtefactStore, sweep_prefix

# every reported retrieval measure (what the default gate protects) and the file-level fileR@1
COMPARED_MEASURES: tuple[str, ...] = ("nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR", "fileR@1")


@dataclass(frozen=True)
class Settings:
    permutations: int = DEFAULT_PERMUTATIONS
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    level: float = 0.95
    measures: tuple[str, ...] = COMPARED_MEASURES

    def with_gate(self, gate: GateSpec) -> Settings:
        """These settings comparing every measure the gate reads too (a gate's own measures are never skipped)."""
        return replace(self, measures=tuple(dict.fromkeys((*self.measures, *gate.measures))))


def _class_key(query_class: str) -> tuple[int, str]:
    return (CLASS_ORDER.index(query_class) if query_class in CLASS_ORDER else len(CLASS_ORDER) - 1, query_class)


def compare_pair(treatment: ArmResults, baseline: ArmResults, settings: Settings) -> list[dict[str, Any]]:
    """One cell per corpus x class x measure that both arms report. The measures of one corpus x class are
    tested together (harness.sweep.stats.paired_tests: their random draws shared, each result its own)."""
    cells: list[dict[str, Any]] = []
    keys = sorted(set(treatment.rows) & set(baseline.rows), key=lambda k: (k[0], _class_key(k[1])))
    for corpus, query_class in keys:
        ids_t = treatment.query_ids(corpus, query_class)
        ids_b = baseline.query_ids(corpus, query_class)
        matched = sorted(ids_t & ids_b)
        rows: list[tuple[str, float, float, list[float]]] = []
        for measure in settings.measures:
            t_row = treatment.rows[(corpus, query_class)].get(measure)
            b_row = baseline.rows[(corpus, query_class)].get(measure)
            if t_row is None or b_row is None:
                continue
            deltas = [treatment.query_value(q, measure) - baseline.query_value(q, measure) for q in matched]
            rows.append((measure, t_row, b_row, deltas))
        tests = paired_tests([deltas for *_, deltas in rows], permutations=settings.permutations,
                             resamples=settings.resamples, seed=settings.seed, level=settings.level)
        for (measure, t_row, b_row, deltas), test in zip(rows, tests, strict=True):
            cells.append({
                "corpus": corpus, "query_class": query_class, "measure": measure,
                "control": b_row, "arm": t_row, "delta": t_row - b_row,
                "n_control": len(ids_b), "n_arm": len(ids_t), "n_matched": len(matched),
                "counts_match": len(ids_b) == len(ids_t) == len(matched),
                "per_query_identical": all(d == 0.0 for d in deltas),
                # the matched queries the arm moved up, left, moved down on this measure
                "improved": sum(d > 0 for d in deltas), "tied": sum(d == 0 for d in deltas),
                "worsened": sum(d < 0 for d in deltas),
                "mean_paired_delta": test.mean_delta, "p": test.p_value, "p_method": test.method,
                "p_holm": None, "ci": None if test.ci_low is None else [test.ci_low, test.ci_high],
            })
    return cells


def _status_entry(result: ArmResults) -> dict[str, Any]:
    return {"arm": result.arm.name, "axis": result.arm.axis, "status": result.status, "detail": result.detail}


def _state_check(results: Sequence[ArmResults], control: str) -> dict[str, Any]:
    """The arms' fingerprints (what metrics.json says the state was) and ``measured_on``, the measurement
    identity their complete.json records (one: :func:`collect` refuses two; None when none recorded)."""
    fingerprints = {r.arm.name: state_fingerprint(r.metrics or {}) for r in results if r.complete}
    groups: dict[str, list[str]] = {}
    for name, fp in fingerprints.items():
        groups.setdefault(fp["state"], []).append(name)
    differing: dict[str, list[str]] = {}
    if control in fingerprints:
        for name, fp in fingerprints.items():
            parts = [p for p in fp if p != "state" and fp[p] != fingerprints[control][p]]
            if parts:
                differing[name] = parts
    measured = sorted({r.measured_on for r in results if r.complete and r.measured_on is not None})
    return {"same": len(groups) <= 1 and len(measured) <= 1,
            "groups": {k[:16]: sorted(v) for k, v in sorted(groups.items())},
            "differs_from_control": differing, "measured_on": measured[0] if len(measured) == 1 else None}


def _query_check(results: Sequence[ArmResults], control: ArmResults | None) -> dict[str, Any]:
    if control is None or not control.complete:
        return {"same": None, "differences": []}
    differences = []
    for result in results:
        if not result.complete or result is control:
            continue
        for corpus in sorted(set(result.corpora) | set(control.corpora)):
            arm_ids, control_ids = result.query_ids(corpus), control.query_ids(corpus)
            if arm_ids != control_ids:
                differences.append({"arm": result.arm.name, "corpus": corpus, "arm_queries": len(arm_ids),
                                    "control_queries": len(control_ids),
                                    "only_in_arm": len(arm_ids - control_ids),
                                    "only_in_control": len(control_ids - arm_ids)})
    return {"same": not differences, "differences": differences}


def _winners(arms: Sequence[dict[str, Any]], corpora: Sequence[str], gate: GateSpec) -> dict[str, Any]:
    winners: dict[str, Any] = {}
    for corpus in corpora:
        best: float | None = None
        names: list[str] = []
        for entry in arms:
            if entry["instrument_control"] or entry["status"] != "complete":
                continue
            cell = find_cell(entry["cells"], corpus, gate.query_class, gate.measure)
            if cell is None or cell["delta"] <= 0:
                continue
            if best is None or cell["delta"] > best:
                best, names = cell["delta"], [entry["arm"]]
            elif cell["delta"] == best:
                names.append(entry["arm"])
        winners[corpus] = None if best is None else {"arms": names, "delta": best}
    return winners


def _apply_holm(comparisons: Sequence[dict[str, Any]]) -> None:
    """Holm across the family's comparisons, separately per corpus x class x measure."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for comparison in comparisons:
        for cell in comparison["cells"]:
            groups.setdefault((cell["corpus"], cell["query_class"], cell["measure"]), []).append(cell)
    for cells in groups.values():
        for cell, adjusted in zip(cells, holm([c["p"] for c in cells]), strict=True):
            cell["p_holm"] = adjusted


def compare_family(family: Family, results: dict[str, ArmResults], corpora: Sequence[str],
                   settings: Settings, gate: GateSpec = DEFAULT_GATE) -> dict[str, Any]:
    members = [results[a.name] for a in family.arms if a.name in results]
    control = results.get(family.control)
    have_control = control is not None and control.complete
    arms: list[dict[str, Any]] = []
    for result in members:
        if result.arm.name == family.control:
            continue
        entry: dict[str, Any] = {"arm": result.arm.name, "axis": result.arm.axis, "status": result.status,
                                 "instrument_control": result.arm.is_instrument_control, "cells": []}
        if result.complete and have_control:
            assert control is not None
            entry["cells"] = compare_pair(result, control, settings)
        arms.append(entry)
    contrasts: list[dict[str, Any]] = []
    for treatment, baseline in family.contrasts:
        t, b = results.get(treatment), results.get(baseline)
        if t is not None and b is not None and t.complete and b.complete:
            contrasts.append({"arm": treatment, "baseline": baseline, "cells": compare_pair(t, b, settings)})
        elif t is not None and b is not None:
            contrasts.append({"arm": treatment, "baseline": baseline, "cells": [],
                              "skipped": "both arms must be complete"})
    _apply_holm([*arms, *contrasts])
    for entry, result in zip(arms, [m for m in members if m.arm.name != family.control], strict=True):
        if entry["cells"]:
            entry["verdict"], entry["why"], entry["hinges_on"] = verdict(result.arm, entry["cells"], corpora, gate)
            entry["significant_on"] = [
                c for c in corpora
                if (cell := find_cell(entry["cells"], c, gate.query_class, gate.measure)) is not None
                and cell["p_holm"] is not None and cell["p_holm"] < ALPHA
            ]
            if gate.latency is not None and entry["verdict"] == WIN:
                # the quality gate passed; the budget is read from latency.json (harness.sweep.latencygate)
                entry["latency_gate"] = "latency.json"
        elif not have_control and result.complete:
            entry["verdict"], entry["why"] = NOT_COMPARABLE, f"the control {family.control} has no complete results"
        else:
            entry["verdict"], entry["why"] = result.status, result.detail
    return {
        "name": family.name,
        "control": family.control,
        "control_status": _status_entry(control) if control is not None else None,
        "description": family.description,
        "needs_reranker": family.needs_reranker,
        "arms": arms,
        "contrasts": contrasts,
        "winner": _winners(arms, corpora, gate) if have_control else {},
        "missing": [_status_entry(r) for r in members if r.status in ("missing", "incomplete")],
        "failed": [_status_entry(r) for r in members if r.status == "failed"],
        "checks": {"corpus_state": _state_check(members, family.control),
                   "query_set": _query_check(members, control)},
    }


def _families_for(arms: Sequence[Arm], families: Sequence[Family]) -> list[Family]:
    by_name = {f.name: f for f in families}
    wanted = list(dict.fromkeys(a.family for a in arms))
    missing = [name for name in wanted if name not in by_name]
    if missing:
        raise UsageError(f"arms name families with no definition: {', '.join(missing)}; pass their families")
    return [by_name[name] for name in wanted]


def build_comparison(results: Sequence[ArmResults], families: Sequence[Family], sweep_id: str,
                     settings: Settings, gate: GateSpec = DEFAULT_GATE) -> dict[str, Any]:
    settings = settings.with_gate(gate)
    by_name = {r.arm.name: r for r in results}
    corpora = sorted({c for r in results if r.complete for c in r.corpora})
    return {
        "schema": COMPARISON_SCHEMA,
        "sweep_id": sweep_id,
        "corpora": corpora,
        "single_corpus": len(corpora) < 2,
        "gate": {**gate.model_dump(mode="json"), "rule": gate.rule()},
        "measures": list(settings.measures),
        "statistics": {
            "test": "paired sign-flip randomization, two-sided, |mean delta|; exact when 2^n <= permutations",
            "permutations": settings.permutations,
            "interval": f"percentile bootstrap of the mean per-query delta, {settings.level:.0%}",
            "resamples": settings.resamples,
            "seed": settings.seed,
            "generator": "numpy PCG64",
            "correction": "Holm step-down across each family's comparisons, per corpus x class x measure",
            "alpha": ALPHA,
            "pairing": "per-query values matched by query id; queries in only one arm are counted, not used",
        },
        "families": [compare_family(f, by_name, corpora, settings, gate) for f in families],
    }


def collect(store: ArtefactStore, sweep_id: str, catalogue_arms: Sequence[Arm], *,
            families: Sequence[Family] | None = None, state_identity: str | None = None,
            settings: Settings | None = None, plot: bool = True,
            gate: GateSpec = DEFAULT_GATE) -> tuple[dict[str, Any], str]:
    """Read every arm, compare, and write comparison.json / .md (and .png) under the sweep.

    ``families`` defaults to the built-in catalogue's; an arm's family control is read even if
    the caller did not list it, since no delta exists without it. ``gate``: the manifest's.
    """
    settings = settings or Settings()
    chosen = _families_for(catalogue_arms, families or CATALOGUE.families)
    wanted = {a.name for a in catalogue_arms}
    arms = [a for f in chosen for a in f.arms if a.name in wanted or a.name == f.control]
    results = [load_from_store(store, sweep_id, a, state_identity=state_identity) for a in arms]
    # one sweep id, one measurement: two are never compared, whatever the fingerprints say (exit 5, nothing written)
    check_one_measurement(sweep_id, {r.arm.name: r.measured_on for r in results if r.complete})
    comparison = build_comparison(results, chosen, sweep_id, settings, gate)
    prefix = sweep_prefix(sweep_id)
    png_note = None
    comparison["plot"] = None
    if plot:
        from harness.sweep.plot import PlotUnavailable, render_png

        try:
            store.put_bytes(f"{prefix}/comparison.png", render_png(comparison))
            comparison["plot"] = "comparison.png"
        except PlotUnavailable as e:
            png_note = str(e)
    # The model checks what is written (a mismatch is a bug here, exit 1); the dict is what is written.
    ComparisonDoc.model_validate(comparison)
    markdown = render_comparison(comparison, plot_note=png_note)
    store.put_text(f"{prefix}/comparison.json", dumps(comparison))
    store.put_text(f"{prefix}/comparison.md", markdown)
    return comparison, markdown
