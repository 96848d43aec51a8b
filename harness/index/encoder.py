"""Batch-independent encoding: a text's vector depends only on (model, text), never on its batch-mates.

sentence-transformers' ``encode()`` sorts a call's texts by length and pads each batch to its
longest text; the padded length and the batch's shape select different kernels and reduction
lengths, so one text gets vectors that differ in the last bits (about 1e-7 for all-MiniLM-L6-v2
on CPU) with the other texts of its call. Here every forward pass holds texts of one token
length only, so there is no padding, and exactly ``rows_for(length)`` of them, so a text always
meets the same shapes; a short last batch of a length is filled with copies of its first text.
``rows_for(length) = min(max_rows, ceil(tokens / length))``: about ``tokens`` tokens per pass
(CPU matrix products slow down when a pass is much smaller) and fewer copies for long texts,
whose length groups are small. The texts are tokenized by the model's own ``preprocess``
(truncated at its max_seq_length, as encode() does) and run through its modules as encode()
runs them (transformer -> pooling -> normalize, under torch.inference_mode), then normalised
as ``encode(normalize_embeddings=True)`` does: a full one-length batch gives encode()'s bytes.
Identical texts are encoded once.

All texts of a call are grouped by length before any is encoded, so the copies that fill short
batches cost at most ``rows_for(length) - 1`` per distinct length per call: callers hand over
everything they have and take the vectors back in pieces (:func:`pieces_batch_independent`).
Many small calls pay that many times over.

The vectors still depend on the kernels: torch's version and the CPU's instruction set are part
of :func:`encoder_identity`, which the embedding cache keys on (harness.index.embedcache).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import UsageError

# tokens and rows per forward pass, chosen by measurement (docs/embedding-cache.md, Throughput)
ENCODE_TOKENS = 4096
ENCODE_MAX_ROWS = 128
PIECE = 4096
_TOKENIZE_CHUNK = 1024


@dataclass(frozen=True)
class Batching:
    """How many texts of one token length share a forward pass: a function of the length alone."""

    tokens: int = ENCODE_TOKENS
    max_rows: int = ENCODE_MAX_ROWS

    def __post_init__(self) -> None:
        if self.tokens < 1 or self.max_rows < 1:
            raise UsageError(f"batching {self.tokens} tokens, {self.max_rows} rows: expected at least 1 each")

    def rows_for(self, length: int) -> int:
        return max(1, min(self.max_rows, -(-self.tokens // max(length, 1))))


DEFAULT_BATCHING = Batching()

# one forward pass: the features of a one-length batch in, its sentence embeddings out (a torch tensor).
# None is the model itself (transformer -> pooling -> normalize in torch); the ONNX backend runs the
# transformer in onnxruntime and the rest in torch (harness.index.onnx_backend.OnnxForward)
Forward = Callable[[dict[str, Any]], Any]


def encoder_identity(batching: Batching) -> str:
    """What besides the weights decides the vectors' bits: the batching rule, torch, the CPU's kernels."""
    import torch

    return (f"one token length per forward pass, min({batching.max_rows}, ceil({batching.tokens} / length)) rows; "
            f"torch {torch.__version__}, cpu {torch.backends.cpu.get_cpu_capability()}")


_NUMERICAL_PATH = re.compile(r"; torch [^;,]+, cpu [^;,]+")


def without_numerical_path(encoder: str) -> str:
    """:func:`encoder_identity` less torch's version and the CPU's kernels: the encoding contract that two
    machines share when they share vectors (harness.index.teamcache)."""
    return _NUMERICAL_PATH.sub("", encoder)


def numerical_path() -> dict[str, Any] | None:
    """What decided the vectors' last bits in this process, when torch is loaded: torch's version, the CPU
    code path it chose (ATEN_CPU_CAPABILITY can lower it), its threads, the BLAS and oneDNN it was built
    with, and the CPU's model (the BLAS picks its kernels by vendor and model inside one capability: two
    AVX-512 machines of two vendors give other bits). Provenance (build.json, a team cache entry), never part
    of an identity; ``unknown`` says what it cannot see."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    config = torch.__config__.show().splitlines()

    def line(*marks: str) -> str | None:
        return next((text.strip(" -") for text in config if any(m in text for m in marks)), None)

    return {"torch": str(torch.__version__), "cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
            "threads": int(torch.get_num_threads()), "blas": line("Math Kernel Library", "OpenBLAS"),
            "onednn": line("MKL-DNN", "oneDNN"), "cpu_model": _cpu_model(),
            "unknown": "the kernel the BLAS dispatches to inside one capability (by CPU vendor and model)"}


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return next((text.split(":", 1)[1].strip() for text in fh if text.startswith("model name")), None)
    except OSError:
        return None


def _tokens(model: Any, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, Any]]:
    """Every text's tokens without padding: per feature one flat array of all texts' tokens, each text's
    length (its attention mask's ones), and the features that are not per token (``modality``)."""
    import torch

    flat: dict[str, list[np.ndarray]] = {}
    lengths: list[np.ndarray] = []
    extras: dict[str, Any] = {}
    for lo in range(0, len(texts), _TOKENIZE_CHUNK):
        features = model.preprocess(list(texts[lo:lo + _TOKENIZE_CHUNK]))
        mask = features.pop("attention_mask").bool()
        lengths.append(mask.sum(dim=1).numpy())
        for name, value in features.items():
            if not isinstance(value, torch.Tensor):
                extras[name] = value
            elif value.shape == mask.shape:
                # row-major: each text's tokens in order, whichever side the tokenizer pads
                flat.setdefault(name, []).append(value[mask].numpy().astype(np.int32))
            else:
                raise UsageError(f"the model's preprocess returned feature {name!r} of shape {tuple(value.shape)}, "
                                 f"not one value per token {tuple(mask.shape)}; it cannot be batched by length")
    return ({name: np.concatenate(parts) for name, parts in flat.items()},
            np.concatenate(lengths).astype(np.int64), extras)


def pieces_batch_independent(model: Any, texts: Sequence[str], *, batching: Batching = DEFAULT_BATCHING,
                             piece: int = PIECE, normalise: bool = True,
                             forward: Forward | None = None) -> Iterator[tuple[list[int], np.ndarray]]:
    """The vectors of distinct ``texts`` from a SentenceTransformer ``model``, as (positions in ``texts``,
    float32 vectors) pieces of about ``piece`` texts, shortest token length first. ``forward`` replaces
    the model's own forward pass (the same batches, the same normalisation)."""
    import torch

    run = forward if forward is not None else (lambda features: model(features)["sentence_embedding"])

    if piece < 1:
        raise UsageError(f"piece {piece}: expected at least 1")
    if len(set(texts)) != len(texts):
        raise UsageError("pieces_batch_independent takes distinct texts; encode_batch_independent any")
    if not texts:
        return
    flat, lengths, extras = _tokens(model, texts)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths.tolist()):
        by_length.setdefault(n, []).append(i)
    model.eval()
    positions: list[int] = []
    vectors: list[np.ndarray] = []
    with torch.inference_mode():
        for n, members in sorted(by_length.items()):
            rows = batching.rows_for(n)
            for lo in range(0, len(members), rows):
                part = members[lo:lo + rows]
                filled = part + [part[0]] * (rows - len(part))
                features: dict[str, Any] = {
                    name: torch.from_numpy(np.stack([tokens[starts[i]:starts[i] + n] for i in filled])
                                           .astype(np.int64)).to(model.device)
                    for name, tokens in flat.items()}
                features["attention_mask"] = torch.ones((rows, n), dtype=torch.int64, device=model.device)
                out = run({**extras, **features})
                if normalise:
                    out = torch.nn.functional.normalize(out, p=2, dim=1)
                positions += part
                vectors.append(out[:len(part)].float().cpu().numpy())
                if len(positions) >= piece:
                    yield positions, np.concatenate(vectors)
                    positions, vectors = [], []
    if positions:
        yield positions, np.concatenate(vectors)


def encode_batch_independent(model: Any, texts: Sequence[str], *, batching: Batching = DEFAULT_BATCHING,
                             normalise: bool = True, forward: Forward | None = None) -> np.ndarray:
    """float32 vectors of ``texts`` (rows x dimension, in order; duplicates allowed)."""
    unique = list(dict.fromkeys(texts))
    out = np.empty((len(unique), int(model.get_embedding_dimension())), dtype=np.float32)
    for positions, vectors in pieces_batch_independent(model, unique, batching=batching, piece=len(unique) or 1,
                                                       normalise=normalise, forward=forward):
        out[positions] = vectors
    if len(unique) == len(texts):
        return out
    where = {text: i for i, text in enumerate(unique)}
    return out[[where[t] for t in texts]]
