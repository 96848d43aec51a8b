"""Collect a sweep: comparison.md / comparison.json (and the plot) beside the arms.

    python -m jobs.collect --store DIR|s3://BUCKET/PREFIX --sweep-id ID --arms fusion [--manifest F]

Environment twins: RAGSWEEP_STORE, RAGSWEEP_SWEEP_ID, RAGSWEEP_ARMS, RAGSWEEP_MANIFEST,
RAGSWEEP_S3_ENDPOINT.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.settings import settings
from jobs import entrypoint


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.collect", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    env = settings()
    p = argparse.ArgumentParser(prog="python -m jobs.collect", description=__doc__.split("\n\n")[0])
    p.add_argument("--store", default=env.store)
    p.add_argument("--sweep-id", default=env.sweep_id)
    p.add_argument("--arms", default=env.arms)
    p.add_argument("--manifest", type=Path, default=env.manifest)
    p.add_argument("--s3-endpoint", default=env.s3_endpoint)
    args = p.parse_args(argv)
    if not args.store or not args.sweep_id:
        p.error("--store and --sweep-id (or RAGSWEEP_STORE / RAGSWEEP_SWEEP_ID) are required")
    from harness.sweep.executor import collect_sweep, open_store

    store = open_store(args.store, args.s3_endpoint)
    key = collect_sweep(store, args.sweep_id, args.arms, args.manifest)
    print(f"comparison: {store.describe()}/{key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
