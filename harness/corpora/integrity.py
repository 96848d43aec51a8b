"""Offline integrity checks: hash files in chunks and compare them with a manifest."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.corpora.manifest import Artefact, Manifest
from harness.errors import IntegrityError

CHUNK_BYTES = 1 << 20


def sha256_file(path: Path) -> str:
    """The sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK_BYTES):
            digest.update(block)
    return digest.hexdigest()


def checksum_digest(checksums: Mapping[str, str]) -> str:
    """One sha256 over every artefact's (path, sha256), in path order."""
    material = "".join(f"{path}\t{digest}\n" for path, digest in sorted(checksums.items()))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Problem:
    """One artefact that failed verification, and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def check_artefact(root: Path, artefact: Artefact) -> Problem | None:
    """None when ``root/artefact.path`` exists with the manifest's size and sha256."""
    target = root / artefact.path
    if not target.is_file():
        return Problem(artefact.path, "missing")
    size = target.stat().st_size
    if size != artefact.size:
        return Problem(artefact.path, f"size {size}, expected {artefact.size}")
    got = sha256_file(target)
    if got != artefact.sha256:
        return Problem(artefact.path, f"sha256 {got}, expected {artefact.sha256}")
    return None


def find_problems(manifest: Manifest, root: Path) -> list[Problem]:
    """Every artefact of ``manifest`` that is missing or differs under ``root``, in manifest order."""
    problems = []
    for artefact in manifest.artefacts:
        problem = check_artefact(root, artefact)
        if problem is not None:
            problems.append(problem)
    return problems


def raise_for_problems(problems: list[Problem], manifest: Manifest, root: Path) -> None:
    """One-line IntegrityError naming the first bad path and how many failed."""
    if not problems:
        return
    total = len(manifest.artefacts)
    raise IntegrityError(
        f"{len(problems)} of {total} artefacts of {manifest.label} failed verification under {root}; "
        f"first: {problems[0]}. Re-run 'ragsweep corpus fetch' to repair"
    )
