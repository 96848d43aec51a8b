"""Answer every arm of a legs group over one shard of its judged queries and publish the outcomes.

    python -m jobs.shard --task FILE    # or the task in RAGSWEEP_TASK (a Job spec)

The task (harness.sweep.task, job "shard") names the group's arms (retrieve or diversify stages) and its
shard "K/W": judged query i (sorted by id) is shard i mod W's. The shard's queries are encoded, the
group's legs fetched once for them, and each arm's per-query outcomes published for the group's merge
(jobs.merge, harness.sweep.shards). Exits with the error's code when it cannot; the launcher then fails
the group's arms, naming why.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs import task_main


def main(argv: Sequence[str] | None = None) -> int:
    return task_main("shard", argv)


if __name__ == "__main__":
    sys.exit(main())
