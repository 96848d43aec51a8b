"""The methodology's transcribed numbers: each is printed on the line it cites.

``methodology_tables.json`` holds numbers and short labels only, each row with the line of
``reference/methodology.txt`` it came from. When the reference is present (``../shared/reference``
beside the repository), every transcribed value must be printed on its cited line: a number as
one of the numbers on that line (not a substring of a longer one), a word as text on it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.reproduction.methodology import load_tables, numbers_on, parse_value

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO.parent / "shared" / "reference" / "methodology.txt"


def test_parse_value_reads_the_printed_forms() -> None:
    assert parse_value("−0.0003").number == pytest.approx(-0.0003)
    assert parse_value("+0.0063").number == pytest.approx(0.0063)
    assert parse_value("1,576").number == 1576.0
    assert parse_value("62.5%").number == pytest.approx(0.625)
    assert parse_value("−18.8%").kind == "percent"
    assert parse_value("12.1×").number == pytest.approx(12.1)
    assert parse_value("0.00005").decimals == 5
    assert parse_value("loss on both").kind == "word"


def test_numbers_on_a_line_are_whole_tokens() -> None:
    assert numbers_on("12	0.0934 (+0.0125)	204.4 ms") == ["12", "0.0934", "+0.0125", "204.4"]
    assert "0.1" not in numbers_on("0.1052")


def test_every_table_row_and_column_is_consistent() -> None:
    tables = load_tables()
    assert len({t.id for t in tables.tables}) == len(tables.tables)
    for table in tables.tables:
        assert len({r.key for r in table.rows}) == len(table.rows), table.id
        for row in table.rows:
            assert set(row.values) <= set(table.columns), (table.id, row.key)


def test_every_transcribed_value_is_printed_on_its_cited_line() -> None:
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} is absent: the transcription cannot be checked here")
    lines = REFERENCE.read_text(encoding="utf-8").split("\n")
    checked = 0
    for table in load_tables().tables:
        for row in table.rows:
            printed = lines[row.line - 1]
            for column, text in row.values.items():
                where = f"{table.id}/{row.key}/{column} line {row.line}"
                if parse_value(text).kind == "word":
                    assert text in printed, f"{where}: {text!r} not in {printed!r}"
                else:
                    assert text in numbers_on(printed), f"{where}: {text!r} not among {numbers_on(printed)}"
                checked += 1
    assert checked > 300
