"""BenchConfig: an arm (ArmConfig) as bench runs it, with how this run is made (backend, workers, policy)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from harness.answers.results import AnswerSettings
from harness.bench.arm import ArmConfig, Scope, Stage
from harness.bench.stages import STAGES, BenchStage, Budget
from harness.errors import UsageError
from harness.index.documents import EmbeddingTextMode
from harness.judge.policy import RelevancePolicy
from harness.model import Backend
from harness.retrieval.fusion import FusionConfig
from harness.retrieval.window import fusion_window

# What distinguishes one arm from another inside a run; every other field is the run's.
ARM_FIELDS = frozenset({"control_name", "fusion", "stage", "size", "candidate_pool", "final_chunks",
                        "max_chunks_per_file", "rerank_max_pairs", "scope"})


def leg_depth(stage: Stage, size: int, candidate_pool: int) -> int:
    """How deep the arm retrieves: candidate_pool for the pooled stages, size for the others."""
    return candidate_pool if STAGES[stage].pooled else size


def legs_key(arm: ArmConfig) -> dict[str, str | int]:
    """What an arm's legs are a function of, beside the state, backend and query encoder of the run:
    the embedded text the kNN leg searches, the fusion window both legs are fetched over, and the
    scope (gold-files filters both legs). Arms with equal keys fetch equal legs (docs/sweeps.md)."""
    depth = leg_depth(arm.stage, arm.size, arm.candidate_pool)
    return {"embedding_text": arm.embedding_text, "fusion_window": fusion_window(depth), "scope": arm.scope}


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
    # -- --backend stack: OpenSearch at the caller's RAGSWEEP_OPENSEARCH_URL (docs/opensearch.md) -----------
    backend: Backend = "embedded"
    fusion_mode: Literal["server", "client"] | None = None  # None: server on the stack, client embedded
    knn_strategy: Literal["exact", "hnsw"] = "exact"
    settle_timeout: float = 120.0
    time_also: Backend | None = None  # a paired latency pass on the other backend

    def __post_init__(self) -> None:
        for name in ("size", "candidate_pool", "final_chunks", "max_chunks_per_file", "rerank_max_pairs", "workers"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
        if self.bench_stage.needs_reranker and self.reranker is None:
            raise UsageError(f"--stage {self.stage} needs --reranker DIR (cross-encoder weights; "
                             "see `ragsweep reranker`)")
        if self.backend == "embedded" and (self.fusion_mode == "server" or self.knn_strategy != "exact"):
            raise UsageError("--fusion-mode server and --knn hnsw need --backend stack; the embedded backend "
                             "fuses client-side over exact kNN")
        if self.time_also is not None and (self.time_also == self.backend or self.stage != "retrieve"):
            raise UsageError(f"--time-also {self.time_also}: needs the retrieve stage and a backend other than "
                             f"--backend ({self.backend}, stage {self.stage})")

    @classmethod
    def for_arm(cls, arm: ArmConfig, *, control_name: str, **run: Any) -> BenchConfig:
        """An arm as bench runs it: its fusion resolved, with how this run is made (``run``)."""
        return cls(control_name=control_name, fusion=arm.fusion_config(), stage=arm.stage, scope=arm.scope,
                   size=arm.size, candidate_pool=arm.candidate_pool, final_chunks=arm.final_chunks,
                   max_chunks_per_file=arm.max_chunks_per_file, rerank_max_pairs=arm.rerank_max_pairs,
                   embedding_text=arm.embedding_text, **run)

    @property
    def bench_stage(self) -> BenchStage:
        return STAGES[self.stage]

    @property
    def budget(self) -> Budget:
        return Budget(size=self.size, candidate_pool=self.candidate_pool, final_chunks=self.final_chunks,
                      max_chunks_per_file=self.max_chunks_per_file, rerank_max_pairs=self.rerank_max_pairs)

    def context_key(self) -> tuple[tuple[str, Any], ...]:
        """The run-level settings: arms that agree on them can share one opened context
        (harness.bench.context); the arm's own fields (ARM_FIELDS) are left out."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self) if f.name not in ARM_FIELDS)

    @property
    def resolved_fusion_mode(self) -> Literal["server", "client"]:
        return self.fusion_mode or ("server" if self.backend == "stack" else "client")

    def retrieval_block(self, reranker: dict[str, Any] | None) -> dict[str, Any]:
        pooled = self.bench_stage.pooled
        depth = leg_depth(self.stage, self.size, self.candidate_pool)
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
        if pooled:
            block.update(candidate_pool=self.candidate_pool, final_chunks=self.final_chunks,
                         max_chunks_per_file=self.max_chunks_per_file,
                         order="as the prompt receives it (diversity_sample output)")
        if self.bench_stage.needs_reranker:
            block.update(rerank_max_pairs=self.rerank_max_pairs, reranker=reranker)
        if self.backend == "stack":
            block.update(fusion_mode=self.resolved_fusion_mode, knn=self.knn_strategy)
        return block
