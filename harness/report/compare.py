"""Reading a metrics.json written earlier (a control) for --compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.errors import InputDataError
from harness.inputfiles import read_input_text
from harness.report.results import SCHEMA


def load_metrics(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(read_input_text(path))
    except json.JSONDecodeError as e:
        raise InputDataError(f"{path}:{e.lineno}: not JSON ({e.msg})") from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise InputDataError(f"{path}: field schema: expected {SCHEMA!r}, got {got!r}")
    for i, row in enumerate(doc.get("rows", [])):
        for key in ("corpus", "tier", "query_class", "n", "metrics"):
            if key not in row:
                raise InputDataError(f"{path}: rows[{i}].{key} is missing")
    return doc
