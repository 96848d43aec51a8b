"""Run one arm, or a group of arms that share legs, and publish each to the artefact store.

    python -m jobs.arm --task FILE    # or the task in RAGSWEEP_TASK (a Job spec)

The task (harness.sweep.task) says everything: the state, the store, the sweep, the arms, the legs and
scores to read, the part of the queries, the cross-encoder. harness.sweep.runtask runs it: an arm complete
for the same config hash is skipped, a failure is published as failed.json, and the process exits with
the first failure's code (0 when every arm was published or skipped).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs import task_main


def main(argv: Sequence[str] | None = None) -> int:
    return task_main("arm", argv)


if __name__ == "__main__":
    sys.exit(main())
