"""bench writes answers.md and the answers block of metrics.json; flags reach the engine."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness.answers import AnswerSettings, ScoringPolicy
from harness.bench.config import BenchConfig
from harness.bench.run import run_bench
from harness.cli import build_parser
from harness.commands.bench import config_from_args
from harness.errors import UsageError
from harness.metrics.measures import MEASURES
from harness.report.answers_md import ANSWER_COLUMNS, render_answers_md
from harness.state import State
from harness.state.build import build_state
from harness.synthetic.adapter import read_synthetic
from harness.synthetic.folders import write_files
from harness.synthetic.generator import generate

SEED = 20260812


class HashEmbedder:
    identity = "hash-embedder@test"
    dimension = 8

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1
                for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> State:
    root = tmp_path_factory.mktemp("bench-answers")
    write_files(root / "corpus", generate(SEED, 30, "easy"))
    build_state(root / "state", [read_synthetic(root / "corpus")], {"header": HashEmbedder()})
    return State.open(root / "state")


def _config(answerer: str, **policy: object) -> BenchConfig:
    return BenchConfig(control_name=f"answers-{answerer}",
                       answers=AnswerSettings(answerer=answerer, policy=ScoringPolicy(**policy)))  # type: ignore[arg-type]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("answerer", ["none", "reference", "product"])
def test_two_runs_write_byte_identical_answers(answerer: str, state: State, tmp_path: Path) -> None:
    for run in ("a", "b"):
        run_bench(state, _config(answerer), HashEmbedder(), tmp_path / run)
    for artefact in ("answers.md", "metrics.json", "metrics.md"):
        assert _sha(tmp_path / "a" / artefact) == _sha(tmp_path / "b" / artefact), artefact


def test_the_answers_block_names_rules_answerer_and_coverage(state: State, tmp_path: Path) -> None:
    metrics = run_bench(state, _config("reference", count_tolerance=1, set_credit="exact"), HashEmbedder(), tmp_path)
    doc = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert doc["answers"] == json.loads(json.dumps(metrics["answers"]))
    block = doc["answers"]
    assert block["answerer"]["name"] == "reference" and block["answerer"]["is_production_path"] is False
    assert block["answerer"]["search_backend"] == "embedded"
    assert block["scoring"]["count_tolerance"] == 1 and block["scoring"]["set_credit"] == "exact"
    assert block["coverage"]["undated_files_excluded"] == 0  # every synthetic file is dated
    rules = [r["rule"] for r in block["rows"]]
    assert rules[0] == "all" and rules[1:] == sorted(rules[1:])
    for row in block["rows"]:
        assert set(row["measures"]) == set(ANSWER_COLUMNS)
        assert (row["corpus"], row["tier"], row["query_class"]) == ("synthetic", "A", "aggregation")
    # answer-scored queries never enter the retrieval rows, and the measure names are disjoint
    for row in doc["rows"]:
        assert row["query_class"] != "aggregation"
        assert not set(row["metrics"]) & set(ANSWER_COLUMNS)
    assert not set(ANSWER_COLUMNS) & set(MEASURES)


def test_answers_md_is_a_tier_separated_per_rule_table(state: State, tmp_path: Path) -> None:
    run_bench(state, _config("none"), HashEmbedder(), tmp_path)
    text = (tmp_path / "answers.md").read_text(encoding="utf-8")
    assert "## Publishable (tier A)" in text
    assert "| corpus | tier | class | rule | n | unans. | EM | partial | answered | setF1 |" in text
    assert "| synthetic | A | aggregation | R4-agg-list-files |" in text
    assert "is_production_path: false" in text and "## Misses (EM 0)" in text
    metrics_md = (tmp_path / "metrics.md").read_text(encoding="utf-8")
    header = next(line for line in metrics_md.splitlines() if line.startswith("| corpus"))
    assert not {c.strip() for c in header.split("|")} & set(ANSWER_COLUMNS)


def test_render_without_answer_queries() -> None:
    block = {"answerer": {"name": "reference", "is_production_path": False, "search_backend": "embedded",
                          "bucket_size": 10000, "mechanisms": {}},
             "scoring": ScoringPolicy().to_dict(), "queries": {"scored": 0, "unanswered": 0},
             "coverage": {"period_filtered_answers": 0, "undated_files_excluded": 0,
                          "undated_files_matching_a_phrase": []},
             "rows": [], "per_query": {}}
    assert "No answer-scored queries" in render_answers_md("qmsum-only", block)


def _args(*extra: str) -> list[str]:
    return ["bench", "--state", "s", "--control-name", "c", "--out", "o", *extra]


def test_flags_reach_the_answer_settings() -> None:
    parser = build_parser()
    default = config_from_args(parser.parse_args(_args()), "c")
    assert default.answers == AnswerSettings()
    assert default.answers.answerer == "reference" and default.answers.policy == ScoringPolicy(0, "f1")
    chosen = config_from_args(parser.parse_args(_args("--answerer", "product", "--answer-count-tolerance", "2",
                                                      "--answer-set-credit", "exact")), "c")
    assert chosen.answers == AnswerSettings(answerer="product", policy=ScoringPolicy(2, "exact"))


def test_bad_answer_flags_are_refused() -> None:
    parser = build_parser()
    with pytest.raises(UsageError, match="--answer-count-tolerance"):
        config_from_args(parser.parse_args(_args("--answer-count-tolerance", "-1")), "c")
    with pytest.raises(SystemExit):
        parser.parse_args(_args("--answerer", "llm"))


def test_misses_group_declines_by_reason_and_show_wrong_answers() -> None:
    def record(rule: str, gold: object, answer: object, declined: str | None, em: float) -> dict[str, object]:
        return {"corpus": "synthetic", "rule": rule, "question": "q", "gold": gold, "answer": answer,
                "declined": declined, "intent": None if declined else "list_files",
                "slots": {} if declined else {"phrase": "A B c"}, "evidence": {},
                "measures": {"EM": em, "partial": em, "answered": 0.0 if declined else 1.0}}

    block = {"answerer": {"name": "product", "is_production_path": False, "search_backend": "embedded",
                          "bucket_size": 10000, "mechanisms": {}},
             "scoring": ScoringPolicy().to_dict(), "queries": {"scored": 4, "unanswered": 2},
             "coverage": {"period_filtered_answers": 0, "undated_files_excluded": 0,
                          "undated_files_matching_a_phrase": []},
             "rows": [], "per_query": {
                 "agg-R3-0002": record("R3-agg-count-files", 3, None, "no frame", 0.0),
                 "agg-R3-0001": record("R3-agg-count-files", 3, None, "no frame", 0.0),
                 "agg-R4-0001": record("R4-agg-list-files", ["0123456789ab", "ffffffffffff"], ["0123456789ab"],
                                       None, 0.0),
                 "agg-R5-0001": record("R5-agg-count-events", 4, 4, None, 1.0)}}
    text = render_answers_md("c", block)
    assert "| no frame | 2 | agg-R3-0001, agg-R3-0002 |" in text
    assert '| agg-R4-0001 | R4-agg-list-files | ["01234567", "ffffffff"] | ["01234567"] | ' \
           "list_files(phrase='A B c') |" in text
    assert "agg-R5-0001" not in text
