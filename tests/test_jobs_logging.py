"""Every jobs/ entrypoint configures logging once, as the CLI does (harness.cli.logging_to_stderr):
library INFO progress reaches stderr as is, a warning says whose it is, and nothing stays behind."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence

import pytest

JOBS = ("arm", "legs", "scores", "shard", "merge", "collect", "sync", "baselines")
# The jobs whose main reads one task (jobs.task_main): their body is jobs._run_task.
TASK_JOBS = ("arm", "legs", "scores", "shard", "merge")


@pytest.mark.parametrize("name", JOBS)
def test_a_job_shows_library_logging_under_its_own_name(name: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    job = importlib.import_module(f"jobs.{name}")

    def logs(argv: Sequence[str] | None) -> int:
        logging.getLogger("harness.sweep.executor").info("progress line")
        logging.getLogger("harness.sweep.executor").debug("not shown")
        logging.getLogger("harness.retries").warning("put k: attempt 1 failed (Timeout: t); retrying in 1.0s")
        return 0

    if name in TASK_JOBS:
        monkeypatch.setattr(importlib.import_module("jobs"), "_run_task", lambda _job, argv: logs(argv))
    else:
        monkeypatch.setattr(job, "_main", logs)
    before = list(logging.getLogger("harness").handlers)
    assert job.main([]) == 0
    warning = f"jobs.{name}: warning: put k: attempt 1 failed (Timeout: t); retrying in 1.0s\n"
    assert capsys.readouterr().err == "progress line\n" + warning
    assert logging.getLogger("harness").handlers == before

