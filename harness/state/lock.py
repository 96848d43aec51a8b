"""One build per ``--out`` at a time, and a temporary folder of its own.

A state is built in a temporary folder beside ``--out`` and renamed into place. With one fixed temporary
name, a second build to the same ``--out`` deleted the first's work in progress, and the first died with an
internal error after its whole encode. Now a build holds ``.OUT.lock`` beside ``--out`` (``fcntl.flock``,
released by the kernel when the process dies, however it dies) and builds in ``OUT.partial-<pid>-<random>``.
A second build refuses at once (exit 2), naming the holder; the holder's pid, host and start time are in
the lock file. Under the lock, the temporary folders of builds that died (a ``kill -9``, a power cut) are
removed: no live build can own one, since a live build holds the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from harness.errors import UsageError

_HELD = threading.local()  # the lock files this thread holds -> depth: the command and build_state nest


def lock_path(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


def partial_folder(out: Path) -> Path:
    """A temporary folder name no other build uses: ``OUT.partial-<pid>-<random>``."""
    return out.with_name(f"{out.name}.partial-{os.getpid()}-{secrets.token_hex(4)}")


def _holder(fd: int) -> str:
    try:
        said = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {int(said['pid'])} on {said['host']} since {said['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another build (it has not said which yet)"


def _acquire(path: Path, out: Path) -> int:
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise UsageError(f"--out {out} is being built by {holder} (lock {path.name}); wait for that build or "
                             "choose another --out") from None
        try:  # a build that finished removed the file it locked: lock the one at the path now
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


@contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """Hold ``--out``'s build lock (re-entrant within a thread), removing dead builds' temporary folders."""
    given, out = out, Path(os.path.abspath(out))  # the refusal names --out as the user gave it
    path = lock_path(out)
    held: dict[str, int] = getattr(_HELD, "locks", None) or {}
    _HELD.locks = held
    if str(path) in held:
        held[str(path)] += 1
        try:
            yield
        finally:
            held[str(path)] -= 1
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = _acquire(path, given)
    held[str(path)] = 1
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                  "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode(), 0)
        ours = re.compile(rf"{re.escape(out.name)}\.partial(-[0-9]+-[0-9a-f]{{8}})?")  # and e2cb9a0's fixed name
        for dead in out.parent.iterdir():
            if ours.fullmatch(dead.name) and dead.is_dir():
                shutil.rmtree(dead, ignore_errors=True)
        yield
    finally:
        del held[str(path)]
        with suppress(FileNotFoundError):
            path.unlink()  # before the lock is let go: a waiting opener then sees another file and retries
        os.close(fd)
