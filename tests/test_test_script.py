"""stack/test.sh, the steps of `make test` and `make test-all`, run with a stand-in for make.

`make test` must stay within CI's time: it builds helm (about 4 minutes cold) but no other Kubernetes
binary (about 35 minutes on 2 cores).
When the machine's tools cache lacks them, the tools step says so and the run goes on (the Kubernetes
tests then skip, saying why); `make test-all` (RAGSWEEP_TEST_BUILD=1) builds them, and a failed build
stops the run with its exit code.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAKE_MAKE = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$MAKE_LOG"
case " $* " in
  *" k8s-tools-cached "*) exit "${CACHED_RC:-0}" ;;
  *" k8s-apiserver-tools "*) exit "${BUILD_RC:-0}" ;;
  *" k8s-tools "*) exit "${HELM_RC:-0}" ;;
esac
exit 0
"""


def _run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    make = tmp_path / "make"
    make.write_text(FAKE_MAKE)
    make.chmod(0o755)
    log = tmp_path / "make.log"
    log.write_text("")
    full = {**os.environ, "MAKE": str(make), "MAKE_LOG": str(log), "PY": "/bin/false", **env}
    proc = subprocess.run(
        ["bash", str(ROOT / "stack" / "test.sh")], env=full, capture_output=True, text=True, timeout=60
    )
    return proc, log.read_text().splitlines()


def test_make_test_builds_no_tool_and_goes_on_without_them(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools", CACHED_RC="1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools", "--no-print-directory k8s-tools-cached"]  # helm only
    assert "not in this machine's cache, and not built by make test" in proc.stdout
    assert "tools: ok" in proc.stdout


def test_make_test_uses_the_cached_tools(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools", CACHED_RC="0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools", "--no-print-directory k8s-tools-cached"]
    assert "not in this machine's cache" not in proc.stdout


def test_a_failed_helm_build_stops_make_test(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools", HELM_RC="2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools"]
    assert "tools: FAILED (exit 2)" in proc.stdout


def test_make_test_all_builds_and_stops_at_a_failed_build(tmp_path: Path) -> None:
    proc, calls = _run(tmp_path, RAGSWEEP_TEST_STEPS="tools baseline", RAGSWEEP_TEST_BUILD="1", BUILD_RC="3")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert calls == ["--no-print-directory k8s-tools k8s-apiserver-tools"]
    assert "tools: FAILED (exit 3)" in proc.stdout
    assert "baseline:" not in proc.stdout  # stopped before the next step


def test_the_default_steps_leave_the_cluster_to_make_test_all() -> None:
    text = (ROOT / "stack" / "test.sh").read_text()
    assert 'RAGSWEEP_TEST_STEPS:-tools suite baseline}' in text
    makefile = (ROOT / "Makefile").read_text()
    assert 'RAGSWEEP_TEST_STEPS="tools suite baseline cluster"' in makefile
