"""Writing a folder atomically: a temporary sibling folder, then one rename (a corpus here; a state too).

Nothing half-written is ever left at the destination: on any failure the temporary folder
is removed and the destination is untouched. A non-empty destination is replaced only
with ``force``, and only when it is a corpus (it has corpus.json): never an unrelated folder.
A destination whose file system cannot take it (read-only, full) is refused before any work,
and a write that fails midway is one line naming it (harness.outputfiles, exit 9).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import UsageError
from harness.outputfiles import check_writable, writing


def check_destination(out: Path, *, force: bool, marker: str = "corpus.json", kind: str = "synthetic corpus") -> None:
    """``out`` may be absent, an empty folder, or (with ``force``) a ``kind`` folder, one holding ``marker``:
    never a file, and never a non-empty folder of anything else; and the folder it is built in can be written."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a {kind} folder; choose a folder path")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise UsageError(f"--out {out} is not empty; pass --force to replace it, or choose another folder")
        if not (out / marker).is_file():
            raise UsageError(f"--out {out} is not a {kind} (no {marker}): --force replaces a {kind} "
                             "only; choose another folder, or empty this one yourself")
    check_writable(out, "--out", beside=True)  # where the new folder is built, beside out


def swap_in(tmp: Path, out: Path) -> None:
    """The finished ``tmp`` becomes ``out``; what was at ``out`` is removed only after the swap."""
    if out.is_dir() and any(out.iterdir()):
        old = out.parent / f".{out.name}.old-{tmp.name}"
        os.rename(out, old)
        os.rename(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        if out.is_dir():
            out.rmdir()
        os.rename(tmp, out)


@contextmanager
def atomic_directory(out: Path, *, force: bool, marker: str = "corpus.json",
                     kind: str = "synthetic corpus") -> Iterator[Path]:
    """Yield a temporary folder; on normal exit it becomes ``out``, on error it is removed. ``out`` is
    held to :func:`check_destination` (``marker``, ``kind``) before and again just before the swap."""
    out = Path(out)
    check_destination(out, force=force, marker=marker, kind=kind)
    with writing(out, "--out"):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            yield tmp
            os.chmod(tmp, 0o755)
            check_destination(out, force=force, marker=marker, kind=kind)
            swap_in(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``{relative path: bytes}`` under ``root`` (folders created as needed)."""
    for rel in sorted(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
