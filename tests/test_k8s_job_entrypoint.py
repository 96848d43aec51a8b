"""jobs/arm.py run exactly as an arm Job's container would run it.

The command and the environment are taken from ``build_arm_job``'s output (the container's
``command`` and ``env``), pointed at a small local state built from tests/fixtures/qmsum and
at a local-folder store. The only translations are the ones a pod does for itself: the
image's ``python`` is this venv's interpreter, and ``valueFrom`` entries (Secrets) are left
out because a folder store needs no credentials.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")
pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
pytest.importorskip("pytrec_eval", reason="the eval extra is not installed")

from harness.sweep.catalogue import CATALOGUE, config_hash
from harness.sweep.executor import measurement_identity
from harness.sweep.k8s.builders import build_arm_job, serialize
from harness.sweep.k8s.settings import LauncherSettings
from harness.sweep.storage import ARM_FILES, LocalFolderStore, is_complete

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "qmsum"
RAGSWEEP = Path(sys.executable).with_name("ragsweep")
SWEEP = "fusion-fixture"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("k8s-arm") / "state"
    subprocess.run([str(RAGSWEEP), "state", "build", "--corpus", f"qmsum={FIXTURE}",
                    "--manifest", f"qmsum={FIXTURE / 'SOURCES.tsv'}", "--out", str(out)],
                   check=True, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return out


def settings_for(state: Path, store: Path) -> LauncherSettings:
    digest = "sha256:" + "0" * 64
    return LauncherSettings.model_validate({
        "release": "local", "images": {"cpu": f"local/cpu@{digest}", "gpu": f"local/gpu@{digest}"},
        "serviceAccount": "local-arm", "store": str(store), "statePath": str(state),
        "credentials": {"accessKeyId": {"name": "s3", "key": "id"}, "secretAccessKey": {"name": "s3", "key": "key"}},
    })


def container_process(job: dict[str, Any], scratch: Path) -> tuple[list[str], dict[str, str]]:
    """The main container's argv and environment, as the kubelet would start it."""
    (container,) = job["spec"]["template"]["spec"]["containers"]
    argv = list(container["command"]) + list(container.get("args", []))
    assert argv[0] == "python"
    argv[0] = sys.executable
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env["XDG_CACHE_HOME"] = str(scratch / "cache")
    env["MPLCONFIGDIR"] = str(scratch / "matplotlib")
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "OPENBLAS_CORETYPE",
                                                          "OPENBLAS_L2_SIZE", "TMPDIR")}
    return argv, {**base, **env, "PYTHONPATH": str(ROOT)}


def test_jobs_arm_runs_from_the_job_spec_and_publishes(state: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    arm = CATALOGUE.family("fusion").arm("rrf-60")
    job = serialize(build_arm_job(settings_for(state, store_dir), arm, SWEEP))
    argv, env = container_process(job, tmp_path)
    assert argv[1:] == ["-m", "jobs.arm"]  # no flags: every input comes from the env twins
    assert {"RAGSWEEP_STATE", "RAGSWEEP_STORE", "RAGSWEEP_SWEEP_ID", "RAGSWEEP_ARM"} <= set(env)

    result = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"{arm.name}: published" in result.stdout

    store = LocalFolderStore(store_dir)
    prefix = f"sweeps/{SWEEP}/fusion/{arm.name}"
    for name in (*ARM_FILES, "complete.json"):
        assert store.exists(f"{prefix}/{name}"), name
    digest = config_hash(arm, measurement_identity(state, arm, None))
    assert is_complete(store, SWEEP, arm, digest)  # what the launcher checks on a rerun
    metrics = json.loads(store.get_text(f"{prefix}/metrics.json"))
    assert metrics["retrieval"]["fusion"]["selected_explicitly"] is True

    again = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "skipped" in again.stdout


def test_a_failing_arm_leaves_failed_json_for_the_collector(state: Path, tmp_path: Path) -> None:
    store_dir = tmp_path / "store"
    arm = CATALOGUE.family("embedding").arm("embed-body")  # the fixture state has no body vectors
    job = serialize(build_arm_job(settings_for(state, store_dir), arm, SWEEP))
    argv, env = container_process(job, tmp_path)
    result = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode != 0
    failed = json.loads(LocalFolderStore(store_dir).get_text(f"sweeps/{SWEEP}/embedding/{arm.name}/failed.json"))
    assert failed["arm"] == arm.name and failed["error"]
