"""answers.md: the answer engine's table, separate from metrics.md and sharing no measure
column with it. Tier-separated like metrics.md; deterministic (byte-identical across runs)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.report.markdown import TIER_HEADINGS

ANSWER_COLUMNS: tuple[str, ...] = ("EM", "partial", "answered", "setF1")


def _cell(value: Any) -> str:
    return "–" if value is None else f"{float(value):.4f}"


def _table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(line) + " |" for line in lines]


def _compact(value: Any) -> str:
    """A gold or answer value for a table cell; file_uuids shortened to 8 characters
    (metrics.json carries them whole)."""
    if isinstance(value, list):
        value = [v[:8] if isinstance(v, str) else v for v in value]
    return json.dumps(value, sort_keys=True, ensure_ascii=False).replace("|", "\\|")


def _parsed(record: Mapping[str, Any]) -> str:
    slots = ", ".join(f"{k}={v!r}" for k, v in sorted(record["slots"].items()))
    return f"{record['intent']}({slots})".replace("|", "\\|")


def _misses(per_query: Mapping[str, Mapping[str, Any]]) -> list[str]:
    misses = [(qid, r) for qid, r in sorted(per_query.items()) if r["measures"]["EM"] < 1.0]
    if not misses:
        return []
    lines = ["## Misses (EM 0)", ""]
    declined: dict[str, list[str]] = {}
    for qid, r in misses:
        if r["declined"] is not None:
            declined.setdefault(r["declined"], []).append(qid)
    if declined:
        lines += _table(["declined because", "n", "queries"],
                        [[reason.replace("|", "\\|"), str(len(ids)), ", ".join(ids)]
                         for reason, ids in sorted(declined.items())])
        lines.append("")
    wrong = [(qid, r) for qid, r in misses if r["declined"] is None]
    if wrong:
        lines += _table(["answered wrong", "rule", "gold", "answer", "parsed as"],
                        [[qid, r["rule"], _compact(r["gold"]), _compact(r["answer"]), _parsed(r)]
                         for qid, r in wrong])
        lines.append("")
    return lines


def render_answers_md(control_name: str, block: Mapping[str, Any]) -> str:
    answerer, scoring, queries = block["answerer"], block["scoring"], block["queries"]
    cover = block["coverage"]
    lines = [
        f"# {control_name} — answers",
        "",
        f"answerer `{answerer['name']}` (is_production_path: {str(answerer['is_production_path']).lower()}), "
        f"search backend `{answerer['search_backend']}`, terms bucket size {answerer['bucket_size']}"
        + (f", store PostgreSQL schema `{answerer['store']['schema']}`" if "store" in answerer else ""),
        f"scoring: count tolerance {scoring['count_tolerance']} (partial = EM for counts); file sets exact for EM, "
        f"set credit `{scoring['set_credit']}` (setF1 beside); speaker answers need name and count; names "
        "casefolded with whitespace collapsed",
        f"queries scored {queries['scored']}, unanswered {queries['unanswered']} (a declined query scores 0); "
        f"period-filtered answers {cover['period_filtered_answers']}, undated files excluded "
        f"{cover['undated_files_excluded']}",
        "",
    ]
    for tier in ("A", "B", "C"):
        rows = [r for r in block["rows"] if r["tier"] == tier]
        if not rows:
            continue
        lines += [f"## {TIER_HEADINGS[tier]}", ""]
        body = [[r["corpus"], r["tier"], r["query_class"], r["rule"], str(r["n"]), str(r["unanswered"]),
                 *(_cell(r["measures"][m]) for m in ANSWER_COLUMNS)] for r in rows]
        lines += _table(["corpus", "tier", "class", "rule", "n", "unans.", *ANSWER_COLUMNS], body)
        lines.append("")
    if not block["rows"]:
        lines += ["No answer-scored queries in the scored corpora.", ""]
    mechanisms = answerer["mechanisms"]
    if mechanisms:
        lines += ["## Mechanisms", ""]
        lines += _table(["intent", "mechanism"], [[k, v] for k, v in sorted(mechanisms.items())])
        lines.append("")
    lines += _misses(block["per_query"])
    lines.append("EM is the gate; partial and setF1 are diagnostics. A declined query scores 0 and is counted.")
    return "\n".join(lines) + "\n"
