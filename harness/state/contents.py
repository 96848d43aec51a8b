"""What a state holds, proved: a digest per file, a content address, and vectors fit to measure with.

``state.json``'s ``contents`` block records, at build time, the sha256 and size of every file in the
state but ``state.json`` itself and ``build.json`` (durations and timestamps, which never decide a
number), and the state's **identity**: a sha256 over what decides a number — the claim in
``state.json`` (corpora, chunking, index, backend; not the ``built_with`` version) and every file's
digest. Two builds of the same corpora with the same code give the same identity, whichever machine
or path built them, as long as they hold the same bytes; one changed byte gives another identity or,
when a state is opened, a refusal naming the file.

Two exceptions keep the address a content address. tantivy names its segment files by a random
UUID, so a segment is addressed by its files' contents and its ``meta.json`` with each segment id
replaced by that segment's digest (``.managed.json``, a list of those names, is checked, not
addressed). ``ingest.json`` records how the ingest tasks ran (run id, workers): checked, not
addressed.

The **measurement identity** (``contents.measured``) is the same address over a claim without the
stack's bookkeeping (``backend`` and the ``stack`` block: where else the state was indexed, which an
embedded arm never reads): what decides an embedded arm's numbers is the vectors, documents, index
contents and corpora. A state built with ``--backend stack`` (the cluster's injector) and one built
in-process from the same corpora share it, so their sweeps share a sweep id; for a state without that
bookkeeping it equals the identity. A state built before it was recorded measures under its identity.

Opening a state (:func:`verify`) hashes every file once per process (about 1 GB/s here) and checks
each vector file for its shape, dtype, finiteness and unit norm; ``ragsweep state verify`` runs the
same check and prints each file's verdict. The vectors' bits are what the identity sees: the same
texts encoded on two CPUs whose numerical paths differ (AVX-512 against AVX2) give other last bits,
so another identity — the sweep id follows the vectors, never the name of the corpus
(docs/reproduction.md, "Across machines").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness.corpora.integrity import sha256_file
from harness.errors import IntegrityError

CONTENTS_SCHEMA = "ragsweep.state-contents/1"
IDENTITY_SCHEMA = "ragsweep.state-identity/1"
UNRECORDED = frozenset({"state.json", "build.json"})  # the claim itself; durations and timestamps
NOT_ADDRESSED = frozenset({"ingest.json", "index/tantivy/.managed.json", "index/tantivy/meta.json"})
NORM_TOLERANCE = 1e-3  # |‖v‖ - 1| for a row of an L2-normalised float32 matrix
_LOCK = re.compile(r"^index/tantivy/\.tantivy-[\w-]+\.lock$")  # tantivy's empty lock files, made on open
_SEGMENT = re.compile(r"^index/tantivy/([0-9a-f]{32})\.(\w+)$")
_VERIFIED: dict[tuple[str, tuple[tuple[str, int, int, int], ...]], str] = {}
_CLAIM_ONLY: set[str] = set()
BOOKKEEPING = ("backend", "stack")  # the claim's keys that no embedded arm reads (the stack's, docs/states.md)


def claim_only(folder: Path) -> None:
    """``folder`` holds a state's state.json only, its files being elsewhere (the Kubernetes launcher's
    copy of the cluster's state: every Job verifies the files it opens): its identity is the one it
    records, unverified here."""
    _CLAIM_ONLY.add(str(folder.resolve()))


def state_files(folder: Path) -> list[str]:
    """Every file of the state, relative and sorted, but the unrecorded ones. A link is refused: a
    state's bytes are its own."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
            path = Path(root) / name
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                raise IntegrityError(f"{path}: a link in a state; a state holds its own files")
            if rel not in UNRECORDED and not _LOCK.match(rel):
                found.append(rel)
    return sorted(found)


def record_files(folder: Path) -> dict[str, dict[str, Any]]:
    return {rel: {"sha256": sha256_file(folder / rel), "bytes": (folder / rel).stat().st_size}
            for rel in state_files(folder)}


def _tantivy_address(folder: Path, files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """tantivy's segments by content: each segment's digest over its files' (extension, sha256), and
    the index's meta.json with every segment id replaced by that digest."""
    segments: dict[str, list[tuple[str, str]]] = {}
    for rel, entry in files.items():
        match = _SEGMENT.match(rel)
        if match:
            segments.setdefault(match.group(1), []).append((match.group(2), entry["sha256"]))
    by_id = {sid: hashlib.sha256(json.dumps(sorted(parts)).encode()).hexdigest() for sid, parts in segments.items()}
    meta_path = folder / "index" / "tantivy" / "meta.json"
    meta: Any = None
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        for segment in meta.get("segments", []):
            segment["segment_id"] = by_id.get(str(segment.get("segment_id", "")).replace("-", ""), "unknown")
    return {"segments": sorted(by_id.values()), "meta": meta}


def identity_of(folder: Path, manifest: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> str:
    """The state's content address (see the module docstring)."""
    claim = {k: v for k, v in manifest.items() if k not in ("contents", "built_with")}
    addressed = {rel: e["sha256"] for rel, e in files.items() if rel not in NOT_ADDRESSED and not _SEGMENT.match(rel)}
    payload = {"schema": IDENTITY_SCHEMA, "claim": claim, "files": addressed,
               "tantivy": _tantivy_address(folder, files)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def measurement_identity_of(folder: Path, manifest: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> str:
    """The state's measurement identity: its content address without the stack's bookkeeping (the module
    docstring); the identity itself for a state without it."""
    return identity_of(folder, {k: v for k, v in manifest.items() if k not in BOOKKEEPING}, files)


def contents_block(folder: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The ``contents`` block of a state just built in ``folder`` (vectors checked first)."""
    check_vectors(folder, manifest)
    files = record_files(folder)
    return {"schema": CONTENTS_SCHEMA, "files": files, "identity": identity_of(folder, manifest, files),
            "measured": measurement_identity_of(folder, manifest, files)}


def measured(folder: Path, manifest: Mapping[str, Any]) -> str:
    """The measurement identity of a state :func:`verify` has checked: the one ``contents.measured``
    records, or, for a state built before it was recorded, its identity (the launcher's claim-only copy
    and every Job that opens the state agree either way)."""
    contents = manifest["contents"]
    recorded = contents.get("measured")
    return str(recorded) if isinstance(recorded, str) else str(contents["identity"])


def check_vectors(folder: Path, manifest: Mapping[str, Any]) -> None:
    """Each ``vectors-{mode}.npy``: float32, (documents, dimension), finite, every row of unit norm."""
    index = manifest.get("index") or {}
    rows = index.get("documents")
    for mode, entry in sorted((index.get("embedding") or {}).items()):
        path = folder / "index" / str(entry.get("file", f"vectors-{mode}.npy"))
        try:
            matrix = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise IntegrityError(f"{path}: not a readable .npy matrix ({e}); rebuild the state") from e
        shape = (rows, entry.get("dimension"))
        if matrix.dtype != np.float32 or matrix.ndim != 2 or tuple(matrix.shape) != shape:
            raise IntegrityError(f"{path}: {matrix.dtype} {tuple(matrix.shape)}, the state says float32 {shape}; "
                                 "rebuild the state")
        for lo in range(0, matrix.shape[0], 8_192):  # 8,192 rows at a time: memory stays flat
            block = np.asarray(matrix[lo:lo + 8_192], dtype=np.float64)
            bad = ~np.isfinite(block).all(axis=1)
            norms = np.linalg.norm(np.where(np.isfinite(block), block, 0.0), axis=1)
            bad |= np.abs(norms - 1.0) > NORM_TOLERANCE
            if bad.any():
                first = lo + int(np.flatnonzero(bad)[0])
                raise IntegrityError(f"{path}: row {first} (and {int(bad.sum()) - 1} more in rows {lo}-"
                                     f"{lo + block.shape[0] - 1}) is not a finite unit vector; rebuild the state")


def _signature(folder: Path, rels: list[str]) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for rel in rels:
        st = (folder / rel).stat()
        out.append((rel, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def verify(folder: Path, manifest: Mapping[str, Any], *, report: list[tuple[str, str]] | None = None) -> str:
    """The state's identity, once every file is the one it was built with (IntegrityError, exit 5, naming
    the first that is not). Verified once per process: a second call for the same files (same size,
    mtime and inode) returns at once. ``report`` collects (file, verdict) for every file checked."""
    contents = manifest.get("contents")
    where = folder / "state.json"
    if not isinstance(contents, Mapping) or contents.get("schema") != CONTENTS_SCHEMA:
        raise IntegrityError(f"{where}: no contents block ({CONTENTS_SCHEMA}): the state was built before states "
                             "recorded what they hold; rebuild it with `ragsweep state build --force`")
    if str(folder.resolve()) in _CLAIM_ONLY and isinstance(contents.get("identity"), str):
        return str(contents["identity"])
    recorded = contents.get("files")
    if not isinstance(recorded, Mapping) or not all(isinstance(e, Mapping) and isinstance(e.get("sha256"), str)
                                                    and isinstance(e.get("bytes"), int) for e in recorded.values()):
        raise IntegrityError(f"{where}: contents.files is not a map of file -> {{sha256, bytes}}; rebuild the state")
    present = state_files(folder)
    missing, extra = sorted(set(recorded) - set(present)), sorted(set(present) - set(recorded))
    if missing:
        raise IntegrityError(f"{folder / missing[0]}: missing ({len(missing)} recorded files are); the state was "
                             "built with it. Rebuild the state")
    if extra:
        raise IntegrityError(f"{folder / extra[0]}: not part of the state as built ({len(extra)} such files); "
                             "remove it or rebuild the state")
    key = (str(folder.resolve()), _signature(folder, present))
    if key in _VERIFIED and report is None:
        return _VERIFIED[key]
    for rel in present:
        path, entry = folder / rel, recorded[rel]
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise IntegrityError(f"{path}: {size} bytes, the state was built with {entry['bytes']}; "
                                 "it changed after the build. Rebuild the state")
        digest = sha256_file(path)
        if digest != entry["sha256"]:
            raise IntegrityError(f"{path}: sha256 {digest[:12]}, the state was built with {entry['sha256'][:12]}; "
                                 "it changed after the build. Rebuild the state")
        if report is not None:
            report.append((rel, "ok"))
    identity = identity_of(folder, manifest, recorded)
    if identity != contents.get("identity"):
        raise IntegrityError(f"{where}: its claim was edited after the build (the contents give identity "
                             f"{identity[:12]}, it records {str(contents.get('identity'))[:12]}); rebuild the state")
    if "measured" in contents and contents["measured"] != measurement_identity_of(folder, manifest, recorded):
        raise IntegrityError(f"{where}: contents.measured was edited after the build (the contents give "
                             f"{measurement_identity_of(folder, manifest, recorded)[:12]}, it records "
                             f"{str(contents['measured'])[:12]}); rebuild the state")
    check_vectors(folder, manifest)
    _VERIFIED[key] = identity
    return identity
