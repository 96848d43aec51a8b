"""Speaker-turn chunking: one chunk is one speaker turn, long monologues split by sentence.

The rules, in order:

1. Segments (``Turn`` records) are read chronologically by ``(start, end, index)`` — a
   total order: two segments sharing an onset (a backchannel over a longer utterance)
   always sort the same way, so chunk boundaries cannot move between reindexes.
2. Consecutive segments of the same speaker form one speaker turn.
3. A turn of at most ``max_words`` words is one chunk. A longer turn is cut into
   sub-chunks by packing whole sentences (the pinned splitter in
   :mod:`harness.index.sentences`) greedily up to ``max_words``; a single sentence
   longer than that is cut every ``max_words`` words.
4. A chunk's time span comes from its words: word ``j`` of an ``n``-word segment spans
   ``[start + j/n * d, start + (j+1)/n * d]``. So a sub-chunk covers exactly the share of
   a segment's duration that its words are, which is what makes the judge's
   time-overlap coverage proportional for a monologue split mid-turn.
5. Ids are ``{file_uuid}_{n}`` with ``n`` counting chunks in chronological order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness.index.sentences import SPLITTER_IDENTITY, split_words_into_sentences
from harness.model import Chunk, Meeting, Turn, word_count

DEFAULT_MAX_WORDS = 200


@dataclass(frozen=True)
class ChunkingPolicy:
    max_words: int = DEFAULT_MAX_WORDS

    def __post_init__(self) -> None:
        if self.max_words < 1:
            raise ValueError("max_words must be at least 1")

    def to_dict(self) -> dict[str, object]:
        return {
            "unit": "speaker_turn",
            "max_words": self.max_words,
            "sentence_splitter": SPLITTER_IDENTITY,
            "order": "start_time, end_time, segment id",
        }


def chronological(turns: Sequence[Turn]) -> list[Turn]:
    """Segments in the total chronological order every reader uses."""
    return sorted(turns, key=lambda t: (t.start, t.end, t.index))


@dataclass(frozen=True)
class _Word:
    text: str
    start: float
    end: float


def _words_of(turn: Turn) -> list[_Word]:
    tokens = turn.text.split()
    n = len(tokens)
    if n == 0:
        return []
    step = turn.duration / n
    return [_Word(tok, turn.start + j * step, turn.start + (j + 1) * step) for j, tok in enumerate(tokens)]


def _pieces(words: list[_Word], max_words: int) -> list[list[_Word]]:
    """Pack sentences into pieces of at most ``max_words`` words."""
    if len(words) <= max_words:
        return [words]
    sentence_ends = split_words_into_sentences([w.text for w in words])
    pieces: list[list[_Word]] = []
    current: list[_Word] = []
    start = 0
    for end in sentence_ends:
        sentence = words[start:end]
        start = end
        if current and len(current) + len(sentence) > max_words:
            pieces.append(current)
            current = []
        while len(sentence) > max_words:
            if current:
                pieces.append(current)
                current = []
            pieces.append(sentence[:max_words])
            sentence = sentence[max_words:]
        current = current + sentence
    if current:
        pieces.append(current)
    return pieces


def speaker_turns(turns: Sequence[Turn]) -> list[list[Turn]]:
    """Group chronologically consecutive segments of one speaker."""
    groups: list[list[Turn]] = []
    for turn in chronological(turns):
        if groups and groups[-1][-1].speaker == turn.speaker:
            groups[-1].append(turn)
        else:
            groups.append([turn])
    return groups


def chunk_meeting(meeting: Meeting, policy: ChunkingPolicy | None = None) -> list[Chunk]:
    """All chunk documents of one meeting, in chronological order."""
    policy = policy or ChunkingPolicy()
    chunks: list[Chunk] = []
    for group in speaker_turns(meeting.turns):
        words = [w for turn in group for w in _words_of(turn)]
        if not words:
            continue
        for piece in _pieces(words, policy.max_words):
            text = " ".join(w.text for w in piece)
            n = len(chunks)
            chunks.append(
                Chunk(
                    id=f"{meeting.file_uuid}_{n}",
                    file_uuid=meeting.file_uuid,
                    chunk_index=n,
                    doc_type="chunk",
                    speaker=group[0].speaker,
                    start=piece[0].start,
                    end=piece[-1].end,
                    text=text,
                    words=word_count(text),
                )
            )
    return chunks


def chunk_corpus(meetings: Sequence[Meeting], policy: ChunkingPolicy | None = None) -> list[Chunk]:
    """Chunks of every meeting, meetings in file_uuid order."""
    out: list[Chunk] = []
    for meeting in sorted(meetings, key=lambda m: m.file_uuid):
        out.extend(chunk_meeting(meeting, policy))
    return out
