"""Move a folder in or out of the object store as one archive (harness.sweep.k8s.sync).

    python -m jobs.sync pull      # RAGSWEEP_STORE, RAGSWEEP_SYNC_KEY, RAGSWEEP_SYNC_OUT [, RAGSWEEP_SYNC_WAIT]
    python -m jobs.sync push --from DIR --key state/state.tar.gz --beside state.json

Every arm pod pulls the state (and a rerank arm the reranker) in an init container; the chart's
injector pulls the corpora and pushes the state it built. Every flag has an environment twin
(RAGSWEEP_STORE, RAGSWEEP_S3_ENDPOINT, RAGSWEEP_SYNC_KEY, RAGSWEEP_SYNC_FROM, RAGSWEEP_SYNC_OUT,
RAGSWEEP_SYNC_WAIT), which is how a Job spec passes them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.settings import settings
from jobs import entrypoint


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    env = settings()
    p = argparse.ArgumentParser(prog="python -m jobs.sync", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=["push", "pull"])
    p.add_argument("--store", default=env.store)
    p.add_argument("--s3-endpoint", default=env.s3_endpoint)
    p.add_argument("--key", default=env.sync_key)
    p.add_argument("--from", dest="source", type=Path, default=env.sync_from)
    p.add_argument("--out", type=Path, default=env.sync_out)
    p.add_argument("--beside", action="append", default=[], metavar="NAME",
                   help="also put this file of the folder beside the archive (push; e.g. state.json)")
    p.add_argument("--wait", type=float, default=env.sync_wait,
                   help="seconds to wait for the archive to appear (pull)")
    args = p.parse_args(argv)
    needed = ["store", "key", "source" if args.action == "push" else "out"]
    missing = [n for n in needed if not getattr(args, n)]
    if missing:
        p.error("missing " + ", ".join(f"--{n}" for n in missing) + " (or their RAGSWEEP_* env)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.sync", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    from harness.objectstore import open_store
    from harness.sweep.k8s.sync import pull, push

    args = parse(argv)
    store = open_store(args.store, args.s3_endpoint)
    if args.action == "push":
        digest = push(store, args.source, args.key, args.beside)
        print(f"pushed {args.source} to {store.describe()}/{args.key} ({digest[:12]})")
    else:
        digest = pull(store, args.key, args.out, wait_s=args.wait)
        print(f"pulled {store.describe()}/{args.key} ({digest[:12]}) into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
