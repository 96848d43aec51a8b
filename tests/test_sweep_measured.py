"""One sweep id, one measurement (harness.sweep.measured): a reused sweep id never mixes states (issue 51).

Before: two states run under one ``--sweep-id`` were compared by ``sweep collect`` with exit 0 ("every measured
arm carries the same corpus/index fingerprint"), and an arm that failed on the new state kept its old-state result
in the run's comparison (exit 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import IntegrityError
from harness.sweep.catalogue import CATALOGUE, config_hash
from harness.sweep.collect import collect
from harness.sweep.results import load_from_store
from harness.sweep.storage import LocalFolderStore, publish_arm, publish_failure
from tests.test_measurement_identity import built  # noqa: F401  (the tiny hash-encoded state, a fixture)
from tests.test_sweep_collect import ARMS, FAMILY, FAST, docs, zero

OLD, NEW = "b1f0b43b18bf" + "0" * 52, "30aa4378e6ad" + "1" * 52


def _publish(store: LocalFolderStore, sweep: str, name: str, identity: str) -> None:
    arm = ARMS[name]
    publish_arm(store, sweep, arm, config_hash(arm, identity), docs(zero), state_identity=identity)


def test_collect_refuses_arms_of_two_measurements_and_writes_nothing(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    for name in ("ctl", "win", "loss"):
        _publish(store, "nightly", name, OLD)
    _publish(store, "nightly", "split", NEW)
    with pytest.raises(IntegrityError) as caught:
        collect(store, "nightly", [ARMS[n] for n in ("ctl", "win", "loss", "split")], families=[FAMILY],
                settings=FAST, plot=False)
    assert str(caught.value) == ("sweep nightly: arms measured on 30aa4378e6ad (split) and b1f0b43b18bf (ctl, loss, "
                                 "win) cannot be compared; run each measurement under its own sweep id")
    assert not store.exists("sweeps/nightly/comparison.json")


def test_one_measurement_is_collected_and_named_in_the_comparison(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    for name in ("ctl", "win"):
        _publish(store, "nightly", name, f"{OLD}+backend:stack")
    comparison, _ = collect(store, "nightly", [ARMS["ctl"], ARMS["win"]], families=[FAMILY], settings=FAST,
                            plot=False)
    assert comparison["families"][0]["checks"]["corpus_state"]["measured_on"] == OLD


def test_an_arm_whose_last_attempt_failed_never_shows_its_older_result(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    _publish(store, "s", "win", OLD)
    assert load_from_store(store, "s", ARMS["win"]).status == "complete"
    publish_failure(store, "s", ARMS["win"], config_hash(ARMS["win"], NEW), "exit 5: the state changed")
    result = load_from_store(store, "s", ARMS["win"])
    assert (result.status, result.detail) == ("failed", "exit 5: the state changed")
    assert not store.exists("sweeps/s/fam/win/complete.json")


def test_sweep_run_refuses_a_sweep_id_holding_another_measurement_before_anything_runs(
        built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    out = tmp_path / "out"
    store = LocalFolderStore(out)
    for name in ("rrf-60", "rrf-30-default", "norm-l2-arith", "rrf-30-explicit"):
        arm = CATALOGUE.family("fusion").arm(name)
        publish_arm(store, "nightly", arm, config_hash(arm, OLD), docs(zero), state_identity=OLD)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    code = main(["sweep", "run", "--state", str(built), "--arms", "fusion", "--sweep-id", "nightly", "--out", str(out),
                 "--no-latency", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 5
    assert "ragsweep: error: sweep nightly: it holds arms measured on b1f0b43b18bf (norm-l2-arith, rrf-30-default, " \
           "rrf-30-explicit and 1 more), this run measures " in err
    assert "a sweep id names one measurement (give another --sweep-id or another --out)" in err
    assert sorted(p.relative_to(out) for p in out.rglob("*") if not p.name.startswith(".")) == \
        [p for p in before if not p.name.startswith(".")]


def test_agreement_versus_refuses_two_sweeps_of_two_states(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The embedded-versus-stack comparison of one state is allowed (the agreement tests); two states are not."""

    from tests.test_agreement import run_command

    store = LocalFolderStore(tmp_path / "store")
    for sweep, identity in (("nightly", OLD), ("nightly-m2", NEW)):
        for name in ("ctl", "win", "loss"):
            _publish(store, sweep, name, identity)
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"schema": "ragsweep.catalogue/1", "families": [
        {"name": "fam", "control": "ctl", "arms": [{"name": n, "axis": ARMS[n].axis} for n in ("ctl", "win", "loss")]}
    ]}))
    base = ["--sweep", str(tmp_path / "store"), "--catalogue", str(catalogue), "--sweep-id", "nightly"]
    with pytest.raises(IntegrityError) as caught:
        run_command([*base, "--versus", "nightly-m2", "--corpus", "qmsum"], capsys)
    assert str(caught.value) == ("sweeps nightly and nightly-m2 measured two states (b1f0b43b18bf and 30aa4378e6ad): "
                                 "their arms cannot be compared; run both sweeps on one state")
    run_command(base, capsys)  # each sweep alone is one measurement


def _control(folder: Path, runinfo: dict[str, object] | None) -> Path:

    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(docs(zero)["metrics.json"], encoding="utf-8")
    if runinfo is not None:
        (folder / "runinfo.json").write_text(json.dumps(runinfo), encoding="utf-8")
    return folder / "metrics.json"


def test_bench_compare_refuses_a_control_of_another_measurement_before_the_arm_runs(
        built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    control = _control(tmp_path / "control", {"state_measured": OLD, "state": "/elsewhere"})
    out = tmp_path / "arm"
    code = main(["bench", "--state", str(built), "--control-name", "arm", "--out", str(out), "--compare", str(control)])
    err = capsys.readouterr().err
    assert code == 5, err
    assert f"--compare {control}: its control was measured on b1f0b43b18bf" in err
    assert "two measurements cannot be compared" in err and not out.exists()


@pytest.mark.parametrize("runinfo", [None, {"state": "/elsewhere"}])
def test_bench_compare_notes_a_control_that_records_no_measurement(
        runinfo: dict[str, object] | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.bench.runinfo import check_compare

    control = _control(tmp_path / "control", runinfo)
    check_compare(control, NEW)  # not a refusal
    assert "which state its control measured is not checked" in capsys.readouterr().err
    check_compare(_control(tmp_path / "same", {"state_measured": NEW}), NEW)
    assert capsys.readouterr().err == ""


def test_a_bench_run_records_its_measurement_in_runinfo(built: Path, tmp_path: Path) -> None:  # noqa: F811

    from harness.bench.config import BenchConfig
    from harness.bench.run import run_bench
    from harness.state import State, verified_measurement
    from tests.test_ingest_eager import HashEmbedder

    arm = CATALOGUE.family("fusion").arm("rrf-30-default")
    run_bench(State.open(built), BenchConfig(arm=arm.arm_config, control_name=arm.name), HashEmbedder(),
              tmp_path / "arm")
    runinfo = json.loads((tmp_path / "arm" / "runinfo.json").read_text(encoding="utf-8"))
    assert runinfo["state_measured"] == verified_measurement(built)


def test_the_reproduction_page_refuses_sweeps_of_two_measurements(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from tests.reproduction_fixtures import publish_sweep

    publish_sweep(tmp_path, "fusion-b1f0b43b18bf", ("fusion",), state=OLD)
    publish_sweep(tmp_path, "budget-30aa4378e6ad", ("budget",), state=NEW)
    out = tmp_path / "page.md"
    assert main(["report", "reproduction", "--sweeps", str(tmp_path), "--bench-dir", str(tmp_path / "bench"),
                 "--out", str(out)]) == 5
    assert ("the page's sweeps were measured on two states: 30aa4378e6ad (budget-30aa4378e6ad) and b1f0b43b18bf "
            "(fusion-b1f0b43b18bf); a page shows one measurement") in capsys.readouterr().err
    assert not out.exists()
    comparison = json.loads((tmp_path / "sweeps" / "budget-30aa4378e6ad" / "comparison.json").read_text())
    assert comparison["families"][0]["checks"]["corpus_state"]["measured_on"] == NEW
