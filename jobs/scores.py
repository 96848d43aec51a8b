"""Score a group's cross-encoder pairs, one part of its queries, and publish them for its rerank arms.

    python -m jobs.scores --task FILE    # or the task in RAGSWEEP_TASK (a Job spec)

The task (harness.sweep.task, job "scores") names the group's pending rerank arms, the legs to read (never
fetched), the reranker, the part K/P of the judged queries and the one store key to write; harness.sweep.runtask
scores every pair once and publishes them, naming the scorer's key, which every arm that reads them checks.
Exits with the error's code when they cannot be scored; the launcher then fails the group's rerank arms.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs import task_main


def main(argv: Sequence[str] | None = None) -> int:
    return task_main("scores", argv)


if __name__ == "__main__":
    sys.exit(main())
