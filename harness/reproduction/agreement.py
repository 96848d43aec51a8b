"""The agreement tables, by the sweep stage's own analysis over the collected comparisons.

The methodology's coefficients are over the fusion, budget and pool families (21 arms). Each
family is read from its chosen sweep's comparison.json: an arm's rows are its cells' ``arm``
values and the control's rows their ``control`` values, which is exactly what the collector
read from the arms' metrics.json. Those rows go through :func:`harness.sweep.agreement.analyse`
unchanged, so the page and ``ragsweep agreement`` cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.reproduction.derive import Missing, NotMeasured, Ours, TableOurs
from harness.reproduction.methodology import MethodologyTable
from harness.reproduction.sources import Comparison
from harness.sweep.agreement import POOLED, analyse
from harness.sweep.catalogue import CATALOGUE, Family
from harness.sweep.comparison import FamilyEntry
from harness.sweep.results import ArmResults

AGREEMENT_FAMILIES: tuple[str, ...] = ("fusion", "budget", "pool")
# Families the methodology did not measure: each gets its own rows (never the pooled set, which stays the
# methodology's three, so the pooled coefficients stay comparable).
EXTRA_FAMILIES: tuple[str, ...] = ("diversity", "embedding")
PAIR: tuple[str, str] = ("qmsum", "synthetic")
STRUCTURAL_COLLAPSES: tuple[str, ...] = ("norm-minmax-geom", "norm-minmax-harm")


def _rows(entry_cells: Sequence[Any], side: str) -> dict[tuple[str, str], dict[str, float]]:
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for cell in entry_cells:
        rows.setdefault((cell.corpus, cell.query_class), {})[cell.measure] = getattr(cell, side)
    return rows


def family_results(family: Family, entry: FamilyEntry) -> list[ArmResults]:
    """ArmResults per catalogue arm, rebuilt from the family's comparison cells."""
    control_rows: dict[tuple[str, str], dict[str, float]] = {}
    results: list[ArmResults] = []
    for arm in family.arms:
        if arm.name == family.control:
            continue
        compared = entry.arm_entry(arm.name)
        if compared is None or compared.status != "complete" or not compared.cells:
            detail = "not in the sweep" if compared is None else compared.status
            results.append(ArmResults(arm=arm, status="missing", detail=detail))
            continue
        for key, values in _rows(compared.cells, "control").items():
            control_rows.setdefault(key, {}).update(values)
        results.append(ArmResults(arm=arm, status="complete", rows=_rows(compared.cells, "arm")))
    control = ArmResults(arm=family.control_arm, status="complete" if control_rows else "missing",
                         rows=control_rows)
    return [control, *results]


def measured_families(chosen: Mapping[str, Comparison | None], names: Sequence[str] = AGREEMENT_FAMILIES
                      ) -> tuple[list[Family], list[ArmResults], list[str]]:
    """The families measured on both corpora, their rebuilt results, and the names of the others."""
    families: list[Family] = []
    results: list[ArmResults] = []
    absent: list[str] = []
    for name in names:
        comparison = chosen.get(name)
        entry = None if comparison is None else comparison.doc.family(name)
        if comparison is None or entry is None or not set(PAIR) <= set(comparison.doc.corpora):
            absent.append(name)
            continue
        families.append(CATALOGUE.family(name))
        results.extend(family_results(CATALOGUE.family(name), entry))
    return families, results, absent


def _f(value: float | None) -> Ours:
    return Missing("undefined") if value is None else value


def agreement_tables(tables: Mapping[str, MethodologyTable], chosen: Mapping[str, Comparison | None]
                     ) -> dict[str, TableOurs | NotMeasured]:
    families, results, absent = measured_families(chosen)
    ids = ("agreement-arms", "agreement-all", "agreement-lookup", "agreement-fusion-no-geom-harm",
           "agreement-signs", "agreement-winners", "agreement-ranges")
    if not families:
        why = NotMeasured("not measured: agreement needs the fusion, budget and pool families on both corpora; "
                          "run `make sweep ARMS=all` with QMSum fetched")
        return dict.fromkeys(ids, why)
    docs = {cls: analyse(results, families, query_class=cls, corpora=list(PAIR)) for cls in ("all", "lookup")}
    extra, extra_results, extra_absent = measured_families(chosen, EXTRA_FAMILIES)
    if extra:  # each its own set; analysed apart so the pooled set stays the methodology's families
        for cls, doc in docs.items():
            more = analyse(extra_results, extra, query_class=cls, corpora=list(PAIR))
            doc["arms"] = [*doc["arms"], *more["arms"]]
            doc["sets"] = [*doc["sets"], *(s for s in more["sets"] if s["set"] != POOLED)]
    absent = [*absent, *extra_absent]
    used = ", ".join(dict.fromkeys(f"`{c.path}`" for f in (*families, *extra) if (c := chosen.get(f.name)) is not None))
    notes = (f"not measured on both corpora, so left out: {', '.join(absent)}",) if absent else ()
    source = f"{used}, through harness.sweep.agreement.analyse (nDCG@10, Δ against each family's control)"

    def table(rows: dict[str, dict[str, Ours]]) -> TableOurs:
        return TableOurs(rows=rows, source=source, notes=notes)

    out: dict[str, TableOurs | NotMeasured] = {}
    arms = {a["arm"]: a for a in docs["all"]["arms"]}
    out["agreement-arms"] = table({
        row.key: ({"Δ qmsum": _f(arms[row.key]["first"]), "Δ synthetic": _f(arms[row.key]["second"]),
                   "sign": arms[row.key]["sign"]} if row.key in arms
                  else dict.fromkeys(row.values, Missing("its family is not measured on both corpora")))
        for row in tables["agreement-arms"].rows})
    for cls in ("all", "lookup"):
        sets = {s["set"]: s for s in docs[cls]["sets"]}
        out[f"agreement-{cls}"] = table({row.key: _coefficients(sets.get(row.key)) for row in
                                         tables[f"agreement-{cls}"].rows})
    if any(f.name == "fusion" for f in families):
        fusion = [f for f in families if f.name == "fusion"]
        no_collapse = {cls: next(s for s in analyse(results, fusion, query_class=cls, corpora=list(PAIR),
                                                    drop=list(STRUCTURAL_COLLAPSES))["sets"] if s["set"] == "fusion")
                       for cls in ("all", "lookup")}
        out["agreement-fusion-no-geom-harm"] = table({cls: _coefficients(no_collapse[cls]) for cls in no_collapse})
    else:
        out["agreement-fusion-no-geom-harm"] = NotMeasured(
            "not measured: the fusion family on both corpora; run `make sweep ARMS=fusion` with QMSum fetched")
    out["agreement-signs"] = table({cls: _signs(next(s for s in docs[cls]["sets"] if s["set"] == POOLED))
                                    for cls in ("all", "lookup")})
    winners: dict[str, dict[str, Ours]] = {}
    for row in tables["agreement-winners"].rows:
        name, cls = row.key.split("/")
        found = next((s for s in docs[cls]["sets"] if s["set"] == name), None)
        winners[row.key] = _winner(found) if found else dict.fromkeys(row.values, Missing("family not measured"))
    out["agreement-winners"] = table(winners)
    ranges: dict[str, dict[str, Ours]] = {}
    for row in tables["agreement-ranges"].rows:
        found = next((s for s in docs["all"]["sets"] if s["set"] == row.key), None)
        ranges[row.key] = ({"qmsum range": _f(found["range"]["first"]),
                            "synthetic range": _f(found["range"]["second"]),
                            "ratio": _f(found["range"]["ratio"])} if found
                           else dict.fromkeys(row.values, Missing("family not measured")))
    out["agreement-ranges"] = table(ranges)
    return out


def _coefficients(found: Mapping[str, Any] | None) -> dict[str, Ours]:
    columns = ("n", "Kendall tau-b", "p tau-b", "Spearman rho", "p rho")
    if found is None:
        return dict.fromkeys(columns, Missing("family not measured"))
    c = found["coefficients"]
    return {"n": float(c["n"]), "Kendall tau-b": _f(c["kendall_tau_b"]), "p tau-b": _f(c["kendall_p"]),
            "Spearman rho": _f(c["spearman_rho"]), "p rho": _f(c["spearman_p"])}


def _signs(found: Mapping[str, Any]) -> dict[str, Ours]:
    signs = found["signs"]
    return {"agree": float(signs["agree"]), "disagree": float(signs["disagree"]), "inert": float(signs["inert"]),
            "one-sided": float(signs["one-sided"]), "agree share": _f(found["agree_share"])}


def _winner(found: Mapping[str, Any]) -> dict[str, Ours]:
    w = found["winner"]
    out: dict[str, Ours] = {}
    for side, corpus in (("first", "qmsum"), ("second", "synthetic")):
        pick = w[side]
        out[f"{corpus} pick"] = "none" if pick is None else str(pick["arm"])
        out[f"{corpus} Δ"] = Missing("no arm gained") if pick is None else float(pick["delta"])
    out["same"] = Missing("a corpus picks none") if w["same"] is None else ("same" if w["same"] else "different")
    return out
