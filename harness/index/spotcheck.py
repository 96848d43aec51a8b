"""The stored vectors are the ones the model gives: a few documents encoded again where the model is loaded.

A state's digests prove its vector file is the one recorded, and the finite, unit-norm check
(harness.state.contents) that each row could be an embedding; neither sees vectors that were shuffled,
negated or made by another model, with the digests re-recorded (on e2cb9a0 such states benched 0.3098 and
0.3024 with exit 0). So wherever the model is loaded anyway, to encode an arm's queries (``bench``, every
arm and its group), :func:`check_encodes_back` encodes ``SPOT_DOCUMENTS`` evenly spaced documents' texts and
compares them with their stored rows: each must have cosine >= ``MIN_COSINE`` (the same model on another
CPU or batch differs by about 1e-6), else IntegrityError (exit 5) naming the file, row and document.
Eight encodes: milliseconds beside the queries'.
"""

from __future__ import annotations

import numpy as np

from harness.errors import IntegrityError
from harness.index.documents import EmbeddingTextMode, doc_from_record, embedding_text
from harness.index.embed import Embedder
from harness.index.embedded import EmbeddedIndex

SPOT_DOCUMENTS = 8
MIN_COSINE = 0.999


def spot_rows(documents: int, count: int = SPOT_DOCUMENTS) -> list[int]:
    """``count`` evenly spaced rows of ``documents``, the first and the last among them."""
    if documents < 1:
        return []
    return sorted({int(r) for r in np.rint(np.linspace(0, documents - 1, min(count, documents)))})


def check_encodes_back(index: EmbeddedIndex, mode: EmbeddingTextMode, embedder: Embedder) -> None:
    """Raise IntegrityError unless the ``mode`` vectors of ``index`` at :func:`spot_rows`
    are, within ``MIN_COSINE``, what ``embedder`` gives their documents' texts now."""
    rows = spot_rows(len(index.docs))
    if not rows:
        return
    stored = np.asarray(index.vectors(mode)[rows], dtype=np.float64)
    texts = [embedding_text(doc_from_record(index.docs[row]), mode) for row in rows]
    fresh = np.asarray(embedder.encode(texts), dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = (stored * fresh).sum(axis=1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(fresh, axis=1))
    for row, value in zip(rows, cosine, strict=True):
        if not value >= MIN_COSINE:  # NaN too
            path = index.path / index.meta["embedding"][mode]["file"]
            raise IntegrityError(
                f"{path}: row {row} (document {index.docs[row]['id']}) has cosine {value:.4f} with the vector "
                f"{embedder.identity} gives its text now (at least {MIN_COSINE} expected); the file does not hold "
                "this model's vectors of its documents (shuffled, negated or another model's, its digests "
                "re-recorded). Rebuild the state: `ragsweep state build --force --embedding-cache none` (a cache "
                "that holds the same vectors would give them back)")
