"""explanations.json: every entry addresses cells that exist, and the most specific entry wins.

The explanations are data; a typo in a table, row or column name would silently explain
nothing, so each name (or pattern) must match something in methodology_tables.json. The
choice among entries and the "unexplained" outcome are checked on a small hand-made set.
"""

from __future__ import annotations

from harness.reproduction.compare import THRESHOLD, compare_table, difference
from harness.reproduction.derive import Missing, TableOurs
from harness.reproduction.explanations import (
    Explanation,
    Explanations,
    explain,
    fill,
    load_explanations,
    matches,
)
from harness.reproduction.methodology import MethodologyRow, MethodologyTable, load_tables, parse_value


def test_every_entry_names_tables_rows_and_columns_that_exist() -> None:
    tables = load_tables().tables
    entries = load_explanations().explanations
    assert len({e.id for e in entries}) == len(entries)
    for entry in entries:
        covered = [t for t in tables if any(p == "*" or matches(p, t.id) for p in entry.tables)]
        assert covered, f"{entry.id}: tables {entry.tables} match no methodology table"
        for pattern in entry.rows:
            assert any(pattern == "*" or matches(pattern, r.key) for t in covered for r in t.rows), \
                f"{entry.id}: row {pattern!r} is in none of its tables"
        for pattern in entry.columns:
            assert any(pattern == "*" or matches(pattern, c) for t in covered for c in t.columns), \
                f"{entry.id}: column {pattern!r} is in none of its tables"


SET = Explanations.model_validate({"schema": "ragsweep.reproduction-explanations/1", "explanations": [
    {"id": "any", "tables": ["t"], "why": "anything in t."},
    {"id": "columns", "tables": ["t"], "columns": ["syn*"], "why": "a synthetic column."},
    {"id": "row", "tables": ["t"], "rows": ["a"], "why": "row a.", "cites": ["docs", "absent"]},
]})


def test_star_is_the_only_wildcard() -> None:
    assert matches("queries[lookup]", "queries[lookup]") and not matches("queries[lookup]", "queriesl")
    assert matches("synthetic*", "synthetic multi_file Δ") and not matches("synthetic*", "qmsum")


def test_the_most_specific_entry_wins() -> None:
    def chosen(row: str, column: str) -> str | None:
        found = explain(SET, "t", row, column)
        return None if found is None else found.id

    assert chosen("a", "synthetic") == "row"  # an exact row beats a column pattern
    assert chosen("b", "synthetic") == "columns"  # a column pattern beats *
    assert chosen("b", "qmsum") == "any"
    assert explain(SET, "other", "a", "qmsum") is None


def test_fill_appends_only_the_cited_values_the_results_carry() -> None:
    entry = SET.explanations[2]
    assert fill(entry, {"docs": "90"}) == "row a (ours: docs 90)."
    assert fill(entry, {}) == "row a."
    assert fill(Explanation(id="x", tables=["t"], why="plain."), {"docs": "1"}) == "plain."


def test_a_difference_counts_over_the_threshold_in_the_values_own_unit() -> None:
    assert difference(0.1052 + THRESHOLD, parse_value("0.1052"))[1] is False  # exactly 0.01: not over
    assert difference(0.1153, parse_value("0.1052"))[1] is True
    assert difference(0.630, parse_value("62.5%"))[1] is False  # half a point
    assert difference(0.640, parse_value("62.5%"))[1] is True
    assert difference(1577.0, parse_value("1,576")) == (1.0, True)  # a count differs by any whole number
    assert difference("split", parse_value("loss on both")) == (None, True)
    assert difference(Missing("x"), parse_value("0.1")) == (None, False)


def test_an_uncovered_difference_is_unexplained_and_a_covered_one_is_named() -> None:
    table = MethodologyTable(id="t", title="t", columns=["qmsum", "synthetic"], rows=[
        MethodologyRow(key="b", line=1, values={"qmsum": "0.1000", "synthetic": "0.2000"})])
    ours = TableOurs(rows={"b": {"qmsum": 0.1500, "synthetic": 0.2050}}, source="here")
    only_synthetic = Explanations.model_validate({"schema": "ragsweep.reproduction-explanations/1",
                                                  "explanations": [SET.explanations[1].model_dump()]})
    result = compare_table(table, ours, only_synthetic, {})
    (row,) = result.rows
    assert row.unexplained == ["qmsum"]  # +0.05, and no entry covers the qmsum column
    assert [c.differs for c in row.cells] == [True, False]  # synthetic is +0.005: within the threshold
    assert result.counts() == (2, 1, 1)
    assert result.notes == {}
