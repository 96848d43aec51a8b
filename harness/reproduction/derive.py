"""Our side of each table, read off the results files.

A table's cells are addressed by the methodology's row key and column name. A column name
says what it is in the field's words, and :func:`column_spec` reads it: an optional corpus
(``qmsum``, ``synthetic``), an optional class (default ``all``), an optional measure (default
nDCG@10), then ``Δ`` (the arm minus its family control) or ``Δ%`` (that, over the control) or
nothing (the value). So ``"synthetic multi_file Δ"`` is the multi_file nDCG@10 delta on the
synthetic corpus, and ``"qmsum nDCG@5"`` the all-class nDCG@5 on QMSum.

A cell we cannot fill is :class:`Missing` with a one-line reason, never a zero or a blank.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.corpora.selfreport import SelfReport
from harness.reproduction.methodology import MethodologyTable
from harness.reproduction.sources import Comparison, Run
from harness.sweep.comparison import Cell, FamilyEntry

CORPORA = ("qmsum", "synthetic")
CLASSES = ("lookup", "summarize", "multi_file", "aggregation", "all")
MEASURES = ("nDCG@5", "nDCG@10", "nDCG@20", "R@5", "R@10", "R@20", "MRR", "fileR@1", "fileR@10")


@dataclass(frozen=True)
class Missing:
    why: str


Ours = float | str | Missing


@dataclass(frozen=True)
class TableOurs:
    """Our cells for one table, where they come from, and any one-line caveats."""

    rows: Mapping[str, Mapping[str, Ours]]
    source: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotMeasured:
    """A whole table with no results file behind it: one line saying what to run."""

    why: str


@dataclass(frozen=True)
class ColumnSpec:
    corpus: str | None
    query_class: str
    measure: str
    kind: Literal["value", "delta", "percent", "word"]


def column_spec(name: str) -> ColumnSpec:
    words = name.split()
    kind: Literal["value", "delta", "percent", "word"] = "value"
    if words and words[-1] in ("Δ", "Δ%"):
        kind = "delta" if words.pop() == "Δ" else "percent"
    elif words and words[0] == "Δ":  # "Δ qmsum": the agreement tables' spelling
        kind = "delta"
        words.pop(0)
    corpus = words.pop(0) if words and words[0] in CORPORA else None
    query_class = words.pop(0) if words and words[0] in CLASSES else "all"
    measure = words.pop(0) if words and words[0] in MEASURES else "nDCG@10"
    if words:
        return ColumnSpec(corpus, query_class, measure, "word")
    return ColumnSpec(corpus, query_class, measure, kind)


# --- the sweep families: fusion, budget, pool, diversity --------------------------------------------------

def _cell(cells: list[Cell], corpus: str, query_class: str, measure: str) -> Cell | None:
    return next((c for c in cells if (c.corpus, c.query_class, c.measure) == (corpus, query_class, measure)), None)


def _control_value(family: FamilyEntry, corpus: str, query_class: str, measure: str) -> float | None:
    for entry in family.arms:
        cell = _cell(entry.cells, corpus, query_class, measure)
        if cell is not None:
            return cell.control
    return None


def _family_cell(family: FamilyEntry, corpora: list[str], row: str, column: str) -> Ours:
    spec = column_spec(column)
    if spec.kind == "word":  # the verdict
        if row == family.control:
            return "control"
        entry = family.arm_entry(row)
        if entry is None:
            return Missing("not in the sweep")
        if len(corpora) < 2:
            return Missing(f"single-corpus sweep ({', '.join(corpora)}): no verdict")
        return entry.verdict
    if spec.corpus is None or spec.corpus not in corpora:
        return Missing(f"{spec.corpus or 'the corpus'} not in the sweep")
    if row == family.control:
        if spec.kind != "value":
            return 0.0
        value = _control_value(family, spec.corpus, spec.query_class, spec.measure)
        return Missing("no arm compared with the control") if value is None else value
    entry = family.arm_entry(row)
    if entry is None:
        return Missing("not in the sweep")
    if entry.status != "complete":
        return Missing(f"arm {entry.status}")
    cell = _cell(entry.cells, spec.corpus, spec.query_class, spec.measure)
    if cell is None:
        return Missing(f"no {spec.corpus} {spec.query_class} {spec.measure} row")
    if spec.kind == "delta":
        return cell.delta
    if spec.kind == "percent":
        return Missing("control is 0") if cell.control == 0 else cell.delta / cell.control
    return cell.arm


def family_table(table: MethodologyTable, comparison: Comparison, family_name: str,
                 others: list[Comparison]) -> TableOurs:
    family = comparison.doc.family(family_name)
    assert family is not None
    corpora = list(comparison.doc.corpora)
    # a row the methodology has no values for (an arm it did not run) shows every column of ours
    rows = {row.key: {column: _family_cell(family, corpora, row.key, column) for column in row.values or table.columns}
            for row in table.rows}
    notes = [f"{corpus} was not measured in this sweep: run `make sweep ARMS={family_name}` with QMSum fetched"
             for corpus in CORPORA if corpus not in corpora]
    for contrast in family.contrasts:  # the decomposition: pairs compared directly, beside every arm vs the control
        cells = [c for c in contrast.cells if (c.query_class, c.measure) == ("all", "nDCG@10")]
        if cells:
            notes.append(f"{contrast.arm} against {contrast.baseline}, all-class nDCG@10 Δ: " + ", ".join(
                f"{c.corpus} {c.delta:+.4f} (p {c.p:.3g})" if c.p is not None else f"{c.corpus} {c.delta:+.4f}"
                for c in cells))
    if others:
        notes.append("also present, not used: " + ", ".join(f"`{o.path}`" for o in others))
    source = f"`{comparison.path}` (sweep {comparison.sweep_id}, family {family_name}, control {family.control})"
    return TableOurs(rows=rows, source=source, notes=tuple(notes))


# --- the corpus tables and the stage-1 scopes --------------------------------------------------------------

def _count(block: Mapping[str, Any], key: str, what: str) -> Ours:
    value = block.get(key)
    return Missing(f"no {what} recorded") if value is None else float(value)


def composition_table(table: MethodologyTable, run: Run) -> TableOurs:
    qmsum = run.corpus("qmsum") or {}
    composition = qmsum.get("composition") or {}
    queries = qmsum.get("queries") or {}
    by_class = queries.get("by_class")
    domains = composition.get("domains") or {}
    values: dict[str, Ours] = {
        "files": _count(composition, "files", "file count"),
        "files[Product]": _count(domains, "Product", "Product count"),
        "queries": Missing("no queries by class recorded") if by_class is None else float(sum(by_class.values())),
        "queries[lookup]": Missing("no queries by class recorded") if by_class is None
        else float(by_class.get("lookup", 0)),
        "queries[summarize]": Missing("no queries by class recorded") if by_class is None
        else float(by_class.get("summarize", 0)),
        "dropped_unjudgeable": _count(queries, "dropped_unjudgeable", "dropped count"),
        "turns": _count(composition, "turns", "turn count"),
        "files_with_real_timings": _count(composition, "files_with_real_timings", "real-timings count"),
    }
    unrecorded = Missing("real AMI/ICSI word timings are outside the project: the AMI and ICSI corpora cannot be "
                         "fetched here, so no QMSum meeting is aligned to real timings and none is counted per domain")
    rows = {row.key: {"value": values.get(row.key, unrecorded)} for row in table.rows}
    return TableOurs(rows=rows, source=f"`{run.path}` (its qmsum corpus block)")


def bm25_table(table: MethodologyTable, path: str, report: SelfReport) -> TableOurs:
    rows: dict[str, dict[str, Ours]] = {}
    for row in table.rows:
        group = report.by_domain.get(row.key)
        if group is None:
            rows[row.key] = dict.fromkeys(row.values, Missing(f"no {row.key} domain in the report"))
            continue
        values: dict[str, float | None] = {"R@1": group.r_at_1, "median rank": group.median_gold_rank,
                                           "others ≥90%": group.mean_others_within_90pct,
                                           "other meetings": float(group.other_meetings)}
        rows[row.key] = {c: Missing("no scored query in the domain") if values.get(c) is None
                         else float(values[c] or 0.0) for c in row.values}
    method = report.method
    source = (f"`{path}` ({method.get('library')} {method.get('library_version')}, {method.get('method')}, "
              f"k1={method.get('k1')}, b={method.get('b')}; pooled: {report.pooled.meetings} meetings, "
              f"{report.pooled.queries} queries)")
    return TableOurs(rows=rows, source=source)


def state_table(table: MethodologyTable, run: Run) -> TableOurs:
    index = run.doc.index or {}
    queries = run.doc.queries or {}
    scored = queries.get("scored")
    judged = queries.get("judged_documents")

    def number(value: Any, what: str) -> Ours:
        return Missing(f"no {what} recorded") if value is None else float(value)

    def files(corpus: str) -> Ours:
        block = run.corpus(corpus)
        if block is None:
            return Missing(f"{corpus} not in this state")
        return _count(block.get("composition") or {}, "files", f"{corpus} file count")

    values: dict[str, Ours] = {
        "files": number(index.get("files"), "index files"),
        "files[qmsum]": files("qmsum"),
        "files[synthetic]": files("synthetic"),
        "documents": number(index.get("documents"), "index documents"),
        "queries_scored": number(scored, "scored queries"),
        "dropped_unjudgeable": number(queries.get("dropped_unjudgeable"), "dropped count"),
        "unanswered": number(queries.get("unanswered"), "unanswered count"),
        "judged_per_query": Missing("no judged documents recorded") if not scored or judged is None
        else judged / scored,
        "embedding_dimension": number(index.get("embedding_dimension"), "embedding dimension"),
    }
    rows = {row.key: {"value": values.get(row.key, Missing("not recorded"))} for row in table.rows}
    return TableOurs(rows=rows, source=f"`{run.path}` (index and queries blocks)")


def scope_table(table: MethodologyTable, run: Run, others: list[Run]) -> TableOurs:
    by_class = {r.query_class: r for r in run.doc.rows if r.corpus == "qmsum"}
    rows: dict[str, dict[str, Ours]] = {}
    for row in table.rows:
        found = by_class.get(row.key)
        cells: dict[str, Ours] = {}
        for column in row.values:
            if found is None:
                cells[column] = Missing(f"no qmsum {row.key} row")
            elif column == "n":
                cells[column] = float(found.n)
            else:
                value = found.metrics.get(column)
                cells[column] = Missing(f"no {column}") if value is None else value
        rows[row.key] = cells
    retrieval = run.retrieval
    notes = (f"also present, not used: {', '.join(f'`{o.path}`' for o in others)}",) if others else ()
    source = (f"`{run.path}` (stage {retrieval.get('stage')}, scope {retrieval.get('scope')}, "
              f"size {retrieval.get('size')}, backend {retrieval.get('backend', 'embedded')})")
    return TableOurs(rows=rows, source=source, notes=notes)


@dataclass(frozen=True)
class Facts:
    """Values from the results that an explanation may name (``{index_documents}``)."""

    values: dict[str, str] = field(default_factory=dict)


def facts_from(run: Run | None) -> Facts:
    if run is None:
        return Facts()
    index = run.doc.index or {}
    out: dict[str, str] = {}
    for key in ("files", "documents", "chunk_documents", "digest_documents", "embedding_dimension",
                "configured_embedding_model", "embedding_verdict"):
        if index.get(key) is not None:
            out[f"index_{key}"] = f"{index[key]:,}" if isinstance(index[key], int) else str(index[key])
    backend = index.get("backend")
    if isinstance(backend, Mapping) and backend.get("name"):
        out["backend"] = str(backend["name"])
    for corpus in CORPORA:
        block = run.corpus(corpus)
        if block is not None:
            out[f"{corpus}_version"] = str(block.get("version"))
            out[f"{corpus}_files"] = str(block.get("composition", {}).get("files"))
    return Facts(out)
