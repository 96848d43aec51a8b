"""The rerank stage's cross-encoder, and where its weights come from.

No PyPI package ships cross-encoder weights, so the reranker is always a local path:

* a directory written by ``ragsweep reranker train`` carries ``ragsweep-reranker.json``
  (base weights identity, training seed, training-data hash): provenance ``trained``;
* any other directory with a sequence-classification head (e.g. a user's copy of
  cross-encoder/ms-marco-MiniLM-L6-v2) is ``user supplied``, identified by the sha256
  of its weights;
* a directory without a classification head (a bi-encoder such as all-MiniLM-L6-v2)
  would get a randomly initialised head. That is allowed only with
  ``allow_untrained=True`` for plumbing tests, and results made with it are refused.

Missing weights raise; nothing silently no-ops. ``trust_remote_code`` is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import RefusedError, UsageError
from harness.index.embed import _offline_env, refuse_remote_code, weights_digest

PROVENANCE_FILE = "ragsweep-reranker.json"


def reranker_provenance(path: Path) -> dict[str, Any]:
    """What a reranker directory is, without loading it."""
    if not path.is_dir():
        raise UsageError(
            f"reranker weights not found at {path}: train some with `ragsweep reranker train --out DIR` "
            "or point --reranker at a local cross-encoder directory"
        )
    refuse_remote_code(path)
    digest = weights_digest(path)
    provenance_file = path / PROVENANCE_FILE
    if provenance_file.is_file():
        info = json.loads(provenance_file.read_text(encoding="utf-8"))
        return {"kind": "trained", "weights_sha256": digest, **info}
    config_path = path / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
    architectures = config.get("architectures") or []
    if any("ForSequenceClassification" in a for a in architectures):
        return {"kind": "user supplied", "weights_sha256": digest, "path_name": path.name}
    return {"kind": "untrained head", "weights_sha256": digest, "path_name": path.name,
            "warning": "classification head initialised at random: plumbing only, never a result"}


def refuse_untrained(provenance: dict[str, Any]) -> None:
    if provenance.get("kind") == "untrained head":
        raise RefusedError(
            "the reranker has an untrained classification head; its scores are noise, so no results are "
            "written — train one with `ragsweep reranker train` or supply cross-encoder weights"
        )


# How CrossEncoderReranker scores, recorded in its provenance: results made another way differ in last bits.
PAIR_SCORING = "one (query, passage) pair per forward pass: a pair's score depends on the model and the pair alone"
_DEVICE = re.compile(r"cpu|cuda(:[0-9]+)?")


def check_device(device: str) -> str:
    """``cpu``, ``cuda`` or ``cuda:N`` (what --rerank-device and RAGSWEEP_RERANK_DEVICE take)."""
    if not _DEVICE.fullmatch(device):
        raise UsageError(f"--rerank-device {device!r}: expected cpu, cuda or cuda:N")
    return device


@dataclass
class CrossEncoderReranker:
    """A local cross-encoder, each pair scored in a forward pass of its own.

    In a padded batch a pair's score can move in the last bits with the pairs beside it (the padded
    length and the batch's shape pick the kernels); scored alone it depends only on the weights and
    the pair, so a score can be cached per (reranker, query, passage) and reused by every arm whose
    candidates include the pair, with the bytes of an arm run alone (harness.bench.context.ScoreCache).

    ``device``: ``cpu`` (the default) or a CUDA device. The same pair's score can differ in its last
    bits between devices (other kernels), so the device is in the provenance results record (with
    the GPU's name) and in the score cache's key; a CUDA device torch cannot see is refused.
    """

    path: Path
    allow_untrained: bool = False
    device: str = "cpu"
    provenance: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        check_device(self.device)
        self.provenance = {**reranker_provenance(self.path), "scoring": PAIR_SCORING}
        if self.provenance["kind"] == "untrained head" and not self.allow_untrained:
            refuse_untrained(self.provenance)
        self.provenance["device"] = _describe_device(self.device)
        _offline_env()
        from sentence_transformers import CrossEncoder

        self._model: Any = CrossEncoder(str(self.path), device=self.device, trust_remote_code=False, num_labels=1)

    def cache_key(self) -> dict[str, Any]:
        """What decides a pair's score besides the pair: the weights, the scoring rule, how the pair is
        cut and squashed, the libraries and the CPU's kernels (harness.retrieval.scorecache)."""
        import sentence_transformers
        import torch
        import transformers

        key = {"weights_sha256": self.provenance["weights_sha256"], "scoring": PAIR_SCORING,
               "max_seq_length": self._model.max_seq_length, "activation": repr(self._model.activation_fn),
               "torch": torch.__version__, "transformers": transformers.__version__,
               "sentence_transformers": sentence_transformers.__version__}
        if self.device == "cpu":
            return {**key, "cpu": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}
        # on a GPU the kernels are the card's and the CUDA libraries' (TF32 would change a float32 matmul's bits)
        return {**key, "device": self.provenance["device"], "cuda": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version(), "tf32": torch.backends.cuda.matmul.allow_tf32}

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        return [float(self._model.predict([(query, p)], batch_size=1, show_progress_bar=False,
                                          convert_to_numpy=True)[0]) for p in passages]


def _describe_device(device: str) -> str:
    """``cpu``, or the CUDA device with the card's name; a CUDA device torch cannot see is refused."""
    if device == "cpu":
        return device
    import torch

    index = int(device.partition(":")[2] or 0)
    if not torch.cuda.is_available() or index >= torch.cuda.device_count():
        raise UsageError(f"--rerank-device {device}: torch {torch.__version__} (CUDA build {torch.version.cuda}) "
                         f"sees {torch.cuda.device_count() if torch.cuda.is_available() else 'no'} CUDA devices "
                         "here; use --rerank-device cpu (RAGSWEEP_RERANK_DEVICE)")
    return f"{device} ({torch.cuda.get_device_name(index)})"


def rerank_order(scores: list[float]) -> list[int]:
    """Positions sorted by cross-encoder score, descending; equal scores keep input order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))
