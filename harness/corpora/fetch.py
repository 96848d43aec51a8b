"""Fetch a registered corpus's artefacts, and verify them offline.

Every missing artefact is streamed through sha256 into a staging folder beside ``dest``
(a hidden sibling, so on the same file system) and the fetch is committed only when every
one of them matched: then the staging folder becomes ``dest`` (one rename when ``dest`` did
not exist) or its files are moved in. A mismatch anywhere leaves ``dest`` exactly as it was
(absent, or unchanged) and removes the staging folder. Free space, and that the folder can
be written at all, are checked before the first byte is written (harness.outputfiles: exit 9, as
for a disk that fills during the fetch). Network errors that can be transient (timeouts, resets,
5xx, 429) are retried with capped exponential backoff and a total deadline; ``file://`` URLs and
plain local mirror folders are read once.

Licence tiers are enforced here, not by the caller: tier B needs
``accept_noncommercial=True``; tier C is never fetched.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import secrets
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from harness.corpora.integrity import CHUNK_BYTES, Problem, check_artefact, find_problems, raise_for_problems
from harness.corpora.manifest import Artefact, Manifest
from harness.corpora.registry import ManifestArg, Source, get_source, load_source_manifest
from harness.errors import IntegrityError, LicenceError, StorageError, UsageError
from harness.outputfiles import check_writable, is_write_error, writing
from harness.retries import RetryError, call_with_retries

RETRY_ATTEMPTS = 4
RETRY_BASE_SECONDS = 1.0
RETRY_CAP_SECONDS = 8.0
RETRY_DEADLINE_SECONDS = 60.0
REQUEST_TIMEOUT_SECONDS = 30.0
PROBE_TIMEOUT_SECONDS = 5.0
_TRANSIENT_HTTP = frozenset({408, 425, 429, 500, 502, 503, 504})

# Indirections so tests can observe backoff without waiting for it.
_sleep: Callable[[float], None] = time.sleep
_monotonic: Callable[[], float] = time.monotonic

Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class FetchResult:
    """What a fetch did: artefacts downloaded, and artefacts already present and intact."""

    dest: Path
    fetched: tuple[str, ...]
    present: tuple[str, ...]


def check_licence(source: Source, accept_noncommercial: bool) -> None:
    """Refuse tier C always, and tier B unless non-commercial use was acknowledged."""
    if source.tier == "C":
        raise LicenceError(
            f"{source.display_name} is tier C ({source.licence}): it cannot be obtained without a "
            "signed agreement, so it is recorded and skipped"
        )
    if source.tier == "B" and not accept_noncommercial:
        raise LicenceError(
            f"{source.display_name} is tier B ({source.licence}): internal use only, never a published "
            "number; pass --accept-noncommercial to fetch it"
        )


def corpus_folder(dest: Path) -> Path:
    """``dest`` as the corpus folder; an existing file there is refused before anything is written."""
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"--dest {dest}: is a file; expected the corpus folder (a new or existing folder)")
    return dest


def fetch(
    name: str,
    dest: Path,
    mirror: str | None = None,
    accept_noncommercial: bool = False,
    *,
    manifest: ManifestArg = None,
    progress: Progress | None = None,
) -> FetchResult:
    """Download every artefact of corpus ``name`` into ``dest`` under its manifest path.

    ``mirror`` replaces the upstream URL with ``mirror/<path>``: an http(s) or ``file://``
    base URL, or a local folder. Artefacts already present with the right sha256 are kept.
    ``progress(path, "fetched" | "present")`` is called once per artefact.
    """
    source = get_source(name)
    check_licence(source, accept_noncommercial)
    pinned = load_source_manifest(source, manifest)
    dest = corpus_folder(dest)

    present = [a for a in pinned.artefacts if dest.is_dir() and check_artefact(dest, a) is None]
    present_paths = {a.path for a in present}
    missing = [a for a in pinned.artefacts if a.path not in present_paths]
    locations = {a.path: _location(pinned, a, mirror) for a in missing}
    if missing:  # a complete corpus is not written to, so it may be read-only
        check_writable(dest, "--dest", beside=True)  # where staging happens
        if dest.is_dir():
            check_writable(dest, "--dest")  # where the staged files are moved
    anchor = _existing_ancestor(dest)
    _check_free_space(anchor, missing)

    if progress is not None:
        for artefact in present:
            progress(artefact.path, "present")
    if missing:
        with writing(dest, "--dest"), _staging(anchor, dest) as staging:
            for artefact in missing:
                _fetch_one(locations[artefact.path], staging / artefact.path, artefact, dest)
                if progress is not None:
                    progress(artefact.path, "fetched")
            _commit(staging, dest, [a.path for a in missing])
    return FetchResult(dest=dest, fetched=tuple(a.path for a in missing), present=tuple(a.path for a in present))


def probe(
    name: str, mirror: str | None = None, *, manifest: ManifestArg = None, timeout_s: float = PROBE_TIMEOUT_SECONDS
) -> tuple[str, str | None]:
    """Can the corpus be fetched from here? Reads one byte of its first artefact, once, within ``timeout_s``.

    Returns (location, None) when it can, (location, reason) when it cannot. No retries: this
    answers "is upstream (or the mirror) reachable now", e.g. before deciding a sweep is single-corpus.
    """
    source = get_source(name)
    pinned = load_source_manifest(source, manifest)
    location = _location(pinned, pinned.artefacts[0], mirror)
    try:
        with _open(location, timeout_s) as stream:
            stream.read(1)
    except (OSError, http.client.HTTPException) as e:
        local = e.strerror if isinstance(e, OSError) and e.filename else None  # the path is said once, after
        return str(location), str(getattr(e, "reason", None) or local or e)
    return str(location), None


def list_problems(name: str, dest: Path, *, manifest: ManifestArg = None) -> tuple[Manifest, list[Problem]]:
    """Offline: the manifest used and every artefact under ``dest`` that is missing or differs."""
    pinned = load_source_manifest(get_source(name), manifest)
    return pinned, find_problems(pinned, corpus_folder(dest))


def verify(name: str, dest: Path, *, manifest: ManifestArg = None) -> int:
    """Offline: every artefact present with its size and sha256; returns how many were checked.

    Raises IntegrityError naming the first bad path and the number of bad artefacts.
    """
    pinned, problems = list_problems(name, dest, manifest=manifest)
    raise_for_problems(problems, pinned, Path(dest))
    return len(pinned.artefacts)


# --------------------------------------------------------------------------- locations


def _location(manifest: Manifest, artefact: Artefact, mirror: str | None) -> str | Path:
    if mirror is None:
        url = manifest.url_for(artefact.path)
        if url is None:
            raise UsageError(f"{manifest.label} names no upstream URL template; pass --mirror")
        return url
    if "://" in mirror:
        return mirror.rstrip("/") + "/" + urllib.parse.quote(artefact.path)
    return Path(mirror) / artefact.path


def _is_remote(location: str | Path) -> bool:
    return isinstance(location, str) and location.split(":", 1)[0].lower() in ("http", "https")


@contextmanager
def _open(location: str | Path, timeout_s: float = REQUEST_TIMEOUT_SECONDS) -> Iterator[BinaryIO]:
    if isinstance(location, Path):
        with location.open("rb") as handle:
            yield handle
        return
    with urllib.request.urlopen(location, timeout=timeout_s) as response:
        yield response


def _existing_ancestor(dest: Path) -> Path:
    """The nearest folder above ``dest`` that exists: where staging happens, on dest's file system."""
    folder = dest.absolute().parent
    while not folder.is_dir():
        folder = folder.parent
    return folder


def _check_free_space(folder: Path, missing: list[Artefact]) -> None:
    needed = sum(a.size for a in missing)
    if not needed:
        return
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise StorageError(
            f"not enough free space under {folder}: {len(missing)} artefacts need {needed} bytes and "
            f"{free} are free; free some space or choose another --dest"
        )


# --------------------------------------------------------------------------- staging


@contextmanager
def _staging(anchor: Path, dest: Path) -> Iterator[Path]:
    """A fresh hidden folder in ``anchor``, removed on the way out (if it was not renamed to dest)."""
    staging = anchor / f".{dest.name}.fetch-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _commit(staging: Path, dest: Path, paths: list[str]) -> None:
    """Every staged artefact verified: make ``staging`` the corpus folder, or move its files into it."""
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, dest)
        return
    for path in paths:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        _move_into(staging / path, target)


def _move_into(source: Path, target: Path) -> None:
    """Rename; across file systems (``dest`` a mount point or a link elsewhere), copy beside then rename."""
    try:
        os.replace(source, target)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, tmp_name)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- download


def _is_transient(error: BaseException) -> bool:
    if isinstance(error, urllib.error.HTTPError):
        return error.code in _TRANSIENT_HTTP
    return isinstance(
        error, urllib.error.URLError | TimeoutError | ConnectionError | http.client.HTTPException
    )


def _fetch_one(location: str | Path, target: Path, artefact: Artefact, dest: Path) -> None:
    """Download one artefact to ``target`` (in the staging folder); errors say ``dest`` was left alone."""
    untouched = f"nothing was written to {dest}"
    retry = _is_remote(location)
    try:
        call_with_retries(
            lambda: _download(location, target, artefact),
            is_transient=lambda e: retry and isinstance(e, OSError | http.client.HTTPException) and _is_transient(e),
            what=f"{artefact.path}: download from {location}",
            deadline_s=RETRY_DEADLINE_SECONDS,
            base_s=RETRY_BASE_SECONDS,
            cap_s=RETRY_CAP_SECONDS,
            max_attempts=RETRY_ATTEMPTS,
            sleep=_sleep,
            clock=_monotonic,
            jitter=None,
        )
    except RetryError as gave_up:
        e = gave_up.last_attempt.exception()
        reason = getattr(e, "reason", None) or e
        raise IntegrityError(
            f"{artefact.path}: download from {location} failed after {gave_up.last_attempt.attempt_number} "
            f"attempts: {reason}; {untouched}"
        ) from e
    except IntegrityError as e:
        raise IntegrityError(f"{e}; {untouched}") from e
    except (OSError, http.client.HTTPException) as e:
        if isinstance(e, OSError) and is_write_error(e, target.parent):
            raise  # the disk, not the source: fetch's writing(dest) says so, naming --dest
        reason = getattr(e, "reason", None) or e
        raise IntegrityError(f"{artefact.path}: cannot read {location}: {reason}; {untouched}") from e


def _download(location: str | Path, target: Path, artefact: Artefact) -> None:
    """Stream into a temporary file beside ``target``; rename only on a matching sha256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as out, _open(location) as stream:
            while block := stream.read(CHUNK_BYTES):
                size += len(block)
                if size > artefact.size:
                    raise IntegrityError(
                        f"{artefact.path}: {location} is larger than the manifest's {artefact.size} bytes"
                    )
                digest.update(block)
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != artefact.sha256:
            raise IntegrityError(
                f"{artefact.path}: sha256 mismatch for {location}: expected {artefact.sha256}, got {got}"
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
