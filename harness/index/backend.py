"""The search-backend protocol both backends implement (embedded tantivy+numpy, OpenSearch).

A leg is the best-first list of one sub-query (BM25 or kNN) over one document plane
(``doc_type`` chunk or digest), optionally restricted to files and a speaker. Scores
are the engine's own: Lucene BM25, and ``(1 + cos) / 2`` for cosine kNN (OpenSearch's
Lucene-engine ``cosinesimil``). Equal scores inside a leg are ordered by
``(file_uuid, chunk_index)`` so both backends hand fusion the same list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from harness.index.documents import EmbeddingTextMode
from harness.model import DocType


@dataclass(frozen=True)
class LegHit:
    doc_id: str
    score: float


@dataclass(frozen=True)
class DocRecord:
    id: str
    file_uuid: str
    chunk_index: int
    doc_type: DocType
    speaker: str | None
    content: str


class SearchBackend(Protocol):
    name: str

    def bm25(self, text: str, k: int, *, doc_type: str = "chunk", file_uuids: Sequence[str] | None = None,
             speaker: str | None = None) -> list[LegHit]: ...

    def knn(self, query_vector: np.ndarray, k: int, *, mode: EmbeddingTextMode, doc_type: str = "chunk",
            file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> list[LegHit]: ...

    def record(self, doc_id: str) -> DocRecord: ...

    def phrase_file_buckets(self, phrase: str, *, size: int = 10_000) -> dict[str, int]: ...

    def embedding_models(self, mode: EmbeddingTextMode) -> list[str | None]:
        """The model each document of the index reports for this embedding text (survey input)."""
        ...

    def describe(self) -> dict[str, Any]: ...
