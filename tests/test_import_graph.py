"""The package reads like the data flow: imports run one way (DESIGN.md, docs/architecture.md).

The graph is read from the AST of every module under harness/, so an import inside a
function, a method or an ``if TYPE_CHECKING:`` block counts exactly like one at the top
of the file: "no circle, not even through imports inside functions". An edge is the
module an import names (``from harness.index import chunking`` is an edge to
``harness.index.chunking``); a parent package a Python import also initialises is not
an edge of its own.

Checked here:

* no import circle anywhere in harness/;
* each stage imports only from earlier stages and the shared foundation (``harness``,
  ``harness.model``, ``harness.errors``, ``harness.inputfiles``, ``harness.outputfiles``, ``harness.retries``);
  ``harness.cli``/``harness.commands`` (the CLI) may import anything and nothing imports them;
  jobs/ is outside the package;
* the stage order is the one docs/architecture.md draws, so the diagram cannot drift;
* inside index, the building blocks come before index/opensearch, which comes before
  index/ingest, and the Celery app is imported by no module of the index stage (the
  coordinator never reaches it) and only from inside a function (celery is an extra).

The first tests run the same checks on small packages written here, so each check is
shown to fail on the thing it forbids.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARCHITECTURE_MD = REPO / "docs" / "architecture.md"

# The stages in the order data travels. ``bench`` runs one arm, between report (which renders
# and writes what it measures) and sweep (which fans arms out); DESIGN.md. ``reproduction`` reads
# what bench and sweep wrote and sets it beside the methodology's tables.
STAGES: tuple[str, ...] = ("corpora", "synthetic", "store", "index", "state", "retrieval", "judge", "metrics",
                           "answers", "report", "bench", "sweep", "reproduction")
# What every stage may import: the package root (``__version__``), the shared types, the errors,
# the one reader of input files (a folder or bad bytes where a file is expected: exit 4), its writer
# counterpart (an output that cannot be written: exit 9), the one retry policy (tenacity, with the
# injected clock and sleep the retry tests drive), and the artefact stores (a folder or an S3 bucket:
# the sweep's arm files and the ingest's shards).
FOUNDATION: frozenset[str] = frozenset({"harness", "harness.model", "harness.errors", "harness.inputfiles",
                                        "harness.outputfiles", "harness.retries", "harness.objectstore",
                                        "harness.machinecache"})
# The CLI: enters configuration and may import any stage; no stage imports it. harness.devicecheck is a
# program of its own (python -m, the GPU images' build check): it too imports stages and nothing imports it.
ENTRYPOINTS: tuple[str, ...] = ("harness.__main__", "harness.cli", "harness.commands", "harness.settings",
                                "harness.devicecheck")
# Sub-stages of index, in import order: building blocks, the stack backend, ingest.
INDEX_LAYERS: tuple[str, ...] = ("harness.index", "harness.index.opensearch", "harness.index.ingest")
CELERY_APP = "harness.index.ingest.tasks"


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    in_function: bool


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under ``root/package``."""
    names: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module an import of ``name`` lands in: itself, or the package that defines the name."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, modules: Mapping[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            targets: list[str | None] = []
            if isinstance(child, ast.Import):
                targets = [_resolve(alias.name, modules) for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, *([child.module] if child.module else [])])
                for alias in child.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in modules else _resolve(base, modules))
            found.extend(Import(t, child.lineno, in_function) for t in targets if t and t != module)
            visit(child, nested)

    visit(tree, False)
    return found


def import_graph(root: Path, package: str = "harness") -> dict[str, list[Import]]:
    """Every module of ``package`` -> the package modules it imports, anywhere in its AST."""
    modules = module_names(root, package)
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def import_circles(graph: Mapping[str, Iterable[Import]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each as a sorted list."""
    edges = {m: sorted({i.target for i in imports}) for m, imports in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return sorted(circles)


def _is_entrypoint(module: str) -> bool:
    return any(module == e or module.startswith(e + ".") for e in ENTRYPOINTS)


def stage_of(module: str) -> str | None:
    """The stage a module belongs to (None: foundation or CLI)."""
    if module in FOUNDATION or _is_entrypoint(module):
        return None
    return module.split(".")[1]


def stage_violations(graph: Mapping[str, Iterable[Import]], stages: tuple[str, ...] = STAGES) -> list[str]:
    problems = []
    for module, imports in sorted(graph.items()):
        if _is_entrypoint(module):
            continue
        mine = stage_of(module)
        if mine is not None and mine not in stages:
            problems.append(f"{module}: stage {mine!r} is not in the stage order {stages}; place it there")
            continue
        for imp in imports:
            where = f"{module}:{imp.line}{' (inside a function)' if imp.in_function else ''}"
            if _is_entrypoint(imp.target):
                problems.append(f"{where} imports the CLI module {imp.target}")
                continue
            theirs = stage_of(imp.target)
            if theirs is None:
                continue
            if mine is None:
                problems.append(f"{where}: the foundation module imports the stage module {imp.target}")
            elif theirs not in stages or stages.index(theirs) > stages.index(mine):
                problems.append(f"{where}: stage {mine} imports {imp.target} of the later stage {theirs}")
    return problems


def _layer(module: str, layers: tuple[str, ...]) -> int | None:
    matches = [i for i, layer in enumerate(layers) if module == layer or module.startswith(layer + ".")]
    return max(matches) if matches else None


def layer_violations(graph: Mapping[str, Iterable[Import]], layers: tuple[str, ...] = INDEX_LAYERS) -> list[str]:
    """Imports from a later sub-stage of a stage into an earlier one."""
    problems = []
    for module, imports in sorted(graph.items()):
        mine = _layer(module, layers)
        if mine is None:
            continue
        for imp in imports:
            theirs = _layer(imp.target, layers)
            if theirs is not None and theirs > mine:
                problems.append(f"{module}:{imp.line} ({layers[mine]}) imports {imp.target} ({layers[theirs]})")
    return problems


# -- the checks, shown to fail on small packages -----------------------------------------------


def _package(tmp_path: Path, files: Mapping[str, str]) -> dict[str, list[Import]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(tmp_path, "harness")


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    graph = _package(tmp_path, {
        "harness/__init__.py": "",
        "harness/index/__init__.py": "",
        "harness/index/a.py": "from harness.index.b import g\n",
        "harness/index/b.py": "def g():\n    from harness.index import a\n    return a\n",
        "harness/index/c.py": "import harness.index.a\n",
    })
    assert [i.in_function for i in graph["harness.index.b"]] == [True]
    assert import_circles(graph) == [["harness.index.a", "harness.index.b"]]


def test_relative_and_type_checking_imports_count(tmp_path: Path) -> None:
    graph = _package(tmp_path, {
        "harness/__init__.py": "",
        "harness/store/__init__.py": "from .base import X\n",
        "harness/store/base.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import Y\nX = 1\n",
    })
    assert {i.target for i in graph["harness.store"]} == {"harness.store.base"}
    assert import_circles(graph) == [["harness.store", "harness.store.base"]]


def test_a_stage_importing_a_later_stage_or_the_cli_is_refused(tmp_path: Path) -> None:
    graph = _package(tmp_path, {
        "harness/__init__.py": "",
        "harness/model.py": "",
        "harness/cli.py": "from harness.sweep import x\n",
        "harness/index/__init__.py": "def f():\n    from harness.report.results import r\n",
        "harness/report/__init__.py": "",
        "harness/report/results.py": "from harness.index import f\nfrom harness.model import M\n",
        "harness/sweep/__init__.py": "from harness import cli\nx = 1\n",
        "harness/newstage/__init__.py": "",
    })
    assert stage_violations(graph) == [
        "harness.index:2 (inside a function): stage index imports harness.report.results of the later stage report",
        "harness.newstage: stage 'newstage' is not in the stage order " + str(STAGES) + "; place it there",
        "harness.sweep:1 imports the CLI module harness.cli",
    ]


def test_a_building_block_importing_ingest_is_refused(tmp_path: Path) -> None:
    graph = _package(tmp_path, {
        "harness/__init__.py": "",
        "harness/index/__init__.py": "",
        "harness/index/documents.py": "from harness.index.ingest.sinks import S\n",
        "harness/index/opensearch/__init__.py": "",
        "harness/index/opensearch/writer.py": "from harness.index.documents import D\n",
        "harness/index/ingest/__init__.py": "",
        "harness/index/ingest/sinks.py": "from harness.index.opensearch.writer import w\n",
    })
    assert layer_violations(graph) == [
        "harness.index.documents:1 (harness.index) imports harness.index.ingest.sinks (harness.index.ingest)"]


# -- the checks on harness/ ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> dict[str, list[Import]]:
    return import_graph(REPO)


def test_the_graph_sees_the_whole_package(graph: dict[str, list[Import]]) -> None:
    assert len(graph) == len(list((REPO / "harness").rglob("*.py")))
    assert any(i.in_function for imports in graph.values() for i in imports)  # lazy imports are read
    assert "harness.state.build" in graph and "harness.index.ingest.coordinator" in graph


def test_there_is_no_import_circle_in_harness(graph: dict[str, list[Import]]) -> None:
    assert import_circles(graph) == []


def test_each_stage_imports_only_from_earlier_stages_and_the_model(graph: dict[str, list[Import]]) -> None:
    assert stage_violations(graph) == []


def test_every_stage_folder_is_in_the_stage_order() -> None:
    folders = {p.name for p in (REPO / "harness").iterdir() if (p / "__init__.py").is_file()}
    assert folders - {"commands"} <= set(STAGES)


def test_the_architecture_doc_draws_the_same_stage_order() -> None:
    text = ARCHITECTURE_MD.read_text(encoding="utf-8")
    match = re.search(rf"^{STAGES[0]} -> .* -> {STAGES[-1]}$", text, re.MULTILINE)
    assert match, "docs/architecture.md no longer has the one-line stage order this test reads"
    assert tuple(s.strip("() ") for s in match.group(0).split("->")) == STAGES


def test_inside_index_imports_run_blocks_then_opensearch_then_ingest(graph: dict[str, list[Import]]) -> None:
    assert layer_violations(graph) == []


def test_the_celery_app_imports_the_coordinator_and_no_index_module_imports_it(
        graph: dict[str, list[Import]]) -> None:
    assert "harness.index.ingest.coordinator" in {i.target for i in graph[CELERY_APP]}
    importers = {(m, i.in_function) for m, imports in graph.items() for i in imports if i.target == CELERY_APP}
    assert importers == {("harness.state.ingest", True)}
