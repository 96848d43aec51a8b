"""The cross-encoder in onnxruntime (--rerank-backend onnx, RAGSWEEP_RERANK_BACKEND).

The model is exported locally, once per weights digest, into the ONNX cache; each pair is still
scored alone, so a pair's score is the same bits whatever it is scored beside; its scores are
torch's to within float32 rounding, and not the same bits, so the backend is in the provenance,
the score cache's key and a sweep's measurement identity (torch on the CPU keeps the identity it
had before the choice existed). The model is a tiny BERT cross-encoder with seeded random
weights, made here: the plumbing is the test, not the scores (docs/sweeps.md measures a trained one)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fakes import claimed_state

from harness.bench.config import BenchConfig
from harness.cli import main
from harness.errors import UsageError
from harness.retrieval.rerank import CrossEncoderReranker, check_scorer, scorer_suffix
from harness.sweep.catalogue import CATALOGUE, config_hash
from tests.tiny_models import tiny_cross_encoder

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install 'ragsweep[onnx]')")

QUERY = "what did the group decide about the budget"
PASSAGES = ["we agreed to cut the marketing budget by ten percent", "the remote control needs a bigger button",
            "lunch is at noon", "budget", "we agreed"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


def test_onnx_scores_are_torchs_to_float_rounding_and_a_pairs_score_is_its_own(tiny: Path, onnx_dir: Path) -> None:
    torch_scores = CrossEncoderReranker(tiny).score(QUERY, PASSAGES)
    reranker = CrossEncoderReranker(tiny, backend="onnx", onnx_dir=onnx_dir)
    scores = reranker.score(QUERY, PASSAGES)
    assert max(abs(a - b) for a, b in zip(scores, torch_scores, strict=True)) < 1e-5
    assert len(set(scores)) == len(PASSAGES)  # the pairs are told apart: the check below can fail
    assert reranker.score(QUERY, PASSAGES[::-1]) == scores[::-1]
    assert [reranker.score(QUERY, [p])[0] for p in PASSAGES] == scores


def test_the_export_is_made_once_per_weights_and_recorded(tiny: Path, onnx_dir: Path) -> None:
    first = CrossEncoderReranker(tiny, backend="onnx", onnx_dir=onnx_dir)
    digest = first.provenance["weights_sha256"]
    folder = onnx_dir / f"cross-encoder_sha256_{digest}"
    record = json.loads((folder / "export.json").read_text())
    assert record["output"] == "logits" and record["probe_max_abs_difference"] <= 1e-4
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    second = CrossEncoderReranker(tiny, backend="onnx", onnx_dir=onnx_dir)
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp and second.cache_key() == first.cache_key()
    assert second.provenance["backend"].startswith("onnxruntime ") and record["sha256"][:16] in second.provenance[
        "backend"]


def test_the_backend_is_in_the_cache_key_and_torchs_key_is_unchanged(tiny: Path, onnx_dir: Path) -> None:
    torch_reranker = CrossEncoderReranker(tiny)
    onnx = CrossEncoderReranker(tiny, backend="onnx", onnx_dir=onnx_dir)
    assert "backend" not in torch_reranker.provenance and "backend" not in torch_reranker.cache_key()
    key = onnx.cache_key()
    assert key["backend"] == "onnx" and key["onnx_sha256"] and key["provider"] == "CPUExecutionProvider"
    assert key != torch_reranker.cache_key()


def test_onnx_scores_are_the_same_bits_on_one_thread_or_two_so_the_key_leaves_threads_out(
        tiny: Path, onnx_dir: Path) -> None:
    one = CrossEncoderReranker(tiny, backend="onnx", onnx_dir=onnx_dir, threads=1)
    two = CrossEncoderReranker(tiny, backend="onnx", onnx_dir=onnx_dir, threads=2)
    assert one._onnx is not None and one._onnx.settings["intra_op_threads"] == 1
    assert one.score(QUERY, PASSAGES) == two.score(QUERY, PASSAGES)
    assert one.provenance == two.provenance and "thread" not in one.provenance["backend"]  # results: the same bytes
    assert one.cache_key() == two.cache_key() and "intra_op_threads" not in one.cache_key()


def test_a_scorer_is_torch_or_onnx_and_onnx_runs_on_the_cpu_only(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert check_scorer("onnx", "cpu") == ("onnx", "cpu") and check_scorer("torch", "cuda:1") == ("torch", "cuda:1")
    with pytest.raises(UsageError, match="--rerank-backend 'tflite': expected torch or onnx"):
        check_scorer("tflite", "cpu")
    with pytest.raises(UsageError, match=r"--rerank-backend onnx runs on the CPU .* not --rerank-device cuda"):
        check_scorer("onnx", "cuda")
    arm = CATALOGUE.family("pool").arm("pool-12")
    with pytest.raises(UsageError, match="expected torch or onnx"):
        BenchConfig(arm=arm.arm_config, control_name=arm.name, reranker=tmp_path, rerank_backend="tvm")
    code = main(["bench", "--state", str(tmp_path), "--out", str(tmp_path / "out"), "--control-name", "c",
                 "--rerank-backend", "onnx", "--rerank-device", "cuda"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--rerank-backend onnx runs on the CPU" in err[0]
    assert not (tmp_path / "out").exists()


def test_what_scores_a_rerank_arm_is_in_its_measurement_identity(tiny: Path, tmp_path: Path) -> None:
    from harness.sweep.executor import measurement_identity

    state = claimed_state(tmp_path / "state")
    pool, fusion = CATALOGUE.family("pool").arm("pool-12"), CATALOGUE.family("fusion").arm("rrf-60")
    plain = measurement_identity(state, pool, tiny)
    assert plain.endswith(f"+reranker:{CrossEncoderReranker(tiny).provenance['weights_sha256']}")  # as before
    assert measurement_identity(state, pool, tiny, scorer=("onnx", "cpu")) == plain + "+scorer:onnx-cpu"
    assert measurement_identity(state, pool, tiny, scorer=("torch", "cuda:1")) == plain + "+scorer:torch-cuda"
    assert scorer_suffix("torch", "cuda") == scorer_suffix("torch", "cuda:0") == "+scorer:torch-cuda"
    assert len({config_hash(pool, measurement_identity(state, pool, tiny, scorer=s))
                for s in (("torch", "cpu"), ("onnx", "cpu"), ("torch", "cuda"))}) == 3
    # an arm that does not rerank is the same measurement whatever would score pairs
    onnx_fusion = measurement_identity(state, fusion, tiny, scorer=("onnx", "cpu"))
    assert onnx_fusion == measurement_identity(state, fusion, tiny)


def test_the_local_executor_hands_the_backend_to_every_rerank_process(tmp_path: Path) -> None:
    from harness.sweep.executor import LocalExecutor

    executor = LocalExecutor(state=tmp_path, store_spec=str(tmp_path), workers=1, reranker=tmp_path,
                             rerank_backend="onnx")
    assert executor._task("arm", [CATALOGUE.family("pool").arm("pool-12")], "s").rerank_backend == "onnx"
    # each of the workers' processes gets its share of the cores, for onnxruntime's threads or torch's
    for workers in (1, 2, 64):
        for backend in ("onnx", "torch"):
            task = LocalExecutor(state=tmp_path, store_spec=str(tmp_path), workers=workers, reranker=tmp_path,
                                 rerank_backend=backend)._task("arm", [CATALOGUE.family("pool").arm("pool-12")], "s")
            assert task.rerank_threads == max(1, (os.cpu_count() or 1) // workers)


def test_a_kubernetes_sweep_refuses_the_onnx_backend_in_one_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "run", "--executor", "k8s", "--state", str(tmp_path), "--arms", "pool",
                 "--rerank-backend", "onnx"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--rerank-backend onnx: on Kubernetes" in err[0]
