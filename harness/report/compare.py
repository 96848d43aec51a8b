"""Reading a metrics.json written earlier (a control) for --compare."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.inputfiles import parse_json_input, read_input_text
from harness.report.results import read_metrics


def load_metrics(path: Path) -> dict[str, Any]:
    """The control's metrics.json as written, once it fits :class:`~harness.report.results.MetricsDoc`."""
    doc = parse_json_input(read_input_text(path), str(path))
    read_metrics(doc, str(path))
    return doc
