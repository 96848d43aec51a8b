"""retrieve_chunks: the hybrid retrieval the chat path performs, over the embedded backend.

Both legs (BM25 and vector) are fetched over the fusion window
``max(100, min(size*4, 500))`` and fused client-side with OpenSearch's semantics
(harness.retrieval.fusion); the fused list is cut at ``size``. So ``size`` sets the
depth the legs are fused over — two sizes are two rankings, not one truncated. Arms that
make the same leg requests can share one ``LegCache`` (harness.retrieval.legs): the legs
are fetched once and each retriever fuses them with its own configuration.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.index.backend import LegHit, SearchBackend
from harness.index.documents import EmbeddingTextMode
from harness.model import DocType, RankedDoc
from harness.retrieval.fusion import FusionConfig
from harness.retrieval.fusion.base import ScoredLeg, check_leg
from harness.retrieval.fusion.fuse import fuse_checked
from harness.retrieval.legs import LegCache, Legs, leg_request
from harness.retrieval.window import fusion_window

# index -> {doc id: fusion id}, shared by the retrievers over that index (HybridRetriever._fusion_ids)
_FUSION_IDS: weakref.WeakKeyDictionary[SearchBackend, dict[str, str]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Hit:
    doc_id: str
    file_uuid: str
    chunk_index: int
    doc_type: DocType
    score: float

    def ranked(self) -> RankedDoc:
        return RankedDoc(doc_id=self.doc_id, score=self.score, doc_type=self.doc_type, file_uuid=self.file_uuid,
                         chunk_index=self.chunk_index)


@dataclass
class HybridRetriever:
    index: SearchBackend
    embedding_text: EmbeddingTextMode
    fusion: FusionConfig
    cache: LegCache | None = field(default=None, compare=False)
    # doc id -> fusion id, filled as documents are met: a warm prescore spent over half its time
    # building records for these (py-spy, docs/growth.md); a document's file and chunk never change,
    # so every retriever over the same index shares one map (a group's arms: one process, one map)
    _fusion_ids: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            self._fusion_ids = _FUSION_IDS.setdefault(self.index, {})
        except TypeError:  # an index that cannot be weakly referenced keeps a map of its own
            self._fusion_ids = {}

    def _hit(self, doc_id: str, score: float) -> Hit:
        d = self.index.record(doc_id)
        return Hit(doc_id=d.id, file_uuid=d.file_uuid, chunk_index=d.chunk_index, doc_type=d.doc_type, score=score)

    def _fusion_id(self, doc_id: str) -> str:
        known = self._fusion_ids.get(doc_id)
        if known is None:
            d = self.index.record(doc_id)
            known = self._fusion_ids[doc_id] = f"{d.file_uuid}\t{d.chunk_index:09d}"
        return known

    def legs(self, text: str, vector: np.ndarray, depth: int, *, doc_type: str = "chunk",
             file_uuids: Sequence[str] | None = None, speaker: str | None = None
             ) -> tuple[Sequence[LegHit], Sequence[LegHit]]:
        def fetch() -> Legs:
            bm25 = self.index.bm25(text, depth, doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
            knn = self.index.knn(vector, depth, mode=self.embedding_text, doc_type=doc_type, file_uuids=file_uuids,
                                 speaker=speaker)
            return tuple(bm25), tuple(knn)

        if self.cache is None:
            return fetch()
        return self.cache.legs(leg_request(text, depth, self.embedding_text, doc_type=doc_type,
                                           file_uuids=file_uuids, speaker=speaker), fetch)

    def retrieve(self, text: str, vector: np.ndarray, size: int, *, doc_type: str = "chunk",
                 file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> list[Hit]:
        depth = fusion_window(size)
        bm25, knn = self.legs(text, vector, depth, doc_type=doc_type, file_uuids=file_uuids, speaker=speaker)
        if self.cache is None:
            legs, ids = self._fusion_legs(bm25, knn)
        else:  # the same legs for every arm of the group: checked and keyed once, kept beside them
            request = leg_request(text, depth, self.embedding_text, doc_type=doc_type, file_uuids=file_uuids,
                                  speaker=speaker)
            known = self.cache.derived.get(request)
            if known is None:
                known = self.cache.derived.setdefault(request, self._fusion_legs(bm25, knn))
            legs, ids = known
        fused = fuse_checked(self.fusion, legs)
        return [self._hit(ids[key], float(score)) for key, score in fused[:size]]

    def _fusion_legs(self, bm25: Sequence[LegHit], knn: Sequence[LegHit]
                     ) -> tuple[tuple[ScoredLeg, ScoredLeg], dict[str, str]]:
        """The two legs as fusion takes them, checked (float32 scores), and each fusion id's doc id."""
        # fusion breaks equal fused scores by id: ids of the form "file_uuid<TAB>chunk_index" make
        # that the measurement's own tie order, so the cut at `size` agrees with how ties are scored
        fusion_id = self._fusion_id
        bm25_leg = [(fusion_id(h.doc_id), h.score) for h in bm25]
        knn_leg = [(fusion_id(h.doc_id), h.score) for h in knn]
        ids = {key: h.doc_id for (key, _), h in zip([*bm25_leg, *knn_leg], [*bm25, *knn], strict=True)}
        return (check_leg(bm25_leg, "bm25"), check_leg(knn_leg, "vector")), ids
