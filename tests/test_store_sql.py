"""The statements module: one home for SQL, portable placeholders, keys that match the DDL."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import harness.store
from harness.store import sql

STORE_DIR = Path(harness.store.__file__).parent
# Statements as the store writes them: upper-case keywords at the start of a literal.
_LOOKS_LIKE_SQL = re.compile(
    r"^\s*(?:SELECT\b.*\bFROM\b|INSERT\s+INTO\b|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\b"
    r"|CREATE\s+(?:TABLE|INDEX|UNIQUE)\b|PRAGMA\b|BEGIN\b|COMMIT\b|ROLLBACK\b)", re.DOTALL)


def test_sql_lives_only_in_the_statements_module() -> None:
    elsewhere = []
    for path in sorted(STORE_DIR.rglob("*.py")):
        if path.name == "sql.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _LOOKS_LIKE_SQL.match(
                    node.value):
                elsewhere.append(f"{path.name}:{node.lineno}")
    assert elsewhere == []


def test_primary_keys_are_the_ones_the_ddl_declares() -> None:
    declared = {}
    for statement in sql.SCHEMA:
        table = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", statement)
        if table:
            key = re.search(r"^\s*(\w+) \w+ PRIMARY KEY", statement, re.MULTILINE)
            assert key, f"{table.group(1)} declares no single-column primary key"
            declared[table.group(1)] = key.group(1)
    assert declared == sql.PRIMARY_KEYS


def test_statements_carry_no_wall_clock() -> None:
    clocks = re.compile(r"current_(?:timestamp|date|time)|\bnow\s*\(|datetime\s*\(", re.IGNORECASE)
    assert [name for name, text in sql.statements().items() if clocks.search(text)] == []


def _bare_question_marks(statement: str) -> int:
    return re.sub(r"'(?:[^']|'')*'", "''", statement).count("?")


@pytest.mark.parametrize("name", sorted(sql.statements()))
def test_format_paramstyle_turns_each_placeholder_into_percent_s(name: str) -> None:
    statement = sql.statements()[name]
    rendered = sql.render(statement, "format")
    assert rendered.count("%s") == _bare_question_marks(statement)
    assert "?" not in re.sub(r"'(?:[^']|'')*'", "''", rendered)
    assert sql.render(statement, "qmark") == statement


def test_format_paramstyle_doubles_literal_percent_and_leaves_quoted_marks() -> None:
    assert sql.render("SELECT a FROM t WHERE b LIKE '50%?' AND c = ?", "format") == (
        "SELECT a FROM t WHERE b LIKE '50%%?' AND c = %s")
    assert sql.render(sql.SELECT_PHRASE_CANDIDATES, "format").strip().endswith("LIKE %s ESCAPE '!'")


def test_unknown_paramstyle_is_refused() -> None:
    with pytest.raises(ValueError, match="paramstyle"):
        sql.render(sql.COUNT_FILES, "named")
