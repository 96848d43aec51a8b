"""A local sweep owns its processes and its paths (issue 34): one sweep at a time per --out, arm
processes that die with the sweep however it dies, relative paths that mean the caller's folder,
and logs that never follow a planted link.

Real `sweep run` processes over a state built from the QMSum-format fixture (tests/fixture_state.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_REFUSED
from tests.fixture_state import qmsum_fixture_state

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.integration


def _manifest(rank_constants: list[int]) -> dict[str, object]:
    """One family: the RRF control and an RRF arm per rank constant, all retrieve arms over the same legs
    (one group: with two workers, one jobs.arm process that forks a second once its legs are fetched)."""
    arms = [{"name": "rrf-30-default", "family": "mini", "axis": "control", "config": {}}]
    arms += [{"name": f"rrf-{k}", "family": "mini", "axis": "rank_constant", "config": {"fusion": "rrf",
                                                                                       "rank_constant": k}}
             for k in rank_constants]
    return {"schema": "ragsweep.catalogue/1", "families": [{"name": "mini", "control": "rrf-30-default",
                                                            "arms": arms}]}


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qmsum_fixture_state(tmp_path_factory, "procs")


@pytest.fixture
def two_arms(tmp_path: Path) -> Path:
    path = tmp_path / "two.json"
    path.write_text(json.dumps(_manifest([60])))
    return path


def _sweep(state: Path, out: Path, manifest: Path, sweep_id: str, workers: int) -> list[str]:
    return [sys.executable, "-m", "harness", "sweep", "run", "--state", str(state), "--arms", "mini",
            "--manifest", str(manifest), "--out", str(out), "--sweep-id", sweep_id, "--workers", str(workers),
            "--no-latency"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's harness, whatever the folder


def _children() -> dict[int, list[int]]:
    """Every live process's children, from /proc (a zombie counts as gone)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def _descendants(pid: int) -> dict[int, int]:
    """The live descendants of ``pid``, each with its generation (1: a child)."""
    tree, found, frontier, generation = _children(), {}, [pid], 0
    while frontier:
        generation += 1
        frontier = [child for parent in frontier for child in tree.get(parent, [])]
        found.update({child: generation for child in frontier})
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait(condition: Callable[[], object], seconds: float, what: str) -> object:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"not within {seconds}s: {what}")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_killing_the_sweep_leaves_no_arm_process(sig: signal.Signals, state: Path, tmp_path: Path) -> None:
    """The sweep is killed while its group process and the worker that process forked both run: within
    seconds no process of the sweep is left, and the arms they were running are never published (on main
    they ran on and published every arm)."""
    manifest = tmp_path / "six.json"
    manifest.write_text(json.dumps(_manifest([10, 20, 40, 60, 80])))
    out = tmp_path / "out"
    with (tmp_path / "sweep.log").open("wb") as log:
        parent = subprocess.Popen(_sweep(state, out, manifest, "kill", workers=2), stdout=log, stderr=log,
                                  cwd=ROOT, env=_env())
        try:
            _wait(lambda: max(_descendants(parent.pid).values(), default=0) >= 2, 240,
                  "the group process forks a worker")
            family = set(_descendants(parent.pid))
            os.kill(parent.pid, sig)
            code = parent.wait(timeout=30)
            killed = time.monotonic()
            _wait(lambda: not any(_alive(p) for p in family), 120, "the arm processes end")
            seconds = time.monotonic() - killed
        finally:
            for pid in [parent.pid, *_descendants(parent.pid)]:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
    assert seconds < 5, f"{len(family)} arm processes lived on {seconds:.1f}s after the sweep died"
    # on main they went on and published every arm; here the arms in flight at the kill never publish
    published = sorted(p.parent.name for p in (out / "sweeps" / "kill" / "mini").glob("*/complete.json"))
    assert len(published) < 6, published
    if sig == signal.SIGTERM:
        assert code == 128 + signal.SIGTERM, (tmp_path / "sweep.log").read_text()[-2000:]
        assert "stopping" in (tmp_path / "sweep.log").read_text()


def _ran(stdout: str) -> tuple[int, int]:
    found = re.search(r"sweep \S+: (\d+) run, (\d+) skipped, 0 failed", stdout)
    assert found, stdout
    return int(found[1]), int(found[2])


def test_two_sweeps_on_one_out_run_each_arm_once(state: Path, two_arms: Path, tmp_path: Path) -> None:
    """The second sweep on the same --out waits for the first, saying who holds the folder, and then
    finds every arm complete."""
    out = tmp_path / "out"
    first = subprocess.Popen(_sweep(state, out, two_arms, "twice", workers=1), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env())
    try:
        _wait(lambda: _descendants(first.pid), 120, "the first sweep starts its arm process")
        second = subprocess.Popen(_sweep(state, out, two_arms, "twice", workers=1), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env())
        out2, err2 = second.communicate(timeout=300)
        out1, err1 = first.communicate(timeout=300)
    finally:
        first.kill()
    assert (first.returncode, second.returncode) == (0, 0), err1 + err2
    assert (_ran(out1), _ran(out2)) == ((2, 0), (0, 2))
    assert f"held by pid {first.pid} on {os.uname().nodename}" in err2
    for arm in ("rrf-30-default", "rrf-60"):
        assert (out / "sweeps" / "twice" / "mini" / arm / "complete.json").is_file()


def test_a_lock_left_by_a_dead_sweep_does_not_block(tmp_path: Path) -> None:
    """The kernel drops the lock with the last process that held it: a holder killed with -9 leaves
    only the file that names it, and the next sweep takes the lock at once."""
    from harness.sweep.procs import lock_out

    code = ("import sys, time\nfrom harness.sweep.procs import lock_out\n"
            "with lock_out(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(120)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env=_env())
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert json.loads((tmp_path / ".sweep.lock").read_text())["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()
    t0 = time.monotonic()
    with lock_out(str(tmp_path)) as lock:
        assert lock is not None and time.monotonic() - t0 < 1
        assert json.loads((tmp_path / ".sweep.lock").read_text())["pid"] == os.getpid()


def test_relative_state_and_out_are_the_callers(state: Path, two_arms: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The arm processes run from the checkout; relative paths are made absolute before any starts."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    relative_state = Path(os.path.relpath(state, work))
    assert main(["sweep", "run", "--state", str(relative_state), "--arms", "mini", "--manifest", "../two.json",
                 "--out", "out", "--sweep-id", "rel", "--workers", "2", "--no-latency"]) == 0
    assert _ran(capsys.readouterr().out) == (2, 0)
    for arm in ("rrf-30-default", "rrf-60"):
        assert (work / "out" / "sweeps" / "rel" / "mini" / arm / "complete.json").is_file()
    assert not (ROOT / "out").exists()
    # the process's log, and its task beside it (the one thing it was handed)
    assert sorted(p.name for p in (work / "out" / "logs" / "rel").iterdir()) == ["rrf-30-default-1.log",
                                                                                 "rrf-30-default-1.task.json"]


def test_a_planted_log_link_is_refused_not_followed(state: Path, two_arms: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A link where an arm log goes (the sweep's own log folder, or the /tmp name main used) is never
    written through: the sweep refuses it in one line, before any arm runs."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out, sweep_id = tmp_path / "out", f"sym-{uuid.uuid4().hex[:8]}"
    planted = out / "logs" / sweep_id / "rrf-30-default-1.log"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)
    old = Path(tempfile.gettempdir()) / f"ragsweep-{sweep_id}-rrf-30-default-1.log"  # main's predictable name
    old.symlink_to(victim)
    try:
        code = main(["sweep", "run", "--state", str(state), "--arms", "mini", "--manifest", str(two_arms),
                     "--out", str(out), "--sweep-id", sweep_id, "--workers", "2", "--no-latency"])
    finally:
        old.unlink()
    assert victim.read_text() == "precious\n"
    assert code == EXIT_REFUSED
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (f"ragsweep: error: {planted}: a symbolic link where the sweep writes its log; refused, "
                       "not followed (remove it and run again)")
    assert not (out / "sweeps").exists()  # nothing written to the store, no arm ran


def test_a_planted_logs_folder_link_is_refused(state: Path, two_arms: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "logs").symlink_to(elsewhere)
    code = main(["sweep", "run", "--state", str(state), "--arms", "mini", "--manifest", str(two_arms),
                 "--out", str(out), "--sweep-id", "dirsym", "--workers", "2", "--no-latency"])
    assert code == EXIT_REFUSED
    assert f"{out / 'logs'}: a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == []


def test_a_planted_arm_folder_link_in_the_store_is_refused_not_followed(state: Path, two_arms: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """An arm's folder in a local --out that is a link (to a folder outside --out) is never written or read
    through: the sweep refuses it in one line (exit 3) before any arm runs, and nothing lands outside --out."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    planted = out / "sweeps" / "armsym" / "mini" / "rrf-60"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(elsewhere)
    code = main(["sweep", "run", "--state", str(state), "--arms", "mini", "--manifest", str(two_arms),
                 "--out", str(out), "--sweep-id", "armsym", "--workers", "2", "--no-latency"])
    err = capsys.readouterr().err.strip().splitlines()
    assert list(elsewhere.iterdir()) == []
    assert code == EXIT_REFUSED, err
    assert err[-1] == (f"ragsweep: error: {planted}: a symbolic link in the artefact store {out}; refused, not "
                       "followed (remove it, or choose another --out)")
