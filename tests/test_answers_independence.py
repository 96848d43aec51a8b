"""Structural guarantees, read from the source: the two parsers share no code, and no
answer path can reach retrieval (so no aggregation runs over a hybrid query body)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ANSWERS = Path(__file__).resolve().parent.parent / "harness" / "answers"
# what both parsers may import from the answers package: data types and the mechanisms
SHARED_ALLOWED = {"harness.answers.model", "harness.answers.mechanisms"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def test_product_imports_nothing_from_reference_and_back() -> None:
    product, reference = _imports(ANSWERS / "product.py"), _imports(ANSWERS / "reference.py")
    assert not any(name.startswith("harness.answers.reference") for name in product)
    assert not any(name.startswith("harness.answers.product") for name in reference)


def _modules(path: Path) -> set[str]:
    """The modules a file imports from (``from m import x`` gives m)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_parsers_share_only_data_types_and_mechanisms() -> None:
    shared = {m for m in _modules(ANSWERS / "product.py") & _modules(ANSWERS / "reference.py")
              if m.startswith("harness.")}
    assert shared <= SHARED_ALLOWED, shared
    # and nothing in the shared modules parses text: no regular expressions at all
    for module in SHARED_ALLOWED:
        assert "re" not in _modules(ANSWERS / f"{module.rsplit('.', 1)[1]}.py"), module


def test_the_parsers_define_their_own_functions() -> None:
    common = _functions(ANSWERS / "product.py") & _functions(ANSWERS / "reference.py")
    # same public shape (parse, answer, mechanisms, __init__), no shared helpers
    assert common <= {"parse", "answer", "mechanisms", "__init__"}, common


@pytest.mark.parametrize("path", sorted(ANSWERS.glob("*.py")), ids=lambda p: p.name)
def test_no_answer_module_reaches_retrieval_or_a_concrete_engine(path: Path) -> None:
    forbidden = ("harness.retrieval", "harness.judge", "harness.metrics", "harness.index.embedded",
                 "harness.store.sqlite", "harness.store.base", "tantivy", "sqlite3", "psycopg", "opensearchpy")
    for name in _imports(path):
        assert not name.startswith(forbidden), f"{path.name} imports {name}"


@pytest.mark.parametrize("path", sorted(ANSWERS.glob("*.py")), ids=lambda p: p.name)
def test_answers_call_only_the_phrase_aggregation_and_store_reads(path: Path) -> None:
    """Method calls on the search backend or store: only the exact mechanisms."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    retrieval_calls = {"bm25", "knn", "retrieve", "search", "vectors", "record", "parse_query", "aggregate"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            assert node.func.attr not in retrieval_calls, f"{path.name}:{node.lineno} calls .{node.func.attr}()"
