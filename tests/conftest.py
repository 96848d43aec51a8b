"""Test-wide set-up: the local stack's connection settings, when `make stack-up` has run.

`make test` starts the real services (stack/up.sh) before pytest; their settings are in
RAGSWEEP_STACK_DIR/stack.env (default var/stack/stack.env). They are loaded here without
overriding anything already set, so integration tests find the services the project's own
scripts started.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def _load_stack_env() -> None:
    env_file = Path(os.environ.get("RAGSWEEP_STACK_DIR") or REPO_ROOT / "var" / "stack") / "stack.env"
    if not env_file.is_file():
        return
    for line in env_file.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):]
        key, sep, value = line.partition("=")
        if sep:
            os.environ.setdefault(key.strip(), value.strip().strip("'\""))


_load_stack_env()


@pytest.fixture(autouse=True, scope="session")
def _embedding_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`ragsweep state build` in a test (in-process or a child process) uses a session's own embedding
    cache and ONNX export folder, and a sweep or bench its own cross-encoder score cache, never the
    checkout's var/cache/embeddings, var/cache/onnx or var/cache/rerank; a test that sets
    RAGSWEEP_EMBEDDING_CACHE, RAGSWEEP_ONNX_CACHE or RAGSWEEP_RERANK_CACHE wins."""
    names = {"RAGSWEEP_EMBEDDING_CACHE": "embedding-cache", "RAGSWEEP_ONNX_CACHE": "onnx-cache",
             "RAGSWEEP_RERANK_CACHE": "rerank-cache"}
    unset = [name for name in names if os.environ.get(name) is None]
    for name in unset:
        os.environ[name] = str(tmp_path_factory.mktemp(names[name]))
    yield
    for name in unset:
        os.environ.pop(name, None)
