"""Artefact manifests: one TSV per corpus naming every file, its size and its sha256.

Format (UTF-8, tab-separated)::

    # free-text comment lines start with '#'
    # ... pinned commit <40 hex digits>          (optional: recorded as Manifest.commit)
    # raw URL of a path: <template>              (optional: recorded as Manifest.url_template)
    path    size    sha256    [domain]
    data/ALL/test/Bed003.json    153132    959b...    Academic

The commit and the URL template live in the manifest's own comments rather than in the
registry, so the file that pins the hashes also pins where they came from; there is one
place to edit when a corpus is re-pinned. The template may use ``<commit>`` and
``<path>``. A domain of ``-`` (or an empty cell) means "no domain".

Any malformed line raises :class:`~harness.errors.InputDataError` naming ``file:line``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from harness.errors import InputDataError
from harness.inputfiles import read_input_text

_HEADERS = (("path", "size", "sha256"), ("path", "size", "sha256", "domain"))
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_SIZE = re.compile(r"^[0-9]+$")
_COMMIT = re.compile(r"\bpinned commit ([0-9a-fA-F]{40})\b")
_TEMPLATE = re.compile(r"\braw URL of a path:\s*(\S+)")
NO_DOMAIN = "-"


@dataclass(frozen=True)
class Artefact:
    """One file of a corpus: its path relative to the corpus root, size and sha256."""

    path: str
    size: int
    sha256: str
    domain: str | None = None


@dataclass(frozen=True)
class Manifest:
    """A parsed manifest. ``label`` is how messages name the file it came from."""

    label: str
    artefacts: tuple[Artefact, ...]
    commit: str | None = None
    url_template: str | None = None

    def url_for(self, path: str) -> str | None:
        """The upstream URL of ``path`` from the template, or None when there is none."""
        if self.url_template is None:
            return None
        url = self.url_template.replace("<path>", path)
        if self.commit is not None:
            url = url.replace("<commit>", self.commit)
        return url

    def get(self, path: str) -> Artefact | None:
        for artefact in self.artefacts:
            if artefact.path == path:
                return artefact
        return None

    @property
    def total_size(self) -> int:
        return sum(a.size for a in self.artefacts)


def read_manifest(path: Path, *, label: str | None = None) -> Manifest:
    """Read and parse a manifest file; ``label`` (default: the path) names it in errors."""
    name = label if label is not None else str(path)
    return parse_manifest(read_input_text(path, name), name)


def parse_manifest(text: str, label: str) -> Manifest:
    """Parse manifest text; every error names ``label:line``."""
    commit: str | None = None
    template: str | None = None
    header: tuple[str, ...] | None = None
    artefacts: list[Artefact] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        where = f"{label}:{lineno}"
        if line.startswith("#"):
            if (m := _COMMIT.search(line)) is not None:
                commit = m.group(1).lower()
            if (m := _TEMPLATE.search(line)) is not None:
                template = m.group(1)
            continue
        if not line.strip():
            continue
        cells = tuple(line.split("\t"))
        if header is None:
            if cells not in _HEADERS:
                raise InputDataError(
                    f"{where}: header is {'|'.join(cells)!r}; expected tab-separated "
                    "'path size sha256' with an optional 'domain' column"
                )
            header = cells
            continue
        artefact = _parse_row(cells, len(header), where)
        if artefact.path in seen:
            raise InputDataError(f"{where}: path {artefact.path} repeats line {seen[artefact.path]}")
        seen[artefact.path] = lineno
        artefacts.append(artefact)
    if header is None or not artefacts:
        raise InputDataError(f"{label}: no artefacts (expected a header line and at least one row)")
    if template is not None and "<commit>" in template and commit is None:
        raise InputDataError(
            f"{label}: the URL template uses <commit> but no 'pinned commit' comment names one"
        )
    return Manifest(label=label, artefacts=tuple(artefacts), commit=commit, url_template=template)


def _parse_row(cells: tuple[str, ...], width: int, where: str) -> Artefact:
    if len(cells) != width:
        raise InputDataError(f"{where}: {len(cells)} tab-separated columns; the header has {width}")
    path, size, sha256 = cells[0], cells[1], cells[2]
    _check_path(path, where)
    if not _SIZE.match(size):
        raise InputDataError(f"{where}: size {size!r} is not a non-negative integer")
    if not _SHA256.match(sha256):
        raise InputDataError(f"{where}: sha256 {sha256!r} is not 64 hexadecimal digits")
    domain = cells[3].strip() if width == 4 else ""
    return Artefact(
        path=path,
        size=int(size),
        sha256=sha256.lower(),
        domain=None if domain in ("", NO_DOMAIN) else domain,
    )


def _check_path(path: str, where: str) -> None:
    # Paths are joined under a destination folder: nothing may escape it.
    pure = PurePosixPath(path)
    if (
        not path
        or "\\" in path
        or pure.is_absolute()
        or any(part in ("", ".", "..") for part in path.split("/"))
    ):
        raise InputDataError(f"{where}: path {path!r} must be relative, '/'-separated, without '.' or '..'")
