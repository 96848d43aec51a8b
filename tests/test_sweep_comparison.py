"""comparison.json's model (harness.sweep.comparison): what the collector checks before writing and
what every reader reads through. The sweeps here are written by the real collector
(tests/reproduction_fixtures.py: hand-built arm results, collected)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from harness.errors import EXIT_INPUT, InputDataError
from harness.sweep import collect as collector
from harness.sweep.catalogue import CATALOGUE
from harness.sweep.comparison import COMPARISON_SCHEMA, read_comparison
from tests.reproduction_fixtures import publish_sweep


def _doc(root: Path) -> tuple[dict[str, Any], str]:
    path = root / "sweeps" / "s" / "comparison.json"
    return json.loads(path.read_text(encoding="utf-8")), str(path)


def test_a_collected_comparison_reads_through_its_model(tmp_path: Path) -> None:
    publish_sweep(tmp_path, "s", ("fusion",))
    doc = read_comparison(*_doc(tmp_path))
    assert (doc.schema_, doc.sweep_id, doc.corpora, doc.single_corpus) == (COMPARISON_SCHEMA, "s",
                                                                           ["qmsum", "synthetic"], False)
    family = doc.family("fusion")
    assert family is not None and family.control == "rrf-30-default"
    catalogue = CATALOGUE.family("fusion")
    assert [a.arm for a in family.arms] == [a.name for a in catalogue.arms if a.name != catalogue.control]
    assert family.missing == [] and family.failed == []
    assert doc.family("budget") is None


@pytest.mark.parametrize(("misfit", "field"), [
    (lambda d: d["families"][0]["arms"][0]["cells"][0].pop("delta"),
     "families[0].arms[0].cells[0].delta is missing"),
    (lambda d: d["families"][0]["arms"][0].update(verdict=None),
     "families[0].arms[0].verdict: Input should be a valid string"),
    (lambda d: d.update(single_corpus="no"), "single_corpus: Input should be a valid boolean"),
])
def test_a_misfit_is_one_input_error_naming_the_file_and_the_field(tmp_path: Path, misfit: Any, field: str) -> None:
    publish_sweep(tmp_path, "s", ("fusion",))
    doc, where = _doc(tmp_path)
    misfit(doc)
    with pytest.raises(InputDataError) as error:
        read_comparison(doc, where)
    assert error.value.exit_code == EXIT_INPUT
    message = str(error.value)
    assert "\n" not in message and message.startswith(where) and field in message


def test_a_schema_1_comparison_still_reads(tmp_path: Path) -> None:
    """A comparison written before the gate was data (schema 1: no counts, no hinges_on, the old gate block)."""
    publish_sweep(tmp_path, "s", ("fusion",))
    doc, where = _doc(tmp_path)
    assert doc["schema"] == COMPARISON_SCHEMA == "ragsweep.comparison/2"
    doc["schema"] = "ragsweep.comparison/1"
    doc["gate"] = {"measure": "nDCG@10", "class": "all", "protected_class": "lookup", "rule": "win: ..."}
    for family in doc["families"]:
        for arm in family["arms"]:
            del arm["hinges_on"]
            for cell in arm["cells"]:
                for key in ("improved", "tied", "worsened"):
                    del cell[key]
    read = read_comparison(doc, where)
    family = read.family("fusion")
    assert family is not None and family.arms[0].hinges_on == [] and family.arms[0].cells[0].improved is None


def test_a_foreign_schema_is_refused_before_its_fields(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match=r"x\.json: field schema: expected 'ragsweep\.comparison/1' or "
                                             r"'ragsweep\.comparison/2', got 'ragsweep\.metrics/1'"):
        read_comparison({"schema": "ragsweep.metrics/1"}, "x.json")
    with pytest.raises(InputDataError, match="got 'list'"):
        read_comparison([], "x.json")


def test_the_collector_writes_nothing_its_model_does_not_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = collector.build_comparison

    def without_measures(*args: Any, **kwargs: Any) -> dict[str, Any]:
        doc = real(*args, **kwargs)
        del doc["measures"]
        return doc

    monkeypatch.setattr(collector, "build_comparison", without_measures)
    with pytest.raises(ValidationError, match="measures"):
        publish_sweep(tmp_path, "s", ("fusion",))
    assert not (tmp_path / "sweeps" / "s" / "comparison.json").exists()
    assert not (tmp_path / "sweeps" / "s" / "comparison.md").exists()
