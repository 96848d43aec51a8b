"""The bench stage registry: one entry per --stage, and what each one declares."""

from __future__ import annotations

import argparse

import pytest
from pydantic import ValidationError

from harness.bench.arm import ArmConfig
from harness.bench.config import BenchConfig
from harness.bench.stages import STAGES
from harness.commands.bench import add_retrieval_flags
from harness.errors import UsageError


def test_the_cli_offers_exactly_the_registered_stages() -> None:
    p = argparse.ArgumentParser()
    add_retrieval_flags(p)
    choices = next(a.choices for a in p._actions if a.dest == "stage")
    assert list(choices) == list(STAGES) == ["retrieve", "rerank", "diversify", "route"]


@pytest.mark.parametrize(("stage", "pooled", "needs_reranker", "extra"), [
    ("retrieve", False, False, None),
    ("rerank", True, True, None),
    ("diversify", True, False, None),
    ("route", False, False, "digest_leg"),
])
def test_each_stage_declares_its_shape(stage: str, pooled: bool, needs_reranker: bool, extra: str | None) -> None:
    entry = STAGES[stage]
    assert entry.name == stage
    assert (entry.pooled, entry.needs_reranker) == (pooled, needs_reranker)
    assert entry.normalisation == ("rerank" if pooled else "retrieve")
    assert (entry.extra[0] if entry.extra else None) == extra


def test_a_pooled_stage_records_its_budget_and_a_retrieve_stage_does_not() -> None:
    diversify = BenchConfig(control_name="x", arm=ArmConfig(stage="diversify", candidate_pool=32, size=12))
    block = diversify.retrieval_block(None)
    assert (block["size"], block["candidate_pool"], block["fusion_window"]) == (32, 32, 128)
    assert "rerank_max_pairs" not in block
    retrieve = BenchConfig(control_name="x", arm=ArmConfig(size=12)).retrieval_block(None)
    assert (retrieve["size"], retrieve["fusion_window"]) == (12, 100)
    assert "candidate_pool" not in retrieve


def test_a_stage_that_needs_the_reranker_refuses_to_start_without_one() -> None:
    with pytest.raises(UsageError, match="--stage rerank needs --reranker DIR"):
        BenchConfig(control_name="x", arm=ArmConfig(stage="rerank"))


def test_the_arm_model_spells_the_registered_stages() -> None:
    from typing import get_args

    from harness.bench.arm import Stage

    assert get_args(Stage) == tuple(STAGES)


def test_bench_config_holds_the_arm_whole_and_copies_none_of_its_fields() -> None:
    # one source: an arm field (and its default) is written in ArmConfig only
    assert set(BenchConfig.model_fields) & set(ArmConfig.model_fields) == set()
    config = BenchConfig(control_name="x", arm=ArmConfig(fusion="rrf", rank_constant=60, size=12))
    assert (config.fusion.method, config.fusion.rank_constant) == ("rrf", 60)
    assert config.budget.size == 12 and config.retrieval_block(None)["size"] == 12
    with pytest.raises(ValidationError, match="frozen"):
        config.workers = 2  # type: ignore[misc]
    with pytest.raises(UsageError, match=r"--combination-weights 0\.705,0\.295"):
        BenchConfig(control_name="x", arm=ArmConfig(fusion="normalization", combination_weights="0.705,0.295"))
    with pytest.raises(UsageError, match="--workers must be at least 1"):
        BenchConfig(control_name="x", workers=0)
