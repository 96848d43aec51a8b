"""latency.md: each arm's verdict with its interleaved latency beside it, and a latency budget's verdicts.

Read from comparison.json (the quality gate's verdicts, deterministic) and latency.json (the
interleaved measurement, harness.sweep.latency: durations, never byte-identical). Without a
budget in the gate, every verdict is comparison.json's and the latency is shown beside it.
With one, a quality ``win`` becomes ``latency over budget: ...`` when the median over passes of
the arm's added p95 (or of its p95 ratio) exceeds the budget, and ``latency not measured: ...``
when there is no interleaved measurement of the arm; every other verdict is comparison.json's.
That final verdict depends on durations, so latency.md is not byte-reproducible: it is written
apart from comparison.md, which links it, and says when it was measured and where.
"""

from __future__ import annotations

import json
from typing import Any

from harness.errors import InputDataError
from harness.objectstore import ArtefactStore
from harness.sweep.gate import LATENCY_NOT_MEASURED, LATENCY_OVER, WIN
from harness.sweep.gatespec import GateSpec, LatencyBudget
from harness.sweep.latency import LATENCY_SCHEMA, latency_key


def _measured(latency: dict[str, Any] | None, family: str, arm: str) -> dict[str, Any] | str:
    """The arm's measurement, or why there is none."""
    if latency is None:
        return ("no interleaved measurement in this sweep (run it locally without --no-latency; "
                "a Kubernetes sweep does not measure latency)")
    entry = next((f for f in latency["families"] if f["name"] == family), None)
    if entry is None:
        return f"latency.json has no {family} family"
    found = next((a for a in entry["arms"] if a["arm"] == arm), None)
    if found is None:
        return f"latency.json has no {arm} in {family}"
    if found.get("not_measured"):
        return str(found["not_measured"])
    return found


def over_budget(measured: dict[str, Any], budget: LatencyBudget) -> str | None:
    """Why the arm is over ``budget`` (the medians over passes), or None when it is within it."""
    over = []
    added, ratio = measured["added_p95_ms"], measured["ratio_p95"]
    if budget.p95_added_ms is not None and added > budget.p95_added_ms:
        over.append(f"p95 {added:+.1f} ms (budget {budget.p95_added_ms:g} ms)")
    if budget.p95_ratio is not None and ratio is not None and ratio > budget.p95_ratio:
        over.append(f"p95 x{ratio:.3f} (budget x{budget.p95_ratio:g})")
    return ", ".join(over) or None


def final_verdict(quality: str, measured: dict[str, Any] | str, gate: GateSpec) -> str:
    if gate.latency is None or quality != WIN:
        return quality
    if isinstance(measured, str):
        return f"{LATENCY_NOT_MEASURED}: {measured}"
    why = over_budget(measured, gate.latency)
    return WIN if why is None else f"{LATENCY_OVER}: {why}"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _band(measured: dict[str, Any], key: str) -> str:
    band = measured.get(f"{key}_band")
    return "—" if band is None else f"{_ms(measured[key])} [{_ms(band[0])}, {_ms(band[1])}]"


def _passes(measured: dict[str, Any]) -> str:
    return "; ".join(f"{p['pass']}: {_ms(p['control_p95'])} / {_ms(p['arm_p95'])}" for p in measured["passes"])


def final_verdicts(comparison: dict[str, Any], latency: dict[str, Any] | None, gate: GateSpec) -> list[dict[str, Any]]:
    rows = []
    for family in comparison["families"]:
        for entry in family["arms"]:
            measured = _measured(latency, family["name"], entry["arm"])
            rows.append({"family": family["name"], "arm": entry["arm"], "quality": entry["verdict"],
                         "verdict": final_verdict(entry["verdict"], measured, gate),
                         "latency": measured if isinstance(measured, dict) else None,
                         "not_measured": measured if isinstance(measured, str) else None})
    return rows


def render_latency(comparison: dict[str, Any], latency: dict[str, Any] | None, gate: GateSpec) -> str:
    out = [f"# Sweep {comparison['sweep_id']}: verdicts with their interleaved latency", ""]
    budget = "none" if gate.latency is None else gate.latency.describe()
    out.append(f"Latency budget: {budget}. The quality verdicts are comparison.md's (byte-identical across reruns); "
               "this file reads durations, so it is not: "
               + ("with a budget, a quality win's final verdict depends on them." if gate.latency is not None
                  else "without a budget, no verdict depends on them."))
    if latency is not None:
        d = latency["design"]
        out += ["", f"Measured {latency['started_at']} on {latency['host']} ({latency['backend']} backend) in "
                f"{latency['seconds']:.1f}s: {d['passes']} passes, {d['sample_per_corpus']} queries per corpus, "
                f"concurrency {d['concurrency']}, {d['warmup']} first; {d['order']}; {d['reading']}. "
                "Milliseconds; a value in brackets is the band over passes."]
    rows = final_verdicts(comparison, latency, gate)
    for family in comparison["families"]:
        mine = [r for r in rows if r["family"] == family["name"]]
        if not mine:
            continue
        out += ["", f"## {family['name']} — control {family['control']}", "",
                "| arm | verdict | control p50 | control p95 | arm p50 | arm p95 | added p95 | ratio p95 | "
                "p95 per pass (control / arm) |", "|" + "---|" * 9]
        for r in mine:
            m = r["latency"]
            if m is None:
                out.append(f"| {r['arm']} | {r['verdict']} | {r['not_measured']} |" + " |" * 6)
                continue
            ratio = "—" if m["ratio_p95"] is None else f"x{m['ratio_p95']:.3f}"
            out.append(f"| {r['arm']} | {r['verdict']} | {_band(m, 'control_p50')} | {_band(m, 'control_p95')} | "
                       f"{_band(m, 'arm_p50')} | {_band(m, 'arm_p95')} | {_band(m, 'added_p95_ms')} | {ratio} | "
                       f"{_passes(m)} |")
    return "\n".join(out) + "\n"


def write_latency_md(store: ArtefactStore, sweep_id: str, comparison: dict[str, Any], gate: GateSpec) -> str | None:
    """Write latency.md under the sweep when it has latency.json or the gate a budget; returns its key."""
    from harness.sweep.storage import MissingArtefactError

    key = latency_key(sweep_id)
    try:
        latency: dict[str, Any] | None = json.loads(store.get_text(key))
    except MissingArtefactError:
        latency = None
    except json.JSONDecodeError as e:
        raise InputDataError(f"{store.describe()}/{key}:{e.lineno}: not JSON ({e.msg})") from e
    if latency is not None and latency.get("schema") != LATENCY_SCHEMA:
        raise InputDataError(f"{store.describe()}/{key}: field schema: expected {LATENCY_SCHEMA!r}, "
                             f"got {latency.get('schema')!r}")
    if latency is None and gate.latency is None:
        return None
    md = key.removesuffix(".json") + ".md"
    store.put_text(md, render_latency(comparison, latency, gate))
    return md
