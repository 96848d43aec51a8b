"""A latency budget's verdicts (harness.sweep.latencygate) over hand-written measurements, and latency.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.sweep.gate import LOOKUP_REGRESSED, WIN
from harness.sweep.gatespec import GateSpec
from harness.sweep.latencygate import final_verdict, render_latency, write_latency_md
from harness.sweep.storage import LocalFolderStore


def measured(added: float, ratio: float) -> dict[str, Any]:
    return {"added_p95_ms": added, "ratio_p95": ratio}


ADDED_10 = GateSpec(latency={"p95_added_ms": 10})
RATIO_110 = GateSpec(latency={"p95_ratio": 1.1})


@pytest.mark.parametrize(("quality", "latency", "gate", "expected"), [
    (WIN, measured(12.3, 1.05), GateSpec(), WIN),  # no budget: latency decides nothing
    (WIN, measured(12.3, 1.05), ADDED_10, "latency over budget: p95 +12.3 ms (budget 10 ms)"),
    (WIN, measured(9.9, 1.05), ADDED_10, WIN),
    (WIN, measured(10.0, 1.05), ADDED_10, WIN),  # at the budget is within it
    (WIN, measured(1.0, 1.25), RATIO_110, "latency over budget: p95 x1.250 (budget x1.1)"),
    (WIN, measured(12.3, 1.25), GateSpec(latency={"p95_added_ms": 10, "p95_ratio": 1.1}),
     "latency over budget: p95 +12.3 ms (budget 10 ms), p95 x1.250 (budget x1.1)"),
    (WIN, "no interleaved measurement in this sweep", ADDED_10,
     "latency not measured: no interleaved measurement in this sweep"),
    (LOOKUP_REGRESSED, measured(50.0, 2.0), ADDED_10, LOOKUP_REGRESSED),  # the quality gate failed first
])
def test_final_verdict(quality: str, latency: dict[str, Any] | str, gate: GateSpec, expected: str) -> None:
    assert final_verdict(quality, latency, gate) == expected


COMPARISON = {"sweep_id": "s", "families": [{"name": "fusion", "control": "rrf-30-default", "arms": [
    {"arm": "rrf-60", "verdict": WIN}, {"arm": "norm-zscore-arith", "verdict": "split"}]}]}


def latency_doc(added: float) -> dict[str, Any]:
    passes = [{"pass": p, "control_p50": 18.0, "control_p95": 20.0, "arm_p50": 18.0 + added, "arm_p95": 20.0 + a,
               "added_p95_ms": a, "ratio_p95": (20.0 + a) / 20.0} for p, a in ((1, added), (2, added + 4), (3, added))]
    arm = {"arm": "rrf-60", "stage": "retrieve", "not_measured": None, "passes": passes}
    for key in ("control_p50", "control_p95", "arm_p50", "arm_p95", "added_p95_ms", "ratio_p95"):
        values = sorted(p[key] for p in passes)
        arm[key], arm[f"{key}_band"] = values[1], [values[0], values[2]]
    return {"schema": "ragsweep.latency/1", "sweep_id": "s", "backend": "embedded", "host": "h",
            "started_at": "2026-01-01T00:00:00Z", "seconds": 1.5,
            "design": {"passes": 3, "sample_per_corpus": 16, "concurrency": 1, "warmup": "one control run",
                       "order": "per pass: control, arm 1, ...", "reading": "median over passes"},
            "families": [{"name": "fusion", "control": "rrf-30-default", "arms": [
                arm, {"arm": "norm-zscore-arith", "stage": "retrieve", "not_measured": "x"}]}]}


def test_latency_md_shows_the_budget_verdict_and_the_spread() -> None:
    text = render_latency(COMPARISON, latency_doc(12.5), ADDED_10)
    # median of the passes' added p95 (12.5, 16.5, 12.5) is 12.5; the band 12.5-16.5
    assert ("| rrf-60 | latency over budget: p95 +12.5 ms (budget 10 ms) | 18.0 [18.0, 18.0] | 20.0 [20.0, 20.0] | "
            "30.5 [30.5, 30.5] | 32.5 [32.5, 36.5] | 12.5 [12.5, 16.5] | x1.625 | "
            "1: 20.0 / 32.5; 2: 20.0 / 36.5; 3: 20.0 / 32.5 |") in text
    assert "| norm-zscore-arith | split | x |" in text
    assert "Latency budget: p95 +10 ms." in text


def test_a_budget_with_no_measurement_writes_latency_not_measured(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    assert write_latency_md(store, "s", COMPARISON, GateSpec()) is None  # no budget, no measurement: no file
    key = write_latency_md(store, "s", COMPARISON, ADDED_10)
    assert key == "sweeps/s/latency.md"
    text = (tmp_path / key).read_text(encoding="utf-8")
    assert "| rrf-60 | latency not measured: no interleaved measurement in this sweep" in text
    store.put_text("sweeps/s/latency.json", json.dumps(latency_doc(2.0)))
    write_latency_md(store, "s", COMPARISON, ADDED_10)
    assert "| rrf-60 | win | " in (tmp_path / key).read_text(encoding="utf-8")
