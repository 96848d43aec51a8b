"""A cold state build against raw SentenceTransformer.encode on the same texts, and a warm rebuild.

    python benchmarks/bench_cold_build.py --corpus synthetic=var/synthetic/budget-200-20260812 \\
        --corpus qmsum=var/corpora/qmsum [--work DIR]
    python benchmarks/bench_cold_build.py --raw-only var/states/default-200-20260812-qmsum

1. ``ragsweep state build`` of the corpora into WORK/state with an empty embedding cache
   (WORK/cache): the cold build, timed as a command.
2. The same command again, now every text cached: the warm rebuild, timed. Its files are
   compared with the cold build's (tantivy names its segment files at random, so the index's
   files are compared by content, their names aside).
3. Raw ``SentenceTransformer.encode(batch_size=64, normalize_embeddings=True)`` over the
   state's distinct header texts: the ceiling. The build's encoding time is taken as cold minus
   warm (the warm rebuild does everything else the cold one does: chunking, BM25, files), and
   its throughput is compared with raw's (issue 13's goal: >= 0.9x).

``--raw-only STATE`` runs step 3 alone over a built state, to pair with a cold build timed
elsewhere (``/usr/bin/time make state`` with an empty cache). Each encode of the two-corpus
state's 129,417 texts takes about half an hour on two cores, so the whole benchmark is an hour.
Numbers print to stdout; nothing here is a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def state_texts(state: Path) -> list[str]:
    """The distinct header-mode embedding texts of a built state, sorted."""
    from harness.index.documents import doc_from_record, embedding_text

    rows = (state / "index" / "docs.jsonl").read_text(encoding="utf-8").splitlines()
    return sorted({embedding_text(doc_from_record(json.loads(row)), "header") for row in rows})


def raw_encode_seconds(texts: list[str]) -> float:
    from harness.index.embed import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()._model
    model.encode(texts[:64], batch_size=64)  # warm-up: first calls pay one-off costs
    started = time.perf_counter()
    model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return time.perf_counter() - started


def build_seconds(corpora: list[str], out: Path, cache: Path) -> tuple[float, str]:
    """Seconds one ``ragsweep state build`` command took, and its embedding-cache line."""
    argv = [sys.executable, "-m", "harness", "state", "build", "--out", str(out), "--embedding-cache", str(cache),
            "--force"]
    for corpus in corpora:
        argv += ["--corpus", corpus]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, check=True, capture_output=True, text=True)
    took = time.perf_counter() - started
    return took, next((line.strip() for line in done.stderr.splitlines() if "embedding cache" in line), "?")


def content_digests(state: Path) -> dict[str, str]:
    """sha256 per file; tantivy's segment files keyed by extension and content, as their names are random."""
    out: dict[str, str] = {}
    for path in sorted(p for p in state.rglob("*") if p.is_file()):
        rel = str(path.relative_to(state))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if "tantivy" in path.parts:
            if path.name in {"meta.json", ".managed.json"}:
                continue  # they list the segment names
            rel = f"index/tantivy/*{path.suffix}:{digest}"
        out[rel] = digest
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", action="append", default=[], help="NAME=DIR, as for ragsweep state build")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one, removed)")
    p.add_argument("--raw-only", type=Path, default=None, metavar="STATE", help="time raw encode over STATE only")
    args = p.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC  {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)

    if args.raw_only is not None:
        texts = state_texts(args.raw_only)
        raw = raw_encode_seconds(texts)
        print(f"distinct texts           {len(texts)} (header mode, {args.raw_only})")
        print(f"raw encode (batch 64)    {raw:8.1f} s  {len(texts) / raw:8.1f} texts/s")
        print(f"load average             {os.getloadavg()[0]:.1f} at the end")
        return 0
    if not args.corpus:
        p.error("give --corpus NAME=DIR (one or more), or --raw-only STATE")

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-cold-build-"))
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    try:
        cold, cold_said = build_seconds(args.corpus, work / "cold", cache)
        print(f"cold build (command)     {cold:8.1f} s  {cold_said}", flush=True)
        warm, warm_said = build_seconds(args.corpus, work / "warm", cache)
        print(f"warm rebuild (command)   {warm:8.1f} s  {warm_said}", flush=True)
        same = content_digests(work / "cold") == content_digests(work / "warm")
        texts = state_texts(work / "cold")
        raw = raw_encode_seconds(texts)
        encode = cold - warm
        n = len(texts)
        print(f"  warm and cold states identical (tantivy segment names aside): {same}")
        print(f"distinct texts           {n} (header mode)")
        print(f"build encoding           {encode:8.1f} s  {n / encode:8.1f} texts/s  (cold - warm)")
        print(f"raw encode (batch 64)    {raw:8.1f} s  {n / raw:8.1f} texts/s")
        print(f"build / raw throughput   {raw / encode:8.3f}  (goal >= 0.9)")
        print(f"load average             {os.getloadavg()[0]:.1f} at the end")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
