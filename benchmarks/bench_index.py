"""Index build throughput against raw SentenceTransformer.encode, and retrieve latency.

    python benchmarks/bench_index.py --state var/states/default-200-20260812 [--limit 6000]

1. Takes the state's own documents (the exact texts the index embeds, header mode),
   times ``SentenceTransformer.encode`` on them alone (the ceiling), then times
   ``build_index`` over the same documents (embedding + tantivy + files). Goal: the
   build runs at >= 0.9x the raw encode throughput. The build encodes batch-independently
   (harness.index.encoder; its own comparison: benchmarks/bench_batch_independence.py).
2. Runs the retrieve stage (default fusion, size 48) over every judged query of the
   state and prints the latency percentiles bench records in runinfo.json.

Numbers print to stdout; nothing here is a test.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--limit", type=int, default=6000, help="documents to embed in the throughput comparison")
    args = p.parse_args()

    from harness.bench.config import BenchConfig
    from harness.bench.run import run_bench
    from harness.index.documents import doc_from_record, embedding_text
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.index.embedded import build_index
    from harness.state import State

    state = State.open(args.state)
    docs = [doc_from_record(d) for d in state.index.docs[: args.limit]]
    embedder = SentenceTransformerEmbedder()
    texts = [embedding_text(d, "header") for d in docs]
    embedder.encode(texts[:64])  # warm-up: first calls pay one-off costs
    embedder._model.encode(texts[:64], batch_size=64)

    t0 = time.perf_counter()
    embedder._model.encode(texts, batch_size=64, normalize_embeddings=True)  # raw, padded batches
    raw = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="bench-index-"))
    try:
        t0 = time.perf_counter()
        build_index(tmp / "index", docs, {"header": embedder})
        built = time.perf_counter() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"documents                {len(docs)}")
    print(f"raw encode               {raw:8.1f} s  {len(docs) / raw:8.1f} docs/s")
    print(f"index build              {built:8.1f} s  {len(docs) / built:8.1f} docs/s")
    print(f"build / raw throughput   {raw / built:8.3f}  (goal >= 0.9)")

    out = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    try:
        config = BenchConfig(control_name="bench-latency")
        run_bench(state, config, embedder, out)
        import json

        latency = json.loads((out / "runinfo.json").read_text())["retrieval_latency_ms"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"retrieve latency (ms)    p50 {latency['p50']:.1f}  p95 {latency['p95']:.1f}  p99 {latency['p99']:.1f}  "
          f"max {latency['max']:.1f}  mean {latency['mean']:.1f}  over {latency['samples']} queries, concurrency 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
