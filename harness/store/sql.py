"""Every SQL statement the store runs, as named constants, and the placeholder adapter.

Rules for what may live here (tests/test_store_orderby.py enforces the first):

* An ORDER BY always ends in the primary key of the table whose rows the query returns
  (the first table after FROM): ``id`` for ``transcript_segment`` and ``speaker``,
  ``file_uuid`` for ``media_file``. Without it, rows that tie on the other keys come back
  in physical storage order, which a delete-then-reinsert reshuffles (docs/store.md).
* Only SQL that SQLite and PostgreSQL run the same way: standard types, ``COALESCE``,
  ``lower``, ``LIKE ... ESCAPE``; no engine-specific functions. Statements use ``?``
  placeholders; :func:`render` turns them into ``%s`` for psycopg.
* No wall-clock values (no ``CURRENT_TIMESTAMP``): nothing that feeds a result may depend
  on when injection ran.

Ids are assigned by the injector (``MAX(id) + 1``) rather than by an engine sequence:
Postgres sequences are not transactional (a rolled-back insert burns ids), so engine-side
ids would differ between engines and between runs over the same input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

# Primary key of each table: what every ORDER BY over that table must end in.
PRIMARY_KEYS: Final[dict[str, str]] = {
    "media_file": "file_uuid",
    "speaker": "id",
    "transcript_segment": "id",
}

# -- schema (portable DDL; run in this order) ------------------------------------------

CREATE_MEDIA_FILE: Final = """
CREATE TABLE IF NOT EXISTS media_file (
    file_uuid TEXT PRIMARY KEY,
    corpus TEXT NOT NULL,
    source_id TEXT NOT NULL,
    title TEXT NOT NULL,
    recorded_date DATE,
    recorded_date_source TEXT NOT NULL,
    timings_real BOOLEAN NOT NULL,
    tier TEXT NOT NULL,
    licence TEXT NOT NULL,
    domain TEXT,
    UNIQUE (corpus, source_id),
    CHECK (tier IN ('A', 'B', 'C')),
    CHECK ((recorded_date IS NULL AND recorded_date_source = 'none')
        OR (recorded_date IS NOT NULL AND recorded_date_source <> 'none'))
)
"""

CREATE_SPEAKER: Final = """
CREATE TABLE IF NOT EXISTS speaker (
    id INTEGER PRIMARY KEY,
    file_uuid TEXT NOT NULL REFERENCES media_file (file_uuid),
    name TEXT NOT NULL,
    UNIQUE (file_uuid, name)
)
"""

CREATE_TRANSCRIPT_SEGMENT: Final = """
CREATE TABLE IF NOT EXISTS transcript_segment (
    id INTEGER PRIMARY KEY,
    file_uuid TEXT NOT NULL REFERENCES media_file (file_uuid),
    turn_index INTEGER NOT NULL,
    speaker_id INTEGER NOT NULL REFERENCES speaker (id),
    start_time DOUBLE PRECISION NOT NULL,
    end_time DOUBLE PRECISION NOT NULL,
    text TEXT NOT NULL,
    words INTEGER NOT NULL,
    UNIQUE (file_uuid, turn_index),
    CHECK (end_time >= start_time),
    CHECK (words >= 0)
)
"""

# The chronological read: WHERE file_uuid = ? ORDER BY start_time, end_time, id.
CREATE_SEGMENT_CHRONO_INDEX: Final = """
CREATE INDEX IF NOT EXISTS transcript_segment_chrono
    ON transcript_segment (file_uuid, start_time, end_time, id)
"""

# Attendance (speaker_sessions) and the speaker deletes of a forced reinjection.
CREATE_SEGMENT_SPEAKER_INDEX: Final = """
CREATE INDEX IF NOT EXISTS transcript_segment_speaker ON transcript_segment (speaker_id)
"""

# The period filter (files_in_period).
CREATE_MEDIA_FILE_DATE_INDEX: Final = """
CREATE INDEX IF NOT EXISTS media_file_recorded_date ON media_file (recorded_date)
"""

SCHEMA: Final[tuple[str, ...]] = (
    CREATE_MEDIA_FILE,
    CREATE_SPEAKER,
    CREATE_TRANSCRIPT_SEGMENT,
    CREATE_SEGMENT_CHRONO_INDEX,
    CREATE_SEGMENT_SPEAKER_INDEX,
    CREATE_MEDIA_FILE_DATE_INDEX,
)

# One probe per table: a read-only open checks the schema is there before anything else.
SCHEMA_PROBES: Final[tuple[str, ...]] = (
    "SELECT file_uuid FROM media_file WHERE 1 = 0",
    "SELECT id FROM speaker WHERE 1 = 0",
    "SELECT id FROM transcript_segment WHERE 1 = 0",
)

# -- injection ---------------------------------------------------------------------------

SELECT_FILE_DATE: Final = """
SELECT recorded_date, recorded_date_source FROM media_file WHERE file_uuid = ?
"""

UPDATE_FILE_DATE: Final = """
UPDATE media_file SET recorded_date = ?, recorded_date_source = ? WHERE file_uuid = ?
"""

INSERT_MEDIA_FILE: Final = """
INSERT INTO media_file (file_uuid, corpus, source_id, title, recorded_date, recorded_date_source,
                        timings_real, tier, licence, domain)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

NEXT_SPEAKER_ID: Final = "SELECT COALESCE(MAX(id), 0) + 1 FROM speaker"

INSERT_SPEAKER: Final = "INSERT INTO speaker (id, file_uuid, name) VALUES (?, ?, ?)"

NEXT_SEGMENT_ID: Final = "SELECT COALESCE(MAX(id), 0) + 1 FROM transcript_segment"

INSERT_SEGMENT: Final = """
INSERT INTO transcript_segment (id, file_uuid, turn_index, speaker_id, start_time, end_time, text, words)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
"""

# A forced reinjection deletes children before parents (foreign keys).
DELETE_FILE_SEGMENTS: Final = "DELETE FROM transcript_segment WHERE file_uuid = ?"
DELETE_FILE_SPEAKERS: Final = "DELETE FROM speaker WHERE file_uuid = ?"
DELETE_MEDIA_FILE: Final = "DELETE FROM media_file WHERE file_uuid = ?"

# -- reads -------------------------------------------------------------------------------

SELECT_MEDIA_FILES: Final = """
SELECT m.file_uuid, m.corpus, m.source_id, m.title, m.recorded_date, m.recorded_date_source,
       m.timings_real, m.tier, m.licence, m.domain
FROM media_file m
ORDER BY m.file_uuid
"""

# Every segment of every file in turn order: what meetings() rebuilds Meeting.turns from.
SELECT_ALL_SEGMENTS_BY_TURN: Final = """
SELECT s.id, s.file_uuid, s.turn_index, sp.name, s.start_time, s.end_time, s.text, s.words
FROM transcript_segment s
JOIN speaker sp ON sp.id = s.speaker_id
ORDER BY s.file_uuid, s.turn_index, s.id
"""

# The chronological read. (start_time, end_time) alone is not a total order: a backchannel
# and the utterance it overlaps can share both; the id decides, the same way every time.
SELECT_SEGMENTS_CHRONOLOGICAL: Final = """
SELECT s.id, s.file_uuid, s.turn_index, sp.name, s.start_time, s.end_time, s.text, s.words
FROM transcript_segment s
JOIN speaker sp ON sp.id = s.speaker_id
WHERE s.file_uuid = ?
ORDER BY s.start_time, s.end_time, s.id
"""

# Files whose recorded_date falls in [start, end], both ends inclusive.
SELECT_FILES_IN_PERIOD: Final = """
SELECT m.file_uuid
FROM media_file m
WHERE m.recorded_date IS NOT NULL AND m.recorded_date >= ? AND m.recorded_date <= ?
ORDER BY m.file_uuid
"""

SELECT_UNDATED_FILES: Final = """
SELECT m.file_uuid
FROM media_file m
WHERE m.recorded_date IS NULL
ORDER BY m.file_uuid
"""

SELECT_FILE_UUIDS: Final = """
SELECT m.file_uuid
FROM media_file m
ORDER BY m.file_uuid
"""

# Candidate rows for phrase counting: a superset filter (see harness.store.phrases); the
# exact count is made in Python. No ORDER BY: the rows are summed, never listed.
SELECT_PHRASE_CANDIDATES: Final = """
SELECT s.file_uuid, s.text
FROM transcript_segment s
WHERE lower(s.text) LIKE ? ESCAPE '!'
"""

# Attendance: a speaker attended a file when they spoke in it at least once.
SELECT_ATTENDANCE: Final = """
SELECT sp.file_uuid, m.title, sp.name
FROM speaker sp
JOIN media_file m ON m.file_uuid = sp.file_uuid
WHERE EXISTS (SELECT 1 FROM transcript_segment s WHERE s.speaker_id = sp.id)
"""

COUNT_FILES: Final = "SELECT COUNT(*) FROM media_file"
COUNT_SEGMENTS: Final = "SELECT COUNT(*) FROM transcript_segment"
COUNT_SPEAKERS: Final = "SELECT COUNT(*) FROM speaker"

# -- engine-specific, kept here so no SQL lives anywhere else -----------------------------

# SQLite enforces REFERENCES only when asked, per connection. Postgres always does.
SQLITE_ENABLE_FOREIGN_KEYS: Final = "PRAGMA foreign_keys = ON"
# Take the write lock at BEGIN, so MAX(id) + 1 cannot race another writer.
SQLITE_BEGIN_WRITE: Final = "BEGIN IMMEDIATE"
COMMIT: Final = "COMMIT"
ROLLBACK: Final = "ROLLBACK"

# -- PostgreSQL only (harness/store/postgres.py) --------------------------------------------
#
# Postgres has no BEGIN IMMEDIATE. A write transaction takes EXCLUSIVE locks on the three
# tables right after BEGIN: other writers queue behind it (so MAX(id) + 1 cannot race, and
# two injections of one file cannot both take the insert path), while plain SELECTs (ACCESS
# SHARE) keep reading. That is SQLite's one-writer-many-readers rule, table for table.
# Identifiers cannot be bound as parameters; {schema} is filled in with
# psycopg.sql.Identifier after the name passed postgres.SCHEMA_NAME.

PG_BEGIN_WRITE: Final = "BEGIN"
PG_LOCK_TABLES: Final = "LOCK TABLE media_file, speaker, transcript_segment IN EXCLUSIVE MODE"
# Schema creation runs before the tables exist, so LOCK TABLE cannot serialise it; CREATE
# ... IF NOT EXISTS races in Postgres (duplicate pg_type rows), so concurrent openers queue
# on a transaction-scoped advisory lock instead. The key is arbitrary and fixed.
PG_SCHEMA_ADVISORY_LOCK: Final = "SELECT pg_advisory_xact_lock(?)"
PG_SCHEMA_LOCK_KEY: Final = 7_263_741_120_003
# CREATE INDEX IF NOT EXISTS takes a SHARE lock on its table even when the index exists.
# Against a writer holding the EXCLUSIVE locks that deadlocks (the opener holds one table,
# wants another), so a writable open creates the tables, then takes PG_LOCK_TABLES in the
# writers' order, then creates the indexes: one lock order for everyone.
PG_SCHEMA_TABLES: Final[tuple[str, ...]] = (CREATE_MEDIA_FILE, CREATE_SPEAKER, CREATE_TRANSCRIPT_SEGMENT)
PG_SCHEMA_INDEXES: Final[tuple[str, ...]] = tuple(s for s in SCHEMA if s not in PG_SCHEMA_TABLES)
PG_CREATE_SCHEMA: Final = "CREATE SCHEMA IF NOT EXISTS {schema}"
PG_SET_SEARCH_PATH: Final = "SET search_path TO {schema}"
PG_DROP_SCHEMA: Final = "DROP SCHEMA IF EXISTS {schema} CASCADE"
# A read-only open: every transaction of the session refuses writes (the server enforces it).
PG_SESSION_READ_ONLY: Final = "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"
# How long a writer waits for another writer's table lock (SQLite's busy timeout is 30 s).
PG_SET_LOCK_TIMEOUT: Final = "SET lock_timeout = '30s'"


# -- placeholders ------------------------------------------------------------------------


def _qmark(sql: str) -> str:
    return sql


def _format(sql: str) -> str:
    """``?`` -> ``%s`` outside quoted literals; a literal ``%`` doubles (psycopg's rule)."""
    out: list[str] = []
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
            out.append(ch)
        elif ch == "%":
            out.append("%%")
        elif ch == "?" and not quoted:
            out.append("%s")
        else:
            out.append(ch)
    if quoted:
        raise ValueError(f"unterminated string literal in SQL: {sql!r}")
    return "".join(out)


# DB-API paramstyle -> renderer. sqlite3 uses qmark; psycopg uses format.
PARAMSTYLES: Final[dict[str, Callable[[str], str]]] = {"qmark": _qmark, "format": _format}


def render(sql: str, paramstyle: str) -> str:
    """A statement from this module in the placeholder style of one DB-API driver."""
    try:
        return PARAMSTYLES[paramstyle](sql)
    except KeyError as e:
        raise ValueError(f"unknown paramstyle {paramstyle!r}; expected one of {sorted(PARAMSTYLES)}") from e


def statements() -> dict[str, str]:
    """Every SQL constant of this module by name (what the ORDER BY guard reads).

    A tuple of statements contributes each member as ``NAME[i]``.
    """
    found: dict[str, str] = {}
    for name, value in globals().items():
        if not name.isupper() or name.startswith("_"):
            continue
        if isinstance(value, str):
            found[name] = value
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            found.update({f"{name}[{i}]": v for i, v in enumerate(value)})
    return found
