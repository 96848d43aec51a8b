"""stack/proc.sh's start_detached records the daemon's own pid, job control or not.

s3_start (stack/lib.sh) once wrote ``$!`` of a subshell that ``exec setsid``'d java. When that
subshell leads its own process group (a shell with job control, ``set -m``), setsid forks, ``$!``
names a process that has already exited, and s3_wait read it as "S3Proxy exited during start-up".
These tests run the shell logic in isolation with a dummy long-running process (``sleep``), never
the stack: the old pattern is shown to lose the pid under ``set -m`` (so the scenario really takes
setsid's forking path), and start_detached, called the way s3_start calls it, keeps it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

PROC_SH = Path(__file__).resolve().parents[1] / "stack" / "proc.sh"

pytestmark = pytest.mark.skipif(not (shutil.which("bash") and shutil.which("setsid")),
                                reason="needs bash and setsid (util-linux)")


@pytest.fixture
def dummy(tmp_path: Path) -> Iterator[str]:
    """A command line no other process has (a ``sleep`` of a length unique to this test); any
    process left with it is ended by its pid afterwards."""
    seconds = str(3000 + os.getpid() % 1000 + len(str(tmp_path)) % 97)
    yield seconds
    for pidfile in tmp_path.glob("*.pid"):
        _end(pidfile.read_text().strip(), seconds)
    for pid in _pids_running(f"sleep {seconds}"):
        _end(pid, seconds)


def _pids_running(cmdline: str) -> list[str]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().replace(b"\0", b" ").strip() == cmdline.encode():
                pids.append(proc.name)
        except OSError:
            continue
    return pids


def _end(pid: str, seconds: str) -> None:
    if pid.isdigit() and pid in _pids_running(f"sleep {seconds}"):
        os.kill(int(pid), 15)


def _bash(script: str, tmp_path: Path) -> str:
    done = subprocess.run(["bash", "-c", f"set -m\nstack_log() {{ :; }}\nsource {PROC_SH}\n{script}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_old_pattern_loses_the_pid_under_job_control(tmp_path: Path, dummy: str) -> None:
    out = _bash(f"""
( exec setsid sleep {dummy} >/dev/null 2>&1 </dev/null ) &
echo $! >old.pid
sleep 0.5
pid_running old.pid "sleep {dummy}" && echo running || echo gone
""", tmp_path)
    assert out.split() == ["gone"]
    assert len(_pids_running(f"sleep {dummy}")) == 1  # the daemon runs on, under a pid nobody recorded


def test_start_detached_records_the_daemons_own_pid_under_job_control(tmp_path: Path, dummy: str) -> None:
    # as s3_start calls it: in a subshell (cd into the service's folder), under the caller's set -m
    out = _bash(f"""
(cd "{tmp_path}" && start_detached new.pid new.log sleep {dummy}) || exit 3
sleep 0.5
pid_running new.pid "sleep {dummy}" && echo running || echo gone
""", tmp_path)
    assert out.split() == ["running"]
    assert _pids_running(f"sleep {dummy}") == [(tmp_path / "new.pid").read_text().strip()]
    _bash(f'stop_pid dummy new.pid "sleep {dummy}" 5', tmp_path)
    assert _pids_running(f"sleep {dummy}") == []
    assert not (tmp_path / "new.pid").exists()
