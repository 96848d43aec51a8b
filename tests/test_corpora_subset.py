"""The per-domain subset rule, its manifest, and `corpus fetch --per-domain` on the hand-written fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.corpora.manifest import parse_manifest, read_manifest
from harness.corpora.subset import SUBSET_MANIFEST, PerDomain, render, select
from harness.errors import UsageError

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
MANIFEST = FIXTURE / "SOURCES.tsv"


def _manifest(rows: list[tuple[str, int, str]]) -> str:
    lines = ["# pinned commit " + "ab" * 20, "path\tsize\tsha256\tdomain"]
    lines += [f"{path}\t{size}\t{'0' * 64}\t{domain}" for path, size, domain in rows]
    return "\n".join(lines) + "\n"


def test_the_fixture_keeps_the_smallest_file_of_each_domain_and_the_licence() -> None:
    # Academic: Bfx002 3758 bytes < Bfx001 4542; Product and Committee have one file each.
    subset = select(read_manifest(MANIFEST), PerDomain(1))
    assert [a.path for a in subset.artefacts] == [
        "data/ALL/test/Bfx002.json", "data/ALL/test/FX1001a.json", "data/ALL/val/parks_3.json", "LICENSE"]
    assert [a.path for a in select(read_manifest(MANIFEST), PerDomain(2)).artefacts] == [
        a.path for a in read_manifest(MANIFEST).artefacts]  # two per domain: everything


def test_size_decides_then_path_and_manifest_order_is_kept() -> None:
    manifest = parse_manifest(_manifest([
        ("z/big.json", 900, "A"), ("y/tie-b.json", 10, "A"), ("x/tie-a.json", 10, "A"), ("w/small.json", 5, "B"),
        ("v/other.json", 7, "B"), ("u/only.json", 1000, "C"), ("NOTICE", 3, "-")]), "m.tsv")
    subset = select(manifest, PerDomain(2))
    assert [a.path for a in subset.artefacts] == [
        "y/tie-b.json", "x/tie-a.json", "w/small.json", "v/other.json", "u/only.json", "NOTICE"]
    assert [a.path for a in select(manifest, PerDomain(1)).artefacts] == [
        "x/tie-a.json", "w/small.json", "u/only.json", "NOTICE"]  # the tie at 10 bytes goes to x/ before y/


def test_the_subset_manifest_reads_back_with_the_commit_and_the_rule() -> None:
    source = read_manifest(MANIFEST)
    subset = select(source, PerDomain(1))
    text = render(subset, source, PerDomain(1))
    again = parse_manifest(text, "SOURCES.tsv")
    assert again.artefacts == subset.artefacts
    assert (again.commit, again.url_template) == (source.commit, source.url_template)
    assert text.splitlines()[0] == (f"# A subset of {MANIFEST}: per-domain 1: the 1 smallest files of each domain "
                                    "by manifest size (ties by path), plus every artefact without a domain.")
    assert "4 of 5 artefacts (Academic 1, Committee 1, Product 1)" in text


@pytest.mark.parametrize("n", [0, -1, True])
def test_a_count_that_is_not_positive_is_refused(n: int) -> None:
    with pytest.raises(UsageError, match="expected a positive whole number"):
        PerDomain(n)


def test_a_manifest_without_domains_is_refused() -> None:
    text = "path\tsize\tsha256\nLICENSE\t3\t" + "0" * 64 + "\n"
    with pytest.raises(UsageError, match="no domain column"):
        select(parse_manifest(text, "plain.tsv"), PerDomain(1))


def test_fetch_per_domain_writes_the_subset_and_its_manifest(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "subset"
    assert main(["corpus", "fetch", "qmsum", "--dest", str(dest), "--mirror", str(FIXTURE), "--manifest",
                 str(MANIFEST), "--per-domain", "1", "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"qmsum: 4 artefacts under {dest}: 4 fetched, 0 already present",
        f"qmsum: subset manifest {dest / SUBSET_MANIFEST} (read the folder with --manifest "
        f"qmsum={dest / SUBSET_MANIFEST})"]
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "LICENSE", SUBSET_MANIFEST, "data/ALL/test/Bfx002.json", "data/ALL/test/FX1001a.json",
        "data/ALL/val/parks_3.json"]
    assert main(["corpus", "verify", "qmsum", "--dest", str(dest), "--manifest", str(dest / SUBSET_MANIFEST)]) == 0
    capsys.readouterr()
    assert main(["corpus", "inspect", "qmsum", "--dest", str(dest), "--manifest", str(dest / SUBSET_MANIFEST),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files_by_domain"] == {"Academic": 1, "Committee": 1, "Product": 1}
    assert doc["version"] == read_manifest(MANIFEST).commit  # still the upstream commit, not a new version
