"""The fusion arm: its parameters, the pipeline id they derive, and the CLI flags that set it.

Pipeline ids are derived from the parameters, never chosen (methodology, "The arms as data,
not names"):

==================================================  ==============================================
arm                                                 pipeline id
==================================================  ==============================================
no --fusion flag, or ``--fusion rrf`` at the        ``transcript-hybrid-search`` (reserved: the
configured rank constant (30)                       cluster's existing pipeline)
``--fusion rrf --rank-constant K`` (K != 30)        ``transcript-hybrid-search-rrf-K``
``--fusion normalization`` N x C                    ``transcript-hybrid-search-norm-N-C``
... with ``--combination-weights 0.7,0.3``          ``transcript-hybrid-search-norm-N-C-w70_30``
==================================================  ==============================================

Weights are BM25 leg first, vector leg second, and integer percent: anything finer is
refused, because two arms aliased onto one id means one silently measured the other's
pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, model_validator
from pydantic import ValidationError as PydanticValidationError

from harness.errors import UsageError
from harness.retrieval.fusion.base import (
    CombinationTechniqueName,
    FusionMethod,
    NormalizationTechniqueName,
)
from harness.retrieval.fusion.rrf import MAX_RANK_CONSTANT, MIN_RANK_CONSTANT

CONFIGURED_RANK_CONSTANT = 30  # the deployment's SEARCH_RRF_RANK_CONSTANT
RESERVED_PIPELINE_ID = "transcript-hybrid-search"
# What the engine's normalization-processor uses when a pipeline omits the technique.
DEFAULT_NORMALIZATION_TECHNIQUE: NormalizationTechniqueName = "min_max"
DEFAULT_COMBINATION_TECHNIQUE: CombinationTechniqueName = "arithmetic_mean"
WEIGHT_TOLERANCE = 1e-9
UNUSABLE = "Unusable --fusion configuration"

FUSION_METHODS: tuple[str, ...] = get_args(FusionMethod)
NORMALIZATION_TECHNIQUE_NAMES: tuple[str, ...] = get_args(NormalizationTechniqueName)
COMBINATION_TECHNIQUE_NAMES: tuple[str, ...] = get_args(CombinationTechniqueName)

# Which flags belong to which --fusion method.
FLAGS_FOR_METHOD: dict[str, frozenset[str]] = {
    "rrf": frozenset({"--rank-constant"}),
    "normalization": frozenset(
        {"--normalization-technique", "--combination-technique", "--combination-weights"}
    ),
}


def weight_percents(weights: Sequence[object]) -> tuple[int, int]:
    """``(0.7, 0.3) -> (70, 30)``; raises ValueError unless two whole percents summing to 1."""
    if len(weights) != 2:
        raise ValueError(
            f"--combination-weights needs exactly two weights (BM25 leg, vector leg), got {len(weights)}"
        )
    percents: list[int] = []
    total = 0.0
    for weight in weights:
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
            raise ValueError(f"--combination-weights must be finite numbers, got {weight!r}")
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"every weight must be in [0, 1], got {weight!r}")
        percent = round(weight * 100)
        if abs(weight * 100 - percent) > WEIGHT_TOLERANCE:
            raise ValueError(
                f"weight {weight!r} is finer than a whole percent; pipeline ids encode weights as integer "
                "percent, so it would alias another arm's pipeline. Use whole percents such as 0.7,0.3"
            )
        percents.append(percent)
        total += weight
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(f"weights must sum to 1, got {total!r}")
    return percents[0], percents[1]


def _check_rank_constant(value: object, flag: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{flag} must be an integer, got {value!r}")
    if not MIN_RANK_CONSTANT <= value <= MAX_RANK_CONSTANT:
        raise ValueError(
            f"{flag} must be in [{MIN_RANK_CONSTANT}, {MAX_RANK_CONSTANT}] (the engine's range), got {value}"
        )
    return value


class FusionConfig(BaseModel):
    """One resolved fusion strategy. Construct with ``parse_fusion_args`` from CLI flags."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: FusionMethod = "rrf"
    rank_constant: StrictInt | None = None
    normalization_technique: NormalizationTechniqueName | None = None
    combination_technique: CombinationTechniqueName | None = None
    weights: tuple[float, float] | None = None
    selected_explicitly: StrictBool = False
    configured_rank_constant: StrictInt = CONFIGURED_RANK_CONSTANT

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        """Fill the defaults a method implies and canonicalize weights to whole percents."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        method = data.get("method", "rrf")
        if method == "rrf" and data.get("rank_constant") is None:
            data["rank_constant"] = data.get("configured_rank_constant", CONFIGURED_RANK_CONSTANT)
        if method == "normalization":
            if data.get("normalization_technique") is None:
                data["normalization_technique"] = DEFAULT_NORMALIZATION_TECHNIQUE
            if data.get("combination_technique") is None:
                data["combination_technique"] = DEFAULT_COMBINATION_TECHNIQUE
        weights = data.get("weights")
        if weights is not None:
            if not isinstance(weights, list | tuple):
                raise ValueError(f"weights must be a pair of numbers, got {weights!r}")
            data["weights"] = tuple(p / 100 for p in weight_percents(weights))
        return data

    @model_validator(mode="after")
    def _consistent(self) -> FusionConfig:
        _check_rank_constant(self.configured_rank_constant, "configured rank constant")
        if self.method == "rrf":
            _check_rank_constant(self.rank_constant, "--rank-constant")
            if self.normalization_technique is not None or self.combination_technique is not None:
                raise ValueError("rrf takes no normalization or combination technique")
            if self.weights is not None:
                raise ValueError(
                    "rrf takes no weights: OpenSearch 2.19's score-ranker-processor refuses them "
                    "(weighted RRF arrived in neural-search 3.1)"
                )
        elif self.rank_constant is not None:
            raise ValueError("--rank-constant belongs to rrf, not normalization")
        return self

    @property
    def weight_percents(self) -> tuple[int, int] | None:
        return None if self.weights is None else weight_percents(self.weights)

    @property
    def pipeline_id(self) -> str:
        """Derived from the parameters; the reserved id is RRF at the configured constant."""
        if self.method == "rrf":
            if self.rank_constant == self.configured_rank_constant:
                return RESERVED_PIPELINE_ID
            return f"{RESERVED_PIPELINE_ID}-rrf-{self.rank_constant}"
        techniques = f"{self.normalization_technique}-{self.combination_technique}"
        pipeline_id = f"{RESERVED_PIPELINE_ID}-norm-{techniques}"
        percents = self.weight_percents
        if percents is not None:
            pipeline_id += f"-w{percents[0]}_{percents[1]}"
        return pipeline_id

    def to_dict(self) -> dict[str, Any]:
        """The results file's ``retrieval.fusion`` block."""
        parameters: dict[str, Any]
        if self.method == "rrf":
            parameters = {"rank_constant": self.rank_constant}
        else:
            parameters = {
                "normalization_technique": self.normalization_technique,
                "combination_technique": self.combination_technique,
                "weights": None if self.weights is None else list(self.weights),
            }
        return {
            "method": self.method,
            "parameters": parameters,
            "pipeline_id": self.pipeline_id,
            "selected_explicitly": self.selected_explicitly,
        }


def _refuse(problem: str) -> UsageError:
    return UsageError(f"{UNUSABLE}: {problem}")


def _parse_weights(text: str) -> tuple[float, float]:
    parts = [part.strip() for part in text.split(",")]
    try:
        numbers = [float(part) for part in parts]
    except ValueError as e:
        raise _refuse(f"--combination-weights {text!r} is not a comma-separated pair such as 0.7,0.3") from e
    try:
        weight_percents(numbers)
    except ValueError as e:
        raise _refuse(f"--combination-weights {text}: {e}") from e
    return numbers[0], numbers[1]


def _parse_rank_constant(value: int | str) -> int:
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError as e:
            raise _refuse(f"--rank-constant {value!r} is not an integer") from e
    try:
        return _check_rank_constant(value, "--rank-constant")
    except ValueError as e:
        raise _refuse(str(e)) from e


def parse_fusion_args(
    fusion: str | None,
    rank_constant: int | str | None,
    normalization_technique: str | None,
    combination_technique: str | None,
    combination_weights: str | None,
    *,
    configured_rank_constant: int = CONFIGURED_RANK_CONSTANT,
) -> FusionConfig:
    """Resolve ``--fusion`` and its flags into a FusionConfig, or raise UsageError.

    No ``--fusion``: the deployment's RRF at its configured constant, ``selected_explicitly``
    false, and every other fusion flag refused. ``--fusion normalization`` without a
    technique takes the engine's defaults (min_max, arithmetic_mean), so leaving a flag out
    and spelling its default resolve to one pipeline.
    """
    given = {
        flag: value
        for flag, value in (
            ("--rank-constant", rank_constant),
            ("--normalization-technique", normalization_technique),
            ("--combination-technique", combination_technique),
            ("--combination-weights", combination_weights),
        )
        if value is not None
    }
    if fusion is None:
        if given:
            raise _refuse(
                f"{', '.join(given)} given without --fusion; add --fusion "
                f"{' or --fusion '.join(FUSION_METHODS)}, or drop the flag to measure the deployment default"
            )
        return FusionConfig(configured_rank_constant=configured_rank_constant)
    if fusion not in FLAGS_FOR_METHOD:
        raise _refuse(f"--fusion {fusion!r} is not one of {', '.join(FUSION_METHODS)}")
    if fusion == "rrf" and combination_weights is not None:
        raise _refuse(
            "--combination-weights with --fusion rrf: OpenSearch 2.19's score-ranker-processor takes no "
            "weights (weighted RRF arrived in neural-search 3.1); use --fusion normalization to weight legs"
        )
    misplaced = [flag for flag in given if flag not in FLAGS_FOR_METHOD[fusion]]
    if misplaced:
        raise _refuse(
            f"{', '.join(misplaced)} does not apply to --fusion {fusion}; drop it or change --fusion"
        )
    if normalization_technique is not None and normalization_technique not in NORMALIZATION_TECHNIQUE_NAMES:
        raise _refuse(
            f"--normalization-technique {normalization_technique!r} is not one of "
            f"{', '.join(NORMALIZATION_TECHNIQUE_NAMES)}"
        )
    if combination_technique is not None and combination_technique not in COMBINATION_TECHNIQUE_NAMES:
        raise _refuse(
            f"--combination-technique {combination_technique!r} is not one of "
            f"{', '.join(COMBINATION_TECHNIQUE_NAMES)}"
        )
    fields: dict[str, Any] = {
        "method": fusion,
        "selected_explicitly": True,
        "configured_rank_constant": configured_rank_constant,
        "normalization_technique": normalization_technique,
        "combination_technique": combination_technique,
    }
    if rank_constant is not None:
        fields["rank_constant"] = _parse_rank_constant(rank_constant)
    if combination_weights is not None:
        fields["weights"] = _parse_weights(combination_weights)
    try:
        return FusionConfig(**fields)
    except PydanticValidationError as e:
        problems = "; ".join(str(error["msg"]).removeprefix("Value error, ") for error in e.errors())
        raise _refuse(problems) from e
