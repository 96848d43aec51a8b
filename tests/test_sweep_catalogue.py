"""The arm catalogue: the methodology's arms as data, argv, hashing and the manifest round trip."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.commands.bench import add_retrieval_flags
from harness.errors import EXIT_INPUT, InputDataError, UsageError
from harness.sweep.catalogue import (
    CATALOGUE,
    DEFAULTS,
    MAX_ARMS,
    Arm,
    Family,
    arm_argv,
    config_hash,
    pipeline_id,
    select_arms,
)
from harness.sweep.manifest import emit_manifest, load_manifest


def bench_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_retrieval_flags(parser)
    return parser


# (arm, --fusion, --rank-constant, --normalization-technique, --combination-technique, weights, pipeline id)
# transcribed from the methodology's "The arms as data, not names" table.
FUSION_TABLE = [
    ("rrf-30-default", None, None, None, None, None, "transcript-hybrid-search"),
    ("rrf-30-explicit", "rrf", 30, None, None, None, "transcript-hybrid-search"),
    ("rrf-60", "rrf", 60, None, None, None, "transcript-hybrid-search-rrf-60"),
    ("norm-minmax-arith", "normalization", None, "min_max", "arithmetic_mean", None,
     "transcript-hybrid-search-norm-min_max-arithmetic_mean"),
    ("norm-minmax-geom", "normalization", None, "min_max", "geometric_mean", None,
     "transcript-hybrid-search-norm-min_max-geometric_mean"),
    ("norm-minmax-harm", "normalization", None, "min_max", "harmonic_mean", None,
     "transcript-hybrid-search-norm-min_max-harmonic_mean"),
    ("norm-l2-arith", "normalization", None, "l2", "arithmetic_mean", None,
     "transcript-hybrid-search-norm-l2-arithmetic_mean"),
    ("norm-zscore-arith", "normalization", None, "z_score", "arithmetic_mean", None,
     "transcript-hybrid-search-norm-z_score-arithmetic_mean"),
    ("norm-minmax-arith-w70-30", "normalization", None, "min_max", "arithmetic_mean", "0.7,0.3",
     "transcript-hybrid-search-norm-min_max-arithmetic_mean-w70_30"),
    ("norm-minmax-arith-w30-70", "normalization", None, "min_max", "arithmetic_mean", "0.3,0.7",
     "transcript-hybrid-search-norm-min_max-arithmetic_mean-w30_70"),
]


def test_defaults_match_bench() -> None:
    """The catalogue's idea of 'absent key' must be bench's own default for that flag."""
    parsed = vars(bench_parser().parse_args([]))
    assert {k: parsed[k] for k in DEFAULTS} == DEFAULTS


@pytest.mark.parametrize(("name", "fusion", "k", "norm", "comb", "weights", "pipeline"), FUSION_TABLE)
def test_fusion_arms_are_the_methodology_table(name: str, fusion: str | None, k: int | None, norm: str | None,
                                               comb: str | None, weights: str | None, pipeline: str) -> None:
    arm = CATALOGUE.family("fusion").arm(name)
    config = arm.resolved_config()
    assert (config["fusion"], config["rank_constant"], config["normalization_technique"],
            config["combination_technique"], config["combination_weights"]) == (fusion, k, norm, comb, weights)
    assert config["stage"] == "retrieve" and config["size"] == 48
    assert pipeline_id(arm) == pipeline


def test_family_sizes_and_controls() -> None:
    sizes = {f.name: (len(f.arms), f.control, f.needs_reranker) for f in CATALOGUE.families}
    assert sizes["fusion"] == (10, "rrf-30-default", False)
    assert sizes["budget"] == (9, "budget-48-12-4", True)
    assert sizes["pool"] == (5, "pool-48", True)
    assert sizes["embedding"] == (2, "embed-header", False)
    assert sizes["diversity"][1:] == ("retrieve-12", True)
    assert [a.name for a in CATALOGUE.family("fusion").arms] == [row[0] for row in FUSION_TABLE]


def test_budget_and_pool_arms() -> None:
    def shape(arm: Arm) -> tuple[object, ...]:
        c = arm.resolved_config()
        return (c["stage"], c["candidate_pool"], c["final_chunks"], c["max_chunks_per_file"], c["rerank_max_pairs"])

    budget = {a.name: shape(a) for a in CATALOGUE.family("budget").arms}
    assert budget == {
        "budget-48-12-4": ("rerank", 48, 12, 4, 50), "budget-48-12-4-repeat": ("rerank", 48, 12, 4, 50),
        "budget-48-20-4": ("rerank", 48, 20, 4, 50), "budget-48-08-4": ("rerank", 48, 8, 4, 50),
        "budget-48-12-2": ("rerank", 48, 12, 2, 50), "budget-48-12-8": ("rerank", 48, 12, 8, 50),
        "budget-24-12-4": ("rerank", 24, 12, 4, 50), "budget-96-12-4": ("rerank", 96, 12, 4, 50),
        "budget-96-12-4-pairs96": ("rerank", 96, 12, 4, 96),
    }
    pool = {a.name: shape(a)[1] for a in CATALOGUE.family("pool").arms}
    assert pool == {"pool-48": 48, "pool-12": 12, "pool-24": 24, "pool-32": 32, "pool-96": 96}
    assert CATALOGUE.family("budget").arm("budget-48-12-4-repeat").axis == "repeatability control"
    assert CATALOGUE.family("fusion").arm("rrf-30-explicit").axis == "flag-inertness control"


def test_diversity_family_separates_rerank_from_sampling() -> None:
    family = CATALOGUE.family("diversity")
    only = family.arm("diversity-only").resolved_config()
    rerank = family.arm("rerank-48-12-4").resolved_config()
    # Same pool and sampler; the one difference is the cross-encoder (the stage).
    differing = {k for k in DEFAULTS if only[k] != rerank[k]}
    assert differing == {"stage"}
    assert (only["stage"], rerank["stage"]) == ("diversify", "rerank")
    assert family.control_arm.resolved_config()["size"] == 12
    assert ("rerank-48-12-4", "diversity-only") in family.contrasts
    # diversity-only's retrieval depth is 48, so its fair no-diversity baseline is retrieve-48.
    assert family.arm("retrieve-48").resolved_config()["size"] == 48
    assert ("diversity-only", "retrieve-48") in family.contrasts


def test_argv_omits_absent_flags_and_parses_with_bench() -> None:
    parser = bench_parser()
    control = CATALOGUE.family("fusion").control_arm
    assert "--fusion" not in arm_argv(control)
    w70 = CATALOGUE.family("fusion").arm("norm-minmax-arith-w70-30")
    assert arm_argv(w70) == ["--stage", "retrieve", "--size", "48", "--fusion", "normalization",
                             "--normalization-technique", "min_max", "--combination-technique", "arithmetic_mean",
                             "--combination-weights", "0.7,0.3"]
    for arm in CATALOGUE.arms:
        if arm.stage == "diversify":  # bench gains this stage with the executor (see docs/sweeps.md)
            continue
        parsed = vars(parser.parse_args(arm_argv(arm)))
        assert {k: parsed[k] for k in DEFAULTS} == arm.resolved_config(), arm.name


def test_config_hash_is_canonical_and_state_bound() -> None:
    a = Arm(name="x", family="f", axis="a", config={"stage": "rerank", "candidate_pool": 24})
    b = Arm(name="y", family="g", axis="b", config={"candidate_pool": 24, "stage": "rerank"})
    assert config_hash(a, "state-1") == config_hash(b, "state-1")  # name and key order do not matter
    assert config_hash(a, "state-1") != config_hash(a, "state-2")
    # Spelling a default explicitly is the same resolved config.
    c = Arm(name="z", family="f", axis="a", config={"stage": "rerank", "candidate_pool": 24, "final_chunks": 12})
    assert config_hash(a, "s") == config_hash(c, "s")
    d = Arm(name="w", family="f", axis="a", config={"stage": "rerank", "candidate_pool": 12})
    assert config_hash(a, "s") != config_hash(d, "s")
    assert len(config_hash(a, "s")) == 64


def test_explicit_rrf_hashes_apart_from_the_default() -> None:
    fusion = CATALOGUE.family("fusion")
    assert config_hash(fusion.arm("rrf-30-default"), "s") != config_hash(fusion.arm("rrf-30-explicit"), "s")


def test_select() -> None:
    assert [a.family for a in select_arms(CATALOGUE, "pool")] == ["pool"] * 5
    assert len(select_arms(CATALOGUE, "all")) == len(CATALOGUE.arms)
    assert len(select_arms(CATALOGUE, "fusion,pool")) == 15
    with pytest.raises(UsageError, match="no family 'nope'"):
        select_arms(CATALOGUE, "nope")


def test_manifest_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(emit_manifest(), encoding="utf-8")
    assert load_manifest(path) == CATALOGUE
    assert emit_manifest(load_manifest(path)) == emit_manifest()


def _manifest(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(("arm", "message"), [
    ({"name": "a1", "axis": "x", "config": {"candidate_pol": 3}}, "families[f].arms[a1].config: unknown bench flag"),
    ({"name": "a1", "axis": "x", "config": {"size": "48"}}, "size must be a positive integer"),
    ({"name": "A B", "axis": "x"}, "families[f].arms[A B].name"),
    ({"name": "a1", "axis": "x", "colour": "red"}, "families[f].arms[a1].colour: Extra inputs"),
])
def test_manifest_errors_are_one_line_naming_file_and_field(tmp_path: Path, arm: dict[str, object],
                                                             message: str) -> None:
    doc = {"schema": "ragsweep.catalogue/1",
           "families": [{"name": "f", "control": "c", "arms": [{"name": "c", "axis": "control"}, arm]}]}
    path = _manifest(tmp_path, doc)
    with pytest.raises(InputDataError) as e:
        load_manifest(path)
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith(str(path)) and message in text


def test_manifest_refusals(tmp_path: Path) -> None:
    no_control = {"schema": "ragsweep.catalogue/1",
                  "families": [{"name": "f", "control": "missing", "arms": [{"name": "a", "axis": "x"}]}]}
    with pytest.raises(InputDataError, match="control 'missing' is not one of"):
        load_manifest(_manifest(tmp_path, no_control))
    wrong_flag = {"schema": "ragsweep.catalogue/1",
                  "families": [{"name": "f", "control": "a", "needs_reranker": True,
                                "arms": [{"name": "a", "axis": "x"}]}]}
    with pytest.raises(InputDataError, match="needs_reranker is True"):
        load_manifest(_manifest(tmp_path, wrong_flag))
    with pytest.raises(InputDataError, match="not JSON"):
        (tmp_path / "bad.json").write_text("{", encoding="utf-8")
        load_manifest(tmp_path / "bad.json")
    with pytest.raises(InputDataError, match="no such file"):
        load_manifest(tmp_path / "absent.json")


def _families(*sizes: int) -> dict[str, object]:
    return {"schema": "ragsweep.catalogue/1", "families": [
        {"name": f"f{f}", "control": f"f{f}-a0", "arms": [{"name": f"f{f}-a{i}", "axis": "x"} for i in range(n)]}
        for f, n in enumerate(sizes)]}


def test_a_manifest_holds_at_most_1000_arms(tmp_path: Path) -> None:
    assert len(load_manifest(_manifest(tmp_path, _families(600, 400))).arms) == MAX_ARMS == 1000
    with pytest.raises(InputDataError) as refused:
        load_manifest(_manifest(tmp_path, _families(600, 401)))
    assert str(refused.value) == (f"{tmp_path / 'm.json'}: (document): 2 families of 1001 arms in all; a manifest "
                                  "holds at most 1000 arms: split it into several sweeps")


def test_a_50000_arm_manifest_is_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: counted duplicate names in quadratic time; sweep collect met a MemoryError after 58 s
    path = _manifest(tmp_path, _families(25_000, 25_000))
    started = time.perf_counter()
    code = main(["sweep", "collect", "--sweep-id", "s", "--out", str(tmp_path / "var"), "--manifest", str(path)])
    assert time.perf_counter() - started < 10
    assert code == EXIT_INPUT
    assert capsys.readouterr().err == (f"ragsweep: error: {path}: (document): 2 families of 50000 arms in all; a "
                                       "manifest holds at most 1000 arms: split it into several sweeps\n")
    assert not (tmp_path / "var").exists()


def test_deep_json_is_refused_in_every_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: RecursionError, an internal error (exit 1)
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for argv in (["sweep", "collect", "--sweep-id", "s", "--out", str(tmp_path / "var"), "--manifest", str(path)],
                 ["sweep", "run", "--state", str(tmp_path), "--out", str(tmp_path / "var"), "--manifest", str(path)],
                 ["agreement", "--manifest", str(path)],
                 ["agreement", "--sweep", str(tmp_path), "--sweep-id", "s", "--catalogue", str(path)]):
        assert main(argv) == EXIT_INPUT, argv
        assert capsys.readouterr().err == (f"ragsweep: error: {path}: JSON nested deeper than 100 levels; expected "
                                           "the document the harness writes (a few levels)\n"), argv
    assert not (tmp_path / "var").exists()


def test_family_derives_needs_reranker() -> None:
    family = Family.model_validate({"name": "f", "control": "a", "arms": [
        {"name": "a", "axis": "control", "config": {"stage": "retrieve"}},
        {"name": "b", "axis": "x", "config": {"stage": "rerank"}}]})
    assert family.needs_reranker
    assert family.arm("b").family == "f"


def test_docs_table_matches_the_catalogue() -> None:
    """docs/sweeps.md lists every arm with the exact flags it runs with."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "sweeps.md").read_text(encoding="utf-8")
    section = text.split("## The catalogue", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip().split()[0].strip("`"): line for line in section.splitlines()
            if line.startswith("| `")}
    assert set(rows) == {a.name for a in CATALOGUE.arms}
    for arm in CATALOGUE.arms:
        row = rows[arm.name]
        assert f"`{' '.join(arm_argv(arm))}`" in row, arm.name
        assert f"| {arm.family} | {arm.axis} |" in row, arm.name
