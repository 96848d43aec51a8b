"""Our cell beside the methodology's: the difference, whether it counts, and the sentence for it.

A difference counts when it is over :data:`THRESHOLD` in the value's own unit (a percent is
compared as a fraction, so 0.01 is one percentage point; a count differs by any whole
number), or, for a word (a verdict, a sign, an arm's name), when the words differ. A cell we
could not fill is not a difference: it is shown as not measured, with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.reproduction.derive import Missing, Ours, TableOurs
from harness.reproduction.explanations import Explanations, explain, fill
from harness.reproduction.methodology import MethodologyTable, Value, parse_value

THRESHOLD = 0.01


@dataclass(frozen=True)
class CellResult:
    column: str
    ours: Ours | None  # None: the table has no such cell of ours (the methodology prints one alone)
    theirs: Value | None
    difference: float | None
    differs: bool
    explanation: str | None  # the entry's id, when the cell differs and one covers it


@dataclass(frozen=True)
class RowResult:
    key: str
    label: str | None
    cells: tuple[CellResult, ...]

    @property
    def unexplained(self) -> list[str]:
        return [c.column for c in self.cells if c.differs and c.explanation is None]


@dataclass(frozen=True)
class TableResult:
    table: MethodologyTable
    ours: TableOurs
    rows: tuple[RowResult, ...]
    notes: Mapping[str, str]  # explanation id -> its sentence, filled, in first-use order

    def counts(self) -> tuple[int, int, int]:
        """(cells compared, cells differing, of those unexplained)."""
        cells = [c for r in self.rows for c in r.cells]
        compared = [c for c in cells if c.theirs is not None and c.ours is not None
                    and not isinstance(c.ours, Missing)]
        differing = [c for c in compared if c.differs]
        return len(compared), len(differing), sum(1 for c in differing if c.explanation is None)


def difference(ours: Ours | None, theirs: Value | None) -> tuple[float | None, bool]:
    if ours is None or theirs is None or isinstance(ours, Missing):
        return None, False
    if theirs.number is None or isinstance(ours, str):
        return None, str(ours) != theirs.text
    delta = float(ours) - theirs.number
    return delta, abs(delta) > THRESHOLD


def compare_table(table: MethodologyTable, ours: TableOurs, explanations: Explanations,
                  facts: Mapping[str, str]) -> TableResult:
    rows: list[RowResult] = []
    notes: dict[str, str] = {}
    for row in table.rows:
        mine = ours.rows.get(row.key, {})
        cells: list[CellResult] = []
        for column in table.columns:
            theirs = parse_value(row.values[column]) if column in row.values else None
            value = mine.get(column)
            if theirs is None and value is None:
                continue
            diff, differs = difference(value, theirs)
            chosen = explain(explanations, table.id, row.key, column) if differs else None
            if chosen is not None:
                notes.setdefault(chosen.id, fill(chosen, facts))
            cells.append(CellResult(column, value, theirs, diff, differs, None if chosen is None else chosen.id))
        rows.append(RowResult(row.key, row.label, tuple(cells)))
    return TableResult(table=table, ours=ours, rows=tuple(rows), notes=notes)
