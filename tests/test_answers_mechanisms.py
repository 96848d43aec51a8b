"""The mechanisms and answerers over a real (small) state: a generated synthetic corpus in
the embedded index and the SQLite store, reached only through their interfaces. The
embedder is a deterministic stand-in; answers never use vectors."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import date
from typing import Any

import numpy as np
import pytest

from harness.answers import (
    Answer,
    Intent,
    ScoringPolicy,
    Sources,
    answers_block,
    evaluate_answers,
    execute,
    make_answerer,
)
from harness.answers.results import AnswerSettings
from harness.errors import IntegrityError
from harness.model import Corpus, Query
from harness.state import State
from harness.state.build import build_state
from harness.store import PeriodFiles, SpeakerSessions, SqliteStore
from harness.synthetic.adapter import read_synthetic
from harness.synthetic.folders import write_files
from harness.synthetic.generator import generate

SEED = 20260812


class HashEmbedder:
    identity = "hash-embedder@test"
    dimension = 8

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], dtype=np.uint8)[:8].astype(np.float32) + 1
                for t in texts]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> State:
    root = tmp_path_factory.mktemp("answers")
    write_files(root / "corpus", generate(SEED, 40, "easy"))
    corpus = read_synthetic(root / "corpus")
    build_state(root / "state", [corpus], {"header": HashEmbedder()})
    return State.open(root / "state")


@pytest.fixture(scope="module")
def corpus(state: State) -> Corpus:
    return state.corpora[0]


@pytest.fixture()
def store(state: State) -> Iterator[SqliteStore]:
    with SqliteStore.open(state.store_path(), readonly=True) as opened:
        yield opened


def _aggregation(corpus: Corpus) -> list[Query]:
    return [q for q in corpus.queries if q.scored_on == "answer"]


@pytest.mark.parametrize("name", ["reference", "product"])
def test_answerer_is_exact_on_every_rule(name: str, state: State, corpus: Corpus, store: SqliteStore) -> None:
    block = answers_block([corpus], Sources(search=state.index, store=store), AnswerSettings(answerer=name))
    rows = {r["rule"]: r for r in block["rows"]}
    assert set(rows) == {"all", "R3-agg-count-files", "R4-agg-list-files", "R5-agg-count-events",
                         "R6-agg-speaker-top", "R7-agg-temporal-count"}
    misses = {qid: r for qid, r in block["per_query"].items() if r["measures"]["EM"] != 1.0}
    assert not misses
    assert rows["all"]["n"] == len(_aggregation(corpus)) and rows["all"]["unanswered"] == 0
    assert rows["R4-agg-list-files"]["measures"]["setF1"] == 1.0
    assert block["answerer"]["is_production_path"] is False
    assert set(block["answerer"]["mechanisms"]) == {"count_files", "list_files", "count_events", "speaker_top",
                                                   "temporal_count"}


def test_none_is_the_floor(state: State, corpus: Corpus, store: SqliteStore) -> None:
    block = answers_block([corpus], Sources(search=state.index, store=store), AnswerSettings(answerer="none"))
    n = len(_aggregation(corpus))
    assert block["queries"] == {"scored": n, "unanswered": n}
    for row in block["rows"]:
        assert row["unanswered"] == row["n"]
        assert row["measures"]["EM"] == row["measures"]["answered"] == row["measures"]["partial"] == 0.0
    assert block["answerer"]["mechanisms"] == {}


def _multi_file_phrase(corpus: Corpus) -> str:
    r3 = next(q for q in corpus.queries if q.rule == "R3-agg-count-files" and q.answer >= 2)
    return r3.text.removeprefix("How many meetings mention ").rstrip("?")


def test_a_truncated_bucket_list_raises_through_every_layer(state: State, corpus: Corpus,
                                                            store: SqliteStore) -> None:
    with pytest.raises(IntegrityError, match="truncated at size 1"):
        state.index.phrase_file_buckets("the", size=1)
    tiny = Sources(search=state.index, store=store, bucket_size=1)
    for name in ("reference", "product"):
        with pytest.raises(IntegrityError, match="truncated"):
            answers_block([corpus], tiny, AnswerSettings(answerer=name, bucket_size=1))
    with pytest.raises(IntegrityError, match="truncated"):
        execute(Intent("count_files", phrase="the"), tiny)
    # at a size that holds every bucket, the same phrase answers
    assert isinstance(execute(Intent("count_files", phrase="the"), Sources(state.index, store)).value, int)


class _Recording:
    """Exposes only the named methods of a target and logs each call; anything else fails."""

    def __init__(self, target: Any, allowed: Iterable[str], log: list[str], label: str) -> None:
        self._target, self._allowed, self._log, self._label = target, frozenset(allowed), log, label

    def __getattr__(self, attr: str) -> Any:
        if attr == "name":
            return getattr(self._target, "name", self._label)
        if attr not in self._allowed:
            raise AssertionError(f"answers touched {self._label}.{attr}")
        method = getattr(self._target, attr)

        def call(*args: Any, **kwargs: Any) -> Any:
            self._log.append(f"{self._label}.{attr}")
            return method(*args, **kwargs)

        return call


@pytest.mark.parametrize("name", ["reference", "product"])
def test_answers_use_only_the_phrase_aggregation_and_store_reads(name: str, state: State, corpus: Corpus,
                                                                 store: SqliteStore) -> None:
    log: list[str] = []
    search = _Recording(state.index, {"phrase_file_buckets"}, log, "search")
    reads = _Recording(store, {"count_phrase_occurrences", "files_in_period", "speaker_sessions"}, log, "store")
    answerer = make_answerer(name, Sources(search=search, store=reads))
    records = evaluate_answers(corpus.queries, answerer, ScoringPolicy())
    assert all(r.scores.EM == 1.0 for r in records)
    assert set(log) == {"search.phrase_file_buckets", "store.count_phrase_occurrences",
                        "store.files_in_period", "store.speaker_sessions"}


def test_occurrences_come_from_segments_not_chunks(state: State, corpus: Corpus, store: SqliteStore) -> None:
    """R5 answers from the store; the index's per-file chunk counts are not occurrence counts."""
    for q in (q for q in corpus.queries if q.rule == "R5-agg-count-events"):
        answer = make_answerer("reference", Sources(state.index, store)).answer(q.text)
        assert answer.value == q.answer
        assert answer.intent is not None and answer.intent.phrase is not None
        assert answer.value == store.count_phrase_occurrences(answer.intent.phrase)


class _StubStore:
    def __init__(self, sessions: list[SpeakerSessions] | None = None, period: PeriodFiles | None = None) -> None:
        self.sessions, self.period = sessions or [], period or PeriodFiles((), ())
        self.title_like: str | None = None

    def count_phrase_occurrences(self, phrase: str, file_uuids: Iterable[str] | None = None) -> int:
        return 0

    def files_in_period(self, start: date, end: date) -> PeriodFiles:
        self.asked = (start, end)
        return self.period

    def speaker_sessions(self, title_like: str) -> list[SpeakerSessions]:
        self.title_like = title_like
        return self.sessions


class _StubSearch:
    name = "stub"

    def __init__(self, buckets: dict[str, int]) -> None:
        self.buckets = buckets

    def phrase_file_buckets(self, phrase: str, *, size: int = 10_000) -> dict[str, int]:
        return dict(self.buckets)


def test_a_tie_at_the_top_is_declined_not_guessed() -> None:
    store = _StubStore([SpeakerSessions("Bo", 5), SpeakerSessions("Ana", 5), SpeakerSessions("Cy", 2)])
    answer = execute(Intent("speaker_top", team="Payments", kind="design review"), Sources(_StubSearch({}), store))
    assert answer.value is None and answer.declined is not None and "Ana, Bo" in answer.declined
    assert store.title_like == "Payments — design review #%"
    store.sessions = [SpeakerSessions("Bo", 6), SpeakerSessions("Ana", 5)]
    won = execute(Intent("speaker_top", team="Payments", kind="design review"), Sources(_StubSearch({}), store))
    assert won.value_json() == {"name": "Bo", "count": 6}


def test_a_wildcard_in_the_scope_is_declined() -> None:
    store = _StubStore([SpeakerSessions("Bo", 5)])
    answer = execute(Intent("speaker_top", team="Pay%", kind="design review"), Sources(_StubSearch({}), store))
    assert answer.value is None and store.title_like is None


def test_a_period_count_excludes_undated_files_and_reports_them() -> None:
    search = _StubSearch({"f1": 1, "f2": 3, "f3": 1, "u1": 2})
    store = _StubStore(period=PeriodFiles(files=("f1", "f3", "zz"), undated=("u1", "u2")))
    answer = execute(Intent("temporal_count", phrase="x", year=2024, month=2), Sources(search, store))
    assert answer.value == 2  # f1, f3: f2 is outside, u1 is undated
    assert store.asked == (date(2024, 2, 1), date(2024, 2, 29))  # a leap-year February, both ends inclusive
    assert answer.evidence == {"period": ["2024-02-01", "2024-02-29"], "phrase_files": 4,
                               "undated_files_excluded": 2, "phrase_files_undated": ["u1"]}


def test_coverage_counts_the_undated_files_excluded() -> None:
    search = _StubSearch({"f1": 1, "u1": 2})
    store = _StubStore(period=PeriodFiles(files=("f1",), undated=("u1", "u2", "u3")))
    query = Query(id="agg-R7-0001", corpus="synthetic", query_class="aggregation",
                  text="How many meetings in March 2025 discussed the X Y z?", scored_on="answer",
                  rule="R7-agg-temporal-count", answer=1)
    corpus = Corpus(name="synthetic", version="v", tier="A", licence="CC0", meetings=(), queries=(query,))
    block = answers_block([corpus], Sources(search, store), AnswerSettings())
    assert block["coverage"] == {"period_filtered_answers": 1, "undated_files_excluded": 3,
                                 "undated_files_matching_a_phrase": ["u1"]}
    assert block["rows"][0]["measures"]["EM"] == 1.0


def test_a_file_list_is_sorted_whatever_the_bucket_order() -> None:
    answer = execute(Intent("list_files", phrase="x"), Sources(_StubSearch({"c": 1, "a": 2, "b": 1}), _StubStore()))
    assert isinstance(answer, Answer) and answer.value == ("a", "b", "c")


def test_an_intent_missing_a_slot_is_declined() -> None:
    answer = execute(Intent("temporal_count", phrase="x", year=2025), Sources(_StubSearch({}), _StubStore()))
    assert answer.value is None and answer.declined is not None and "month" in answer.declined
