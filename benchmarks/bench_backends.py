"""Retrieve-stage latency of the stack against the embedded backend, in one paired run.

    python benchmarks/bench_backends.py --state var/states/stack-200-20260812 [--workers 1,2]

Runs ``bench --backend stack --time-also embedded`` (default arm, size 48, every judged query;
the two backends answer each query in turn, alternating which goes first) once per
``--workers`` value and prints both backends' percentiles and how many ranked lists agreed,
as the run's runinfo.json records them. Needs a state built with ``--backend stack`` and the
local stack up (``make stack-up``); says so and exits 0 otherwise (a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def stack_env() -> dict[str, str] | None:
    env_file = Path(os.environ.get("RAGSWEEP_STACK_DIR") or ROOT / "var" / "stack") / "stack.env"
    if not env_file.is_file():
        return None
    pairs = (line.split("=", 1) for line in env_file.read_text(encoding="utf-8").splitlines()
             if "=" in line and not line.startswith("#"))
    return {**os.environ, **{k.strip(): v.strip() for k, v in pairs}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--workers", default="1", help="comma-separated concurrency levels")
    args = p.parse_args()
    state = json.loads((args.state / "state.json").read_text()) if (args.state / "state.json").is_file() else None
    if state is None or "stack" not in state:
        print(f"bench_backends: skipped: {args.state} is not a state built with --backend stack "
              "(make sweep-backends builds one)")
        return 0
    env = stack_env()
    if env is None:
        print("bench_backends: skipped: the local stack is not up (make stack-up)")
        return 0
    ragsweep = Path(sys.executable).with_name("ragsweep")
    print(f"state {args.state}: {state['stack']['chunk_documents']} chunks in {state['stack']['index']}")
    print("workers\tbackend\tsamples\tp50 ms\tp95 ms\tp99 ms\tidentical lists\tidentical top 10")
    for workers in (int(w) for w in args.workers.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-backends-") as tmp:
            out = Path(tmp) / "out"
            subprocess.run([str(ragsweep), "bench", "--state", str(args.state), "--control-name", "rrf-30-default",
                            "--backend", "stack", "--time-also", "embedded", "--workers", str(workers),
                            "--out", str(out)], check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
            runinfo = json.loads((out / "runinfo.json").read_text())
        agreement = runinfo["backend_agreement"]
        for backend in ("stack", "embedded"):
            lat = runinfo["retrieval_latency_ms_by_backend"][backend]
            print(f"{workers}\t{backend}\t{lat['samples']}\t{lat['p50']:.1f}\t{lat['p95']:.1f}\t{lat['p99']:.1f}\t"
                  f"{agreement['identical_ranked_lists']}/{agreement['queries']}\t"
                  f"{agreement['identical_top10']}/{agreement['queries']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
