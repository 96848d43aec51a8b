"""The committed baselines' bookkeeping, and that a hand-edited number fails the check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.errors import InputDataError
from harness.sweep.baselines import BASELINES, compare, load


def test_every_baseline_folder_is_described_and_has_its_files() -> None:
    folders = [p for p in BASELINES.iterdir() if p.is_dir()]
    assert folders
    readme = (BASELINES / "README.md").read_text()
    for folder in folders:
        assert f"`{folder.name}`" in readme
        if (folder / "expected.json").is_file():
            continue  # a control checked by `make reproduction-check` (tests/test_reproduction_control.py)
        spec = load(folder)
        for name in spec["files"]:
            assert (folder / name).is_file(), f"{folder.name}/{name}"
        if spec["status"] == "re-derivable":
            control = [a for argv in spec["commands"] for a in argv if a == folder.name]
            assert control, "the bench command must record the baseline's own control name"


def test_a_hand_edited_number_fails_the_comparison(tmp_path: Path) -> None:
    folder = BASELINES / "synthetic-small-rrf-30-default"
    derived = tmp_path / "derived"
    derived.mkdir()
    for name in ("metrics.json", "metrics.md"):
        shutil.copyfile(folder / name, derived / name)
    assert compare(folder, derived, ["metrics.json", "metrics.md"]) == []
    text = (derived / "metrics.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| synthetic | A | all |"))
    cells = row.split(" | ")
    cells[5] = f"{float(cells[5]) + 0.0001:.4f}"  # nDCG@5 of the all row, nudged by one in the 4th decimal
    (derived / "metrics.md").write_text(text.replace(row, " | ".join(cells)))
    problems = compare(folder, derived, ["metrics.json", "metrics.md"])
    assert len(problems) == 1 and problems[0].startswith("synthetic-small-rrf-30-default/metrics.md: differs")


def test_a_baseline_without_status_is_refused(tmp_path: Path) -> None:
    (tmp_path / "baseline.json").write_text(json.dumps({"why": "x", "files": []}))
    with pytest.raises(InputDataError, match="field status is missing"):
        load(tmp_path)
