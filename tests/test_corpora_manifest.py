"""Manifest parsing: comments carry the commit and URL template; every bad line names file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.corpora.manifest import parse_manifest, read_manifest
from harness.errors import InputDataError

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
SHA_A = "a" * 64
SHA_B = "0123456789abcdef" * 4


def test_fixture_manifest_parses():
    manifest = read_manifest(FIXTURE / "SOURCES.tsv")
    assert manifest.commit == "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
    assert [a.path for a in manifest.artefacts] == [
        "data/ALL/test/Bfx002.json",
        "data/ALL/test/FX1001a.json",
        "data/ALL/train/Bfx001.json",
        "data/ALL/val/parks_3.json",
        "LICENSE",
    ]
    assert [a.domain for a in manifest.artefacts] == ["Academic", "Product", "Academic", "Committee", None]
    assert manifest.url_for("LICENSE") == (
        "https://example.invalid/qmsum-fixture/0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c/LICENSE"
    )
    # Sizes in the manifest are the real byte sizes of the fixture files.
    for artefact in manifest.artefacts:
        assert (FIXTURE / artefact.path).stat().st_size == artefact.size


def test_comments_blank_lines_crlf_and_a_three_column_header():
    text = f"# a note\r\n\r\npath\tsize\tsha256\r\n# between rows\r\nx/y.json\t12\t{SHA_B.upper()}\r\n"
    manifest = parse_manifest(text, "m.tsv")
    assert manifest.commit is None and manifest.url_template is None
    (artefact,) = manifest.artefacts
    assert (artefact.path, artefact.size, artefact.sha256, artefact.domain) == ("x/y.json", 12, SHA_B, None)
    assert manifest.url_for("x/y.json") is None


def test_dash_and_empty_domain_mean_none():
    text = f"path\tsize\tsha256\tdomain\na\t1\t{SHA_A}\t-\nb\t2\t{SHA_A}\t\nc\t3\t{SHA_A}\tCommittee\n"
    assert [a.domain for a in parse_manifest(text, "m.tsv").artefacts] == [None, None, "Committee"]


HEADER = "# pinned commit " + "1" * 40 + "\npath\tsize\tsha256\tdomain\n"


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        (f"a.json\t10\t{SHA_A}", "3 tab-separated columns; the header has 4"),
        (f"a.json\t10\t{SHA_A}\tX\textra", "5 tab-separated columns"),
        (f"a.json 10 {SHA_A} X", "1 tab-separated columns"),
        (f"a.json\t1.5\t{SHA_A}\tX", "size '1.5' is not a non-negative integer"),
        (f"a.json\t-1\t{SHA_A}\tX", "size '-1'"),
        (f"a.json\tten\t{SHA_A}\tX", "size 'ten'"),
        (f"a.json\t10\t{SHA_A[:63]}\tX", "is not 64 hexadecimal digits"),
        (f"a.json\t10\t{'g' * 64}\tX", "is not 64 hexadecimal digits"),
        (f"../a.json\t10\t{SHA_A}\tX", "must be relative"),
        (f"/etc/a.json\t10\t{SHA_A}\tX", "must be relative"),
        (f"data//a.json\t10\t{SHA_A}\tX", "must be relative"),
    ],
)
def test_corrupt_row_names_file_and_line(tmp_path, row, fragment):
    path = tmp_path / "SOURCES.tsv"
    path.write_text(HEADER + f"ok.json\t1\t{SHA_A}\tX\n" + row + "\n", encoding="utf-8")
    with pytest.raises(InputDataError) as info:
        read_manifest(path)
    message = str(info.value)
    assert message.startswith(f"{path}:4: ")  # comment, header, good row, bad row
    assert fragment in message
    assert "\n" not in message


def test_repeated_path_names_both_lines():
    text = HEADER + f"a\t1\t{SHA_A}\tX\nb\t1\t{SHA_A}\tX\na\t1\t{SHA_A}\tX\n"
    with pytest.raises(InputDataError, match=r"^m.tsv:5: path a repeats line 3$"):
        parse_manifest(text, "m.tsv")


def test_bad_header_names_its_line():
    with pytest.raises(InputDataError, match=r"^m.tsv:2: header is 'path\|bytes\|sha256'"):
        parse_manifest(f"# c\npath\tbytes\tsha256\na\t1\t{SHA_A}\n", "m.tsv")


def test_manifest_without_rows_is_refused():
    with pytest.raises(InputDataError, match="no artefacts"):
        parse_manifest("# only a comment\npath\tsize\tsha256\n", "m.tsv")


def test_template_needing_a_commit_without_one_is_refused():
    text = f"# raw URL of a path: https://h/<commit>/<path>\npath\tsize\tsha256\na\t1\t{SHA_A}\n"
    with pytest.raises(InputDataError, match="uses <commit>"):
        parse_manifest(text, "m.tsv")


def test_missing_manifest_file(tmp_path):
    with pytest.raises(InputDataError, match="no such file"):
        read_manifest(tmp_path / "nope.tsv")
