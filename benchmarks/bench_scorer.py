"""Benchmark: ``ragsweep score`` beside plain pytrec_eval on the same TREC files.

    .venv/bin/python benchmarks/bench_scorer.py [--seed 20260834] [--queries 1000] [--docs 1000]
                                                [--keep DIR] [--repeats 1]

Writes a qrels and a run of ``queries x docs`` lines each (deterministic from the seed;
scores at two decimals so equal scores are common) into a temporary folder, then runs,
each in a fresh subprocess, one after the other:

* ours: ``ragsweep score --json`` (every check, the default ``trec_eval`` tie policy);
* pytrec_eval: ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator.evaluate`` with the
  same seven measures, mean over the queries (every query is answered, so -c changes nothing).

It reports wall seconds and peak RSS (``os.wait4``'s rusage of that child alone) for each,
checks both give the same nDCG@10, and says whether ours is within 2x of pytrec_eval on
both: the goal for the default million lines (issue 34), where reading dominates; on small
files interpreter start-up does. A benchmark, not a test: it exits 1 only when the two
nDCG@10 differ.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.metrics.measures import RETRIEVAL_MEASURES, trec_measure_set

DEFAULT_SEED = 20260834
GOAL_RATIO = 2.0

PLAIN_PYTREC_EVAL = """
import json, sys
import pytrec_eval
qrels_path, run_path, measures = sys.argv[1], sys.argv[2], set(json.loads(sys.argv[3]))
with open(qrels_path) as f:
    qrel = pytrec_eval.parse_qrel(f)
with open(run_path) as f:
    run = pytrec_eval.parse_run(f)
result = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
print(json.dumps({"queries": len(result),
                  "nDCG@10": sum(v["ndcg_cut_10"] for v in result.values()) / len(qrel)}))
"""


def write_files(folder: Path, seed: int, queries: int, docs: int) -> tuple[Path, Path]:
    """A qrels and a run of ``queries * docs`` lines each; the same seed writes the same bytes.

    Each query retrieves ``docs`` documents of a 100,000-document collection; the qrels judge
    half of them plus as many unretrieved ones, relevant (grade 1 or 2) more often near the top.
    """
    rng = random.Random(seed)
    qrels_path, run_path = folder / "qrels.trec", folder / "run.trec"
    with qrels_path.open("w", encoding="utf-8") as qrels, run_path.open("w", encoding="utf-8") as run:
        for q in range(queries):
            qid = f"q{q:05d}"
            picked = rng.sample(range(100_000), docs + docs // 2)
            retrieved, unretrieved = picked[:docs], picked[docs:]
            scores = sorted((round(rng.uniform(0.0, 50.0), 2) for _ in retrieved), reverse=True)
            run.writelines(f"{qid} Q0 D{d:06d} {rank} {score:.2f} bench\n"
                           for rank, (d, score) in enumerate(zip(retrieved, scores, strict=True), start=1))
            judged = [(d, rank) for rank, d in enumerate(retrieved, start=1) if rng.random() < 0.5]
            judged += [(d, docs) for d in unretrieved]
            for d, rank in judged:
                relevant = rng.random() < 0.03 + 0.9 / (1 + rank / 25)
                grade = (2 if rng.random() < 0.4 else 1) if relevant else 0
                qrels.write(f"{qid} 0 D{d:06d} {grade}\n")
    return qrels_path, run_path


def timed(argv: list[str], folder: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of one fresh child process.

    The peak is that child's own (``os.wait4``), not RUSAGE_CHILDREN's maximum over every child
    waited for so far, which would give the second side the first one's peak if it were larger.
    """
    out_path, err_path = folder / "side.out", folder / "side.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {err_path.read_text()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, out_path.read_text()  # ru_maxrss is in KiB on Linux


def measure(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    py = sys.executable
    measures = json.dumps(sorted(trec_measure_set(RETRIEVAL_MEASURES)))
    sides = {
        "ragsweep": [py, "-m", "harness.cli", "score", "--qrels", str(qrels), "--run", str(run), "--json"],
        "pytrec_eval": [py, "-c", PLAIN_PYTREC_EVAL, str(qrels), str(run), measures],
    }
    out: dict[str, dict[str, float]] = {}
    for name, argv in sides.items():
        seconds, peak_mb, stdout = timed(argv, qrels.parent)
        doc = json.loads(stdout)
        ndcg = doc["measures"]["nDCG@10"] if name == "ragsweep" else doc["nDCG@10"]
        out[name] = {"seconds": seconds, "peak_mb": peak_mb, "nDCG@10": ndcg, "queries": doc["queries"]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=1000, help="run lines per query (qrels lines too)")
    parser.add_argument("--repeats", type=int, default=1, help="measure both sides this many times; keep the best")
    parser.add_argument("--keep", type=Path, help="write the files here instead of a temporary folder")
    args = parser.parse_args()

    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-scorer-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        qrels, run = write_files(folder, args.seed, args.queries, args.docs)
        generate_s = time.perf_counter() - t0
        rounds = [measure(qrels, run) for _ in range(args.repeats)]
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)

    best = {side: min((r[side] for r in rounds), key=lambda m: m["seconds"]) for side in rounds[0]}
    ours, theirs = best["ragsweep"], best["pytrec_eval"]
    same = f"{ours['nDCG@10']:.6f}" == f"{theirs['nDCG@10']:.6f}"
    ratios = {"seconds": ours["seconds"] / theirs["seconds"], "peak_mb": ours["peak_mb"] / theirs["peak_mb"]}
    for side, m in best.items():
        print(f"{side:<12} {m['seconds']:7.2f} s  {m['peak_mb']:8.1f} MB peak  nDCG@10 {m['nDCG@10']:.6f}"
              f"  ({m['queries']:.0f} queries)")
    print(f"ratio        {ratios['seconds']:7.2f} x  {ratios['peak_mb']:8.2f} x      "
          f"nDCG@10 {'identical' if same else 'DIFFERENT'}")
    within = all(r <= GOAL_RATIO for r in ratios.values())
    print(f"goal: within {GOAL_RATIO:.0f}x of pytrec_eval on time and peak memory: {'met' if within else 'NOT met'}")
    print(json.dumps({
        "cpus": os.cpu_count(), "docs_per_query": args.docs, "generate_s": round(generate_s, 2),
        "python": platform.python_version(), "queries": args.queries, "repeats": args.repeats,
        "seed": args.seed, "same_ndcg10": same, "within_goal": within,
        "ratio": {k: round(v, 2) for k, v in ratios.items()},
        "sides": {s: {k: round(v, 6 if k == "nDCG@10" else 2) for k, v in m.items()} for s, m in best.items()},
    }, sort_keys=True))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
