"""What tests/test_k8s_cluster.py says when its release cannot be set up, and how it tears one down.

CI's cluster step failed twice showing only a teardown timeout: the install's or the injector's own
failure was lost behind it, and nothing said what the machine looked like. So a failed `helm install`
or injector wait fails with the cluster's health (:func:`cluster_health`: the pods, `cluster.sh
status`, free disk of the cluster's folder, MemAvailable, the last lines of the etcd and API server
logs), and the teardown (:func:`run_teardown`) prints a step's failure instead of raising it over the
original error, and skips the steps after one that got no answer instead of waiting out their timeouts.

Pure where it can be (:func:`health_text`, :func:`mem_available`, :func:`tail`), so tests/test_k8s_health.py
checks it without a cluster.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

# the control plane's logs, as stack/k8s/lib.sh names them: <cluster dir>/logs/<component>.log
HEALTH_LOGS = ("etcd", "kube-apiserver")
TAIL_LINES = 20
_TAIL_BYTES = 64 * 1024  # a log's last lines are in its last bytes: an API server log grows to megabytes
PROBE_TIMEOUT_S = 30.0

Runner = Callable[[Sequence[str], float], str]


def tail(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.splitlines()[-lines:])


def mem_available(meminfo: str) -> str:
    """``MemAvailable`` from /proc/meminfo's text, in MiB (``unknown`` when absent)."""
    for line in meminfo.splitlines():
        name, _, value = line.partition(":")
        fields = value.split()
        if name == "MemAvailable" and fields and fields[0].isdigit():
            return f"{int(fields[0]) // 1024} MiB"
    return "unknown"


def _mib(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB"


def health_text(*, pods: str, status: str, data_dir: Path, disk: tuple[int, int, int] | str, meminfo: str,
                logs: Mapping[str, str]) -> str:
    """The report, from what was read: ``disk`` is shutil.disk_usage's (total, used, free) or why it is not known;
    each log's text is cut to its last TAIL_LINES lines."""
    free = disk if isinstance(disk, str) else f"{_mib(disk[2])} free of {_mib(disk[0])}"
    parts = [
        "--- cluster health ---",
        f"disk at {data_dir}: {free}",
        f"MemAvailable: {mem_available(meminfo)}",
        "pods (kubectl get pods -o wide):",
        pods.rstrip() or "(none)",
        "stack/k8s/cluster.sh status:",
        status.rstrip() or "(nothing)",
    ]
    for name, text in logs.items():
        parts += [f"last {TAIL_LINES} lines of {name}.log:", tail(text).rstrip() or "(empty)"]
    return "\n".join(parts)


def _read_tail(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - _TAIL_BYTES))
            return fh.read().decode("utf-8", "replace")
    except OSError as e:
        return f"(cannot read {path}: {e.strerror or e})"


def _disk(folder: Path) -> tuple[int, int, int] | str:
    where = folder
    while not where.exists() and where != where.parent:  # the cluster's folder may be gone: its file system
        where = where.parent
    try:
        usage = shutil.disk_usage(where)
    except OSError as e:
        return f"unknown ({e.strerror or e})"
    return usage.total, usage.used, usage.free


def _answer(run: Runner, argv: Sequence[str], timeout: float) -> str:
    """What ``argv`` printed, or why nothing: a probe of a sick cluster must not raise or hang the report."""
    try:
        return run(argv, timeout)
    except subprocess.TimeoutExpired:
        return f"(no answer in {timeout:.0f}s: {' '.join(argv[:3])} ...)"
    except (OSError, subprocess.SubprocessError) as e:
        return f"(failed: {e})"


def _run(argv: Sequence[str], timeout: float) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    return done.stdout + (f"(exit {done.returncode}) {done.stderr.strip()}" if done.returncode else "")


def cluster_health(cluster_dir: Path, kubeconfig: Path, namespace: str, cluster_sh: Path, *,
                   run: Runner = _run, meminfo: Path = Path("/proc/meminfo"),
                   timeout: float = PROBE_TIMEOUT_S) -> str:
    """The cluster as it is now, read without raising: each probe that fails or hangs says so in its place."""
    pods = _answer(run, ["kubectl", "--kubeconfig", str(kubeconfig), "--request-timeout", f"{timeout:.0f}s", "-n",
                         namespace, "get", "pods", "-o", "wide"], timeout + 5)
    status = _answer(run, ["bash", str(cluster_sh), "status"], timeout)
    try:
        mem = meminfo.read_text()
    except OSError:
        mem = ""
    logs = {name: _read_tail(cluster_dir / "logs" / f"{name}.log") for name in HEALTH_LOGS}
    return health_text(pods=pods, status=status, data_dir=cluster_dir, disk=_disk(cluster_dir), meminfo=mem,
                       logs=logs)


def run_teardown(steps: Iterable[tuple[str, Callable[[], object]]], say: Callable[[str], None] = print) -> list[str]:
    """Run each (name, step) in order; never raise (a failing step is said, the next runs), except that a step
    that gets no answer (subprocess.TimeoutExpired) skips every later one: on a cluster that stopped answering
    they would each wait out their own timeout. What went wrong, one line each (also said)."""
    problems: list[str] = []
    steps = list(steps)
    for i, (name, step) in enumerate(steps):
        try:
            step()
        except subprocess.TimeoutExpired as e:
            skipped = [n for n, _ in steps[i + 1:]]
            problems.append(f"teardown: {name}: no answer in {e.timeout:.0f}s; skipped "
                            f"{', '.join(skipped) if skipped else 'nothing'}")
            say(problems[-1])
            break
        except Exception as e:  # the original error, if any, is what the run must show
            problems.append(f"teardown: {name}: {type(e).__name__}: {e}")
            say(problems[-1])
    return problems


def checked(argv: Sequence[str], timeout: float) -> Callable[[], object]:
    """A teardown step: run ``argv``; a non-zero exit raises (run_teardown says it) with its stderr's last line."""
    def step() -> None:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            raise RuntimeError(f"{' '.join(argv[:3])} ... exit {done.returncode}: {last}")

    return step
