"""What the arms of one group share: the opened state and backend, the judgements, the query
vectors, the legs, the reranker and the answers block.

``run_bench`` opens one for a single arm; ``harness.bench.group`` opens one for every arm of a
group and runs them one after another over it. Everything here is a function of the run-level
settings (``BenchConfig.context_key``), never of the arm's fusion or budget, which is why the
arms that share it write the bytes they would write alone.
"""

from __future__ import annotations

import atexit
import copy
import gc
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.answers import arm_answers
from harness.bench.config import BenchConfig
from harness.bench.stack import open_stack
from harness.errors import IntegrityError, UsageError
from harness.index.embed import Embedder
from harness.index.provenance import refuse_mixed, survey
from harness.index.spotcheck import check_encodes_back
from harness.judge import Judgements, judge
from harness.model import Corpus, Query
from harness.retrieval.legs import LegCache, TableEncoder
from harness.retrieval.rerank import CrossEncoderReranker, refuse_untrained
from harness.retrieval.scorecache import StoredScores, pair_key, scorer_key
from harness.state import State


@dataclass
class ScoreCache:
    """Cross-encoder scores by (query, passage), for one reranker's weights.

    The reranker scores each pair on its own (``CrossEncoderReranker``), so a pair's score is the
    same whichever passages it is asked beside: the arms of a group whose candidates overlap (the
    budget and pool families: pools and pair limits of one fused ranking) score each pair once.
    ``store``: the machine's score cache (harness.retrieval.scorecache), shared with the other
    processes of a sweep and with later sweeps; a pair found there is not scored, and a pair
    scored here is written there. ``scored``/``reused``/``from_cache``: pairs scored by the model,
    answered from this process's memory, read from the store; ``checked``: pairs read from the store
    and scored again to check the store gives the model's bits (the first one, once a process).
    """

    reranker: CrossEncoderReranker
    store: StoredScores | None = None
    scored: int = 0
    reused: int = 0
    from_cache: int = 0
    checked: int = 0
    _scores: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)
    _checked: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def provenance(self) -> dict[str, Any]:
        return self.reranker.provenance

    def counts(self) -> dict[str, int]:
        return {"scored": self.scored, "reused": self.reused, "from_cache": self.from_cache, "checked": self.checked}

    def score(self, query: str, passages: list[str]) -> list[float]:
        with self._lock:
            missing = list(dict.fromkeys(p for p in passages if (query, p) not in self._scores))
            self.reused += len(passages) - len(missing)
            if missing and self.store is not None:
                keys = {p: pair_key(query, p) for p in missing}
                found = self.store.get(list(keys.values()))
                hits = [p for p in missing if keys[p] in found]
                if hits and not self._checked:
                    self._check(query, hits[0], found[keys[hits[0]]])
                for p in hits:
                    self._scores[(query, p)] = found[keys[p]]
                self.from_cache += len(hits)
                missing = [p for p in missing if keys[p] not in found]
            if missing:
                values = self.reranker.score(query, missing)
                for passage, value in zip(missing, values, strict=True):
                    self._scores[(query, passage)] = value
                self.scored += len(missing)
                if self.store is not None:
                    self.store.put((pair_key(query, p), v) for p, v in zip(missing, values, strict=True))
            return [self._scores[(query, p)] for p in passages]

    def key(self) -> dict[str, Any]:
        """What decides a score's bits besides the pair (the store's key, whether or not there is a store)."""
        return self.store.key if self.store is not None else scorer_key(self.reranker.cache_key())

    def pairs(self) -> dict[bytes, float]:
        """Every score this process holds (scored, or read), by pair key: what a scores Job publishes."""
        with self._lock:
            return {pair_key(query, passage): value for (query, passage), value in self._scores.items()}

    def seed(self, scores: dict[bytes, float], source: str) -> None:
        """Put scores another process published (``source``) into the store, where a pair is then read
        like any cached one: the first read is scored again and checked (``_check``)."""
        if self.store is None:
            raise UsageError(f"the cross-encoder scores published at {source} are read into the score cache: "
                             "pass --rerank-cache DIR (RAGSWEEP_RERANK_CACHE), not none")
        self.store.put(scores.items())

    def _check(self, query: str, passage: str, cached: float) -> None:
        """Score the first pair found in the store and refuse the store if the bits differ."""
        assert self.store is not None
        now = self.reranker.score(query, [passage])[0]
        self.checked += 1
        if struct.pack("<d", now) != struct.pack("<d", cached):
            raise IntegrityError(
                f"the cross-encoder score cache {self.store.folder} gives a pair {cached!r} where the model gives "
                f"{now!r} now: something its key ({self.store.folder / 'reranker.json'}) does not name changed; "
                f"delete {self.store.folder} or pass --rerank-cache none")
        self._checked = True


@dataclass
class ArmContext:
    state: State
    corpora: list[Corpus]
    search: Any  # the SearchBackend the arms measure (the state's index, or the stack's)
    opened: Any  # the settled stack session when --backend stack or --time-also stack, else None
    index_block: dict[str, Any]
    judgements: Judgements
    judged: list[Query]
    vectors: Any
    settings: BenchConfig  # the run-level settings every arm of the context shares
    legs: LegCache | None = None
    pg_dsn: str = ""
    score_cache: Path | None = None  # the machine's cross-encoder score cache root (None: this process's memory only)
    _answers: dict[str, Any] | None = field(default=None, repr=False)
    _doc_files: dict[str, str] | None = field(default=None, repr=False)
    _rerankers: dict[Path, ScoreCache] = field(default_factory=dict, repr=False)

    def check(self, config: BenchConfig) -> None:
        if config.context_key() != self.settings.context_key():
            raise UsageError(f"arm {config.control_name} does not share this run's settings (backend, corpora, "
                             "embedding text, policy, answers, reranker); run it on its own")

    def answers(self) -> dict[str, Any]:
        """The answers block: the same for every arm (it reads the corpora and the store, not the ranking)."""
        if self._answers is None:
            s = self.settings
            self._answers = arm_answers(self.state, self.corpora, s.answers, self.search, backend=s.backend,
                                        pg_dsn=self.pg_dsn)
        return copy.deepcopy(self._answers)

    def reranker(self, path: Path) -> ScoreCache:
        if path not in self._rerankers:
            s = self.settings
            reranker = CrossEncoderReranker(path, device=s.rerank_device, backend=s.rerank_backend,
                                            onnx_dir=s.onnx_dir, threads=s.rerank_threads)
            refuse_untrained(reranker.provenance)
            store = StoredScores(self.score_cache, reranker.cache_key()) if self.score_cache else None
            self._rerankers[path] = ScoreCache(reranker, store)
        return self._rerankers[path]

    def doc_files(self) -> dict[str, str]:
        """Each document's file: built once per context (every arm of a group reads it; read-only)."""
        if self._doc_files is None:
            self._doc_files = {d["id"]: d["file_uuid"] for d in self.state.index.docs}
        return self._doc_files

    def texts(self) -> dict[str, str]:
        return {d["id"]: d["content"] for d in self.state.index.docs}


def open_context(state: State, config: BenchConfig, embedder: Embedder, *, opensearch_url: str = "",
                 pg_dsn: str = "", legs: LegCache | None = None,
                 vectors: Callable[[Sequence[Query]], Any] | None = None,
                 score_cache: Path | None = None) -> ArmContext:
    """Open the state (and the stack when asked), survey the index, judge, and encode the queries.

    ``vectors``: how the judged queries' vectors are made (default: ``embedder.encode`` over their
    texts, in one call). ``score_cache``: the cross-encoder score cache's root (harness.retrieval.scorecache),
    or None to keep scores in this process only; either way the results are the same bytes."""
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
    meetings = [m for c in corpora for m in c.meetings]
    queries = sorted((q for c in corpora for q in c.queries), key=lambda q: q.id)
    judgements = judge(queries, meetings, state.chunks(), config.policy)
    judged = [q for q in queries if q.id in set(judgements.judged_queries)]
    if not judged:
        query_vectors = None
    elif vectors is not None:
        query_vectors = vectors(judged)
    else:
        query_vectors = embedder.encode([q.text for q in judged])
    if query_vectors is not None and not isinstance(embedder, TableEncoder):
        # the model is loaded to encode the queries: 8 documents encoded again must give their stored vectors
        # with the model itself: a cache in front of it would give the stored vectors back
        check_encodes_back(state.index, config.arm.embedding_text, getattr(embedder, "inner", embedder))
    context = ArmContext(state=state, corpora=corpora, search=search, opened=opened, index_block=index_block,
                         judgements=judgements, judged=judged, vectors=query_vectors, settings=config, legs=legs,
                         pg_dsn=pg_dsn, score_cache=score_cache)
    settle_heap()
    return context


_UNFREEZE_AT_EXIT: list[Any] = []


def settle_heap() -> None:
    """Take what the process holds now (the state's documents, judgements, legs: millions of objects that live
    as long as it does) out of the cyclic collector's sight (``gc.freeze``). An arm allocates many small objects,
    and each full collection they trigger walked all of those again: a third of an arm's pydantic work after
    its legs on the two-corpus state (cProfile). Garbage is collected first, so that none is frozen; a frozen
    object is still freed when nothing refers to it. The results are the same bytes, and forked arm processes
    leave those pages shared."""
    gc.collect()
    gc.freeze()
    if not _UNFREEZE_AT_EXIT:  # at exit the frozen objects go back to the collector, as they would have been
        _UNFREEZE_AT_EXIT.append(atexit.register(gc.unfreeze))
