"""The source registry: every public corpus the methodology names, one entry each.

An entry records what may be claimed from a corpus (its licence tier) and where that
licence was traced. Platform metadata is not a licence (methodology, "Evaluation
corpora"): dataset hubs and archive metadata have misstated terms before, so each
``licence_note`` names the document the tier rests on, or says what still has to be
checked before anything from the corpus is published.

Only QMSum has a pinned artefact manifest so far. Adding a corpus is one entry here
plus, once its artefacts are pinned, one TSV under ``manifests/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from harness.corpora.manifest import Manifest, read_manifest
from harness.errors import UsageError
from harness.model import Tier

# A manifest to use instead of the pinned one: a path, or one already parsed.
ManifestArg = Path | str | Manifest | None


@dataclass(frozen=True)
class Source:
    """One public corpus: identity, licence tier, role, and its pinned manifest if any."""

    name: str
    display_name: str
    licence: str
    tier: Tier
    role: str
    judgements: str
    has_judgements: bool
    upstream_url: str | None
    licence_note: str
    manifest: str | None = None  # file name under harness/corpora/manifests/

    def manifest_path(self) -> Path | None:
        """The packaged manifest file, or None when no artefact set is pinned yet."""
        if self.manifest is None:
            return None
        return Path(str(resources.files("harness.corpora").joinpath("manifests", self.manifest)))


_SOURCES: tuple[Source, ...] = (
    Source(
        name="qmsum",
        display_name="QMSum",
        licence="MIT",
        tier="A",
        role="the backbone of published retrieval numbers",
        judgements="1,576 human queries with gold spans",
        has_judgements=True,
        upstream_url="https://github.com/Yale-LILY/QMSum",
        licence_note="LICENSE at the repository root of Yale-LILY/QMSum (MIT); it is an artefact of "
        "the pinned manifest, so its sha256 is checked with the data.",
        manifest="qmsum.tsv",
    ),
    Source(
        name="ami",
        display_name="AMI v1.6.2",
        licence="CC BY 4.0",
        tier="A",
        role="real word-level timings, speaker channels",
        judgements="none",
        has_judgements=False,
        upstream_url="https://groups.inf.ed.ac.uk/ami/corpus/",
        licence_note="Traced to the Edinburgh original (release 1.6.2, CC BY 4.0). OpenSLR's AMI "
        "mirror serves an older release under CC BY-NC-SA: fetch from Edinburgh, not the mirror.",
    ),
    Source(
        name="icsi",
        display_name="ICSI",
        licence="CC BY 4.0",
        tier="A",
        role="real timings for QMSum's Academic split",
        judgements="none",
        has_judgements=False,
        upstream_url="https://groups.inf.ed.ac.uk/ami/icsi/",
        licence_note="Tier per the methodology's table; re-read the licence statement on the "
        "Edinburgh ICSI distribution page (not a hub mirror) when the manifest is pinned.",
    ),
    Source(
        name="earnings21",
        display_name="Earnings-21",
        licence="CC BY-SA 4.0",
        tier="A",
        role="domain realism: real names, sectors, RTTMs",
        judgements="none",
        has_judgements=False,
        upstream_url="https://github.com/revdotcom/speech-datasets",
        licence_note="Tier per the methodology's table; trace to the LICENSE shipped in Rev's "
        "speech-datasets repository (earnings21 folder), not to any hub copy.",
    ),
    Source(
        name="locov1",
        display_name="LoCoV1",
        licence="Apache-2.0",
        tier="A",
        role="long-context retrieval",
        judgements="yes",
        has_judgements=True,
        upstream_url="https://github.com/HazyResearch/m2",
        licence_note="Tier per the methodology's table. LoCoV1 bundles documents from other "
        "datasets: each constituent's own terms must be traced before publishing; the hub "
        "licence field is not evidence.",
    ),
    Source(
        name="miracl",
        display_name="MIRACL",
        licence="Apache-2.0",
        tier="A",
        role="multilingual, 18 languages",
        judgements="pooled human, with negatives",
        has_judgements=True,
        upstream_url="https://github.com/project-miracl/miracl",
        licence_note="Tier per the methodology's table; trace to the project-miracl repository's "
        "LICENSE and the dataset card's own terms, not the hub tag alone.",
    ),
    Source(
        name="ciral",
        display_name="CIRAL",
        licence="Apache-2.0",
        tier="A",
        role="4 African languages (CLIR)",
        judgements="pooled human",
        has_judgements=True,
        upstream_url="https://github.com/ciralproject/ciral",
        licence_note="Tier per the methodology's table; trace to the CIRAL project's own licence "
        "statement, not the hub tag alone.",
    ),
    Source(
        name="mrtydi",
        display_name="Mr. TyDi",
        licence="Apache-2.0",
        tier="A",
        role="multilingual, 11 languages",
        judgements="human, positives-only",
        has_judgements=True,
        upstream_url="https://github.com/castorini/mr.tydi",
        licence_note="Tier per the methodology's table; trace to the castorini/mr.tydi repository's "
        "LICENSE, not the hub tag alone.",
    ),
    Source(
        name="meetingbank",
        display_name="MeetingBank",
        licence="CC BY-NC-ND 4.0",
        tier="B",
        role="31.7 M words — internal scale testing only",
        judgements="none",
        has_judgements=False,
        upstream_url="https://meetingbank.github.io/",
        licence_note="Zenodo's metadata field says cc-by-4.0, but the LICENSE.txt inside the "
        "archive and the authors' site say CC BY-NC-ND 4.0: the archive's own file decides.",
    ),
    Source(
        name="elitr",
        display_name="ELITR",
        licence="CC BY-NC-SA 4.0",
        tier="B",
        role="internal",
        judgements="manual span alignments",
        has_judgements=True,
        upstream_url=None,
        licence_note="Tier per the methodology's table (non-commercial, share-alike). Trace to the "
        "licence in the distribution record of the corpus itself when the manifest is pinned.",
    ),
)

# name -> source; insertion order is the methodology's table order.
SOURCES: dict[str, Source] = {source.name: source for source in _SOURCES}


def get_source(name: str) -> Source:
    """The registry entry for ``name``; an unknown name is a usage error listing known ones."""
    try:
        return SOURCES[name]
    except KeyError as e:
        known = ", ".join(SOURCES)
        raise UsageError(f"unknown corpus {name!r}: expected one of {known}") from e


def load_source_manifest(source: Source, manifest: ManifestArg = None) -> Manifest:
    """The manifest to use: an explicit one (path or parsed), else the pinned packaged one."""
    if isinstance(manifest, Manifest):
        return manifest
    if manifest is not None:
        return read_manifest(Path(manifest))
    path = source.manifest_path()
    if path is None:
        raise UsageError(
            f"{source.display_name}: no artefact manifest is pinned yet, so it cannot be fetched or "
            f"verified; pin its files with sha256 in harness/corpora/manifests/{source.name}.tsv first"
        )
    return read_manifest(path, label=f"manifests/{source.manifest}")
