"""A group's arms over one shard of its judged queries, and the merge of the shards' per-query outcomes.

The judged queries (sorted by id, harness.bench.context) are split into W shards by position:
query i is shard ``i mod W``'s. A shard process encodes its own queries only (a query's vector
depends on the model and its text alone, never on the texts encoded beside it: harness.index.encoder),
fetches the group's legs for them once, and answers each of them for every arm of the group
(:func:`answer_shard`); its outcomes cross to the merge as JSON (:func:`outcomes_json`, floats
written as Python's shortest round-trip repr, so every score comes back with the same bits). The
merge (:func:`merged_outcomes`) puts every judged query's outcome back in judged order, refusing a
query answered twice or by no shard, and the arm's files are written from them by
harness.bench.run.write_arm, which computes everything over all queries (means, answers, the run's
order) from the per-query values: the files are the bytes of the unsharded run.

Only stages that fetch nothing beyond the legs and never call a model shard (retrieve, diversify:
``fork_safe``), and only without ``--time-also``: their outcome is the ranked hits and a duration.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.bench.config import BenchConfig, covers, legs_key
from harness.bench.group import GroupRun
from harness.bench.run import arm_retriever
from harness.bench.stages import QueryOutcome, QueryRun
from harness.errors import IntegrityError, UsageError
from harness.index.embed import Embedder
from harness.model import Query
from harness.retrieval.chunks import Hit, HybridRetriever

SHARD_SCHEMA = "ragsweep.shard/1"


def shard_positions(n: int, shard: tuple[int, int]) -> list[int]:
    """The positions, among ``n`` judged queries, of shard (k, W)'s: every i with i mod W == k."""
    k, w = shard
    return list(range(k, n, w))


def shard_vectors(embedder: Embedder, shard: tuple[int, int]) -> Any:
    """What encodes a shard's judged queries (open_context's ``vectors``): its own queries' rows, the others
    zero (never read: the shard answers its own queries only)."""

    def encode(judged: Sequence[Query]) -> np.ndarray:
        positions = shard_positions(len(judged), shard)
        own = np.asarray(embedder.encode([judged[i].text for i in positions]), dtype=np.float32)
        vectors = np.zeros((len(judged), own.shape[1] if own.ndim == 2 else 0), dtype=np.float32)
        vectors[positions] = own
        return vectors

    return encode


def check_shardable(config: BenchConfig) -> None:
    stage = config.bench_stage
    if not stage.fork_safe or stage.extra is not None or config.time_also is not None:
        raise UsageError(f"arm {config.control_name}: the {stage.name} stage does not shard by query (only retrieve "
                         "and diversify without --time-also do); run its group unsharded")


def answer_shard(group: GroupRun, configs: Sequence[BenchConfig],
                 shard: tuple[int, int]) -> dict[str, dict[str, QueryOutcome]]:
    """Every arm of ``configs`` over shard ``shard`` of the group's judged queries: the group's legs fetched
    once for the shard's queries, then each arm's outcome per query, by arm name then query id."""
    context = group.context
    for config in configs:
        context.check(config)
        check_shardable(config)
        if not covers(group.key, legs_key(config.arm), config.backend):
            raise UsageError(f"arm {config.control_name} fetches other legs ({legs_key(config.arm)}) than its "
                             f"group ({group.key}); run it in its own group")
    positions = shard_positions(len(context.judged), shard)
    first = configs[0]
    retriever = HybridRetriever(context.state.index, first.arm.embedding_text, first.fusion, cache=context.legs)
    depth = int(group.key["fusion_window"])
    for i in positions:  # the group's legs, at its deepest window, which every arm cuts at its own
        query = context.judged[i]
        scope = list(query.gold_files) if first.arm.scope == "gold-files" else None
        retriever.legs(query.text, context.vectors[i], depth, file_uuids=scope)
    answered: dict[str, dict[str, QueryOutcome]] = {}
    for config in configs:
        run = QueryRun(retriever=arm_retriever(context, config), budget=config.budget, judged=context.judged,
                       vectors=context.vectors, gold_files_only=config.arm.scope == "gold-files")
        answered[config.control_name] = {context.judged[i].id: config.bench_stage.answer(run, i)
                                         for i in positions}
    return answered


def outcomes_json(arm: str, config_hash: str, shard: tuple[int, int], outcomes: dict[str, QueryOutcome]) -> str:
    """One shard's outcomes of one arm, as the merge reads them (:func:`read_outcomes`)."""
    doc = {"schema": SHARD_SCHEMA, "arm": arm, "config_hash": config_hash, "shard": f"{shard[0] + 1}/{shard[1]}",
           "outcomes": {qid: {"seconds": o.seconds,
                              "hits": [[h.doc_id, h.file_uuid, h.chunk_index, h.doc_type, h.score] for h in o.hits]}
                        for qid, o in outcomes.items()}}
    return json.dumps(doc, separators=(",", ":")) + "\n"


def read_outcomes(text: str, where: str, arm: str, config_hash: str,
                  shard: tuple[int, int]) -> dict[str, QueryOutcome]:
    """The outcomes :func:`outcomes_json` wrote, checked to be this arm's, config's and shard's (exit 5 if not)."""
    try:
        doc = json.loads(text)
        want = {"schema": SHARD_SCHEMA, "arm": arm, "config_hash": config_hash,
                "shard": f"{shard[0] + 1}/{shard[1]}"}
        got = {name: doc.get(name) for name in want}
        if got != want:
            raise IntegrityError(f"{where}: written for {got}, not {want}; rerun the sweep")
        return {qid: QueryOutcome(hits=[Hit(doc_id=h[0], file_uuid=h[1], chunk_index=int(h[2]), doc_type=h[3],
                                            score=float(h[4])) for h in o["hits"]], seconds=float(o["seconds"]))
                for qid, o in doc["outcomes"].items()}
    except (json.JSONDecodeError, KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise IntegrityError(f"{where}: not a shard's outcomes ({type(e).__name__}: {e}); rerun the sweep") from e


def merged_outcomes(judged: Sequence[Query], shards: Sequence[dict[str, QueryOutcome]],
                    arm: str) -> dict[str, QueryOutcome]:
    """Every judged query's outcome, in judged order, from the W shards' (shard k's at position k): each
    query must be answered by its own shard and no other (exit 5 naming the first that is not)."""
    w = len(shards)
    merged: dict[str, QueryOutcome] = {}
    for i, query in enumerate(judged):
        outcome = shards[i % w].get(query.id)
        if outcome is None:
            raise IntegrityError(f"arm {arm}: query {query.id} (judged query {i + 1}) is missing from shard "
                                 f"{i % w + 1}/{w}'s outcomes; rerun the sweep")
        merged[query.id] = outcome
    extra = sum(len(s) for s in shards) - len(merged)
    if extra:
        raise IntegrityError(f"arm {arm}: the shards answered {extra} queries that are not theirs or not judged; "
                             "rerun the sweep")
    return merged
