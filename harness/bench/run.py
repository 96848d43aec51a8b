"""One bench invocation ("an arm"): open the state, judge, retrieve, score, write the results.

Which stage answers a query is the registry's (harness.bench.stages); this module is the
order the arm's steps run in. Scopes: ``corpus`` (what a user gets) and ``gold-files`` (an
oracle upper bound: the query's own gold files only).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.bench.config import BenchConfig
from harness.bench.context import ArmContext, open_context
from harness.bench.latency import percentiles, ranking_agreement
from harness.bench.runinfo import RunInfo
from harness.bench.stages import QueryOutcome, QueryRun
from harness.index.embed import Embedder
from harness.metrics.engine import evaluate
from harness.metrics.files import file_measures
from harness.metrics.normalise import normalise_ranked
from harness.report.arm import arm_files
from harness.report.files import write_files
from harness.report.results import Claim, build_metrics
from harness.retrieval.chunks import HybridRetriever
from harness.state import State
from harness.state.contents import measured


def run_bench(state: State, config: BenchConfig, embedder: Embedder, out: Path,
              compare: Path | None = None, progress: Callable[[int, int], None] | None = None, *,
              opensearch_url: str = "", pg_dsn: str = "", score_cache: Path | None = None) -> dict[str, Any]:
    """Run one arm over ``state`` and write its results to ``out``; ``opensearch_url`` is the stack's
    (--backend stack, --time-also stack) and ``pg_dsn`` its PostgreSQL (the answers of a state
    ingested from it), both from the caller's settings; ``score_cache``: the cross-encoder score
    cache's root (None: none)."""
    started = time.time()
    context = open_context(state, config, embedder, opensearch_url=opensearch_url, pg_dsn=pg_dsn,
                           score_cache=score_cache)
    return run_arm(context, config, out, compare, progress, started=started)


def arm_retriever(context: ArmContext, config: BenchConfig) -> Any:
    """What answers the arm's retrieval: the stack's retriever (--backend stack), else the state's
    index, its legs read from the context's leg cache when it has one."""
    if config.backend == "stack":
        return context.opened.retriever(config.arm.embedding_text, config.fusion, config.resolved_fusion_mode)
    return HybridRetriever(context.state.index, config.arm.embedding_text, config.fusion, cache=context.legs)


def run_arm(context: ArmContext, config: BenchConfig, out: Path, compare: Path | None = None,
            progress: Callable[[int, int], None] | None = None, *, started: float | None = None,
            legs_info: Callable[[], dict[str, Any]] | None = None, first: int = 0) -> dict[str, Any]:
    """Retrieve, score and write one arm over an opened context (its legs shared with the context's
    other arms when the context has a LegCache); what ``legs_info`` returns once the arm has run goes
    into runinfo.json as ``legs``. ``first``: the judged query answered first, the rest after it in
    order and then from the top (a query's answer does not depend on when it is asked, as with
    ``workers`` threads; the files list the queries in judged order whatever the order they ran in)."""
    started = time.time() if started is None else started
    context.check(config)
    stage, state, judged, opened = config.bench_stage, context.state, context.judged, context.opened
    reranker = None
    rerank_before: dict[str, int] = {}
    if stage.needs_reranker:
        assert config.reranker is not None
        reranker = context.reranker(config.reranker)
        rerank_before = reranker.counts()
    retriever = arm_retriever(context, config)
    paired: Any = None
    if config.time_also == "stack":
        assert opened is not None
        paired = opened.retriever(config.arm.embedding_text, config.fusion, config.fusion_mode or "server")
    elif config.time_also == "embedded":
        paired = HybridRetriever(state.index, config.arm.embedding_text, config.fusion)
    query_run = QueryRun(retriever=retriever, budget=config.budget, judged=judged, vectors=context.vectors,
                         gold_files_only=config.arm.scope == "gold-files", reranker=reranker,
                         texts=context.texts() if reranker else {}, paired=paired)

    def one(i: int) -> QueryOutcome:
        return stage.answer(query_run, i)

    order = [(first + k) % len(judged) for k in range(len(judged))]
    answered: dict[int, QueryOutcome] = {}
    if opened:
        opened.begin()  # indexing.total before the measurement
    with ThreadPoolExecutor(max_workers=config.workers) as pool_executor:
        for n, (i, outcome) in enumerate(zip(order, pool_executor.map(one, order), strict=True), start=1):
            answered[i] = outcome
            if progress:
                progress(n, len(judged))
    outcomes = {judged[i].id: answered[i] for i in range(len(judged))}
    return write_arm(context, config, out, outcomes, compare, started=started, legs_info=legs_info,
                     reranker=reranker, rerank_before=rerank_before)


def write_arm(context: ArmContext, config: BenchConfig, out: Path, outcomes: dict[str, QueryOutcome],
              compare: Path | None = None, *, started: float, legs_info: Callable[[], dict[str, Any]] | None = None,
              reranker: Any = None, rerank_before: dict[str, int] | None = None) -> dict[str, Any]:
    """Score the arm's ``outcomes`` (every judged query's, by query id, in judged order) and write its files:
    everything computed over all queries (the means, the answers, the run's order) is computed here, from
    the per-query outcomes, however many processes answered them (harness.bench.shard)."""
    stage, state, judged, opened = config.bench_stage, context.state, context.judged, context.opened
    paired = config.time_also
    normalised = normalise_ranked({qid: o.hits for qid, o in outcomes.items()}, stage.normalisation)
    judgements = context.judgements
    evaluation = evaluate(judgements.qrels, normalised)
    doc_files = context.doc_files()
    per_file: dict[str, dict[str, float]] = {}
    for qid, docs in judgements.qrels.judgements.items():
        gold_files = {doc_files[d] for d in docs}
        per_file[qid] = file_measures(normalised.ranked.get(qid, ()), gold_files)
    extra: dict[str, Any] = {}
    if stage.extra is not None:
        key, summarise = stage.extra
        extra[key] = summarise(outcomes, judged)
    extra["answers"] = context.answers()
    stack_info = opened.end() if opened else None  # indexing.total after: a write voids it, nothing is written
    claim = Claim(
        control_name=config.control_name, corpora=context.corpora, judgements=judgements, evaluation=evaluation,
        file_measures=per_file, policy=config.policy, chunking=state.manifest["chunking"],
        retrieval=config.retrieval_block(reranker.provenance if reranker else None), index=context.index_block,
        extra=extra,
    )
    metrics, per_query = build_metrics(claim)
    latency = percentiles([o.seconds * 1000 for o in outcomes.values()])
    runinfo = {
        "control_name": config.control_name,
        "elapsed_seconds": round(time.time() - started, 3),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "host": platform.node(),
        "state": str(state.path),
        "state_measured": measured(state.path, state.manifest),
        "workers": config.workers,
        "retrieval_latency_ms": {**latency, "concurrency": config.workers},
    }
    if paired is not None:
        runinfo["retrieval_latency_ms_by_backend"] = {
            config.backend: {**latency, "concurrency": config.workers},
            str(config.time_also): {**percentiles([o.paired[1] * 1000 for o in outcomes.values()
                                                   if o.paired is not None]),
                                    "concurrency": config.workers},
            "pairing": "same queries and query vectors; the two calls per query alternate which runs first",
        }
        runinfo["backend_agreement"] = ranking_agreement(outcomes, config.backend, str(config.time_also))
    if stack_info is not None:
        runinfo["stack"] = stack_info
    if legs_info is not None:
        runinfo["legs"] = legs_info()
    if reranker is not None:
        now, before = reranker.counts(), rerank_before or {}
        runinfo["rerank"] = {**{k: now[k] - before.get(k, 0) for k in now},
                             "cache": str(reranker.store.folder) if reranker.store is not None else None}
    RunInfo.model_validate(runinfo)
    write_files(out, arm_files(config.control_name, metrics, per_query, runinfo, normalised, judgements.qrels,
                               compare))
    return metrics
