"""The embedded store: stdlib sqlite3, the same schema and statements as Postgres.

Writers open the file writable (the schema is created if missing); readers, possibly
many processes at once, open it with a ``file:...?mode=ro`` URI so that a read-only
open cannot write even by mistake. The default rollback journal is kept, not WAL: a WAL
database cannot be opened read-only from read-only media (its ``-shm`` file must be
writable), which is how an arm Job mounts a prepared store.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Final

from harness.errors import UsageError
from harness.store import sql
from harness.store.base import Row, SqlStore

# Seconds a connection waits on another process's lock before failing.
BUSY_TIMEOUT_S: Final = 30.0


class SqliteStore(SqlStore):
    """sqlite3's paramstyle is qmark, the style the statements are written in."""

    def __init__(self, connection: sqlite3.Connection, path: Path, *, readonly: bool) -> None:
        self._conn = connection
        self.path = path
        self.readonly = readonly

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, readonly: bool = False) -> SqliteStore:
        """Open a store file: writable (created with its schema if missing) or read-only."""
        target = Path(path)
        return cls._open_readonly(target) if readonly else cls._open_writable(target)

    @classmethod
    def _open_writable(cls, path: Path) -> SqliteStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: the driver opens no implicit transactions; we BEGIN ourselves.
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        store = cls(conn, path, readonly=False)
        store._execute(sql.SQLITE_ENABLE_FOREIGN_KEYS)
        with store._write_transaction():
            for statement in sql.SCHEMA:
                store._execute(statement)
        return store

    @classmethod
    def _open_readonly(cls, path: Path) -> SqliteStore:
        uri = path.resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            for probe in sql.SCHEMA_PROBES:
                conn.execute(probe).fetchall()
        except sqlite3.Error as e:
            raise UsageError(f"cannot open store {path} read-only ({e}); expected a store file "
                             "written by an injection: inject first, or check the path") from e
        return cls(conn, path, readonly=True)

    def _fetch(self, statement: str, params: Sequence[object] = ()) -> list[Row]:
        return self._conn.execute(statement, params).fetchall()

    def _execute(self, statement: str, params: Sequence[object] = ()) -> None:
        self._conn.execute(statement, params)

    def _executemany(self, statement: str, rows: Sequence[Sequence[object]]) -> None:
        self._conn.executemany(statement, rows)

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        self._conn.execute(sql.SQLITE_BEGIN_WRITE)
        try:
            yield
        except BaseException:
            self._conn.execute(sql.ROLLBACK)
            raise
        self._conn.execute(sql.COMMIT)

    def _date_param(self, value: date | None) -> object:
        # ISO text, not sqlite3's default date adapter (deprecated since Python 3.12);
        # ISO dates compare as text in the same order as dates.
        return None if value is None else value.isoformat()

    def close(self) -> None:
        self._conn.close()
