"""FusionConfig, parse_fusion_args and the pipeline-id derivation (methodology, "The arms as data")."""

from __future__ import annotations

import pydantic
import pytest

from harness.errors import EXIT_USAGE, UsageError
from harness.retrieval.fusion import FusionConfig, parse_fusion_args

P = "transcript-hybrid-search"

# The ten arms of the Stage 5 fusion table, flags exactly as the table gives them:
# (arm, --fusion, --rank-constant, --normalization-technique, --combination-technique,
#  --combination-weights, resolved pipeline id)
ARMS = [
    ("rrf-30-default", None, None, None, None, None, P),
    ("rrf-30-explicit", "rrf", 30, None, None, None, P),
    ("rrf-60", "rrf", 60, None, None, None, f"{P}-rrf-60"),
    ("norm-minmax-arith", "normalization", None, "min_max", "arithmetic_mean", None,
     f"{P}-norm-min_max-arithmetic_mean"),
    ("norm-minmax-geom", "normalization", None, "min_max", "geometric_mean", None,
     f"{P}-norm-min_max-geometric_mean"),
    ("norm-minmax-harm", "normalization", None, "min_max", "harmonic_mean", None,
     f"{P}-norm-min_max-harmonic_mean"),
    ("norm-l2-arith", "normalization", None, "l2", "arithmetic_mean", None, f"{P}-norm-l2-arithmetic_mean"),
    ("norm-zscore-arith", "normalization", None, "z_score", "arithmetic_mean", None,
     f"{P}-norm-z_score-arithmetic_mean"),
    ("norm-minmax-arith-w70-30", "normalization", None, "min_max", "arithmetic_mean", "0.7,0.3",
     f"{P}-norm-min_max-arithmetic_mean-w70_30"),
    ("norm-minmax-arith-w30-70", "normalization", None, "min_max", "arithmetic_mean", "0.3,0.7",
     f"{P}-norm-min_max-arithmetic_mean-w30_70"),
]


@pytest.mark.parametrize(("arm", "fusion", "k", "norm", "comb", "weights", "pipeline_id"), ARMS)
def test_the_ten_arms_resolve_to_the_table_s_pipeline_ids(
    arm: str, fusion: str | None, k: int | None, norm: str | None, comb: str | None,
    weights: str | None, pipeline_id: str,
) -> None:
    config = parse_fusion_args(fusion, k, norm, comb, weights)
    assert config.pipeline_id == pipeline_id, arm
    assert config.selected_explicitly == (fusion is not None)


def test_pipeline_ids_are_distinct_except_the_flag_inertness_control() -> None:
    ids = [parse_fusion_args(*arm[1:6]).pipeline_id for arm in ARMS]
    assert len(set(ids)) == len(ids) - 1  # rrf-30-default and rrf-30-explicit share one


def test_the_default_and_the_explicit_control_differ_only_in_selected_explicitly() -> None:
    default = parse_fusion_args(None, None, None, None, None)
    explicit = parse_fusion_args("rrf", 30, None, None, None)
    assert default.to_dict() == {
        "method": "rrf",
        "parameters": {"rank_constant": 30},
        "pipeline_id": P,
        "selected_explicitly": False,
    }
    assert explicit.to_dict() == {**default.to_dict(), "selected_explicitly": True}
    assert parse_fusion_args("rrf", None, None, None, None) == explicit  # --rank-constant defaults to 30


def test_normalization_to_dict() -> None:
    config = parse_fusion_args("normalization", None, "min_max", "arithmetic_mean", "0.70,0.30")
    assert config.to_dict() == {
        "method": "normalization",
        "parameters": {
            "normalization_technique": "min_max",
            "combination_technique": "arithmetic_mean",
            "weights": [0.7, 0.3],
        },
        "pipeline_id": f"{P}-norm-min_max-arithmetic_mean-w70_30",
        "selected_explicitly": True,
    }
    unweighted = parse_fusion_args("normalization", None, "l2", "harmonic_mean", None)
    assert unweighted.to_dict()["parameters"]["weights"] is None


def test_normalization_techniques_default_to_the_engine_s() -> None:
    # the engine's normalization-processor defaults: min_max, arithmetic_mean
    assert parse_fusion_args("normalization", None, None, None, None) == parse_fusion_args(
        "normalization", None, "min_max", "arithmetic_mean", None
    )


def test_the_reserved_id_follows_the_configured_constant() -> None:
    assert parse_fusion_args("rrf", 60, None, None, None, configured_rank_constant=60).pipeline_id == P
    other = parse_fusion_args("rrf", 30, None, None, None, configured_rank_constant=60)
    assert other.pipeline_id == f"{P}-rrf-30"
    assert parse_fusion_args(None, None, None, None, None, configured_rank_constant=60).rank_constant == 60


@pytest.mark.parametrize(
    ("weights", "percents", "suffix"),
    [("0.7,0.3", (70, 30), "w70_30"), ("0.07,0.93", (7, 93), "w7_93"), ("1,0", (100, 0), "w100_0"),
     ("0.5, 0.5", (50, 50), "w50_50")],
)
def test_whole_percent_weights_are_accepted(weights: str, percents: tuple[int, int], suffix: str) -> None:
    config = parse_fusion_args("normalization", None, "min_max", "geometric_mean", weights)
    assert config.weight_percents == percents
    assert config.pipeline_id.endswith(f"-{suffix}")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        # finer than a whole percent would alias onto w70_30 / w71_29
        (("normalization", None, "min_max", "arithmetic_mean", "0.705,0.295"), "whole percent"),
        (("normalization", None, "min_max", "arithmetic_mean", "0.70001,0.29999"), "whole percent"),
        (("normalization", None, "min_max", "arithmetic_mean", "0.7,0.4"), "sum to 1"),
        (("normalization", None, "min_max", "arithmetic_mean", "1.2,-0.2"), "[0, 1]"),
        (("normalization", None, "min_max", "arithmetic_mean", "0.7"), "exactly two"),
        (("normalization", None, "min_max", "arithmetic_mean", "0.5,0.3,0.2"), "exactly two"),
        (("normalization", None, "min_max", "arithmetic_mean", "a,b"), "comma-separated pair"),
        (("normalization", None, "min_max", "arithmetic_mean", "nan,nan"), "finite"),
        (("rrf", None, None, None, "0.7,0.3"), "weighted RRF arrived in neural-search 3.1"),
        (("rrf", 0, None, None, None), "[1, 10000]"),
        (("rrf", 10_001, None, None, None), "[1, 10000]"),
        (("rrf", "sixty", None, None, None), "not an integer"),
        (("rrf", 60, "min_max", None, None), "--normalization-technique does not apply to --fusion rrf"),
        (("normalization", 60, "min_max", "arithmetic_mean", None), "--rank-constant does not apply"),
        ((None, 60, None, None, None), "--rank-constant given without --fusion"),
        ((None, None, "min_max", "arithmetic_mean", None), "without --fusion"),
        (("hybrid", None, None, None, None), "not one of rrf, normalization"),
        (("normalization", None, "minmax", "arithmetic_mean", None), "not one of min_max, l2, z_score"),
        (("normalization", None, "min_max", "mean", None), "not one of arithmetic_mean"),
    ],
)
def test_unusable_configurations_are_refused(args: tuple, fragment: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_fusion_args(*args)
    message = str(caught.value)
    assert message.startswith("Unusable --fusion configuration")
    assert fragment in message
    assert caught.value.exit_code == EXIT_USAGE
    assert "\n" not in message


def test_the_refusal_message_for_finer_weights() -> None:
    expected = r"^Unusable --fusion configuration: --combination-weights 0\.705,0\.295"
    with pytest.raises(UsageError, match=expected):
        parse_fusion_args("normalization", None, "min_max", "arithmetic_mean", "0.705,0.295")


@pytest.mark.parametrize(
    "fields",
    [
        {"method": "rrf", "weights": (0.7, 0.3)},
        {"method": "rrf", "normalization_technique": "l2"},
        {"method": "normalization", "rank_constant": 30},
        {"method": "normalization", "weights": (0.705, 0.295)},
        {"method": "rrf", "rank_constant": 0},
        {"method": "rrf", "rank_constant": True},
        {"method": "rrf", "rank_constant": "30"},
        {"method": "normalization", "normalization_technique": "z-score"},
    ],
)
def test_a_directly_built_config_is_validated_too(fields: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        FusionConfig(**fields)


def test_config_is_frozen() -> None:
    config = FusionConfig()
    with pytest.raises(pydantic.ValidationError):
        config.rank_constant = 60  # type: ignore[misc]
