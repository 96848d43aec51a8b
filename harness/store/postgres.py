"""The stack's store: PostgreSQL through psycopg 3, the same schema and statements as SQLite.

A store lives in one schema of one database: ``PostgresStore.open(dsn, schema=...)``
creates the schema if needed and sets ``search_path`` to it, so tests and states can
share a server without seeing each other's rows. Without ``schema`` the DSN's default
search path is used (``public`` on a plain server).

The connection runs in autocommit mode and every write transaction is explicit: BEGIN,
then EXCLUSIVE locks on the three tables (the counterpart of SQLite's BEGIN IMMEDIATE,
see :mod:`harness.store.sql`), so ``MAX(id) + 1`` id allocation cannot race another
writer while plain readers carry on. A read-only open sets the session read-only, so the
server itself refuses a write, and refuses a schema that holds no store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from harness.errors import UsageError, mask_secrets, one_line
from harness.store import sql
from harness.store.base import Row, SqlStore

if TYPE_CHECKING:
    import psycopg

# An unquoted lower-case identifier: what a schema may be called (it is also quoted).
SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
CONNECT_TIMEOUT_S: Final = 10
APPLICATION_NAME: Final = "ragsweep-store"


@cache
def _rendered(statement: str) -> str:
    return sql.render(statement, "format")


def _connect(dsn: str) -> psycopg.Connection[Any]:
    """Connect; every refusal is one line that never shows the DSN's password (mask_secrets), in any form."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError as e:
        raise UsageError("the Postgres store needs psycopg 3: pip install 'ragsweep[stack]'") from e
    try:
        conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as e:
        # libpq quotes the text it stopped at, which may be part of the password: neither is printed
        raise UsageError("RAGSWEEP_PG_DSN is not a connection string libpq can parse (it is not printed: it may "
                         "hold a password); expected key=value pairs, a value with spaces in single quotes "
                         "(dbname='a b'), or a postgresql:// URL") from e
    try:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name=APPLICATION_NAME)
    except psycopg.OperationalError as e:
        # the DSN last: a bare masked value runs to the next space
        raise UsageError(f"cannot connect to PostgreSQL: {one_line(str(e))}; is the stack up (make stack-up) and "
                         f"RAGSWEEP_PG_DSN right? It is {mask_secrets(dsn)}") from e


def _check_schema_name(schema: str) -> str:
    if not SCHEMA_NAME.fullmatch(schema):
        raise UsageError(f"schema name {schema!r} is not a lower-case SQL identifier "
                         "([a-z_][a-z0-9_]*, at most 63 characters); pick another")
    return schema


def _with_schema(statement: str, schema: str) -> Any:
    from psycopg import sql as pgsql

    return pgsql.SQL(statement).format(schema=pgsql.Identifier(_check_schema_name(schema)))


class PostgresStore(SqlStore):
    """psycopg's paramstyle is format: statements are rendered ``?`` -> ``%s``."""

    def __init__(self, connection: psycopg.Connection[Any], *, schema: str | None, readonly: bool) -> None:
        self._conn = connection
        self.schema = schema
        self.readonly = readonly

    @classmethod
    def open(cls, dsn: str, *, schema: str | None = None, readonly: bool = False) -> PostgresStore:
        """Open a store: writable (schema and tables created if missing) or read-only."""
        if schema is not None:
            _check_schema_name(schema)
        conn = _connect(dsn)
        try:
            store = cls(conn, schema=schema, readonly=readonly)
            store._execute(sql.PG_SET_LOCK_TIMEOUT)
            if readonly:
                store._prepare_readonly()
            else:
                store._prepare_writable()
        except BaseException:
            conn.close()
            raise
        return store

    def _prepare_writable(self) -> None:
        self._conn.execute(_rendered(sql.PG_BEGIN_WRITE))
        try:
            self._execute(sql.PG_SCHEMA_ADVISORY_LOCK, (sql.PG_SCHEMA_LOCK_KEY,))
            if self.schema is not None:
                self._conn.execute(_with_schema(sql.PG_CREATE_SCHEMA, self.schema))
                self._conn.execute(_with_schema(sql.PG_SET_SEARCH_PATH, self.schema))
            for statement in sql.PG_SCHEMA_TABLES:
                self._execute(statement)
            self._execute(sql.PG_LOCK_TABLES)
            for statement in sql.PG_SCHEMA_INDEXES:
                self._execute(statement)
        except BaseException:
            self._conn.execute(_rendered(sql.ROLLBACK))
            raise
        self._conn.execute(_rendered(sql.COMMIT))
        if self.schema is not None:
            # SET inside a committed transaction persists for the session; set it again
            # outside one anyway, so the session's path never depends on that rule.
            self._conn.execute(_with_schema(sql.PG_SET_SEARCH_PATH, self.schema))

    def _prepare_readonly(self) -> None:
        import psycopg

        if self.schema is not None:
            self._conn.execute(_with_schema(sql.PG_SET_SEARCH_PATH, self.schema))
        self._execute(sql.PG_SESSION_READ_ONLY)
        try:
            for probe in sql.SCHEMA_PROBES:
                self._fetch(probe)
        except psycopg.Error as e:
            where = f"schema {self.schema!r}" if self.schema else "the default search_path"
            raise UsageError(f"no store in {where} ({str(e).strip()}); expected one written by an "
                             "injection: inject first, or check the schema name") from e

    @classmethod
    def drop_schema(cls, dsn: str, schema: str) -> None:
        """Delete a schema and every store table in it (tests, and throwaway states)."""
        conn = _connect(dsn)
        try:
            conn.execute(_with_schema(sql.PG_DROP_SCHEMA, schema))
        finally:
            conn.close()

    # -- DB-API primitives -------------------------------------------------------------

    def _fetch(self, statement: str, params: Sequence[object] = ()) -> list[Row]:
        # Always pass a params sequence: psycopg only un-doubles a literal %% when it
        # processes placeholders, and render() doubles every literal %.
        return self._conn.execute(_rendered(statement), tuple(params)).fetchall()

    def _execute(self, statement: str, params: Sequence[object] = ()) -> None:
        self._conn.execute(_rendered(statement), tuple(params))

    def _executemany(self, statement: str, rows: Sequence[Sequence[object]]) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(_rendered(statement), rows)

    @contextmanager
    def _write_transaction(self) -> Iterator[None]:
        self._execute(sql.PG_BEGIN_WRITE)
        try:
            self._execute(sql.PG_LOCK_TABLES)
            yield
        except BaseException:
            self._execute(sql.ROLLBACK)
            raise
        self._execute(sql.COMMIT)

    def close(self) -> None:
        self._conn.close()
