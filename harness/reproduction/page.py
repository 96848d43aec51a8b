"""Build the reproduction page: find the results, derive our side of each table, compare, render.

Which results stand for which table:

* the sweep families (fusion, budget, pool, diversity): the comparison.json chosen per family
  by :func:`harness.reproduction.sources.choose_sweep`;
* the agreement tables: those families' comparisons, through the sweep stage's analysis;
* the corpus tables: the chosen fusion sweep's control metrics.json when the sweep kept its arm
  files, else the corpus-scope bench run, else the gold-files one;
* the stage-1 scope tables: bench runs at --stage retrieve and --scope corpus / gold-files on the
  default state, and the same on QMSum-only states (header and bare body text) for the ablation
  (:mod:`harness.reproduction.indexes`);
* the embedding table: the embedding family's comparison (header control, bare-body arm);
* the rerank families' notes: each rerank arm's recorded reranker (:mod:`harness.reproduction.reranker`);
* the BM25 domain table: the QMSum self-report beside those runs;
* the Stage 4 tables: a bench run at --stage route and bench runs per answerer
  (:mod:`harness.reproduction.stage4`);
* the metric-library table: computed live on hand-built inputs (:mod:`harness.reproduction.libraries`).

A table with none says so in one line naming what to run. The page lists every file it read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from harness.reproduction.agreement import agreement_tables
from harness.reproduction.compare import TableResult, compare_table
from harness.reproduction.derive import (
    NotMeasured,
    TableOurs,
    bm25_table,
    composition_table,
    facts_from,
    family_table,
    scope_table,
    state_table,
)
from harness.reproduction.explanations import EXPLANATIONS_FILE, explanations_text, load_explanations
from harness.reproduction.indexes import STATES, embedding_table, gap_table, stage1_runs
from harness.reproduction.libraries import TABLE_ID as LIBRARY_TABLE
from harness.reproduction.libraries import library_table
from harness.reproduction.methodology import (
    TABLES_FILE,
    MethodologyTable,
    MethodologyTables,
    load_tables,
    tables_text,
)
from harness.reproduction.render import Section, render_page
from harness.reproduction.reranker import reranker_notes
from harness.reproduction.sources import (
    Comparison,
    Reader,
    ReproductionInputs,
    Run,
    SourceFile,
    bench_runs,
    choose_sweep,
    comparisons,
    control_run,
    one_measurement,
    self_report,
)
from harness.reproduction.stage4 import stage4_sections

# family -> (its tables, the command that measures it)
FAMILY_TABLES: dict[str, tuple[tuple[str, ...], str]] = {
    "fusion": (("fusion-all", "fusion-class"), "make sweep ARMS=fusion"),
    "budget": (("budget",), "make sweep ARMS=budget RERANKER=DIR"),
    "pool": (("pool",), "make sweep ARMS=pool RERANKER=DIR"),
    "diversity": (("diversity",), "make sweep ARMS=diversity RERANKER=DIR"),
}
SCOPE_TABLES: dict[str, str] = {"corpus": "scope-corpus", "gold-files": "scope-gold-files"}
EMBEDDING_COMMAND = "make sweep ARMS=embedding"


@dataclass(frozen=True)
class Page:
    text: str
    sources: tuple[SourceFile, ...]


def _package_file(name: str, text: str) -> SourceFile:
    return SourceFile(f"harness/reproduction/{name}", hashlib.sha256(text.encode("utf-8")).hexdigest())


def _with_notes(ours: TableOurs, notes: tuple[str, ...]) -> TableOurs:
    return TableOurs(rows=ours.rows, source=ours.source, notes=(*notes, *ours.notes))


def build_page(inputs: ReproductionInputs, tables: MethodologyTables | None = None) -> Page:
    tables = tables or load_tables()
    explanations = load_explanations()
    reader = Reader()
    found = comparisons(reader, inputs)
    runs = bench_runs(reader, inputs)
    bm25 = self_report(reader, inputs)

    chosen: dict[str, Comparison | None] = {}
    others: dict[str, list[Comparison]] = {}
    for family in (*FAMILY_TABLES, "embedding"):
        chosen[family], others[family] = choose_sweep(found, family)
    one_measurement(list(chosen.values()))  # one page, one measurement (exit 5)

    stage1 = stage1_runs(runs, tuple(SCOPE_TABLES))
    scope = {s: (stage1.run(s, STATES[0][0]), stage1.others[s][STATES[0][0]]) for s in SCOPE_TABLES}
    fusion = chosen["fusion"]
    state: Run | None = control_run(reader, inputs, fusion, "fusion") if fusion is not None else None
    qmsum_run = next((r for r in (state, scope["corpus"][0], scope["gold-files"][0])
                      if r is not None and r.corpus("qmsum") is not None), None)
    state = state or scope["corpus"][0] or scope["gold-files"][0]
    facts = facts_from(state).values

    def compared(table_id: str, ours: TableOurs | NotMeasured, cited: dict[str, str] | None = None
                 ) -> TableResult | tuple[MethodologyTable, NotMeasured]:
        table = tables.table(table_id)
        if isinstance(ours, NotMeasured):
            return table, ours
        return compare_table(table, ours, explanations, facts if cited is None else cited)

    composition = [
        compared("qmsum-composition", NotMeasured(
            "not measured: no results file includes QMSum; fetch it and run `make sweep ARMS=fusion` "
            "(or `make scopes`)") if qmsum_run is None else composition_table(tables.table("qmsum-composition"),
                                                                             qmsum_run)),
        compared("qmsum-bm25-domains", NotMeasured(
            f"not measured: no QMSum self-report at {inputs.bench_dir}/qmsum-bm25.json; run `make scopes`")
            if bm25 is None else bm25_table(tables.table("qmsum-bm25-domains"), *bm25)),
        compared("corpus-state", NotMeasured(
            "not measured: no metrics.json of a fusion control or a scope run; run `make sweep ARMS=fusion`")
            if state is None else state_table(tables.table("corpus-state"), state)),
    ]
    scopes = []
    for name, table_id in SCOPE_TABLES.items():
        run, rest = scope[name]
        missing = NotMeasured(f"not measured: no bench run at --stage retrieve --scope {name} scoring QMSum "
                              f"under {inputs.bench_dir}; run `make scopes`")
        scopes.append(compared(table_id, missing if run is None else scope_table(tables.table(table_id), run, rest)))
    ablation = []
    for name, table_id in SCOPE_TABLES.items():
        run, column = stage1.run(name, STATES[2][0]), STATES[2][0]
        ablation.append(compared(
            f"{table_id}-qmsum-only",
            NotMeasured(f"not measured: no bench run at --stage retrieve --scope {name} on a QMSum-only state "
                        f"embedding the bare chunk text under {inputs.bench_dir}; run `make ablation`") if run is None
            else scope_table(tables.table(f"{table_id}-qmsum-only"), run, stage1.others[name][column]),
            facts_from(run).values))
    measured = any(r is not None for by_state in stage1.by_scope.values() for r in by_state.values())
    ablation.append(compared("stage1-gap", gap_table(tables.table("stage1-gap"), stage1) if measured else NotMeasured(
        f"not measured: no stage-1 bench run scoring QMSum under {inputs.bench_dir}; run `make scopes ablation`")))
    embedding = chosen["embedding"]
    ablation.append(compared("embedding-v6", NotMeasured(
        f"not measured: no collected sweep with the embedding family's control complete; run `{EMBEDDING_COMMAND}`")
        if embedding is None else embedding_table(tables.table("embedding-v6"), embedding)))
    sections = [Section("QMSum composition and the corpus state", composition),
                Section("Stage 1: corpus scope against gold-files scope", scopes),
                Section("What the index holds: the QMSum-only ablation and the embedded text", ablation)]
    for family, (table_ids, command) in FAMILY_TABLES.items():
        comparison = chosen[family]
        rerank = () if comparison is None else reranker_notes(reader, inputs.sweeps_root, comparison, family)
        family_results = [compared(t, NotMeasured(f"not measured: no collected sweep with the {family} family's "
                                                   f"control complete; run `{command}`") if comparison is None
                                   else _with_notes(family_table(tables.table(t), comparison, family,
                                                                 others[family]), rerank))
                          for t in table_ids]
        sections.append(Section(f"The {family} family", family_results))
    agreement = agreement_tables({t.id: t for t in tables.tables}, chosen)
    sections.append(Section("Do the two corpora agree?", [compared(t, ours) for t, ours in agreement.items()]))
    sections += stage4_sections(tables, reader, runs, inputs.bench_dir, compared)
    sections.append(Section("Metric implementation: libraries on the same input",
                            [compared(LIBRARY_TABLE, library_table(tables.table(LIBRARY_TABLE)))]))

    sources = (*reader.read.values(), _package_file(TABLES_FILE, tables_text()),
               _package_file(EXPLANATIONS_FILE, explanations_text()))
    return Page(render_page(sections, sources), tuple(sources))
