"""The source registry: the methodology's corpora, their tiers, and the pinned QMSum manifest."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.corpora.manifest import read_manifest
from harness.corpora.registry import SOURCES, get_source, load_source_manifest
from harness.errors import UsageError

# The methodology's "Tier 2 — public benchmark corpora" table, in its order.
EXPECTED = [
    ("qmsum", "QMSum", "A", True),
    ("ami", "AMI v1.6.2", "A", False),
    ("icsi", "ICSI", "A", False),
    ("earnings21", "Earnings-21", "A", False),
    ("locov1", "LoCoV1", "A", True),
    ("miracl", "MIRACL", "A", True),
    ("ciral", "CIRAL", "A", True),
    ("mrtydi", "Mr. TyDi", "A", True),
    ("meetingbank", "MeetingBank", "B", False),
    ("elitr", "ELITR", "B", True),
]

QMSUM_COMMIT = "83d7768c1f2b4dfeb091385d3dc7e239b8e5bb7e"


def test_registry_lists_the_methodology_corpora_in_order():
    assert [(s.name, s.display_name, s.tier, s.has_judgements) for s in SOURCES.values()] == EXPECTED


@pytest.mark.parametrize("source", list(SOURCES.values()), ids=list(SOURCES))
def test_licence_and_tier_agree(source):
    # Tier B is exactly the non-commercial licences; tier A only the publishable families.
    non_commercial = "-NC" in source.licence
    assert (source.tier == "B") == non_commercial
    if source.tier == "A":
        assert source.licence.startswith(("MIT", "Apache-2.0", "CC BY", "CC0"))
    assert source.licence_note.strip(), "every entry says where its licence was traced"
    assert source.has_judgements == (source.judgements != "none")
    assert source.role


def test_tier_b_entries_name_the_noncommercial_licences():
    assert get_source("meetingbank").licence == "CC BY-NC-ND 4.0"
    assert get_source("elitr").licence == "CC BY-NC-SA 4.0"


def test_licence_notes_record_the_platform_metadata_traps():
    assert "Zenodo" in get_source("meetingbank").licence_note
    assert "LICENSE.txt" in get_source("meetingbank").licence_note
    assert "OpenSLR" in get_source("ami").licence_note


def test_only_qmsum_has_a_pinned_manifest():
    assert [s.name for s in SOURCES.values() if s.manifest is not None] == ["qmsum"]
    assert get_source("ami").manifest_path() is None


def test_missing_manifest_is_refused_with_a_clear_message():
    with pytest.raises(UsageError, match="no artefact manifest is pinned yet"):
        load_source_manifest(get_source("icsi"))


def test_packaged_qmsum_manifest_pins_the_commit_and_all_meetings():
    path = get_source("qmsum").manifest_path()
    assert path is not None and path.is_file()
    manifest = read_manifest(path)
    assert manifest.commit == QMSUM_COMMIT
    # 232 meetings + LICENSE; domains as the methodology counts them.
    assert len(manifest.artefacts) == 233
    assert Counter(a.domain for a in manifest.artefacts) == {
        "Product": 137,
        "Academic": 59,
        "Committee": 36,
        None: 1,
    }
    assert manifest.get("LICENSE") is not None
    assert manifest.url_for("LICENSE") == (
        f"https://raw.githubusercontent.com/Yale-LILY/QMSum/{QMSUM_COMMIT}/LICENSE"
    )


def test_unknown_corpus_lists_the_known_names():
    with pytest.raises(UsageError, match="expected one of qmsum, ami"):
        get_source("msmarco")
