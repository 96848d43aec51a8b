"""Arms that share legs, run in one process: the context opened once, the legs fetched once, every
arm fused, reranked and scored from them.

A group is arms whose legs one fetch serves under one run's settings: the same state, backend,
query encoder, embedded text and scope, and (``legs_key``, harness.bench.config) the same fusion
window, or on the embedded backend any window up to the group's deepest, whose legs every arm cuts
at its own (``covers``: the embedded legs at a depth are the first hits of deeper ones).
``GroupRun`` opens the context (judgements, query vectors, answers) once with a shared
``LegCache``; the group's legs are fetched at its depth before the first arm that fuses over a
shallower window runs; each arm then runs exactly as ``run_bench`` would run it alone, except that
a leg request is answered from the cache, and a cross-encoder call another arm already made from
the context's score cache. The results files are the bytes the arm writes alone; runinfo.json (outside
the claim) says what was shared.

``fetch_legs`` fetches a group's legs and no more, for a process that publishes them for arms
running elsewhere (``jobs.legs``, a Kubernetes Job). ``GroupRun.prefetch`` fetches them (and the
answers block) into the group's own cache before its arms run, so that the arms can be spread over
processes forked from this one (a task's ``processes``) without any of them fetching again.
``GroupRun.prescore`` scores the cross-encoder pairs of a group's rerank arms into the shared score
cache, this process's part of the queries first (``prescore_order``), so that processes running the
group's arms at once split its pairs between them by query rather than by arm (a task's ``prescore``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.bench.config import BenchConfig, covers, legs_key, prefix_legs
from harness.bench.context import ArmContext, open_context, settle_heap
from harness.bench.run import arm_retriever, run_arm
from harness.bench.stages import QueryRun, rerank_candidates
from harness.errors import UsageError
from harness.index.embed import Embedder
from harness.model import Query
from harness.retrieval.chunks import HybridRetriever
from harness.retrieval.legs import LegCache, LegTable, leg_request
from harness.retrieval.scorecache import pair_key
from harness.state import State


def config_legs_key(config: BenchConfig) -> dict[str, str | int]:
    return legs_key(config.arm)


@dataclass
class GroupRun:
    """One opened context and its leg cache, and the arms run over it so far."""

    context: ArmContext
    key: dict[str, str | int]  # the legs the group fetches: its arms' deepest (``covers`` each arm's own)
    open_seconds: float
    arms_run: int = 0
    prefetched: int = 0  # leg requests fetched by ``prefetch`` before any arm ran
    group_legs: bool = False  # whether the legs of ``key`` have been fetched for every judged query
    query_vectors: str = "encoded"  # or "published": read from the published legs, not encoded here
    process: int = 0  # which of the processes the group's arms are spread over runs this copy (0: the first)
    # (k, p): this process is the k-th of p running the group's arms at once, each its n-th arms; its arms
    # answer their queries from the k/p-th judged query on, so that processes whose arms ask the
    # cross-encoder for the same pairs (pool and budget arms of one fused ranking) do not score the
    # same query at once: each scores a part of the queries first, and reads the other parts from
    # the score cache the other wrote (they both scored every query they met at once before)
    part: tuple[int, int] = (0, 1)
    prescored: dict[str, Any] | None = None  # what ``prescore`` did, reported in every arm's runinfo
    # scores other processes published for this group's pairs, read into the score cache before any arm
    # ran (a task's scores): which, how many pairs, and any left unread because another scorer made them
    published_scores: dict[str, Any] | None = None

    @classmethod
    def open(cls, state: State, settings: BenchConfig, embedder: Embedder, *, opensearch_url: str = "",
             pg_dsn: str = "", published: LegTable | None = None, score_cache: Path | None = None,
             key: dict[str, str | int] | None = None,
             vectors: Callable[[Sequence[Query]], Any] | None = None) -> GroupRun:
        """``settings``: any arm of the group (its run-level settings are every arm's). ``key``: the
        legs key the group fetches (harness.bench.config.shared_legs_key of its arms; default the
        ``settings`` arm's own). ``published``: legs fetched by another process, which must cover
        the key; a request of theirs they lack is refused, never fetched. When they carry the query
        vectors, the queries are not encoded: their vectors are read from them. ``score_cache``:
        the cross-encoder score cache's root (harness.retrieval.scorecache), or None. ``vectors``: how the
        judged queries are encoded when no published legs carry their vectors (default: all at once)."""
        t0 = time.perf_counter()
        key = dict(key) if key is not None else config_legs_key(settings)
        if published is not None:
            theirs = published.group.get("legs_key")
            if not isinstance(theirs, dict) or not covers(theirs, key, settings.backend):
                raise UsageError(f"the shared legs ({published.describe()}) are for {theirs}, "
                                 f"which do not serve this group's {key}")
            key = theirs
        table = published if published is not None and published.vectors is not None else None
        read = (lambda judged: table.query_vectors([q.text for q in judged])) if table else vectors
        legs = LegCache(published=published, prefix=prefix_legs(settings.backend))
        context = open_context(state, settings, embedder, opensearch_url=opensearch_url, pg_dsn=pg_dsn,
                               legs=legs, vectors=read, score_cache=score_cache)
        return cls(context=context, key=key, open_seconds=round(time.perf_counter() - t0, 3),
                   query_vectors="published" if table else "encoded")

    def prefetch(self, settings: BenchConfig) -> None:
        """Fetch the legs every arm of the group asks for, and the answers block, before any arm runs:
        what arms in processes forked after this read instead of fetching (a task's ``processes``)."""
        cache = self.context.legs
        assert cache is not None
        before = cache.counts()["fetched"]
        self._fetch_group_legs(settings)
        self.context.answers()
        self.prefetched += cache.counts()["fetched"] - before

    def prescore(self, configs: Sequence[BenchConfig], progress: Callable[[int, int], None] | None = None, *,
                 own_part: bool = False) -> dict[str, Any]:
        """Have the cross-encoder score, into the context's score cache, every pair the rerank arms of
        ``configs`` (the whole group's, this process's and the others') will ask for, over this
        process's part of the queries first and then over the others' from the far end
        (``prescore_order``), a pair already in the cache read, not scored: processes that run a
        group's arms at once split its pairs between them, whichever process's arms ask for them,
        and none idles while another scores an arm alone. A warm cache (``_warm``: every pair of the
        queries sampled over the order is there) is not prescored: the arms read the pairs themselves.
        Otherwise the arms then read every pair from the cache; either way their results are the bytes
        they write scoring each pair themselves (a pair's score is its own forward pass's). What was
        done is returned and reported in each arm's runinfo; ``progress(done, total)`` is called after
        each query. ``own_part``: this process's part of the queries only, and no warm check (a
        Kubernetes scores Job, whose parts share no cache while they run: jobs.scores)."""
        rerank = [c for c in configs if c.bench_stage.needs_reranker]
        if not rerank:
            return {}
        for config in rerank:
            self.context.check(config)
            if not covers(self.key, config_legs_key(config), config.backend):
                raise UsageError(f"arm {config.control_name} fetches other legs ({config_legs_key(config)}) "
                                 f"than its group ({self.key}); its pairs cannot be scored here")
        t0 = time.perf_counter()
        context = self.context
        assert context.legs is not None and rerank[0].reranker is not None
        if context.legs.published is None and not self.group_legs:
            self._fetch_group_legs(rerank[0])  # at the group's window, which every arm cuts (as ``run`` does)
        scorer = context.reranker(rerank[0].reranker)
        before = scorer.counts()
        runs = [QueryRun(retriever=arm_retriever(context, c), budget=c.budget, judged=context.judged,
                         vectors=context.vectors, gold_files_only=c.arm.scope == "gold-files") for c in rerank]
        texts = context.texts()
        order = prescore_order(len(context.judged), self.part)
        k, parts = self.part
        if own_part:
            order = order[:(k + 1) * len(context.judged) // parts - k * len(context.judged) // parts]
        sampled = 0 if own_part else _warm(scorer, runs, context.judged, order, texts)
        if sampled:  # a warm cache: the arms read every pair from it as this would, so it would only fuse twice
            self.prescored = {"arms": [c.control_name for c in rerank], "queries": 0,
                              "first_query": order[0] if order else 0, "pairs": 0, **dict.fromkeys(before, 0),
                              "seconds": round(time.perf_counter() - t0, 3), "part": f"{k + 1}/{parts}",
                              "skipped": f"warm: every pair of {sampled} queries sampled over its order was in "
                                         "the score cache"}
            return self.prescored
        pairs = 0
        for n, i in enumerate(order, start=1):
            passages = dict.fromkeys(texts[h.doc_id] for run in runs for h in rerank_candidates(run, i)[0])
            scorer.score(context.judged[i].text, list(passages))
            pairs += len(passages)
            if progress:
                progress(n, len(order))
        now = scorer.counts()
        self.prescored = {"arms": [c.control_name for c in rerank], "queries": len(order),
                          "first_query": order[0] if order else 0, "pairs": pairs,
                          **{name: now[name] - before[name] for name in now},
                          "seconds": round(time.perf_counter() - t0, 3), "part": f"{k + 1}/{parts}"}
        return self.prescored

    def _fetch_group_legs(self, settings: BenchConfig) -> None:
        fetch_legs(self.context, settings, {}, key=self.key)
        self.group_legs = True
        settle_heap()  # the legs live as long as the group

    def run(self, config: BenchConfig, out: Path, compare: Path | None = None, *,
            position: int | None = None) -> dict[str, Any]:
        """Run one arm of the group and write its files to ``out``; ``position``: its place in the
        group (default: the arms run so far in this process)."""
        own = config_legs_key(config)
        if not covers(self.key, own, config.backend):
            raise UsageError(f"arm {config.control_name} fetches other legs ({own}) than "
                             f"its group ({self.key}); run it in its own group")
        cache = self.context.legs
        assert cache is not None
        before = cache.counts()
        started = time.time()
        if own != self.key and cache.published is None and not self.group_legs:
            # an arm over a shallower window: fetch the group's legs at its (deepest) window first,
            # which this arm and every other cut at their own, instead of fetching at this one's
            self._fetch_group_legs(config)
        place = self.arms_run if position is None else position
        k, parts = self.part
        first = k * len(self.context.judged) // parts

        def legs_info() -> dict[str, Any]:
            now = cache.counts()
            return {"group": dict(self.key), "window": own["fusion_window"], "position": place,
                    "context_seconds": self.open_seconds,
                    "fetched": now["fetched"] - before["fetched"], "reused": now["reused"] - before["reused"],
                    "published": now["published"], "prefetched": self.prefetched,
                    "process": self.process, "query_vectors": self.query_vectors,
                    "part": f"{k + 1}/{parts}", "first_query": first,
                    **({"prescored": self.prescored} if self.prescored is not None else {}),
                    **({"published_scores": self.published_scores} if self.published_scores is not None else {})}

        metrics = run_arm(self.context, config, out, compare, started=started, legs_info=legs_info, first=first)
        self.arms_run += 1
        return metrics


WARM_PROBE = 32  # queries sampled to tell a warm score cache from one that is not


def _warm(scorer: Any, runs: Sequence[QueryRun], judged: Sequence[Query], order: Sequence[int],
          texts: dict[str, str]) -> int:
    """How many of the ``judged`` queries, up to ``WARM_PROBE`` spread evenly over ``order``, were
    sampled and found with every pair their arms send the cross-encoder in the machine's score cache;
    0 when one pair is not there, or there is no such cache. A prescore of a warm cache only reads the
    pairs the arms then read anyway, fusing each query's candidates once more; a pair the sample
    missed is scored by the arm that asks for it, with the same bits."""
    if scorer.store is None or not order:
        return 0
    step = max(1, len(order) // WARM_PROBE)
    picked = list(range(0, len(order), step))[:WARM_PROBE]
    keys = {pair_key(judged[order[j]].text, texts[h.doc_id]) for j in picked for run in runs
            for h in rerank_candidates(run, order[j])[0]}
    return len(picked) if keys and len(scorer.store.get(list(keys))) == len(keys) else 0


def prescore_order(n: int, part: tuple[int, int]) -> list[int]:
    """The order the k-th of p processes (``part`` = (k, p)) scores a group's pairs in: its own part
    of the n judged queries (the k/p-th to the (k+1)/p-th) in order, then every other query from the
    one before its part backwards, wrapping. The process whose part comes next answers that part
    forwards, so the two meet inside it, and no query is left to one process alone while the
    other has nothing to do; a query the other has scored is read from the cache."""
    k, p = part
    start, end = k * n // p, (k + 1) * n // p
    return list(range(start, end)) + [(start - 1 - j) % n for j in range(n - (end - start))]


def fetch_legs(context: ArmContext, config: BenchConfig, group: dict[str, Any], *,
               key: dict[str, str | int] | None = None) -> LegTable:
    """Fetch the legs of the legs key ``key`` (default ``config``'s own), one request per judged query,
    and return them as a table; ``group`` is what they are true of (state, encoder; the key is added)."""
    key = dict(key) if key is not None else config_legs_key(config)
    if not covers(key, config_legs_key(config), config.backend):
        raise UsageError(f"legs key {key} does not serve arm {config.control_name} ({config_legs_key(config)})")
    cache = context.legs if context.legs is not None else LegCache(prefix=prefix_legs(config.backend))
    retriever = HybridRetriever(context.state.index, config.arm.embedding_text, config.fusion, cache=cache)
    depth = int(key["fusion_window"])
    for i, query in enumerate(context.judged):
        scope = list(query.gold_files) if config.arm.scope == "gold-files" else None
        retriever.legs(query.text, context.vectors[i], depth, file_uuids=scope)
    shape = leg_request("", depth, config.arm.embedding_text)
    return cache.table(shape, {**group, "legs_key": key})
