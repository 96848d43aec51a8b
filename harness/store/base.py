"""The store's behaviour, written once over DB-API calls; engines supply the connection.

An engine subclass provides four primitives (fetch, execute, executemany, a write
transaction) and how its driver passes dates. Everything that decides a result lives
here, so SQLite and Postgres cannot drift apart in what they answer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import date
from types import TracebackType
from typing import Any, Literal, Self

from harness.errors import InputDataError, UsageError
from harness.model import Meeting
from harness.store import sql
from harness.store.phrases import count_occurrences, like_needle, phrase_regex, title_matches, title_regex
from harness.store.records import InjectReport, PeriodFiles, Segment, SpeakerSessions, StoreStats

Row = Sequence[Any]
_Outcome = Literal["inserted", "replaced", "skipped", "refreshed"]


class SqlStore(ABC):
    """A :class:`harness.store.protocol.Store` over any DB-API connection."""

    readonly: bool

    # -- what an engine provides ---------------------------------------------------------

    @abstractmethod
    def _fetch(self, statement: str, params: Sequence[object] = ()) -> list[Row]:
        """Run one statement from :mod:`harness.store.sql` and return all rows.

        Statements are written with ``?`` placeholders; an engine whose driver wants
        another style renders them with :func:`harness.store.sql.render`.
        """

    @abstractmethod
    def _execute(self, statement: str, params: Sequence[object] = ()) -> None: ...

    @abstractmethod
    def _executemany(self, statement: str, rows: Sequence[Sequence[object]]) -> None: ...

    @abstractmethod
    def _write_transaction(self) -> AbstractContextManager[None]:
        """Commit on success, roll back on error; exclusive against other writers."""

    @abstractmethod
    def close(self) -> None: ...

    def _date_param(self, value: date | None) -> object:
        """A date as this engine's driver takes it."""
        return value

    @staticmethod
    def _date_value(value: object) -> date | None:
        """A recorded_date column value as a date (drivers return date or ISO text)."""
        if value is None or type(value) is date:
            return value
        if isinstance(value, str):
            return date.fromisoformat(value)
        raise TypeError(f"recorded_date came back as {type(value).__name__}: {value!r}")

    # -- context manager -----------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- injection -----------------------------------------------------------------------

    def inject(self, meetings: Iterable[Meeting], *, force: bool = False) -> InjectReport:
        """Write meetings, one transaction per file, in file_uuid order.

        A file not yet present is inserted: its speakers in order of first appearance,
        its segments in turn order, so ids follow from the batch alone. A present file
        takes the skip path (only recorded_date and its source are refreshed, no segment
        is rewritten) unless ``force``, which deletes the file's rows and reinserts them.
        Re-running the same call changes nothing.
        """
        if self.readonly:
            raise UsageError("this store was opened read-only; open it writable to inject")
        batch = sorted(meetings, key=lambda m: m.file_uuid)
        repeated = sorted(uuid for uuid, n in Counter(m.file_uuid for m in batch).items() if n > 1)
        if repeated:
            raise InputDataError(
                f"{len(repeated)} file_uuid(s) appear more than once in one inject batch "
                f"(first: {repeated[0]}); deduplicate the corpus before injecting")
        outcomes: Counter[str] = Counter()
        segments = 0
        for meeting in batch:
            with self._write_transaction():
                outcome, written = self._inject_one(meeting, force=force)
            outcomes[outcome] += 1
            segments += written
        return InjectReport(
            inserted=outcomes["inserted"],
            replaced=outcomes["replaced"],
            skipped=outcomes["skipped"] + outcomes["refreshed"],
            dates_refreshed=outcomes["refreshed"],
            segments_written=segments,
        )

    def _inject_one(self, meeting: Meeting, *, force: bool) -> tuple[_Outcome, int]:
        present = self._fetch(sql.SELECT_FILE_DATE, (meeting.file_uuid,))
        if present and not force:
            stored_date, stored_source = present[0]
            if (self._date_value(stored_date), stored_source) == (
                    meeting.recorded_date, meeting.recorded_date_source):
                return "skipped", 0
            self._execute(sql.UPDATE_FILE_DATE, (self._date_param(meeting.recorded_date),
                                                 meeting.recorded_date_source, meeting.file_uuid))
            return "refreshed", 0
        if present:
            for statement in (sql.DELETE_FILE_SEGMENTS, sql.DELETE_FILE_SPEAKERS, sql.DELETE_MEDIA_FILE):
                self._execute(statement, (meeting.file_uuid,))
        self._insert(meeting)
        return ("replaced" if present else "inserted"), len(meeting.turns)

    def _insert(self, meeting: Meeting) -> None:
        m = meeting
        self._execute(sql.INSERT_MEDIA_FILE, (
            m.file_uuid, m.corpus, m.source_id, m.title, self._date_param(m.recorded_date),
            m.recorded_date_source, m.timings_real, m.tier, m.licence, m.domain))
        first_speaker = int(self._fetch(sql.NEXT_SPEAKER_ID)[0][0])
        speaker_ids = {name: first_speaker + i for i, name in enumerate(m.roster)}
        if speaker_ids:
            self._executemany(sql.INSERT_SPEAKER,
                              [(sid, m.file_uuid, name) for name, sid in speaker_ids.items()])
        first_segment = int(self._fetch(sql.NEXT_SEGMENT_ID)[0][0])
        if m.turns:
            self._executemany(sql.INSERT_SEGMENT, [
                (first_segment + t.index, m.file_uuid, t.index, speaker_ids[t.speaker],
                 t.start, t.end, t.text, t.words)
                for t in m.turns])

    # -- reads ---------------------------------------------------------------------------

    def meetings(self) -> list[Meeting]:
        turns: dict[str, list[Segment]] = defaultdict(list)
        for row in self._fetch(sql.SELECT_ALL_SEGMENTS_BY_TURN):
            segment = _segment(row)
            turns[segment.file_uuid].append(segment)
        return [
            Meeting(file_uuid=file_uuid, corpus=corpus, source_id=source_id, title=title,
                    recorded_date=self._date_value(recorded_date),
                    recorded_date_source=recorded_date_source, timings_real=bool(timings_real),
                    tier=tier, licence=licence, domain=domain,
                    turns=tuple(s.to_turn() for s in turns[file_uuid]))
            for (file_uuid, corpus, source_id, title, recorded_date, recorded_date_source,
                 timings_real, tier, licence, domain) in self._fetch(sql.SELECT_MEDIA_FILES)
        ]

    def segments(self, file_uuid: str) -> list[Segment]:
        """Chronological: (start_time, end_time, id). Empty for a file with no segments."""
        return [_segment(row) for row in self._fetch(sql.SELECT_SEGMENTS_CHRONOLOGICAL, (file_uuid,))]

    def files_in_period(self, start: date, end: date) -> PeriodFiles:
        if start > end:
            raise UsageError(f"period starts {start} after it ends {end}; pass start <= end (both inclusive)")
        inside = self._fetch(sql.SELECT_FILES_IN_PERIOD, (self._date_param(start), self._date_param(end)))
        undated = self._fetch(sql.SELECT_UNDATED_FILES)
        return PeriodFiles(files=tuple(sorted(r[0] for r in inside)),
                           undated=tuple(sorted(r[0] for r in undated)))

    def count_phrase_occurrences(self, phrase: str, file_uuids: Iterable[str] | None = None) -> int:
        """Occurrences of an exact phrase over segment text (harness.store.phrases).

        With ``file_uuids``, only those files count; naming a file the store does not
        hold is refused, because a count over a file that is not there looks exactly like
        a count of zero in it.
        """
        phrase_regex(phrase)  # refuses an empty phrase before any query runs
        scope: frozenset[str] | None = None
        if file_uuids is not None:
            if isinstance(file_uuids, str):
                raise UsageError("file_uuids must be a collection of file_uuids, not one string")
            scope = frozenset(file_uuids)
            missing = sorted(scope - {r[0] for r in self._fetch(sql.SELECT_FILE_UUIDS)})
            if missing:
                raise UsageError(f"{len(missing)} file_uuid(s) to count in are not in the store "
                                 f"(first: {missing[0]}); inject them or drop them from the scope")
        rows = self._fetch(sql.SELECT_PHRASE_CANDIDATES, (like_needle(phrase),))
        return sum(count_occurrences(phrase, text) for file_uuid, text in rows
                   if scope is None or file_uuid in scope)

    def speaker_sessions(self, title_like: str) -> list[SpeakerSessions]:
        """Speakers by the number of files whose title matches ``title_like`` they spoke in.

        ``title_like`` is a LIKE pattern (``%``, ``_``), matched case-insensitively
        against the whole title. Sorted by sessions descending, then name.
        """
        title_regex(title_like)  # refuses an empty pattern even over an empty store
        sessions: Counter[str] = Counter()
        for _file_uuid, title, name in self._fetch(sql.SELECT_ATTENDANCE):
            if title_matches(title_like, title):
                sessions[name] += 1
        ranked = sorted(sessions.items(), key=lambda kv: (-kv[1], kv[0]))
        return [SpeakerSessions(name, n) for name, n in ranked]

    def stats(self) -> StoreStats:
        return StoreStats(files=self._count(sql.COUNT_FILES), segments=self._count(sql.COUNT_SEGMENTS),
                          speakers=self._count(sql.COUNT_SPEAKERS))

    def _count(self, statement: str) -> int:
        return int(self._fetch(statement)[0][0])


def _segment(row: Row) -> Segment:
    seg_id, file_uuid, turn_index, speaker, start, end, text, words = row
    return Segment(id=int(seg_id), file_uuid=file_uuid, turn_index=int(turn_index), speaker=speaker,
                   start_time=float(start), end_time=float(end), text=text, words=int(words))
