"""Write and publish each arm of a legs group from its shards' per-query outcomes.

    python -m jobs.merge --task FILE    # or the task in RAGSWEEP_TASK (a Job spec)

The task (harness.sweep.task, job "merge") names the group's arms and its count of shards; each arm's
files are written from the W shards' outcomes (jobs.shard) as the unsharded run writes them, and
published, complete.json last (harness.sweep.shards). An arm that cannot be merged is published as
failed (failed.json); the exit code is the first failure's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs import task_main


def main(argv: Sequence[str] | None = None) -> int:
    return task_main("merge", argv)


if __name__ == "__main__":
    sys.exit(main())
