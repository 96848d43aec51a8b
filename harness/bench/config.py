"""BenchConfig: an arm (ArmConfig) as bench runs it, with how this run is made (backend, workers, policy).

A frozen pydantic model that holds the arm whole (``arm``) instead of copying its fields, so the
arm's fields and defaults are written once, in ArmConfig; what is added here is how this run is
made. The arm's fusion flags are resolved to a FusionConfig when the config is made, and every
refusal is a UsageError naming the flag, raised then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harness.answers.results import AnswerSettings
from harness.bench.arm import ArmConfig, Stage
from harness.bench.stages import STAGES, BenchStage, Budget
from harness.errors import UsageError
from harness.judge.policy import RelevancePolicy
from harness.model import Backend
from harness.retrieval.fusion import FusionConfig
from harness.retrieval.window import fusion_window


def leg_depth(stage: Stage, size: int, candidate_pool: int) -> int:
    """How deep the arm retrieves: candidate_pool for the pooled stages, size for the others."""
    return candidate_pool if STAGES[stage].pooled else size


def legs_key(arm: ArmConfig) -> dict[str, str | int]:
    """What an arm's legs are a function of, beside the state, backend and query encoder of the run:
    the embedded text the kNN leg searches, the fusion window both legs are fetched over, and the
    scope (gold-files filters both legs). Arms with equal keys fetch equal legs (docs/sweeps.md)."""
    depth = leg_depth(arm.stage, arm.size, arm.candidate_pool)
    return {"embedding_text": arm.embedding_text, "fusion_window": fusion_window(depth), "scope": arm.scope}


def prefix_legs(backend: str) -> bool:
    """Whether the backend's legs at depth d are the first d of its legs at any deeper depth: the
    embedded backend's are (tantivy's top docs and the exact kNN both break ties by row, and the
    BM25 index is one segment in row order: harness.index.embedded), so arms over windows of one
    text and scope share the legs of the deepest. OpenSearch's HNSW search is not a prefix of a
    deeper one (ef_search grows with k), and its legs never leave it under server-side fusion."""
    return backend == "embedded"


def covers(group: dict[str, str | int], key: dict[str, str | int], backend: str) -> bool:
    """Whether legs fetched for the legs key ``group`` serve an arm whose own legs key is ``key``:
    the same key, or on a prefix backend the same text and scope over a window at least as deep."""
    if group == key:
        return True
    same = all(group.get(name) == key.get(name) for name in ("embedding_text", "scope"))
    return (prefix_legs(backend) and same and set(group) == set(key)
            and int(group["fusion_window"]) >= int(key["fusion_window"]))


def shared_legs_key(keys: list[dict[str, str | int]], backend: str) -> dict[str, str | int]:
    """The legs key a group fetches for arms whose own legs keys are ``keys``: the deepest, when it
    covers every one (``covers``); a UsageError naming them otherwise."""
    deepest = max(keys, key=lambda k: int(k["fusion_window"]))
    if not all(covers(deepest, k, backend) for k in keys):
        raise UsageError(f"these arms fetch legs no one fetch serves on the {backend} backend: "
                         f"{sorted({str(sorted(k.items())) for k in keys})}")
    return deepest


class BenchConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    control_name: str
    arm: ArmConfig = ArmConfig()
    policy: RelevancePolicy = Field(default_factory=RelevancePolicy)
    reranker: Path | None = None
    rerank_device: str = "cpu"  # cpu, cuda or cuda:N: what runs the cross-encoder (harness.retrieval.rerank)
    rerank_backend: str = "torch"  # torch, or onnx: onnxruntime on the CPU (harness.retrieval.rerank)
    onnx_dir: Path | None = None  # where the onnx backend keeps its export (RAGSWEEP_ONNX_CACHE; None: var/cache/onnx)
    rerank_threads: int = 0  # the cross-encoder's CPU threads, torch's or onnxruntime's (0: torch's thread count)
    workers: int = 1
    corpora: tuple[str, ...] = ()
    answers: AnswerSettings = Field(default_factory=AnswerSettings)
    # -- --backend stack: OpenSearch at the caller's RAGSWEEP_OPENSEARCH_URL (docs/opensearch.md) -----------
    backend: Backend = "embedded"
    fusion_mode: Literal["server", "client"] | None = None  # None: server on the stack, client embedded
    knn_strategy: Literal["exact", "hnsw"] = "exact"
    settle_timeout: float = 120.0
    time_also: Backend | None = None  # a paired latency pass on the other backend

    _fusion: FusionConfig = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._fusion = self.arm.fusion_config()  # a bad fusion flag is refused first, as bench always did
        if self.workers < 1:
            raise UsageError("--workers must be at least 1")
        from harness.retrieval.rerank import check_scorer

        check_scorer(self.rerank_backend, self.rerank_device)
        if self.bench_stage.needs_reranker and self.reranker is None:
            raise UsageError(f"--stage {self.arm.stage} needs --reranker DIR (cross-encoder weights; "
                             "see `ragsweep reranker`)")
        if self.backend == "embedded" and (self.fusion_mode == "server" or self.knn_strategy != "exact"):
            raise UsageError("--fusion-mode server and --knn hnsw need --backend stack; the embedded backend "
                             "fuses client-side over exact kNN")
        if self.time_also is not None and (self.time_also == self.backend or self.arm.stage != "retrieve"):
            raise UsageError(f"--time-also {self.time_also}: needs the retrieve stage and a backend other than "
                             f"--backend ({self.backend}, stage {self.arm.stage})")

    @property
    def fusion(self) -> FusionConfig:
        """The arm's fusion flags resolved (the deployment default when it names none)."""
        return self._fusion

    @property
    def bench_stage(self) -> BenchStage:
        return STAGES[self.arm.stage]

    @property
    def budget(self) -> Budget:
        arm = self.arm
        return Budget(size=arm.size, candidate_pool=arm.candidate_pool, final_chunks=arm.final_chunks,
                      max_chunks_per_file=arm.max_chunks_per_file, rerank_max_pairs=arm.rerank_max_pairs)

    def context_key(self) -> tuple[tuple[str, Any], ...]:
        """The run-level settings: arms that agree on them can share one opened context
        (harness.bench.context). The arm's own fields are left out, except the embedded text,
        which picks the vectors the context checks and encodes against."""
        run = tuple((name, getattr(self, name)) for name in type(self).model_fields
                    if name not in ("control_name", "arm"))
        return (*run, ("embedding_text", self.arm.embedding_text))

    @property
    def resolved_fusion_mode(self) -> Literal["server", "client"]:
        return self.fusion_mode or ("server" if self.backend == "stack" else "client")

    def retrieval_block(self, reranker: dict[str, Any] | None) -> dict[str, Any]:
        arm = self.arm
        pooled = self.bench_stage.pooled
        depth = leg_depth(arm.stage, arm.size, arm.candidate_pool)
        block: dict[str, Any] = {
            "backend": self.backend,
            "search_mode": "hybrid",
            "stage": arm.stage,
            "scope": arm.scope,
            "size": depth,
            "fusion_window": fusion_window(depth),
            "embedding_text": arm.embedding_text,
            "fusion": self.fusion.to_dict(),
        }
        if pooled:
            block.update(candidate_pool=arm.candidate_pool, final_chunks=arm.final_chunks,
                         max_chunks_per_file=arm.max_chunks_per_file,
                         order="as the prompt receives it (diversity_sample output)")
        if self.bench_stage.needs_reranker:
            block.update(rerank_max_pairs=arm.rerank_max_pairs, reranker=reranker)
        if self.backend == "stack":
            block.update(fusion_mode=self.resolved_fusion_mode, knn=self.knn_strategy)
        return block
