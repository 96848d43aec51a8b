"""The relational store's interface. SQLite implements it now; Postgres will, and both
pass the same suite (tests/test_store_sqlite.py)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Protocol

from harness.model import Meeting
from harness.store.records import InjectReport, PeriodFiles, Segment, SpeakerSessions, StoreStats


class Store(Protocol):
    def inject(self, meetings: Iterable[Meeting], *, force: bool = False) -> InjectReport:
        """Insert new files; refresh only the date of present ones, or rewrite them if ``force``."""
        ...

    def meetings(self) -> list[Meeting]:
        """Every file as a Meeting, sorted by file_uuid, turns in turn order."""
        ...

    def segments(self, file_uuid: str) -> list[Segment]:
        """One file's segments in the total chronological order (start, end, id)."""
        ...

    def files_in_period(self, start: date, end: date) -> PeriodFiles:
        """Files recorded in [start, end] (inclusive), and the undated files excluded."""
        ...

    def count_phrase_occurrences(self, phrase: str, file_uuids: Iterable[str] | None = None) -> int:
        """Exact-phrase occurrences over segment text, optionally within some files."""
        ...

    def speaker_sessions(self, title_like: str) -> list[SpeakerSessions]:
        """Per speaker, the files whose title matches that they spoke in; most first."""
        ...

    def stats(self) -> StoreStats:
        ...

    def close(self) -> None:
        ...
