"""harness.devicecheck on this machine (no GPU): the CUDA build and its libraries are checked, the GPU
half says it did not run, and --require-gpu fails in one line."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")

from harness import devicecheck


def test_the_cuda_build_is_checked_and_the_gpu_half_says_why_it_did_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the check runs the GPU half (python -m harness.devicecheck --require-gpu)")
    assert devicecheck.main(["--repeat", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cuda"] == torch.version.cuda and report["cuda"]
    assert set(report["libraries"]) == {"libcudart", "libcublas", "libcudnn"}
    assert len(report["cpu_scores"]) == len(devicecheck.PAIRS)
    assert report["gpu"].startswith("not run: torch sees no GPU")


def test_require_gpu_fails_in_one_line_without_one(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert devicecheck.main(["--require-gpu", "--repeat", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("devicecheck: RuntimeError: torch sees no GPU (torch.cuda.is_available() is False): "
                       "no driver, or no device")
