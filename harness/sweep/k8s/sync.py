"""Folders in and out of the object store as one archive: how a state reaches the arm pods.

A corpus state (and a reranker) is a folder whose file names a storage key cannot always
carry (tantivy writes dot-files), so it travels as one ``.tar.gz`` object. ``push`` packs a
folder deterministically (sorted names, zeroed owners and times) and writes the archive,
then ``<key>.sha256``; ``pull`` waits (optionally) for the archive, checks the sha256 and
unpacks it with the tarfile ``data`` filter, which refuses absolute paths, ``..`` and links
leaving the folder. The chart's injector pushes ``state/state.tar.gz`` (and ``state/state.json``
beside it, for the launcher's identity); every arm pod pulls it in an init container. The
entrypoint those containers run is ``python -m jobs.sync`` (jobs/sync.py).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.errors import IntegrityError, UsageError
from harness.sweep.storage import ArtefactStore, MissingArtefactError


def pack(folder: Path) -> bytes:
    """A reproducible gzip'd tar of ``folder``'s contents (paths relative to it)."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT, compresslevel=6) as tar:
        for path in sorted(folder.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isfile():
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
            elif info.isdir():
                tar.addfile(info)
    return buffer.getvalue()


def push(store: ArtefactStore, folder: Path, key: str, beside: Sequence[str] = ()) -> str:
    """Write the archive, then each ``beside`` file of the folder next to it, then the sha256
    marker last: a puller that sees the marker sees everything."""
    data = pack(folder)
    digest = hashlib.sha256(data).hexdigest()
    store.put_bytes(key, data)
    parent = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
    for name in beside:
        path = folder / name
        if not path.is_file():
            raise UsageError(f"--beside {name}: {path} is not a file")
        store.put_bytes(f"{parent}{name}", path.read_bytes())
    store.put_text(f"{key}.sha256", digest + "\n")
    return digest


def pull(store: ArtefactStore, key: str, out: Path, *, wait_s: float = 0.0, poll_s: float = 5.0,
         sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> str:
    """Unpack the archive at ``key`` into ``out``; wait up to ``wait_s`` for it to appear."""
    started = clock()
    while not store.exists(f"{key}.sha256"):
        if clock() - started >= wait_s:
            hint = ("the launcher pushes a reranker before it submits the rerank arms' Jobs; was it run with "
                    "--reranker?" if key.startswith("rerankers/") else
                    "has the injector finished? `kubectl -n NAMESPACE logs job/RELEASE-injector`")
            raise MissingArtefactError(f"{store.describe()}: no {key} (waited {wait_s:g}s); {hint}")
        sleep(poll_s)
    expected = store.get_text(f"{key}.sha256").strip()
    data = store.get_bytes(key)
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise IntegrityError(f"{store.describe()}: {key} has sha256 {digest[:12]}, its .sha256 says "
                             f"{expected[:12]}; push it again")
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        _extract(tar, out, f"{store.describe()}/{key}")
    return digest


def _extract(tar: tarfile.TarFile, out: Path, name: str) -> None:
    """Unpack with the "data" filter's rules: regular files and folders only, inside ``out``.
    Python 3.11.2 (Debian 12's, the images') predates ``extractall(filter=...)`` (3.11.4), so the
    rules are applied here on every Python, the same way."""
    root = out.resolve()
    for member in tar.getmembers():
        target = (root / member.name).resolve()
        if not (member.isfile() or member.isdir()) or not target.is_relative_to(root):
            raise IntegrityError(f"{name}: member {member.name!r} is not a plain file or folder inside the "
                                 "archive's root; refusing to unpack it")
        member.mode = (member.mode | 0o600) & 0o755 if member.isfile() else 0o755
        member.uid = member.gid = 0
        member.uname = member.gname = ""
    tar.extractall(root)

