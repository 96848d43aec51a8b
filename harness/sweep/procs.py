"""What a local sweep holds to about its processes and paths (issue 34).

- One sweep at a time per local ``--out``: :func:`lock_out` takes an exclusive ``flock`` on
  ``OUT/.sweep.lock`` and writes who holds it (pid, host, start time, command). A second sweep on the
  same folder says who holds it and waits. The sweep's arm processes inherit the lock (``lock.fd``,
  passed to each), so a sweep killed with -9 holds its folder until its last arm process has ended too;
  the kernel drops a flock with the last process that holds it, so a dead sweep never leaves a lock
  behind, only the file that names who held it last. An ``s3://`` store is not locked.
- Arm processes die with the sweep: each is started with ``PR_SET_PDEATHSIG`` (Linux), so it is sent
  SIGTERM when the sweep dies, however it dies, and ignores SIGINT, which Ctrl-C sends to the whole
  process group (the sweep stops them itself); a process ``jobs.arm`` forks sets the same
  (:func:`die_with_parent`). On SIGTERM or Ctrl-C the sweep stops its arm processes (:func:`stop`) and exits.
- Logs go under the sweep's own folder, ``OUT/logs/<sweep id>/<process>.log`` (a fresh private temporary
  folder for an ``s3://`` store), each process's task beside its log (``<process>.task.json``,
  harness.sweep.task: the one thing the process is handed), every folder and file opened without
  following a link: a planted symbolic link is refused in one line, never written through.
"""

from __future__ import annotations

import ctypes
import errno
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from harness.errors import RefusedError

log = logging.getLogger(__name__)

LOCK_NAME = ".sweep.lock"
LOGS = "logs"
STOP_GRACE_S = 5.0  # SIGTERM, then SIGKILL for an arm process still there after this
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# resolved here, not in a child between fork and exec, where loading a library is not safe
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def absolute_store(spec: str) -> str:
    """A local store's folder made absolute (the arm processes run from the checkout); an s3:// one as is."""
    return spec if spec.startswith("s3://") else str(Path(spec).resolve())


# --- one sweep per --out -----------------------------------------------------------------------------

@dataclass
class OutLock:
    path: Path
    fd: int  # the open lock file: inherited by the arm processes, which hold the lock with it
    depth: int = 1


_HELD: dict[str, OutLock] = {}  # this process's locks, by folder: taking one again is a no-op


def _holder(fd: int) -> str:
    """Who holds the lock, from what it wrote into the file."""
    try:
        doc = json.loads(os.pread(fd, 65536, 0) or b"null")
        pid, host, started = int(doc["pid"]), str(doc["host"]), str(doc["started"])
    except (ValueError, TypeError, KeyError, OSError):
        return "its holder has not written its name yet"
    gone = ""
    if host == socket.gethostname() and not _pid_alive(pid):
        gone = " (gone: its arm processes, which hold the lock with it, are still ending)"
    return f"held by pid {pid} on {host} since {started}{gone}: {' '.join(doc.get('argv', []))}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def lock_out(store_spec: str, say: Callable[[str], None] = log.info) -> Iterator[OutLock | None]:
    """Hold ``store_spec``'s sweep lock (None for an s3:// store), waiting for the sweep that holds it."""
    if store_spec.startswith("s3://"):
        yield None
        return
    root = Path(store_spec).resolve()
    held = _HELD.get(str(root))
    if held is not None:
        held.depth += 1
        try:
            yield held
        finally:
            held.depth -= 1
        return
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_NAME
    fd = open_nofollow(path, os.O_RDWR | os.O_CREAT, "its lock")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"{root}: another sweep is running on this --out ({_holder(fd)}); waiting for it to end")
            t0 = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)
            say(f"{root}: the other sweep ended; went on after {time.monotonic() - t0:.1f}s")
        doc = {"pid": os.getpid(), "host": socket.gethostname(),
               "started": datetime.now(UTC).isoformat(timespec="seconds"), "argv": sys.argv}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(doc) + "\n").encode(), 0)
        lock = _HELD[str(root)] = OutLock(path, fd)
        try:
            yield lock
        finally:
            del _HELD[str(root)]
    finally:
        os.close(fd)


# --- paths that never follow a link ------------------------------------------------------------------

def _refuse_link(path: Path, what: str, e: OSError) -> RefusedError:
    # ELOOP: Linux's for O_NOFOLLOW on a link (EMLINK: the BSDs'); ENOTDIR: Linux's for a link with O_DIRECTORY
    if e.errno in (errno.ELOOP, errno.EMLINK) or (e.errno == errno.ENOTDIR and path.is_symlink()):
        return RefusedError(f"{path}: a symbolic link where the sweep writes {what}; refused, not followed "
                            "(remove it and run again)")
    return RefusedError(f"{path}: cannot open {what}: {e.strerror}")


def open_nofollow(path: Path, flags: int, what: str, dir_fd: int | None = None) -> int:
    """os.open with O_NOFOLLOW (mode 0644 when created): a link at ``path`` is a one-line refusal."""
    try:
        return os.open(path.name if dir_fd is not None else path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                       dir_fd=dir_fd)
    except OSError as e:
        raise _refuse_link(path, what, e) from e


def _folder_fd(root: Path, parts: Sequence[str]) -> int:
    """An open descriptor of root/parts[0]/parts[1]/..., each made (0755) when missing and opened without
    following a link, so that nothing below ``root`` can send a write elsewhere."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root
    try:
        for part in parts:
            where = where / part
            with suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            inner = open_nofollow(where, os.O_RDONLY | os.O_DIRECTORY, "its logs", dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


class LogFolder:
    """Where a sweep's processes write their output: ``folder/<process>.log``, one file a process."""

    def __init__(self, folder: Path, fd: int) -> None:
        self.folder, self._fd = folder, fd

    @classmethod
    @contextmanager
    def for_sweep(cls, store_spec: str, sweep_id: str, names: Iterable[str] = ()) -> Iterator[LogFolder]:
        """``OUT/logs/<sweep_id>/`` (a fresh private folder for an s3:// store), every one of ``names``'s log
        checked first: a link where one goes refuses the sweep before any process starts."""
        parts: tuple[str, ...] = ()
        if store_spec.startswith("s3://"):
            root = Path(tempfile.mkdtemp(prefix=f"ragsweep-{sweep_id}-logs-"))
        else:
            root, parts = Path(store_spec), (LOGS, sweep_id)
            root.mkdir(parents=True, exist_ok=True)
        fd = _folder_fd(root, parts)
        try:
            folder = cls(root.joinpath(*parts), fd)
            for name in names:
                for target, what in ((folder.path(name), "its log"), (folder.task_path(name), "its task")):
                    if target.is_symlink():
                        raise _refuse_link(target, what, OSError(errno.ELOOP, "a link"))
            yield folder
        finally:
            os.close(fd)

    def path(self, name: str) -> Path:
        return self.folder / (("".join(c if c.isalnum() or c in "-_" else "-" for c in name)) + ".log")

    def task_path(self, name: str) -> Path:
        return self.path(name).with_suffix(".task.json")

    def write_task(self, name: str, text: str) -> Path:
        """The process's task beside its log, made or emptied, never through a link: its one input."""
        target = self.task_path(name)
        fd = open_nofollow(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "its task", dir_fd=self._fd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        return target

    def open(self, name: str) -> BinaryIO:
        """The process's log, made or emptied, never through a link."""
        target = self.path(name)
        fd = open_nofollow(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "its log", dir_fd=self._fd)
        return os.fdopen(fd, "wb")


# --- processes that die with the sweep ---------------------------------------------------------------

def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """Have this process sent ``sig`` when its parent (pid ``parent``, which started it) dies; when it is
    already dead, now. Linux only (PR_SET_PDEATHSIG); elsewhere nothing."""
    if _LIBC is None:
        return
    if _LIBC.prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(sig), ctypes.c_ulong(0), ctypes.c_ulong(0),
                   ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # it died before the line above: no signal will come
        os.kill(os.getpid(), sig)


def child_setup(parent: int) -> Callable[[], None]:
    """Popen's preexec_fn for an arm process of sweep ``parent``: it dies with the sweep and leaves Ctrl-C
    to it (SIGINT reaches the whole process group; the sweep then stops its processes itself)."""

    def setup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        die_with_parent(parent)

    return setup


def start(command: list[str], log: BinaryIO, cwd: Path, lock: OutLock | None) -> subprocess.Popen[bytes]:
    """An arm process of this sweep: output to ``log``, holding the sweep's lock with it, dying with it.

    Call it from a thread that lives as long as the sweep (the executor starts every process from its main
    thread): Linux sends PR_SET_PDEATHSIG when the *thread* that forked the child ends, not its process."""
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                            preexec_fn=child_setup(os.getpid()), pass_fds=(lock.fd,) if lock else ())


def stop(processes: Sequence[subprocess.Popen[bytes]], grace_s: float = STOP_GRACE_S) -> int:
    """SIGTERM to each process still running, SIGKILL to any left after ``grace_s``; how many were running."""
    running = [p for p in processes if p.poll() is None]
    for p in running:
        p.terminate()
    deadline = time.monotonic() + grace_s
    for p in running:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return len(running)


@contextmanager
def exit_on_sigterm() -> Iterator[None]:
    """While the sweep runs its processes, SIGTERM raises SystemExit(143) in it (SIGINT raises
    KeyboardInterrupt already), so that its ``finally`` stops them before it exits."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        log.warning("%s: stopping the sweep's arm processes", signal.Signals(signum).name)
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
