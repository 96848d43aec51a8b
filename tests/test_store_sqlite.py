"""The store's shared suite: every engine passes the same tests.

Parametrized over store factories. A factory takes a fresh directory and returns an
empty, writable store. The Postgres engine runs against the local stack (RAGSWEEP_PG_DSN,
from `make stack-up`): each store gets its own schema, and every schema this module made
is dropped when it ends. Without the setting the Postgres cases skip with the reason,
unless RAGSWEEP_REQUIRE_STACK=1, where that is a failure. Engine-specific behaviour
(SQLite's read-only URI; Postgres's table lock and read-only session) is tested at the end.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import date
from pathlib import Path

import pytest

from harness.errors import InputDataError, UsageError
from harness.model import Meeting, Turn, file_uuid_for, word_count
from harness.store import (
    InjectReport,
    PeriodFiles,
    PostgresStore,
    SpeakerSessions,
    SqliteStore,
    Store,
    StoreStats,
)

StoreFactory = Callable[[Path], Store]


def _sqlite(directory: Path) -> Store:
    return SqliteStore.open(directory / "store.sqlite")


def _pg_dsn() -> str:
    """The stack's DSN, or a skip (a failure under RAGSWEEP_REQUIRE_STACK=1)."""
    dsn = os.environ.get("RAGSWEEP_PG_DSN")
    reason = None
    if not dsn:
        reason = "RAGSWEEP_PG_DSN is unset: the local stack is not up (run `make stack-up`)"
    else:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            reason = "psycopg is not installed (pip install 'ragsweep[stack]')"
    if reason:
        if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
            pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
        pytest.skip(reason)
    assert dsn
    return dsn


class _PostgresStores:
    """A fresh schema per store, named after this module and run; all dropped at module end."""

    def __init__(self, module: str) -> None:
        self.prefix = f"{module}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.schemas: list[str] = []

    def new_schema(self) -> str:
        self.schemas.append(f"{self.prefix}_{len(self.schemas)}")
        return self.schemas[-1]

    def __call__(self, directory: Path) -> Store:
        dsn = _pg_dsn()
        return PostgresStore.open(dsn, schema=self.new_schema())

    def drop_all(self) -> None:
        dsn = os.environ.get("RAGSWEEP_PG_DSN")
        while dsn and self.schemas:
            PostgresStore.drop_schema(dsn, self.schemas.pop())


_postgres = _PostgresStores("t_store")


@pytest.fixture(scope="module", autouse=True)
def _drop_postgres_schemas() -> Iterator[None]:
    yield
    _postgres.drop_all()


STORE_FACTORIES = [
    pytest.param(_sqlite, id="sqlite"),
    pytest.param(_postgres, id="postgres", marks=pytest.mark.integration),
]


@pytest.fixture(params=STORE_FACTORIES)
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Makes fresh, empty stores (several per test where needed); closes them after."""
    factory: StoreFactory = request.param
    opened: list[Store] = []

    def make() -> Store:
        directory = tmp_path / f"store{len(opened)}"
        directory.mkdir()
        opened.append(factory(directory))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(new_store: Callable[[], Store]) -> Store:
    return new_store()


# -- hand-built meetings ------------------------------------------------------------------

Line = tuple[str, float, float, str]


def _meeting(source_id: str, title: str, lines: Sequence[Line], recorded: date | None) -> Meeting:
    return Meeting(
        corpus="hand", source_id=source_id, file_uuid=file_uuid_for("hand", source_id), title=title,
        recorded_date=recorded, recorded_date_source="corpus" if recorded else "none",
        timings_real=True, tier="A", licence="CC0-1.0",
        turns=tuple(Turn(index=i, speaker=who, start=a, end=b, text=text, words=word_count(text))
                    for i, (who, a, b, text) in enumerate(lines)))


PHRASE = "Cedar Lantern audit"

# Turn order is not time order. Turns 0 and 1 share an onset (the methodology's 471.983
# case: a 10 ms backchannel over a 1.25 s utterance); turns 2 and 3 share start and end.
# Chronological (start, end, id) with ids in turn order: 4, 1, 0, 2, 3.
ALPHA = _meeting("alpha", "Cedar — standup #1", [
    ("Alice", 471.983, 473.233, "I mean, if you did it at the start we defer the Cedar Lantern audit."),
    ("Bob", 471.983, 471.993, "Uh-huh."),
    ("Carol", 480.0, 481.0, "Right."),
    ("Bob", 480.0, 481.0, "Right."),
    ("Alice", 12.5, 20.0, "Earlier: cedar lantern AUDIT, and again the Cedar  Lantern audit."),
], date(2025, 3, 4))
ALPHA_CHRONOLOGICAL = [4, 1, 0, 2, 3]

BETA = _meeting("beta", "Cedar — standup #2", [
    ("Alice", 0.0, 5.0, "We keep saying the Cedar Lantern"),       # split across segments: 0
    ("Alice", 5.0, 9.0, "audit is next week."),
    ("Dave", 9.0, 10.0, "Cedar Lantern audits are boring."),        # audits: 0
    ("Dave", 10.0, 11.0, "The xCedar Lantern audit, the Cedar Lantern auditor."),  # 0
    ("Alice", 11.0, 12.0, "So: the CEDAR LANTERN AUDIT."),          # 1
], date(2025, 3, 31))

GAMMA = _meeting("gamma", "Cedar — retro #1", [
    ("Carol", 0.0, 1.0, "Cedar Lantern audit"),                      # 1
    ("Alice", 1.0, 2.0, "ok"),
], date(2025, 4, 1))

DELTA = _meeting("delta", "Birch — standup #1", [
    ("Bob", 0.0, 1.0, "one"),
    ("Bob", 1.0, 2.0, "two"),
    ("Erin", 2.0, 3.0, "Cedar Lantern"),
    ("Bob", 3.0, 4.0, "three"),
], None)

CORPUS = (ALPHA, BETA, GAMMA, DELTA)
SEGMENTS = sum(len(m.turns) for m in CORPUS)   # 5 + 5 + 2 + 4 = 16
SPEAKERS = 3 + 2 + 2 + 2                        # distinct names per file


def _uuids(*meetings: Meeting) -> tuple[str, ...]:
    return tuple(sorted(m.file_uuid for m in meetings))


def _with(meeting: Meeting, **changes: object) -> Meeting:
    """A validated copy with some fields changed."""
    return Meeting.model_validate({**meeting.model_dump(), **changes})


def _redated(meeting: Meeting, recorded: date | None) -> Meeting:
    return _with(meeting, recorded_date=recorded, recorded_date_source="corpus" if recorded else "none")


def _retexted(meeting: Meeting, text: str) -> Meeting:
    turns = [t.model_dump() for t in meeting.turns]
    turns[0] = {**turns[0], "text": text, "words": word_count(text)}
    return _with(meeting, turns=turns)


# -- injection ----------------------------------------------------------------------------


def test_inject_then_read_back_round_trips_every_field(store: Store) -> None:
    report = store.inject(CORPUS)
    assert report == InjectReport(inserted=4, segments_written=SEGMENTS)
    assert store.meetings() == sorted(CORPUS, key=lambda m: m.file_uuid)
    assert store.stats() == StoreStats(files=4, segments=SEGMENTS, speakers=SPEAKERS)


def test_inject_is_idempotent(store: Store) -> None:
    store.inject(CORPUS)
    before = {m.file_uuid: store.segments(m.file_uuid) for m in CORPUS}
    assert store.inject(CORPUS) == InjectReport(skipped=4)
    assert {m.file_uuid: store.segments(m.file_uuid) for m in CORPUS} == before
    assert store.stats() == StoreStats(files=4, segments=SEGMENTS, speakers=SPEAKERS)


def test_segment_ids_do_not_depend_on_the_order_meetings_arrive_in(new_store: Callable[[], Store]) -> None:
    forward, backward = new_store(), new_store()
    forward.inject(CORPUS)
    backward.inject(tuple(reversed(CORPUS)))
    for m in CORPUS:
        assert forward.segments(m.file_uuid) == backward.segments(m.file_uuid)


def test_segment_ids_follow_turn_order_within_a_file(store: Store) -> None:
    store.inject(CORPUS)
    for m in CORPUS:
        by_turn = sorted(store.segments(m.file_uuid), key=lambda s: s.turn_index)
        ids = [s.id for s in by_turn]
        assert ids == list(range(ids[0], ids[0] + len(m.turns)))


def test_a_file_twice_in_one_batch_is_refused(store: Store) -> None:
    with pytest.raises(InputDataError, match="more than once"):
        store.inject([ALPHA, BETA, ALPHA])
    assert store.stats() == StoreStats(files=0, segments=0, speakers=0)


def test_a_meeting_without_turns_is_stored_and_read_back(store: Store) -> None:
    empty = _meeting("empty", "nothing said", [], None)
    assert store.inject([empty]) == InjectReport(inserted=1)
    assert store.meetings() == [empty]
    assert store.segments(empty.file_uuid) == []


def test_a_failed_file_leaves_no_partial_rows(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.inject([BETA])
    real = store._executemany  # type: ignore[attr-defined]

    def failing(statement: str, rows: Sequence[Sequence[object]]) -> None:
        if "transcript_segment" in statement:
            raise RuntimeError("disk full")
        real(statement, rows)

    monkeypatch.setattr(store, "_executemany", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        store.inject([ALPHA, GAMMA])
    monkeypatch.undo()
    # the file that failed rolled back whole (media_file and speakers too); BETA untouched
    assert [m.file_uuid for m in store.meetings()] == [BETA.file_uuid]
    assert store.stats() == StoreStats(files=1, segments=5, speakers=2)
    assert store.inject(CORPUS).inserted == 3


# -- skip path and force ------------------------------------------------------------------


def test_skip_path_refreshes_the_date_and_nothing_else(store: Store) -> None:
    store.inject(CORPUS)
    segments_before = store.segments(ALPHA.file_uuid)
    changed = _with(_redated(_retexted(ALPHA, "rewritten text"), date(2025, 5, 5)), title="renamed")

    assert store.inject([changed]) == InjectReport(skipped=1, dates_refreshed=1)
    assert store.segments(ALPHA.file_uuid) == segments_before        # no segment rewritten
    stored = next(m for m in store.meetings() if m.file_uuid == ALPHA.file_uuid)
    assert stored == _redated(ALPHA, date(2025, 5, 5))               # title kept, date new
    assert store.files_in_period(date(2025, 5, 1), date(2025, 5, 31)).files == _uuids(ALPHA)

    # the same date again: skipped, nothing refreshed
    assert store.inject([changed]) == InjectReport(skipped=1)
    # a date can be withdrawn too: the file becomes undated
    assert store.inject([_redated(ALPHA, None)]) == InjectReport(skipped=1, dates_refreshed=1)
    assert store.files_in_period(date(2025, 1, 1), date(2025, 12, 31)).undated == _uuids(ALPHA, DELTA)
    assert store.stats() == StoreStats(files=4, segments=SEGMENTS, speakers=SPEAKERS)


def test_force_rewrites_the_file(store: Store) -> None:
    store.inject(CORPUS)
    changed = _redated(_retexted(ALPHA, "rewritten text"), date(2025, 5, 5))
    report = store.inject([changed, BETA], force=True)
    assert report == InjectReport(replaced=2, segments_written=len(ALPHA.turns) + len(BETA.turns))
    assert [s.text for s in store.segments(ALPHA.file_uuid) if s.turn_index == 0] == ["rewritten text"]
    assert next(m for m in store.meetings() if m.file_uuid == ALPHA.file_uuid) == changed
    assert store.stats() == StoreStats(files=4, segments=SEGMENTS, speakers=SPEAKERS)


# -- the total chronological order ----------------------------------------------------------


def test_segments_read_in_start_end_id_order(store: Store) -> None:
    store.inject(CORPUS)
    segments = store.segments(ALPHA.file_uuid)
    assert [s.turn_index for s in segments] == ALPHA_CHRONOLOGICAL
    # the backchannel (10 ms, inserted after) sorts before the utterance sharing its onset
    assert [(s.start_time, s.end_time, s.speaker) for s in segments[1:3]] == [
        (471.983, 471.993, "Bob"), (471.983, 473.233, "Alice")]
    # equal start and end: the id decides
    assert [s.speaker for s in segments[3:]] == ["Carol", "Bob"]
    assert segments[3].id < segments[4].id
    keys = [(s.start_time, s.end_time, s.id) for s in segments]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_chronological_order_survives_delete_and_reinsert(store: Store) -> None:
    store.inject(CORPUS)
    first = min(CORPUS, key=lambda m: m.file_uuid)   # its ids were the lowest
    before = store.segments(first.file_uuid)
    highest = max(s.id for m in CORPUS for s in store.segments(m.file_uuid))
    store.inject([first], force=True)
    after = store.segments(first.file_uuid)
    # genuinely new rows (new ids above every old one), in the same order
    assert min(s.id for s in after) > highest
    assert [s.turn_index for s in after] == [s.turn_index for s in before]
    assert [(s.speaker, s.start_time, s.end_time, s.text) for s in after] == [
        (s.speaker, s.start_time, s.end_time, s.text) for s in before]


def test_segments_of_an_unknown_file_are_empty(store: Store) -> None:
    store.inject(CORPUS)
    assert store.segments(file_uuid_for("hand", "nope")) == []


# -- the period filter --------------------------------------------------------------------


@pytest.mark.parametrize(("start", "end", "inside"), [
    (date(2025, 3, 1), date(2025, 3, 31), (ALPHA, BETA)),      # end is inclusive
    (date(2025, 3, 31), date(2025, 4, 1), (BETA, GAMMA)),      # so is start
    (date(2025, 3, 4), date(2025, 3, 4), (ALPHA,)),            # a one-day period
    (date(2025, 3, 5), date(2025, 3, 30), ()),
    (date(2000, 1, 1), date(2099, 12, 31), (ALPHA, BETA, GAMMA)),
])
def test_files_in_period_excludes_undated_files_and_reports_them(
        store: Store, start: date, end: date, inside: tuple[Meeting, ...]) -> None:
    store.inject(CORPUS)
    assert store.files_in_period(start, end) == PeriodFiles(files=_uuids(*inside), undated=_uuids(DELTA))


def test_files_in_period_refuses_a_reversed_period(store: Store) -> None:
    with pytest.raises(UsageError, match="after it ends"):
        store.files_in_period(date(2025, 4, 1), date(2025, 3, 1))


# -- phrase occurrences -------------------------------------------------------------------


def test_count_phrase_occurrences_over_the_store(store: Store) -> None:
    store.inject(CORPUS)
    # ALPHA: turn 0 once, turn 4 twice (case and a double space) = 3. BETA: only turn 4
    # (a phrase split across turns 0-1, "audits", "xCedar", "auditor" do not count) = 1.
    # GAMMA: 1. DELTA: "Cedar Lantern" alone = 0.
    assert store.count_phrase_occurrences(PHRASE) == 5
    assert store.count_phrase_occurrences("cedar LANTERN audit") == 5
    assert store.count_phrase_occurrences(PHRASE, [ALPHA.file_uuid]) == 3
    assert store.count_phrase_occurrences(PHRASE, {BETA.file_uuid, GAMMA.file_uuid, DELTA.file_uuid}) == 2
    assert store.count_phrase_occurrences(PHRASE, []) == 0
    # the shorter phrase: ALPHA 1+2, BETA 1+1+1+1 ("auditor" now follows a whole
    # "Cedar Lantern"; "xCedar" still does not count), GAMMA 1, DELTA 1 = 9
    assert store.count_phrase_occurrences("Cedar Lantern") == 9
    assert store.count_phrase_occurrences("Right") == 2
    assert store.count_phrase_occurrences("100% sure") == 0


def test_count_phrase_occurrences_reads_non_ascii_case_folds(store: Store) -> None:
    dotted = _meeting("dotted", "t", [("A", 0.0, 1.0, "CEDAR LANTERN AUD\u0130T, ta\u017fk")], None)
    store.inject([dotted])
    assert store.count_phrase_occurrences(PHRASE) == 1
    assert store.count_phrase_occurrences("task") == 1


def test_count_phrase_occurrences_refuses_a_scope_the_store_does_not_hold(store: Store) -> None:
    store.inject(CORPUS)
    with pytest.raises(UsageError, match="not in the store"):
        store.count_phrase_occurrences(PHRASE, [ALPHA.file_uuid, file_uuid_for("hand", "nope")])
    with pytest.raises(UsageError, match="not one string"):
        store.count_phrase_occurrences(PHRASE, ALPHA.file_uuid)
    with pytest.raises(UsageError, match="empty"):
        store.count_phrase_occurrences(" ")


# -- speaker sessions ---------------------------------------------------------------------


@pytest.mark.parametrize(("title_like", "expected"), [
    # Cedar standups: ALPHA (Alice, Bob, Carol) and BETA (Alice, Dave)
    ("Cedar — standup%", [("Alice", 2), ("Bob", 1), ("Carol", 1), ("Dave", 1)]),
    # all standups: Bob also attended DELTA, where he spoke three times: one session
    ("%standup%", [("Alice", 2), ("Bob", 2), ("Carol", 1), ("Dave", 1), ("Erin", 1)]),
    ("cedar — RETRO%", [("Alice", 1), ("Carol", 1)]),
    ("Cedar", []),
])
def test_speaker_sessions_count_files_in_title_scope(
        store: Store, title_like: str, expected: list[tuple[str, int]]) -> None:
    store.inject(CORPUS)
    sessions = store.speaker_sessions(title_like)
    assert sessions == [SpeakerSessions(name, n) for name, n in expected]


def test_speaker_sessions_refuses_an_empty_pattern(store: Store) -> None:
    with pytest.raises(UsageError, match="empty"):
        store.speaker_sessions("")


# -- SQLite only: the read-only open --------------------------------------------------------


def test_sqlite_read_only_opens_share_a_file_and_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with SqliteStore.open(path) as writer:
        writer.inject(CORPUS)
    with SqliteStore.open(path, readonly=True) as one, SqliteStore.open(path, readonly=True) as two:
        assert one.meetings() == two.meetings() == sorted(CORPUS, key=lambda m: m.file_uuid)
        assert one.count_phrase_occurrences(PHRASE) == 5
        with pytest.raises(UsageError, match="read-only"):
            one.inject(CORPUS)
        # not only the Python check: the connection itself is read-only (mode=ro)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            two._execute("DELETE FROM media_file")


def test_sqlite_read_only_open_of_a_missing_store_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing.sqlite"
    with pytest.raises(UsageError, match="inject first"):
        SqliteStore.open(path, readonly=True)
    assert not path.exists()


def test_sqlite_read_only_open_of_a_file_without_the_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    sqlite3.connect(path).close()
    with pytest.raises(UsageError, match="read-only"):
        SqliteStore.open(path, readonly=True)


def test_sqlite_store_satisfies_the_protocol(tmp_path: Path) -> None:
    store: Store = SqliteStore.open(tmp_path / "s.sqlite")
    store.close()


# -- Postgres only: the table lock, the read-only session, the schema -----------------------


@pytest.fixture
def pg_schema() -> str:
    _pg_dsn()
    return _postgres.new_schema()


@pytest.mark.integration
def test_postgres_writers_queue_on_the_table_lock(pg_schema: str) -> None:
    dsn = _pg_dsn()
    with PostgresStore.open(dsn, schema=pg_schema) as holder, \
            PostgresStore.open(dsn, schema=pg_schema) as waiter:
        waiter._execute("SET lock_timeout = '300ms'")
        with holder._write_transaction():
            # a second writer cannot take the lock while the first holds it ...
            with pytest.raises(Exception, match="lock timeout"):
                waiter.inject([ALPHA])
            # ... while a plain reader is not blocked
            assert waiter.stats() == StoreStats(files=0, segments=0, speakers=0)
        assert waiter.inject([ALPHA]) == InjectReport(inserted=1, segments_written=len(ALPHA.turns))


@pytest.mark.integration
def test_postgres_concurrent_injections_allocate_disjoint_ids(pg_schema: str) -> None:
    dsn = _pg_dsn()
    many = [_meeting(f"m{i:02d}", f"t{i}", [(f"S{j % 3}", float(j), j + 1.0, f"w{j}") for j in range(20)], None)
            for i in range(24)]
    PostgresStore.open(dsn, schema=pg_schema).close()
    errors: list[BaseException] = []

    def inject(part: list[Meeting]) -> None:
        try:
            with PostgresStore.open(dsn, schema=pg_schema) as store:
                store.inject(part)
        except BaseException as e:  # re-raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=inject, args=(many[k::4],)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with PostgresStore.open(dsn, schema=pg_schema, readonly=True) as store:
        assert store.stats() == StoreStats(files=24, segments=24 * 20, speakers=24 * 3)
        ids = [s.id for m in many for s in store.segments(m.file_uuid)]
        assert sorted(ids) == list(range(1, 24 * 20 + 1))        # no id taken twice, none burnt
        for m in many:                                            # each file's ids contiguous
            own = sorted(s.id for s in store.segments(m.file_uuid))
            assert own == list(range(own[0], own[0] + 20))


@pytest.mark.integration
def test_postgres_read_only_open_cannot_write_and_needs_a_store(pg_schema: str) -> None:
    dsn = _pg_dsn()
    import psycopg

    with pytest.raises(UsageError, match="inject first"):
        PostgresStore.open(dsn, schema=pg_schema, readonly=True)
    with PostgresStore.open(dsn, schema=pg_schema) as writer:
        writer.inject(CORPUS)
    with PostgresStore.open(dsn, schema=pg_schema, readonly=True) as reader:
        assert reader.meetings() == sorted(CORPUS, key=lambda m: m.file_uuid)
        with pytest.raises(UsageError, match="read-only"):
            reader.inject(CORPUS)
        # not only the Python check: the server refuses the session's writes
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader._execute("DELETE FROM media_file")


@pytest.mark.integration
def test_postgres_schemas_isolate_stores_and_drop_cleanly(pg_schema: str) -> None:
    dsn = _pg_dsn()
    other = _postgres.new_schema()
    with PostgresStore.open(dsn, schema=pg_schema) as one, PostgresStore.open(dsn, schema=other) as two:
        one.inject(CORPUS)
        assert two.stats() == StoreStats(files=0, segments=0, speakers=0)
    PostgresStore.drop_schema(dsn, other)
    with pytest.raises(UsageError, match="inject first"):
        PostgresStore.open(dsn, schema=other, readonly=True)


def test_postgres_refuses_a_schema_name_that_is_not_an_identifier() -> None:
    with pytest.raises(UsageError, match="identifier"):
        PostgresStore.open("postgresql://nobody@127.0.0.1:1/none", schema="x; DROP TABLE y")


def test_postgres_schema_split_covers_the_portable_schema_in_order() -> None:
    from harness.store import sql

    assert sql.PG_SCHEMA_TABLES + sql.PG_SCHEMA_INDEXES == sql.SCHEMA
    assert all("CREATE TABLE" in s for s in sql.PG_SCHEMA_TABLES)
    assert all("CREATE INDEX" in s for s in sql.PG_SCHEMA_INDEXES)
