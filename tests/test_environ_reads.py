"""Library code never reads the environment (DESIGN.md: configuration enters once, at the CLI or a
jobs/ entrypoint, as one settings model, harness.settings.Settings).

Every module under harness/ outside the CLI (harness/cli.py, harness/commands/) is scanned with
the AST for os.environ, os.getenv and friends, however os was imported. What remains is listed
in ALLOWED with how many uses and why; a listed module with fewer uses than listed fails too,
so the list can only get shorter.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRYPOINTS = ("harness/cli.py", "harness/commands/")
NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})

ALLOWED: dict[str, tuple[int, str]] = {
    "harness/index/ingest/tasks.py": (
        6, "the Celery app is the workers' entrypoint (celery -A harness.index.ingest.tasks): its broker is "
           "fixed when the module loads, and a worker's stack addresses (Endpoints) come from the environment "
           "it was started with. It cannot use Settings: that lives in harness.commands, which no stage "
           "imports (docs/architecture.md)"),
    "harness/index/embed.py": (
        5, "writes, not reads: setdefault of the Hugging Face offline/quiet switches just before "
           "sentence-transformers is imported, which those libraries read at import; every process that "
           "loads a model (CLI, jobs, Celery workers, tests) passes through here"),
}


def environ_uses(source: str) -> list[int]:
    """Line numbers of every use of os.environ/os.getenv/... in ``source`` (import aliases included)."""
    tree = ast.parse(source)
    os_names = {"os"} | {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                         for alias in node.names if alias.name == "os"}
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in NAMES and isinstance(node.value, ast.Name)
                and node.value.id in os_names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            lines.extend(node.lineno for alias in node.names if alias.name in NAMES)
    return sorted(lines)


def library_uses() -> dict[str, list[int]]:
    found = {}
    for path in sorted((REPO / "harness").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(ENTRYPOINTS):
            continue
        uses = environ_uses(path.read_text(encoding="utf-8"))
        if uses:
            found[rel] = uses
    return found


def test_no_library_module_reads_the_environment_unless_listed() -> None:
    found = library_uses()
    unlisted = {rel: lines for rel, lines in found.items() if rel not in ALLOWED}
    assert unlisted == {}, ("pass these down from the CLI or a jobs/ entrypoint (harness.settings) "
                            f"instead of reading os.environ: {unlisted}")
    grown = {rel: (len(lines), ALLOWED[rel][0]) for rel, lines in found.items() if len(lines) > ALLOWED[rel][0]}
    assert grown == {}, f"more environment uses than ALLOWED lists (found, listed): {grown}"


def test_every_allowed_module_still_reads_as_many() -> None:
    found = library_uses()
    shrunk = {rel: (len(found.get(rel, [])), n) for rel, (n, _) in ALLOWED.items() if len(found.get(rel, [])) < n}
    assert shrunk == {}, f"fewer environment uses than listed (found, listed): lower or drop them in ALLOWED: {shrunk}"


def test_the_scan_sees_every_spelling() -> None:
    source = ("import os\nimport os as o\nfrom os import getenv, path\n"
              "a = os.environ['X']\nb = o.getenv('Y')\nc = os.environ.get\nd = os.path.join('a')\n"
              "os.putenv('Z', '1')\n")
    assert environ_uses(source) == [3, 4, 5, 6, 8]
    assert environ_uses("import os\nx = os.sep\n") == []


def test_the_entrypoints_read_the_settings_model_not_os_environ() -> None:
    # The CLI and jobs/ enter configuration through harness.settings.Settings only.
    files = [REPO / "harness" / "cli.py", *sorted((REPO / "harness" / "commands").glob("*.py")),
             *sorted((REPO / "jobs").glob("*.py"))]
    found = {p.relative_to(REPO).as_posix(): uses for p in files
             if (uses := environ_uses(p.read_text(encoding="utf-8")))}
    assert found == {}, f"read these through harness.settings.Settings instead: {found}"
