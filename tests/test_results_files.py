"""Results files are read through the writer's model: every reader agrees on what a file must hold.

metrics.json is read by ``report.compare`` (``bench --compare``) and by ``sweep.results`` (the
collector and the agreement analysis). Both go through ``harness.report.results.MetricsDoc``, so a
file one accepts the other accepts, and a file one refuses the other refuses with the same line.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputDataError
from harness.report.compare import load_metrics
from harness.sweep.catalogue import Arm
from harness.sweep.results import load_from_path

ROW = {"corpus": "qmsum", "tier": "A", "query_class": "all", "n": 3, "metrics": {"nDCG@10": 0.5, "fileRank": "inf"}}
METRICS: dict[str, Any] = {"schema": "ragsweep.metrics/1", "control_name": "c", "rows": [ROW]}
ARM = Arm(name="a", family="f", axis="control")


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _both(path: Path) -> tuple[str, str]:
    """What each reader says about ``path``: "ok" or its one-line error."""
    said = []
    for read in (load_metrics, lambda p: load_from_path(ARM, p)):
        try:
            read(path)
        except InputDataError as e:
            said.append(str(e))
        else:
            said.append("ok")
    return said[0], said[1]


def test_both_readers_accept_what_the_writer_writes(tmp_path: Path) -> None:
    assert _both(_write(tmp_path, METRICS)) == ("ok", "ok")


@pytest.mark.parametrize("key", ["tier", "n"])
def test_both_readers_refuse_a_row_without_a_key_the_writer_always_writes(key: str, tmp_path: Path) -> None:
    doc = copy.deepcopy(METRICS)
    del doc["rows"][0][key]
    path = _write(tmp_path, doc)
    compare_says, sweep_says = _both(path)
    assert compare_says == sweep_says
    assert compare_says.startswith(f"{path}: rows[0].{key}")


@pytest.mark.parametrize(("change", "says"), [
    (lambda d: d["rows"][0].update(n="3"), "rows[0].n: Input should be a valid integer"),
    (lambda d: d["rows"][0]["metrics"].update({"MRR": "high"}),
     "rows[0].metrics.MRR: Input should be a valid number, unable to parse string as a number"),
    (lambda d: d["rows"].append(dict(ROW)), "rows[1]: a second row for corpus qmsum class all"),
    (lambda d: d.pop("rows"), "rows is missing"),
    (lambda d: d.update(schema="ragsweep.metrics/0"),
     "field schema: expected 'ragsweep.metrics/1', got 'ragsweep.metrics/0'"),
])
def test_both_readers_name_the_same_field(change: Any, says: str, tmp_path: Path) -> None:
    doc = copy.deepcopy(METRICS)
    change(doc)
    path = _write(tmp_path, doc)
    assert _both(path) == (f"{path}: {says}",) * 2


def test_per_query_json_is_read_through_its_model(tmp_path: Path) -> None:
    (tmp_path / "per_query.json").write_text(json.dumps(
        {"schema": "ragsweep.per_query/1", "queries": {"q1": {"corpus": "qmsum", "measures": {"MRR": 1.0}}}}))
    with pytest.raises(InputDataError) as e:
        load_from_path(ARM, _write(tmp_path, METRICS))
    assert str(e.value) == f"{tmp_path}/per_query.json: queries.q1.query_class is missing"


def test_the_committed_baselines_fit_the_models() -> None:
    """What the writer wrote (the committed baselines) fits the models, and compare hands it back unchanged."""
    from harness.report.results import MetricsDoc, PerQueryDoc

    baseline = Path(__file__).resolve().parents[1] / "baselines"
    written = sorted(baseline.glob("*/metrics.json"))
    assert written
    for path in written:
        MetricsDoc.model_validate_json(path.read_bytes())
        assert load_metrics(path) == json.loads(path.read_text(encoding="utf-8"))
        if (path.parent / "per_query.json").is_file():
            PerQueryDoc.model_validate_json((path.parent / "per_query.json").read_bytes())


# --- complete.json / failed.json: written and read by sweep.storage through sweep.markers ------------------

@pytest.mark.parametrize(("marker", "doc", "says"), [
    ("complete.json", {"schema": "ragsweep.complete/1", "arm": "a", "family": "f", "config": {},
                       "config_hash": "h", "state_identity": None}, "files is missing"),
    ("failed.json", {"schema": "ragsweep.failed/1", "arm": "a", "family": "f", "config_hash": "h", "error": 3},
     "error: Input should be a valid string"),
    ("failed.json", {"schema": "ragsweep.complete/1", "arm": "a", "family": "f", "config_hash": "h", "error": "x"},
     "schema: Input should be 'ragsweep.failed/1'"),
])
def test_a_marker_that_does_not_fit_its_model_names_the_field(marker: str, doc: dict[str, Any], says: str,
                                                              tmp_path: Path) -> None:
    from harness.sweep.storage import LocalFolderStore, arm_key, read_complete_marker, read_failure

    store = LocalFolderStore(tmp_path)
    key = arm_key("s1", ARM, marker)
    store.put_text(key, json.dumps(doc))
    read = read_complete_marker if marker == "complete.json" else read_failure
    with pytest.raises(InputDataError) as e:
        read(store, "s1", ARM)
    assert str(e.value) == f"{store.describe()}: {key}: {says}"


def test_markers_are_written_as_before_and_read_back_whole(tmp_path: Path) -> None:
    from harness.sweep.storage import (
        LocalFolderStore,
        arm_key,
        publish_arm,
        publish_failure,
        read_complete_marker,
        read_failure,
        sha256_text,
    )

    store = LocalFolderStore(tmp_path)
    files = {"metrics.json": "m\n", "metrics.md": "md\n", "per_query.json": "p\n", "runinfo.json": "r\n"}
    publish_arm(store, "s1", ARM, "h", files, state_identity="st")
    expected = {"schema": "ragsweep.complete/1", "arm": "a", "family": "f", "config": ARM.resolved_config(),
                "config_hash": "h", "state_identity": "st", "files": {n: sha256_text(t) for n, t in files.items()}}
    assert store.get_text(arm_key("s1", ARM, "complete.json")) == json.dumps(expected, indent=2, sort_keys=True) + "\n"
    assert read_complete_marker(store, "s1", ARM) == expected
    publish_failure(store, "s1", ARM, "h", "exit 3: refused")
    failed = {"schema": "ragsweep.failed/1", "arm": "a", "family": "f", "config_hash": "h", "error": "exit 3: refused"}
    assert store.get_text(arm_key("s1", ARM, "failed.json")) == json.dumps(failed, indent=2, sort_keys=True) + "\n"
    assert read_failure(store, "s1", ARM) == failed


def test_the_answers_block_is_read_through_the_answers_stage_model(tmp_path: Path) -> None:
    baseline = Path(__file__).resolve().parents[1] / "baselines" / "synthetic-small-rrf-30-default" / "metrics.json"
    doc = json.loads(baseline.read_text(encoding="utf-8"))
    del doc["answers"]["queries"]["scored"]
    path = _write(tmp_path, doc)
    assert _both(path) == (f"{path}: answers.queries.scored is missing",) * 2
