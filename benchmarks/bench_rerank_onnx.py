"""The cross-encoder in onnxruntime against torch, on the CPU: the same pairs, one forward pass each.

    python benchmarks/bench_rerank_onnx.py --pairs PAIRS.json [--pairs MORE.json] --reranker DIR \\
        [--onnx-dir DIR] [--top 10]

PAIRS.json is what ``benchmarks/bench_rerank.py --pairs-out`` writes ([[query, [passage, ...]], ...]).
Every pair is scored by ``CrossEncoderReranker`` with ``backend="torch"`` and ``backend="onnx"`` (the
export made first, into --onnx-dir, default a temporary folder), torch first, then onnx, as results
score them. Printed: pairs/s each way and their ratio, the largest |torch - onnx| and how many pairs
differ in some bit, for how many queries the rerank order of their passages (harness.retrieval.rerank
.rerank_order) is not the same, in all and in the first --top, and how many onnx scores change when
each query's passages are asked again reversed (a score cached per pair needs 0).
Exits 1 when the reversed repeat differs, else 0. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_rerank_device import timed  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=Path, action="append", required=True)
    p.add_argument("--reranker", type=Path, required=True, help="cross-encoder directory")
    p.add_argument("--onnx-dir", type=Path, help="where the export is kept (default: a temporary folder)")
    p.add_argument("--top", type=int, default=10, help="the depth the order is also compared at (default 10)")
    args = p.parse_args()

    import torch

    from harness.retrieval.rerank import CrossEncoderReranker, rerank_order

    work = [(q, list(c)) for path in args.pairs for q, c in json.loads(path.read_text(encoding="utf-8"))]
    pairs = sum(len(c) for _, c in work)
    with tempfile.TemporaryDirectory(prefix="bench-rerank-onnx-") as tmp:
        rerankers = {"torch": CrossEncoderReranker(args.reranker),
                     "onnx": CrossEncoderReranker(args.reranker, backend="onnx", onnx_dir=args.onnx_dir or Path(tmp))}
        print(f"{os.cpu_count()} cores, torch {torch.__version__} on {torch.get_num_threads()} threads; "
              f"{len(work)} queries, {pairs} pairs; reranker {rerankers['torch'].provenance['kind']} "
              f"({args.reranker})\nonnx: {rerankers['onnx'].provenance['backend']}", flush=True)
        scores, seconds = {}, {}
        for name, reranker in rerankers.items():
            scores[name], seconds[name] = timed(reranker, work)
            print(f"{name:<6} {pairs / seconds[name]:8.1f} pairs/s  ({seconds[name]:.1f} s)", flush=True)
        again = [rerankers["onnx"].score(q, c[::-1])[::-1] for q, c in work]
    flat = {name: [s for q in per_query for s in q] for name, per_query in scores.items()}
    diffs = [abs(a - b) for a, b in zip(flat["torch"], flat["onnx"], strict=True)]
    orders = {name: [rerank_order(q) for q in per_query] for name, per_query in scores.items()}
    moved = sum(a != b for a, b in zip(orders["torch"], orders["onnx"], strict=True))
    moved_top = sum(a[:args.top] != b[:args.top] for a, b in zip(orders["torch"], orders["onnx"], strict=True))
    repeat = sum(a != b for qa, qb in zip(again, scores["onnx"], strict=True) for a, b in zip(qa, qb, strict=True))
    print(f"throughput onnx/torch  {seconds['torch'] / seconds['onnx']:.2f}x")
    print(f"max |torch - onnx|     {max(diffs):.3e}; {sum(1 for d in diffs if d)} of {pairs} pairs differ in some bit")
    print(f"rerank order           differs for {moved} of {len(work)} queries; in the first {args.top}: {moved_top}")
    print(f"onnx, each query's passages asked again reversed: {repeat} of {pairs} differ")
    return 0 if repeat == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
