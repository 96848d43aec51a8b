"""The cross-encoder on a CUDA device against the CPU: the same pairs, one forward pass each.

    python benchmarks/bench_rerank_device.py --pairs PAIRS.json [--pairs MORE.json] \\
        [--reranker DIR | --random-init TOKENIZER_DIR] [--device cuda] [--cpu-threads N]

PAIRS.json is what ``benchmarks/bench_rerank.py --pairs-out`` writes ([[query, [passage, ...]], ...]).
Every pair is scored by ``CrossEncoderReranker`` on the CPU and on ``--device``, one forward pass per
pair, as results score them. Printed: pairs/s each way, the largest |cpu - device| and how many pairs
differ in some bit, how many of the device's scores change when each query's passages are asked again
reversed (a score cached per pair needs 0), and the device's provenance and score-cache key (its own
folder, apart from the CPU's).

``--random-init DIR``: a cross-encoder shaped like MiniLM-L6 (6 layers, 384 wide, 12 heads) with seeded
random weights and DIR's tokenizer, for a machine that has no cross-encoder weights: its timing is the
real network's, its scores mean nothing (it has a classification head, so its provenance would say
"user supplied": the script says "random weights" instead). Exits 1 when the
device's repeat differs, else 0. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MINILM_L6 = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
             "max_position_embeddings": 512, "type_vocab_size": 2}


def random_cross_encoder(tokenizer: Path, out: Path, seed: int) -> Path:
    """A MiniLM-L6-shaped BERT sequence classifier with seeded random weights and ``tokenizer``'s files."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    vocab = sum(1 for _ in (tokenizer / "vocab.txt").open(encoding="utf-8"))
    torch.manual_seed(seed)
    model = BertForSequenceClassification(BertConfig(vocab_size=vocab, num_labels=1, **MINILM_L6))
    model.save_pretrained(out)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (tokenizer / name).is_file():
            shutil.copy(tokenizer / name, out / name)
    return out


def timed(reranker, work: list[tuple[str, list[str]]]) -> tuple[list[list[float]], float]:
    reranker.score(work[0][0], work[0][1][:2])  # warm-up: the first pass allocates (and on a GPU, compiles)
    t = time.perf_counter()
    scores = [reranker.score(q, c) for q, c in work]
    return scores, time.perf_counter() - t


def by_length(reranker, work: list[tuple[str, list[str]]], most: int) -> tuple[list[list[float]], float, int]:
    """Every pair scored in a batch of pairs of its own token length (so nothing is padded), up to ``most``
    a batch: the scores in ``work``'s shape, the seconds, and how many batches."""
    model = reranker._model
    where: dict[int, list[tuple[int, int]]] = {}
    for i, (q, c) in enumerate(work):
        for j, passage in enumerate(c):
            n = len(model.tokenizer(q, passage, truncation=True, max_length=model.max_seq_length)["input_ids"])
            where.setdefault(n, []).append((i, j))
    out = [[0.0] * len(c) for _, c in work]
    batches = 0
    t = time.perf_counter()
    for places in where.values():
        for k in range(0, len(places), most):
            chunk = places[k:k + most]
            scores = model.predict([(work[i][0], work[i][1][j]) for i, j in chunk], batch_size=len(chunk),
                                   show_progress_bar=False, convert_to_numpy=True)
            for (i, j), score in zip(chunk, scores, strict=True):
                out[i][j] = float(score)
            batches += 1
    return out, time.perf_counter() - t, batches


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=Path, action="append", required=True)
    p.add_argument("--reranker", type=Path, help="cross-encoder directory")
    p.add_argument("--random-init", type=Path, metavar="TOKENIZER_DIR",
                   help="no weights here: a MiniLM-L6-shaped cross-encoder with seeded random weights")
    p.add_argument("--seed", type=int, default=20261204)
    p.add_argument("--device", default="cuda")
    p.add_argument("--cpu-threads", type=int, help="torch threads for the CPU side (default torch's)")
    p.add_argument("--batch", type=int, default=0,
                   help="also score each query's passages on the device in padded batches of this size, "
                        "and count the pairs whose score then differs from its own pass (default: not)")
    p.add_argument("--buckets", type=int, default=0,
                   help="also score on the device in batches of up to this many pairs of one token length (no "
                        "padding), and count the pairs whose score then differs from its own pass (default: not)")
    args = p.parse_args()
    if (args.reranker is None) == (args.random_init is None):
        p.error("give one of --reranker DIR and --random-init TOKENIZER_DIR")

    import torch

    from harness.retrieval.rerank import CrossEncoderReranker

    if args.cpu_threads:
        torch.set_num_threads(args.cpu_threads)
    work = [(q, list(c)) for f in args.pairs for q, c in json.loads(f.read_text(encoding="utf-8"))]
    pairs = sum(len(c) for _, c in work)
    with tempfile.TemporaryDirectory(prefix="bench-rerank-device-") as tmp:
        path = args.reranker or random_cross_encoder(args.random_init, Path(tmp) / "model", args.seed)
        untrained = args.reranker is None
        cpu = CrossEncoderReranker(path, allow_untrained=untrained)
        device = CrossEncoderReranker(path, allow_untrained=untrained, device=args.device)
        kind = f"random weights (seed {args.seed}): scores mean nothing" if untrained else device.provenance["kind"]
        print(f"{os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads); "
              f"{len(work)} queries, {pairs} pairs; reranker {kind}", flush=True)
        on_cpu, cpu_s = timed(cpu, work)
        on_device, device_s = timed(device, work)
        again = [list(reversed(device.score(q, list(reversed(c))))) for q, c in work]
        key = device.cache_key()
        if args.batch:
            t = time.perf_counter()
            batched = [[float(x) for x in device._model.predict([(q, x) for x in c], batch_size=args.batch,
                                                                show_progress_bar=False, convert_to_numpy=True)]
                       for q, c in work]
            batch_s = time.perf_counter() - t
        if args.buckets:
            bucketed, bucket_s, batches = by_length(device, work, args.buckets)
    flat_cpu = [s for scores in on_cpu for s in scores]
    flat_device = [s for scores in on_device for s in scores]
    diffs = [abs(a - b) for a, b in zip(flat_cpu, flat_device, strict=True)]
    moved = sum(a != b for sa, sb in zip(on_device, again, strict=True) for a, b in zip(sa, sb, strict=True))
    print(f"cpu                      {pairs / cpu_s:8.1f} pairs/s  ({cpu_s:.2f} s)")
    print(f"{args.device:<24} {pairs / device_s:8.1f} pairs/s  ({device_s:.2f} s)  {cpu_s / device_s:.1f}x the cpu")
    print(f"max |cpu - {args.device}|       {max(diffs):.3e}; {sum(d > 0 for d in diffs)} of {pairs} pairs differ "
          "in some bit")
    print(f"{args.device}, each query's passages asked again reversed: {moved} of {pairs} differ")
    if args.batch:
        gaps = [abs(a - b) for sa, sb in zip(on_device, batched, strict=True) for a, b in zip(sa, sb, strict=True)]
        print(f"{args.device}, batches of {args.batch:<4}   {pairs / batch_s:8.1f} pairs/s  ({batch_s:.2f} s); "
              f"{sum(g > 0 for g in gaps)} of {pairs} pairs differ from their own pass, max {max(gaps):.3e}")
    if args.buckets:
        gaps = [abs(a - b) for sa, sb in zip(on_device, bucketed, strict=True) for a, b in zip(sa, sb, strict=True)]
        print(f"{args.device}, one length a batch (up to {args.buckets}, {batches} batches)  "
              f"{pairs / bucket_s:8.1f} pairs/s  ({bucket_s:.2f} s); {sum(g > 0 for g in gaps)} of {pairs} pairs "
              f"differ from their own pass, max {max(gaps):.3e}")
    print(f"device provenance        {device.provenance['device']}")
    print(f"score cache key          {json.dumps({k: v for k, v in key.items() if k != 'scoring'}, sort_keys=True)}")
    return 0 if moved == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
