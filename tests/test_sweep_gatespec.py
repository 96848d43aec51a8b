"""The gate as data (harness.sweep.gatespec): its defaults, its validation, and its trip through a manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_INPUT, InputDataError
from harness.sweep.catalogue import CATALOGUE
from harness.sweep.gatespec import DEFAULT_GATE, GateSpec, LatencyBudget
from harness.sweep.manifest import emit_manifest, load_manifest


def test_the_default_is_the_methodologys_rule() -> None:
    assert (DEFAULT_GATE.measure, DEFAULT_GATE.query_class, DEFAULT_GATE.protected_class) == ("nDCG@10", "all",
                                                                                              "lookup")
    assert DEFAULT_GATE.protected_measures == ("nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR")
    assert DEFAULT_GATE.latency is None and DEFAULT_GATE.tolerance == 0.0005
    assert CATALOGUE.gate == DEFAULT_GATE


def test_emit_manifest_prints_the_gate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "emit-manifest"]) == 0
    gate = json.loads(capsys.readouterr().out)["gate"]
    assert gate == {"measure": "nDCG@10", "query_class": "all", "protected_class": "lookup",
                    "protected_measures": ["nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR"],
                    "tolerance": 0.0005, "latency": None}


def _with_gate(tmp_path: Path, gate: object) -> Path:
    doc = json.loads(emit_manifest())
    doc["gate"] = gate
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_custom_gate_round_trips_through_a_manifest(tmp_path: Path) -> None:
    custom = {"measure": "ndcg@20", "query_class": "all", "protected_class": "multi_file",
              "protected_measures": ["mrr", "R@10"], "tolerance": 0.001,
              "latency": {"p95_added_ms": 10, "p95_ratio": 1.1}}
    catalogue = load_manifest(_with_gate(tmp_path, custom))
    assert catalogue.gate == GateSpec(measure="nDCG@20", protected_class="multi_file",
                                      protected_measures=("MRR", "R@10"), tolerance=0.001,
                                      latency=LatencyBudget(p95_added_ms=10.0, p95_ratio=1.1))
    printed = json.loads(emit_manifest(catalogue))["gate"]
    assert printed["measure"] == "nDCG@20" and printed["protected_measures"] == ["MRR", "R@10"]  # one spelling
    again = tmp_path / "again.json"
    again.write_text(emit_manifest(catalogue), encoding="utf-8")
    assert load_manifest(again) == catalogue


def test_a_manifest_without_a_gate_gets_the_default(tmp_path: Path) -> None:
    doc = json.loads(emit_manifest())
    del doc["gate"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_manifest(path).gate == DEFAULT_GATE


@pytest.mark.parametrize(("gate", "message"), [
    ({"protected_measures": ["nDCG@5", "nDCG@7"]}, "gate.protected_measures: unknown measure 'nDCG@7'"),
    ({"measure": "fileRank"}, "gate.measure: fileRank is a rank (lower is better)"),
    ({"protected_class": "lookups"}, "gate.protected_class: unknown query class 'lookups'"),
    ({"protected_measures": ["MRR", "mrr"]}, "gate.protected_measures: measure named twice: MRR"),
    ({"tolerance": -0.1}, "gate.tolerance: Input should be greater than or equal to 0"),
    ({"latency": {}}, "gate.latency: a latency budget needs p95_added_ms or p95_ratio"),
    ({"latency": {"p95_ratio": 0.9}}, "gate.latency.p95_ratio: Input should be greater than or equal to 1"),
    ({"lookup_must_not_fall": True}, "gate.lookup_must_not_fall: Extra inputs are not permitted"),
    # strict numbers (issue 51): accepted as 1.0, 0.5 and inf before
    ({"tolerance": True}, "gate.tolerance: Input should be a valid number"),
    ({"tolerance": "0.5"}, "gate.tolerance: Input should be a valid number"),
    ({"tolerance": float("inf")}, "gate.tolerance: Input should be a finite number"),  # json writes Infinity
    ({"tolerance": float("nan")}, "gate.tolerance: Input should be a finite number"),
    ({"latency": {"p95_ratio": "1.1"}}, "gate.latency.p95_ratio: Input should be a valid number"),
    ({"latency": {"p95_added_ms": float("inf")}}, "gate.latency.p95_added_ms: Input should be a finite number"),
])
def test_a_bad_gate_field_is_refused_naming_it(tmp_path: Path, gate: dict[str, object], message: str) -> None:
    path = _with_gate(tmp_path, gate)
    with pytest.raises(InputDataError) as e:
        load_manifest(path)
    text = str(e.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text, text


def test_a_whole_number_tolerance_is_still_a_number(tmp_path: Path) -> None:
    assert load_manifest(_with_gate(tmp_path, {"tolerance": 0})).gate.tolerance == 0.0
    assert load_manifest(_with_gate(tmp_path, {"tolerance": 0.001})).gate.tolerance == 0.001


def test_a_bad_gate_exits_4_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with_gate(tmp_path, {"measure": "ndcg@7"})
    code = main(["sweep", "collect", "--sweep-id", "s", "--out", str(tmp_path / "var"), "--manifest", str(path)])
    assert code == EXIT_INPUT == 4
    assert f"{path}: gate.measure: unknown measure 'ndcg@7'" in capsys.readouterr().err
