"""Which runner a task's job names: the one registry every entrypoint (jobs/) dispatches through.

``arm``, ``legs`` and ``scores`` run in harness.sweep.runtask; ``shard`` and ``merge`` (a legs group's
queries split into shards, issue 37) in harness.sweep.shards.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.sweep.runtask import Services, run_arms, run_legs, run_scores
from harness.sweep.shards import run_merge, run_shard
from harness.sweep.task import Job, Task

RUNNERS: dict[Job, Callable[[Task, Services], int]] = {
    "arm": run_arms, "legs": run_legs, "scores": run_scores,
    "shard": run_shard, "merge": run_merge,
}


def run_task(task: Task, services: Services) -> int:
    """Run ``task`` as its job says (RUNNERS: a registry, not if/elif); the exit code."""
    return int(RUNNERS[task.job](task, services))
