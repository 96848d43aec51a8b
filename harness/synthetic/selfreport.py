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
    # the counterfactual archive: each lookup ranked with the other sessions stating its item left out
    uuid = {m.meeting_id: m.file_uuid for m in native.meetings}
    gold_of = {q.id: q.gold[0].meeting_id for q in native.queries if q.query_class == "lookup" and q.gold}
    siblings = {q.id: frozenset(uuid[c] for c in q.closure if c != gold_of[q.id] and c in uuid)
                for q in native.queries if q.id in gold_of}
    alone = meeting_bm25_report(corpus.meetings, lookups, by_domain=False, left_out=siblings)["pooled"]
    return {"available": True, "function": BM25_FUNCTION, "lookup": lookup_report, "multi_file": multi_report,
            "mechanisms": _mechanisms(native, lookup_report["pooled"]["per_query"],
                                      multi_report["pooled"]["per_query"], alone)}


def _summary(rows: list[dict[str, int]]) -> dict[str, Any]:
    n = len(rows)
    return {"queries": n, "r_at_1": sum(1 for r in rows if r["rank"] == 1) / n if n else None,
            "mean_others_within_90pct": sum(r["others_within_90pct"] for r in rows) / n if n else None}


def _mechanisms(native: NativeCorpus, lookup: dict[str, dict[str, int]], multi: dict[str, dict[str, int]],
                alone: dict[str, Any]) -> dict[str, Any]:
    """What each mechanism does to BM25, read off this corpus: lookups by how many sessions state
    their item and by their cue, the lookups again with those sibling sessions left out, and
    multi-file questions by how many series discuss their topic."""
    by_stating: dict[str, list[dict[str, int]]] = {}
    by_cue: dict[str, list[dict[str, int]]] = {}
    by_series: dict[str, list[dict[str, int]]] = {}
    series_of = {m.meeting_id: (m.team, m.kind) for m in native.meetings}
    for q in native.queries:
        if q.id in lookup:
            n = len(q.closure)
            by_stating.setdefault(str(n) if n < 5 else "5+", []).append(lookup[q.id])
            cue = "date" if q.date else "attendees" if q.attendees else "none"
            by_cue.setdefault(cue, []).append(lookup[q.id])
        elif q.id in multi:
            n = len({series_of[c] for c in q.closure if c in series_of})
            by_series.setdefault(str(n), []).append(multi[q.id])
    return {
        "regime": native.manifest.regime or {"name": "easy"},
        "lookup_by_sessions_stating_the_item": {k: _summary(v) for k, v in sorted(by_stating.items())},
        "lookup_by_cue": {k: _summary(v) for k, v in sorted(by_cue.items())},
        "lookup_without_sibling_sessions": {"queries": alone["queries"], "r_at_1": alone["r_at_1"],
                                            "mean_others_within_90pct": alone["mean_others_within_90pct"]},
        "multi_file_by_series_discussing_the_topic": {k: _summary(v) for k, v in sorted(by_series.items())},
    }


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
        lines += _mechanism_lines(bm25.get("mechanisms"), bm25["lookup"]["pooled"])
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


def _mechanism_lines(mech: dict[str, Any] | None, pooled: dict[str, Any]) -> list[str]:
    if not mech:
        return []
    regime = mech["regime"]
    on = ", ".join(k for k, v in (regime.get("mechanisms") or {}).items() if v) or "none"
    lines = ["", f"### What each mechanism does here (regime {regime['name']}: {on})", "",
             "| lookups or multi_file questions | queries | R@1 | other meetings >= 90% of gold |",
             "| --- | ---: | ---: | ---: |",
             f"| every lookup | {pooled['queries']} | {_fmt(pooled['r_at_1'])} | "
             f"{_fmt(pooled['mean_others_within_90pct'])} |"]
    alone = mech["lookup_without_sibling_sessions"]
    lines.append(f"| every lookup, its sibling sessions left out of the ranking | {alone['queries']} | "
                 f"{_fmt(alone['r_at_1'])} | {_fmt(alone['mean_others_within_90pct'])} |")
    for label, key in (("lookup, item stated in {} sessions", "lookup_by_sessions_stating_the_item"),
                       ("lookup, told apart by {}", "lookup_by_cue"),
                       ("multi_file, topic discussed by {} series", "multi_file_by_series_discussing_the_topic")):
        for k, g in mech[key].items():
            lines.append(f"| {label.format(k)} | {g['queries']} | {_fmt(g['r_at_1'])} | "
                         f"{_fmt(g['mean_others_within_90pct'])} |")
    return lines


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def selfreport_files(native: NativeCorpus) -> dict[str, bytes]:
    report = build_selfreport(native)
    return {SELFREPORT_JSON: canonical_json(report, indent=1), SELFREPORT_MD: render_markdown(report).encode("utf-8")}
