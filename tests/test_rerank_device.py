"""What runs the cross-encoder (--rerank-device, RAGSWEEP_RERANK_DEVICE): cpu by default, a CUDA
device when asked; the device is in the results' reranker provenance and in the score cache's key,
and a CUDA device torch cannot see is refused in one line. The GPU half runs where torch sees a
CUDA device and skips elsewhere, saying why (benchmarks/bench_rerank_device.py measured it on an
H200: docs/sweeps.md). The model is a tiny BERT cross-encoder with seeded random weights, made here:
the plumbing is the test, not the scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.bench.config import BenchConfig
from harness.cli import main
from harness.errors import UsageError
from harness.retrieval.rerank import CrossEncoderReranker, check_device
from harness.sweep.catalogue import CATALOGUE
from tests.tiny_models import tiny_cross_encoder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def test_a_device_is_cpu_cuda_or_cuda_n_and_anything_else_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert [check_device(d) for d in ("cpu", "cuda", "cuda:1")] == ["cpu", "cuda", "cuda:1"]
    for bad in ("gpu", "cuda:", "CPU", "cuda:x"):
        with pytest.raises(UsageError, match=f"--rerank-device '{bad}': expected cpu, cuda or cuda:N"):
            check_device(bad)
    arm = CATALOGUE.family("pool").arm("pool-12")
    with pytest.raises(UsageError, match="expected cpu, cuda or cuda:N"):
        BenchConfig(arm=arm.arm_config, control_name=arm.name, reranker=tmp_path, rerank_device="gpu")
    code = main(["bench", "--state", str(tmp_path), "--out", str(tmp_path / "out"), "--control-name", "c",
                 "--rerank-device", "tpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--rerank-device 'tpu'" in err[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(_cuda(), reason="torch sees a CUDA device here: the refusal is for machines without one")
def test_a_cuda_device_torch_cannot_see_is_refused_before_the_model_loads(tiny: Path) -> None:
    with pytest.raises(UsageError, match=r"--rerank-device cuda: torch .* sees no CUDA devices here; "
                                         r"use --rerank-device cpu"):
        CrossEncoderReranker(tiny, device="cuda")


def test_the_cpu_reranker_names_its_device_and_keeps_the_cpu_cache_key(tiny: Path) -> None:
    """The CPU key is the one scores were cached under before the device setting: they stay valid."""
    reranker = CrossEncoderReranker(tiny)
    assert reranker.provenance["device"] == "cpu"
    assert set(reranker.cache_key()) == {"weights_sha256", "scoring", "max_seq_length", "activation", "torch",
                                         "transformers", "sentence_transformers", "cpu", "threads"}


def test_the_threads_a_cpu_reranker_is_given_are_torchs_and_in_its_cache_key(tiny: Path) -> None:
    """--rerank-threads on the CPU sets torch's threads (the process's: one pool); a cache filled on
    one count is not read on another (on the trained reranker 1 of 2,304 pairs moved: docs/sweeps.md)."""
    import torch

    before = torch.get_num_threads()
    try:
        one = CrossEncoderReranker(tiny, threads=1)
        key = one.cache_key()
        assert torch.get_num_threads() == 1 and key["threads"] == 1
        two = CrossEncoderReranker(tiny, threads=2)
        assert torch.get_num_threads() == 2 and two.cache_key()["threads"] == 2
        assert key != two.cache_key() and one.provenance == two.provenance
        torch.set_num_threads(1)
        assert CrossEncoderReranker(tiny).cache_key()["threads"] == 1  # 0: the count the process has
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not _cuda(), reason="torch sees no CUDA device here; benchmarks/bench_rerank_device.py is "
                                        "the device check (docs/sweeps.md, 'The cross-encoder on a GPU')")
def test_on_a_cuda_device_scores_agree_with_the_cpu_and_the_cache_key_names_the_card(tiny: Path) -> None:
    import torch

    pairs = [("what did the group decide about the budget", p) for p in (
        "we agreed to cut the marketing budget by ten percent", "the remote control needs a bigger button",
        "lunch is at noon")]
    cpu = CrossEncoderReranker(tiny)
    gpu = CrossEncoderReranker(tiny, device="cuda")
    on_cpu = cpu.score(pairs[0][0], [p for _, p in pairs])
    on_gpu = gpu.score(pairs[0][0], [p for _, p in pairs])
    assert max(abs(a - b) for a, b in zip(on_cpu, on_gpu, strict=True)) < 1e-5
    assert gpu.score(pairs[0][0], [p for _, p in reversed(pairs)]) == list(reversed(on_gpu))
    assert gpu.provenance["device"] == f"cuda ({torch.cuda.get_device_name(0)})"
    key = gpu.cache_key()
    assert key["device"] == gpu.provenance["device"] and "threads" not in key and key != cpu.cache_key()


def test_the_local_executor_hands_the_device_to_every_rerank_process(tmp_path: Path) -> None:
    from harness.sweep.executor import LocalExecutor

    pool = CATALOGUE.family("pool")
    executor = LocalExecutor(state=tmp_path, store_spec=str(tmp_path), workers=1, reranker=tmp_path,
                             rerank_device="cuda:0")
    task = executor._task("arm", [pool.arm("pool-12")], "s")
    assert task.rerank_device == "cuda:0" and task.reranker == tmp_path
    assert task.rerank_threads == 0  # the CPU's threads are shared out among CPU scorers only
