"""Index documents: chunk documents and digest documents on one index.

``embedding_text`` is what the vector leg embeds. In ``header`` mode it is
``"{title} | {date} | participants: {roster}\\n\\n{body}"`` (the methodology's index v6),
in ``body`` mode the bare text. It is an arm axis, so both can be built into one state.

Digest documents (``doc_type`` digest, id ``{file_uuid}_digest{n}``) are extractive:
the file is cut into ``DIGEST_SECTIONS`` equal spans of its chunks and each span
contributes its most central sentences (highest summed in-file tf-idf of their words,
earliest first on ties), kept in transcript order. No model is involved.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.index.chunking import ChunkingPolicy, chunk_meeting
from harness.index.sentences import split_sentences
from harness.model import Chunk, DocType, Meeting, word_count

EmbeddingTextMode = Literal["header", "body"]
EMBEDDING_TEXT_MODES: tuple[EmbeddingTextMode, ...] = ("header", "body")
DIGEST_SECTIONS = 6
DIGEST_SENTENCES_PER_SECTION = 3
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class IndexDoc:
    id: str
    file_uuid: str
    doc_type: DocType
    chunk_index: int
    speaker: str | None
    start: float
    end: float
    title: str
    date: str
    roster: tuple[str, ...]
    content: str

    def chunk(self) -> Chunk:
        return Chunk(id=self.id, file_uuid=self.file_uuid, chunk_index=self.chunk_index, doc_type=self.doc_type,
                     speaker=self.speaker, start=self.start, end=self.end, text=self.content,
                     words=word_count(self.content))


def doc_from_record(record: dict[str, Any]) -> IndexDoc:
    """An IndexDoc back from its JSON record (a ``docs.jsonl`` line)."""
    fields: dict[str, Any] = {k: v for k, v in record.items() if k in IndexDoc.__dataclass_fields__}
    fields["roster"] = tuple(fields["roster"])
    return IndexDoc(**fields)


def header(meeting: Meeting) -> str:
    date = meeting.recorded_date.isoformat() if meeting.recorded_date else "undated"
    return f"{meeting.title} | {date} | participants: {', '.join(meeting.roster)}"


def embedding_text(doc: IndexDoc, mode: EmbeddingTextMode) -> str:
    if mode == "body":
        return doc.content
    return f"{doc.title} | {doc.date or 'undated'} | participants: {', '.join(doc.roster)}\n\n{doc.content}"


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.casefold())


def digest_sections(chunks: Sequence[Chunk]) -> list[str]:
    """Extractive digest sections of one file (see module docstring)."""
    sentences_per_chunk = [split_sentences(c.text) for c in chunks]
    df: Counter[str] = Counter()
    for sentences in sentences_per_chunk:
        for sentence in sentences:
            df.update(set(_tokens(sentence)))
    n_sentences = max(1, sum(len(s) for s in sentences_per_chunk))

    def centrality(sentence: str) -> float:
        tokens = _tokens(sentence)
        return sum(math.log((1 + n_sentences) / (1 + df[t])) for t in set(tokens)) if len(tokens) >= 4 else 0.0

    sections: list[str] = []
    n = len(chunks)
    parts = min(DIGEST_SECTIONS, n)
    for k in range(parts):
        lo, hi = k * n // parts, (k + 1) * n // parts
        candidates = [(i, j, s) for i in range(lo, hi) for j, s in enumerate(sentences_per_chunk[i])]
        best = sorted(candidates, key=lambda c: (-centrality(c[2]), c[0], c[1]))[:DIGEST_SENTENCES_PER_SECTION]
        chosen = [s for _i, _j, s in sorted(best, key=lambda c: (c[0], c[1])) if s]
        if chosen:
            sections.append(" ".join(chosen))
    return sections


def meeting_documents(meeting: Meeting, policy: ChunkingPolicy, digests: bool = True) -> list[IndexDoc]:
    date = meeting.recorded_date.isoformat() if meeting.recorded_date else ""
    common = {"file_uuid": meeting.file_uuid, "title": meeting.title, "date": date, "roster": meeting.roster}
    chunks = chunk_meeting(meeting, policy)
    docs = [
        IndexDoc(id=c.id, doc_type="chunk", chunk_index=c.chunk_index, speaker=c.speaker, start=c.start,
                 end=c.end, content=c.text, **common)  # type: ignore[arg-type]
        for c in chunks
    ]
    if digests and chunks:
        span = (chunks[0].start, max(c.end for c in chunks))
        for n, text in enumerate(digest_sections(chunks)):
            docs.append(IndexDoc(id=f"{meeting.file_uuid}_digest{n}", doc_type="digest", chunk_index=n,
                                 speaker=None, start=span[0], end=span[1], content=text, **common))  # type: ignore[arg-type]
    return docs
