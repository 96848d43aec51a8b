"""Judgement rules, built by hand (methodology: "From gold turn ranges to chunk judgements")."""

from __future__ import annotations

import pytest

from harness.errors import UsageError
from harness.index.chunking import ChunkingPolicy, chunk_meeting
from harness.judge import RelevancePolicy, judge
from harness.model import GoldSpan, Meeting, Query, Turn, file_uuid_for, word_count


def _meeting(turns: list[tuple[str, float, float, str]], source_id: str = "m1") -> Meeting:
    return Meeting(
        corpus="hand",
        source_id=source_id,
        file_uuid=file_uuid_for("hand", source_id),
        title=source_id,
        timings_real=True,
        tier="A",
        licence="CC0-1.0",
        turns=tuple(
            Turn(index=i, speaker=s, start=a, end=b, text=t, words=word_count(t))
            for i, (s, a, b, t) in enumerate(turns)
        ),
    )


def _query(meeting: Meeting, *spans: tuple[int, int], qid: str = "q1") -> Query:
    return Query(
        id=qid,
        corpus="hand",
        query_class="lookup",
        text="what was said?",
        gold=tuple(GoldSpan(file_uuid=meeting.file_uuid, start_turn=a, end_turn=b) for a, b in spans),
    )


def test_overlapping_speech_from_another_speaker_is_not_attributed() -> None:
    # Bo's long turn 1 overlaps Al's backchannel (turn 2) completely in time.
    m = _meeting([
        ("Al", 0.0, 4.0, "we should ship the release on friday"),
        ("Bo", 4.0, 14.0, "I think the vendor contract needs another legal review before we sign anything"),
        ("Al", 5.0, 5.5, "right"),
        ("Cy", 14.0, 18.0, "fine let us wait for legal then"),
    ])
    chunks = chunk_meeting(m)
    bo = next(c for c in chunks if c.speaker == "Bo")
    # gold = Al's backchannel only: Bo's chunk shares its time window but not its speaker
    result = judge([_query(m, (2, 2))], [m], chunks)
    assert bo.id not in result.qrels.judgements.get("q1", {})
    al_backchannel = next(c for c in chunks if c.speaker == "Al" and c.start == 5.0)
    assert result.qrels.judgements["q1"] == {al_backchannel.id: 2}


def test_monologue_split_mid_turn_gets_proportional_coverage() -> None:
    # One 12-word turn over 12 s, chunked at 6 words: each sub-chunk holds half the turn.
    words = "Alpha one. Bravo two. Charlie three. Delta four. Echo five. Foxtrot six."
    m = _meeting([("Al", 0.0, 12.0, words), ("Bo", 12.0, 14.0, "ok thanks")])
    chunks = chunk_meeting(m, ChunkingPolicy(max_words=6))
    al = [c for c in chunks if c.speaker == "Al"]
    assert [c.words for c in al] == [6, 6]
    assert (al[0].start, al[0].end, al[1].start, al[1].end) == (0.0, 6.0, 6.0, 12.0)
    # gold is the whole monologue: each sub-chunk's coverage is 6*0.5 / (6*0.5) = 1 -> grade 2
    assert judge([_query(m, (0, 0))], [m], chunks).qrels.judgements["q1"] == {al[0].id: 2, al[1].id: 2}


def test_partial_coverage_grades_one_and_thresholds_move() -> None:
    # Al speaks twice in a row (one speaker turn, one chunk): 3 gold words of 12 -> 0.25.
    m = _meeting([
        ("Al", 0.0, 3.0, "budget is fine"),
        ("Al", 3.0, 12.0, "and the roadmap review moves to next quarter now"),
    ])
    chunks = chunk_meeting(m)
    assert len(chunks) == 1
    q = _query(m, (0, 0))
    assert judge([q], [m], chunks).qrels.judgements["q1"] == {chunks[0].id: 1}
    assert judge([q], [m], chunks, RelevancePolicy(high=0.25)).qrels.judgements["q1"] == {chunks[0].id: 2}
    assert judge([q], [m], chunks, RelevancePolicy(low=0.3, high=0.5)).dropped_unjudgeable == ("q1",)
    assert judge([_query(m, (0, 1))], [m], chunks, RelevancePolicy(binary=True)).qrels.judgements["q1"] == {
        chunks[0].id: 1
    }


def test_adjacent_spans_are_unioned_before_grading() -> None:
    # One chunk of 3 segments x 4 words. Spans [0,0] and [1,1] cover 4/12 each (< 0.5),
    # their union covers 8/12 (>= 0.5): graded 2, not 1.
    m = _meeting([
        ("Al", 0.0, 4.0, "one two three four"),
        ("Al", 4.0, 8.0, "five six seven eight"),
        ("Al", 8.0, 12.0, "nine ten eleven twelve"),
    ])
    chunks = chunk_meeting(m)
    assert judge([_query(m, (0, 0), (1, 1))], [m], chunks).qrels.judgements["q1"] == {chunks[0].id: 2}
    assert judge([_query(m, (0, 0))], [m], chunks).qrels.judgements["q1"] == {chunks[0].id: 1}


def test_unjudgeable_query_is_dropped_and_counted() -> None:
    m = _meeting([("Al", 0.0, 2.0, "hello there"), ("Bo", 2.0, 2.0, "")])
    chunks = chunk_meeting(m)
    other = _meeting([("Cy", 0.0, 1.0, "hi")], source_id="not-indexed")
    queries = [_query(m, (0, 0), qid="ok"), _query(m, (1, 1), qid="empty-turn"), _query(other, (0, 0), qid="gone")]
    result = judge(queries, [m], chunks)
    assert result.dropped_unjudgeable == ("empty-turn", "gone")
    assert result.judged_queries == ("ok",)


def test_answer_scored_queries_are_not_judged() -> None:
    m = _meeting([("Al", 0.0, 2.0, "hello there")])
    q = Query(id="agg", corpus="hand", query_class="aggregation", text="how many?", scored_on="answer", answer=3)
    result = judge([q], [m], chunk_meeting(m))
    assert result.judged_queries == () and result.dropped_unjudgeable == ()


def test_relevance_policy_rejects_bad_thresholds() -> None:
    with pytest.raises(UsageError):
        RelevancePolicy(high=0.2, low=0.4)
