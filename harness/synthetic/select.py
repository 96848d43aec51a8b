"""Budgeted selection by gold closure.

A query's *closure* is the set of meetings that decide its gold: its gold file(s) for
lookup and multi_file; every file mentioning the phrase for R3/R4/R5; every session of the
team and kind for R6; every file mentioning the phrase, in the month or not, for R7 (the
out-of-period mentions are what make an unfiltered count wrong). A selection keeps a query
only when its whole closure is selected, so every kept answer is the full corpus's answer
(selection recomputes them anyway, and records any that moved).

The greedy, deterministic at every tie:

1. *quotas*: while some class (lookup, multi_file) or rule is under its quota, add the
   closure of the open query that keeps the most under-quota queries per meeting added
   (ties: fewer meetings, then query id);
2. *fill*: spend what is left of the budget the same way, counting every query kept;
3. *pad*: if no closure fits any more, add the remaining meetings in id order.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.errors import UsageError
from harness.synthetic.answers import recompute
from harness.synthetic.formats import (
    MANIFEST,
    PLANTS,
    QUERIES,
    RULE_SPEAKER_TOP,
    RULE_TEMPORAL,
    RULES,
    NativeCorpus,
    NativeQuery,
    canonical_json,
    meeting_path,
)
from harness.synthetic.textscan import scan

TIE_CREDIT = 0.01  # a query kept beyond its quota still breaks ties in phase 1


@dataclass(frozen=True)
class Quotas:
    lookup: int = 50
    multi_file: int = 25
    per_rule: int = 4

    def of(self, group: str) -> int:
        if group == "lookup":
            return self.lookup
        if group == "multi_file":
            return self.multi_file
        return self.per_rule

    def as_dict(self) -> dict[str, int]:
        return {"lookup": self.lookup, "multi_file": self.multi_file, **dict.fromkeys(RULES, self.per_rule)}


@dataclass(frozen=True)
class Selection:
    budget: int
    quotas: Quotas
    selected: list[str]  # sorted meeting ids
    steps: list[dict[str, Any]]  # the greedy's moves, in order
    kept: list[str]  # sorted query ids whose closure is selected
    dropped: list[dict[str, Any]]  # every other query, with its reason


def group_of(q: NativeQuery) -> str:
    return q.rule if q.query_class == "aggregation" and q.rule else q.query_class


class _Greedy:
    def __init__(self, corpus: NativeCorpus, budget: int) -> None:
        self.queries = {q.id: q for q in corpus.queries}
        self.closure = {q.id: frozenset(q.closure) for q in corpus.queries}
        self.touching: dict[str, list[str]] = {}
        for qid in sorted(self.closure):
            for m in sorted(self.closure[qid]):
                self.touching.setdefault(m, []).append(qid)
        self.missing = {qid: len(c) for qid, c in self.closure.items()}
        self.selected: set[str] = set()
        self.order: list[str] = []
        self.closed: set[str] = {qid for qid, n in self.missing.items() if n == 0}
        self.kept_by_group: Counter[str] = Counter(group_of(self.queries[q]) for q in self.closed)
        self.budget = budget

    @property
    def left(self) -> int:
        return self.budget - len(self.selected)

    def newly_closed(self, added: frozenset[str]) -> list[str]:
        hits: Counter[str] = Counter()
        for m in added:
            for qid in self.touching.get(m, ()):
                if qid not in self.closed:
                    hits[qid] += 1
        return sorted(qid for qid, n in hits.items() if n == self.missing[qid])

    def add(self, meetings: list[str]) -> list[str]:
        added = frozenset(m for m in meetings if m not in self.selected)
        newly = self.newly_closed(added)
        for m in sorted(added):
            self.selected.add(m)
            self.order.append(m)
            for qid in self.touching.get(m, ()):
                self.missing[qid] -= 1
        for qid in newly:
            self.closed.add(qid)
            self.kept_by_group[group_of(self.queries[qid])] += 1
        return newly

    def best(self, quotas: Quotas | None) -> tuple[str, frozenset[str], list[str]] | None:
        need = {}
        if quotas is not None:
            groups = ["lookup", "multi_file", *RULES]
            need = {g: quotas.of(g) - self.kept_by_group[g] for g in groups}
        best_key: tuple[float, int, str] | None = None
        best: tuple[str, frozenset[str], list[str]] | None = None
        for qid in sorted(self.queries):
            if qid in self.closed or self.missing[qid] > self.left:
                continue
            if quotas is not None and need[group_of(self.queries[qid])] <= 0:
                continue
            added = self.closure[qid] - self.selected
            newly = self.newly_closed(added)
            if quotas is None:
                gain = float(len(newly))
            else:
                per_group = Counter(group_of(self.queries[q]) for q in newly)
                useful = sum(min(max(need[g], 0), n) for g, n in per_group.items())
                gain = useful + TIE_CREDIT * (len(newly) - useful)
            key = (-gain / len(added), len(added), qid)
            if best_key is None or key < best_key:
                best_key, best = key, (qid, added, newly)
        return best


def select(corpus: NativeCorpus, budget: int, quotas: Quotas | None = None) -> Selection:
    """Choose ``budget`` meetings of ``corpus`` by gold closure (see the module docstring)."""
    quotas = quotas or Quotas()
    if budget < 1:
        raise UsageError(f"--budget {budget}: expected at least one meeting")
    if budget > len(corpus.meetings):
        raise UsageError(f"--budget {budget} exceeds the {len(corpus.meetings)} meetings of the source corpus")
    greedy = _Greedy(corpus, budget)
    steps: list[dict[str, Any]] = []
    for phase, phase_quotas in (("quota", quotas), ("fill", None)):
        while greedy.left > 0:
            choice = greedy.best(phase_quotas)
            if choice is None:
                break
            qid, added, _ = choice
            newly = greedy.add(sorted(added))
            steps.append({"added": sorted(added), "kept": newly, "phase": phase, "via": qid})
    if greedy.left > 0:
        pad = [m.meeting_id for m in corpus.meetings if m.meeting_id not in greedy.selected][: greedy.left]
        newly = greedy.add(pad)
        steps.append({"added": pad, "kept": newly, "phase": "pad", "via": None})
    dropped: list[dict[str, Any]] = []
    dates = {m.meeting_id: m.recorded_date for m in corpus.meetings}
    for q in corpus.queries:
        if q.id in greedy.closed:
            continue
        missing = sorted(greedy.closure[q.id] - greedy.selected)
        dropped.append({
            "closure": len(greedy.closure[q.id]),
            "id": q.id,
            "missing": len(missing),
            "query_class": q.query_class,
            "reason": _reason(q, missing, dates),
            "rule": q.rule,
        })
    return Selection(budget, quotas, sorted(greedy.selected), steps, sorted(greedy.closed), dropped)


def _reason(q: NativeQuery, missing: list[str], dates: dict[str, str]) -> str:
    if q.query_class == "lookup":
        return "gold_file_not_selected"
    if q.query_class == "multi_file":
        return "gold_files_not_selected"
    if q.rule == RULE_SPEAKER_TOP:
        return "sessions_not_selected"
    if q.rule == RULE_TEMPORAL:
        outside = [m for m in missing if dates[m][:7] != q.month]
        return "out_of_period_mentions_not_selected" if outside else "in_period_mentions_not_selected"
    return "mentioning_files_not_selected"


def selected_files(source: NativeCorpus, sel: Selection, source_files: dict[str, bytes]) -> tuple[
    dict[str, bytes], dict[str, Any]
]:
    """The files of the selected corpus (manifest included) and the selection report.

    ``source_files`` holds the source's meeting files by relative path; they are copied
    byte for byte, so a meeting has the same sha256 (and file_uuid) in both corpora.
    """
    from harness.synthetic.generator import build_manifest

    chosen = set(sel.selected)
    meetings = [m for m in source.meetings if m.meeting_id in chosen]
    kept = set(sel.kept)
    queries = [q for q in source.queries if q.id in kept]
    occ = scan(meetings, {q.phrase for q in queries if q.phrase})
    records: list[dict[str, Any]] = []
    restated: list[dict[str, Any]] = []
    for q in queries:
        record = q.model_dump()
        if source.manifest.regime is None:  # an easy corpus has no cue keys (its bytes predate regimes)
            del record["attendees"], record["date"]
        if q.query_class == "aggregation":
            r = recompute(q, meetings, occ)
            if r.answer != q.answer or list(r.closure) != list(q.closure):
                restated.append({"after": r.answer, "before": q.answer, "id": q.id})
            record["answer"] = r.answer
            record["closure"] = list(r.closure)
        records.append(record)
    plants = []
    for p in source.plants:
        mentions = [m.model_dump() for m in p.mentions if m.meeting_id in chosen]
        if mentions:
            plants.append({**p.model_dump(), "mentions": mentions})

    files: dict[str, bytes] = {meeting_path(m): source_files[meeting_path(m)] for m in sel.selected}
    files[QUERIES] = canonical_json({"queries": records}, indent=1)
    files[PLANTS] = canonical_json({"plants": plants}, indent=1)
    report = selection_report(source, sel, restated)
    selection_block = {k: report[k] for k in ("budget", "quotas", "source")}
    files[MANIFEST] = canonical_json(
        build_manifest(source.manifest.seed, len(sel.selected), records, files, selection_block,
                       source.manifest.regime), indent=1
    )
    return files, report


def selection_report(source: NativeCorpus, sel: Selection, restated: list[dict[str, Any]]) -> dict[str, Any]:
    by_id = {q.id: q for q in source.queries}
    kept_groups = Counter(group_of(by_id[q]) for q in sel.kept)
    kept_classes = Counter(by_id[q].query_class for q in sel.kept)
    quotas = sel.quotas.as_dict()
    return {
        "answers_restated": restated,
        "budget": sel.budget,
        "dropped": {
            "by_reason": dict(sorted(Counter(d["reason"] for d in sel.dropped).items())),
            "count": len(sel.dropped),
            "queries": sel.dropped,
        },
        "kept": {
            "by_class": {c: kept_classes.get(c, 0) for c in ("lookup", "multi_file", "aggregation")},
            "by_rule": {r: kept_groups.get(r, 0) for r in RULES},
            "count": len(sel.kept),
            "ids": sel.kept,
        },
        "quotas": quotas,
        "quotas_met": all(kept_groups.get(g, 0) >= n for g, n in quotas.items()),
        "selected": sel.selected,
        "source": {
            "manifest_sha256": source.file_sha256.get(MANIFEST),
            "meetings": len(source.meetings),
            "queries": source.manifest.queries,
            "seed": source.manifest.seed,
        },
        "steps": sel.steps,
    }
