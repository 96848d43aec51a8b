"""The ONNX embedding backend against torch: throughput, vector differences, and nDCG@10 on a small state.

    python benchmarks/bench_onnx.py --corpus synthetic=var/synthetic/budget-20-of-200-20260812
    python benchmarks/bench_onnx.py --corpus synthetic=var/synthetic/budget-200-20260812 \
        --corpus qmsum=var/corpora/qmsum --texts 6000 --state-cache /var/cache/ragsweep/embeddings

1. Encode: the corpora's distinct header texts (what a cold state build encodes; ``--texts N``:
   N of them evenly spaced in sorted order) into a fresh embedding cache in the work folder, as a cold state build
   does (CachingEmbedder: the batch-independent encoder, pieces committed as shards), with the
   torch backend, then with the ONNX one. Then the largest absolute difference per vector
   component and the largest cosine distance (1 - cos, in float64) between the two.
2. States: ``ragsweep state build`` of the corpora with each backend (the same cache: its texts
   are answered from step 1 unless ``--texts`` left some out; ``--state-cache DIR``: that cache
   instead, e.g. the machine's, where the torch vectors of a full two-corpus state already are and
   the ONNX ones are encoded once and kept), then ``ragsweep bench`` with
   default settings (the fusion control) with the
   matching query encoder; nDCG@10 over all scored queries (the mean over per_query.json), and
   per row of metrics.json. Also: bench with the torch query encoder over the
   ONNX-built state must refuse (another model built the index).

The ONNX export goes to ``--onnx-cache`` (default var/cache/onnx, reused). Numbers print to
stdout; nothing here is a test. Measured numbers: docs/embedding-cache.md (ONNX backend).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _encode(embedder: Any, texts: list[str], cache: Path) -> tuple[np.ndarray, float, float]:
    """Vectors in ``texts`` order, encoded into the empty cache as a cold build does; wall and CPU seconds."""
    from harness.index.embedcache import CachingEmbedder

    cached = CachingEmbedder(embedder, cache)
    wall, cpu = time.perf_counter(), _cpu()
    cached.prepare(texts)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    assert cached.hits == 0 and cached.encoded == len(texts), (cached.hits, cached.encoded)
    return cached.lookup(texts), wall, cpu


def _ragsweep(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=ROOT, capture_output=True, text=True, env=env)


def _ndcg(out: Path) -> tuple[float, int, list[tuple[str, float]]]:
    """Mean nDCG@10 over every scored query (per_query.json), their count, and metrics.json's rows."""
    per_query = json.loads((out / "per_query.json").read_text(encoding="utf-8"))["queries"]
    values = [float(q["measures"]["nDCG@10"]) for q in per_query.values() if "nDCG@10" in q["measures"]]
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    by_row = [(f"{r['corpus']}/{r['query_class']}/{r.get('tier', '')} n={r['n']}", float(r["metrics"]["nDCG@10"]))
              for r in metrics["rows"] if "nDCG@10" in r["metrics"]]
    return (float(np.mean(values)) if values else float("nan")), len(values), by_row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, action="append", help="NAME=DIR, as for ragsweep state build "
                   "(repeat for several corpora: one state holds them all)")
    p.add_argument("--texts", type=int, default=0,
                   help="distinct header texts to encode (N evenly spaced in sorted order; 0: all)")
    p.add_argument("--state-cache", type=Path, help="the embedding cache the state builds use (default: the work one)")
    p.add_argument("--work", type=Path, default=Path("var/bench-onnx"), help="states, results, embedding cache")
    p.add_argument("--onnx-cache", type=Path, default=Path("var/cache/onnx"))
    p.add_argument("--skip-states", action="store_true", help="encode and compare only")
    args = p.parse_args()

    from harness.commands.corpus import read_corpus
    from harness.index.chunking import ChunkingPolicy
    from harness.index.documents import embedding_text, meeting_documents
    from harness.index.embed import SentenceTransformerEmbedder

    started = datetime.now(UTC)
    print(f"{started:%Y-%m-%d %H:%M} UTC  {os.cpu_count()} cores, load average {_load()} at start", flush=True)
    corpora = [read_corpus(name, Path(folder)) for name, folder in (c.split("=", 1) for c in args.corpus)]
    docs = [d for corpus in corpora for m in corpus.meetings for d in meeting_documents(m, ChunkingPolicy())]
    distinct = sorted({embedding_text(d, "header") for d in docs})
    texts = distinct[::max(1, len(distinct) // args.texts)][:args.texts] if args.texts else distinct
    print(f"texts                  {len(texts)} of {len(distinct)} distinct header texts ("
          + ", ".join(f"{c.name} {len(c.meetings)} meetings" for c in corpora) + ")")

    loaded = time.perf_counter()
    backends = {"torch": SentenceTransformerEmbedder(),
                "onnx": SentenceTransformerEmbedder(backend="onnx", onnx_dir=args.onnx_cache)}
    print(f"models loaded          {time.perf_counter() - loaded:.1f} s (the ONNX export included when not cached)")
    for b, e in backends.items():
        print(f"  {b:5} {e.identity}  {e.describe()['encoder']}")
    cache = args.work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    vectors, rate = {}, {}
    for b in ("torch", "onnx"):
        vectors[b], wall, cpu = _encode(backends[b], texts, cache)
        rate[b] = len(texts) / wall
        print(f"{b:5} encode            {wall:7.1f} s wall  {cpu:7.1f} s cpu  {rate[b]:6.1f} texts/s  "
              f"(cpu {len(texts) / cpu:.1f} texts/s)  load {_load()}", flush=True)
    print(f"throughput onnx/torch  {rate['onnx'] / rate['torch']:.2f} wall")
    a, b64 = vectors["torch"], vectors["onnx"]
    cos = np.sum(a.astype(np.float64) * b64.astype(np.float64), axis=1) / (
        np.linalg.norm(a.astype(np.float64), axis=1) * np.linalg.norm(b64.astype(np.float64), axis=1))
    print(f"max |torch - onnx|     {float(np.abs(a - b64).max()):.3g} per component "
          f"(mean {float(np.abs(a - b64).mean()):.3g}); vectors bit-identical: {int(np.sum(np.all(a == b64, axis=1)))}"
          f" of {len(texts)}")
    print(f"max cosine distance    {float(np.max(1.0 - cos)):.3g}")
    del backends

    if not args.skip_states:
        env = {**os.environ, "RAGSWEEP_EMBEDDING_CACHE": str((args.state_cache or cache).resolve()),
               "RAGSWEEP_ONNX_CACHE": str(args.onnx_cache.resolve())}
        env.pop("RAGSWEEP_EMBEDDING_BACKEND", None)
        ndcg: dict[str, tuple[float, int, list[tuple[str, float]]]] = {}
        for b in ("torch", "onnx"):
            state, out = args.work / f"state-{b}", args.work / f"bench-{b}"
            t = time.perf_counter()
            built = _ragsweep("state", "build", *[x for c in args.corpus for x in ("--corpus", c)], "--out", str(state),
                              "--force",
                              "--embedding-backend", b, env=env)
            if built.returncode:
                print(built.stderr, file=sys.stderr)
                return built.returncode
            model = json.loads((state / "state.json").read_text(encoding="utf-8"))["index"]["embedding"]
            print(f"state {b:5} built       {time.perf_counter() - t:.1f} s  {state}  index embedding {model}")
            t = time.perf_counter()
            ran = _ragsweep("bench", "--state", str(state), "--control-name", f"fusion-{b}", "--out", str(out),
                            "--embedding-backend", b, env=env)
            if ran.returncode:
                print(ran.stderr, file=sys.stderr)
                return ran.returncode
            ndcg[b] = _ndcg(out)
            print(f"bench {b:5}             {time.perf_counter() - t:.1f} s  nDCG@10 {ndcg[b][0]:.6f} over "
                  f"{ndcg[b][1]} queries", flush=True)
        for (row, x), (_, y) in zip(ndcg["torch"][2], ndcg["onnx"][2], strict=True):
            print(f"  {row:40} torch {x:.6f}  onnx {y:.6f}  same at 4 decimals: {f'{x:.4f}' == f'{y:.4f}'}")
        x, y = ndcg["torch"][0], ndcg["onnx"][0]
        print(f"nDCG@10 all queries    torch {x:.6f}  onnx {y:.6f}  difference {y - x:+.2e}  "
              f"same at 4 decimals: {f'{x:.4f}' == f'{y:.4f}'}")
        refused = _ragsweep("bench", "--state", str(args.work / "state-onnx"), "--control-name", "mismatch",
                            "--out", str(args.work / "bench-mismatch"), "--embedding-backend", "torch", env=env)
        print(f"torch queries over the onnx state: exit {refused.returncode}: "
              f"{(refused.stderr.strip().splitlines() or ['?'])[-1][:160]}")
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC  load average {_load()} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
