"""Reading a metrics.json written earlier (a control) for --compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.inputfiles import read_json_input
from harness.report.results import read_metrics


def load_metrics(path: Path) -> dict[str, Any]:
    """The control's metrics.json as written, once it fits :class:`~harness.report.results.MetricsDoc`."""
    doc = read_json_input(path)
    read_metrics(doc, str(path))
    return doc
