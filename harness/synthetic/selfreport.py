"""The generator's self-report, written beside every corpus (selfreport.json and .md).

Synthetic ground truth is correct by construction; the risk is realism. So each corpus
reports how easy it is and how repetitive it is:

* BM25 R@1 of the lookup queries at file level, per team and pooled, from
  :func:`harness.corpora.selfreport.meeting_bm25_report` (the same measurement QMSum gets),
  plus the pooled figure for multi_file queries (best gold file counts);
* the near-duplicate rate (:mod:`harness.synthetic.neardup`);
* counts: meetings, turns, words, queries per class and per rule, and the overlap
  features the timings exercise (shared start times, backchannels, overlapping turns).

Floats are rounded to 6 decimals so the files read the same everywhere the ranks agree.
"""

from __future__ import annotations

import statistics
from collections import Counter
from itertools import pairwise
from typing import Any

from harness.synthetic.adapter import corpus_from_native
from harness.synthetic.formats import (
    SELFREPORT_JSON,
    SELFREPORT_MD,
    NativeCorpus,
    canonical_json,
    query_counts,
)
from harness.synthetic.neardup import near_duplicates

BM25_FUNCTION = "harness.corpora.selfreport.meeting_bm25_report"


def build_selfreport(native: NativeCorpus) -> dict[str, Any]:
    man = native.manifest
    turns = [len(m.turns) for m in native.meetings]
    return _rounded({
        "bm25": _bm25(native),
        "corpus": {
            "format": man.format,
            "generator_version": man.generator_version,
            "seed": man.seed,
            "selection_budget": (man.selection or {}).get("budget"),
        },
        "meetings": {
            "by_team": dict(sorted(Counter(m.team for m in native.meetings).items())),
            "count": len(native.meetings),
            "turns": sum(turns),
            "turns_per_meeting": {"max": max(turns, default=0), "median": statistics.median(turns) if turns else 0,
                                  "min": min(turns, default=0)},
            "words": sum(len(t.text.split()) for m in native.meetings for t in m.turns),
        },
        "near_duplicates": near_duplicates(native.meetings),
        "queries": query_counts([q.model_dump() for q in native.queries]),
        "timing": _timing_features(native),
    })


def _bm25(native: NativeCorpus) -> dict[str, Any]:
    try:
        from harness.corpora.selfreport import meeting_bm25_report
    except ImportError as e:  # the corpora stage is built in parallel: say so, never skip silently
        return {"available": False, "reason": f"{BM25_FUNCTION} is not importable: {e}"}
    corpus = corpus_from_native(native)
    lookups = [q for q in corpus.queries if q.query_class == "lookup"]
    multi = [q for q in corpus.queries if q.query_class == "multi_file"]
    lookup_report = meeting_bm25_report(corpus.meetings, lookups, by_domain=True)
    for group in lookup_report.get("by_domain", {}).values():
        group.pop("per_query", None)
    multi_report = meeting_bm25_report(corpus.meetings, multi, by_domain=False)
    multi_report.pop("by_domain", None)
    return {"available": True, "function": BM25_FUNCTION, "lookup": lookup_report, "multi_file": multi_report}


def _timing_features(native: NativeCorpus) -> dict[str, int]:
    shared = backchannels = overlaps = 0
    for m in native.meetings:
        turns = m.turns
        for a, b in pairwise(turns):
            if a.start == b.start and a.speaker != b.speaker:
                shared += 1
            if b.start < a.end and a.speaker != b.speaker:
                overlaps += 1
        for i, t in enumerate(turns):
            if len(t.text.split()) <= 3 and any(
                h.speaker != t.speaker and h.start < t.start and t.end < h.end for h in turns[max(0, i - 5) : i]
            ):
                backchannels += 1
    return {"backchannels_inside_another_turn": backchannels, "overlapping_adjacent_turns": overlaps,
            "same_start_pairs": shared}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def render_markdown(report: dict[str, Any]) -> str:
    c, m, q, nd = report["corpus"], report["meetings"], report["queries"], report["near_duplicates"]
    scope = f"selected, budget {c['selection_budget']}" if c["selection_budget"] else "full generation"
    lines = [
        f"# Synthetic corpus self-report ({c['format']}, generator {c['generator_version']}, "
        f"seed {c['seed']}, {scope})",
        "",
        f"{m['count']} meetings, {m['turns']} turns, {m['words']} words "
        f"(turns per meeting: min {m['turns_per_meeting']['min']}, median {m['turns_per_meeting']['median']}, "
        f"max {m['turns_per_meeting']['max']}).",
        "",
        "| class / rule | queries |",
        "| --- | ---: |",
        *(f"| {k} | {v} |" for k, v in q["by_class"].items()),
        *(f"| {k} | {v} |" for k, v in q["by_rule"].items()),
        f"| total | {q['total']} |",
        "",
        "## BM25 at file level",
        "",
    ]
    bm25 = report["bm25"]
    if not bm25.get("available"):
        lines.append(f"Not measured: {bm25.get('reason')}")
    else:
        lines += ["| group | meetings | queries | R@1 | median gold rank | other meetings >= 90% of gold |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        rows = [("lookup, pooled", bm25["lookup"]["pooled"]),
                *((f"lookup, {k}", v) for k, v in bm25["lookup"]["by_domain"].items()),
                ("multi_file, pooled", bm25["multi_file"]["pooled"])]
        for name, g in rows:
            lines.append(f"| {name} | {g['meetings']} | {g['queries']} | {_fmt(g['r_at_1'])} | "
                         f"{_fmt(g['median_gold_rank'])} | {_fmt(g['mean_others_within_90pct'])} |")
    sample = nd["nearest_neighbour_jaccard_sample"] or {}
    lines += [
        "",
        "## Near-duplicates",
        "",
        f"Rate {_fmt(nd['rate'])}: {nd['meetings_with_near_duplicate']} of {nd['meetings']} meetings have another "
        f"meeting with word-{nd['shingle_words']}-gram Jaccard >= {nd['threshold']} "
        f"({nd['pairs_at_or_above_threshold']} pairs; {nd['pairs_compared']} pairs compared exactly).",
        f"Nearest-neighbour Jaccard over a sample of {sample.get('meetings', 0)} meetings: median "
        f"{_fmt(sample.get('median'))}, max {_fmt(sample.get('max'))}.",
        "",
        "## Timing features",
        "",
        *(f"- {k.replace('_', ' ')}: {v}" for k, v in report["timing"].items()),
        "",
    ]
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def selfreport_files(native: NativeCorpus) -> dict[str, bytes]:
    report = build_selfreport(native)
    return {SELFREPORT_JSON: canonical_json(report, indent=1), SELFREPORT_MD: render_markdown(report).encode("utf-8")}
