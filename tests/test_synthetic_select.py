"""Selection by gold closure: the greedy on a hand-built corpus, then on a generated one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import UsageError
from harness.model import file_uuid_for
from harness.synthetic.folders import write_files
from harness.synthetic.formats import (
    SELECTION,
    NativeCorpus,
    NativeManifest,
    NativeMeeting,
    NativeQuery,
    read_native,
)
from harness.synthetic.generator import generate
from harness.synthetic.pipeline import select_corpus
from harness.synthetic.select import Quotas, select
from harness.synthetic.validate import validate_or_raise


def _meeting(meeting_id: str, day: str) -> NativeMeeting:
    return NativeMeeting(meeting_id=meeting_id, file_uuid=file_uuid_for("synthetic", meeting_id),
                         title=f"Logistics — design review #{meeting_id[-1]}", team="Logistics",
                         kind="design review", series_number=int(meeting_id[-1]), recorded_date=day,
                         roster=(), turns=())


def _query(qid: str, cls: str, closure: list[str], rule: str | None = None, month: str | None = None) -> NativeQuery:
    return NativeQuery(id=qid, query_class=cls, rule=rule, scored_on="answer" if rule else "rank", text="?",
                       template="t", gold=(), answer=None, closure=tuple(closure), phrase=None, fact=None,
                       speaker=None, team=None, kind=None, month=month, verb=None)


def _hand_corpus() -> NativeCorpus:
    """Six meetings; m5 is the only one in March."""
    meetings = tuple(_meeting(f"m0000{i}", "2024-03-04" if i == 5 else f"2024-0{4 + i % 3}-01") for i in range(1, 7))
    queries = (
        _query("agg-R3-0001", "aggregation", ["m00003", "m00004", "m00005"], "R3-agg-count-files"),
        _query("agg-R6-0001", "aggregation", [f"m0000{i}" for i in range(1, 7)], "R6-agg-speaker-top"),
        _query("agg-R7-0001", "aggregation", ["m00005", "m00006"], "R7-agg-temporal-count", "2024-03"),
        _query("lookup-00001", "lookup", ["m00001"]),
        _query("lookup-00002", "lookup", ["m00002"]),
        _query("lookup-00003", "lookup", ["m00002"]),
        _query("multi-00001", "multi_file", ["m00003", "m00004"]),
    )
    manifest = NativeManifest(format="otsynth-v1", generator="g", generator_version="1", corpus="synthetic",
                              licence="l", tier="A", seed=1, meetings=6, date_range=("2024-01-01", "2025-12-31"),
                              queries={}, files={}, selection=None)
    return NativeCorpus(Path("."), manifest, meetings, queries, (), {}, ())


def test_greedy_meets_quotas_cheapest_first_by_hand() -> None:
    # quota phase: lookup-00002 closes two lookups with one meeting (m00002: 1.01 per meeting, beating
    # lookup-00001's 1.0); then multi-00001 needs m00003 + m00004. Budget spent: 3.
    sel = select(_hand_corpus(), 3, Quotas(lookup=1, multi_file=1, per_rule=0))
    assert sel.selected == ["m00002", "m00003", "m00004"]
    assert [(s["phase"], s["via"], s["added"]) for s in sel.steps] == [
        ("quota", "lookup-00002", ["m00002"]),
        ("quota", "multi-00001", ["m00003", "m00004"]),
    ]
    assert sel.kept == ["lookup-00002", "lookup-00003", "multi-00001"]
    reasons = {d["id"]: (d["reason"], d["missing"], d["closure"]) for d in sel.dropped}
    assert reasons == {
        "agg-R3-0001": ("mentioning_files_not_selected", 1, 3),
        "agg-R6-0001": ("sessions_not_selected", 3, 6),
        "agg-R7-0001": ("out_of_period_mentions_not_selected", 2, 2),
        "lookup-00001": ("gold_file_not_selected", 1, 1),
    }


def test_r7_missing_only_in_period_mentions_says_so() -> None:
    hand = _hand_corpus()
    corpus = NativeCorpus(hand.root, hand.manifest, hand.meetings,
                          (_query("agg-R7-0001", "aggregation", ["m00005", "m00006"], "R7-agg-temporal-count",
                                  "2024-03"), _query("lookup-00001", "lookup", ["m00006"])), (), {}, ())
    sel = select(corpus, 1)
    assert sel.selected == ["m00006"]
    assert [(d["id"], d["reason"], d["missing"]) for d in sel.dropped] == [
        ("agg-R7-0001", "in_period_mentions_not_selected", 1)
    ]


def test_fill_phase_breaks_ties_by_query_id_and_names_out_of_period_drops() -> None:
    # after the quota phase one meeting is left: agg-R3-0001 (m00005) and lookup-00001 (m00001) both keep
    # one query for one meeting; the smaller id wins. agg-R7-0001 then lacks only m00006, out of March.
    sel = select(_hand_corpus(), 4, Quotas(lookup=1, multi_file=1, per_rule=0))
    assert sel.selected == ["m00002", "m00003", "m00004", "m00005"]
    assert sel.steps[-1] == {"added": ["m00005"], "kept": ["agg-R3-0001"], "phase": "fill", "via": "agg-R3-0001"}
    r7 = next(d for d in sel.dropped if d["id"] == "agg-R7-0001")
    assert (r7["reason"], r7["missing"]) == ("out_of_period_mentions_not_selected", 1)


def test_whole_corpus_budget_keeps_everything() -> None:
    sel = select(_hand_corpus(), 6)
    assert sel.selected == [f"m0000{i}" for i in range(1, 7)] and not sel.dropped and len(sel.kept) == 7


def test_budget_larger_than_corpus_is_refused() -> None:
    with pytest.raises(UsageError, match="exceeds"):
        select(_hand_corpus(), 7)


@pytest.fixture(scope="module")
def selected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("select")
    source = base / "full"
    source.mkdir()
    write_files(source, generate(20260812, 150, "easy"))
    select_corpus(source, base / "b60", budget=60, quotas=Quotas(lookup=20, multi_file=8, per_rule=2))
    return source, base / "b60"


def test_selected_corpus_keeps_only_closed_queries_and_validates(selected: tuple[Path, Path]) -> None:
    source, out = selected
    validate_or_raise(out)
    full = read_native(source)
    sel = read_native(out)
    chosen = {m.meeting_id for m in sel.meetings}
    assert len(chosen) == 60
    for q in sel.queries:
        assert set(q.closure) <= chosen, q.id
    report: dict[str, Any] = json.loads((out / SELECTION).read_text())
    kept = set(report["kept"]["ids"])
    dropped = {d["id"] for d in report["dropped"]["queries"]}
    assert kept == {q.id for q in sel.queries}
    assert kept | dropped == {q.id for q in full.queries} and not kept & dropped
    for d in report["dropped"]["queries"]:
        full_q = next(q for q in full.queries if q.id == d["id"])
        assert d["missing"] == len(set(full_q.closure) - chosen) >= 1
    assert report["quotas_met"] and report["answers_restated"] == []
    assert report["kept"]["by_class"]["aggregation"] >= 10
    for rel in (f"meetings/{m}.json" for m in sorted(chosen)):
        assert (out / rel).read_bytes() == (source / rel).read_bytes()
    full_answers = {q.id: q.answer for q in full.queries}
    assert all(q.answer == full_answers[q.id] for q in sel.queries)


def test_selection_is_deterministic(selected: tuple[Path, Path]) -> None:
    source, out = selected
    again = select(read_native(source), 60, Quotas(lookup=20, multi_file=8, per_rule=2))
    report = json.loads((out / SELECTION).read_text())
    assert again.selected == report["selected"] and again.kept == report["kept"]["ids"]
