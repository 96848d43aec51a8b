"""The fusion family's wall time with legs shared, against one arm alone, its queries sharded, and no sharing.

    python benchmarks/bench_legs.py --state STATE [--workers 2]
        [--order alone,shared,sharded-1,sharded-2,sharded-3,unshared]

Sweeps through the local executor, each into its own temporary store, one after another:

* ``alone``: the fusion control by itself (one jobs.arm process: model load, query encoding,
  both legs, fusion, scoring, answers);
* ``shared``: the ten fusion arms, legs shared (one process for the group, its arms forked over
  ``--workers`` once the legs are fetched): the default;
* ``sharded-W``: the ten arms with the group's judged queries split into W shards (``--shard-queries``:
  W jobs.shard processes at once, then one jobs.merge; harness.sweep.shards). ``sharded-1`` runs one
  shard task and the merge task directly (the executor shards only over two or more workers);
* ``unshared``: the ten fusion arms with ``share_legs=False`` (ten processes, ``--workers`` at once).

Prints each wall time, the load average before and after it (the machine may be shared), the
ratios to one arm alone (issue 37's goal: the family at most 1.2x) and to the unsharded
``shared`` run, and how many of the deterministic results files (all but runinfo.json) of every
other run differ from ``shared``'s: each must be 0. A benchmark, not a test: nothing here fails on
a slow machine.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
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
from harness.sweep.task import build_task  # noqa: E402

DETERMINISTIC = tuple(name for name in (*ARM_FILES, *ARM_EXTRA_FILES) if name != "runinfo.json")


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _one_shard(state: Path, store: Path, arms: list, sweep_id: str) -> list[str]:
    """``sharded-1``: one jobs.shard task over every judged query, then the jobs.merge task, as processes;
    the arms the merge did not publish."""

    tasks = [build_task("shard", arms, state=state, store=str(store), sweep_id=sweep_id, shard=(0, 1)),
             build_task("merge", arms, state=state, store=str(store), sweep_id=sweep_id, shards=1)]
    for task in tasks:
        file = store.parent / f"{store.name}-{task.job}.json"
        file.write_text(task.to_json())
        done = subprocess.run([sys.executable, "-m", f"jobs.{task.job}", "--task", str(file)], cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"sharded-1: jobs.{task.job} exited {done.returncode}: {done.stderr.strip()[-400:]}",
                  file=sys.stderr)
            return [a.name for a in arms]
    return [a.name for a in arms
            if not (store / "sweeps" / sweep_id / a.family / a.name / "complete.json").is_file()]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--workers", type=int, default=2, help="processes at once (default 2)")
    p.add_argument("--order", default="alone,shared,sharded-1,sharded-2,sharded-3,unshared",
                   help="which sweeps, in which order (sharded-W: W shards)")
    args = p.parse_args()
    family = CATALOGUE.family("fusion")
    order = [name.strip() for name in args.order.split(",") if name.strip()]
    unknown = [n for n in order if n not in ("alone", "shared", "unshared") and not
               (n.startswith("sharded-") and n[8:].isdigit() and int(n[8:]) >= 1)]
    if unknown:
        p.error(f"--order: unknown runs {', '.join(unknown)} (alone, shared, sharded-W, unshared)")
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-legs-") as tmp:
        print(f"state {args.state}; {len(family.arms)} fusion arms; {args.workers} workers; {os.cpu_count()} cores")
        print("run\tarms\tprocesses\twall s\tload before\tload after")
        for name in order:
            arms = [family.control_arm] if name == "alone" else list(family.arms)
            shards = int(name[8:]) if name.startswith("sharded-") else 0
            store = Path(tmp) / name
            before = _load()
            t0 = time.perf_counter()
            if shards == 1:
                failed = _one_shard(args.state, store, arms, "fusion")
                processes = 2
            else:
                executor = LocalExecutor(state=args.state, store_spec=str(store), quiet=True,
                                         workers=shards or args.workers, share_legs=name != "unshared",
                                         shard_queries=shards > 1)
                report = executor.run(arms, "fusion")
                failed = [o.arm.name for o in report.outcomes if o.status != "published"]
                processes = (shards + 1 if shards else
                             len(group_arms(arms, "embedded", share=name != "unshared")))
            walls[name] = time.perf_counter() - t0
            if failed:
                print(f"{name}: not published: {', '.join(failed)}", file=sys.stderr)
                return 1
            print(f"{name}\t{len(arms)}\t{processes}\t{walls[name]:.1f}\t{before}\t{_load()}")
        for name in walls:
            if name != "alone" and "alone" in walls:
                print(f"{name} / alone: {walls[name] / walls['alone']:.2f}")
        for name in walls:
            if name not in ("alone", "shared") and "shared" in walls:
                print(f"{name} / shared: {walls[name] / walls['shared']:.2f}")
                differ = 0
                for arm in family.arms:
                    folders = [Path(tmp) / n / "sweeps" / "fusion" / "fusion" / arm.name for n in ("shared", name)]
                    for file in DETERMINISTIC:
                        shas = {hashlib.sha256((f / file).read_bytes()).hexdigest() for f in folders}
                        differ += len(shas) > 1
                print(f"results files of {name} that differ from shared: {differ} of "
                      f"{len(family.arms) * len(DETERMINISTIC)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
