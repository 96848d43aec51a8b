"""Writing where the user said: every way an output can be unwritable is one line naming it.

The counterpart of :mod:`harness.inputfiles`. A command checks its output with
:func:`check_writable` before any work, so a read-only, unwritable or full file system is
refused at once (exit 9), not after the work it would throw away; writes that fail midway (a
disk that fills) run inside :func:`writing`, which says the same in one line instead of an
internal error; :func:`write_atomic` writes one file all or nothing. Shared by every stage,
like :mod:`harness.errors`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from harness.errors import StorageError, UsageError

# what a temporary file beside its target is called (a folder store's listing skips them)
TEMP_PREFIX = ".ragsweep-tmp."

# errnos only a write raises (a full disk, a read-only file system, a file over its size limit)
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
_PROBE_BYTES = 4096  # what check_writable writes: a full file system refuses it


def _cannot_write(where: Path, flag: str, error: OSError, culprit: Path | None = None) -> StorageError:
    """The one line: ``where`` (and the path the error names, ``culprit`` if given, when it is another)."""
    reason = error.strerror or str(error)
    if culprit is None and error.filename is not None:
        culprit = Path(os.fsdecode(error.filename))
    if culprit is not None and culprit.absolute() != where.absolute():
        reason += f": {culprit}"
    named = f"{flag} {where}" if flag else str(where)
    if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        advice = f"free some space, or choose another {flag or 'folder'}"
    else:
        advice = f"choose {'another ' + flag if flag else 'a folder'} you can write to"
    return StorageError(f"{named}: cannot write ({reason}); {advice}")


def is_write_error(error: OSError, where: Path) -> bool:
    """Did ``error`` come from writing ``where``? When it names a path: one inside ``where``, ``where``
    itself, a folder above it (``mkdir(parents=True)`` meeting a file), or, for an errno only writes
    raise, a temporary sibling (``NAME.partial``, ``.NAME.tmp-...``). When it names none (a write that
    found the disk full): an errno only writes raise."""
    names = [Path(os.fsdecode(n)).absolute() for n in (error.filename, error.filename2) if n is not None]
    writes = error.errno in _WRITE_ERRNOS
    if not names:
        return writes
    target = where.absolute()

    def sibling(path: Path) -> bool:
        return (path.is_relative_to(target.parent) and path != target.parent
                and path.relative_to(target.parent).parts[0].startswith((f"{target.name}.", f".{target.name}.")))

    return any(path.is_relative_to(target) or target.is_relative_to(path) or (writes and sibling(path))
               for path in names)


@contextlib.contextmanager
def writing(where: Path | str, flag: str = "") -> Iterator[None]:
    """Around writes into ``where`` (named by the option ``flag``, if any): an OSError they raise (a
    full disk, a read-only or unwritable folder, a file where a folder must be) becomes one
    StorageError line naming ``where`` (exit 9); an OSError about another path passes unchanged."""
    where = Path(where)
    try:
        yield
    except OSError as e:
        if not is_write_error(e, where):
            raise
        raise _cannot_write(where, flag, e) from e


def check_writable(target: Path | str, flag: str = "--out", *, beside: bool = False) -> None:
    """Before any work: can ``target`` (a folder to create or write into, or a file to write) be written?

    The nearest folder that exists (``target`` itself when it is one; the folder above it with
    ``beside``, for an output built beside ``target`` and renamed into place) takes a probe file of a
    few KiB, removed at once, so a read-only, unwritable or full file system is refused now
    (StorageError, exit 9), not after the work it would throw away; a file where a folder must be,
    above ``target``, is a UsageError (exit 2). Nothing is created. Whether ``target`` is the kind of
    thing the command may replace is the command's own check.
    """
    target = Path(target)
    folder = target if target.is_dir() and not beside else target.parent
    while not folder.is_dir():
        if folder.exists():
            raise UsageError(f"{flag} {target}: {folder} is a file, not a folder; choose another {flag}")
        folder = folder.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".probe", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(bytes(_PROBE_BYTES))
        finally:
            with contextlib.suppress(OSError):
                os.unlink(probe)
    except OSError as e:
        raise _cannot_write(target, flag, e, culprit=folder) from e


def write_atomic(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` all or nothing: a temporary file beside it (``TEMP_PREFIX``),
    fsynced, renamed into place, and the rename itself persisted."""
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # Persist the rename itself; some filesystems cannot open a folder, which is harmless.
    with contextlib.suppress(OSError):
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
