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

``backend="onnx"`` (``--rerank-backend onnx``) runs the cross-encoder's forward pass in onnxruntime
on the CPU: the model exported locally by ``torch.onnx.export`` (harness.index.onnx_backend) into
``var/cache/onnx/cross-encoder_sha256_<weights>/``, each pair still scored alone. Its scores differ from
torch's in the last bits (measured in docs/sweeps.md), so the backend is in the provenance, the
score cache's key and the sweep's measurement identity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import InputDataError, RefusedError, UsageError
from harness.index.embed import _offline_env, refuse_remote_code, weights_digest
from harness.inputfiles import read_json_input

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
        info = read_json_input(provenance_file)  # a user's folder: bounded, and malformed JSON is exit 4
        if not isinstance(info, dict):
            raise InputDataError(f"{provenance_file}: expected a JSON object (what `ragsweep reranker train` writes)")
        return {"kind": "trained", "weights_sha256": digest, **info}
    config_path = path / "config.json"
    config = read_json_input(config_path) if config_path.is_file() else {}
    architectures = (config.get("architectures") if isinstance(config, dict) else None) or []
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
BACKENDS = ("torch", "onnx")


def check_device(device: str) -> str:
    """``cpu``, ``cuda`` or ``cuda:N`` (what --rerank-device and RAGSWEEP_RERANK_DEVICE take)."""
    if not _DEVICE.fullmatch(device):
        raise UsageError(f"--rerank-device {device!r}: expected cpu, cuda or cuda:N")
    return device


def check_scorer(backend: str, device: str) -> tuple[str, str]:
    """A cross-encoder backend (torch, onnx) and device that can run together (--rerank-backend and
    --rerank-device, RAGSWEEP_RERANK_BACKEND and RAGSWEEP_RERANK_DEVICE)."""
    check_device(device)
    if backend not in BACKENDS:
        raise UsageError(f"--rerank-backend {backend!r}: expected {' or '.join(BACKENDS)}")
    if backend == "onnx" and device != "cpu":
        raise UsageError(f"--rerank-backend onnx runs on the CPU (the onnxruntime package installed has no CUDA "
                         f"provider); not --rerank-device {device}")
    return backend, device


def scorer_suffix(backend: str, device: str) -> str:
    """How a run's cross-encoder scores besides its weights, for a sweep's measurement identity: empty
    for the default (torch on the CPU), so results made before the choice existed keep their identity."""
    if (backend, device) == ("torch", "cpu"):
        return ""
    return f"+scorer:{backend}-{device.partition(':')[0]}"


@dataclass
class CrossEncoderReranker:
    """A local cross-encoder, each pair scored in a forward pass of its own.

    In a padded batch a pair's score can move in the last bits with the pairs beside it (the padded
    length and the batch's shape pick the kernels); scored alone it depends only on the weights and
    the pair, so a score can be cached per (reranker, query, passage) and reused by every arm whose
    candidates include the pair, with the bytes of an arm run alone (harness.bench.context.ScoreCache).

    ``backend``: ``torch`` (the default) or ``onnx`` (the forward pass in onnxruntime, CPU only; its
    export kept under ``onnx_dir``).

    ``threads``: on the CPU, the threads that score: torch's intra-op threads, which are the process's
    (``torch.set_num_threads``: the query encoder in the same process uses them too), and onnxruntime's.
    Processes scoring at once should split the cores: two torch processes of 2 threads on 2 cores
    scored 5.1 pairs/s each, of 1 thread 41 (docs/sweeps.md). Torch keeps the count in its cache key.

    ``device``: ``cpu`` (the default) or a CUDA device. The same pair's score can differ in its last
    bits between devices (other kernels), so the device is in the provenance results record (with
    the GPU's name) and in the score cache's key; a CUDA device torch cannot see is refused.
    """

    path: Path
    allow_untrained: bool = False
    device: str = "cpu"
    backend: str = "torch"
    onnx_dir: Path | None = None  # where the onnx backend keeps its export (default var/cache/onnx)
    threads: int = 0  # the CPU threads that score (0: torch's thread count as the process has it)
    provenance: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        check_scorer(self.backend, self.device)
        self.provenance = {**reranker_provenance(self.path), "scoring": PAIR_SCORING}
        if self.provenance["kind"] == "untrained head" and not self.allow_untrained:
            refuse_untrained(self.provenance)
        self.provenance["device"] = _describe_device(self.device)
        if self.threads > 0 and self.device == "cpu":
            import torch

            torch.set_num_threads(self.threads)
        self._onnx: _OnnxPairs | None = None
        if self.backend == "onnx":
            from harness.index.onnx_backend import require_onnxruntime

            require_onnxruntime()  # before the model loads: a one-line error when it is missing
        _offline_env()
        from sentence_transformers import CrossEncoder

        self._model: Any = CrossEncoder(str(self.path), device=self.device, trust_remote_code=False, num_labels=1)
        if self.backend == "onnx":
            self._onnx = _OnnxPairs(self._model, self.provenance["weights_sha256"], self.onnx_dir, self.threads)
            self.provenance["backend"] = self._onnx.describe()

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
        if self._onnx is not None:  # torch still tokenises and squashes; onnxruntime runs the model
            return {**key, "cpu": torch.backends.cpu.get_cpu_capability(), **self._onnx.key()}
        if self.device == "cpu":
            return {**key, "cpu": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}
        # on a GPU the kernels are the card's and the CUDA libraries' (TF32 would change a float32 matmul's bits)
        return {**key, "device": self.provenance["device"], "cuda": torch.version.cuda,
                "cudnn": torch.backends.cudnn.version(), "tf32": torch.backends.cuda.matmul.allow_tf32}

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        if self._onnx is not None:
            return [self._onnx.score(query, p) for p in passages]
        return [float(self._model.predict([(query, p)], batch_size=1, show_progress_bar=False,
                                          convert_to_numpy=True)[0]) for p in passages]


class _OnnxPairs:
    """The cross-encoder's forward pass in onnxruntime, one pair at a time: the pair is tokenised by
    the model's own preprocess and the logit squashed by its own activation, in torch, as predict does."""

    def __init__(self, model: Any, weights_sha256: str, root: Path | None, threads: int = 0) -> None:
        import torch

        from harness.index.onnx_backend import DEFAULT_ONNX_DIR, export_graph, probe_inputs, session, wrap_transformer

        modules = list(model)
        if len(modules) != 1 or getattr(modules[0], "model", None) is None:
            raise UsageError(f"--rerank-backend onnx exports a cross-encoder that is one transformer module; this "
                             f"one has {len(modules)} modules: use --rerank-backend torch")
        self.model = model
        self.folder = Path(root or DEFAULT_ONNX_DIR) / f"cross-encoder_sha256_{weights_sha256}"
        probe = probe_inputs(model.preprocess(list(_PROBE_PAIRS)))
        self.export = export_graph(wrap_transformer(modules[0].model, "logits"), probe, self.folder, output="logits")
        self.threads = threads or torch.get_num_threads()
        self.session, self.settings = session(self.folder / "model.onnx", threads=self.threads)

    def score(self, query: str, passage: str) -> float:
        import torch

        from harness.index.onnx_backend import INPUTS

        features = self.model.preprocess([(query, passage)])
        logits = self.session.run(None, {n: features[n].numpy() for n in INPUTS})[0]
        with torch.inference_mode():
            return float(self.model.activation_fn(torch.from_numpy(logits)).reshape(-1)[0])

    def key(self) -> dict[str, Any]:
        # not the thread count: onnxruntime's CPU scores were the same bits on 1 and 2 threads (docs/sweeps.md),
        # so processes given different shares of the cores share one cache (each still checks a pair itself)
        settings = {k: v for k, v in self.settings.items() if k != "intra_op_threads"}
        return {"backend": "onnx", "onnx_sha256": self.export["sha256"], **settings}

    def describe(self) -> str:
        s, e = self.settings, self.export
        # not the thread count either: the scores do not depend on it, and results name what they do depend on
        return (f"onnxruntime {s['onnxruntime']} ({s['provider']}, "
                f"{s['execution_mode']}, graph optimization {s['graph_optimization']}, deterministic compute), "
                f"model.onnx sha256 {e['sha256'][:16]} ({e['exporter']}, opset {e['opset']}); tokenised and "
                "squashed in torch")


# a padded probe of pairs of different lengths, so the export is traced with a real attention mask
_PROBE_PAIRS = [("a short query", "a short passage"),
                ("a longer query with more words", "a longer passage, with punctuation and more words than the first")]


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
