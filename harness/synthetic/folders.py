"""Writing a corpus folder atomically: a temporary sibling folder, then one rename.

Nothing half-written is ever left at the destination: on any failure the temporary folder
is removed and the destination is untouched. A non-empty destination is replaced only
with ``force``, and only when it is a corpus (it has corpus.json): never an unrelated folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.errors import UsageError


def check_destination(out: Path, *, force: bool) -> None:
    """Refuse a destination that is a file, or a non-empty folder without ``force``."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; pass a folder path")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise UsageError(f"--out {out} is not empty; pass --force to replace it, or choose another folder")
        if not (out / "corpus.json").is_file():
            raise UsageError(f"--out {out} is not a synthetic corpus (no corpus.json): --force replaces a corpus "
                             "only; choose another folder, or empty this one yourself")


@contextmanager
def atomic_directory(out: Path, *, force: bool) -> Iterator[Path]:
    """Yield a temporary folder; on normal exit it becomes ``out``, on error it is removed."""
    out = Path(out)
    check_destination(out, force=force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        check_destination(out, force=force)
        if out.is_dir() and any(out.iterdir()):
            old = out.parent / f".{out.name}.old-{tmp.name}"
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            if out.is_dir():
                out.rmdir()
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_files(root: Path, files: dict[str, bytes]) -> None:
    """Write ``{relative path: bytes}`` under ``root`` (folders created as needed)."""
    for rel in sorted(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
