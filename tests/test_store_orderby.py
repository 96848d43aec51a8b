"""The ORDER BY guard: every ordered read ends in the primary key of the rows it returns.

DESIGN: "Chronological reads always end their ORDER BY in the primary key, and a test
fails any that does not." ORDER BY start_time alone let Postgres return tied segments
in physical order, which a delete-then-reinsert reshuffled, which moved chunk
boundaries (methodology, 471.983). The guard reads every statement in
harness/store/sql.py and, through the ast module, every string literal in
harness/store/**, so a query written anywhere in the store is checked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness.store
from harness.store import sql

STORE_DIR = Path(harness.store.__file__).parent

_ORDER_BY = re.compile(r"\border\s+by\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"\b(?:limit|offset|fetch|for|union|intersect|except|window)\b|;", re.IGNORECASE)
_TABLE_REF = re.compile(r"\b(from|join)\s+(\w+)(?:\s+(?:as\s+)?(\w+))?", re.IGNORECASE)
_TERM = re.compile(r"(?:(\w+)\.)?(\w+)", re.IGNORECASE)
_TERM_SUFFIX = re.compile(r"\s+(?:asc|desc|nulls\s+first|nulls\s+last)\s*$", re.IGNORECASE)
_NOT_ALIASES = {"on", "where", "join", "inner", "left", "right", "full", "cross", "group", "order",
                "limit", "natural", "using", "having", "union", "window", "offset"}


def _strip_literals(statement: str) -> str:
    return re.sub(r"'(?:[^']|'')*'", "''", statement)


def _flatten(text: str) -> tuple[str, list[str]]:
    """Top-level text with each parenthesised group replaced by ``()``, and the groups."""
    out: list[str] = []
    groups: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                groups.append(text[start:i])
                out.append("()")
                continue
        if depth == 0:
            out.append(ch)
    return "".join(out), groups


def _check_scope(text: str, outer: dict[str, str], problems: list[str]) -> None:
    flat, groups = _flatten(text)
    aliases = dict(outer)
    grain: str | None = None
    for m in _TABLE_REF.finditer(flat):
        table = m.group(2).lower()
        aliases[table] = table
        alias = (m.group(3) or "").lower()
        if alias and alias not in _NOT_ALIASES:
            aliases[alias] = table
        if grain is None and m.group(1).lower() == "from":
            grain = table
    for group in groups:
        _check_scope(group, aliases, problems)
    for m in _ORDER_BY.finditer(flat):
        rest = flat[m.end():]
        end = _CLAUSE_END.search(rest)
        terms = [t.strip() for t in (rest[: end.start()] if end else rest).split(",")]
        last = _TERM_SUFFIX.sub("", terms[-1]).strip()
        clause = ", ".join(terms)
        term = _TERM.fullmatch(last)
        if grain is None:
            problems.append(f"ORDER BY {clause}: no FROM table in its scope to take a primary key from")
            continue
        if grain not in sql.PRIMARY_KEYS:
            problems.append(f"ORDER BY {clause}: table {grain!r} has no primary key in sql.PRIMARY_KEYS")
            continue
        pk = sql.PRIMARY_KEYS[grain]
        if term is None:
            problems.append(f"ORDER BY {clause}: ends in an expression, not {grain}.{pk}")
            continue
        qualifier, column = term.group(1), term.group(2).lower()
        table = aliases.get(qualifier.lower()) if qualifier else grain
        if table != grain or column != pk:
            problems.append(f"ORDER BY {clause}: ends in {last!r}, not the primary key {grain}.{pk} "
                            "of the rows returned; append it so ties have one order")


def order_by_violations(statement: str) -> list[str]:
    """Every ORDER BY (in any subquery too) that does not end in its row table's key."""
    problems: list[str] = []
    _check_scope(_strip_literals(statement), {}, problems)
    return problems


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_literals(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every non-docstring string literal in a module that has an ORDER BY.

    An f-string is read with each interpolation replaced by ``x``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = _docstring_nodes(tree)
    inside_fstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            for value in node.values:
                inside_fstrings.add(id(value))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(value.value)
                else:
                    parts.append("x")
            text = "".join(parts)
            if _ORDER_BY.search(text):
                yield node.lineno, text
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and id(node) not in inside_fstrings and _ORDER_BY.search(node.value)):
            yield node.lineno, node.value


def literal_violations(root: Path) -> list[str]:
    return [f"{path.relative_to(root.parent)}:{line}: {problem}"
            for path in sorted(root.rglob("*.py"))
            for line, text in sql_literals(path)
            for problem in order_by_violations(text)]


# -- the guard applied to the store -----------------------------------------------------


def test_every_statement_constant_orders_by_its_primary_key_last() -> None:
    problems = {name: order_by_violations(text) for name, text in sql.statements().items()}
    assert {name: p for name, p in problems.items() if p} == {}


def test_guard_reads_the_ordered_reads_it_exists_for() -> None:
    # Not vacuous: the guard sees the chronological read and the other ordered reads.
    ordered = {name for name, text in sql.statements().items() if _ORDER_BY.search(text)}
    assert {"SELECT_SEGMENTS_CHRONOLOGICAL", "SELECT_ALL_SEGMENTS_BY_TURN", "SELECT_MEDIA_FILES",
            "SELECT_FILES_IN_PERIOD", "SELECT_UNDATED_FILES"} <= ordered
    assert sql.SELECT_SEGMENTS_CHRONOLOGICAL.split("ORDER BY")[1].split() == [
        "s.start_time,", "s.end_time,", "s.id"]


def test_every_sql_literal_in_the_store_package_orders_by_its_primary_key_last() -> None:
    assert literal_violations(STORE_DIR) == []
    lines = [line for path in STORE_DIR.rglob("*.py") for line, _ in sql_literals(path)]
    assert len(lines) >= 5, "the AST scan found fewer ordered statements than sql.py holds"


# -- the guard catches what it must -----------------------------------------------------

BAD = [
    # the methodology's bug: start_time alone
    "SELECT id, text FROM transcript_segment WHERE file_uuid = ? ORDER BY start_time",
    # start and end tie too (two segments over the same span)
    "SELECT id FROM transcript_segment ORDER BY start_time, end_time",
    # the key present but not last
    "SELECT s.id FROM transcript_segment s ORDER BY s.id, s.start_time",
    # a joined table's key is not the key of the rows returned
    "SELECT s.id FROM transcript_segment s JOIN speaker sp ON sp.id = s.speaker_id "
    "ORDER BY s.start_time, s.end_time, sp.id",
    "SELECT file_uuid FROM media_file ORDER BY recorded_date DESC",
    "SELECT id, name FROM speaker ORDER BY name",
    # inside a subquery
    "SELECT m.file_uuid FROM media_file m WHERE m.file_uuid IN "
    "(SELECT s.file_uuid FROM transcript_segment s ORDER BY s.start_time LIMIT 1) ORDER BY m.file_uuid",
    # ends in an expression
    "SELECT id FROM transcript_segment ORDER BY start_time, (id)",
    # a table the guard does not know the key of
    "SELECT name FROM other_table ORDER BY name",
]

GOOD = [
    "SELECT id FROM transcript_segment WHERE file_uuid = ? ORDER BY start_time, end_time, id",
    "SELECT s.id FROM transcript_segment AS s ORDER BY s.start_time ASC, s.end_time, s.id DESC",
    "SELECT s.id FROM transcript_segment s JOIN speaker sp ON sp.id = s.speaker_id "
    "ORDER BY sp.name, s.start_time, s.id",
    "select file_uuid from media_file order by recorded_date nulls last, file_uuid",
    "SELECT id FROM speaker WHERE name = 'ORDER BY name' ORDER BY name, id LIMIT 5",
    "SELECT COUNT(*) FROM transcript_segment",
]


@pytest.mark.parametrize("statement", BAD)
def test_guard_fails_an_order_by_that_does_not_end_in_the_primary_key(statement: str) -> None:
    assert order_by_violations(statement) != []


@pytest.mark.parametrize("statement", GOOD)
def test_guard_passes_a_total_order(statement: str) -> None:
    assert order_by_violations(statement) == []


def test_ast_scan_catches_a_bad_query_written_outside_sql_py(tmp_path: Path) -> None:
    package = tmp_path / "store"
    package.mkdir()
    (package / "rogue.py").write_text(
        '"""A docstring may say ORDER BY start_time without being a query."""\n'
        'def segments(conn, f):\n'
        '    return conn.execute("SELECT id FROM transcript_segment WHERE file_uuid = ? "\n'
        '                        "ORDER BY start_time", (f,))\n'
        'def by_end(conn, column):\n'
        '    return conn.execute(f"SELECT id FROM transcript_segment ORDER BY {column}, end_time")\n'
        'FINE = "SELECT id FROM speaker ORDER BY name, id"\n',
        encoding="utf-8")
    problems = literal_violations(package)
    assert len(problems) == 2
    assert problems[0].startswith("store/rogue.py:")
    assert any("'start_time'" in p for p in problems) and any("'end_time'" in p for p in problems)
