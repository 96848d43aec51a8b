"""Shared legs: a query's BM25 and kNN legs, fetched once and fused by every arm that asks for them.

A leg request is everything the two legs depend on besides the index and the query encoder:
the query text, the depth (the fusion window), the document plane, the file scope, the
speaker and the embedded text the kNN leg searches. Two arms over one index and one encoder
that make equal requests get equal legs, so the legs are fetched once (``LegCache``) and each
arm fuses them its own way: the fusion arms of a sweep differ only in that.

``LegTable`` is the same legs written to a file (``legs.json``), for arms in other processes
(a Kubernetes Job each): a cache that starts from a table serves the table's requests from it,
and a request of the table's shape (its depth, plane and embedded text) that the table lacks is
refused, never fetched again behind the caller's back. On a backend whose legs at depth d are the
first d of any deeper legs (``prefix``: the embedded backend, harness.bench.config.prefix_legs), a
request is also answered from legs held for the same request at a greater depth, cut at its own:
arms fusing over different windows of one text and scope share the deepest window's legs.
Scores travel as JSON numbers, which read back as the same doubles, so an arm fusing a table's
legs writes the same bytes as one that fetched them. A table may also carry the group's query
vectors (float32 bytes, base64, by query text; the encoder is batch-independent, so a text's
vector is the text's alone): an arm reading it then neither loads the model nor encodes a query
(``TableEncoder``).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from harness.errors import IntegrityError
from harness.index.backend import LegHit

LEGS_SCHEMA: Literal["ragsweep.legs/1"] = "ragsweep.legs/1"

# (bm25 leg, knn leg), each best first as the backend returned it
Legs = tuple[tuple[LegHit, ...], tuple[LegHit, ...]]


@dataclass(frozen=True)
class LegRequest:
    """What one pair of legs depends on, besides the index and the query encoder."""

    text: str
    depth: int
    embedding_text: str
    doc_type: str = "chunk"
    file_uuids: tuple[str, ...] | None = None
    speaker: str | None = None

    @property
    def shape(self) -> tuple[int, str, str, str | None]:
        return self.depth, self.doc_type, self.embedding_text, self.speaker

    @property
    def at_any_depth(self) -> tuple[str, str, str, tuple[str, ...] | None, str | None]:
        """The request but its depth: requests equal in this differ only in how deep they go."""
        return self.text, self.doc_type, self.embedding_text, self.file_uuids, self.speaker


def cut(legs: Legs, depth: int) -> Legs:
    """The first ``depth`` hits of each leg."""
    return legs[0][:depth], legs[1][:depth]


@dataclass
class LegCache:
    """Legs by request, for the arms of one group (one index, one encoder). Safe across threads.

    ``published``: legs another process fetched (``LegTable``). A request of its shape that it
    lacks raises IntegrityError; requests of another shape (the route stage's digest leg) are
    fetched and kept here like any other. ``prefix``: the backend's legs at a depth are the first
    hits of any deeper legs, so a request is answered by cutting the deepest legs held for it.
    """

    published: LegTable | None = None
    prefix: bool = False
    fetched: int = 0  # requests fetched from the backend
    reused: int = 0  # requests answered from what was already here (cut from deeper legs, with prefix)
    _legs: dict[LegRequest, Legs] = field(default_factory=dict, repr=False)
    _deepest: dict[tuple[Any, ...], LegRequest] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # what a reader derives from a request's legs alone, kept beside them so every arm of the group derives
    # it once (harness.retrieval.chunks: the legs checked and keyed for fusion)
    derived: dict[LegRequest, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.published is not None:
            for request, legs in self.published.legs().items():
                self._keep(request, legs)

    def _keep(self, request: LegRequest, legs: Legs) -> Legs:
        kept = self._legs.setdefault(request, legs)
        deepest = self._deepest.get(request.at_any_depth)
        if deepest is None or deepest.depth < request.depth:
            self._deepest[request.at_any_depth] = request
        return kept

    def _held(self, request: LegRequest) -> Legs | None:
        known = self._legs.get(request)
        if known is not None or not self.prefix:
            return known
        deeper = self._deepest.get(request.at_any_depth)
        if deeper is None or deeper.depth < request.depth:
            return None
        return cut(self._legs[deeper], request.depth)

    def _covered_by(self, table: LegTable, request: LegRequest) -> bool:
        """Whether the table should hold ``request`` (it was fetched for every query of its shape)."""
        if self.prefix:
            return request.shape[1:] == table.shape[1:] and request.depth <= table.depth
        return request.shape == table.shape

    def legs(self, request: LegRequest, fetch: Callable[[], Legs]) -> Legs:
        with self._lock:
            known = self._held(request)
            if known is not None:
                self.reused += 1
                return known
        table = self.published
        if table is not None and self._covered_by(table, request):
            raise IntegrityError(
                f"the shared legs ({table.describe()}) hold no legs for the query {request.text!r} "
                f"(scope {request.file_uuids}); they were fetched for another query set or state. Rerun the "
                "sweep so its legs are fetched again (the arm never fetches them behind the table's back)")
        legs = fetch()
        with self._lock:
            self.fetched += 1
            return self._keep(request, legs)

    def table(self, shape_of: LegRequest, group: Mapping[str, Any]) -> LegTable:
        """Every request of ``shape_of``'s shape held here, as a table to publish."""
        rows = [LegRow(text=r.text, file_uuids=list(r.file_uuids) if r.file_uuids is not None else None,
                       bm25=[(h.doc_id, h.score) for h in bm25], knn=[(h.doc_id, h.score) for h in knn])
                for r, (bm25, knn) in sorted(self._legs.items(), key=lambda kv: (kv[0].text, kv[0].file_uuids or ()))
                if r.shape == shape_of.shape]
        return LegTable(group=dict(group), depth=shape_of.depth, doc_type=shape_of.doc_type,
                        embedding_text=shape_of.embedding_text, speaker=shape_of.speaker, rows=rows)

    def counts(self) -> dict[str, int]:
        return {"fetched": self.fetched, "reused": self.reused,
                "published": len(self.published.rows) if self.published is not None else 0}


class LegRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    text: StrictStr
    file_uuids: list[StrictStr] | None
    bm25: list[tuple[StrictStr, StrictFloat]]
    knn: list[tuple[StrictStr, StrictFloat]]


class LegTable(BaseModel):
    """legs.json: one group's legs, one row per (query text, scope), in (text, scope) order."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    schema_: Literal["ragsweep.legs/1"] = Field(LEGS_SCHEMA, alias="schema")
    group: dict[str, Any]  # what the legs are true of: state, embedder, the group key (harness.bench)
    depth: StrictInt
    doc_type: StrictStr
    embedding_text: StrictStr
    speaker: StrictStr | None
    rows: list[LegRow]
    vectors: dict[StrictStr, StrictStr] | None = None  # query text -> base64 of its float32 vector

    def with_vectors(self, texts: Sequence[str], vectors: Any) -> LegTable:
        """This table carrying the query vectors of ``texts`` (``vectors[i]`` is ``texts[i]``'s)."""
        array = np.asarray(vectors, dtype="<f4")
        return self.model_copy(update={"vectors": {
            text: base64.b64encode(array[i].tobytes()).decode("ascii") for i, text in enumerate(texts)}})

    def query_vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The published vectors of ``texts``, as the encoder returned them; a text without one is refused."""
        held = self.vectors or {}
        missing = [t for t in texts if t not in held]
        if missing:
            raise IntegrityError(f"the shared legs ({self.describe()}) hold no query vector for {missing[0]!r}"
                                 f"{f' and {len(missing) - 1} more' if len(missing) > 1 else ''}; rerun the sweep "
                                 "so its legs Job publishes them again")
        return np.stack([np.frombuffer(base64.b64decode(held[t]), dtype="<f4") for t in texts]).astype(np.float32)

    @property
    def shape(self) -> tuple[int, str, str, str | None]:
        return self.depth, self.doc_type, self.embedding_text, self.speaker

    def describe(self) -> str:
        return f"group {self.group.get('key', '?')}, depth {self.depth}, {len(self.rows)} queries"

    def legs(self) -> dict[LegRequest, Legs]:
        return {LegRequest(text=row.text, depth=self.depth, embedding_text=self.embedding_text,
                           doc_type=self.doc_type, file_uuids=tuple(row.file_uuids) if row.file_uuids is not None
                           else None, speaker=self.speaker):
                (tuple(LegHit(d, s) for d, s in row.bm25), tuple(LegHit(d, s) for d, s in row.knn))
                for row in self.rows}

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True) + "\n"


def leg_request(text: str, depth: int, embedding_text: str, *, doc_type: str = "chunk",
                file_uuids: Sequence[str] | None = None, speaker: str | None = None) -> LegRequest:
    return LegRequest(text=text, depth=depth, embedding_text=embedding_text, doc_type=doc_type,
                      file_uuids=tuple(file_uuids) if file_uuids is not None else None, speaker=speaker)


@dataclass
class TableEncoder:
    """The query encoder of an arm whose group published its query vectors: the identity of the model
    (checked against the table's and the index's by the caller), vectors read from the table, no
    model loaded. A text the table lacks raises IntegrityError: nothing is encoded behind its back."""

    identity: str
    table: LegTable
    dimension: int = field(init=False)

    def __post_init__(self) -> None:
        first = next(iter((self.table.vectors or {}).values()), "")
        self.dimension = len(base64.b64decode(first)) // 4

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.table.query_vectors(texts)
