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

from harness.bench.answers import arm_answers
from harness.bench.config import BenchConfig
from harness.bench.latency import percentiles, ranking_agreement
from harness.bench.runinfo import RunInfo
from harness.bench.stack import open_stack
from harness.bench.stages import QueryOutcome, QueryRun
from harness.errors import UsageError
from harness.index.embed import Embedder
from harness.index.provenance import refuse_mixed, survey
from harness.judge import judge
from harness.metrics.engine import evaluate
from harness.metrics.files import file_measures
from harness.metrics.normalise import normalise_run
from harness.model import Run
from harness.report.arm import arm_files
from harness.report.files import write_files
from harness.report.results import Claim, build_metrics
from harness.retrieval.chunks import HybridRetriever
from harness.retrieval.rerank import CrossEncoderReranker, refuse_untrained
from harness.state import State


def run_bench(state: State, config: BenchConfig, embedder: Embedder, out: Path,
              compare: Path | None = None, progress: Callable[[int, int], None] | None = None, *,
              opensearch_url: str = "", pg_dsn: str = "") -> dict[str, Any]:
    """Run one arm over ``state`` and write its results to ``out``; ``opensearch_url`` is the stack's
    (--backend stack, --time-also stack) and ``pg_dsn`` its PostgreSQL (the answers of a state
    ingested from it), both from the caller's settings."""
    started = time.time()
    stage = config.bench_stage
    corpora = [c for c in state.corpora if not config.corpora or c.name in config.corpora]
    if not corpora:
        raise UsageError(f"no corpus of {', '.join(config.corpora)} in the state {state.path}")
    embedding = state.index.meta["embedding"].get(config.arm.embedding_text)
    if embedding is None:
        state.index.vectors(config.arm.embedding_text)  # raises with the rebuild hint
    uses_stack = "stack" in (config.backend, config.time_also)
    # settles the stack's index, or refuses to measure it
    opened = open_stack(state, opensearch_url, config.knn_strategy, config.settle_timeout) if uses_stack else None
    stack = opened if config.backend == "stack" else None
    search: Any = stack.backend if stack else state.index
    dimension = stack.backend.dimension(config.arm.embedding_text) if stack else embedding["dimension"]
    index_block = {
        **survey(search.embedding_models(config.arm.embedding_text), dimension=dimension,
                 configured=embedder.identity),
        **search.describe(),
        "embedding_text": config.arm.embedding_text,
    }
    refuse_mixed(index_block)
    if embedding["model"] != embedder.identity:
        raise UsageError(f"the query encoder {embedder.identity} is not the model that built the index "
                         f"({embedding['model']}); pass --embedding-model for that model")

    reranker = None
    if stage.needs_reranker:
        assert config.reranker is not None
        reranker = CrossEncoderReranker(config.reranker)
        refuse_untrained(reranker.provenance)

    meetings = [m for c in corpora for m in c.meetings]
    queries = sorted((q for c in corpora for q in c.queries), key=lambda q: q.id)
    judgements = judge(queries, meetings, state.chunks(), config.policy)
    judged = [q for q in queries if q.id in set(judgements.judged_queries)]
    vectors = embedder.encode([q.text for q in judged]) if judged else None
    retriever: Any = (stack.retriever(config.arm.embedding_text, config.fusion, config.resolved_fusion_mode) if stack
                      else HybridRetriever(state.index, config.arm.embedding_text, config.fusion))
    paired: Any = None
    if config.time_also == "stack":
        assert opened is not None
        paired = opened.retriever(config.arm.embedding_text, config.fusion, config.fusion_mode or "server")
    elif config.time_also == "embedded":
        paired = HybridRetriever(state.index, config.arm.embedding_text, config.fusion)
    query_run = QueryRun(retriever=retriever, budget=config.budget, judged=judged, vectors=vectors,
                         gold_files_only=config.arm.scope == "gold-files", reranker=reranker,
                         texts={d["id"]: d["content"] for d in state.index.docs} if reranker else {},
                         paired=paired)

    def one(i: int) -> QueryOutcome:
        return stage.answer(query_run, i)

    outcomes: dict[str, QueryOutcome] = {}
    if opened:
        opened.begin()  # indexing.total before the measurement
    with ThreadPoolExecutor(max_workers=config.workers) as pool_executor:
        for n, (i, outcome) in enumerate(
            zip(range(len(judged)), pool_executor.map(one, range(len(judged))), strict=True), start=1
        ):
            outcomes[judged[i].id] = outcome
            if progress:
                progress(n, len(judged))

    run = Run(ranked={qid: tuple(h.ranked() for h in o.hits) for qid, o in outcomes.items()})
    normalised = normalise_run(run, stage.normalisation)
    evaluation = evaluate(judgements.qrels, normalised)
    doc_files = {d["id"]: d["file_uuid"] for d in state.index.docs}
    per_file: dict[str, dict[str, float]] = {}
    for qid, docs in judgements.qrels.judgements.items():
        gold_files = {doc_files[d] for d in docs}
        per_file[qid] = file_measures(normalised.ranked.get(qid, ()), gold_files)
    extra: dict[str, Any] = {}
    if stage.extra is not None:
        key, summarise = stage.extra
        extra[key] = summarise(outcomes, judged)
    extra["answers"] = arm_answers(state, corpora, config.answers, search, backend=config.backend, pg_dsn=pg_dsn)
    stack_info = opened.end() if opened else None  # indexing.total after: a write voids it, nothing is written
    claim = Claim(
        control_name=config.control_name, corpora=corpora, judgements=judgements, evaluation=evaluation,
        file_measures=per_file, policy=config.policy, chunking=state.manifest["chunking"],
        retrieval=config.retrieval_block(reranker.provenance if reranker else None), index=index_block, extra=extra,
    )
    metrics, per_query = build_metrics(claim)
    latency = percentiles([o.seconds * 1000 for o in outcomes.values()])
    runinfo = {
        "control_name": config.control_name,
        "elapsed_seconds": round(time.time() - started, 3),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "host": platform.node(),
        "state": str(state.path),
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
    RunInfo.model_validate(runinfo)
    write_files(out, arm_files(config.control_name, metrics, per_query, runinfo, normalised, judgements.qrels,
                               compare))
    return metrics
