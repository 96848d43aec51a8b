"""Which queues chunk, and whether the workers stack/celery.sh starts serve them.

Methodology, "The workers that index had no punkt": the nltk mount was on every worker
except the two that index, so eager (host) and celery (worker) built different indexes.
The assertion here is derived, not listed: "which tasks chunk" from the call graph of
harness/index/ingest/coordinator.py and tasks.py, "which queue serves a task" from the Celery routes,
"which queues have workers" from stack/celery.sh. A task moved to another queue keeps
the check honest. Also: Celery Beat is never configured or started.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytest.importorskip("celery")

from harness.index.ingest import coordinator, tasks
from harness.index.ingest.messages import DEFAULT_QUEUES

REPO = Path(__file__).resolve().parents[1]
CELERY_SH = REPO / "stack" / "celery.sh"
WORKERS_YAML = REPO / "charts" / "ragsweep" / "templates" / "workers.yaml"
CHUNKERS = {"meeting_documents", "chunk_meeting", "split_words_into_sentences"}


def _called_names(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            if isinstance(call.func, ast.Name):
                names.add(call.func.id)
            elif isinstance(call.func, ast.Attribute):
                names.add(call.func.attr)
    return names


def chunking_functions(module_path: Path) -> set[str]:
    """Top-level functions of a module that reach a chunker through calls inside it."""
    tree = ast.parse(module_path.read_text(encoding="utf-8"))
    calls = {n.name: _called_names(n) for n in tree.body if isinstance(n, ast.FunctionDef)}
    reaching = set(CHUNKERS)
    changed = True
    while changed:
        changed = False
        for name, called in calls.items():
            if name not in reaching and called & reaching:
                reaching.add(name)
                changed = True
    return reaching & set(calls)


def chunking_tasks() -> set[str]:
    """Celery task names whose function calls a chunking function of the coordinator."""
    chunkers = chunking_functions(Path(coordinator.__file__))
    tree = ast.parse(Path(tasks.__file__).read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.func.attr == "task"
                    and _called_names(node) & chunkers):
                name = next(k.value for k in deco.keywords if k.arg == "name")
                assert isinstance(name, ast.Constant)
                found.add(str(name.value))
    return found


def worker_queues() -> set[str]:
    """The queues stack/celery.sh starts a worker for by default."""
    match = re.search(r'CELERY_QUEUES="\$\{RAGSWEEP_CELERY_QUEUES:-([^}]*)\}"', CELERY_SH.read_text())
    assert match, "stack/celery.sh no longer declares its default queues the way this test reads them"
    return set(match.group(1).split(","))


def _commands(path: Path) -> str:
    """A shell script without its comment lines."""
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))


def test_the_call_graph_finds_the_chunking_task() -> None:
    assert "index_file" in chunking_functions(Path(coordinator.__file__))
    assert "start_reindex" not in chunking_functions(Path(coordinator.__file__))
    assert chunking_tasks() == {"ragsweep.index_file"}


def test_every_chunking_task_is_routed_to_a_queue_the_stack_serves() -> None:
    routes = tasks.app.conf.task_routes
    served = worker_queues()
    for task in chunking_tasks():
        assert routes[task]["queue"] in served, f"{task} runs on {routes[task]['queue']}, served: {served}"
    assert routes["ragsweep.index_file"]["queue"] == DEFAULT_QUEUES["embedding"] == "embedding"
    assert routes["ragsweep.reindex"]["queue"] == routes["ragsweep.finish_reindex"]["queue"] == "cpu"
    assert {r["queue"] for r in routes.values()} | {tasks.app.conf.task_default_queue} <= served


def test_workers_run_the_projects_python_on_the_task_module() -> None:
    script = _commands(CELERY_SH)
    assert '"$REPO_ROOT/.venv/bin/python"' in script
    assert re.search(r'CELERY_APP=harness\.index\.ingest\.tasks\b', script)
    assert "-m celery -A \"$CELERY_APP\" worker" in script and "--pool solo" in script


def test_the_charts_workers_run_the_app_module_the_stack_runs() -> None:
    # the chart once named harness.store.tasks, a module that never existed
    apps = set(re.findall(r"celery,? -A,? ([\w.]+)", WORKERS_YAML.read_text(encoding="utf-8")))
    assert apps == {tasks.__name__} == {"harness.index.ingest.tasks"}, apps
    assert re.search(rf"CELERY_APP={re.escape(tasks.__name__)}\n", CELERY_SH.read_text(encoding="utf-8"))


def test_celery_beat_is_never_configured_or_started() -> None:
    assert tasks.app.conf.beat_schedule == {}
    for script in ("celery.sh", "up.sh", "down.sh", "lib.sh"):
        assert not re.search(r"\bbeat\b", _commands(REPO / "stack" / script), re.IGNORECASE), script


def test_messages_are_acknowledged_on_receipt() -> None:
    # a killed worker loses its message instead of redelivering it into a later run
    assert tasks.app.conf.task_acks_late is False
    assert tasks.app.conf.accept_content == ["json"]
