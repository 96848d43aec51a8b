"""jobs/arm.py run exactly as an arm Job's container would run it.

The command and the environment are taken from ``build_arm_job``'s output (the container's
``command`` and ``env``), pointed at a small state built from tests/fixtures/qmsum. Two
settings: the embedded backend with a local-folder store, and what a release runs — the
stack backend (the real OpenSearch `make stack-up` starts) with the artefact store on the
real S3 server, its credentials entering through ``secretKeyRef`` exactly as in a pod. The
only translations are the ones a kubelet does: the image's ``python`` is this venv's
interpreter, and each ``secretKeyRef`` is resolved from the Secret's data (here, the local
S3 server's credentials).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
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
from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES, LocalFolderStore, is_complete
from harness.sweep.task import Task

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


def settings_for(state: Path, store: Path | str, backend: str = "embedded", **extra: Any) -> LauncherSettings:
    digest = "sha256:" + "0" * 64
    return LauncherSettings.model_validate({
        "release": "local", "images": {"cpu": f"local/cpu@{digest}", "gpu": f"local/gpu@{digest}"},
        "serviceAccount": "local-arm", "store": str(store), "statePath": str(state), "backend": backend,
        "credentials": {"accessKeyId": {"name": "s3", "key": "id"}, "secretAccessKey": {"name": "s3", "key": "key"}},
        **extra,
    })


def container_process(job: dict[str, Any], scratch: Path,
                      secrets: dict[str, dict[str, str]] | None = None) -> tuple[list[str], dict[str, str]]:
    """The main container's argv and environment, as the kubelet would start it."""
    (container,) = job["spec"]["template"]["spec"]["containers"]
    argv = list(container["command"]) + list(container.get("args", []))
    assert argv[0] == "python"
    argv[0] = sys.executable
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    for e in container["env"]:
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref and secrets is not None:
            env[e["name"]] = secrets[ref["name"]][ref["key"]]
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
    task = Task.from_json(env["RAGSWEEP_TASK"])  # the one input: the task, whole
    assert task.backend == "embedded" and task.arms == (arm,) and task.state == state
    assert argv[1:] == ["-m", "jobs.arm"]  # no flags

    result = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"{arm.name}: published" in result.stdout

    store = LocalFolderStore(store_dir)
    prefix = f"sweeps/{SWEEP}/fusion/{arm.name}"
    for name in (*ARM_FILES, *ARM_EXTRA_FILES, "complete.json"):
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


def _stack_or_skip() -> tuple[str, str]:
    url, endpoint = os.environ.get("RAGSWEEP_OPENSEARCH_URL"), os.environ.get("RAGSWEEP_S3_ENDPOINT")
    if url and endpoint and os.environ.get("AWS_ACCESS_KEY_ID"):
        return url, endpoint
    reason = "the local stack is not up (RAGSWEEP_OPENSEARCH_URL / RAGSWEEP_S3_ENDPOINT unset; make stack-up)"
    if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
        pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def stack_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _stack_or_skip()
    out = tmp_path_factory.mktemp("k8s-arm-stack") / "state"
    result = subprocess.run([str(RAGSWEEP), "state", "build", "--backend", "stack", "--corpus", f"qmsum={FIXTURE}",
                             "--manifest", f"qmsum={FIXTURE / 'SOURCES.tsv'}", "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


def test_jobs_arm_from_the_job_spec_searches_the_stack_and_publishes_to_s3(stack_state: Path,
                                                                           tmp_path: Path) -> None:
    """What a release's arm pod does: the stack backend, the S3 store, credentials by reference."""
    from harness.sweep.storage import S3Store

    url, endpoint = _stack_or_skip()
    prefix = f"test-k8s-arm-{uuid.uuid4().hex[:10]}"
    settings = settings_for(stack_state, f"s3://{os.environ.get('RAGSWEEP_S3_BUCKET', 'ragsweep')}/{prefix}",
                            backend="stack", s3Endpoint=endpoint,
                            extraEnv={"RAGSWEEP_OPENSEARCH_URL": url, "RAGSWEEP_OPENSEARCH_KNN_ENGINE": "lucene"})
    arm = CATALOGUE.family("fusion").arm("rrf-60")
    job = serialize(build_arm_job(settings, arm, SWEEP))
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert all("value" not in e for e in container["env"] if e["name"].startswith("AWS_") and "KEY" in e["name"])
    secrets = {"s3": {"id": os.environ["AWS_ACCESS_KEY_ID"], "key": os.environ["AWS_SECRET_ACCESS_KEY"]}}
    argv, env = container_process(job, tmp_path, secrets)
    assert Task.from_json(env["RAGSWEEP_TASK"]).backend == "stack" and env["RAGSWEEP_OPENSEARCH_URL"] == url

    result = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"{arm.name}: published" in result.stdout
    store = S3Store(os.environ.get("RAGSWEEP_S3_BUCKET", "ragsweep"), endpoint, prefix=prefix)
    key = f"sweeps/{SWEEP}/fusion/{arm.name}"
    metrics = json.loads(store.get_text(f"{key}/metrics.json"))
    assert metrics["retrieval"]["backend"] == "stack" and metrics["retrieval"]["fusion_mode"] == "server"
    runinfo = json.loads(store.get_text(f"{key}/runinfo.json"))
    assert runinfo["stack"]["indexing_total"]["before"] == runinfo["stack"]["indexing_total"]["after"]
    digest = config_hash(arm, measurement_identity(stack_state, arm, None, "stack"))
    assert is_complete(store, SWEEP, arm, digest)
    assert not is_complete(store, SWEEP, arm, config_hash(arm, measurement_identity(stack_state, arm, None)))
