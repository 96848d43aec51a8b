"""Fetch from file:// and folder mirrors of the fixture; hashes, temp files, tiers, retries, verify."""

from __future__ import annotations

import errno
import os
import shutil
import urllib.error
from pathlib import Path
from typing import NamedTuple

import pytest

import harness.corpora.fetch as fetch_mod
from harness.corpora.fetch import check_licence, fetch, list_problems, verify
from harness.corpora.manifest import read_manifest
from harness.corpora.registry import Source
from harness.errors import IntegrityError, LicenceError, StorageError, UsageError

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
MANIFEST = FIXTURE / "SOURCES.tsv"
PATHS = [a.path for a in read_manifest(MANIFEST).artefacts]
FIRST = "data/ALL/test/Bfx002.json"


def _leftovers(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.endswith(".part"))


def _mirror_copy(tmp_path: Path) -> Path:
    mirror = tmp_path / "mirror"
    for rel in PATHS:
        (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURE / rel, mirror / rel)
    return mirror


def test_fetch_from_a_file_url_mirror(tmp_path):
    dest = tmp_path / "qmsum"
    seen: list[tuple[str, str]] = []
    result = fetch(
        "qmsum", dest, mirror=FIXTURE.as_uri(), manifest=MANIFEST, progress=lambda p, s: seen.append((p, s))
    )
    assert result.fetched == tuple(PATHS) and result.present == ()
    assert seen == [(p, "fetched") for p in PATHS]
    for rel in PATHS:
        assert (dest / rel).read_bytes() == (FIXTURE / rel).read_bytes()
    assert _leftovers(dest) == []
    assert verify("qmsum", dest, manifest=MANIFEST) == 5


def test_fetch_from_a_plain_folder_and_skip_what_is_present(tmp_path):
    dest = tmp_path / "qmsum"
    fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    # Corrupt one file; the next fetch repairs it and keeps the other four.
    (dest / FIRST).write_text("{}", encoding="utf-8")
    result = fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    assert result.fetched == (FIRST,)
    assert set(result.present) == set(PATHS) - {FIRST}
    assert verify("qmsum", dest, manifest=MANIFEST) == 5


@pytest.mark.parametrize("damage", ["same_size", "shorter", "longer"])
def test_checksum_mismatch_keeps_nothing_and_names_path_expected_and_got(tmp_path, damage):
    mirror = _mirror_copy(tmp_path)
    original = (mirror / FIRST).read_bytes()
    altered = {
        "same_size": original.replace(b"disk space", b"DISK SPACE", 1),
        "shorter": original[:-10],
        "longer": original + b" ",
    }[damage]
    (mirror / FIRST).write_bytes(altered)
    dest = tmp_path / "dest"
    expected = read_manifest(MANIFEST).get(FIRST)
    assert expected is not None
    with pytest.raises(IntegrityError) as info:
        fetch("qmsum", dest, mirror=mirror.as_uri(), manifest=MANIFEST)
    message = str(info.value)
    assert message.startswith(f"{FIRST}: ")
    assert "\n" not in message
    if damage == "longer":
        assert f"larger than the manifest's {expected.size} bytes" in message
    else:
        import hashlib

        assert f"expected {expected.sha256}, got {hashlib.sha256(altered).hexdigest()}" in message
    assert message.endswith(f"; nothing was written to {dest}")
    assert not dest.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mirror"]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else b"/"
            for p in sorted(root.rglob("*"))}


LAST = PATHS[-2]  # the last meeting file: every other one is fetched (and verified) before it


@pytest.mark.parametrize("nested", [False, True], ids=["dest", "dest-under-new-folders"])
def test_a_bad_file_after_good_ones_writes_no_dest_at_all(tmp_path, nested):
    mirror = _mirror_copy(tmp_path)
    (mirror / LAST).write_bytes((mirror / LAST).read_bytes().replace(b"{", b"[", 1))
    dest = tmp_path / "new" / "deeper" / "qmsum" if nested else tmp_path / "qmsum"
    before = _tree(tmp_path)
    seen: list[str] = []
    with pytest.raises(IntegrityError, match=rf"^{LAST}: sha256 mismatch .*; nothing was written to {dest}$"):
        fetch("qmsum", dest, mirror=mirror.as_uri(), manifest=MANIFEST, progress=lambda p, _s: seen.append(p))
    assert seen == PATHS[: PATHS.index(LAST)]  # the good ones were fetched, then thrown away with the rest
    assert _tree(tmp_path) == before  # no dest, no created parent, no staging folder, no .part


def test_a_bad_file_leaves_an_existing_dest_byte_for_byte_unchanged(tmp_path):
    dest = tmp_path / "qmsum"
    fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    (dest / FIRST).write_text("{}", encoding="utf-8")  # one damaged file: to be repaired ...
    (dest / "LICENSE").unlink()  # ... and one missing
    (dest / "notes.txt").write_text("mine\n", encoding="utf-8")
    mirror = _mirror_copy(tmp_path / "m")
    (mirror / "LICENSE").write_bytes(b"x" * 293)  # ... but the mirror's LICENSE is not the pinned one
    before = _tree(tmp_path)
    with pytest.raises(IntegrityError, match=r"^LICENSE: sha256 mismatch"):
        fetch("qmsum", dest, mirror=str(mirror), manifest=MANIFEST)
    assert _tree(tmp_path) == before  # FIRST not repaired either: nothing is committed unless everything is
    result = fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    assert result.fetched == (FIRST, "LICENSE")
    assert verify("qmsum", dest, manifest=MANIFEST) == 5
    assert (dest / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "qmsum"]


def test_an_existing_dest_on_another_file_system_is_filled_by_copy_then_rename(tmp_path, monkeypatch):
    dest = tmp_path / "qmsum"
    dest.mkdir()
    real_replace = os.replace

    def replace(src, dst):  # out of the staging folder (beside dest) into dest: as if dest were a mount point
        if ".qmsum.fetch-" in str(src) and ".qmsum.fetch-" not in str(dst):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real_replace(src, dst)

    monkeypatch.setattr(fetch_mod.os, "replace", replace)
    result = fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    assert result.fetched == tuple(PATHS)
    assert verify("qmsum", dest, manifest=MANIFEST) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qmsum"]
    assert _leftovers(dest) == []


def test_artefact_missing_from_the_mirror(tmp_path):
    mirror = _mirror_copy(tmp_path)
    (mirror / "LICENSE").unlink()
    with pytest.raises(IntegrityError, match=r"^LICENSE: cannot read file://"):
        fetch("qmsum", tmp_path / "dest", mirror=mirror.as_uri(), manifest=MANIFEST)
    assert _leftovers(tmp_path / "dest") == []


def test_verify_reports_every_problem_and_names_the_first(tmp_path):
    dest = tmp_path / "qmsum"
    fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    (dest / "data/ALL/val/parks_3.json").unlink()
    (dest / FIRST).write_bytes((dest / FIRST).read_bytes()[:-1] + b"!")
    _, problems = list_problems("qmsum", dest, manifest=MANIFEST)
    assert [(p.path, p.reason.split(" ")[0]) for p in problems] == [
        (FIRST, "sha256"),
        ("data/ALL/val/parks_3.json", "missing"),
    ]
    with pytest.raises(IntegrityError) as info:
        verify("qmsum", dest, manifest=MANIFEST)
    message = str(info.value)
    assert message.startswith("2 of 5 artefacts")
    assert f"first: {FIRST}: sha256" in message
    assert "\n" not in message


def test_verify_detects_a_size_difference_and_a_missing_file(tmp_path):
    dest = tmp_path / "qmsum"
    fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    (dest / "LICENSE").write_text("short", encoding="utf-8")
    with pytest.raises(IntegrityError, match=r"1 of 5 .* first: LICENSE: size 5, expected 293"):
        verify("qmsum", dest, manifest=MANIFEST)
    (dest / "LICENSE").unlink()
    with pytest.raises(IntegrityError, match="first: LICENSE: missing"):
        verify("qmsum", dest, manifest=MANIFEST)


def test_tier_b_is_refused_without_the_acknowledgement(tmp_path):
    dest = tmp_path / "mb"
    with pytest.raises(LicenceError, match=r"tier B .*--accept-noncommercial"):
        fetch("meetingbank", dest)
    assert not dest.exists()
    # Acknowledged, it gets as far as the missing manifest ...
    with pytest.raises(UsageError, match="no artefact manifest is pinned yet"):
        fetch("meetingbank", dest, accept_noncommercial=True)
    # ... and with a manifest it fetches.
    result = fetch("elitr", dest, mirror=str(FIXTURE), accept_noncommercial=True, manifest=MANIFEST)
    assert len(result.fetched) == 5


def test_tier_c_is_always_refused():
    source = Source(
        name="paywalled",
        display_name="Paywalled",
        licence="signed agreement",
        tier="C",
        role="-",
        judgements="none",
        has_judgements=False,
        upstream_url=None,
        licence_note="-",
    )
    with pytest.raises(LicenceError, match="tier C"):
        check_licence(source, accept_noncommercial=True)


def test_tier_a_without_manifest_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"AMI v1\.6\.2: no artefact manifest"):
        fetch("ami", tmp_path / "ami")


def test_not_enough_free_space_refuses_before_writing(tmp_path, monkeypatch):
    class Usage(NamedTuple):
        total: int
        used: int
        free: int

    monkeypatch.setattr(fetch_mod.shutil, "disk_usage", lambda _p: Usage(100, 90, 10))
    dest = tmp_path / "qmsum"
    with pytest.raises(StorageError, match=r"5 artefacts need \d+ bytes and 10 are free"):
        fetch("qmsum", dest, mirror=str(FIXTURE), manifest=MANIFEST)
    assert not dest.exists()


class _Flaky:
    """Stands in for _download: fails ``failures`` times with ``error``, then writes the file."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self, location, target, artefact):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(FIXTURE / artefact.path, target)


@pytest.fixture
def sleeps(monkeypatch):
    recorded: list[float] = []
    monkeypatch.setattr(fetch_mod, "_sleep", recorded.append)
    return recorded


def _one_artefact_manifest(tmp_path: Path) -> Path:
    lines = [
        line for line in MANIFEST.read_text(encoding="utf-8").splitlines() if not line.startswith("data/")
    ]
    path = tmp_path / "one.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_transient_http_errors_are_retried_with_backoff(tmp_path, monkeypatch, sleeps):
    flaky = _Flaky(2, urllib.error.URLError(ConnectionResetError("reset")))
    monkeypatch.setattr(fetch_mod, "_download", flaky)
    result = fetch(
        "qmsum", tmp_path / "d", mirror="https://mirror.invalid/q", manifest=_one_artefact_manifest(tmp_path)
    )
    assert result.fetched == ("LICENSE",)
    assert flaky.calls == 3
    assert sleeps == [1.0, 2.0]


def test_retries_stop_after_the_attempt_limit(tmp_path, monkeypatch, sleeps):
    flaky = _Flaky(99, urllib.error.HTTPError("https://m/LICENSE", 503, "busy", {}, None))
    monkeypatch.setattr(fetch_mod, "_download", flaky)
    with pytest.raises(
        IntegrityError, match=r"^LICENSE: download from https://m/q/LICENSE failed after 4 attempts"
    ):
        fetch("qmsum", tmp_path / "d", mirror="https://m/q", manifest=_one_artefact_manifest(tmp_path))
    assert flaky.calls == 4
    assert sleeps == [1.0, 2.0, 4.0]


def test_retries_stop_at_the_total_deadline(tmp_path, monkeypatch, sleeps):
    clock = iter([0.0, 59.5])
    monkeypatch.setattr(fetch_mod, "_monotonic", lambda: next(clock))
    flaky = _Flaky(99, TimeoutError("timed out"))
    monkeypatch.setattr(fetch_mod, "_download", flaky)
    with pytest.raises(IntegrityError, match="failed after 1 attempts"):
        fetch("qmsum", tmp_path / "d", mirror="https://m/q", manifest=_one_artefact_manifest(tmp_path))
    assert sleeps == []


def test_permanent_http_errors_and_file_urls_are_not_retried(tmp_path, monkeypatch, sleeps):
    flaky = _Flaky(99, urllib.error.HTTPError("https://m/LICENSE", 404, "not found", {}, None))
    monkeypatch.setattr(fetch_mod, "_download", flaky)
    with pytest.raises(IntegrityError, match=r"cannot read .*not found"):
        fetch("qmsum", tmp_path / "d", mirror="https://m/q", manifest=_one_artefact_manifest(tmp_path))
    assert flaky.calls == 1
    flaky = _Flaky(99, urllib.error.URLError(ConnectionResetError("reset")))
    monkeypatch.setattr(fetch_mod, "_download", flaky)
    with pytest.raises(IntegrityError):
        fetch(
            "qmsum",
            tmp_path / "d",
            mirror=(tmp_path / "m").as_uri(),
            manifest=_one_artefact_manifest(tmp_path),
        )
    assert flaky.calls == 1
    assert sleeps == []


def test_unknown_corpus_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unknown corpus 'nope'"):
        fetch("nope", tmp_path)
