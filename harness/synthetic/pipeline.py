"""The three operations behind ``ragsweep synth``: generate, select, validate a folder.

Each writes into a temporary sibling folder, validates what it wrote, adds the
self-report, and only then renames it into place; a failure leaves nothing behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import IntegrityError
from harness.synthetic.folders import atomic_directory, check_destination, write_files
from harness.synthetic.formats import (
    SELECTION,
    SELFREPORT_JSON,
    canonical_json,
    meeting_path,
    read_native,
    sha256_bytes,
)
from harness.synthetic.generator import generate
from harness.synthetic.regime import DEFAULT_REGIME, Regime
from harness.synthetic.select import Quotas, select, selected_files
from harness.synthetic.selfreport import selfreport_files
from harness.synthetic.validate import CheckResult, raise_for_results, validate_corpus


@dataclass(frozen=True)
class Written:
    out: Path
    meetings: int
    queries: dict[str, Any]
    checks: list[CheckResult]
    selfreport: dict[str, Any]
    selection: dict[str, Any] | None = None


def generate_corpus(out: Path, *, seed: int, meetings: int, force: bool = False,
                    regime: Regime | str = DEFAULT_REGIME) -> Written:
    """Generate ``meetings`` meetings from ``seed`` under ``regime`` into ``out``."""
    out = Path(out)
    check_destination(out, force=force)
    files = generate(seed, meetings, regime)
    return _write(out, files, {}, force=force)


def select_corpus(
    source: Path, out: Path, *, budget: int, force: bool = False, quotas: Quotas | None = None
) -> Written:
    """Select ``budget`` meetings of the corpus in ``source`` by gold closure into ``out``."""
    source, out = Path(source), Path(out)
    check_destination(out, force=force)
    native = read_native(source)
    raise_for_results(source, validate_corpus(native))
    sel = select(native, budget, quotas)
    source_files = {}
    for meeting_id in sel.selected:
        rel = meeting_path(meeting_id)
        data = (source / rel).read_bytes()
        if sha256_bytes(data) != native.file_sha256[rel]:
            raise IntegrityError(f"{source / rel} changed while it was being selected from; run the selection again")
        source_files[rel] = data
    files, report = selected_files(native, sel, source_files)
    return _write(out, files, {SELECTION: canonical_json(report, indent=1)}, force=force, selection=report)


def _write(
    out: Path, files: dict[str, bytes], extra: dict[str, bytes], *, force: bool,
    selection: dict[str, Any] | None = None,
) -> Written:
    with atomic_directory(out, force=force) as tmp:
        write_files(tmp, {**files, **extra})
        native = read_native(tmp)
        checks = raise_for_results(out, validate_corpus(native))
        report_files = selfreport_files(native)
        write_files(tmp, report_files)
    report = json.loads(report_files[SELFREPORT_JSON])
    return Written(out, len(native.meetings), dict(native.manifest.queries), checks, report, selection)
