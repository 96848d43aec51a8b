"""An arm's configuration: the one model the bench flags are generated from, the catalogue
validates into, and jobs/ hands to bench directly.

Field names are bench's flag names with ``_`` (``candidate_pool`` is ``--candidate-pool``);
the field order is the order ``arm_argv`` spells them. An integer is a count or the RRF rank
constant, so at least 1, and a bool is not an integer here (pydantic's lax int would take it).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as PydanticValidationError

from harness.errors import UsageError

Stage = Literal["retrieve", "rerank", "diversify", "route"]  # the registry's keys (harness.bench.stages)
Scope = Literal["corpus", "gold-files"]
SCOPES: tuple[Scope, ...] = get_args(Scope)


class ArmConfig(BaseModel):
    """Everything that distinguishes one arm; an absent value is bench's default."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stage: Stage = Field("retrieve", description=(
        "retrieve: the candidate pool; rerank: cross-encoder + diversity_sample; diversify: "
        "diversity_sample without the cross-encoder; route: retrieve with the router and digest leg"))
    scope: Scope = Field("corpus", description="gold-files restricts to each query's gold files: an oracle upper bound")
    size: int = Field(48, description="retrieve size; sets the fusion window max(100, min(4*size, 500))")
    fusion: Literal["rrf", "normalization"] | None = Field(
        None, description="omit for the deployment default (RRF at rank constant 30)")
    rank_constant: int | None = None
    normalization_technique: Literal["min_max", "l2", "z_score"] | None = None
    combination_technique: Literal["arithmetic_mean", "geometric_mean", "harmonic_mean"] | None = None
    combination_weights: str | None = Field(
        None, description="integer-percent weights, e.g. 0.7,0.3 (finer is refused)",
        json_schema_extra={"metavar": "BM25,VECTOR"})
    candidate_pool: int = 48
    final_chunks: int = 12
    max_chunks_per_file: int = 4
    rerank_max_pairs: int = 50
    embedding_text: Literal["header", "body"] = "header"

    @model_validator(mode="before")
    @classmethod
    def _strict_counts(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        for key, value in data.items():
            if key in INT_KEYS and value is not None and (
                    isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
            if key in ARM_KEYS and key not in INT_KEYS and value is not None and not isinstance(value, str):
                raise ValueError(f"{key} must be a string, got {value!r}")
        return data

    def fusion_config(self) -> Any:
        """The FusionConfig these flags resolve to (or UsageError), as bench resolves it."""
        from harness.retrieval.fusion import parse_fusion_args

        return parse_fusion_args(self.fusion, self.rank_constant, self.normalization_technique,
                                 self.combination_technique, self.combination_weights)


ARM_KEYS: tuple[str, ...] = tuple(ArmConfig.model_fields)
INT_KEYS = frozenset(k for k, f in ArmConfig.model_fields.items()
                     if f.annotation is int or int in get_args(f.annotation))
DEFAULTS: dict[str, str | int | None] = {k: f.default for k, f in ArmConfig.model_fields.items()}


def _choices(annotation: Any) -> list[str] | None:
    values = [a for a in get_args(annotation) if a is not type(None)]
    if values and all(get_args(v) for v in values if not isinstance(v, str)):
        flat = [x for v in values for x in (get_args(v) or (v,))]
        return flat if all(isinstance(x, str) for x in flat) else None
    return None


def add_arm_flags(group: argparse._ActionsContainer) -> None:
    """One bench flag per ArmConfig field: its type, its choices, its default, its help."""
    for name, field in ArmConfig.model_fields.items():
        kwargs: dict[str, Any] = {"default": field.default}
        choices = _choices(field.annotation)
        if choices:
            kwargs["choices"] = choices
        elif name in INT_KEYS:
            kwargs["type"] = int
        if field.description:
            kwargs["help"] = field.description
        extra = field.json_schema_extra
        if isinstance(extra, dict) and "metavar" in extra:
            kwargs["metavar"] = extra["metavar"]
        group.add_argument(f"--{name.replace('_', '-')}", **kwargs)


def arm_config_from_args(args: argparse.Namespace) -> ArmConfig:
    """The ArmConfig a parsed bench command line spells; a bad value is a usage error naming its flag.

    Refusals come in bench's order and words: the fusion flags first, then the counts.
    """
    values = {k: getattr(args, k) for k in ARM_KEYS}
    ArmConfig.model_construct(**values).fusion_config()
    for key in ARM_KEYS:
        if key in INT_KEYS and key != "rank_constant" and values[key] < 1:
            raise UsageError(f"--{key.replace('_', '-')} must be at least 1")
    try:
        return ArmConfig.model_validate(values)
    except PydanticValidationError as e:
        raise UsageError("; ".join(str(err["msg"]).removeprefix("Value error, ") for err in e.errors())) from e
