"""`ragsweep report reproduction-check`: a committed control re-derived and compared cell by cell.

On the fixture state: --derive writes expected.json, the check passes on the same state (exact rule), a
value edited in a copy fails naming the cell; a state with other vector bits (the same claim, another
identity: what another machine's encoder gives) is compared within the tolerance, and a value moved
past it fails; another claim is refused before any run. The committed control is checked for shape.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from harness.reproduction.control import (
    DerivedOn,
    Rule,
    claim_differences,
    compare_cells,
    read_expected,
    stage1_control,
)
from harness.state.contents import contents_block
from tests.fixture_state import qmsum_fixture_state

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "baselines" / "qmsum-stage1-control" / "expected.json"
MEASURES = {"n", "nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR", "fileR@1", "fileR@10", "fileRank"}


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fixture state, the expected.json --derive wrote for it)."""
    state = qmsum_fixture_state(tmp_path_factory, "control")
    expected = tmp_path_factory.mktemp("control-expected") / "expected.json"
    work = tmp_path_factory.mktemp("control-derive") / "work"
    assert main(["report", "reproduction-check", "--derive", "--expected", str(expected), "--state", str(state),
                 "--work", str(work), "--workers", "2"]) == 0
    return state, expected


def _check(expected: Path, state: Path, work: Path) -> int:
    return main(["report", "reproduction-check", "--expected", str(expected), "--state", str(state),
                 "--work", str(work)])


def _edited(expected: Path, out: Path, edits: dict[tuple[str, str, str], float]) -> Path:
    """A copy of ``expected`` with (scope, class, measure) cells moved by the given amounts."""
    doc = json.loads(expected.read_text())
    for (scope, query_class, measure), delta in edits.items():
        run = next(r for r in doc["runs"] if r["scope"] == scope)
        run["cells"][query_class][measure] += delta
    out.write_text(json.dumps(doc))
    return out


def test_derive_check_passes_and_an_edited_value_fails_naming_the_cell(
        derived: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state, expected = derived
    doc = read_expected(expected)
    assert [r.scope for r in doc.runs] == ["corpus", "gold-files"]
    for run in doc.runs:
        assert set(run.cells) == {"lookup", "summarize", "all"}
        assert all(set(cells) == MEASURES for cells in run.cells.values())
    capsys.readouterr()

    # derived with --workers 2, checked with 1: the same bits, so every cell equal
    assert _check(expected, state, tmp_path / "work") == 0
    out = capsys.readouterr().out
    assert "exact rule" in out
    assert "scope corpus: 33 cells checked, all as expected" in out
    assert "scope gold-files: 33 cells checked, all as expected" in out

    # within the other-identity tolerance, but on the same identity the tolerance is 0
    copy = _edited(expected, tmp_path / "edited.json", {("corpus", "lookup", "nDCG@10"): 0.0005})
    assert _check(copy, state, tmp_path / "work") == 5
    captured = capsys.readouterr()
    moved = [line for line in captured.out.splitlines() if line.startswith("scope corpus, class")]
    assert len(moved) == 1 and moved[0].startswith("scope corpus, class lookup, nDCG@10: expected ")
    assert moved[0].endswith("(-0.0005, tolerance 0 on the same identity)")
    assert "scope corpus: 33 cells checked, 1 moved" in captured.out
    assert "1 cell(s) moved" in captured.err and len(captured.err.strip().splitlines()) == 1


def _other_bits(state: Path, out: Path) -> Path:
    """``state`` with every vector component one float32 step towards zero, recorded as built: the same claim
    (corpora, chunking, model) and another identity, as another machine's encoder gives."""
    shutil.copytree(state, out)
    for path in sorted((out / "index").glob("vectors-*.npy")):
        vectors = np.load(path)
        np.save(path, np.nextafter(vectors, np.float32(0)).astype(np.float32))
    manifest = json.loads((out / "state.json").read_text())
    manifest.pop("contents")
    manifest["contents"] = contents_block(out, manifest)
    (out / "state.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out


def test_another_identity_with_the_same_claim_is_compared_within_the_tolerance(
        derived: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state, expected = derived
    other = _other_bits(state, tmp_path / "other")
    assert json.loads((other / "state.json").read_text())["contents"]["identity"] != read_expected(
        expected).state.identity
    copy = _edited(expected, tmp_path / "edited.json", {("gold-files", "all", "MRR"): 0.0005,  # within 0.001
                                                        ("corpus", "summarize", "R@5"): 0.002})  # beyond
    capsys.readouterr()
    assert _check(copy, other, tmp_path / "work") == 5
    out = capsys.readouterr().out
    assert "same claim (other vector bits)" in out and "tolerance rule (each cell within 0.001" in out
    moved = [line for line in out.splitlines() if line.startswith("scope ") and ", class " in line]
    assert len(moved) == 1, moved
    assert moved[0].startswith("scope corpus, class summarize, R@5: expected ")
    assert moved[0].endswith("(-0.0020, tolerance 0.001 on another identity)")


@pytest.mark.parametrize(("field", "named"), [
    (("corpora", 0, "artefacts_sha256"), "corpora[qmsum].artefacts_sha256: "),
    (("index", "embedding", "header", "model"), "index.embedding.header.model: "),
    (("chunking", "max_words"), "chunking.max_words: "),
])
def test_another_claim_is_refused_before_any_run(derived: tuple[Path, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 field: tuple[Any, ...], named: str) -> None:
    state, expected = derived
    doc = json.loads(expected.read_text())
    node = doc["state"]["claim"]
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = 7 if isinstance(node[field[-1]], int) else "another"
    (tmp_path / "other.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert _check(tmp_path / "other.json", state, tmp_path / "work") == 5
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not comparable" in err and named in err
    assert not (tmp_path / "work").exists()  # refused before any run


def test_a_work_folder_that_is_not_the_checks_own_is_refused(derived: tuple[Path, Path], tmp_path: Path) -> None:
    state, expected = derived
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "keep.txt").write_text("mine")
    assert _check(expected, state, tmp_path / "work") == 2
    assert (tmp_path / "work" / "keep.txt").read_text() == "mine"


def test_claim_differences_name_each_field() -> None:
    claim = {"corpora": [{"name": "qmsum", "artefacts_sha256": "a"}], "chunking": {"max_words": 200}}
    assert claim_differences(claim, claim) == []
    other = {"corpora": [{"name": "qmsum", "artefacts_sha256": "b"}, {"name": "synthetic", "seed": 1}],
             "chunking": {"max_words": 200}}
    assert claim_differences(claim, other) == ["corpora[qmsum].artefacts_sha256: b, expected a",
                                               "corpora[synthetic]: present, expected absent",
                                               "corpora[synthetic].seed: 1, expected absent"]


def test_cells_missing_either_side_are_named() -> None:
    doc = stage1_control().model_copy(update={"state": DerivedOn(path="", identity="x", claim={})})
    runs = [run.model_copy(update={"cells": {"all": {"n": 3, "MRR": 0.5}}}) for run in doc.runs]
    doc = doc.model_copy(update={"runs": runs})
    got = {"corpus": {"all": {"n": 3, "MRR": 0.5}},
           "gold-files": {"all": {"n": 3, "MRR": 0.5 + 1e-12, "R@5": 0.1}, "lookup": {"n": 1}}}
    verdicts = compare_cells(doc, got, Rule(True, ""))
    assert [(v.scope, v.checked, v.moved) for v in verdicts] == [
        ("corpus", 2, ()),
        ("gold-files", 3, ("scope gold-files, class all, MRR: expected 0.5, got 0.500000000001 "
                           "(+1.0e-12, tolerance 0 on the same identity)",
                           "scope gold-files, class all, R@5: not in the expected file",
                           "scope gold-files, class lookup: not in the expected file")),
    ]
    # another identity: 1e-12 is within the tolerance; n is exact whatever the identity
    got["corpus"]["all"]["n"] = 4
    verdicts = compare_cells(doc, got, Rule(False, ""))
    assert verdicts[0].moved == ("scope corpus, class all, n: expected 3, got 4 (+1, tolerance 0 on another identity)",)
    assert len(verdicts[1].moved) == 2


def test_the_committed_control() -> None:
    doc = read_expected(COMMITTED)
    template = stage1_control()
    assert doc.name == COMMITTED.parent.name == template.name
    assert [r.command for r in doc.runs] == [r.command for r in template.runs]  # what --derive writes
    assert doc.tolerance == template.tolerance
    assert doc.tolerance.other_identity == 0.001 and doc.tolerance.per_measure == {"n": 0.0, "fileRank": 1.0}
    assert {c["name"] for c in doc.state.claim["corpora"]} >= {"qmsum"}
    assert doc.state.claim["index"]["embedding"]["header"]["model"].startswith("all-MiniLM-L6-v2@sha256:")
    assert len(doc.state.identity) == 64
    for run in doc.runs:
        assert set(run.cells) == {"lookup", "summarize", "all"}
        assert all(set(cells) == MEASURES for cells in run.cells.values())
        assert run.cells["all"]["n"] == run.cells["lookup"]["n"] + run.cells["summarize"]["n"]
    assert "`qmsum-stage1-control`" in (REPO / "baselines" / "README.md").read_text()
