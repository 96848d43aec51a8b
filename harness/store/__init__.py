"""Store stage: the relational store of meetings and segments.

One interface (:class:`Store`), written once over DB-API (:class:`SqlStore`), with the
embedded engine on SQLite (:class:`SqliteStore`) and the stack's on PostgreSQL
(:class:`PostgresStore`, psycopg imported lazily); both run the same statements
(:mod:`harness.store.sql`) and pass the same tests. See docs/store.md.
"""

from harness.store.base import SqlStore
from harness.store.phrases import count_occurrences, like_needle, phrase_regex
from harness.store.postgres import PostgresStore
from harness.store.protocol import Store
from harness.store.records import InjectReport, PeriodFiles, Segment, SpeakerSessions, StoreStats
from harness.store.sqlite import SqliteStore

__all__ = [
    "InjectReport",
    "PeriodFiles",
    "PostgresStore",
    "Segment",
    "SpeakerSessions",
    "SqlStore",
    "SqliteStore",
    "Store",
    "StoreStats",
    "count_occurrences",
    "like_needle",
    "phrase_regex",
]
