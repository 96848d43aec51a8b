"""The file set one arm writes: metrics.json, metrics.md, per_query.json, runinfo.json,
run.trec, qrels.trec, answers.md (and compare.md against a control)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.metrics.trec import write_trec_qrels, write_trec_run
from harness.model import Qrels, Run
from harness.report.answers_md import render_answers_md
from harness.report.compare import load_metrics
from harness.report.files import dumps
from harness.report.markdown import render_compare, render_metrics_md


def arm_files(control_name: str, metrics: dict[str, Any], per_query: dict[str, Any], runinfo: dict[str, Any],
              run: Run, qrels: Qrels, compare: Path | None = None) -> dict[str, str]:
    """Render an arm's results, name -> text."""
    files = {"metrics.json": dumps(metrics), "metrics.md": render_metrics_md(metrics),
             "per_query.json": dumps(per_query), "runinfo.json": dumps(runinfo),
             "run.trec": write_trec_run(run, control_name),
             "qrels.trec": write_trec_qrels(qrels),
             "answers.md": render_answers_md(control_name, metrics["answers"])}
    if compare is not None:
        files["compare.md"] = render_compare(metrics, load_metrics(compare))
    return files

