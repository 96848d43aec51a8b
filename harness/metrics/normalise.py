"""Run normalisation: make trec_eval's docid tie-break unable to decide anything.

trec_eval sorts a run by score descending and breaks ties by document id descending,
so at equal scores a document's *name* decides its rank (``{uuid}_digest`` beats
``{uuid}_0`` because ``d`` > digits). Before scoring, the harness fixes the order
itself and replaces scores with strictly decreasing position-derived values:

* ``retrieve`` stage: sort by ``(-score, doc_type, file_uuid, chunk_index)``; the
  retriever's scores are comparable, only their ties need a rule that ignores names.
* ``rerank``/``route`` stages (and anything after ``diversity_sample``): keep the given
  order. That order is what the prompt receives; re-sorting by score would undo the
  diversity interleaving and compare cross-encoder scores with RRF scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from harness.model import RankedDoc, Run

Stage = Literal["retrieve", "rerank", "route"]
ORDER_PRESERVING: frozenset[str] = frozenset({"rerank", "route"})


class Ranked(Protocol):
    """What the tie rule and the positions read: a RankedDoc, or a retriever's Hit."""

    @property
    def doc_id(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def doc_type(self) -> str: ...
    @property
    def file_uuid(self) -> str: ...
    @property
    def chunk_index(self) -> int: ...


def tie_key(doc: Ranked) -> tuple[float, str, str, int]:
    return (-doc.score, doc.doc_type, doc.file_uuid, doc.chunk_index)


def positional(docs: Sequence[Ranked]) -> tuple[RankedDoc, ...]:
    n = len(docs)
    # a new RankedDoc rather than model_copy(update=...): pydantic-core builds it faster than it copies one
    return tuple(RankedDoc(doc_id=d.doc_id, score=float(n - i), doc_type=d.doc_type, file_uuid=d.file_uuid,
                           chunk_index=d.chunk_index)
                 for i, d in enumerate(docs))


def normalise_run(run: Run, stage: Stage = "retrieve") -> Run:
    """A new run whose scores are positions (n, n-1, ..., 1), one rule per stage."""
    return normalise_ranked(run.ranked, stage)


def normalise_ranked(ranked: Mapping[str, Sequence[Ranked]], stage: Stage = "retrieve") -> Run:
    """:func:`normalise_run` over ranked lists of anything :class:`Ranked` (a retriever's hits): each entry
    becomes a RankedDoc once, at its position, instead of once as it came and again positioned."""
    out: dict[str, tuple[RankedDoc, ...]] = {}
    for qid, docs in ranked.items():
        ordered = list(docs) if stage in ORDER_PRESERVING else sorted(docs, key=tie_key)
        out[qid] = positional(ordered)
    return Run(ranked=out)


def to_trec_dict(run: Run) -> dict[str, dict[str, float]]:
    """The {qid: {docid: score}} mapping pytrec_eval takes (first occurrence of a doc wins)."""
    out: dict[str, dict[str, float]] = {}
    for qid, docs in run.ranked.items():
        scores: dict[str, float] = {}
        for doc in docs:
            scores.setdefault(doc.doc_id, doc.score)
        out[qid] = scores
    return out
