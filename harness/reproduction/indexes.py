"""What the index holds: the stage-1 ablation by state, and header against bare body text.

The methodology's stage-1 tables (its lines 382-391) were measured on a QMSum-only index that
embedded the bare chunk text; ours come from the default state, which holds the synthetic corpus
too and embeds the title/date/roster header. Two ablations separate those differences:

* **by state**: the same stage-1 runs on a QMSum-only state, embedding the header and the bare
  body (``make ablation``). A run is QMSum-only when its index holds exactly the QMSum files
  it scores (``index.files`` equals the qmsum block's file count); which text was embedded is the
  run's ``retrieval.embedding_text``. The gap table puts the three states' all-class nDCG@10 beside
  the methodology's at both scopes, and says how much of the corpus-scope gap each closes.
* **by embedded text**: the embedding family (``embed-header`` control, ``embed-body`` arm) over
  both corpora is the methodology's Stage 3 table (index v6 against pre-v6: header against bare
  chunk text, its lines 418-424), read with the sign the methodology prints: header minus body.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.reproduction.derive import Missing, Ours, TableOurs
from harness.reproduction.methodology import MethodologyTable
from harness.reproduction.sources import Comparison, Run
from harness.sweep.comparison import Cell

# The gap table's columns: (column, QMSum-only?, embedded text), in the order the page shows them.
STATES: tuple[tuple[str, bool, str], ...] = (
    ("two-corpus header", False, "header"),
    ("QMSum-only header", True, "header"),
    ("QMSum-only body", True, "body"),
)


def qmsum_only(run: Run) -> bool:
    """True when the run's index holds exactly the QMSum files it scores, nothing else."""
    files = (run.doc.index or {}).get("files")
    qmsum = run.corpus("qmsum")
    return files is not None and qmsum is not None and (qmsum.get("composition") or {}).get("files") == files


def embedded_text(run: Run) -> str:
    return str(run.retrieval.get("embedding_text") or (run.doc.index or {}).get("embedding_text") or "header")


@dataclass(frozen=True)
class Stage1Runs:
    """Per scope, the first bench run (by path) of each state of the gap table, where there is one."""

    by_scope: dict[str, dict[str, Run | None]]
    others: dict[str, dict[str, list[Run]]]

    def run(self, scope: str, column: str) -> Run | None:
        return self.by_scope.get(scope, {}).get(column)


def stage1_runs(runs: Sequence[Run], scopes: Sequence[str]) -> Stage1Runs:
    by_scope: dict[str, dict[str, Run | None]] = {}
    others: dict[str, dict[str, list[Run]]] = {}
    for scope in scopes:
        for column, only, text in STATES:
            matching = [r for r in runs if r.retrieval.get("stage") == "retrieve"
                        and r.retrieval.get("scope") == scope and r.has_rows("qmsum")
                        and qmsum_only(r) == only and embedded_text(r) == text]
            by_scope.setdefault(scope, {})[column] = matching[0] if matching else None
            others.setdefault(scope, {})[column] = matching[1:]
    return Stage1Runs(by_scope, others)


def _all_ndcg10(run: Run | None) -> float | None:
    if run is None:
        return None
    row = next((r for r in run.doc.rows if r.corpus == "qmsum" and r.query_class == "all"), None)
    value = None if row is None else row.metrics.get("nDCG@10")
    return None if value is None else float(value)


def gap_table(table: MethodologyTable, runs: Stage1Runs) -> TableOurs:
    """The three states' all-class nDCG@10 at each scope, and what share of the gap each closes."""
    rows: dict[str, dict[str, Ours]] = {}
    notes: list[str] = []
    for row in table.rows:
        scope = row.key
        cells: dict[str, Ours] = {}
        for column in row.values:
            value = _all_ndcg10(runs.run(scope, column))
            cells[column] = Missing(f"no {column} run at --scope {scope}; run `make ablation`") if value is None \
                else value
        rows[scope] = cells
        theirs = float(row.values[STATES[0][0]])
        base = cells.get(STATES[0][0])
        if not isinstance(base, float) or base == theirs:
            continue
        parts = [f"at {scope} scope the two-corpus state's {base:.4f} is {base - theirs:+.4f} "
                 f"({(base - theirs) / theirs:+.1%}) from the methodology's {theirs:.4f}"]
        for column, _, _ in STATES[1:]:
            other = cells.get(column)
            if isinstance(other, float):
                share = (other - base) / (theirs - base)
                parts.append(f"{column} {other:.4f} " + (f"closes {share:.0%} of it" if share >= 0
                                                          else f"widens it by {-share:.0%}"))
        notes.append("; ".join(parts) + ".")
    used = [r.path for scope in runs.by_scope.values() for r in scope.values() if r is not None]
    spare = [r.path for scope in runs.others.values() for rest in scope.values() for r in rest]
    if spare:
        notes.append("also present, not used: " + ", ".join(f"`{p}`" for p in spare))
    source = ", ".join(f"`{p}`" for p in used) or "no stage-1 bench run"
    return TableOurs(rows=rows, source=f"{source} (stage retrieve, all class, nDCG@10)", notes=tuple(notes))


# --- header against bare body: the embedding family as the methodology's Stage 3 table ---------------------

def _cell(cells: Sequence[Cell], corpus: str, query_class: str, measure: str) -> Cell | None:
    return next((c for c in cells if (c.corpus, c.query_class, c.measure) == (corpus, query_class, measure)), None)


def embedding_table(table: MethodologyTable, comparison: Comparison, body_arm: str = "embed-body") -> TableOurs:
    """Rows ``"<corpus> <class>"``; pre-v6 is the body arm, v6 the header control, every Δ header minus body."""
    family = comparison.doc.family("embedding")
    assert family is not None
    entry = family.arm_entry(body_arm)
    rows: dict[str, dict[str, Ours]] = {}
    for row in table.rows:
        corpus, query_class = row.key.split(" ", 1)
        cells: dict[str, Ours] = {}
        for column in row.values:
            if entry is None or entry.status != "complete":
                cells[column] = Missing(f"{body_arm} {'not in the sweep' if entry is None else entry.status}")
                continue
            measure = "nDCG@10" if column in ("n", "Δ", "nDCG@10 pre-v6", "nDCG@10 v6") \
                else column.removeprefix("Δ ")
            cell = _cell(entry.cells, corpus, query_class, measure)
            if cell is None:
                cells[column] = Missing(f"no {corpus} {query_class} {measure} row")
            elif column == "n":
                cells[column] = float(cell.n_control)
            elif column == "nDCG@10 pre-v6":
                cells[column] = cell.arm
            elif column == "nDCG@10 v6":
                cells[column] = cell.control
            else:
                cells[column] = cell.control - cell.arm
        rows[row.key] = cells
    notes: list[str] = []
    if entry is not None and entry.status == "complete":
        for corpus in comparison.doc.corpora:
            cell = _cell(entry.cells, corpus, "all", "nDCG@10")
            if cell is not None and cell.p_holm is not None:
                notes.append(f"{corpus} all nDCG@10, header minus body {cell.control - cell.arm:+.4f}: "
                             f"{cell.p_method} p {cell.p:.3g}, Holm-adjusted {cell.p_holm:.3g}; "
                             f"the body arm's verdict: {entry.verdict}")
    source = f"`{comparison.path}` (sweep {comparison.sweep_id}, family embedding, control {family.control}, " \
             f"arm {body_arm})"
    return TableOurs(rows=rows, source=source, notes=tuple(notes))
