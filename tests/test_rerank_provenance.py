from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.errors import RefusedError, UsageError
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


def test_rerank_order_is_by_score_then_input_position() -> None:
    assert rerank_order([0.1, 0.9, 0.9, -3.0]) == [1, 2, 0, 3]
