"""What the store returns: small immutable records, every collection sorted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from harness.model import Turn


@dataclass(frozen=True)
class Segment:
    """One ``transcript_segment`` row with its speaker's name."""

    id: int
    file_uuid: str
    turn_index: int
    speaker: str
    start_time: float
    end_time: float
    text: str
    words: int

    def to_turn(self) -> Turn:
        return Turn(index=self.turn_index, speaker=self.speaker, start=self.start_time,
                    end=self.end_time, text=self.text, words=self.words)


@dataclass(frozen=True)
class InjectReport:
    """What one ``inject`` call did, in files (and segments written).

    ``inserted``: files new to the store. ``replaced``: files present before and rewritten
    because ``force=True``. ``skipped``: files present before and left alone apart from
    their date; ``dates_refreshed`` counts those whose recorded_date or its source
    actually changed.
    """

    inserted: int = 0
    replaced: int = 0
    skipped: int = 0
    dates_refreshed: int = 0
    segments_written: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"inserted": self.inserted, "replaced": self.replaced, "skipped": self.skipped,
                "dates_refreshed": self.dates_refreshed, "segments_written": self.segments_written}


class PeriodFiles(NamedTuple):
    """Files recorded inside a period, and the undated files no period can include."""

    files: tuple[str, ...]
    undated: tuple[str, ...]


class SpeakerSessions(NamedTuple):
    """A speaker and the number of in-scope files they spoke in."""

    speaker: str
    sessions: int


@dataclass(frozen=True)
class StoreStats:
    files: int
    segments: int
    speakers: int
