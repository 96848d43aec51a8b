"""The bench stages, in a registry: how one arm answers one query.

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

A new stage is one function plus one registry line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from harness.bench.routing import digest_leg, digest_summary
from harness.model import Query
from harness.retrieval.chunks import Hit
from harness.retrieval.diversity import diversity_sample
from harness.retrieval.rerank import rerank_order


@dataclass
class QueryOutcome:
    hits: list[Hit]
    seconds: float
    digest: dict[str, Any] | None = None
    paired: tuple[list[str], float] | None = None  # --time-also: the other backend's doc ids and seconds


@dataclass(frozen=True)
class Budget:
    """The retrieval budget of an arm: the depths and caps a stage reads."""

    size: int
    candidate_pool: int
    final_chunks: int
    max_chunks_per_file: int
    rerank_max_pairs: int


class Scorer(Protocol):
    """The cross-encoder as a stage sees it (CrossEncoderReranker, or the context's ScoreCache over one)."""

    @property
    def provenance(self) -> dict[str, Any]: ...

    def score(self, query: str, passages: list[str]) -> list[float]: ...


@dataclass(frozen=True)
class QueryRun:
    """Everything a stage needs to answer the arm's queries."""

    retriever: Any
    budget: Budget
    judged: Sequence[Query]
    vectors: Any
    gold_files_only: bool  # scope gold-files: each query searches its own gold files only
    reranker: Scorer | None = None
    texts: Mapping[str, str] | None = None  # doc id -> content, for the cross-encoder
    paired: Any = None  # --time-also: the other backend's retriever

    def scope(self, i: int) -> list[str] | None:
        return list(self.judged[i].gold_files) if self.gold_files_only else None


AnswerQuery = Callable[[QueryRun, int], QueryOutcome]
Summarise = Callable[[Mapping[str, QueryOutcome], Sequence[Query]], dict[str, Any]]


@dataclass(frozen=True)
class BenchStage:
    name: str
    answer: AnswerQuery
    # pooled stages rank candidate_pool and keep the order the prompt receives (normalise_run "rerank")
    pooled: bool = False
    needs_reranker: bool = False
    # (key in metrics.json's extra block, what writes it from the outcomes)
    extra: tuple[str, Summarise] | None = None
    # whether an arm of this stage fetches nothing once its group's legs are fetched and never runs a
    # model, so it can run in a process forked after them (a task's processes): torch is not used after a fork
    fork_safe: bool = False

    @property
    def normalisation(self) -> Literal["retrieve", "rerank"]:
        return "rerank" if self.pooled else "retrieve"


def _timed(target: Any, run: QueryRun, i: int) -> tuple[list[Hit], float]:
    t0 = time.perf_counter()
    hits = target.retrieve(run.judged[i].text, run.vectors[i], run.budget.size, file_uuids=run.scope(i))
    return hits, time.perf_counter() - t0


def _retrieve(run: QueryRun, i: int) -> QueryOutcome:
    if run.paired is not None:  # alternate which backend goes first, so neither always runs warm
        if i % 2:
            (other, other_s), (hits, seconds) = _timed(run.paired, run, i), _timed(run.retriever, run, i)
        else:
            (hits, seconds), (other, other_s) = _timed(run.retriever, run, i), _timed(run.paired, run, i)
        return QueryOutcome(hits=hits, seconds=seconds, paired=([h.doc_id for h in other], other_s))
    hits, seconds = _timed(run.retriever, run, i)
    return QueryOutcome(hits=hits, seconds=seconds)


def rerank_candidates(run: QueryRun, i: int) -> tuple[list[Hit], list[Hit]]:
    """The rerank stage's candidates for the i-th query: the head the cross-encoder scores (the
    first ``rerank_max_pairs`` of the pool) and the tail kept after it."""
    budget = run.budget
    pool = run.retriever.retrieve(run.judged[i].text, run.vectors[i], budget.candidate_pool, file_uuids=run.scope(i))
    return pool[: budget.rerank_max_pairs], pool[budget.rerank_max_pairs:]


def _rerank(run: QueryRun, i: int) -> QueryOutcome:
    query, budget = run.judged[i], run.budget
    assert run.reranker is not None and run.texts is not None  # BenchConfig refuses rerank without --reranker
    t0 = time.perf_counter()
    head, tail = rerank_candidates(run, i)
    order = rerank_order(run.reranker.score(query.text, [run.texts[h.doc_id] for h in head]))
    hits = diversity_sample([head[j] for j in order] + tail, budget.final_chunks, budget.max_chunks_per_file)
    return QueryOutcome(hits=hits, seconds=time.perf_counter() - t0)


def _diversify(run: QueryRun, i: int) -> QueryOutcome:
    query, budget = run.judged[i], run.budget
    t0 = time.perf_counter()
    pool = run.retriever.retrieve(query.text, run.vectors[i], budget.candidate_pool, file_uuids=run.scope(i))
    hits = diversity_sample(pool, budget.final_chunks, budget.max_chunks_per_file)
    return QueryOutcome(hits=hits, seconds=time.perf_counter() - t0)


def _route(run: QueryRun, i: int) -> QueryOutcome:
    outcome = _retrieve(run, i)  # timed without the digest leg: the latency is the retrieve stage's
    outcome.digest = digest_leg(run.retriever, run.judged[i], run.vectors[i], outcome.hits, run.scope(i))
    return outcome


# The registry: stage name -> what it does. Its order is the order --stage lists them.
STAGES: dict[str, BenchStage] = {
    "retrieve": BenchStage("retrieve", _retrieve, fork_safe=True),
    "rerank": BenchStage("rerank", _rerank, pooled=True, needs_reranker=True),
    "diversify": BenchStage("diversify", _diversify, pooled=True, fork_safe=True),
    "route": BenchStage("route", _route, extra=("digest_leg", digest_summary)),
}
