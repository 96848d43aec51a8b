"""Benchmark: generate the default synthetic corpus and select the default budget from it.

    .venv/bin/python benchmarks/bench_synthetic.py [--seed 20260812] [--meetings 2000] [--budget 200]
                                                   [--keep DIR] [--phases]

Times the two real entry points (what ``ragsweep synth generate`` and ``ragsweep synth
select`` run): generation includes writing, the ten-check validation and the self-report
(BM25 + near-duplicates); selection includes validating the source, writing, validating
the selection and its self-report. ``--phases`` also times the in-memory generator, the
validator and the self-report on their own. The goal is under two minutes for both on a
two-core machine. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

from harness.synthetic.formats import DEFAULT_BUDGET, DEFAULT_MEETINGS, DEFAULT_SEED, read_native
from harness.synthetic.generator import generate
from harness.synthetic.pipeline import generate_corpus, select_corpus
from harness.synthetic.selfreport import build_selfreport
from harness.synthetic.validate import validate_corpus

GOAL_S = 120.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--meetings", type=int, default=DEFAULT_MEETINGS)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--keep", type=Path, help="write the corpora here (replaced) instead of a temporary folder")
    parser.add_argument("--phases", action="store_true", help="also time generator, validator, self-report alone")
    args = parser.parse_args()

    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-synthetic-"))
    full, selected = base / f"full-{args.seed}", base / f"budget-{args.budget}-{args.seed}"
    timings: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        written = generate_corpus(full, seed=args.seed, meetings=args.meetings, force=True)
        timings["generate"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        chosen = select_corpus(full, selected, budget=args.budget, force=True)
        timings["select"] = time.perf_counter() - t0
        timings["total"] = timings["generate"] + timings["select"]
        if args.phases:
            t0 = time.perf_counter()
            generate(args.seed, args.meetings)
            timings["phase_generate_in_memory"] = time.perf_counter() - t0
            native = read_native(full)
            t0 = time.perf_counter()
            validate_corpus(native)
            timings["phase_validate_full"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            build_selfreport(native)
            timings["phase_selfreport_full"] = time.perf_counter() - t0
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)

    sel_report = chosen.selection or {}
    result = {
        "budget": args.budget,
        "cpus": os.cpu_count(),
        "goal_s": GOAL_S,
        "kept": sel_report.get("kept", {}).get("by_class"),
        "kept_by_rule": sel_report.get("kept", {}).get("by_rule"),
        "meetings": args.meetings,
        "python": platform.python_version(),
        "queries_full": written.queries["by_class"],
        "seed": args.seed,
        "seconds": {k: round(v, 2) for k, v in timings.items()},
        "within_goal": timings["total"] < GOAL_S,
    }
    for name, seconds in timings.items():
        print(f"{name:<28} {seconds:8.2f} s")
    print(f"goal: generate + select under {GOAL_S:.0f} s on this {os.cpu_count()}-CPU machine: "
          f"{'met' if result['within_goal'] else 'NOT met'}")
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
