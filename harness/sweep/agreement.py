"""Do the two corpora agree? Rank agreement of arm deltas between two corpora.

Each arm is reduced to its delta against its own family's control on each corpus (never an
absolute score: the corpora's levels differ for reasons no arm causes). Over those pairs:

* Kendall tau-b, the headline: the arm set has exact ties (inert arms are zeros on both
  corpora) and tau-b corrects for them. Spearman rho beside it. Pearson r is printed to be
  distrusted: two structural outliers can carry it.
* per family, and pooled with the caveat that families differ in stage and query set;
* sign agreement: agree (same sign), disagree (opposite), inert (zero on both: a metric that
  cannot see the knob, not two corpora concurring), one-sided (zero on one corpus only);
* the range ratio per family (second corpus's delta range / the first's), and which arm
  each corpus would pick.

A coefficient over fewer than two arms, or with one side constant, is undefined (None),
never 0.0: no variation is no evidence, not evidence of no relationship.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputDataError, UsageError
from harness.sweep.catalogue import Catalogue, Family
from harness.sweep.manifest import load_manifest
from harness.sweep.results import ArmResults, load_from_path, load_from_store
from harness.sweep.storage import ArtefactStore

AGREEMENT_SCHEMA = "ragsweep.agreement/1"
SIGNS: tuple[str, ...] = ("agree", "disagree", "inert", "one-sided")
POOLED = "pooled"


@dataclass(frozen=True)
class ArmDelta:
    family: str
    arm: str
    axis: str
    first: float | None
    second: float | None

    @property
    def measured(self) -> bool:
        return self.first is not None and self.second is not None

    @property
    def sign(self) -> str:
        if self.first is None or self.second is None:
            return "unmeasured"
        if self.first == 0.0 and self.second == 0.0:
            return "inert"
        if self.first == 0.0 or self.second == 0.0:
            return "one-sided"
        return "agree" if (self.first > 0) == (self.second > 0) else "disagree"


@dataclass(frozen=True)
class Coefficients:
    n: int
    kendall_tau_b: float | None
    kendall_p: float | None
    spearman_rho: float | None
    spearman_p: float | None
    pearson_r: float | None
    pearson_p: float | None


def _defined(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def coefficients(first: Sequence[float], second: Sequence[float]) -> Coefficients:
    """tau-b, rho and r with their two-sided p-values; None wherever undefined."""
    from scipy import stats

    n = len(first)
    if n != len(second):
        raise ValueError(f"paired sequences differ in length: {n} vs {len(second)}")
    if n < 2 or len(set(first)) < 2 or len(set(second)) < 2:
        return Coefficients(n, None, None, None, None, None, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on small n; the p-values say it plainly
        tau = stats.kendalltau(first, second, variant="b")
        rho = stats.spearmanr(first, second)
        r = stats.pearsonr(first, second)
    return Coefficients(n, _defined(tau.statistic), _defined(tau.pvalue), _defined(rho.statistic),
                        _defined(rho.pvalue), _defined(r.statistic), _defined(r.pvalue))


def resolve_corpora(results: Sequence[ArmResults], wanted: Sequence[str] | None) -> tuple[str, str]:
    present = sorted({c for r in results if r.complete for c in r.corpora})
    if wanted:
        if len(wanted) != 2 or wanted[0] == wanted[1]:
            raise UsageError(f"--corpora needs two different names, got {','.join(wanted)}")
        absent = [c for c in wanted if c not in present]
        if absent:
            raise UsageError(f"corpus {', '.join(absent)} is in no arm's rows (present: "
                             f"{', '.join(present) or 'none'}); the analysis compares two measured corpora")
        return wanted[0], wanted[1]
    if len(present) < 2:
        raise UsageError(f"only {', '.join(present) or 'no corpus'} found in the arms' rows; agreement needs two "
                         "corpora (e.g. qmsum and synthetic) measured in the same runs — measure the other one")
    if len(present) > 2:
        raise UsageError(f"{len(present)} corpora in the rows ({', '.join(present)}); name two with --corpora A,B")
    return present[0], present[1]


def _value(result: ArmResults, corpus: str, query_class: str, measure: str) -> float | None:
    row = result.rows.get((corpus, query_class))
    return None if row is None or measure not in row else row[measure]


def family_deltas(family: Family, by_name: dict[str, ArmResults], corpora: tuple[str, str], query_class: str,
                  measure: str, relative: bool) -> list[ArmDelta]:
    control = by_name.get(family.control)
    out: list[ArmDelta] = []
    for arm in family.arms:
        if arm.name == family.control:
            continue
        result = by_name.get(arm.name)
        if result is None or not result.complete or control is None or not control.complete:
            continue
        pair: list[float | None] = []
        for corpus in corpora:
            a, c = _value(result, corpus, query_class, measure), _value(control, corpus, query_class, measure)
            if a is None or c is None or (relative and c == 0.0):
                pair.append(None)
            else:
                pair.append(100.0 * (a - c) / c if relative else a - c)
        out.append(ArmDelta(family=family.name, arm=arm.name, axis=arm.axis, first=pair[0], second=pair[1]))
    return out


def results_from_manifest(path: Path) -> tuple[Catalogue, list[ArmResults]]:
    """A manifest whose arms carry ``run`` (a metrics.json, relative to the manifest's folder and inside it)."""
    catalogue = load_manifest(path)
    folder = path.parent.resolve()
    results: list[ArmResults] = []
    for arm in catalogue.arms:
        if arm.run is None:
            results.append(ArmResults(arm=arm, status="missing", detail="no run in the manifest"))
            continue
        run = (folder / arm.run).resolve()  # relative, no '..': Arm checks; a link is followed here
        beside = run.with_name("per_query.json")
        for what, target in ((repr(arm.run), run), (f"{arm.run!r}'s per_query.json", beside.resolve())):
            if not target.is_relative_to(folder):
                raise InputDataError(f"{path}: families[{arm.family}].arms[{arm.name}].run {what} leads to "
                                     f"{target}, outside the manifest's folder {folder}; keep the runs inside it "
                                     "(a link may not lead out)")
        results.append(load_from_path(arm, run))
    return catalogue, results


def results_from_store(store: ArtefactStore, sweep_id: str, catalogue: Catalogue) -> list[ArmResults]:
    return [load_from_store(store, sweep_id, arm) for arm in catalogue.arms]


def _backend_of(results: Sequence[ArmResults]) -> str | None:
    for r in results:
        if r.complete and r.metrics is not None:
            return str(r.metrics.get("retrieval", {}).get("backend", "embedded"))
    return None


def shared_corpora(first: Sequence[ArmResults], second: Sequence[ArmResults]) -> list[str]:
    """The corpora some complete arm measured in each of two sweeps, in name order."""
    return sorted({c for r in first if r.complete for c in r.corpora}
                  & {c for r in second if r.complete for c in r.corpora})


def pair_sweeps(first: Sequence[ArmResults], second: Sequence[ArmResults], ids: tuple[str, str],
                corpus: str | None = None) -> tuple[list[ArmResults], tuple[str, str], str]:
    """Two sweeps of the same arms on one corpus, as one result set whose two "sides" are the sweeps.

    The sides are named by the search backend each sweep recorded when those differ (the
    embedded-versus-stack comparison), else by the sweep ids. An arm counts only when it is
    complete in both sweeps; otherwise it is reported as not measured, with which side lacks it.
    """
    shared = shared_corpora(first, second)
    if corpus is None:
        if len(shared) != 1:
            raise UsageError(f"the two sweeps share {len(shared)} corpora ({', '.join(shared) or 'none'}); "
                             "name one with --corpus")
        corpus = shared[0]
    elif corpus not in shared:
        raise UsageError(f"--corpus {corpus}: not measured in both sweeps (shared: {', '.join(shared) or 'none'})")
    backends = (_backend_of(first), _backend_of(second))
    labels = (str(backends[0]), str(backends[1])) if None not in backends and backends[0] != backends[1] else ids
    by_name = {r.arm.name: r for r in second}
    merged: list[ArmResults] = []
    for a in first:
        b = by_name.get(a.arm.name)
        if b is None or not (a.complete and b.complete):
            lacking = [f"{label}: {r.status if r else 'not read'}" for label, r in zip(labels, (a, b), strict=True)
                       if r is None or not r.complete]
            merged.append(ArmResults(arm=a.arm, status="incomplete", detail="; ".join(lacking)))
            continue
        rows = {(labels[0], cls): row for (c, cls), row in a.rows.items() if c == corpus}
        rows.update({(labels[1], cls): row for (c, cls), row in b.rows.items() if c == corpus})
        merged.append(ArmResults(arm=a.arm, status="complete", metrics=a.metrics, rows=rows))
    return merged, labels, corpus


def ran_families(catalogue: Catalogue, results: Sequence[ArmResults]) -> Catalogue:
    """The catalogue's families of which the sweep(s) wrote anything (an arm complete, failed or
    incomplete): a fusion sweep is not reported as missing the other families' arms."""
    touched = {r.arm.family for r in results if r.status != "missing"}
    families = tuple(f for f in catalogue.families if f.name in touched)
    if not families:
        raise UsageError("the sweep holds no arm of the catalogue (wrong --sweep-id, --sweep root or --catalogue?)")
    return catalogue.model_copy(update={"families": families})


def _range(values: Sequence[float]) -> float | None:
    return (max(values) - min(values)) if values else None


def _winner(deltas: Sequence[ArmDelta], side: str) -> dict[str, Any] | None:
    best: tuple[float, str] | None = None
    for d in deltas:
        value = getattr(d, side)
        if value is not None and value > 0 and (best is None or value > best[0]):
            best = (value, d.arm)
    return None if best is None else {"arm": best[1], "delta": best[0]}


def _summary(name: str, deltas: Sequence[ArmDelta]) -> dict[str, Any]:
    measured = [d for d in deltas if d.measured]
    counts = {sign: sum(1 for d in measured if d.sign == sign) for sign in SIGNS}
    moved_both = counts["agree"] + counts["disagree"]
    first = [d.first for d in measured if d.first is not None]
    second = [d.second for d in measured if d.second is not None]
    range_first, range_second = _range(first), _range(second)
    entry: dict[str, Any] = {
        "set": name,
        "arms": [d.arm for d in measured],
        "coefficients": asdict(coefficients(first, second)),
        "signs": counts,
        "agree_share": None if moved_both == 0 else counts["agree"] / moved_both,
        "range": {"first": range_first, "second": range_second,
                  "ratio": None if not range_first or range_second is None else range_second / range_first},
    }
    if name != POOLED:
        win_first, win_second = _winner(measured, "first"), _winner(measured, "second")
        entry["winner"] = {"first": win_first, "second": win_second,
                           "same": None if win_first is None or win_second is None
                           else win_first["arm"] == win_second["arm"]}
    return entry


def analyse(results: Sequence[ArmResults], families: Sequence[Family], *, query_class: str = "all",
            measure: str = "nDCG@10", drop: Sequence[str] = (), exclude_inert: bool = False,
            relative: bool = False, corpora: Sequence[str] | None = None) -> dict[str, Any]:
    """The agreement document (``--json`` prints it; ``render_agreement`` formats it)."""
    known = {a.name for f in families for a in f.arms}
    unknown = sorted(set(drop) - known)
    if unknown:
        raise UsageError(f"--drop {', '.join(unknown)}: no such arm; known: {', '.join(sorted(known))}")
    pair = resolve_corpora(results, corpora)
    by_name = {r.arm.name: r for r in results}
    per_arm: list[ArmDelta] = []
    sets: list[dict[str, Any]] = []
    not_measured: list[dict[str, str]] = []
    for family in families:
        control = by_name.get(family.control)
        if control is None or not control.complete:
            detail = "not read" if control is None else f"{control.status}: {control.detail}"
            not_measured.append({"arm": family.control, "family": family.name, "why": f"control {detail}"})
        for arm in family.arms:
            result = by_name.get(arm.name)
            if arm.name != family.control and (result is None or not result.complete):
                detail = "not read" if result is None else f"{result.status}: {result.detail}"
                not_measured.append({"arm": arm.name, "family": family.name, "why": detail})
        deltas = family_deltas(family, by_name, pair, query_class, measure, relative)
        per_arm.extend(deltas)
        kept = [d for d in deltas if d.arm not in drop and not (exclude_inert and d.sign == "inert")]
        if kept:
            sets.append(_summary(family.name, kept))
    kept_all = [d for d in per_arm if d.arm not in drop and not (exclude_inert and d.sign == "inert")]
    sets.append(_summary(POOLED, kept_all))
    return {
        "schema": AGREEMENT_SCHEMA,
        "corpora": {"first": pair[0], "second": pair[1]},
        "query_class": query_class,
        "measure": measure,
        "delta": "percent of the family control" if relative else "absolute, against the family control",
        "dropped": sorted(set(drop)),
        "exclude_inert": exclude_inert,
        "arms": [{**asdict(d), "sign": d.sign, "used": d in kept_all and d.measured} for d in per_arm],
        "sets": sets,
        "not_measured": not_measured,
    }


def _f(value: float | None, digits: int = 3, signed: bool = True) -> str:
    if value is None:
        return "undefined"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    if value is None:
        return "undefined"
    return f"{value:.1e}" if value < 0.001 else f"{value:.3f}"


def render_agreement(doc: dict[str, Any]) -> str:
    first, second = doc["corpora"]["first"], doc["corpora"]["second"]
    unit = "%" if doc["delta"].startswith("percent") else ""
    out = [f"Agreement of {first} and {second}: {doc['query_class']} class, {doc['measure']}, "
           f"Δ {doc['delta']}."]
    if doc["dropped"]:
        out.append(f"Dropped: {', '.join(doc['dropped'])}.")
    if doc["exclude_inert"]:
        out.append("Inert arms (zero on both corpora) excluded.")
    out += ["", f"family\tarm\taxis\tΔ {first}\tΔ {second}\tsign"]
    for arm in doc["arms"]:
        mark = "" if arm["used"] else "\t(not used)"
        out.append(f"{arm['family']}\t{arm['arm']}\t{arm['axis']}\t{_f(arm['first'], 4)}{unit}\t"
                   f"{_f(arm['second'], 4)}{unit}\t{arm['sign']}{mark}")
    out += ["", "set\tn\tKendall tau-b\tp\tSpearman rho\tp\tPearson r (distrust)\tp"]
    for s in doc["sets"]:
        c = s["coefficients"]
        out.append(f"{s['set']}\t{c['n']}\t{_f(c['kendall_tau_b'])}\t{_p(c['kendall_p'])}\t"
                   f"{_f(c['spearman_rho'])}\t{_p(c['spearman_p'])}\t{_f(c['pearson_r'])}\t{_p(c['pearson_p'])}")
    out += ["", "set\tagree\tdisagree\tinert\tone-sided\tagree share (of arms that moved on both)"]
    for s in doc["sets"]:
        g = s["signs"]
        share = "undefined" if s["agree_share"] is None else f"{s['agree_share']:.1%}"
        out.append(f"{s['set']}\t{g['agree']}\t{g['disagree']}\t{g['inert']}\t{g['one-sided']}\t{share}")
    out += ["", f"family\t{first} Δ range\t{second} Δ range\t{second} / {first}\t{first} picks\t{second} picks"]
    for s in doc["sets"]:
        if s["set"] == POOLED:
            continue
        r, w = s["range"], s["winner"]

        def pick(side: str, winner: dict[str, Any]) -> str:
            chosen = winner[side]
            return "none" if chosen is None else f"{chosen['arm']} ({_f(chosen['delta'], 4)}{unit})"

        ratio = "undefined" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        same = "" if w["same"] is None else ("\tsame" if w["same"] else "\tdifferent")
        out.append(f"{s['set']}\t{_f(r['first'], 4, False)}\t{_f(r['second'], 4, False)}\t{ratio}\t"
                   f"{pick('first', w)}\t{pick('second', w)}{same}")
    if doc["not_measured"]:
        out += ["", "Not measured (left out of every number above):"]
        out += [f"  {m['family']}/{m['arm']}: {m['why']}" for m in doc["not_measured"]]
    out += ["", "The pooled coefficient mixes families with different stages and query sets: read the "
            "per-family rows first. An inert arm is a metric that cannot see the knob, not agreement."]
    return "\n".join(out) + "\n"
