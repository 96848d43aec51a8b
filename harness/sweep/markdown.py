"""comparison.md: the collector's JSON rendered for a reader. Every number here is in the JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.sweep.gate import CLASS_ORDER, find_cell


def fmt_delta(value: float | None) -> str:
    return "—" if value is None else f"{value:+.4f}"


def fmt_p(value: float | None) -> str:
    if value is None:
        return "—"
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def fmt_ci(ci: Sequence[float] | None) -> str:
    return "—" if ci is None else f"[{ci[0]:+.4f}, {ci[1]:+.4f}]"


def _get(cell: dict[str, Any] | None, key: str) -> Any:
    return None if cell is None else cell[key]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _verdict(entry: dict[str, Any], gate: dict[str, Any]) -> str:
    """The verdict, its why, the tolerance flag and the significance note: all from the JSON."""
    text = entry["verdict"]
    if entry.get("cells") and entry.get("why"):
        text += f": {entry['why']}"
    if entry.get("latency_gate"):
        text += f" (quality only: the latency budget's verdict is in latency.md, from {entry['latency_gate']})"
    if entry.get("hinges_on"):
        text += (f" — hinges on a delta within tolerance ({gate['tolerance']:g}): "
                 f"{', '.join(entry['hinges_on'])}; not a finding")
    if entry.get("significant_on"):
        text += f" (Holm p < 0.05 on {', '.join(entry['significant_on'])})"
    return text


def _summary(family: dict[str, Any], corpora: Sequence[str], gate: dict[str, Any]) -> list[str]:
    measure, gate_class, protected = gate["measure"], gate["query_class"], gate["protected_class"]
    header = ["arm", "axis"]
    for corpus in corpora:
        header += [f"{corpus} Δ {measure} {gate_class}", "95% CI", "p (Holm)", f"{corpus} Δ {protected}"]
    header.append("verdict")
    rows = [[family["control"], "control", *(["—"] * 4 * len(corpora)), "control"]]
    for entry in family["arms"]:
        row = [entry["arm"], entry["axis"]]
        for corpus in corpora:
            all_cell = find_cell(entry["cells"], corpus, gate_class, measure)
            lookup = find_cell(entry["cells"], corpus, protected, measure)
            row += [fmt_delta(_get(all_cell, "delta")), fmt_ci(_get(all_cell, "ci")),
                    fmt_p(_get(all_cell, "p_holm")), fmt_delta(_get(lookup, "delta"))]
        row.append(_verdict(entry, gate))
        rows.append(row)
    return _table(header, rows)


def _classes(entries: Sequence[dict[str, Any]]) -> list[str]:
    seen = {cell["query_class"] for entry in entries for cell in entry["cells"]}
    return sorted(seen, key=lambda c: (CLASS_ORDER.index(c) if c in CLASS_ORDER else len(CLASS_ORDER) - 1, c))


def _moved(entries: Sequence[dict[str, Any]], corpora: Sequence[str], measure: str) -> list[str]:
    """Per arm and corpus, per class: the matched queries the arm improved / tied / worsened."""
    classes = _classes(entries)
    rows = []
    for entry in entries:
        for corpus in corpora:
            row = [entry["arm"], corpus]
            for query_class in classes:
                cell = find_cell(entry["cells"], corpus, query_class, measure)
                row.append("—" if cell is None or "improved" not in cell
                           else f"{cell['improved']} / {cell['tied']} / {cell['worsened']}")
            rows.append(row)
    if not rows or not classes:
        return []
    return ["", f"Queries improved / tied / worsened on {measure} against the control (matched by query id):", "",
            *_table(["arm", "corpus", *classes], rows)]


def _per_class(entries: Sequence[dict[str, Any]], corpora: Sequence[str], label: str, measure: str) -> list[str]:
    classes = _classes(entries)
    if not classes:
        return []
    lines = ["", f"{measure} Δ per class ({label}), with the Holm-adjusted p:", ""]
    rows = []
    for entry in entries:
        for corpus in corpora:
            row = [entry["arm"] if "baseline" not in entry else f"{entry['arm']} vs {entry['baseline']}", corpus]
            for query_class in classes:
                cell = find_cell(entry["cells"], corpus, query_class, measure)
                row.append("—" if cell is None else f"{fmt_delta(cell['delta'])} (p {fmt_p(cell['p_holm'])})")
            rows.append(row)
    return lines + _table(["arm", "corpus", *classes], rows)


def _all_measures(entries: Sequence[dict[str, Any]], corpora: Sequence[str], measures: Sequence[str]) -> list[str]:
    rows = []
    for entry in entries:
        for corpus in corpora:
            row = [entry["arm"] if "baseline" not in entry else f"{entry['arm']} vs {entry['baseline']}", corpus]
            for measure in measures:
                cell = find_cell(entry["cells"], corpus, "all", measure)
                row.append("—" if cell is None else f"{fmt_delta(cell['delta'])} {fmt_ci(cell['ci'])}")
            rows.append(row)
    if not rows:
        return []
    header = ["arm", "corpus", *measures]
    return ["", "Every measure, all row: Δ and 95% bootstrap interval:", "", *_table(header, rows)]


def _checks(family: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    state = family["checks"]["corpus_state"]
    if state["same"]:
        lines.append("- corpus state: every measured arm carries the same corpus/index fingerprint.")
    else:
        groups = "; ".join(f"{fp}: {', '.join(arms)}" for fp, arms in state["groups"].items())
        lines.append(f"- **corpus state differs between arms** — these deltas are not one A/B: {groups}.")
        for arm, parts in sorted(state["differs_from_control"].items()):
            lines.append(f"  - {arm} differs from the control in: {', '.join(parts)}")
    queries = family["checks"]["query_set"]
    if queries["same"] is True:
        lines.append("- query set: every measured arm scored the control's queries.")
    elif queries["same"] is False:
        lines.append("- **query set differs from the control** (deltas use matched queries only):")
        for d in queries["differences"]:
            lines.append(f"  - {d['arm']} on {d['corpus']}: {d['arm_queries']} vs {d['control_queries']} queries, "
                         f"{d['only_in_arm']} only in the arm, {d['only_in_control']} only in the control")
    mismatched = sorted({(e["arm"], c["corpus"], c["query_class"]) for e in family["arms"] for c in e["cells"]
                         if not c["counts_match"]})
    if mismatched:
        lines.append("- query counts differ in: " + "; ".join(f"{a} {c}/{q}" for a, c, q in mismatched))
    for entry in family["failed"]:
        lines.append(f"- **failed**: {entry['arm']} — {entry['detail']}")
    for entry in family["missing"]:
        lines.append(f"- **{entry['status']}**: {entry['arm']} — {entry['detail']}")
    control = family["control_status"]
    if control is None or control["status"] != "complete":
        detail = "not in the sweep" if control is None else f"{control['status']}: {control['detail']}"
        lines.append(f"- **the control {family['control']} has no complete results ({detail})**: no delta exists.")
    return lines


def render_comparison(comparison: dict[str, Any], *, plot_note: str | None = None) -> str:
    corpora: list[str] = comparison["corpora"]
    stats = comparison["statistics"]
    out = [f"# Sweep {comparison['sweep_id']}: every arm against its family control", ""]
    gate = comparison["gate"]
    out.append(f"Corpora: {', '.join(corpora) or '(none measured)'}. The gate: {gate['rule']}.")
    out += ["", f"A verdict that one delta smaller than the tolerance ({gate['tolerance']:g}) decides is flagged "
            "\"hinges on a delta within tolerance\": it stands, but it is not a finding."]
    if gate.get("latency") is not None:
        out += ["", "A latency budget is set, so every `win` below is the quality gate's only: the final verdict "
                "reads the interleaved latency measurement and is in latency.md (latency.json), which is not "
                "byte-reproducible — durations never enter this file."]
    else:
        out += ["", "Interleaved p50/p95 retrieval latency (control and arm alternated), when the sweep measured "
                "it: latency.md. Durations never enter this file, which is byte-identical across reruns."]
    if comparison["single_corpus"]:
        out += ["", f"**Only one corpus ({', '.join(corpora) or 'none'}) was measured, so the gate cannot be "
                "applied: a win must hold on two corpora. No arm below is adoptable; every verdict says so.**"]
    out += ["", f"Δ is the arm's row minus the control's row. p: {stats['test']} "
            f"({stats['permutations']:,} permutations); interval: {stats['interval']} "
            f"({stats['resamples']:,} resamples); seed {stats['seed']} ({stats['generator']}); "
            f"{stats['correction']}. {stats['pairing'].capitalize()}."]
    if comparison.get("plot"):
        out += ["", f"![deltas with 95% intervals]({comparison['plot']})"]
    elif plot_note:
        out += ["", f"(No plot: {plot_note}.)"]
    for family in comparison["families"]:
        out += ["", f"## {family['name']} — control {family['control']}", ""]
        if family["description"]:
            out += [family["description"] + ("; needs the reranker." if family["needs_reranker"] else "."), ""]
        out += _checks(family)
        out += ["", *_summary(family, corpora, gate)]
        winners = family["winner"]
        if winners:
            picks = []
            for corpus in corpora:
                w = winners.get(corpus)
                picks.append(f"{corpus}: " + ("none (no arm above the control)" if w is None
                                              else f"{', '.join(w['arms'])} ({fmt_delta(w['delta'])})"))
            out += ["", "Largest all-row Δ per corpus: " + "; ".join(picks) + "."]
        measured = [e for e in family["arms"] if e["cells"]]
        out += _per_class(measured, corpora, "vs control", gate["measure"])
        out += _moved(measured, corpora, gate["measure"])
        out += _all_measures(measured, corpora, comparison["measures"])
        contrasts = [c for c in family["contrasts"] if c["cells"]]
        if contrasts:
            out += ["", "### Contrasts (arm vs arm, the same paired test)", ""]
            out += _per_class(contrasts, corpora, "arm vs baseline", gate["measure"])
        for skipped in (c for c in family["contrasts"] if not c["cells"]):
            out.append(f"- contrast {skipped['arm']} vs {skipped['baseline']} not computed: "
                       f"{skipped.get('skipped', 'no shared rows')}")
    return "\n".join(out) + "\n"
