"""The types every stage shares. No I/O here.

Conventions that the whole project relies on:

* A meeting's ``file_uuid`` is derived from ``(corpus, source_id)`` with uuid5, so the
  same source meeting gets the same id on every machine and in every run.
* Gold spans are inclusive, 0-based turn ranges into ``Meeting.turns`` (QMSum's
  convention; the synthetic tier uses it on purpose).
* Chunk ids are ``{file_uuid}_{chunk_index}``; digests ``{file_uuid}_digest{n}``.
"""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

QueryClass = Literal["lookup", "summarize", "multi_file", "aggregation"]
QUERY_CLASSES: tuple[QueryClass, ...] = ("lookup", "summarize", "multi_file", "aggregation")
ScoredOn = Literal["rank", "answer"]
Tier = Literal["A", "B", "C"]
DocType = Literal["chunk", "digest"]
DateSource = Literal["corpus", "none"]
# Where an arm searches: the state's own embedded index, or the real stack (OpenSearch, PostgreSQL).
Backend = Literal["embedded", "stack"]
BACKENDS: tuple[Backend, ...] = ("embedded", "stack")
# What runs the embedding model's transformer: torch (the default), or the ONNX export of the same
# weights in onnxruntime (harness.index.onnx_backend; its vectors carry another model identity).
EmbeddingBackend = Literal["torch", "onnx"]
EMBEDDING_BACKENDS: tuple[EmbeddingBackend, ...] = ("torch", "onnx")

# A fixed namespace: changing it changes every file_uuid, i.e. every doc id and qrels file.
RAGSWEEP_NAMESPACE = uuid.UUID("6f0b7a52-4c1e-5b8e-9a55-1d2c3e4f5a6b")


def file_uuid_for(corpus: str, source_id: str) -> str:
    """The deterministic id of one source meeting inside one corpus."""
    return str(uuid.uuid5(RAGSWEEP_NAMESPACE, f"{corpus}:{source_id}"))


def word_count(text: str) -> int:
    """Whitespace word count: the unit of coverage everywhere in the harness."""
    return len(text.split())


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Turn(_Frozen):
    """One speaker turn (a transcript segment): times in seconds from meeting start."""

    index: int = Field(ge=0)
    speaker: str
    start: float = Field(ge=0.0)
    end: float = Field(ge=0.0)
    text: str
    words: int = Field(ge=0)

    @model_validator(mode="after")
    def _end_after_start(self) -> Turn:
        if self.end < self.start:
            raise ValueError(f"turn {self.index}: end {self.end} precedes start {self.start}")
        return self

    @property
    def duration(self) -> float:
        return self.end - self.start


class Meeting(_Frozen):
    """One transcript file as the harness injects it."""

    corpus: str
    source_id: str
    file_uuid: str
    title: str
    recorded_date: date | None = None
    recorded_date_source: DateSource = "none"
    timings_real: bool
    tier: Tier
    licence: str
    domain: str | None = None
    turns: tuple[Turn, ...]

    @model_validator(mode="after")
    def _consistent(self) -> Meeting:
        if self.file_uuid != file_uuid_for(self.corpus, self.source_id):
            raise ValueError(f"file_uuid of {self.corpus}:{self.source_id} is not derived from it")
        for i, turn in enumerate(self.turns):
            if turn.index != i:
                raise ValueError(f"turn at position {i} carries index {turn.index}")
        if (self.recorded_date is None) != (self.recorded_date_source == "none"):
            raise ValueError("recorded_date and recorded_date_source disagree")
        return self

    @property
    def roster(self) -> tuple[str, ...]:
        """Speakers in order of first appearance."""
        seen: dict[str, None] = {}
        for turn in self.turns:
            seen.setdefault(turn.speaker, None)
        return tuple(seen)

    @property
    def words(self) -> int:
        return sum(t.words for t in self.turns)


class GoldSpan(_Frozen):
    """An inclusive, 0-based range of turns in one file."""

    file_uuid: str
    start_turn: int = Field(ge=0)
    end_turn: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> GoldSpan:
        if self.end_turn < self.start_turn:
            raise ValueError(f"span [{self.start_turn}, {self.end_turn}] is reversed")
        return self


class Query(_Frozen):
    """A question with gold evidence (rank-scored) or a gold answer (answer-scored)."""

    id: str
    corpus: str
    query_class: QueryClass
    text: str
    gold: tuple[GoldSpan, ...] = ()
    scored_on: ScoredOn = "rank"
    rule: str | None = None
    answer: Any = None
    tier: Tier = "A"

    @field_validator("text")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query text is empty")
        return value

    @property
    def gold_files(self) -> tuple[str, ...]:
        return tuple(sorted({span.file_uuid for span in self.gold}))


class Chunk(_Frozen):
    """One indexed document: a speaker turn (or part of one), or a digest section."""

    id: str
    file_uuid: str
    chunk_index: int = Field(ge=0)
    doc_type: DocType = "chunk"
    speaker: str | None
    start: float
    end: float
    text: str
    words: int = Field(ge=0)


class Qrels(_Frozen):
    """Graded judgements: query id -> doc id -> grade (0, 1, 2; any int from TREC files)."""

    judgements: dict[str, dict[str, int]]

    def query_ids(self) -> list[str]:
        return sorted(self.judgements)


class RankedDoc(_Frozen):
    """One entry of a run. ``doc_type``/``file_uuid``/``chunk_index`` feed the tie policy."""

    doc_id: str
    score: float
    doc_type: DocType = "chunk"
    file_uuid: str = ""
    chunk_index: int = 0


class Run(_Frozen):
    """A ranked list per query, in the order the system produced it."""

    ranked: dict[str, tuple[RankedDoc, ...]]


class ResultRow(_Frozen):
    """One line of a results table: a corpus x tier x class aggregate."""

    corpus: str
    tier: Tier
    query_class: str
    n: int
    metrics: dict[str, float]


class Corpus(_Frozen):
    """A corpus read into the model: what flows into injection, judging and reports.

    ``dropped`` counts queries the adapter could not use, keyed by reason (e.g.
    ``general_query_not_scored``); ``checksums`` maps artefact path -> sha256 of what was read.
    """

    name: str
    version: str
    tier: Tier
    licence: str
    meetings: tuple[Meeting, ...]
    queries: tuple[Query, ...]
    checksums: dict[str, str] = Field(default_factory=dict)
    dropped: dict[str, int] = Field(default_factory=dict)
    seed: int | None = None
