"""Fetch a legs group's shared legs once and publish them for the group's arms.

    python -m jobs.legs --task FILE    # or the task in RAGSWEEP_TASK (a Job spec)

The task (harness.sweep.task, job "legs") names the arms, which must share one embedded text and scope
(harness.sweep.legs), and the store key to write legs.json to; harness.sweep.runtask fetches them at the
deepest of the arms' fusion windows. Exits with the error's code when they cannot be fetched; the
launcher then fails the group's arms, naming why.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs import task_main


def main(argv: Sequence[str] | None = None) -> int:
    return task_main("legs", argv)


if __name__ == "__main__":
    sys.exit(main())
