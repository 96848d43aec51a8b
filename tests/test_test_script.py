"""stack/test.sh, the steps of `make test` and `make test-all`, run with a stand-in for make.

`make test` builds the Kubernetes binaries the machine's tools cache lacks (once per machine: 10-35
minutes on 2 cores, within CI's 90), and a failed build stops the run with its exit code; then it runs
the single-node cluster's smoke scope (as root), and `make test-all` every cluster test. With
RAGSWEEP_TEST_BUILD=0 it builds only helm: when the cache lacks the others the tools step says so and
the run goes on (the Kubernetes tests then skip, saying why, and the cluster step is not run).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FAKE_MAKE = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$MAKE_LOG"
case " $* " in
  *" k8s-tools-cached "*) exit "${CACHED_RC:-0}" ;;
  *" k8s-apiserver-tools "*) exit "${BUILD_RC:-0}" ;;
  *" k8s-tools "*) exit "${HELM_RC:-0}" ;;
  *" k8s-status "*) exit "${STATUS_RC:-1}" ;;
esac
exit 0
"""

FAKE_PY = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$PY_LOG"
exit "${PY_RC:-0}"
"""


def _run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    make = tmp_path / "make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    py = tmp_path / "python"
    py.write_text(FAKE_PY)
    py.chmod(0o755)
    log = tmp_path / "make.log"
    log.write_text("")
    full = {**os.environ, "MAKE": str(make), "MAKE_LOG": str(log), "PY": str(py), "PY_LOG": str(tmp_path / "py.log"),
            **env}
    proc = subprocess.run(
        ["bash", str(ROOT / "stack" / "test.sh")], env=full, capture_output=True, text=True, timeout=60
    )
    return proc, log.read_text().splitlines()


BUILT = ["--no-print-directory k8s-tools k8s-apiserver-tools", "--no-print-directory k8s-tools-cached"]


def test_make_test_builds_the_missing_tools(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == BUILT
    assert "tools: ok" in proc.stdout


def test_make_test_stops_at_a_failed_build(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools baseline", BUILD_RC="3")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools k8s-apiserver-tools"]
    assert "tools: FAILED (exit 3)" in proc.stdout
    assert "baseline:" not in proc.stdout  # stopped before the next step


def test_tools_built_but_not_found_in_the_cache_fail_make_test(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools baseline", CACHED_RC="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert calls == BUILT
    assert "tools: built, but make k8s-tools-cached does not find them" in proc.stdout
    assert "baseline:" not in proc.stdout


def test_without_building_make_test_goes_on_without_the_tools(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools", RAGSWEEP_TEST_BUILD="0", CACHED_RC="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools", "--no-print-directory k8s-tools-cached"]  # helm only
    assert "not in this machine's cache, and not built (RAGSWEEP_TEST_BUILD=0)" in proc.stdout
    assert "tools: ok" in proc.stdout


def test_without_building_make_test_uses_the_cached_tools(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools", RAGSWEEP_TEST_BUILD="0", CACHED_RC="0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools", "--no-print-directory k8s-tools-cached"]
    assert "not in this machine's cache" not in proc.stdout


def test_a_failed_helm_build_stops_make_test(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools", RAGSWEEP_TEST_BUILD="0", HELM_RC="2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools"]
    assert "tools: FAILED (exit 2)" in proc.stdout


ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the cluster step runs only as root (CI runs as root)")


@ROOT_ONLY
def test_make_test_runs_the_cluster_smoke_scope(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools cluster", CACHED_RC="0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == [*BUILT, "--no-print-directory images", "--no-print-directory k8s-status",
                     "--no-print-directory k8s-up", "--no-print-directory k8s-down"]  # down: it was not up before
    (pytest_args,) = (tmp_path / "py.log").read_text().splitlines()
    assert "-m cluster_smoke tests/test_k8s_cluster.py" in pytest_args
    assert "cluster: ok" in proc.stdout


@ROOT_ONLY
def test_without_building_or_the_tools_make_test_says_why_the_cluster_is_not_run(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools cluster", RAGSWEEP_TEST_BUILD="0", CACHED_RC="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools", "--no-print-directory k8s-tools-cached"]  # asked once
    assert "cluster: not run: the node's binaries are not in this machine's cache" in proc.stdout
    assert not (tmp_path / "py.log").exists()


@ROOT_ONLY
def test_make_test_all_runs_every_cluster_test_and_leaves_a_running_cluster_up(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools cluster", RAGSWEEP_CLUSTER_SCOPE="all", STATUS_RC="0",
                       PY_RC="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the tests' failure is the run's
    assert "--no-print-directory k8s-down" not in calls
    (pytest_args,) = (tmp_path / "py.log").read_text().splitlines()
    assert "cluster_smoke" not in pytest_args and pytest_args.endswith("tests/test_k8s_cluster.py")
    assert "cluster: FAILED (exit 1)" in proc.stdout


def test_an_unknown_cluster_scope_is_refused(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_CLUSTER_SCOPE="most")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "test: RAGSWEEP_CLUSTER_SCOPE must be smoke or all, not 'most'"
    assert calls == []


def test_an_unknown_build_choice_is_refused(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_BUILD="yes")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "test: RAGSWEEP_TEST_BUILD must be 0 or 1, not 'yes'"
    assert calls == []


def test_make_test_and_make_test_all_differ_in_the_cluster_scope_only() -> None:
    text = (ROOT / "stack" / "test.sh").read_text()
    assert 'RAGSWEEP_TEST_STEPS:-tools suite baseline cluster}' in text
    assert 'BUILD=${RAGSWEEP_TEST_BUILD:-1}' in text  # make test builds what is missing
    makefile = (ROOT / "Makefile").read_text()
    assert 'PY=$(PY) MAKE="$(MAKE)" bash stack/test.sh' in makefile
    assert 'PY=$(PY) MAKE="$(MAKE)" RAGSWEEP_CLUSTER_SCOPE=all bash stack/test.sh' in makefile
