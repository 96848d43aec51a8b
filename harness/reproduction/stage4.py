"""Stage 4 of the methodology: the digest leg, the router's confusion and the answerers.

Which results stand for which table:

* the digest leg (its lines 470-477), the arithmetic from the summarize class to the digest tier
  (481-489) and the router's confusion (479): a bench run at ``--stage route``, its metrics.json
  ``digest_leg`` block (written by :func:`harness.bench.routing.digest_summary`) and the
  per_query.json beside it for each query's corpus and class; the one scoring the most corpora,
  then the first by path;
* the reference answerer per rule (213-219) and the answerers side by side (497-501): per
  answerer (none, product, reference), the first bench run by path whose ``answers`` block is that
  answerer's and scores synthetic aggregation queries.

**Leakage** is the methodology's "lookup-class queries that leaked to summarize" (its lines 479,
487): queries of the lookup and multi_file classes (the classes whose route keeps the chunk tier
alone; the methodology's router sent every multi_file query to lookup) that the router sends to
summarize, over every lookup and multi_file query scored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr

from harness.answers.results import AnswersBlock
from harness.inputfiles import validate_input
from harness.reproduction.compare import TableResult
from harness.reproduction.derive import Missing, NotMeasured, Ours, TableOurs
from harness.reproduction.methodology import MethodologyTable, MethodologyTables
from harness.reproduction.render import Section
from harness.reproduction.sources import Reader, Run

Compared = Callable[[str, TableOurs | NotMeasured], TableResult | tuple[MethodologyTable, NotMeasured]]

ROUTE_COMMAND = "ragsweep bench --state STATE --stage route --control-name route --out {bench}/route --workers 2"
ANSWERS_COMMAND = ("ragsweep bench --state STATE --corpus synthetic --answerer {name} --control-name answers-{name} "
                   "--out {bench}/answers-{name} --workers 2")
ANSWERERS = ("none", "product", "reference")
# the answerers table's rule columns -> the rule's prefix in the answers rows
RULE_COLUMNS: dict[str, str] = {"R3 count": "R3-", "R4 list": "R4-", "R5 events": "R5-", "R6 speaker": "R6-",
                                "R7 temporal": "R7-"}
CHUNK_ONLY_CLASSES = ("lookup", "multi_file")
NO_PRE_V391 = ("ragsweep's product answerer has one version, which filters R7 by recorded_date as the "
               "methodology's v391 does: there is no pre-v391 variant to run")


# --- the digest_leg block, as harness.bench.routing writes it ---------------------------------------------

class DigestRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    routed_class: StrictStr
    quoted_phrase: StrictBool
    tiers: list[StrictStr]


class DigestLeg(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    queries_scored: StrictInt
    routed_to_digest_tier: StrictInt
    tier_returned_something: StrictInt
    digest_found_gold_file: StrictInt
    chunk_leg_gold_in_top10_files: StrictInt
    rescued: StrictInt
    router_confusion: dict[StrictStr, dict[StrictStr, StrictInt]]
    per_query: dict[StrictStr, DigestRecord]


class _RouteBlocks(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")
    digest_leg: DigestLeg


@dataclass(frozen=True)
class RouteRun:
    path: str
    leg: DigestLeg
    classes: Mapping[str, tuple[str, str]] | None  # qid -> (corpus, class), from per_query.json
    per_query_path: str


def route_run(reader: Reader, runs: Sequence[Run]) -> tuple[RouteRun | None, list[Run]]:
    """The route run the Stage 4 tables read (most corpora scored, then first by path), and the others."""
    matching = sorted((r for r in runs if r.retrieval.get("stage") == "route"),
                      key=lambda r: (-len({row.corpus for row in r.doc.rows}), r.path))
    if not matching:
        return None, []
    run = matching[0]
    block = (run.doc.model_extra or {}).get("digest_leg")
    leg = validate_input(_RouteBlocks, {"digest_leg": block}, run.path).digest_leg
    per_query = Path(run.path).parent / "per_query.json"
    classes = None
    if per_query.is_file():
        doc = reader.per_query(per_query)
        classes = {qid: (entry.corpus, entry.query_class) for qid, entry in doc.queries.items()}
    return RouteRun(run.path, leg, classes, str(per_query)), matching[1:]


def _share(numerator: int, denominator: int, what: str) -> Ours:
    return Missing(f"no {what}") if denominator == 0 else numerator / denominator


def _source(route: RouteRun, others: Sequence[Run], what: str) -> tuple[str, tuple[str, ...]]:
    notes = (f"also present, not used: {', '.join(f'`{o.path}`' for o in others)}",) if others else ()
    return f"`{route.path}` ({what})", notes


def digest_table(table: MethodologyTable, route: RouteRun, others: Sequence[Run]) -> TableOurs:
    leg = route.leg
    routed, found, rescued = leg.routed_to_digest_tier, leg.digest_found_gold_file, leg.rescued
    values: dict[str, Ours] = {
        "queries_scored": float(leg.queries_scored),
        "routed_to_digest_tier": float(routed),
        "summarize_class": float(sum(leg.router_confusion.get("summarize", {}).values())),
        "tier_returned_something": float(leg.tier_returned_something),
        "tier_returned_share": _share(leg.tier_returned_something, routed, "query routed to the digest tier"),
        "digest_found_gold_file": float(found),
        "chunk_leg_gold_in_top10_files": float(leg.chunk_leg_gold_in_top10_files),
        "rescued": float(rescued),
        "rescued_share_of_routed": _share(rescued, routed, "query routed to the digest tier"),
        "digest_found_already_in_chunk_top10": float(found - rescued),
        "rescued_share_of_scored": _share(rescued, leg.queries_scored, "query scored"),
    }
    rows = {row.key: {c: values.get(row.key, Missing("not recorded")) for c in table.columns} for row in table.rows}
    source, notes = _source(route, others, "its digest_leg block; the digest hits are recorded beside the ranked "
                                           "list, never merged into it")
    return TableOurs(rows=rows, source=source, notes=notes)


def _breakdown(counts: Counter[str]) -> str:
    return ", ".join(f"{n:,} {what}" for what, n in sorted(counts.items()))


def arithmetic_table(table: MethodologyTable, route: RouteRun, others: Sequence[Run]) -> TableOurs:
    leg, classes = route.leg, route.classes
    confusion = leg.router_confusion
    leaked = sum(confusion.get(c, {}).get("summarize", 0) for c in CHUNK_ONLY_CLASSES)
    chunk_only = sum(sum(confusion.get(c, {}).values()) for c in CHUNK_ONLY_CLASSES)
    values: dict[str, Ours] = {"leakage": _share(leaked, chunk_only, "lookup or multi_file query scored")}
    notes: list[str] = [
        f"leakage: lookup- and multi_file-class queries routed to summarize, over every lookup and multi_file "
        f"query scored: ours {leaked:,} / {chunk_only:,}. The methodology prints no denominator: its 2 leaks are "
        "0.160% of its matrix's 1,247 lookup and multi_file queries and 0.121% of its 1,651 scored; 0.104% would "
        "be 2 of about 1,923"]
    if classes is None:
        why = Missing(f"no per_query.json beside the route run ({route.per_query_path}): each query's class "
                      "is not known")
        for key in ("summarize_class", "quoted_phrase", "summarize_with_tier", "leaked_to_summarize"):
            values[key] = why
    else:
        def record(qid: str) -> DigestRecord | None:
            return leg.per_query.get(qid)

        summarize = [q for q, (_c, k) in classes.items() if k == "summarize"]
        routed_summarize = [q for q in summarize if (r := record(q)) is not None and r.routed_class == "summarize"]
        quoted = [q for q in routed_summarize if (r := record(q)) is not None and r.quoted_phrase]
        with_tier = [q for q in summarize if (r := record(q)) is not None and "digest" in r.tiers]
        leaked_ids = [q for q, (_c, k) in classes.items()
                      if k != "summarize" and (r := record(q)) is not None and "digest" in r.tiers]
        values |= {"summarize_class": float(len(summarize)), "quoted_phrase": -float(len(quoted)),
                   "summarize_with_tier": float(len(with_tier)), "leaked_to_summarize": float(len(leaked_ids))}
        kinds = Counter(f"{classes[q][0]} {classes[q][1]}" for q in leaked_ids)
        routed = sum(1 for r in leg.per_query.values() if "digest" in r.tiers)
        elsewhere = len(summarize) - len(routed_summarize)
        notes.insert(0, f"ours step by step: {len(summarize):,} summarize-class − {elsewhere:,} the router sends "
                        f"elsewhere − {len(quoted):,} with a quoted phrase = {len(with_tier):,}; "
                        f"+ {len(leaked_ids):,} of other classes routed to summarize without a quoted phrase "
                        f"({_breakdown(kinds)}) = {routed:,} routed to the digest tier")
    values["routed_to_digest_tier"] = float(leg.routed_to_digest_tier)
    rows = {row.key: {c: values.get(row.key, Missing("not recorded")) for c in table.columns} for row in table.rows}
    source, more = _source(route, others, f"its digest_leg block, and `{route.per_query_path}` for each query's "
                                          "class")
    return TableOurs(rows=rows, source=source, notes=(*notes, *more))


def confusion_table(table: MethodologyTable, route: RouteRun, others: Sequence[Run]) -> TableOurs:
    confusion = route.leg.router_confusion
    rows: dict[str, dict[str, Ours]] = {}
    for row in table.rows:
        got = confusion.get(row.key)
        cells: dict[str, Ours] = {}
        for column in table.columns:
            if got is None:
                cells[column] = Missing(f"no {row.key} query scored")
            elif column == "n":
                cells[column] = float(sum(got.values()))
            else:
                cells[column] = float(got.get(column.removeprefix("routed "), 0))
        rows[row.key] = cells
    notes = ["rows are each query's class, columns the class the router gave it (harness.retrieval.router). QMSum "
             "labels no classes: its lookup and summarize are ragsweep's own rule (harness.corpora.classify), so "
             "its rows say where two of ragsweep's rules disagree over the same text, not how the router does "
             "against human labels; the synthetic rows are against the class the generator wrote each query for"]
    if route.classes is not None:
        split: dict[tuple[str, str], Counter[str]] = {}
        for qid, key in sorted(route.classes.items()):
            record = route.leg.per_query.get(qid)
            split.setdefault(key, Counter())[record.routed_class if record is not None else "not routed"] += 1
        notes.append("by corpus: " + "; ".join(
            f"{corpus} {query_class} {sum(got.values()):,} → {_breakdown(got)}"
            for (corpus, query_class), got in sorted(split.items())))
    source, more = _source(route, others, "its digest_leg.router_confusion")
    return TableOurs(rows=rows, source=source, notes=(*notes, *more))


# --- the answerers ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AnswerRun:
    path: str
    answers: AnswersBlock


def answer_runs(runs: Sequence[Run], answerer: str) -> tuple[AnswerRun | None, list[AnswerRun]]:
    """The first bench run (by path) whose answers are the answerer's over synthetic aggregation queries."""
    matching = [AnswerRun(r.path, r.doc.answers) for r in runs
                if r.doc.answers is not None and r.doc.answers.answerer.name == answerer
                and any(a.corpus == "synthetic" and a.query_class == "aggregation" for a in r.doc.answers.rows)]
    return (matching[0], matching[1:]) if matching else (None, [])


def answers_table(table: MethodologyTable, run: AnswerRun, others: Sequence[AnswerRun]) -> TableOurs:
    answers = run.answers
    by_rule = {r.rule: r for r in answers.rows
               if (r.corpus, r.tier, r.query_class) == ("synthetic", "A", "aggregation")}
    rows: dict[str, dict[str, Ours]] = {}
    for row in table.rows:
        found = by_rule.get(row.key)
        cells: dict[str, Ours] = {}
        for column in table.columns:
            if found is None:
                cells[column] = Missing(f"no synthetic aggregation {row.key} row")
            elif column == "n":
                cells[column] = float(found.n)
            elif column == "unans.":
                cells[column] = float(found.unanswered)
            else:
                value = found.measures.get(column)
                cells[column] = Missing(f"no {column}") if value is None else value
        rows[row.key] = cells
    notes = (f"also present, not used: {', '.join(f'`{o.path}`' for o in others)}",) if others else ()
    source = f"`{run.path}` (answerer {answers.answerer.name}, search backend {answers.answerer.search_backend})"
    return TableOurs(rows=rows, source=source, notes=notes)


def _rule_cell(answers: AnswersBlock, prefix: str) -> Ours:
    records = [r for r in answers.per_query.values() if r.corpus == "synthetic" and (r.rule or "").startswith(prefix)]
    if not records:
        return Missing(f"no {prefix.rstrip('-')} query scored")
    exact = sum(1 for r in records if r.measures.get("EM") == 1.0)
    return f"{exact}/{len(records)}"


def answerers_table(table: MethodologyTable, chosen: Mapping[str, AnswerRun | None], bench: Path) -> TableOurs:
    rows: dict[str, dict[str, Ours]] = {}
    for row in table.rows:
        if row.key not in ANSWERERS:
            rows[row.key] = dict.fromkeys(table.columns, Missing(NO_PRE_V391))
            continue
        run = chosen.get(row.key)
        if run is None:
            command = ANSWERS_COMMAND.format(name=row.key, bench=bench)
            rows[row.key] = dict.fromkeys(table.columns, Missing(f"no bench run with --answerer {row.key}: run "
                                                                 f"`{command}`"))
            continue
        all_row = next((r for r in run.answers.rows if (r.corpus, r.query_class, r.rule)
                        == ("synthetic", "aggregation", "all")), None)
        em = None if all_row is None else all_row.measures.get("EM")
        cells: dict[str, Ours] = {"EM": Missing("no synthetic aggregation all row") if em is None else em}
        cells |= {column: _rule_cell(run.answers, prefix) for column, prefix in RULE_COLUMNS.items()}
        rows[row.key] = cells
    used = [f"`{run.path}` ({name})" for name, run in chosen.items() if run is not None]
    source = ", ".join(used) + "; a rule's cell is exact / scored"
    return TableOurs(rows=rows, source=source)


def stage4_sections(tables: MethodologyTables, reader: Reader, runs: Sequence[Run], bench: Path,
                    compared: Compared) -> list[Section]:
    route, others = route_run(reader, runs)
    missing = NotMeasured(f"not measured: no bench run at --stage route under {bench}; run "
                          f"`{ROUTE_COMMAND.format(bench=bench)}`")
    routing = [compared(table_id, missing if route is None else derive(tables.table(table_id), route, others))
               for table_id, derive in (("stage4-digest-leg", digest_table),
                                        ("stage4-digest-arithmetic", arithmetic_table),
                                        ("stage4-router-confusion", confusion_table))]
    chosen: dict[str, AnswerRun | None] = {}
    unused: dict[str, list[AnswerRun]] = {}
    for name in ANSWERERS:
        chosen[name], unused[name] = answer_runs(runs, name)
    reference = chosen["reference"]
    answers = [
        compared("answers-reference", NotMeasured(
            f"not measured: no bench run with --answerer reference scoring synthetic aggregation queries under "
            f"{bench}; run `{ANSWERS_COMMAND.format(name='reference', bench=bench)}`") if reference is None
            else answers_table(tables.table("answers-reference"), reference, unused["reference"])),
        compared("answers-answerers", NotMeasured(
            f"not measured: no bench run scoring synthetic aggregation queries under {bench}; run "
            + ", ".join(f"`{ANSWERS_COMMAND.format(name=n, bench=bench)}`" for n in ANSWERERS))
            if all(r is None for r in chosen.values())
            else answerers_table(tables.table("answers-answerers"), chosen, bench)),
    ]
    return [Section("Stage 4: the router and the digest leg", routing),
            Section("Stage 4: the answerers on the aggregation class", answers)]
