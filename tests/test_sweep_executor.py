"""The local executor: parallel arms over one state, idempotent resume, failures named.

Runs real jobs.arm subprocesses over a state built from the QMSum-format fixture.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakes import claimed_state

from harness.cli import main
from harness.errors import EXIT_PARTIAL
from harness.sweep.comparison import ComparisonDoc, read_comparison
from harness.sweep.executor import LocalExecutor, collect_sweep, open_store
from harness.sweep.manifest import load_manifest
from tests.fixture_state import qmsum_fixture_state

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
pytestmark = pytest.mark.integration

MANIFEST = {
    "schema": "ragsweep.catalogue/1",
    "families": [{
        "name": "mini",
        "control": "rrf-30-default",
        "arms": [
            {"name": "rrf-30-default", "family": "mini", "axis": "control", "config": {}},
            {"name": "rrf-60", "family": "mini", "axis": "rank_constant",
             "config": {"fusion": "rrf", "rank_constant": 60}},
            {"name": "norm-minmax-arith", "family": "mini", "axis": "normalization",
             "config": {"fusion": "normalization", "normalization_technique": "min_max",
                        "combination_technique": "arithmetic_mean"}},
        ],
    }],
}


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qmsum_fixture_state(tmp_path_factory, "sweep")


def _comparison(sweep: Path) -> ComparisonDoc:
    """The sweep's comparison.json, read through the collector's model."""
    path = sweep / "comparison.json"
    return read_comparison(json.loads(path.read_text(encoding="utf-8")), str(path))


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "arms.json"
    path.write_text(json.dumps(MANIFEST))
    return path


def test_resume_runs_only_the_missing_arm_and_collect_names_it(state: Path, manifest: Path, tmp_path: Path) -> None:
    arms = list(load_manifest(manifest).arms)
    store_root = tmp_path / "store"
    executor = LocalExecutor(state=state, store_spec=str(store_root), workers=2, quiet=True)
    first = executor.run(arms, "s1")
    assert sorted(o.status for o in first.outcomes) == ["published"] * 3

    # as if rrf-60's process had been killed before it published anything
    shutil.rmtree(store_root / "sweeps" / "s1" / "mini" / "rrf-60")
    collect_sweep(open_store(str(store_root)), "s1", "mini", manifest)
    family = _comparison(store_root / "sweeps" / "s1").family("mini")
    assert family is not None and [m.arm for m in family.missing] == ["rrf-60"]
    assert "rrf-60" in (store_root / "sweeps" / "s1" / "comparison.md").read_text()

    second = executor.run(arms, "s1")
    assert {o.arm.name: o.status for o in second.outcomes} == {
        "rrf-30-default": "skipped", "rrf-60": "published", "norm-minmax-arith": "skipped"}


def test_a_failing_arm_is_reported_and_the_others_complete(state: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    broken = json.loads(json.dumps(MANIFEST))
    broken["families"][0]["arms"][1]["config"] = {"fusion": "normalization", "combination_weights": "0.705,0.295"}
    path = tmp_path / "arms.json"
    path.write_text(json.dumps(broken))
    store_root = tmp_path / "store"
    code = main(["sweep", "run", "--state", str(state), "--arms", "mini", "--manifest", str(path),
                 "--out", str(store_root), "--sweep-id", "s2", "--workers", "2"])
    assert code == EXIT_PARTIAL
    err = capsys.readouterr().err
    assert "failed: rrf-60" in err and "Unusable --fusion configuration" in err
    failed = json.loads((store_root / "sweeps" / "s2" / "mini" / "rrf-60" / "failed.json").read_text())
    assert "Unusable --fusion configuration" in failed["error"]
    comparison = (store_root / "sweeps" / "s2" / "comparison.md").read_text()
    assert "rrf-60" in comparison and "failed" in comparison
    assert (store_root / "sweeps" / "s2" / "mini" / "norm-minmax-arith" / "complete.json").is_file()


def test_the_backend_is_part_of_the_identity_and_the_default_sweep_id(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from harness.errors import UsageError
    from harness.sweep.catalogue import CATALOGUE, config_hash
    from harness.sweep.executor import default_sweep_id, measurement_identity, state_identity

    state = claimed_state(tmp_path / "state")
    identity = state_identity(state)
    arm = CATALOGUE.family("fusion").arm("rrf-60")
    embedded, stack = (measurement_identity(state, arm, None, b) for b in ("embedded", "stack"))
    assert embedded == identity and stack == f"{identity}+backend:stack"
    assert config_hash(arm, embedded) != config_hash(arm, stack)
    assert default_sweep_id("fusion", identity) == f"fusion-{identity[:12]}"
    assert default_sweep_id("fusion,pool", identity, "stack") == f"fusion-pool-stack-{identity[:12]}"
    with pytest.raises(UsageError, match="expected one of embedded, stack"):
        measurement_identity(state, arm, None, "elastic")
    assert main(["sweep", "id", "--state", str(state), "--arms", "fusion", "--backend", "stack"]) == 0
    assert capsys.readouterr().out == f"fusion-stack-{identity[:12]}\n"


def test_a_stack_sweep_into_the_s3_server(tmp_path: Path, manifest: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep run --backend stack --out s3://…`: arms search the stack's OpenSearch and publish to its S3 server."""
    import os
    import uuid

    from harness.sweep.executor import default_sweep_id, state_identity

    url, endpoint = os.environ.get("RAGSWEEP_OPENSEARCH_URL"), os.environ.get("RAGSWEEP_S3_ENDPOINT")
    if not (url and endpoint and os.environ.get("AWS_ACCESS_KEY_ID")):
        reason = "the local stack is not up (RAGSWEEP_OPENSEARCH_URL / RAGSWEEP_S3_ENDPOINT unset; make stack-up)"
        if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
            pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
        pytest.skip(reason)
    pytest.importorskip("sentence_transformers")
    state = tmp_path / "state"
    assert main(["state", "build", "--backend", "stack", "--corpus", f"qmsum={FIXTURE}",
                 "--manifest", f"qmsum={FIXTURE / 'SOURCES.tsv'}", "--out", str(state)]) == 0
    spec = f"s3://{os.environ.get('RAGSWEEP_S3_BUCKET', 'ragsweep')}/test-sweep-{uuid.uuid4().hex[:10]}"
    argv = ["sweep", "run", "--state", str(state), "--manifest", str(manifest), "--arms", "mini", "--workers", "2",
            "--backend", "stack", "--out", spec]
    assert main(argv) == 0
    sweep_id = default_sweep_id("mini", state_identity(state, "stack"), "stack")
    out = capsys.readouterr().out
    assert f"sweep {sweep_id}: 3 run, 0 skipped, 0 failed" in out
    assert f"comparison: {spec}/sweeps/{sweep_id}/comparison.md" in out
    store = open_store(spec, endpoint)
    assert "rrf-60" in store.get_text(f"sweeps/{sweep_id}/comparison.md")
    for arm in ("rrf-30-default", "rrf-60", "norm-minmax-arith"):
        metrics = json.loads(store.get_text(f"sweeps/{sweep_id}/mini/{arm}/metrics.json"))
        assert metrics["retrieval"]["backend"] == "stack"
        assert store.exists(f"sweeps/{sweep_id}/mini/{arm}/run.trec")
    assert main(argv) == 0  # a rerun resumes: everything complete in S3 is skipped
    assert f"sweep {sweep_id}: 0 run, 3 skipped, 0 failed" in capsys.readouterr().out


def test_the_sweep_records_its_catalogue_and_the_collector_reads_it(state: Path, manifest: Path,
                                                                    tmp_path: Path) -> None:
    """A --manifest family exists only in the user's file: the collector (a Job elsewhere, given only the
    store, the sweep id and the selector) finds it in sweeps/<id>/catalogue.json."""
    from jobs import collect as collect_job

    catalogue = load_manifest(manifest)
    store_root = tmp_path / "store"
    executor = LocalExecutor(state=state, store_spec=str(store_root), workers=2, quiet=True, catalogue=catalogue)
    report = executor.run(list(catalogue.family("mini").arms[:2]), "cat1")
    assert [o.status for o in report.outcomes] == ["published", "published"]
    assert load_manifest(store_root / "sweeps" / "cat1" / "catalogue.json") == catalogue
    assert collect_job.main(["--store", str(store_root), "--sweep-id", "cat1", "--arms", "mini"]) == 0
    family = _comparison(store_root / "sweeps" / "cat1").family("mini")
    assert family is not None
    assert [m.arm for m in family.missing] == ["norm-minmax-arith"]  # never run: named, from the catalogue


def test_a_corrupt_recorded_catalogue_is_a_one_line_input_error(tmp_path: Path) -> None:
    from harness.errors import InputDataError
    from harness.sweep.executor import stored_catalogue

    store = open_store(str(tmp_path))
    assert stored_catalogue(store, "s1") is None
    store.put_text("sweeps/s1/catalogue.json", '{"schema": \n')
    with pytest.raises(InputDataError, match=r"sweeps/s1/catalogue\.json:2: not JSON"):
        stored_catalogue(store, "s1")


def test_latency_is_measured_interleaved_and_stays_out_of_the_comparison(state: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep run` times control and arms alternately into latency.json; a rerun that ran no arm keeps it,
    --latency-again measures anew, and comparison.json / .md keep their bytes while latency.json does not."""
    budgeted = json.loads(json.dumps(MANIFEST))
    budgeted["gate"] = {"latency": {"p95_added_ms": 1000}}
    path = tmp_path / "arms.json"
    path.write_text(json.dumps(budgeted))
    store_root = tmp_path / "store"
    argv = ["sweep", "run", "--state", str(state), "--arms", "mini", "--manifest", str(path),
            "--out", str(store_root), "--sweep-id", "lat", "--workers", "2", "--latency-sample", "3"]
    assert main(argv) == 0
    sweep = store_root / "sweeps" / "lat"
    latency = json.loads((sweep / "latency.json").read_text())
    (family,) = latency["families"]
    assert family["control"] == "rrf-30-default" and 0 < len(family["queries"]) <= 3
    assert [a["arm"] for a in family["arms"]] == ["rrf-60", "norm-minmax-arith"]
    for arm in family["arms"]:
        assert len(arm["passes"]) == 3 and arm["arm_p95"] > 0 and arm["added_p95_ms_band"][0] <= arm["added_p95_ms"]
    first = {name: (sweep / name).read_bytes() for name in ("comparison.json", "comparison.md", "latency.json")}
    # the budget is in the gate block; no measurement is in the file
    assert b"arm_p95" not in first["comparison.json"] and b"control_p95" not in first["comparison.json"]
    text = (sweep / "latency.md").read_text()
    assert "Latency budget: p95 +1000 ms." in text and "| rrf-60 |" in text and "1: " in text
    capsys.readouterr()
    assert main(argv) == 0  # every arm skipped, and latency.json already times them all: kept
    assert (sweep / "latency.json").read_bytes() == first["latency.json"]
    assert "latency.json already times these arms" in capsys.readouterr().out
    assert main([*argv, "--latency-again"]) == 0  # measured anew
    assert (sweep / "comparison.json").read_bytes() == first["comparison.json"]
    assert (sweep / "comparison.md").read_bytes() == first["comparison.md"]
    assert (sweep / "latency.json").read_bytes() != first["latency.json"]  # started_at, durations
    assert "latency: interleaved measurement in" in capsys.readouterr().out
    assert main([*argv, "--no-latency"]) == 2  # the gate's budget needs the measurement
