"""The fusion family's wall time with legs shared, against one arm alone and against no sharing.

    python benchmarks/bench_legs.py --state STATE [--workers 2] [--order alone,shared,unshared]

Three sweeps through the local executor, each into its own temporary store, one after another:

* ``alone``: the fusion control by itself (one jobs.arm process: model load, query encoding,
  both legs, fusion, scoring, answers);
* ``shared``: the ten fusion arms, legs shared (one process for the group);
* ``unshared``: the ten fusion arms with ``share_legs=False`` (ten processes, ``--workers`` at once).

Prints each wall time, the load average around it (the machine may be shared), the ratios the
issue's goal is stated in (fusion family shared <= 1.5 x one arm alone), and how many of the
deterministic results files (all but runinfo.json) differ between ``shared`` and ``unshared``:
it must be 0. A benchmark, not a test: nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.sweep.catalogue import CATALOGUE  # noqa: E402
from harness.sweep.executor import LocalExecutor  # noqa: E402
from harness.sweep.legs import group_arms  # noqa: E402
from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES  # noqa: E402

DETERMINISTIC = tuple(name for name in (*ARM_FILES, *ARM_EXTRA_FILES) if name != "runinfo.json")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--workers", type=int, default=2, help="processes at once (default 2)")
    p.add_argument("--order", default="alone,shared,unshared", help="which sweeps, in which order")
    args = p.parse_args()
    family = CATALOGUE.family("fusion")
    runs = {"alone": ([family.control_arm], True), "shared": (list(family.arms), True),
            "unshared": (list(family.arms), False)}
    order = [name.strip() for name in args.order.split(",") if name.strip()]
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-legs-") as tmp:
        print(f"state {args.state}; {len(family.arms)} fusion arms; {args.workers} workers; {os.cpu_count()} cores")
        print("run\tarms\tprocesses\twall s\tload before\tload after")
        for name in order:
            arms, share = runs[name]
            executor = LocalExecutor(state=args.state, store_spec=str(Path(tmp) / name), workers=args.workers,
                                     quiet=True, share_legs=share)
            before = _load()
            t0 = time.perf_counter()
            report = executor.run(arms, "fusion")
            walls[name] = time.perf_counter() - t0
            failed = [o.arm.name for o in report.outcomes if o.status != "published"]
            if failed:
                print(f"{name}: not published: {', '.join(failed)}", file=sys.stderr)
                return 1
            processes = len(group_arms(arms, "embedded", share=share))
            print(f"{name}\t{len(arms)}\t{processes}\t{walls[name]:.1f}\t{before}\t{_load()}")
        if "alone" in walls:
            for name in ("shared", "unshared"):
                if name in walls:
                    print(f"{name} / alone: {walls[name] / walls['alone']:.2f}")
        if "shared" in walls and "unshared" in walls:
            print(f"unshared / shared: {walls['unshared'] / walls['shared']:.2f}")
            differ = 0
            for arm in family.arms:
                folders = [Path(tmp) / n / "sweeps" / "fusion" / "fusion" / arm.name for n in ("shared", "unshared")]
                for file in DETERMINISTIC:
                    shas = {hashlib.sha256((f / file).read_bytes()).hexdigest() for f in folders}
                    differ += len(shas) > 1
            print(f"results files that differ between shared and unshared: {differ} of "
                  f"{len(family.arms) * len(DETERMINISTIC)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
