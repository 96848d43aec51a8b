"""The embedded index from the per-file shards the ingest tasks wrote.

Shards are read in file_uuid order and handed to the embedded builder with the vectors
the tasks computed, so the index is the one the in-process builder would write.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import IntegrityError, RefusedError
from harness.index.documents import IndexDoc, embedding_text
from harness.index.embed import Embedder
from harness.index.embedded import build_index
from harness.index.ingest.sinks import ShardSink


class _ReplayEmbedder:
    """Hands build_index the vectors the tasks computed, in document order, checking each batch's texts."""

    def __init__(self, identity: str, texts: list[str], matrix: np.ndarray) -> None:
        self.identity = identity
        self.dimension = int(matrix.shape[1])
        self._texts = texts
        self._matrix = matrix
        self._cursor = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        lo, hi = self._cursor, self._cursor + len(texts)
        if list(texts) != self._texts[lo:hi]:
            raise IntegrityError(f"assembly asked for texts {lo}..{hi} out of document order")
        self._cursor = hi
        return self._matrix[lo:hi]


def assemble_embedded_index(shards: ShardSink, out_dir: Path, file_uuids: Sequence[str]) -> dict[str, Any]:
    """Build the embedded index from per-file shards, files in the given order, documents as written."""
    docs: list[IndexDoc] = []
    parts: dict[str, list[np.ndarray]] = {}
    identities: dict[str, set[str]] = {}
    for file_uuid in file_uuids:
        file_docs, vectors, meta = shards.read(file_uuid)
        docs.extend(file_docs)
        for mode, matrix in vectors.items():
            parts.setdefault(mode, []).append(matrix)
            identities.setdefault(mode, set()).add(meta["embedding"][mode])
    embedders: dict[str, Embedder] = {}
    for mode, blocks in sorted(parts.items()):
        if len(identities[mode]) != 1:
            raise RefusedError(f"shards of embedding_text {mode} come from {sorted(identities[mode])}; "
                               "a mixed vector space is refused")
        texts = [embedding_text(d, mode) for d in docs]  # type: ignore[arg-type]
        embedders[mode] = _ReplayEmbedder(identities[mode].pop(), texts, np.concatenate(blocks, axis=0))
    return build_index(out_dir, docs, embedders)  # type: ignore[arg-type]
