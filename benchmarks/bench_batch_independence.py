"""The batch-independent encoder against raw SentenceTransformer.encode, and a state rebuild from a warm cache.

    python benchmarks/bench_batch_independence.py --corpus synthetic=var/synthetic/budget-200-20260812
    python benchmarks/bench_batch_independence.py --corpus qmsum=var/corpora/qmsum --sample 12288

1. Cold encode, interleaved: the corpus's distinct embedding texts (header mode: what a cold
   state build encodes) go through CachingEmbedder.prepare into a fresh cache, as in a state
   build (harness.index.encoder: every forward pass ``rows_for(length)`` texts of one token
   length, short batches filled with copies; each piece committed as a shard). Right after each piece,
   raw ``SentenceTransformer.encode(batch_size=64, normalize_embeddings=True)`` (the embedder's
   call before the encoder) encodes the same texts, and so does the same one-length batching
   without the fill copies. Interleaving puts the three under the same load; raw encode sorts
   by length anyway, so per piece it pads no more than over the whole set.
2. ``ragsweep state build`` of the corpus with that (now warm) cache, timed as a command.
3. The first ``--check-meetings`` meetings built (in-process) with the warm cache and without a
   cache: the two states' files compared byte for byte.

Numbers print to stdout; nothing here is a test. The first version of this file (2026-12-03,
2,000 texts, one encode() call per batch) measured 0.29x.

Measured 2026-12-03, 14:17-14:44 UTC, on the 2-core development machine (AVX512, torch
2.15.0, nice 19), the budget-200 synthetic corpus; earlier that day another engineer's QMSum
state build, a sweep and a Kubernetes cluster loaded it to 5-8, during this run the load average
was about 2 (this run's own two threads). Printed (the cache path shortened to ..., two long lines wrapped at ``|``)::

    distinct texts            29107 (header mode, synthetic, 200 meetings)
    raw encode (batch 64)        414.0 s wall    810.8 s cpu    70.3 texts/s
    batch-independent            419.8 s wall    818.7 s cpu    69.3 texts/s  throughput vs raw 0.99 (cpu 0.99)
      + cache writes             420.2 s wall (a cold cached build's encoding)  0.99
    one-length, no fill          362.2 s wall    709.1 s cpu    80.4 texts/s  throughput vs raw 1.14; |
        bit-identical to the filled batches: True
    max |raw - independent|   2.24e-07
    warm rebuild (command)        14.2 s  ragsweep state build --corpus |
        synthetic=/work/main/var/synthetic/budget-200-20260812: embedding cache |
        .../cache/all-MiniLM-L6-v2_sha256_53aa51172d142c89-1a0ad25d08b83f83: 29107 texts cached, 0 encoded
      its vectors are the bytes encoded above: True
    queries (429 distinct)   raw 1.4 s, batch-independent 6.4 s (once per bench run)
    first 12 meetings, warm cache vs no cache: states byte-identical: True
    load average              2.0 after the encodes, 1.9 at the end
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Clock:
    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu


def _timed(clock: _Clock, name: str, call: Any) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    clock.add(name, time.perf_counter() - wall, time.process_time() - cpu)
    return out


def _without_fill(model: Any, texts: Sequence[str]) -> np.ndarray:
    """The same one-length batching with a short last batch left short: fewer rows, no guarantee."""
    import torch

    from harness.index.encoder import DEFAULT_BATCHING, _tokens

    flat, lengths, extras = _tokens(model, texts)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths.tolist()):
        by_length.setdefault(n, []).append(i)
    out = np.empty((len(texts), int(model.get_embedding_dimension())), dtype=np.float32)
    with torch.inference_mode():
        for n, members in sorted(by_length.items()):
            rows = DEFAULT_BATCHING.rows_for(n)
            for lo in range(0, len(members), rows):
                part = members[lo:lo + rows]
                features = {name: torch.from_numpy(np.stack([t[starts[i]:starts[i] + n] for i in part])
                                                   .astype(np.int64)) for name, t in flat.items()}
                features["attention_mask"] = torch.ones((len(part), n), dtype=torch.int64)
                vectors = model({**extras, **features})["sentence_embedding"]
                out[part] = torch.nn.functional.normalize(vectors, p=2, dim=1).numpy()
    return out


class _Interleaved:
    """The embedder under test, timed per piece, with raw encode and the no-fill variant run on each piece."""

    def __init__(self, inner: Any, clock: _Clock) -> None:
        self.inner, self.clock = inner, clock
        self.identity, self.dimension = inner.identity, inner.dimension
        self.max_raw_diff = 0.0
        self.nofill_identical = True

    def describe(self) -> dict[str, Any]:
        return dict(self.inner.describe())

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.inner.encode(texts))

    def encode_pieces(self, texts: Sequence[str], piece: int) -> Iterator[tuple[list[str], np.ndarray]]:
        model = self.inner._model
        pieces = self.inner.encode_pieces(texts, piece)
        while True:
            got = _timed(self.clock, "independent", lambda: next(pieces, None))
            if got is None:
                return
            part, vectors = got
            raw = _timed(self.clock, "raw", lambda part=part: model.encode(
                part, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False))
            nofill = _timed(self.clock, "nofill", lambda part=part: _without_fill(model, part))
            self.max_raw_diff = max(self.max_raw_diff, float(np.abs(raw - vectors).max()))
            self.nofill_identical &= nofill.tobytes() == vectors.tobytes()
            print(f"  piece of {len(part)}: independent {self.clock.wall['independent']:.0f}s, "
                  f"raw {self.clock.wall['raw']:.0f}s, no-fill {self.clock.wall['nofill']:.0f}s so far", flush=True)
            yield part, vectors


def _files(state: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((state / "index").iterdir()) if p.is_file()} | {
        "state.json": (state / "state.json").read_bytes()}


def _build(corpus: str, out: Path, cache: str) -> tuple[float, str]:
    """Seconds a ``ragsweep state build`` command took, and its embedding-cache line."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", "state", "build", "--corpus", corpus, "--out", str(out),
                           "--embedding-cache", cache, "--force"], cwd=ROOT, check=True, capture_output=True, text=True)
    took = time.perf_counter() - started
    return took, next((line.strip() for line in done.stderr.splitlines() if "embedding cache" in line), "?")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="NAME=DIR, as for ragsweep state build")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one, removed)")
    p.add_argument("--piece", type=int, default=4096)
    p.add_argument("--check-meetings", type=int, default=12)
    p.add_argument("--sample", type=int, default=None, metavar="N",
                   help="encode a seeded uniform sample of N distinct texts (a corpus too large to encode three "
                        "times); skips step 2, whose warm build would encode the rest")
    p.add_argument("--seed", type=int, default=20260812, help="the --sample's seed")
    args = p.parse_args()

    from harness.commands.corpus import read_corpus
    from harness.index.chunking import ChunkingPolicy
    from harness.index.documents import doc_from_record, embedding_text, meeting_documents
    from harness.index.embed import SentenceTransformerEmbedder
    from harness.index.embedcache import CachingEmbedder
    from harness.state.build import build_state

    name, folder = args.corpus.split("=", 1)
    corpus = read_corpus(name, Path(folder))
    docs = [d for m in corpus.meetings for d in meeting_documents(m, ChunkingPolicy())]
    texts = sorted({embedding_text(d, "header") for d in docs})
    distinct = len(texts)
    if args.sample is not None and args.sample < distinct:
        import random

        texts = sorted(random.Random(args.seed).sample(texts, args.sample))
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-batch-independence-"))
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    print(f"{date.today()}  {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start", flush=True)

    embedder = SentenceTransformerEmbedder()
    embedder.encode(texts[:64])
    embedder._model.encode(texts[:64], batch_size=64)  # warm-up: first calls pay one-off costs
    clock = _Clock()
    timed = _Interleaved(embedder, clock)
    started = time.perf_counter()
    cached = CachingEmbedder(timed, cache, piece=args.piece)  # type: ignore[arg-type]
    cached.prepare(texts)
    prepare = time.perf_counter() - started - clock.wall["raw"] - clock.wall["nofill"]
    load_after_encode = os.getloadavg()[0]

    sampled = len(texts) < distinct
    if not sampled:
        warm, said = _build(args.corpus, work / "warm", str(cache))
        vectors = np.load(work / "warm" / "index" / "vectors-header.npy")
        rows = (work / "warm" / "index" / "docs.jsonl").read_text(encoding="utf-8").splitlines()
        in_state = [embedding_text(doc_from_record(json.loads(row)), "header") for row in rows]
        same_as_encoded = vectors.tobytes() == cached.lookup(in_state).tobytes()
    queries = sorted({q.text for q in corpus.queries})
    _timed(clock, "queries raw", lambda: embedder._model.encode(queries, batch_size=64, normalize_embeddings=True))
    _timed(clock, "queries independent", lambda: embedder.encode(queries))
    part = corpus.model_copy(update={"meetings": corpus.meetings[: args.check_meetings]})
    build_state(work / "part-warm", [part], {"header": embedder}, embedding_cache=cache)
    build_state(work / "part-none", [part], {"header": embedder})
    identical = _files(work / "part-warm") == _files(work / "part-none")

    n = len(texts)
    raw, ind, nofill = clock.wall["raw"], clock.wall["independent"], clock.wall["nofill"]
    print(f"distinct texts            {distinct} (header mode, {corpus.name}, {len(corpus.meetings)} meetings)")
    if sampled:
        print(f"encoded                   {n}: a uniform sample, seed {args.seed}")
    print(f"raw encode (batch 64)     {raw:8.1f} s wall {clock.cpu['raw']:8.1f} s cpu  {n / raw:6.1f} texts/s")
    print(f"batch-independent         {ind:8.1f} s wall {clock.cpu['independent']:8.1f} s cpu  {n / ind:6.1f} texts/s"
          f"  throughput vs raw {raw / ind:.2f} (cpu {clock.cpu['raw'] / clock.cpu['independent']:.2f})")
    print(f"  + cache writes          {prepare:8.1f} s wall (a cold cached build's encoding)  {raw / prepare:.2f}")
    print(f"one-length, no fill       {nofill:8.1f} s wall {clock.cpu['nofill']:8.1f} s cpu  {n / nofill:6.1f} texts/s"
          f"  throughput vs raw {raw / nofill:.2f}; bit-identical to the filled batches: {timed.nofill_identical}")
    print(f"max |raw - independent|   {timed.max_raw_diff:.2e}")
    if sampled:
        print("warm rebuild (command)    skipped: the cache holds a sample only")
    else:
        print(f"warm rebuild (command)    {warm:8.1f} s  ragsweep state build --corpus {args.corpus}: {said}")
        print(f"  its vectors are the bytes encoded above: {same_as_encoded}")
    print(f"queries ({len(queries)} distinct)   raw {clock.wall['queries raw']:.1f} s, batch-independent "
          f"{clock.wall['queries independent']:.1f} s (once per bench run)")
    print(f"first {args.check_meetings} meetings, warm cache vs no cache: states byte-identical: {identical}")
    print(f"load average              {load_after_encode:.1f} after the encodes, {os.getloadavg()[0]:.1f} at the end")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
