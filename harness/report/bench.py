"""One bench invocation ("an arm"): judge, retrieve, score, write the results.

Stages:

* ``retrieve``: ``retrieve_chunks(query, size)`` alone — the candidate pool every fusion
  or indexing change moves. The run is re-sorted by the tie policy before scoring.
* ``rerank``: ``retrieve_chunks(query, candidate_pool)``, the cross-encoder over the
  first ``rerank_max_pairs``, then ``diversity_sample(final_chunks,
  max_chunks_per_file)``. The metric ranks exactly that list, in that order.
* ``diversify``: ``retrieve_chunks(query, candidate_pool)`` then ``diversity_sample``
  with no cross-encoder — the decomposition that separates what diversity sampling costs
  on a ranking metric from what the reranker costs. Order-preserving like rerank.
* ``route``: the retrieve stage with the router in the loop. Summarize-routed queries
  also run the digest leg, recorded beside the ranked list (``digest_leg``), never
  merged into it; the ranked list, and so the metric table, is the retrieve stage's.

Scopes: ``corpus`` (what a user gets) and ``gold-files`` (an oracle upper bound: the
query's own gold files only).
"""

from __future__ import annotations

import math
import platform
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.answers.results import AnswerSettings
from harness.errors import IntegrityError, UsageError
from harness.index.documents import EmbeddingTextMode
from harness.index.embed import Embedder
from harness.index.provenance import refuse_mixed, survey
from harness.judge import judge
from harness.judge.policy import RelevancePolicy
from harness.metrics.engine import evaluate
from harness.metrics.files import file_measures
from harness.metrics.normalise import normalise_run
from harness.metrics.trec import write_trec_qrels, write_trec_run
from harness.model import Corpus, Query, Run
from harness.report.answers_md import render_answers_md
from harness.report.files import dumps, write_files
from harness.report.markdown import render_compare, render_metrics_md
from harness.report.results import Claim, build_metrics
from harness.retrieval.chunks import Hit, HybridRetriever
from harness.retrieval.diversity import diversity_sample
from harness.retrieval.fusion import FusionConfig
from harness.retrieval.rerank import CrossEncoderReranker, refuse_untrained, rerank_order
from harness.retrieval.router import route
from harness.retrieval.window import fusion_window
from harness.state import State

Stage = Literal["retrieve", "rerank", "diversify", "route"]
Scope = Literal["corpus", "gold-files"]
STAGES: tuple[Stage, ...] = ("retrieve", "rerank", "diversify", "route")
POOLED_STAGES = frozenset({"rerank", "diversify"})
SCOPES: tuple[Scope, ...] = ("corpus", "gold-files")


@dataclass(frozen=True)
class BenchConfig:
    control_name: str
    fusion: FusionConfig
    stage: Stage = "retrieve"
    scope: Scope = "corpus"
    size: int = 48
    candidate_pool: int = 48
    final_chunks: int = 12
    max_chunks_per_file: int = 4
    rerank_max_pairs: int = 50
    embedding_text: EmbeddingTextMode = "header"
    policy: RelevancePolicy = field(default_factory=RelevancePolicy)
    reranker: Path | None = None
    workers: int = 1
    corpora: tuple[str, ...] = ()
    answers: AnswerSettings = field(default_factory=AnswerSettings)
    # -- --backend stack: OpenSearch at RAGSWEEP_OPENSEARCH_URL (docs/opensearch.md) ----------------
    backend: Literal["embedded", "stack"] = "embedded"
    fusion_mode: Literal["server", "client"] | None = None  # None: server on the stack, client embedded
    knn_strategy: Literal["exact", "hnsw"] = "exact"
    settle_timeout: float = 120.0
    time_also: Literal["embedded", "stack"] | None = None  # a paired latency pass on the other backend

    def __post_init__(self) -> None:
        for name in ("size", "candidate_pool", "final_chunks", "max_chunks_per_file", "rerank_max_pairs", "workers"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
        if self.stage == "rerank" and self.reranker is None:
            raise UsageError("--stage rerank needs --reranker DIR (cross-encoder weights; see `ragsweep reranker`)")
        if self.backend == "embedded" and (self.fusion_mode == "server" or self.knn_strategy != "exact"):
            raise UsageError("--fusion-mode server and --knn hnsw need --backend stack; the embedded backend "
                             "fuses client-side over exact kNN")
        if self.time_also is not None and (self.time_also == self.backend or self.stage != "retrieve"):
            raise UsageError(f"--time-also {self.time_also}: needs the retrieve stage and a backend other than "
                             f"--backend ({self.backend}, stage {self.stage})")

    @property
    def resolved_fusion_mode(self) -> Literal["server", "client"]:
        return self.fusion_mode or ("server" if self.backend == "stack" else "client")

    def retrieval_block(self, reranker: dict[str, Any] | None) -> dict[str, Any]:
        depth = self.candidate_pool if self.stage in POOLED_STAGES else self.size
        block: dict[str, Any] = {
            "backend": self.backend,
            "search_mode": "hybrid",
            "stage": self.stage,
            "scope": self.scope,
            "size": depth,
            "fusion_window": fusion_window(depth),
            "embedding_text": self.embedding_text,
            "fusion": self.fusion.to_dict(),
        }
        if self.stage in POOLED_STAGES:
            block.update(candidate_pool=self.candidate_pool, final_chunks=self.final_chunks,
                         max_chunks_per_file=self.max_chunks_per_file,
                         order="as the prompt receives it (diversity_sample output)")
        if self.stage == "rerank":
            block.update(rerank_max_pairs=self.rerank_max_pairs, reranker=reranker)
        if self.backend == "stack":
            block.update(fusion_mode=self.resolved_fusion_mode, knn=self.knn_strategy)
        return block


@dataclass
class QueryOutcome:
    hits: list[Hit]
    seconds: float
    digest: dict[str, Any] | None = None
    paired: tuple[list[str], float] | None = None  # --time-also: the other backend's doc ids and seconds


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    if not samples_ms:
        return {"samples": 0}
    ordered = sorted(samples_ms)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]

    return {"samples": len(ordered), "p50": pct(50), "p95": pct(95), "p99": pct(99), "max": ordered[-1],
            "mean": statistics.fmean(ordered)}


def run_bench(state: State, config: BenchConfig, embedder: Embedder, out: Path,
              compare: Path | None = None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    started = time.time()
    corpora = [c for c in state.corpora if not config.corpora or c.name in config.corpora]
    if not corpora:
        raise UsageError(f"no corpus of {', '.join(config.corpora)} in the state {state.path}")
    embedding = state.index.meta["embedding"].get(config.embedding_text)
    if embedding is None:
        state.index.vectors(config.embedding_text)  # raises with the rebuild hint
    uses_stack = "stack" in (config.backend, config.time_also)
    opened = _open_stack(state, config) if uses_stack else None  # settles, or refuses
    stack = opened if config.backend == "stack" else None
    search: Any = stack.backend if stack else state.index
    dimension = stack.backend.dimension(config.embedding_text) if stack else embedding["dimension"]
    index_block = {
        **survey(search.embedding_models(config.embedding_text), dimension=dimension,
                 configured=embedder.identity),
        **search.describe(),
        "embedding_text": config.embedding_text,
    }
    refuse_mixed(index_block)
    if embedding["model"] != embedder.identity:
        raise UsageError(f"the query encoder {embedder.identity} is not the model that built the index "
                         f"({embedding['model']}); pass --embedding-model for that model")

    reranker = None
    if config.stage == "rerank":
        assert config.reranker is not None
        reranker = CrossEncoderReranker(config.reranker)
        refuse_untrained(reranker.provenance)

    meetings = [m for c in corpora for m in c.meetings]
    queries = sorted((q for c in corpora for q in c.queries), key=lambda q: q.id)
    judgements = judge(queries, meetings, state.chunks(), config.policy)
    judged = [q for q in queries if q.id in set(judgements.judged_queries)]
    vectors = embedder.encode([q.text for q in judged]) if judged else None
    retriever: Any = (stack.retriever(config.embedding_text, config.fusion, config.resolved_fusion_mode) if stack
                      else HybridRetriever(state.index, config.embedding_text, config.fusion))
    texts = {d["id"]: d["content"] for d in state.index.docs} if reranker else {}
    paired: Any = None
    if config.time_also == "stack":
        assert opened is not None
        paired = opened.retriever(config.embedding_text, config.fusion, config.fusion_mode or "server")
    elif config.time_also == "embedded":
        paired = HybridRetriever(state.index, config.embedding_text, config.fusion)

    def timed(target: Any, i: int) -> tuple[list[Hit], float]:
        t0 = time.perf_counter()
        hits = target.retrieve(judged[i].text, vectors[i], config.size,  # type: ignore[index]
                               file_uuids=list(judged[i].gold_files) if config.scope == "gold-files" else None)
        return hits, time.perf_counter() - t0

    def one(i: int) -> QueryOutcome:
        query, vector = judged[i], vectors[i]  # type: ignore[index]
        scope = list(query.gold_files) if config.scope == "gold-files" else None
        t0 = time.perf_counter()
        if config.stage == "rerank":
            assert reranker is not None
            pool = retriever.retrieve(query.text, vector, config.candidate_pool, file_uuids=scope)
            head, tail = pool[: config.rerank_max_pairs], pool[config.rerank_max_pairs:]
            order = rerank_order(reranker.score(query.text, [texts[h.doc_id] for h in head]))
            hits = diversity_sample([head[j] for j in order] + tail, config.final_chunks, config.max_chunks_per_file)
        elif config.stage == "diversify":
            pool = retriever.retrieve(query.text, vector, config.candidate_pool, file_uuids=scope)
            hits = diversity_sample(pool, config.final_chunks, config.max_chunks_per_file)
        elif paired is not None:  # alternate which backend goes first, so neither always runs warm
            if i % 2:
                (other, other_s), (hits, seconds) = timed(paired, i), timed(retriever, i)
            else:
                (hits, seconds), (other, other_s) = timed(retriever, i), timed(paired, i)
            return QueryOutcome(hits=hits, seconds=seconds, paired=([h.doc_id for h in other], other_s))
        else:
            hits = retriever.retrieve(query.text, vector, config.size, file_uuids=scope)
        seconds = time.perf_counter() - t0
        digest = None
        if config.stage == "route":
            digest = _digest_leg(retriever, query, vector, hits, scope)
        return QueryOutcome(hits=hits, seconds=seconds, digest=digest)

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
    normalised = normalise_run(run, "rerank" if config.stage in POOLED_STAGES else "retrieve")
    evaluation = evaluate(judgements.qrels, normalised)
    doc_files = {d["id"]: d["file_uuid"] for d in state.index.docs}
    per_file: dict[str, dict[str, float]] = {}
    for qid, docs in judgements.qrels.judgements.items():
        gold_files = {doc_files[d] for d in docs}
        per_file[qid] = file_measures(normalised.ranked.get(qid, ()), gold_files)
    extra: dict[str, Any] = {}
    if config.stage == "route":
        extra["digest_leg"] = _digest_summary(outcomes, judged)
    extra["answers"] = _answers(state, corpora, config.answers, search, backend=config.backend)
    stack_info = opened.end() if opened else None  # indexing.total after: a write voids it, nothing is written
    claim = Claim(
        control_name=config.control_name, corpora=corpora, judgements=judgements, evaluation=evaluation,
        file_measures=per_file, policy=config.policy, chunking=state.manifest["chunking"],
        retrieval=config.retrieval_block(reranker.provenance if reranker else None), index=index_block, extra=extra,
    )
    metrics, per_query = build_metrics(claim)
    latency = _percentiles([o.seconds * 1000 for o in outcomes.values()])
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
            str(config.time_also): {**_percentiles([o.paired[1] * 1000 for o in outcomes.values()
                                                    if o.paired is not None]),
                                    "concurrency": config.workers},
            "pairing": "same queries and query vectors; the two calls per query alternate which runs first",
        }
        runinfo["backend_agreement"] = _ranking_agreement(outcomes, config.backend, str(config.time_also))
    if stack_info is not None:
        runinfo["stack"] = stack_info
    files = {"metrics.json": dumps(metrics), "metrics.md": render_metrics_md(metrics),
             "per_query.json": dumps(per_query), "runinfo.json": dumps(runinfo),
             "run.trec": write_trec_run(normalised, config.control_name),
             "qrels.trec": write_trec_qrels(judgements.qrels),
             "answers.md": render_answers_md(config.control_name, metrics["answers"])}
    if compare is not None:
        from harness.report.compare import load_metrics

        files["compare.md"] = render_compare(metrics, load_metrics(compare))
    write_files(out, files)
    return metrics


def _ranking_agreement(outcomes: dict[str, QueryOutcome], backend: str, other: str) -> dict[str, Any]:
    """How often the paired backend returned the very same ranked list (ids, in order)."""
    same = top10 = 0
    differing: list[str] = []
    for qid in sorted(outcomes):
        mine = [h.doc_id for h in outcomes[qid].hits]
        pair = outcomes[qid].paired
        theirs = pair[0] if pair is not None else []
        same += mine == theirs
        top10 += mine[:10] == theirs[:10]
        if mine != theirs:
            differing.append(qid)
    return {"backends": [backend, other], "queries": len(outcomes), "identical_ranked_lists": same,
            "identical_top10": top10, "differing_queries": differing[:20]}


def _open_stack(state: State, config: BenchConfig) -> Any:
    """--backend stack: the state's OpenSearch index, settled and checked against the state's chunks."""
    import os

    from harness.index.opensearch.client import URL_ENV
    from harness.retrieval.server_fusion import open_stack_session

    block = state.manifest.get("stack")
    if block is None:
        raise UsageError(f"{state.path} was built without --backend stack: it has no OpenSearch index; "
                         "rebuild it with `ragsweep state build --backend stack`")
    chunks = [d for d in state.index.docs if d["doc_type"] == "chunk"]
    return open_stack_session(block, {d["file_uuid"] for d in chunks}, len(chunks), url=os.environ.get(URL_ENV, ""),
                              knn_strategy=config.knn_strategy, settle_timeout=config.settle_timeout)


def _answers(state: State, corpora: list[Corpus], settings: AnswerSettings, search: Any = None, *,
             backend: str = "embedded") -> dict[str, Any]:
    """The answer engine over the phrase aggregation and the relational store (harness.answers).

    The store is the state's own SQLite file, except on the stack backend for a state ingested
    from the stack's PostgreSQL (``state build --store postgres``): then the answers read
    PostgreSQL, as the product would, and the block records which schema.
    """
    from harness.answers import Sources, answers_block
    from harness.store import SqliteStore  # the state's store; answers see it only as an AnswerStore

    with SqliteStore.open(state.store_path(), readonly=True) as own:
        postgres = _ingested_postgres(state) if backend == "stack" else None
        if postgres is None:
            sources = Sources(search=search or state.index, store=own, bucket_size=settings.bucket_size)
            return answers_block(corpora, sources, settings)
        spec, described = postgres
        with spec.open(readonly=True) as store:
            mine, theirs = own.stats(), store.stats()
            if theirs != mine:
                raise IntegrityError(
                    f"the PostgreSQL store {described} holds {theirs.files} files / {theirs.segments} segments / "
                    f"{theirs.speakers} speakers, the state {state.path} {mine.files} / {mine.segments} / "
                    f"{mine.speakers}: answers over it would not be this state's (another corpus was injected "
                    "into the schema since the build); rebuild the state into a fresh RAGSWEEP_PG_SCHEMA")
            sources = Sources(search=search or state.index, store=store, bucket_size=settings.bucket_size)
            block = answers_block(corpora, sources, settings)
    block["answerer"]["store"] = described
    return block


def _ingested_postgres(state: State) -> tuple[Any, dict[str, Any]] | None:
    """The PostgreSQL store a state was ingested from (ingest.json), or None."""
    import json

    from harness.index.ingest.messages import StoreSpec

    record = state.path / "ingest.json"
    if not record.is_file():
        return None
    store = json.loads(record.read_text(encoding="utf-8")).get("store", {})
    if store.get("engine") != "postgres":
        return None
    return StoreSpec("postgres", store["dsn_from"], store.get("schema")), {"engine": "postgres",
                                                                         "schema": store.get("schema")}


def _digest_leg(retriever: HybridRetriever, query: Query, vector: Any, hits: list[Hit],
                scope: list[str] | None) -> dict[str, Any]:
    decision = route(query.text)
    record: dict[str, Any] = {"routed_class": decision.query_class, "rule": decision.rule,
                              "tiers": list(decision.tiers), "quoted_phrase": decision.quoted_phrase}
    gold = set(query.gold_files)
    chunk_files: list[str] = []
    for h in hits:
        if h.file_uuid not in chunk_files:
            chunk_files.append(h.file_uuid)
    record["chunk_leg_gold_in_top10_files"] = bool(gold.intersection(chunk_files[:10]))
    if "digest" in decision.tiers:
        digests = retriever.retrieve(query.text, vector, 10, doc_type="digest", file_uuids=scope)
        record["digest_hits"] = [h.doc_id for h in digests]
        digest_files = {h.file_uuid for h in digests}
        record["digest_found_gold_file"] = bool(gold & digest_files)
        record["rescued"] = bool(gold & digest_files) and not record["chunk_leg_gold_in_top10_files"]
    return record


def _digest_summary(outcomes: dict[str, QueryOutcome], judged: list[Query]) -> dict[str, Any]:
    records = {q.id: outcomes[q.id].digest or {} for q in judged}
    routed = [r for r in records.values() if "digest" in r.get("tiers", [])]
    confusion: dict[str, dict[str, int]] = {}
    for q in judged:
        got = records[q.id].get("routed_class", "?")
        confusion.setdefault(q.query_class, {}).setdefault(got, 0)
        confusion[q.query_class][got] += 1
    return {
        "queries_scored": len(judged),
        "routed_to_digest_tier": len(routed),
        "tier_returned_something": sum(1 for r in routed if r.get("digest_hits")),
        "digest_found_gold_file": sum(1 for r in routed if r.get("digest_found_gold_file")),
        "chunk_leg_gold_in_top10_files": sum(1 for r in routed if r.get("chunk_leg_gold_in_top10_files")),
        "rescued": sum(1 for r in routed if r.get("rescued")),
        "quoted_phrase_removed_digest_tier": sum(
            1 for r in records.values() if r.get("routed_class") == "summarize" and r.get("quoted_phrase")),
        "router_confusion": {k: dict(sorted(v.items())) for k, v in sorted(confusion.items())},
        "per_query": {qid: records[qid] for qid in sorted(records)},
        "merged_into_ranked_list": False,
    }

