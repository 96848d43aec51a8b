"""The corpus self-report: how well plain BM25 finds each query's gold *meeting*.

The methodology's "Corpus composition is a result, not a detail" table: per domain and
pooled, R@1 of the gold meeting, the median rank of the gold meeting, and how many other
meetings score at least 90% of the gold meeting's score (near-duplicates that the qrels
call irrelevant). The same function serves QMSum and the synthetic tier.

Rules, stated so they can be challenged:

* Document: one per meeting, its title then every turn's text, newline-joined.
* Tokens: text casefolded, then maximal runs of Unicode letters and digits, keeping an
  apostrophe between two such runs ("don't" is one token); no stopwords, no stemming. This
  approximates Lucene's StandardAnalyzer without a Java dependency. Query tokens repeat as
  written (a repeated term counts twice, as two Lucene SHOULD clauses would).
* Scoring: bm25s, ``method="lucene"`` (Lucene's idf ``log(1 + (N - df + 0.5)/(df + 0.5))``),
  k1=1.2, b=0.75, float64 scores. A group is indexed on its own meetings only, so idf is
  the group's.
* Queries: every rank-scored query with gold. Its gold files are those of its spans that
  lie in the group; a query with none there is not part of the group. With several gold
  files (multi-file), the best-scoring gold file stands for the query and the other gold
  files are not counted against it.
* Ties count against the gold meeting: ``rank = 1 + #(other meetings scoring >= gold)``,
  where "other" means not gold for this query. R@1 is the share of queries with rank 1,
  so a tie for first place is not a hit. Near-duplicates: ``#(other meetings scoring >=
  0.9 x gold)``; a gold meeting that scores 0 has every other meeting tied with it.
* Meetings with no domain are grouped under ``"(none)"``.

The returned dict is plain JSON (keys inserted sorted); floats are not rounded here.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt

from harness.errors import InputDataError
from harness.inputfiles import validate_input
from harness.model import Meeting, Query

BM25_METHOD = "lucene"
BM25_K1 = 1.2
BM25_B = 0.75
NEAR_SHARE = 0.9
NO_DOMAIN = "(none)"
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
TOKENIZER = (
    "casefold; tokens = regex " + _TOKEN.pattern + " (letters/digits, inner apostrophes kept); "
    "no stopwords; no stemming"
)
RANK_RULE = "rank = 1 + number of non-gold meetings scoring >= the best gold meeting"
NEAR_RULE = f"non-gold meetings scoring >= {NEAR_SHARE} x the best gold meeting's score"
DOCUMENT_RULE = "one document per meeting: title then every turn's text, newline-joined"


def tokenize(text: str) -> list[str]:
    """The self-report's tokens of ``text`` (see the module docstring)."""
    return _TOKEN.findall(text.casefold())


def meeting_document(meeting: Meeting) -> str:
    return "\n".join([meeting.title, *(turn.text for turn in meeting.turns)])


def meeting_bm25_report(
    meetings: Sequence[Meeting], queries: Sequence[Query], *, by_domain: bool = True,
    left_out: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, Any]:
    """BM25 gold-meeting ranks: ``pooled`` over all meetings, ``by_domain`` per domain.

    Returns ``{"method": {...}, "pooled": group, "by_domain": {domain: group}, "skipped":
    {reason: count}}`` where a group is ``{"meetings", "other_meetings", "queries", "r_at_1",
    "median_gold_rank", "mean_others_within_90pct", "per_query": {id: {"rank",
    "others_within_90pct"}}}``. ``by_domain`` is empty when ``by_domain=False``. ``left_out``
    (query id -> file_uuids) leaves those meetings out of a query's competitors: a counterfactual
    archive without them (the synthetic self-report's "without sibling sessions").
    """
    import bm25s  # heavy-ish: loaded only when a report is asked for

    seen: set[str] = set()
    for meeting in meetings:
        if meeting.file_uuid in seen:
            raise InputDataError(f"self-report: meeting {meeting.source_id} ({meeting.file_uuid}) repeats")
        seen.add(meeting.file_uuid)

    tokens = {m.file_uuid: tokenize(meeting_document(m)) for m in meetings}
    scored, skipped = _scored_queries(queries, seen)

    groups: dict[str, list[Meeting]] = {}
    if by_domain:
        for meeting in meetings:
            groups.setdefault(meeting.domain if meeting.domain is not None else NO_DOMAIN, []).append(meeting)

    report = {
        "by_domain": {name: _group_report(bm25s, groups[name], tokens, scored, left_out) for name in sorted(groups)},
        "method": {
            "b": BM25_B,
            "document": DOCUMENT_RULE,
            "k1": BM25_K1,
            "library": "bm25s",
            "library_version": str(getattr(bm25s, "__version__", "unknown")),
            "method": BM25_METHOD,
            "near_rule": NEAR_RULE,
            "rank_rule": RANK_RULE,
            "score_dtype": "float64",
            "tokenizer": TOKENIZER,
        },
        "pooled": _group_report(bm25s, list(meetings), tokens, scored, left_out),
        "skipped": dict(sorted(skipped.items())),
    }
    SelfReport.model_validate(report)  # the model checks what is written; the dict is what is written
    return report


class SelfReportGroup(BaseModel):
    """One group of the self-report (pooled, or one domain)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    meetings: StrictInt
    other_meetings: StrictInt
    queries: StrictInt
    r_at_1: float | None
    median_gold_rank: float | None
    mean_others_within_90pct: float | None
    per_query: dict[str, dict[str, StrictInt]]


class SelfReport(BaseModel):
    """What ``ragsweep corpus report NAME --json`` prints; read back through :func:`read_self_report`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    method: dict[str, Any]
    pooled: SelfReportGroup
    by_domain: dict[str, SelfReportGroup]
    skipped: dict[str, StrictInt]


def read_self_report(doc: Any, where: str) -> SelfReport:
    """A parsed self-report (read from ``where``); the first problem is one line naming the field (exit 4)."""
    return validate_input(SelfReport, doc, where)


def _scored_queries(queries: Sequence[Query], known: set[str]) -> tuple[list[Query], dict[str, int]]:
    skipped = {"gold_meeting_not_in_corpus": 0, "no_gold": 0, "not_rank_scored": 0}
    scored = []
    for query in sorted(queries, key=lambda q: q.id):
        if query.scored_on != "rank":
            skipped["not_rank_scored"] += 1
        elif not query.gold:
            skipped["no_gold"] += 1
        elif not known.intersection(query.gold_files):
            skipped["gold_meeting_not_in_corpus"] += 1
        else:
            scored.append(query)
    return scored, skipped


def _group_report(
    bm25s: Any, meetings: list[Meeting], tokens: dict[str, list[str]], queries: list[Query],
    left_out: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, Any]:
    position = {m.file_uuid: i for i, m in enumerate(meetings)}
    retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B, method=BM25_METHOD, dtype="float64")
    retriever.index([tokens[m.file_uuid] for m in meetings], show_progress=False)

    per_query: dict[str, dict[str, int]] = {}
    for query in queries:
        gold = {position[f] for f in query.gold_files if f in position}
        if not gold:
            continue
        ids = retriever.get_tokens_ids(tokenize(query.text))
        scores = [float(s) for s in retriever.get_scores_from_ids(ids)] if ids else [0.0] * len(meetings)
        best = max(scores[i] for i in gold)
        skip = gold | {position[f] for f in (left_out or {}).get(query.id, ()) if f in position}
        others = [s for i, s in enumerate(scores) if i not in skip]
        per_query[query.id] = {
            "others_within_90pct": sum(1 for s in others if s >= NEAR_SHARE * best),
            "rank": 1 + sum(1 for s in others if s >= best),
        }

    ranks = [row["rank"] for row in per_query.values()]
    nears = [row["others_within_90pct"] for row in per_query.values()]
    n = len(per_query)
    return {
        "mean_others_within_90pct": sum(nears) / n if n else None,
        "median_gold_rank": statistics.median(ranks) if n else None,
        "meetings": len(meetings),
        "other_meetings": len(meetings) - 1,
        "per_query": dict(sorted(per_query.items())),
        "queries": n,
        "r_at_1": sum(1 for r in ranks if r == 1) / n if n else None,
    }


def format_report(report: dict[str, Any]) -> str:
    """The self-report as a fixed-width text table, rates rounded to 6 decimals."""
    method = report["method"]
    lines = [
        f"BM25 gold-meeting self-report ({method['library']} {method['library_version']}, "
        f"{method['method']}, k1={method['k1']}, b={method['b']})",
        f"{'group':<24} {'meetings':>8} {'queries':>7} {'R@1':>9} {'median rank':>11} "
        f"{'others >=90% of gold':>22}",
    ]
    rows = [("pooled", report["pooled"]), *report["by_domain"].items()]
    for name, group in rows:
        lines.append(
            f"{name:<24} {group['meetings']:>8} {group['queries']:>7} {_fixed(group['r_at_1']):>9} "
            f"{_fixed(group['median_gold_rank']):>11} "
            f"{_fixed(group['mean_others_within_90pct']) + ' of ' + str(group['other_meetings']):>22}"
        )
    skipped = ", ".join(f"{k}={v}" for k, v in report["skipped"].items())
    lines.append(f"skipped queries: {skipped}")
    lines.append(f"ties: {method['rank_rule']}")
    return "\n".join(lines)


def _fixed(value: float | None) -> str:
    return "-" if value is None else f"{value:.6f}"
