"""The results files the page is built from: found, read through their writers' models, hashed.

* comparison.json of every sweep under ``ROOT/sweeps/`` (``ROOT`` is the sweep's ``--out``),
  read with :func:`harness.sweep.comparison.read_comparison`;
* metrics.json of every bench run directly under the bench folder (``DIR/<run>/metrics.json``),
  read with :func:`harness.report.results.read_metrics`;
* the metrics.json of the fusion control of the chosen fusion sweep, for the corpus tables;
* ``DIR/qmsum-bm25.json``: ``ragsweep corpus report qmsum --json`` (``make scopes`` writes it),
  read with :func:`harness.corpora.selfreport.read_self_report`;
* the per_query.json beside the route run (each query's corpus and class, for the Stage 4 tables),
  read with :func:`harness.report.results.read_per_query`.

Every file read is recorded with its sha256 (of the bytes), in the order the page uses them. A
file that does not parse or does not fit its model stops everything with one line naming it
(exit 4): the page is never built from part of what was asked for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.corpora.selfreport import SelfReport, read_self_report
from harness.errors import IntegrityError, UsageError
from harness.inputfiles import MAX_JSON_CHARS, parse_json_input, read_input_text
from harness.report.results import MetricsDoc, PerQueryDoc, read_metrics, read_per_query
from harness.sweep.comparison import ComparisonDoc, read_comparison
from harness.sweep.measured import describe


@dataclass(frozen=True)
class ReproductionInputs:
    """Where the results are: the one configuration of the page (the CLI builds it)."""

    sweeps_root: Path
    bench_dir: Path
    sweep_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceFile:
    path: str
    sha256: str


@dataclass(frozen=True)
class Comparison:
    path: str
    doc: ComparisonDoc

    @property
    def sweep_id(self) -> str:
        return self.doc.sweep_id


@dataclass(frozen=True)
class Run:
    path: str
    doc: MetricsDoc

    @property
    def retrieval(self) -> dict[str, Any]:
        return self.doc.retrieval or {}

    def corpus(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.doc.corpora or [] if c.get("name") == name), None)

    def has_rows(self, corpus: str) -> bool:
        return any(r.corpus == corpus for r in self.doc.rows)


@dataclass
class Reader:
    """Reads files once each and remembers (path, sha256) in first-use order."""

    read: dict[str, SourceFile] = field(default_factory=dict)

    def _json(self, path: Path) -> Any:
        text = read_input_text(path, max_chars=MAX_JSON_CHARS)
        self.read.setdefault(str(path), SourceFile(str(path), hashlib.sha256(text.encode("utf-8")).hexdigest()))
        return parse_json_input(text, str(path))

    def comparison(self, path: Path) -> Comparison:
        return Comparison(str(path), read_comparison(self._json(path), str(path)))

    def run(self, path: Path) -> Run:
        return Run(str(path), read_metrics(self._json(path), str(path)))

    def self_report(self, path: Path) -> SelfReport:
        return read_self_report(self._json(path), str(path))

    def per_query(self, path: Path) -> PerQueryDoc:
        return read_per_query(self._json(path), str(path))


SELF_REPORT_FILE = "qmsum-bm25.json"


def self_report(reader: Reader, inputs: ReproductionInputs) -> tuple[str, SelfReport] | None:
    """The QMSum BM25 self-report beside the bench runs, when there is one."""
    path = inputs.bench_dir / SELF_REPORT_FILE
    return (str(path), reader.self_report(path)) if path.is_file() else None


def comparisons(reader: Reader, inputs: ReproductionInputs) -> list[Comparison]:
    """Every sweep's comparison.json under the root (only the pinned ids, when given), by sweep id."""
    folder = inputs.sweeps_root / "sweeps"
    if inputs.sweep_ids:
        paths = [folder / sweep_id / "comparison.json" for sweep_id in inputs.sweep_ids]
        absent = [str(p) for p in paths if not p.is_file()]
        if absent:
            raise UsageError(f"--sweep-id: no comparison.json at {', '.join(absent)}; "
                             "collect the sweep first (ragsweep sweep collect)")
    else:
        paths = sorted(folder.glob("*/comparison.json")) if folder.is_dir() else []
    found = [reader.comparison(p) for p in paths]
    return sorted(found, key=lambda c: c.sweep_id)


def bench_runs(reader: Reader, inputs: ReproductionInputs) -> list[Run]:
    """Every bench run directly under the bench folder (``<run>/metrics.json``), by path."""
    folder = inputs.bench_dir
    paths = sorted(folder.glob("*/metrics.json")) if folder.is_dir() else []
    return [reader.run(p) for p in paths]


def complete_arms(comparison: Comparison, family: str) -> int:
    entry = comparison.doc.family(family)
    return 0 if entry is None else sum(1 for a in entry.arms if a.status == "complete")


def choose_sweep(found: Sequence[Comparison], family: str) -> tuple[Comparison | None, list[Comparison]]:
    """The sweep a family's tables come from, and the others that also hold it.

    The rule: a sweep whose family control is complete; among those the most corpora (two
    before one), then the most complete arms, then the first sweep id in name order.
    """
    holding = [c for c in found if (f := c.doc.family(family)) is not None
               and f.control_status is not None and f.control_status.status == "complete"]
    ranked = sorted(holding, key=lambda c: (-len(c.doc.corpora), -complete_arms(c, family), c.sweep_id))
    if not ranked:
        return None, []
    return ranked[0], ranked[1:]


def one_measurement(chosen: Sequence[Comparison | None]) -> None:
    """The sweeps the page's tables come from were measured on one state: by the measurement identity each
    comparison.json records (``checks.corpus_state.measured_on``; one collected before it did is not
    checked). Two are refused (exit 5): a page shows one measurement."""
    groups: dict[str, set[str]] = {}
    for comparison in (c for c in chosen if c is not None):
        for family in comparison.doc.families:
            measured = (family.checks.get("corpus_state") or {}).get("measured_on")
            if isinstance(measured, str):
                groups.setdefault(measured, set()).add(comparison.sweep_id)
    if len(groups) > 1:
        raise IntegrityError(f"the page's sweeps were measured on two states: {describe(groups)}; a page shows one "
                             "measurement: pin sweeps of one state with --sweep-id")


def control_run(reader: Reader, inputs: ReproductionInputs, comparison: Comparison, family: str) -> Run | None:
    """The family control's metrics.json beside the comparison, when the sweep's arm files are kept."""
    entry = comparison.doc.family(family)
    if entry is None:
        return None
    path = inputs.sweeps_root / "sweeps" / comparison.sweep_id / family / entry.control / "metrics.json"
    return reader.run(path) if path.is_file() else None
