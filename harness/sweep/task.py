"""The one task model: what a process of a sweep is told, whole, across the process boundary.

A sweep's work crosses into another process (a local child, a Kubernetes Job's container) as one
:class:`Task`, serialised in one place (:meth:`Task.to_json`, :meth:`Task.from_json`) and built the
same way by both executors (:func:`build_task`): the local executor writes it to a file under the
sweep's log folder and starts ``python -m jobs.<job> --task FILE``; a Job's container gets it in one
environment variable, ``RAGSWEEP_TASK``. Secrets are never in it: the store's credentials and the
services' passwords stay ``secretKeyRef`` environment variables (harness.sweep.k8s.env).

``job`` says which entrypoint runs it (harness.sweep.dispatch): ``arm`` runs and publishes arms,
``legs`` fetches and publishes a group's shared legs, ``scores`` scores one part of a group's
cross-encoder pairs and publishes them (harness.sweep.runtask); ``shard`` answers every arm of a group
over one shard of its judged queries (``shard``, "K/W") and publishes the per-query outcomes, ``merge``
writes and publishes each arm's files from the group's ``shards`` shards (harness.sweep.shards).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from harness.errors import InputDataError
from harness.inputfiles import MAX_JSON_DEPTH, nested_deeper_than
from harness.model import Backend, EmbeddingBackend
from harness.sweep.catalogue import Arm

Job = Literal["arm", "legs", "scores", "shard", "merge"]
RerankBackend = Literal["torch", "onnx"]


class Task(BaseModel):
    """One process's work. ``part`` is (k, P), the k-th (from 0) of P processes sharing a group's queries,
    written ``"K/P"`` (from 1) in JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    job: Job
    state: Path  # the corpus state, a folder on this machine or pod
    store: str  # the artefact store: a folder, or s3://BUCKET/PREFIX
    sweep_id: str = Field(min_length=1)
    arms: tuple[Arm, ...] = Field(min_length=1)  # one arm, or a group's arms that share legs
    legs: str | None = None  # store key of the group's legs.json: arm and scores read it, legs writes it
    scores: tuple[str, ...] = ()  # store keys of the group's cross-encoder scores: arm reads them, scores writes one
    part: tuple[int, int] = (0, 1)
    prescore: tuple[Arm, ...] = ()  # the group's rerank arms, scored into the shared cache before the arms run
    processes: int = Field(1, ge=1)  # a group's fork-safe arms spread over this many processes
    backend: Backend = "embedded"
    embedding_backend: EmbeddingBackend = "torch"  # what encodes the queries: what built the state's index
    onnx_cache: Path = Path("var/cache/onnx")  # where the onnx runtimes keep the models' local export
    reranker: Path | None = None  # the cross-encoder's folder (rerank arms, scores)
    rerank_device: str = "cpu"  # cpu, cuda or cuda:N
    rerank_backend: RerankBackend = "torch"
    rerank_threads: int = Field(0, ge=0)  # the cross-encoder's CPU threads (0: torch's own count)
    rerank_cache: Path | None = None  # the score cache folder every process shares; None: in memory only
    workers: int = Field(1, ge=1)  # bench's query workers within one arm
    s3_endpoint: str | None = None
    # a shard task's shard of the group's judged queries, (k, W) written "K/W": query i of the sorted
    # judged queries is shard i mod W's (harness.bench.shard); a merge task's count of shards
    shard: tuple[int, int] | None = None
    shards: int | None = Field(None, ge=1)

    @field_validator("part", "shard", mode="before")
    @classmethod
    def _part(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_part(value)
        return value

    @field_serializer("part", "shard")
    def _part_out(self, part: tuple[int, int] | None) -> str | None:
        return None if part is None else f"{part[0] + 1}/{part[1]}"

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        k, parts = self.part
        if not 0 <= k < parts:
            raise ValueError(f"part {k + 1}/{parts}: expected K/P with 1 <= K <= P")
        if self.shard is not None and not 0 <= self.shard[0] < self.shard[1]:
            raise ValueError(f"shard {self.shard[0] + 1}/{self.shard[1]}: expected K/W with 1 <= K <= W")
        if (self.job == "shard") != (self.shard is not None):
            raise ValueError("a shard task, and only a shard task, names its shard (K/W)")
        if (self.job == "merge") != (self.shards is not None):
            raise ValueError("a merge task needs its group's count of shards (shards), and only a merge task "
                             "names one")
        if self.job in ("legs", "scores") and not self.legs:
            raise ValueError(f"a {self.job} task needs legs (the store key of the group's legs.json)")
        if self.job == "scores" and (self.reranker is None or len(self.scores) != 1):
            raise ValueError("a scores task needs the reranker and one scores key, its part's")
        return self

    def to_json(self) -> str:
        """One line of JSON, the arms as their specs (no unset field): what :meth:`from_json` reads."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True, exclude_defaults=True), sort_keys=True,
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str = "the task") -> Task:
        """The task ``text`` holds; anything else is one line naming ``where`` and the field (exit 4)."""
        if nested_deeper_than(text, MAX_JSON_DEPTH):
            raise InputDataError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels; expected a task "
                                 "(a few levels)")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputDataError(f"{where}: not JSON at line {e.lineno} column {e.colno} ({e.msg})") from e
        if not isinstance(doc, dict):
            raise InputDataError(f"{where}: expected a JSON object (a task), got {type(doc).__name__}")
        try:
            return cls.model_validate(doc)
        except PydanticValidationError as e:
            error = e.errors()[0]
            field = "".join(f"{part}: " for part in [".".join(map(str, error["loc"]))] if part)
            more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
            raise InputDataError(f"{where}: {field}{error['msg'].removeprefix('Value error, ')}{more}") from e

    @classmethod
    def read(cls, path: Path) -> Task:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise InputDataError(f"{path}: cannot read the task: {e.strerror}") from e
        return cls.from_json(text, str(path))


def parse_part(text: str) -> tuple[int, int]:
    """``K/P`` (1 <= K <= P) as (K - 1, P): which of P processes sharing a group's queries this is."""
    k, slash, p = text.partition("/")
    if not (slash and k.isdigit() and p.isdigit() and 1 <= int(k) <= int(p)):
        raise ValueError(f"{text!r}: expected K/P with 1 <= K <= P, e.g. 2/3")
    return int(k) - 1, int(p)


def build_task(job: Job, arms: tuple[Arm, ...] | list[Arm], *, state: Path | str, store: str, sweep_id: str,
               backend: Backend = "embedded", s3_endpoint: str | None = None, workers: int = 1,
               embedding_backend: EmbeddingBackend = "torch", onnx_cache: Path | str | None = None,
               reranker: Path | str | None = None, rerank_device: str = "cpu",
               rerank_backend: RerankBackend = "torch", rerank_threads: int = 0,
               rerank_cache: Path | str | None = None, legs: str | None = None, scores: tuple[str, ...] = (),
               part: tuple[int, int] = (0, 1), prescore: tuple[Arm, ...] | list[Arm] = (),
               processes: int = 1, shard: tuple[int, int] | None = None, shards: int | None = None) -> Task:
    """The task of one process, as both executors build it: the cross-encoder's settings only where a
    ``reranker`` is given (a process that runs none is told none), ``processes`` only for a group."""
    scorer: dict[str, Any] = {}
    if reranker is not None:
        scorer = {"reranker": reranker, "rerank_device": rerank_device, "rerank_backend": rerank_backend,
                  "rerank_threads": rerank_threads, "rerank_cache": rerank_cache}
    extra = {"onnx_cache": onnx_cache} if onnx_cache is not None else {}
    return Task(job=job, state=Path(state), store=store, sweep_id=sweep_id, arms=tuple(arms), legs=legs,
                scores=tuple(scores), part=part, prescore=tuple(prescore),
                processes=processes if len(arms) > 1 else 1, backend=backend,
                embedding_backend=embedding_backend, workers=workers, s3_endpoint=s3_endpoint, shard=shard,
                shards=shards, **scorer, **extra)
