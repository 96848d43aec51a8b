"""A small, rule-chosen subset of a pinned corpus, and the manifest that records it.

The rule (``per_domain``): for each domain of the manifest, the N smallest meeting files by
the manifest's byte size (ties broken by path), plus every artefact without a domain (QMSum's
LICENSE). It reads nothing but the pinned manifest: no file contents, no query counts, no
randomness, so the same manifest and N always give the same files. Smallest, because what a
subset is for is exercising the two-corpus machinery (the gate, agreement) inside CI's time,
and encoding time grows with the text; every domain is kept so each reader path runs. A
subset's numbers are never a measurement of the corpus: short meetings are not typical ones.

The subset is written as a manifest of its own (``SOURCES.tsv`` in the subset's folder): the
rule in a comment, the pinned commit and URL template carried over so the reader's corpus
version stays the upstream commit, and each selected file's size and sha256 copied from the
pinned manifest. Reading the folder against it (``--manifest qmsum=DIR/SOURCES.tsv``) checks
every byte against the pinned hashes, as a full fetch would.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness.corpora.manifest import NO_DOMAIN, Artefact, Manifest
from harness.errors import UsageError

SUBSET_MANIFEST = "SOURCES.tsv"


@dataclass(frozen=True)
class PerDomain:
    """The ``n`` smallest files of each domain (ties by path), plus every artefact without a domain."""

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise UsageError(f"--per-domain {self.n!r}: expected a positive whole number of meetings per domain")

    def describe(self) -> str:
        return (f"per-domain {self.n}: the {self.n} smallest files of each domain by manifest size (ties by "
                "path), plus every artefact without a domain")


def select(manifest: Manifest, rule: PerDomain) -> Manifest:
    """The artefacts ``rule`` keeps, in the manifest's own order, as a new Manifest."""
    by_domain: dict[str, list[Artefact]] = defaultdict(list)
    for artefact in manifest.artefacts:
        if artefact.domain is not None:
            by_domain[artefact.domain].append(artefact)
    if not by_domain:
        raise UsageError(f"{manifest.label} has no domain column: a per-domain subset needs one")
    kept = {a.path for members in by_domain.values() for a in sorted(members, key=lambda a: (a.size, a.path))[: rule.n]}
    artefacts = tuple(a for a in manifest.artefacts if a.domain is None or a.path in kept)
    return Manifest(label=f"{manifest.label} ({rule.describe()})", artefacts=artefacts, commit=manifest.commit,
                    url_template=manifest.url_template)


def render(subset: Manifest, source: Manifest, rule: PerDomain) -> str:
    """The subset as manifest text that :func:`harness.corpora.manifest.parse_manifest` reads back."""
    domains = sorted({a.domain for a in subset.artefacts if a.domain is not None})
    counts = ", ".join(f"{d} {sum(a.domain == d for a in subset.artefacts)}" for d in domains)
    lines = [f"# A subset of {source.label}: {rule.describe()}.",
             f"# {len(subset.artefacts)} of {len(source.artefacts)} artefacts ({counts}); sizes and sha256 "
             "copied from it."]
    if source.commit is not None:
        lines.append(f"# upstream: pinned commit {source.commit}")
    if source.url_template is not None:
        lines.append(f"# raw URL of a path: {source.url_template}")
    lines.append("path\tsize\tsha256\tdomain")
    lines.extend(f"{a.path}\t{a.size}\t{a.sha256}\t{a.domain or NO_DOMAIN}" for a in subset.artefacts)
    return "\n".join(lines) + "\n"


def write_subset_manifest(folder: Path, text: str) -> Path:
    """Write ``folder/SOURCES.tsv`` through a temporary file and a rename: never half a manifest."""
    target = Path(folder) / SUBSET_MANIFEST
    fd, tmp = tempfile.mkstemp(prefix=f".{SUBSET_MANIFEST}.", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
