"""Cross-corpus agreement: coefficients worked by hand, their edge cases, and the command."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.commands import agreement as command
from harness.errors import EXIT_INPUT, UsageError
from harness.report.files import dumps
from harness.sweep.agreement import analyse, coefficients, render_agreement
from harness.sweep.catalogue import CATALOGUE, Arm, Family, config_hash
from harness.sweep.results import ArmResults, from_documents
from harness.sweep.storage import LocalFolderStore, publish_arm

CORPORA = ("qmsum", "synthetic")


def metrics(values: dict[tuple[str, str], float]) -> dict[str, Any]:
    """A metrics.json with an nDCG@10 (and MRR = half of it) per (corpus, class)."""
    rows = [{"corpus": c, "tier": "A", "query_class": k, "n": 10, "metrics": {"nDCG@10": v, "MRR": v / 2}}
            for (c, k), v in sorted(values.items())]
    return {"schema": "ragsweep.metrics/1", "rows": rows}


def family(name: str, deltas: dict[str, tuple[float, float]], control: tuple[float, float] = (0.1, 0.3),
           lookup: dict[str, tuple[float, float]] | None = None) -> tuple[Family, list[ArmResults]]:
    """A family whose arms move the all row by ``deltas`` (qmsum, synthetic) from ``control``."""
    arms = [Arm(name=f"{name}-control", family=name, axis="control")]
    arms += [Arm(name=a, family=name, axis="knob") for a in deltas]
    fam = Family(name=name, control=f"{name}-control", arms=tuple(arms))
    results = []
    for a in arms:
        dq, ds = deltas.get(a.name, (0.0, 0.0))
        lq, ls = (lookup or {}).get(a.name, (0.0, 0.0))
        values = {("qmsum", "all"): control[0] + dq, ("synthetic", "all"): control[1] + ds,
                  ("qmsum", "lookup"): control[0] + lq, ("synthetic", "lookup"): control[1] + ls}
        results.append(from_documents(a, metrics(values), None, f"mem/{a.name}"))
    return fam, results


def test_hand_worked_example() -> None:
    # qmsum deltas rank the arms 1 2 3, synthetic 1 3 2. Pairs: (a,b) concordant, (a,c) concordant,
    # (b,c) discordant, so tau-b = (2 - 1) / 3. Ranks differ by (0, 1, 1): rho = 1 - 6*2/(3*(9-1)) = 0.5.
    # Pearson on these equally spaced values equals rho. Spearman's p: t = 0.5*sqrt(1/0.75) = tan(pi/6)
    # with one degree of freedom (a Cauchy), so p = 2*(1 - (1/2 + 1/6)) = 2/3. Kendall's exact p: of the
    # six orderings of three, all six have |tau| >= 1/3, so p = 1.
    c = coefficients([0.01, 0.02, 0.03], [0.01, 0.03, 0.02])
    assert c.n == 3
    assert c.kendall_tau_b == pytest.approx(1 / 3)
    assert c.kendall_p == pytest.approx(1.0)
    assert c.spearman_rho == pytest.approx(0.5)
    assert c.spearman_p == pytest.approx(2 / 3)
    assert c.pearson_r == pytest.approx(0.5)
    assert c.pearson_p == pytest.approx(2 / 3)


def test_tau_b_on_the_extremes() -> None:
    assert coefficients([1, 2, 3, 4], [10, 20, 30, 40]).kendall_tau_b == pytest.approx(1.0)
    assert coefficients([1, 2, 3, 4], [4, 3, 2, 1]).kendall_tau_b == pytest.approx(-1.0)


def test_tau_b_corrects_for_ties() -> None:
    # x has one tied pair. Concordant 5, discordant 0, ties in x only 1: tau-b = 5 / sqrt(5 * 6).
    c = coefficients([0.0, 0.0, 1.0, 2.0], [1.0, 2.0, 3.0, 4.0])
    assert c.kendall_tau_b == pytest.approx(5 / math.sqrt(30))


def test_constant_corpus_and_tiny_n_are_undefined() -> None:
    constant = coefficients([0.1, 0.2, 0.3], [0.5, 0.5, 0.5])
    assert (constant.kendall_tau_b, constant.spearman_rho, constant.pearson_r) == (None, None, None)
    assert constant.n == 3
    single = coefficients([0.1], [0.2])
    assert (single.kendall_tau_b, single.kendall_p) == (None, None)
    two = coefficients([0.1, 0.2], [0.3, 0.1])
    assert two.kendall_tau_b == pytest.approx(-1.0)
    assert two.spearman_p is None  # scipy's nan becomes undefined, never a number


def test_rank_measures_are_invariant_to_monotone_transforms() -> None:
    x = [0.013, -0.002, 0.004, -0.031, 0.0]
    y = [0.034, 0.009, 0.017, -0.2, 0.0]
    plain = coefficients(x, y)
    moved = coefficients([math.exp(v) for v in x], [v ** 3 * 100 for v in y])
    assert moved.kendall_tau_b == pytest.approx(plain.kendall_tau_b)
    assert moved.spearman_rho == pytest.approx(plain.spearman_rho)


def test_delta_and_delta_percent_give_identical_coefficients() -> None:
    fam, results = family("pool", {"p12": (0.0128, 0.0342), "p24": (0.0036, 0.0095), "p32": (0.0013, 0.017),
                                   "p96": (-0.0009, 0.0091)}, control=(0.0748, 0.1605))
    absolute = analyse(results, [fam])
    relative = analyse(results, [fam], relative=True)
    for a, r in zip(absolute["sets"], relative["sets"], strict=True):
        assert r["coefficients"]["kendall_tau_b"] == pytest.approx(a["coefficients"]["kendall_tau_b"])
        assert r["coefficients"]["spearman_rho"] == pytest.approx(a["coefficients"]["spearman_rho"])
    p12 = next(arm for arm in relative["arms"] if arm["arm"] == "p12")
    assert p12["first"] == pytest.approx(100 * 0.0128 / 0.0748)


def test_sign_counts_keep_inert_apart() -> None:
    fam, results = family("f", {"agree-up": (0.01, 0.02), "agree-down": (-0.01, -0.03),
                                "disagree": (0.01, -0.02), "inert": (0.0, 0.0), "one-sided": (0.0, 0.01)})
    doc = analyse(results, [fam])
    signs = {arm["arm"]: arm["sign"] for arm in doc["arms"]}
    assert signs == {"agree-up": "agree", "agree-down": "agree", "disagree": "disagree", "inert": "inert",
                     "one-sided": "one-sided"}
    (fset, pooled) = doc["sets"]
    assert fset["signs"] == {"agree": 2, "disagree": 1, "inert": 1, "one-sided": 1}
    assert fset["agree_share"] == pytest.approx(2 / 3)  # of the arms that moved on both corpora
    assert pooled["set"] == "pooled" and pooled["signs"] == fset["signs"]


def test_exclude_inert_and_drop() -> None:
    fam, results = family("f", {"a": (0.01, 0.01), "b": (0.02, 0.03), "c": (0.03, 0.02), "z": (0.0, 0.0)})
    full = analyse(results, [fam])["sets"][0]
    assert full["coefficients"]["n"] == 4
    # z (0, 0) sits below every other arm on both corpora: 5 concordant, 1 discordant of 6 pairs.
    assert full["coefficients"]["kendall_tau_b"] == pytest.approx(4 / 6)
    excluded = analyse(results, [fam], exclude_inert=True)["sets"][0]
    assert excluded["arms"] == ["a", "b", "c"]
    assert excluded["coefficients"]["kendall_tau_b"] == pytest.approx(1 / 3)
    dropped = analyse(results, [fam], drop=["c"])
    assert dropped["sets"][0]["arms"] == ["a", "b", "z"]
    assert dropped["sets"][0]["coefficients"]["kendall_tau_b"] == pytest.approx(1.0)
    assert next(a for a in dropped["arms"] if a["arm"] == "c")["used"] is False
    with pytest.raises(UsageError, match="--drop nope: no such arm"):
        analyse(results, [fam], drop=["nope"])


def test_per_family_pooled_range_and_winners() -> None:
    f1, r1 = family("fusion", {"x1": (0.0015, -0.0687), "x2": (-0.0161, -0.2059), "x3": (-0.0003, 0.0063)})
    f2, r2 = family("pool", {"y1": (0.0128, 0.0342), "y2": (-0.0009, 0.0091)})
    doc = analyse([*r1, *r2], [f1, f2])
    by_set = {s["set"]: s for s in doc["sets"]}
    assert set(by_set) == {"fusion", "pool", "pooled"}
    assert by_set["pooled"]["coefficients"]["n"] == 5
    fusion_range = by_set["fusion"]["range"]
    assert fusion_range["first"] == pytest.approx(0.0176)
    assert fusion_range["second"] == pytest.approx(0.2122)
    assert fusion_range["ratio"] == pytest.approx(0.2122 / 0.0176)
    assert by_set["fusion"]["winner"]["first"] == {"arm": "x1", "delta": pytest.approx(0.0015)}
    assert by_set["fusion"]["winner"]["second"] == {"arm": "x3", "delta": pytest.approx(0.0063)}
    assert by_set["fusion"]["winner"]["same"] is False
    assert by_set["pool"]["winner"]["same"] is True
    text = render_agreement(doc)
    assert "Kendall tau-b" in text and "fusion\t0.0176\t0.2122\t12.1x" in text


# The methodology's 21 arms, all class, nDCG@10 deltas as published ("Do the two corpora agree?").
REFERENCE = {
    "fusion": {"rrf-30-explicit": (0.0, 0.0), "rrf-60": (-0.0003, 0.0063), "norm-minmax-arith": (0.0008, -0.0555),
               "norm-l2-arith": (0.0010, -0.0633), "norm-zscore-arith": (0.0015, -0.0687),
               "norm-minmax-geom": (-0.0152, -0.1984), "norm-minmax-harm": (-0.0161, -0.2059),
               "norm-minmax-arith-w70-30": (0.0014, -0.1450), "norm-minmax-arith-w30-70": (-0.0093, -0.0082)},
    "budget": {"budget-48-12-4-repeat": (0.0, 0.0), "budget-48-20-4": (0.0, 0.0),
               "budget-48-08-4": (-0.0013, -0.0028), "budget-48-12-2": (0.0, 0.0), "budget-48-12-8": (0.0, 0.0),
               "budget-24-12-4": (0.0009, 0.0095), "budget-96-12-4": (0.0004, 0.0091),
               "budget-96-12-4-pairs96": (0.0007, 0.0057)},
    "pool": {"pool-12": (0.0128, 0.0342), "pool-24": (0.0036, 0.0095), "pool-32": (0.0013, 0.0170),
             "pool-96": (-0.0009, 0.0091)},
}


def reference() -> tuple[list[Family], list[ArmResults]]:
    families, results = [], []
    for name, deltas in REFERENCE.items():
        fam, res = family(name, deltas)
        families.append(fam)
        results += res
    return families, results


def test_reproduces_the_reference_analysis() -> None:
    """The published tables, recomputed from the published (4-decimal) deltas."""
    families, results = reference()
    doc = analyse(results, families)
    sets = {s["set"]: s for s in doc["sets"]}
    expected = {"fusion": (9, 0.000, 1.000, 0.133, 0.732), "budget": (8, 0.909, 0.004, 0.973, 0.00005),
                "pool": (4, 0.667, 0.333, 0.800, 0.200), "pooled": (21, 0.301, 0.066, 0.378, 0.091)}
    for name, (n, tau, tau_p, rho, rho_p) in expected.items():
        c = sets[name]["coefficients"]
        assert c["n"] == n
        assert c["kendall_tau_b"] == pytest.approx(tau, abs=2e-3), name  # pooled reads +0.302 from rounded deltas
        assert c["kendall_p"] == pytest.approx(tau_p, abs=1e-3), name
        assert c["spearman_rho"] == pytest.approx(rho, abs=1e-3), name
        assert c["spearman_p"] == pytest.approx(rho_p, abs=1e-3), name
    assert sets["pooled"]["signs"] == {"agree": 10, "disagree": 6, "inert": 5, "one-sided": 0}
    assert sets["pooled"]["agree_share"] == pytest.approx(0.625)
    ratios = {name: round(sets[name]["range"]["ratio"], 1) for name in REFERENCE}
    assert ratios == {"fusion": 12.1, "budget": 5.6, "pool": 1.8}
    budget = {s["set"]: s for s in analyse(results, families, exclude_inert=True)["sets"]}["budget"]
    assert (budget["coefficients"]["n"], round(budget["coefficients"]["kendall_tau_b"], 3)) == (4, 0.667)
    candidates = {s["set"]: s for s in analyse(results, families,
                                               drop=["norm-minmax-geom", "norm-minmax-harm"])["sets"]}
    assert candidates["fusion"]["coefficients"]["kendall_tau_b"] == pytest.approx(-0.714, abs=1e-3)
    assert candidates["fusion"]["coefficients"]["kendall_p"] == pytest.approx(0.030, abs=1e-3)
    assert candidates["pooled"]["coefficients"]["kendall_tau_b"] == pytest.approx(0.131, abs=1e-3)
    assert candidates["pooled"]["coefficients"]["pearson_r"] == pytest.approx(0.115, abs=3e-3)


def test_class_and_measure_select_the_row() -> None:
    fam, results = family("f", {"a": (0.01, 0.02), "b": (0.02, 0.01)},
                          lookup={"a": (-0.01, 0.02), "b": (0.02, 0.01)})
    doc = analyse(results, [fam], query_class="lookup")
    assert {a["arm"]: a["sign"] for a in doc["arms"]} == {"a": "disagree", "b": "agree"}
    mrr = analyse(results, [fam], measure="MRR")
    assert next(a for a in mrr["arms"] if a["arm"] == "a")["first"] == pytest.approx(0.005)


def test_two_corpora_are_required() -> None:
    arms = [Arm(name="c", family="f", axis="control"), Arm(name="a", family="f", axis="x")]
    fam = Family(name="f", control="c", arms=tuple(arms))
    one = [from_documents(a, metrics({("qmsum", "all"): 0.1}), None, "mem") for a in arms]
    with pytest.raises(UsageError, match=r"only qmsum found .* agreement needs two corpora"):
        analyse(one, [fam])
    three = [from_documents(a, metrics({("qmsum", "all"): 0.1, ("synthetic", "all"): 0.2, ("ami", "all"): 0.3}),
                            None, "mem") for a in arms]
    with pytest.raises(UsageError, match="name two with --corpora"):
        analyse(three, [fam])
    doc = analyse(three, [fam], corpora=["synthetic", "ami"])
    assert doc["corpora"] == {"first": "synthetic", "second": "ami"}
    with pytest.raises(UsageError, match="corpus nope is in no arm's rows"):
        analyse(three, [fam], corpora=["qmsum", "nope"])


def test_unmeasured_arms_are_reported_not_used() -> None:
    fam, results = family("f", {"a": (0.01, 0.02), "b": (0.02, 0.01)})
    results = [r for r in results if r.arm.name != "b"]
    doc = analyse(results, [fam])
    assert doc["not_measured"] == [{"arm": "b", "family": "f", "why": "not read"}]
    assert "Not measured" in render_agreement(doc)


# --- the command ---------------------------------------------------------------------------------

def run_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    parser = argparse.ArgumentParser(prog="ragsweep")
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["agreement", *argv])
    assert args.func(args) == 0
    return capsys.readouterr().out


def test_emit_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(run_command(["--emit-manifest"], capsys))
    assert [f["name"] for f in doc["families"]] == [f.name for f in CATALOGUE.families]


def test_manifest_of_runs_measured_elsewhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deltas = {"ctl": (0.0, 0.0), "a": (0.01, 0.03), "b": (0.02, 0.02), "c": (-0.01, -0.02)}
    arms = []
    for name, (dq, ds) in deltas.items():
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(dumps(metrics({("qmsum", "all"): 0.1 + dq,
                                                            ("synthetic", "all"): 0.3 + ds})))
        arms.append({"name": name, "axis": "control" if name == "ctl" else "knob",
                     "run": f"runs/{name}/metrics.json"})
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"schema": "ragsweep.catalogue/1",
                                    "families": [{"name": "f", "control": "ctl", "arms": arms}]}))
    out = json.loads(run_command(["--manifest", str(manifest), "--json"], capsys))
    fset = out["sets"][0]
    # first ranks c < a < b, second c < b < a: (a,b) discordant, the others concordant.
    assert fset["coefficients"]["kendall_tau_b"] == pytest.approx(1 / 3)
    text = run_command(["--manifest", str(manifest), "--drop", "c"], capsys)
    assert "Dropped: c." in text


def _runs_manifest(folder: Path, names: tuple[str, ...] = ("ctl", "a", "b")) -> Path:
    arms = []
    for i, name in enumerate(names):
        run = folder / "runs" / name
        run.mkdir(parents=True)
        (run / "metrics.json").write_text(dumps(metrics({("qmsum", "all"): 0.1 + i / 100,
                                                         ("synthetic", "all"): 0.3 + i / 50})))
        arms.append({"name": name, "axis": "control" if name == "ctl" else "knob", "run": f"runs/{name}/metrics.json"})
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"schema": "ragsweep.catalogue/1",
                                    "families": [{"name": "f", "control": "ctl", "arms": arms}]}))
    return manifest


@pytest.mark.parametrize("link", ["run folder", "metrics.json", "per_query.json"])
def test_a_run_may_not_lead_out_of_the_manifests_folder_through_a_link(
        link: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: 'runs/a/metrics.json' with no '..' passed the rule, though runs/a led elsewhere
    manifest = _runs_manifest(tmp_path / "m")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = tmp_path / "m" / "runs" / "a"
    if link == "run folder":
        (run / "metrics.json").rename(elsewhere / "metrics.json")
        run.rmdir()
        run.symlink_to(elsewhere, target_is_directory=True)
        what, target = "'runs/a/metrics.json'", elsewhere / "metrics.json"
    elif link == "metrics.json":
        (run / "metrics.json").rename(elsewhere / "metrics.json")
        (run / "metrics.json").symlink_to(elsewhere / "metrics.json")
        what, target = "'runs/a/metrics.json'", elsewhere / "metrics.json"
    else:
        (elsewhere / "per_query.json").write_text(dumps({"schema": "ragsweep.per_query/1", "queries": {}}))
        (run / "per_query.json").symlink_to(elsewhere / "per_query.json")
        what, target = "'runs/a/metrics.json''s per_query.json", elsewhere / "per_query.json"
    assert main(["agreement", "--manifest", str(manifest)]) == EXIT_INPUT
    folder = (tmp_path / "m").resolve()
    assert capsys.readouterr().err == (
        f"ragsweep: error: {manifest}: families[f].arms[a].run {what} leads to {target.resolve()}, outside the "
        f"manifest's folder {folder}; keep the runs inside it (a link may not lead out)\n")


def test_a_link_that_stays_inside_the_manifests_folder_is_followed(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _runs_manifest(tmp_path / "m")
    (tmp_path / "m" / "runs" / "b").rename(tmp_path / "m" / "kept")
    (tmp_path / "m" / "runs" / "b").symlink_to(tmp_path / "m" / "kept", target_is_directory=True)
    out = json.loads(run_command(["--manifest", str(manifest), "--json"], capsys))
    assert [a["arm"] for a in out["arms"]] == ["a", "b"]


def test_sweep_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fam, results = family("f", {"a": (0.01, 0.03), "b": (0.02, 0.02)})
    store = LocalFolderStore(tmp_path / "store")
    for result in results:
        assert result.metrics is not None
        files = {"metrics.json": dumps(result.metrics), "metrics.md": "", "runinfo.json": "{}\n",
                 "per_query.json": dumps({"schema": "ragsweep.per_query/1", "queries": {}})}
        publish_arm(store, "s9", result.arm, config_hash(result.arm, "st"), files, state_identity="st")
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"schema": "ragsweep.catalogue/1", "families": [
        {"name": "f", "control": "f-control", "arms": [{"name": a.name, "axis": a.axis} for a in fam.arms]}]}))
    out = json.loads(run_command(["--sweep", str(tmp_path / "store"), "--sweep-id", "s9", "--catalogue",
                                  str(catalogue), "--json"], capsys))
    assert [a["arm"] for a in out["arms"]] == ["a", "b"]
    assert out["sets"][0]["coefficients"]["kendall_tau_b"] == pytest.approx(-1.0)


def test_the_command_needs_a_source(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="name the arms"):
        run_command([], capsys)


def test_versus_compares_one_corpus_across_two_sweeps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two sweeps of the same arms (embedded vs stack): each side's deltas on one corpus, sides named by backend."""
    store = LocalFolderStore(tmp_path / "store")
    arms = [Arm(name="ctl", family="f", axis="control"), Arm(name="a", family="f", axis="knob"),
            Arm(name="b", family="f", axis="knob"), Arm(name="c", family="f", axis="knob")]
    sides = {"s-emb": ("embedded", {"ctl": 0.5, "a": 0.52, "b": 0.51, "c": 0.49}),
             "s-stack": ("stack", {"ctl": 0.5, "a": 0.51, "b": 0.52, "c": 0.49})}
    for sweep, (backend, values) in sides.items():
        for arm in arms:
            if sweep == "s-stack" and arm.name == "c":
                continue  # never published on one side: not measured, and named
            doc = {**metrics({("synthetic", "all"): values[arm.name]}), "retrieval": {"backend": backend}}
            files = {"metrics.json": dumps(doc), "metrics.md": "", "runinfo.json": "{}\n",
                     "per_query.json": dumps({"schema": "ragsweep.per_query/1", "queries": {}})}
            publish_arm(store, sweep, arm, config_hash(arm, f"st+backend:{backend}"), files,
                        state_identity=f"st+backend:{backend}")  # one state, two backends
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"schema": "ragsweep.catalogue/1", "families": [
        {"name": "f", "control": "ctl", "arms": [{"name": a.name, "axis": a.axis} for a in arms]}]}))
    base = ["--sweep", str(tmp_path / "store"), "--sweep-id", "s-emb", "--versus", "s-stack", "--catalogue",
            str(catalogue)]
    out = json.loads(run_command([*base, "--json"], capsys))
    assert out["corpora"] == {"first": "embedded", "second": "stack"}
    assert [(a["arm"], a["first"], a["second"]) for a in out["arms"]] == [
        ("a", pytest.approx(0.02), pytest.approx(0.01)), ("b", pytest.approx(0.01), pytest.approx(0.02))]
    assert out["sets"][0]["coefficients"]["kendall_tau_b"] == pytest.approx(-1.0)
    assert out["not_measured"] == [{"arm": "c", "family": "f", "why": "incomplete: stack: missing"}]
    with pytest.raises(UsageError, match="--corpus qmsum: not measured in both"):
        run_command([*base, "--corpus", "qmsum"], capsys)
    with pytest.raises(UsageError, match="need --sweep"):
        run_command(["--manifest", str(catalogue), "--versus", "x"], capsys)


def test_versus_over_two_corpora_gives_one_analysis_per_corpus(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The two-corpus state's embedded and stack sweeps share two corpora: each is compared apart, none pooled."""
    store = LocalFolderStore(tmp_path / "store")
    arms = [Arm(name="ctl", family="f", axis="control"), Arm(name="a", family="f", axis="knob"),
            Arm(name="b", family="f", axis="knob"), Arm(name="c", family="f", axis="knob")]
    # per corpus: (embedded, stack) values; qmsum's backends order a and b the same way, synthetic's oppositely
    values = {"qmsum": ({"ctl": 0.1, "a": 0.12, "b": 0.11, "c": 0.09}, {"ctl": 0.1, "a": 0.13, "b": 0.11, "c": 0.08}),
              "synthetic": ({"ctl": 0.5, "a": 0.52, "b": 0.51, "c": 0.49},
                            {"ctl": 0.5, "a": 0.51, "b": 0.52, "c": 0.49})}
    for side, (sweep, backend) in enumerate((("s-emb", "embedded"), ("s-stack", "stack"))):
        for arm in arms:
            cells = {(corpus, "all"): pair[side][arm.name] for corpus, pair in values.items()}
            doc = {**metrics(cells), "retrieval": {"backend": backend}}
            files = {"metrics.json": dumps(doc), "metrics.md": "", "runinfo.json": "{}\n",
                     "per_query.json": dumps({"schema": "ragsweep.per_query/1", "queries": {}})}
            publish_arm(store, sweep, arm, config_hash(arm, f"st+backend:{backend}"), files,
                        state_identity=f"st+backend:{backend}")  # one state, two backends
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"schema": "ragsweep.catalogue/1", "families": [
        {"name": "f", "control": "ctl", "arms": [{"name": a.name, "axis": a.axis} for a in arms]}]}))
    base = ["--sweep", str(tmp_path / "store"), "--sweep-id", "s-emb", "--versus", "s-stack", "--catalogue",
            str(catalogue)]
    out = json.loads(run_command([*base, "--json"], capsys))
    assert out["schema"] == "ragsweep.agreement-versus/1" and list(out["per_corpus"]) == ["qmsum", "synthetic"]
    qmsum, synthetic = out["per_corpus"]["qmsum"], out["per_corpus"]["synthetic"]
    assert qmsum["corpora"] == {"first": "embedded", "second": "stack"}
    assert [(a["arm"], a["first"], a["second"]) for a in qmsum["arms"]] == [
        ("a", pytest.approx(0.02), pytest.approx(0.03)), ("b", pytest.approx(0.01), pytest.approx(0.01)),
        ("c", pytest.approx(-0.01), pytest.approx(-0.02))]
    assert qmsum["sets"][0]["coefficients"]["kendall_tau_b"] == pytest.approx(1.0)
    assert synthetic["sets"][0]["coefficients"]["kendall_tau_b"] == pytest.approx(1 / 3)
    text = run_command(base, capsys)
    assert "## corpus qmsum" in text and "## corpus synthetic" in text
    one = json.loads(run_command([*base, "--corpus", "synthetic", "--json"], capsys))
    assert one["sets"][0]["coefficients"]["kendall_tau_b"] == pytest.approx(1 / 3)


def test_only_the_families_a_sweep_ran_are_reported() -> None:
    from harness.sweep.agreement import ran_families

    fusion = CATALOGUE.family("fusion")
    results = [ArmResults(arm=a, status="missing") for f in CATALOGUE.families for a in f.arms]
    results[[r.arm.name for r in results].index(fusion.control)] = ArmResults(arm=fusion.arms[0], status="failed")
    assert [f.name for f in ran_families(CATALOGUE, results).families] == ["fusion"]
    with pytest.raises(UsageError, match="holds no arm"):
        ran_families(CATALOGUE, [ArmResults(arm=a, status="missing") for a in fusion.arms])
