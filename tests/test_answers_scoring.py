"""The scoring rules, table-driven, with hand-computed expectations."""

from __future__ import annotations

from typing import Any

import pytest

from harness.answers.evaluate import aggregate, build_rows, evaluate_answers
from harness.answers.model import Answer, Intent, SpeakerAnswer, declined
from harness.answers.scoring import ANSWER_MEASURES, ScoringPolicy, normalise_name, score_answer
from harness.errors import InputDataError, UsageError
from harness.metrics.measures import MEASURES, parse_measure
from harness.model import Query
from harness.report.markdown import TABLE_MEASURES

R3, R4, R5, R6, R7 = ("R3-agg-count-files", "R4-agg-list-files", "R5-agg-count-events",
                      "R6-agg-speaker-top", "R7-agg-temporal-count")
EXACT = ScoringPolicy()


def ans(value: Any) -> Answer:
    return Answer(value=value, intent=Intent(name="count_files", phrase="x"))


# (rule, gold, answer, policy, EM, partial, answered, setF1)
CASES: list[tuple[str, Any, Answer, ScoringPolicy, float, float, float, float | None]] = [
    # counts: exact, partial = EM, tolerance a parameter
    (R3, 4, ans(4), EXACT, 1.0, 1.0, 1.0, None),
    (R3, 4, ans(5), EXACT, 0.0, 0.0, 1.0, None),
    (R3, 4, ans(3), EXACT, 0.0, 0.0, 1.0, None),
    (R5, 7, ans(6), ScoringPolicy(count_tolerance=1), 1.0, 1.0, 1.0, None),
    (R5, 7, ans(5), ScoringPolicy(count_tolerance=1), 0.0, 0.0, 1.0, None),
    (R7, 2, ans(2), EXACT, 1.0, 1.0, 1.0, None),
    (R7, 2, ans(4), EXACT, 0.0, 0.0, 1.0, None),  # the unfiltered count: wrong
    (R3, 4, ans(True), EXACT, 0.0, 0.0, 1.0, None),  # a bool is not a count
    (R3, 4, ans(("a", "b", "c", "d")), EXACT, 0.0, 0.0, 1.0, None),  # a list for a count: wrong shape
    (R3, 4, declined("no"), EXACT, 0.0, 0.0, 0.0, None),
    # file sets: exact for EM, F1 beside; 7 of 8 is wrong
    (R4, ["a", "b"], ans(("a", "b")), EXACT, 1.0, 1.0, 1.0, 1.0),
    (R4, ["a", "b", "c", "d", "e", "f", "g", "h"], ans(("a", "b", "c", "d", "e", "f", "g")), EXACT,
     0.0, 14 / 15, 1.0, 14 / 15),  # 2*7/(7+8)
    (R4, ["a", "b"], ans(("a", "b", "c")), EXACT, 0.0, 0.8, 1.0, 0.8),  # 2*2/(3+2)
    (R4, ["a", "b"], ans(("c",)), EXACT, 0.0, 0.0, 1.0, 0.0),
    (R4, ["a", "b"], ans(()), EXACT, 0.0, 0.0, 1.0, 0.0),
    (R4, [], ans(()), EXACT, 1.0, 1.0, 1.0, 1.0),
    (R4, ["a", "b"], ans(("a", "b", "c")), ScoringPolicy(set_credit="exact"), 0.0, 0.0, 1.0, 0.8),
    (R4, ["a", "b"], ans(("a", "b")), ScoringPolicy(set_credit="exact"), 1.0, 1.0, 1.0, 1.0),
    (R4, ["a", "b"], ans(2), EXACT, 0.0, 0.0, 1.0, 0.0),  # a count for a list: wrong shape
    (R4, ["a", "b"], declined("no"), EXACT, 0.0, 0.0, 0.0, 0.0),
    # speaker: two fields, partial = fraction right, names casefolded + whitespace collapsed only
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Ana Lima", 9)), EXACT, 1.0, 1.0, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("  ANA   lima ", 9)), EXACT, 1.0, 1.0, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Ana Lima", 8)), EXACT, 0.0, 0.5, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Bo Chen", 9)), EXACT, 0.0, 0.5, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Bo Chen", 2)), EXACT, 0.0, 0.0, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Ana Lima", 8)), ScoringPolicy(count_tolerance=1),
     1.0, 1.0, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Ana-Lima", 9)), EXACT, 0.0, 0.5, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(SpeakerAnswer("Ana Lima.", 9)), EXACT, 0.0, 0.5, 1.0, None),
    (R6, {"name": "José Lima", "count": 9}, ans(SpeakerAnswer("Jose Lima", 9)), EXACT, 0.0, 0.5, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, ans(9), EXACT, 0.0, 0.0, 1.0, None),
    (R6, {"name": "Ana Lima", "count": 9}, declined("tie"), EXACT, 0.0, 0.0, 0.0, None),
]


@pytest.mark.parametrize(("rule", "gold", "answer", "policy", "em", "partial", "answered", "f1"), CASES)
def test_scoring_rules(rule: str, gold: Any, answer: Answer, policy: ScoringPolicy, em: float, partial: float,
                       answered: float, f1: float | None) -> None:
    scores = score_answer(rule, gold, answer, policy)
    assert em == scores.EM
    assert scores.partial == pytest.approx(partial, abs=1e-12)
    assert scores.answered == answered
    if f1 is None:
        assert scores.setF1 is None
    else:
        assert scores.setF1 == pytest.approx(f1, abs=1e-12)


@pytest.mark.parametrize(("raw", "normalised"), [
    ("Ana Lima", "ana lima"), ("  ana\t\nLIMA  ", "ana lima"), ("ÉMILE Ström", "émile ström"),
    ("Straße", "strasse"), ("O'Neil", "o'neil"), ("Ana-Lima", "ana-lima"),
])
def test_name_comparison_is_casefold_and_whitespace_only(raw: str, normalised: str) -> None:
    assert normalise_name(raw) == normalised


@pytest.mark.parametrize(("kwargs", "flag"), [
    ({"count_tolerance": -1}, "--answer-count-tolerance"),
    ({"count_tolerance": 0.5}, "--answer-count-tolerance"),
    ({"set_credit": "jaccard"}, "--answer-set-credit"),
])
def test_policy_refuses_bad_parameters(kwargs: dict[str, Any], flag: str) -> None:
    with pytest.raises(UsageError, match=flag):
        ScoringPolicy(**kwargs)


def test_policy_is_written_as_parameters() -> None:
    doc = ScoringPolicy(count_tolerance=2, set_credit="exact").to_dict()
    assert doc["count_tolerance"] == 2 and doc["set_credit"] == "exact"
    assert "casefold" in doc["name_comparison"] and doc["sets_emitted"] == "sorted"


@pytest.mark.parametrize(("rule", "gold"), [
    (R3, "4"), (R3, None), (R4, "abc"), (R6, {"name": "x"}), (R6, ["x", 3]),
])
def test_a_malformed_gold_answer_is_refused(rule: str, gold: Any) -> None:
    with pytest.raises(InputDataError):
        score_answer(rule, gold, ans(1), EXACT)


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(InputDataError, match="R9"):
        score_answer("R9-agg-other", 1, ans(1), EXACT)


def test_a_file_set_is_emitted_sorted() -> None:
    with pytest.raises(ValueError, match="sorted"):
        Answer(value=("b", "a"))
    with pytest.raises(ValueError, match="sorted"):
        Answer(value=("a", "a"))
    assert Answer(value=("a", "b")).value_json() == ["a", "b"]


def test_an_answer_is_a_value_or_a_reason() -> None:
    with pytest.raises(ValueError):
        Answer(value=None)
    with pytest.raises(ValueError):
        Answer(value=3, declined="both")


def _query(qid: str, rule: str, gold: Any, text: str = "How many meetings mention the X?") -> Query:
    return Query(id=qid, corpus="synthetic", query_class="aggregation", text=text, scored_on="answer",
                 rule=rule, answer=gold)


class _Scripted:
    """Answers from a table keyed by question; declines the rest."""

    name = "scripted"
    is_production_path = False
    parser = "table"

    def __init__(self, table: dict[str, Answer]) -> None:
        self.table = table

    def mechanisms(self) -> dict[str, str]:
        return {}

    def answer(self, question: str) -> Answer:
        return self.table.get(question) or declined("not in the table")


def test_unanswered_scores_zero_and_is_counted_not_skipped() -> None:
    """The substitution the engine exists to prevent: a mean over the answered reads 1.000,
    the truth over the gold set is 0.500."""
    queries = [_query("agg-R3-0001", R3, 4, "How many meetings mention the A?"),
               _query("agg-R3-0002", R3, 2, "How many meetings mention the B?")]
    answerer = _Scripted({"How many meetings mention the A?": ans(4)})
    records = evaluate_answers(queries, answerer, EXACT)
    assert [r.query.id for r in records] == ["agg-R3-0001", "agg-R3-0002"]  # the gold set, iterated
    answered = [r for r in records if r.answer.answered]
    mean_over_answered = sum(r.scores.EM for r in answered) / len(answered)
    assert mean_over_answered == 1.0
    measures = aggregate(records)
    assert measures["EM"] == 0.5 and measures["answered"] == 0.5
    rows = build_rows(records, {"synthetic": "A"})
    assert rows[0]["rule"] == "all" and rows[0]["n"] == 2 and rows[0]["unanswered"] == 1
    assert rows[0]["measures"]["EM"] == 0.5


def test_rank_scored_queries_are_not_in_the_answer_gold_set() -> None:
    lookup = Query(id="lookup-00001", corpus="synthetic", query_class="lookup", text="What is X?")
    records = evaluate_answers([lookup, _query("agg-R3-0001", R3, 1)], _Scripted({}), EXACT)
    assert [r.query.id for r in records] == ["agg-R3-0001"]


def test_rows_per_rule_with_an_all_row_first_and_set_f1_only_for_file_sets() -> None:
    queries = [_query("agg-R3-0001", R3, 2, "q1"), _query("agg-R4-0001", R4, ["a", "b"], "q2"),
               _query("agg-R4-0002", R4, ["c"], "q3"), _query("agg-R6-0001", R6, {"name": "A", "count": 3}, "q4")]
    answerer = _Scripted({"q1": ans(2), "q2": ans(("a",)), "q3": ans(("c",)), "q4": ans(SpeakerAnswer("a", 2))})
    rows = build_rows(evaluate_answers(queries, answerer, EXACT), {"synthetic": "A"})
    assert [r["rule"] for r in rows] == ["all", R3, R4, R6]
    by_rule = {r["rule"]: r["measures"] for r in rows}
    assert by_rule["all"]["EM"] == pytest.approx(2 / 4)
    assert by_rule["all"]["setF1"] is None and by_rule[R3]["setF1"] is None
    assert by_rule[R4]["setF1"] == pytest.approx((2 / 3 + 1.0) / 2)  # 2*1/(1+2) and 1
    assert by_rule[R4]["EM"] == 0.5
    assert by_rule[R6]["partial"] == 0.5 and by_rule[R6]["EM"] == 0.0
    assert by_rule["all"]["partial"] == pytest.approx((1.0 + 2 / 3 + 1.0 + 0.5) / 4)


def test_no_answer_measure_is_a_retrieval_measure() -> None:
    retrieval = set(MEASURES) | set(TABLE_MEASURES)
    assert not set(ANSWER_MEASURES) & retrieval
    for name in ANSWER_MEASURES:
        with pytest.raises(UsageError):
            parse_measure(name)
