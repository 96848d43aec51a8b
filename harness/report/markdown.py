"""metrics.md and the --compare delta table. Publishable (tier A) and internal (tier B)
rows are printed under separate headings, mechanically, from the tier each row carries."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness.report.files import read_json_number

TABLE_MEASURES: tuple[str, ...] = (
    "nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR", "fileR@1", "fileR@10", "fileRank",
)
TIER_HEADINGS = {"A": "Publishable (tier A)", "B": "Internal only (tier B) — never publish these numbers",
                 "C": "Tier C"}


def fmt(value: Any, measure: str = "") -> str:
    number = read_json_number(value)
    if math.isinf(number):
        return "∞"
    if measure == "fileRank":
        return f"{number:g}"
    return f"{number:.4f}"


def _table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return out


def render_metrics_md(doc: Mapping[str, Any]) -> str:
    lines = [f"# {doc['control_name']}", ""]
    retrieval = doc.get("retrieval", {})
    if retrieval:
        lines.append(
            f"stage `{retrieval.get('stage', '?')}`, scope `{retrieval.get('scope', '?')}`, "
            f"fusion `{retrieval.get('fusion', {}).get('pipeline_id', '-')}`"
        )
    engine = doc["metric_engine"]
    policy = doc["relevance_policy"]
    queries = doc["queries"]
    lines += [
        f"metric engine {engine['name']} {engine['version']} ({engine['ndcg']}; {engine['semantics']})",
        f"relevance: {policy['name']}, high {policy['high']}, low {policy['low']}, binary {policy['binary']}",
        f"queries scored {queries['scored']}, dropped unjudgeable {queries['dropped_unjudgeable']}, "
        f"unanswered {queries['unanswered']} (scored 0)",
        "",
    ]
    for tier in ("A", "B", "C"):
        rows = [r for r in doc["rows"] if r["tier"] == tier]
        if not rows:
            continue
        lines += [f"## {TIER_HEADINGS[tier]}", ""]
        body = [[r["corpus"], r["tier"], r["query_class"], str(r["n"]),
                 *(fmt(r["metrics"][m], m) for m in TABLE_MEASURES)] for r in rows]
        lines += _table(["corpus", "tier", "class", "n", *TABLE_MEASURES], body)
        lines.append("")
    lines.append("fileRank is a median over queries; ∞ means more than half never surfaced a gold file.")
    return "\n".join(lines) + "\n"


COMPARE_MEASURES: tuple[str, ...] = ("nDCG@5", "nDCG@10", "nDCG@20", "R@10", "MRR", "fileR@1")


def render_compare(current: Mapping[str, Any], control: Mapping[str, Any]) -> str:
    """Per corpus x class delta table of current against a control metrics.json."""
    key = lambda r: (r["corpus"], r["tier"], r["query_class"])  # noqa: E731
    before = {key(r): r for r in control["rows"]}
    lines = [f"# {current['control_name']} vs {control['control_name']}", ""]
    body = []
    for row in current["rows"]:
        base = before.get(key(row))
        cells = [row["corpus"], row["tier"], row["query_class"], str(row["n"])]
        if base is None:
            body.append(cells + ["(not in control)"] * len(COMPARE_MEASURES))
            continue
        if base["n"] != row["n"]:
            cells[3] = f"{row['n']} (control {base['n']})"
        for m in COMPARE_MEASURES:
            now, then = read_json_number(row["metrics"][m]), read_json_number(base["metrics"][m])
            cells.append(f"{fmt(now)} ({now - then:+.4f})")
        body.append(cells)
    lines += _table(["corpus", "tier", "class", "n", *(f"{m} (Δ)" for m in COMPARE_MEASURES)], body)
    missing = sorted(set(before) - {key(r) for r in current["rows"]})
    if missing:
        lines += ["", "rows only in the control: " + ", ".join("/".join(k) for k in missing)]
    return "\n".join(lines) + "\n"
