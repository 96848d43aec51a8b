"""The BM25 gold-meeting self-report on tiny corpora whose ranks are worked out by hand.

Documents are ``title + turn text`` and titles are distinct one-token ids, so they never
match a query. Lucene BM25 gives a one-term query on a document of length L containing the
term once a score idf x 1 / (1 + k1 (1 - b + b L / avgL)); idf is shared by all documents,
so comparing scores only needs the length factor.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.corpora.qmsum import read_qmsum
from harness.corpora.selfreport import NO_DOMAIN, format_report, meeting_bm25_report, tokenize
from harness.model import GoldSpan, Meeting, Query, Turn, file_uuid_for, word_count

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"


def meeting(source_id: str, text: str, domain: str | None = None) -> Meeting:
    turns = tuple(
        Turn(index=i, speaker="S", start=float(i), end=float(i + 1), text=line, words=word_count(line))
        for i, line in enumerate(text.split(" | "))
    )
    return Meeting(
        corpus="t",
        source_id=source_id,
        file_uuid=file_uuid_for("t", source_id),
        title=source_id,
        timings_real=True,
        tier="A",
        licence="MIT",
        domain=domain,
        turns=turns,
    )


def query(qid: str, text: str, *gold: str, scored_on: str = "rank") -> Query:
    return Query(
        id=qid,
        corpus="t",
        query_class="lookup",
        text=text,
        gold=tuple(GoldSpan(file_uuid=file_uuid_for("t", g), start_turn=0, end_turn=0) for g in gold),
        scored_on=scored_on,  # type: ignore[arg-type]
    )


def test_tokenize():
    assert tokenize("Don't STOP_now, 3.5 Ärger’s") == ["don't", "stop", "now", "3", "5", "ärger’s"]


def test_unique_words_rank_the_gold_meeting_first():
    meetings = [
        meeting("ma", "alpha beta | gamma"),
        meeting("mb", "delta epsilon"),
        meeting("mc", "zeta eta"),
    ]
    report = meeting_bm25_report(meetings, [query("q1", "alpha gamma", "ma")], by_domain=False)
    pooled = report["pooled"]
    assert pooled["per_query"] == {"q1": {"others_within_90pct": 0, "rank": 1}}
    assert (pooled["r_at_1"], pooled["median_gold_rank"], pooled["mean_others_within_90pct"]) == (1.0, 1, 0.0)
    assert (pooled["meetings"], pooled["other_meetings"], pooled["queries"]) == (3, 2, 1)
    assert report["by_domain"] == {}


def test_a_tie_counts_against_the_gold_meeting():
    # ma and mb have the same length and the same text: identical scores for "alpha".
    meetings = [meeting("ma", "alpha beta"), meeting("mb", "alpha beta"), meeting("mc", "gamma delta")]
    report = meeting_bm25_report(meetings, [query("q1", "alpha", "ma")], by_domain=False)
    assert report["pooled"]["per_query"]["q1"] == {"rank": 2, "others_within_90pct": 1}
    assert report["pooled"]["r_at_1"] == 0.0


def test_several_gold_files_use_the_best_one_and_do_not_count_each_other():
    meetings = [meeting("ma", "alpha beta"), meeting("mb", "alpha beta"), meeting("mc", "gamma delta")]
    report = meeting_bm25_report(meetings, [query("q1", "alpha", "ma", "mb")], by_domain=False)
    assert report["pooled"]["per_query"]["q1"] == {"rank": 1, "others_within_90pct": 0}


def test_near_duplicates_at_ninety_percent_of_gold():
    # Lengths with the title: g=4, o1=5, o2=17, o3=4; avgL = 30/4 = 7.5.
    # 1 + 1.2 (0.25 + 0.75 L/7.5) = 1 + 1.2 (0.25 + 0.1 L): g 1.78, o1 1.90, o2 3.34.
    # o1/g = 1.78/1.90 = 0.937 >= 0.9 (counts); o2/g = 1.78/3.34 = 0.533 (does not); o3 has no
    # "kappa" and scores 0. o1 is strictly below g, so the gold meeting is still rank 1.
    filler = " ".join(f"w{i}" for i in range(15))
    meetings = [
        meeting("g", "kappa one two"),
        meeting("o1", "kappa one two three"),
        meeting("o2", f"kappa {filler}"),
        meeting("o3", "lambda mu nu"),
    ]
    report = meeting_bm25_report(meetings, [query("q1", "kappa", "g")], by_domain=False)
    assert report["pooled"]["per_query"]["q1"] == {"rank": 1, "others_within_90pct": 1}
    # Asked the other way round, o1 is gold and g outscores it: rank 2.
    report = meeting_bm25_report(meetings, [query("q2", "kappa", "o1")], by_domain=False)
    assert report["pooled"]["per_query"]["q2"]["rank"] == 2


def test_gold_scoring_zero_ties_with_every_other_meeting():
    meetings = [meeting("ma", "alpha"), meeting("mb", "beta"), meeting("mc", "gamma")]
    queries = [query("q1", "unseen words", "ma"), query("q2", "beta", "ma")]
    report = meeting_bm25_report(meetings, queries, by_domain=False)
    # q1: every meeting scores 0, so both others tie the gold one: rank 1 + 2 = 3.
    # q2: mb scores above the gold meeting (0) and mc ties it at 0: both count, rank 3 again.
    assert report["pooled"]["per_query"] == {
        "q1": {"rank": 3, "others_within_90pct": 2},
        "q2": {"rank": 3, "others_within_90pct": 2},
    }


def test_per_domain_groups_and_median():
    meetings = [
        meeting("a1", "river trees planting", "Committee"),
        meeting("a2", "playground surface rubber", "Committee"),
        meeting("b1", "remote buttons yellow", "Product"),
        meeting("b2", "remote buttons yellow", "Product"),
        meeting("n1", "noise subtraction", None),
    ]
    queries = [
        query("q1", "rubber playground", "a2"),  # rank 1 in Committee and pooled
        query("q2", "yellow buttons", "b1"),  # ties b2: rank 2
        query("q3", "trees", "a1"),  # rank 1
        query("q4", "noise", "n1"),  # rank 1
    ]
    report = meeting_bm25_report(meetings, queries)
    assert sorted(report["by_domain"]) == ["(none)", "Committee", "Product"]
    assert NO_DOMAIN == "(none)"
    committee = report["by_domain"]["Committee"]
    assert (committee["meetings"], committee["queries"], committee["r_at_1"]) == (2, 2, 1.0)
    product = report["by_domain"]["Product"]
    assert product["per_query"] == {"q2": {"rank": 2, "others_within_90pct": 1}}
    pooled = report["pooled"]
    assert pooled["queries"] == 4
    assert pooled["r_at_1"] == 0.75
    assert pooled["median_gold_rank"] == 1.0  # ranks 1, 2, 1, 1
    assert pooled["mean_others_within_90pct"] == 0.25


def test_even_count_median_is_the_midpoint():
    meetings = [meeting("a", "x y"), meeting("b", "x y"), meeting("c", "x y"), meeting("d", "z")]
    report = meeting_bm25_report(meetings, [query("q1", "x", "a"), query("q2", "z", "d")], by_domain=False)
    # q1 ties with b and c: rank 3; q2: rank 1. Median of (1, 3) = 2.
    assert report["pooled"]["median_gold_rank"] == 2


def test_unscorable_queries_are_counted_apart():
    meetings = [meeting("ma", "alpha"), meeting("mb", "beta")]
    queries = [
        query("q1", "alpha", "ma"),
        query("q2", "how many meetings", scored_on="answer"),
        query("q3", "alpha"),
        query("q4", "alpha", "elsewhere"),
    ]
    report = meeting_bm25_report(meetings, queries)
    assert report["skipped"] == {"gold_meeting_not_in_corpus": 1, "no_gold": 1, "not_rank_scored": 1}
    assert list(report["pooled"]["per_query"]) == ["q1"]


def test_empty_group_reports_none_rates():
    report = meeting_bm25_report([meeting("ma", "alpha", "X")], [])
    assert report["pooled"]["r_at_1"] is None
    assert report["by_domain"]["X"]["median_gold_rank"] is None
    assert "-" in format_report(report)


def test_report_is_deterministic_and_records_its_method():
    corpus = read_qmsum(FIXTURE, manifest=FIXTURE / "SOURCES.tsv")
    first = meeting_bm25_report(corpus.meetings, corpus.queries)
    second = meeting_bm25_report(list(reversed(corpus.meetings)), list(reversed(corpus.queries)))
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert list(first) == sorted(first)
    method = first["method"]
    assert (method["library"], method["method"], method["k1"], method["b"]) == ("bm25s", "lucene", 1.2, 0.75)
    assert "casefold" in method["tokenizer"]
    assert first["pooled"]["queries"] == 12


def test_printed_table_rounds_to_six_decimals():
    meetings = [meeting("a", "x"), meeting("b", "y"), meeting("c", "z")]
    queries = [query("q1", "x", "a"), query("q2", "x", "b"), query("q3", "z", "c")]
    text = format_report(meeting_bm25_report(meetings, queries, by_domain=False))
    # q2's gold b scores 0 and a scores above it: rank 3 (c ties b at 0). R@1 = 2/3.
    assert "0.666667" in text
    assert "0.6666666" not in text


def test_left_out_meetings_are_no_competitors():
    # mb is shorter than ma and holds the query's one term once, so it outscores the gold ma
    # (rank 2, one other within 90%); with mb left out for q1, ma ranks first and none is near.
    meetings = [meeting("ma", "alpha beta gamma delta"), meeting("mb", "alpha"), meeting("mc", "zeta eta")]
    q = query("q1", "alpha", "ma")
    plain = meeting_bm25_report(meetings, [q], by_domain=False)["pooled"]["per_query"]["q1"]
    assert plain == {"rank": 2, "others_within_90pct": 1}
    left_out = {"q1": frozenset({file_uuid_for("t", "mb")})}
    alone = meeting_bm25_report(meetings, [q], by_domain=False, left_out=left_out)["pooled"]["per_query"]["q1"]
    assert alone == {"rank": 1, "others_within_90pct": 0}
