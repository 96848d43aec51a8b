"""What the arms of one group share: the opened state and backend, the judgements, the query
vectors, the legs, the reranker and the answers block.

``run_bench`` opens one for a single arm; ``harness.bench.group`` opens one for every arm of a
group and runs them one after another over it. Everything here is a function of the run-level
settings (``BenchConfig.context_key``), never of the arm's fusion or budget, which is why the
arms that share it write the bytes they would write alone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.answers import arm_answers
from harness.bench.config import BenchConfig
from harness.bench.stack import open_stack
from harness.errors import UsageError
from harness.index.embed import Embedder
from harness.index.provenance import refuse_mixed, survey
from harness.judge import Judgements, judge
from harness.model import Corpus, Query
from harness.retrieval.legs import LegCache
from harness.retrieval.rerank import CrossEncoderReranker, refuse_untrained
from harness.state import State


@dataclass
class ScoreCache:
    """Cross-encoder scores by (query, passage), for one reranker's weights.

    The reranker scores each pair on its own (``CrossEncoderReranker``), so a pair's score is the
    same whichever passages it is asked beside: the arms of a group whose candidates overlap (the
    budget and pool families: pools and pair limits of one fused ranking) score each pair once.
    ``scored``/``reused``: pairs scored by the model, pairs answered from here.
    """

    reranker: CrossEncoderReranker
    scored: int = 0
    reused: int = 0
    _scores: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)

    @property
    def provenance(self) -> dict[str, Any]:
        return self.reranker.provenance

    def score(self, query: str, passages: list[str]) -> list[float]:
        missing = list(dict.fromkeys(p for p in passages if (query, p) not in self._scores))
        if missing:
            for passage, value in zip(missing, self.reranker.score(query, missing), strict=True):
                self._scores[(query, passage)] = value
        self.scored += len(missing)
        self.reused += len(passages) - len(missing)
        return [self._scores[(query, p)] for p in passages]


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
    _answers: dict[str, Any] | None = field(default=None, repr=False)
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
            reranker = CrossEncoderReranker(path)
            refuse_untrained(reranker.provenance)
            self._rerankers[path] = ScoreCache(reranker)
        return self._rerankers[path]

    def doc_files(self) -> dict[str, str]:
        return {d["id"]: d["file_uuid"] for d in self.state.index.docs}

    def texts(self) -> dict[str, str]:
        return {d["id"]: d["content"] for d in self.state.index.docs}


def open_context(state: State, config: BenchConfig, embedder: Embedder, *, opensearch_url: str = "",
                 pg_dsn: str = "", legs: LegCache | None = None,
                 vectors: Callable[[Sequence[Query]], Any] | None = None) -> ArmContext:
    """Open the state (and the stack when asked), survey the index, judge, and encode the queries.

    ``vectors``: how the judged queries' vectors are made (default: ``embedder.encode`` over their
    texts, in one call)."""
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
    return ArmContext(state=state, corpora=corpora, search=search, opened=opened, index_block=index_block,
                      judgements=judgements, judged=judged, vectors=query_vectors, settings=config, legs=legs,
                      pg_dsn=pg_dsn)
