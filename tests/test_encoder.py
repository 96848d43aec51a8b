"""harness.index.encoder: a text's vector depends only on (model, text), never on its batch-mates.

A fake model whose vectors move with the shape of the forward pass shows the batching rule
(every pass: exactly ``rows_for(length)`` texts of one token length, no padding); the real model
(all-MiniLM-L6-v2) shows bit-identity for a subset, the reversed order, duplicates and a
single text, and that a full one-length batch gives sentence-transformers' own encode() bytes.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import numpy as np
import pytest

from harness.errors import UsageError
from harness.index.encoder import Batching, encode_batch_independent, encoder_identity, pieces_batch_independent

torch = pytest.importorskip("torch")


class ShapeModel:
    """A SentenceTransformer look-alike: whitespace tokens, right padding like the real tokenizer, and
    vectors nudged by the forward pass's shape and by padding (as real kernels can, in the last bits)."""

    device = "cpu"

    def __init__(self) -> None:
        self.passes: list[tuple[tuple[int, ...], bool]] = []

    def get_embedding_dimension(self) -> int:
        return 4

    def eval(self) -> None:
        pass

    def preprocess(self, texts: list[str]) -> dict[str, Any]:
        words = [[1000 + int(hashlib.sha256(w.encode()).hexdigest()[:4], 16) for w in t.split()][:10] for t in texts]
        ids = [[101, *row, 102] for row in words]
        width = max(len(row) for row in ids)
        input_ids = torch.tensor([row + [0] * (width - len(row)) for row in ids])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in ids])
        return {"input_ids": input_ids, "token_type_ids": torch.zeros_like(input_ids), "attention_mask": mask,
                "modality": "text"}

    def __call__(self, features: dict[str, Any]) -> dict[str, Any]:
        ids, mask = features["input_ids"], features["attention_mask"]
        assert features["modality"] == "text"
        self.passes.append((tuple(ids.shape), bool(mask.all())))
        real = (ids * mask).to(torch.float64)
        rows = torch.stack([real.sum(dim=1), mask.sum(dim=1).to(torch.float64), real[:, 1],
                            torch.full((ids.shape[0],), 1.0)], dim=1)
        nudge = 1e-3 * ids.shape[0] + 1e-4 * int((mask == 0).sum())
        return {"sentence_embedding": (rows + nudge).to(torch.float32)}


def rows(n: int) -> Batching:
    """Exactly ``n`` rows per pass at every length (the token budget never binds)."""
    return Batching(tokens=10**9, max_rows=n)


# 2 to 10 words: token lengths 4..12, several texts per length and more than `rows` of some
TEXTS = [" ".join(f"w{(i * 7 + j) % 13}" for j in range(1 + i % 9)) + f" t{i}" for i in range(60)]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def test_every_forward_pass_holds_rows_texts_of_one_length_without_padding() -> None:
    model = ShapeModel()
    encode_batch_independent(model, TEXTS, batching=rows(4))
    assert model.passes and all(shape[0] == 4 and full for shape, full in model.passes)
    lengths = {len(t.split()) + 2 for t in TEXTS}
    assert {shape[1] for shape, _ in model.passes} == lengths
    per_length = {n: sum(1 for t in TEXTS if len(t.split()) + 2 == n) for n in lengths}
    assert len(model.passes) == sum(-(-count // 4) for count in per_length.values())  # ceil: the last one filled


@pytest.mark.parametrize("n", [1, 4, 7])
def test_with_the_shape_sensitive_fake_a_vector_depends_on_its_text_only(n: int) -> None:
    model = ShapeModel()
    whole = encode_batch_independent(model, TEXTS, batching=rows(n))
    subset = sorted(random.Random(n).sample(range(len(TEXTS)), 17))
    assert _same(encode_batch_independent(model, [TEXTS[i] for i in subset], batching=rows(n)), whole[subset])
    assert _same(encode_batch_independent(model, TEXTS[::-1], batching=rows(n)), whole[::-1])
    assert _same(encode_batch_independent(model, [TEXTS[5]], batching=rows(n))[0], whole[5])
    # and the fake does tell shapes apart: another row count gives other bytes
    assert not _same(encode_batch_independent(model, TEXTS, batching=rows(n + 1)), whole)


@pytest.mark.parametrize(("tokens", "max_rows", "length", "expected"), [
    (4096, 64, 32, 64), (4096, 64, 64, 64), (4096, 64, 65, 64), (4096, 64, 100, 41), (4096, 64, 256, 16),
    (4096, 64, 4097, 1), (4096, 128, 20, 128), (4096, 128, 33, 125), (10, 64, 3, 4), (10**9, 5, 1, 5)])
def test_the_rows_of_a_pass_follow_from_its_length_alone(tokens: int, max_rows: int, length: int,
                                                         expected: int) -> None:
    assert Batching(tokens, max_rows).rows_for(length) == expected  # min(max_rows, ceil(tokens / length))


def test_the_token_budget_sets_each_lengths_rows() -> None:
    model = ShapeModel()
    encode_batch_independent(model, TEXTS, batching=Batching(tokens=20, max_rows=5))
    lengths = {len(t.split()) + 2 for t in TEXTS}  # [CLS] words [SEP]
    assert {shape for shape, _ in model.passes} == {(min(5, -(-20 // n)), n) for n in lengths}
    with pytest.raises(UsageError):
        Batching(tokens=0)


def test_duplicates_are_encoded_once_and_answered_in_order() -> None:
    model = ShapeModel()
    twice = encode_batch_independent(model, TEXTS[:3] + TEXTS[:3][::-1], batching=rows(2))
    assert _same(twice[3:], twice[:3][::-1])
    assert sum(shape[0] for shape, _ in model.passes) <= 2 * 3  # three distinct texts, at most one fill each


def test_pieces_cover_every_text_once_and_refuse_duplicates() -> None:
    pieces = list(pieces_batch_independent(ShapeModel(), TEXTS, batching=rows(4), piece=8))
    positions = [p for part, _ in pieces for p in part]
    assert sorted(positions) == list(range(len(TEXTS)))
    assert len(pieces) > 1 and all(len(part) >= 8 for part, _ in pieces[:-1])
    with pytest.raises(UsageError, match="distinct"):
        list(pieces_batch_independent(ShapeModel(), ["a", "a"]))
    assert encode_batch_independent(ShapeModel(), []).shape == (0, 4)


# -- the real model -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm() -> Any:
    pytest.importorskip("sentence_transformers")
    from harness.index.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


REAL = [f"Budget review {i} | 2026-0{1 + i % 9}-1{i % 10} | participants: Ana, Bo\n"
        f"{'We should move the launch to next quarter. ' * (1 + i % 4)}item {i}" for i in range(40)]


def test_the_embedder_encodes_batch_independently_by_default(minilm: Any) -> None:
    assert minilm.batching == Batching()
    assert minilm.describe()["encoder"] == encoder_identity(Batching())
    whole = minilm.encode(REAL)
    assert whole.dtype == np.float32 and whole.shape == (len(REAL), minilm.dimension)
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-6)
    # without the longest texts a padding encoder pads less: the subset and the duplicates would move
    lengths = minilm._model.preprocess(REAL)["attention_mask"].sum(dim=1).tolist()
    shorter = [i for i, n in enumerate(lengths) if n < max(lengths)]
    subset = random.Random(1).sample(shorter, 13)
    assert _same(minilm.encode([REAL[i] for i in subset]), whole[subset])
    assert _same(minilm.encode(REAL[::-1]), whole[::-1])
    assert _same(minilm.encode([REAL[i] for i in shorter[:5] * 2]), whole[shorter[:5] * 2])
    for i in (0, 21, 39):
        assert _same(minilm.encode([REAL[i]])[0], whole[i])


def test_small_batches_are_batch_independent_and_a_full_one_length_batch_is_encodes_bytes(minilm: Any) -> None:
    model = minilm._model
    whole = encode_batch_independent(model, REAL, batching=rows(3))
    assert _same(encode_batch_independent(model, REAL[1::2], batching=rows(3)), whole[1::2])
    assert _same(encode_batch_independent(model, REAL[::-1], batching=rows(3)), whole[::-1])
    lengths = model.preprocess(REAL)["attention_mask"].sum(dim=1).tolist()
    group = [t for t, n in zip(REAL, lengths, strict=True) if n == lengths[0]][:3]
    assert len(group) == 3
    plain = model.encode(group, batch_size=3, normalize_embeddings=True, convert_to_numpy=True)
    assert _same(encode_batch_independent(model, group, batching=rows(3)), np.asarray(plain, dtype=np.float32))


def test_without_batching_the_embedder_is_sentence_transformers_encode(minilm: Any) -> None:
    """The ingest tasks' embedder (one file per call): encode()'s own padded batches, named in the key."""
    from harness.index.embed import SentenceTransformerEmbedder

    plain = SentenceTransformerEmbedder.__new__(SentenceTransformerEmbedder)
    plain.__dict__.update({**minilm.__dict__, "batching": None})
    expected = minilm._model.encode(REAL, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    assert _same(plain.encode(REAL), np.asarray(expected, dtype=np.float32))
    assert plain.describe()["encoder"] != minilm.describe()["encoder"]
