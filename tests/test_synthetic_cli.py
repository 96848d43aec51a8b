"""``ragsweep synth``: atomic writes, refusal to overwrite, select and the self-report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.synthetic import pipeline
from harness.synthetic.formats import MANIFEST, SELECTION, SELFREPORT_JSON, SELFREPORT_MD
from harness.synthetic.validate import CheckResult


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "full"
    assert main(["synth", "generate", "--seed", "7", "--meetings", "60", "--out", str(out)]) == 0
    return out


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_generate_writes_the_corpus_and_its_self_report(generated: Path) -> None:
    assert (generated / MANIFEST).is_file() and len(list((generated / "meetings").glob("*.json"))) == 60
    report = json.loads((generated / SELFREPORT_JSON).read_text(encoding="utf-8"))
    assert report["meetings"]["count"] == 60 and report["corpus"]["seed"] == 7
    assert report["near_duplicates"]["rate"] == 0.0 and report["near_duplicates"]["threshold"] == 0.5
    assert sum(report["queries"]["by_rule"].values()) == report["queries"]["by_class"]["aggregation"]
    assert report["timing"]["same_start_pairs"] >= 60 and report["timing"]["backchannels_inside_another_turn"] >= 60
    bm25 = report["bm25"]
    if bm25["available"]:
        assert bm25["lookup"]["pooled"]["queries"] == report["queries"]["by_class"]["lookup"]
        assert 0.0 <= bm25["lookup"]["pooled"]["r_at_1"] <= 1.0
        assert "per_query" not in next(iter(bm25["lookup"]["by_domain"].values()))
    else:
        assert "meeting_bm25_report" in bm25["reason"]
    assert "Near-duplicates" in (generated / SELFREPORT_MD).read_text(encoding="utf-8")
    assert _leftovers(generated.parent) == []


def test_a_non_empty_destination_is_refused_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    assert main(["synth", "generate", "--meetings", "20", "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    # --force replaces a corpus, never a folder that is not one (issue 34: it used to wipe keep.txt)
    assert main(["synth", "generate", "--meetings", "20", "--out", str(out), "--force"]) == 2
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    (out / "keep.txt").unlink()
    assert main(["synth", "generate", "--meetings", "20", "--out", str(out)]) == 0
    assert main(["synth", "generate", "--meetings", "20", "--regime", "easy", "--out", str(out), "--force"]) == 0
    assert (out / MANIFEST).is_file() and "regime" not in json.loads((out / MANIFEST).read_text())
    assert _leftovers(tmp_path) == []


def test_a_failed_validation_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(_corpus: object) -> list[CheckResult]:
        return [CheckResult("lookup_gold", False, 1, 1, "lookup-00001: planted wrong", "d")]

    monkeypatch.setattr(pipeline, "validate_corpus", failing)
    out = tmp_path / "out"
    assert main(["synth", "generate", "--meetings", "20", "--out", str(out)]) == 7
    assert "check lookup_gold failed" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_select_then_validate(generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b30"
    code = main(["synth", "select", "--from", str(generated), "--budget", "30", "--out", str(out),
                 "--min-lookup", "10", "--min-multi-file", "3", "--min-per-rule", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "30 meetings" in printed and "dropped" in printed
    selection = json.loads((out / SELECTION).read_text(encoding="utf-8"))
    assert selection["budget"] == 30 and len(selection["selected"]) == 30 and selection["quotas_met"]
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["selection"]["budget"] == 30 and manifest["meetings"] == 30
    assert manifest["selection"]["source"]["meetings"] == 60
    assert main(["synth", "validate", str(out)]) == 0


def test_bare_synth_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth"]) == 2
    assert "generate" in capsys.readouterr().out


def test_cli_defaults_match_the_package() -> None:
    from harness.commands import synth
    from harness.synthetic import formats

    assert (synth.DEFAULT_SEED, synth.DEFAULT_MEETINGS, synth.DEFAULT_BUDGET) == (
        formats.DEFAULT_SEED, formats.DEFAULT_MEETINGS, formats.DEFAULT_BUDGET)


def test_force_replaces_a_corpus_only(tmp_path: Path) -> None:
    out = tmp_path / "photos"
    out.mkdir()
    (out / "holiday.jpg").write_bytes(b"not a corpus")
    assert main(["synth", "generate", "--meetings", "20", "--regime", "easy", "--out", str(out), "--force"]) == 2
    assert sorted(p.name for p in out.iterdir()) == ["holiday.jpg"]
    assert main(["synth", "select", "--from", str(tmp_path / "none"), "--out", str(out), "--force"]) == 2
    assert sorted(p.name for p in out.iterdir()) == ["holiday.jpg"]
