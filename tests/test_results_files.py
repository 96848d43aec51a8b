"""Results files are read through the writer's model: every reader agrees on what a file must hold.

metrics.json is read by ``report.compare`` (``bench --compare``) and by ``sweep.results`` (the
collector and the agreement analysis). Both go through ``harness.report.results.MetricsDoc``, so a
file one accepts the other accepts, and a file one refuses the other refuses with the same line.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputDataError
from harness.report.compare import load_metrics
from harness.sweep.catalogue import Arm
from harness.sweep.results import load_from_path

ROW = {"corpus": "qmsum", "tier": "A", "query_class": "all", "n": 3, "metrics": {"nDCG@10": 0.5, "fileRank": "inf"}}
METRICS: dict[str, Any] = {"schema": "ragsweep.metrics/1", "control_name": "c", "rows": [ROW]}
ARM = Arm(name="a", family="f", axis="control")


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _both(path: Path) -> tuple[str, str]:
    """What each reader says about ``path``: "ok" or its one-line error."""
    said = []
    for read in (load_metrics, lambda p: load_from_path(ARM, p)):
        try:
            read(path)
        except InputDataError as e:
            said.append(str(e))
        else:
            said.append("ok")
    return said[0], said[1]


def test_both_readers_accept_what_the_writer_writes(tmp_path: Path) -> None:
    assert _both(_write(tmp_path, METRICS)) == ("ok", "ok")


@pytest.mark.xfail(strict=True, reason="issue 14 item 4: sweep.results defaults a missing n to 0 and ignores tier")
@pytest.mark.parametrize("key", ["tier", "n"])
def test_both_readers_refuse_a_row_without_a_key_the_writer_always_writes(key: str, tmp_path: Path) -> None:
    doc = copy.deepcopy(METRICS)
    del doc["rows"][0][key]
    path = _write(tmp_path, doc)
    compare_says, sweep_says = _both(path)
    assert compare_says == sweep_says
    assert compare_says.startswith(f"{path}: rows[0].{key}")
