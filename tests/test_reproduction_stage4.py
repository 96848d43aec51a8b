"""The reproduction page's Stage 4 tables and the metric-library table, over hand-written results files.

The route run scores the eight queries of tests/reproduction_fixtures.py, routed by hand:

    q1 qmsum lookup      -> lookup                    s1 synthetic lookup      -> lookup
    q2 qmsum lookup      -> summarize (digest tier)   s2 synthetic lookup      -> lookup
    q3 qmsum summarize   -> summarize (digest tier)   s3 synthetic multi_file  -> multi_file
    q4 qmsum summarize   -> summarize, quoted phrase  s4 synthetic multi_file  -> summarize (digest tier)

(s2 carries a quoted phrase too, which changes nothing: a lookup has no digest tier to lose),
so 3 queries reach the digest tier (q2, q3, s4), of which the digest leg finds a gold file for 2 and
rescues 1; leakage is 2 (q2, s4) of the 6 lookup and multi_file queries. The answer runs score seven
aggregation queries (R3 x2, R4, R5, R6, R7 x2): reference gets all seven, product misses one R7, none
declines them all. The metric-library cases are checked against nDCG computed here by hand.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.errors import EXIT_INPUT
from harness.report.files import dumps
from harness.reproduction.libraries import CASES, LIBRARIES
from harness.reproduction.methodology import load_tables
from tests.reproduction_fixtures import QUERIES, metrics_doc
from tests.test_reproduction_page import row, section

ROUTES = {  # qid -> (routed class, quoted phrase, digest found a gold file, chunk top-10 had one)
    "q1": ("lookup", False, None, True), "q2": ("summarize", False, True, True),
    "q3": ("summarize", False, True, False), "q4": ("summarize", True, None, False),
    "s1": ("lookup", False, None, True), "s2": ("lookup", True, None, False),
    "s3": ("multi_file", False, None, True), "s4": ("summarize", False, False, False),
}
RULES = {"agg-R3-1": "R3-agg-count-files", "agg-R3-2": "R3-agg-count-files", "agg-R4-1": "R4-agg-list-files",
         "agg-R5-1": "R5-agg-count-events", "agg-R6-1": "R6-agg-speaker-top",
         "agg-R7-1": "R7-agg-temporal-count", "agg-R7-2": "R7-agg-temporal-count"}
ROUTE_ARGS = {"stage": "route", "scope": "corpus", "size": 48, "backend": "embedded"}


def digest_leg() -> dict[str, Any]:
    per_query: dict[str, Any] = {}
    confusion: dict[str, dict[str, int]] = {}
    for qid, (routed, quoted, found, chunk) in ROUTES.items():
        tiers = ["chunk", "digest"] if routed == "summarize" and not quoted else ["chunk"]
        record: dict[str, Any] = {"routed_class": routed, "rule": "r", "tiers": tiers, "quoted_phrase": quoted,
                                  "chunk_leg_gold_in_top10_files": chunk}
        if "digest" in tiers:
            record |= {"digest_hits": ["f_digest0"], "digest_found_gold_file": found,
                       "rescued": bool(found) and not chunk}
        per_query[qid] = record
        got = confusion.setdefault(QUERIES[qid][1], {})
        got[routed] = got.get(routed, 0) + 1
    routed = [r for r in per_query.values() if "digest" in r["tiers"]]
    return {"queries_scored": 8, "routed_to_digest_tier": len(routed), "tier_returned_something": 3,
            "digest_found_gold_file": sum(1 for r in routed if r["digest_found_gold_file"]),
            "chunk_leg_gold_in_top10_files": sum(1 for r in routed if r["chunk_leg_gold_in_top10_files"]),
            "rescued": sum(1 for r in routed if r["rescued"]), "quoted_phrase_removed_digest_tier": 1,
            "router_confusion": confusion, "per_query": per_query, "merged_into_ranked_list": False}


def answers_block(name: str, exact: dict[str, bool]) -> dict[str, Any]:
    declined = name == "none"
    per_query = {qid: {"corpus": "synthetic", "rule": rule, "question": f"q {qid}", "gold": 3,
                       "answer": None if declined else (3 if exact[qid] else 2),
                       "declined": "the none answerer declines every query" if declined else None,
                       "intent": None if declined else "count_files", "slots": {}, "evidence": {},
                       "measures": {"EM": float(exact[qid]), "partial": float(exact[qid]),
                                    "answered": 0.0 if declined else 1.0}}
                 for qid, rule in RULES.items()}
    groups = {"all": list(RULES)} | {rule: [q for q, r in RULES.items() if r == rule]
                                     for rule in sorted(set(RULES.values()))}
    rows = [{"corpus": "synthetic", "tier": "A", "query_class": "aggregation", "rule": rule, "n": len(ids),
             "unanswered": len(ids) if declined else 0,
             "measures": {m: sum(per_query[q]["measures"][m] for q in ids) / len(ids) for m in ("EM", "partial",
                                                                                                "answered")}
             | {"setF1": None}} for rule, ids in groups.items()]
    return {"schema": "ragsweep.answers/1",
            "answerer": {"name": name, "is_production_path": False, "parser": "p", "mechanisms": {},
                         "search_backend": "embedded", "bucket_size": 10000},
            "scoring": {}, "measures": {}, "queries": {"scored": 7, "unanswered": 7 if declined else 0},
            "coverage": {"period_filtered_answers": 0, "undated_files_excluded": 0,
                         "undated_files_matching_a_phrase": []},
            "rows": rows, "per_query": per_query}


def write_run(folder: Path, metrics: dict[str, Any], per_query: dict[str, Any] | None) -> None:
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(dumps(metrics), encoding="utf-8")
    if per_query is not None:
        (folder / "per_query.json").write_text(dumps(per_query), encoding="utf-8")


def write_stage4(bench: Path, per_query_beside_route: bool = True) -> None:
    metrics, per_query = metrics_doc(dict.fromkeys(ROUTES, 0.1), ROUTE_ARGS)
    write_run(bench / "route", metrics | {"digest_leg": digest_leg()}, per_query if per_query_beside_route else None)
    for name, misses in (("none", set(RULES)), ("product", {"agg-R7-2"}), ("reference", set())):
        metrics, per_query = metrics_doc({"s1": 0.1}, {"stage": "retrieve", "scope": "corpus", "size": 48})
        metrics["answers"] = answers_block(name, {q: q not in misses for q in RULES})
        write_run(bench / f"answers-{name}", metrics, per_query)


def generate(root: Path, out: Path) -> int:
    return main(["report", "reproduction", "--sweeps", str(root), "--bench-dir", str(root / "bench"),
                 "--out", str(out)])


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("var")
    write_stage4(root / "bench")
    out = root / "page.md"
    assert generate(root, out) == 0
    return out.read_text(encoding="utf-8")


def test_the_digest_leg_counts_and_shares(page: str) -> None:
    table = section(page, "Stage 4: the digest leg, measured as file selection")
    assert "Ours: `" in table and "bench/route/metrics.json` (its digest_leg block" in table
    assert row(table, "queries_scored")[1:] == ["**8 / 1651 (-1643)**", "[stage4-query-set]"]
    assert row(table, "routed_to_digest_tier")[1:] == ["**3 / 401 (-398)**", "[stage4-digest-counts]"]
    assert row(table, "summarize_class")[1:] == ["**2 / 404 (-402)**", "[stage4-summarize-class]"]
    assert row(table, "tier_returned_share")[1] == "100% / 100% (+0%)"
    # q2 and q3 found a gold digest; q3 is the rescue (its chunk leg had none): 2 - 1 already had it
    assert row(table, "digest_found_already_in_chunk_top10")[1] == "**1 / 77 (-76)**"
    assert row(table, "rescued_share_of_routed")[1:] == ["**33.33% / 3.99% (+29.34%)**",
                                                         "**unexplained** (value)"]
    assert row(table, "rescued_share_of_scored")[1] == "**12.50% / 0.97% (+11.53%)**"


def test_the_arithmetic_from_the_summarize_class_to_the_digest_tier(page: str) -> None:
    table = section(page, "Stage 4: from the summarize class to the digest tier")
    assert ("- ours step by step: 2 summarize-class − 0 the router sends elsewhere − 1 with a quoted phrase = 1; "
            "+ 2 of other classes routed to summarize without a quoted phrase (1 qmsum lookup, 1 synthetic "
            "multi_file) = 3 routed to the digest tier") in table
    assert row(table, "quoted_phrase")[1:] == ["**-1 / -5 (+4)**", "[stage4-quoted]"]
    assert row(table, "summarize_with_tier")[1] == "**1 / 399 (-398)**"
    assert row(table, "leaked_to_summarize")[1:] == ["+2 / +2 (+0)", "—"]  # q2 and s4, as printed
    # leakage: q2 (lookup) and s4 (multi_file) of the 4 lookup + 2 multi_file queries
    assert row(table, "leakage")[1] == "**33.333% / 0.104% (+33.229%)**"
    assert "ours 2 / 6. The methodology prints no denominator" in table


def test_the_router_confusion_is_per_class_with_the_corpora_split_in_a_note(page: str) -> None:
    table = section(page, "Stage 4: the router's confusion (row: the query's class; column: the class routed to)")
    assert row(table, "summarize")[1:5] == ["**2 / 404 (-402)**", "**2 / 404 (-402)**", "0 / —", "0 / —"]
    assert row(table, "lookup")[1:5] == ["**4 / 1222 (-1218)**", "1 / —", "**3 / 1220 (-1217)**", "0 / —"]
    assert row(table, "multi_file")[1:5] == ["**2 / 25 (-23)**", "1 / —", "**0 / 25 (-25)**", "1 / —"]
    assert row(table, "multi_file")[-1] == "[stage4-confusion-n] [stage4-router-rules]"
    assert ("- by corpus: qmsum lookup 2 → 1 lookup, 1 summarize; qmsum summarize 2 → 2 summarize; synthetic lookup "
            "2 → 2 lookup; synthetic multi_file 2 → 1 multi_file, 1 summarize") in table
    assert "its rows say where two of ragsweep's rules disagree" in table


def test_the_reference_answerer_per_rule(page: str) -> None:
    table = section(page, "the reference answerer on the synthetic aggregation class, per rule")
    assert "bench/answers-reference/metrics.json` (answerer reference" in table
    assert row(table, "all")[1:] == ["**7 / 20 (-13)**", "0 / 0 (+0)", "1.0000 / 1.0000 (+0.0000)",
                                     "1.0000 / 1.0000 (+0.0000)", "1.0000 / 1.0000 (+0.0000)", "[answers-query-set]"]
    assert row(table, "R7-agg-temporal-count")[1] == "**2 / 4 (-2)**"


def test_the_answerers_side_by_side(page: str) -> None:
    table = section(page, "the answerers on the aggregation class (EM; per rule exact / scored)")
    assert row(table, "none")[1:4] == ["0.000 / 0.000 (+0.000)", "**0/2 / 0/4**", "**0/1 / 0/4**"]
    # product misses one R7 of two: EM 6/7 against the printed 1.000, which no sentence covers
    product = row(table, "product")
    assert product[1] == "**0.857 / 1.000 (-0.143)**" and product[6] == "**1/2 / 4/4**"
    assert product[-1] == "[answers-rule-n] **unexplained** (EM)"
    assert row(table, "reference")[1:3] == ["1.000 / 1.000 (+0.000)", "**2/2 / 4/4**"]
    assert row(table, "product-before-v391")[1] == "not measured / 0.800"
    assert "there is no pre-v391 variant to run (6 cells)" in table


def test_the_metric_libraries_on_hand_built_inputs(page: str) -> None:
    table = section(page, "metric libraries on the same input, nDCG@10")
    assert row(table, "tie-gold-first")[1] == "0.630930 / 0.630930 (+0.000000)"
    assert row(table, "tie-gold-last")[1] == "1.000000 / 1.000000 (+0.000000)"
    assert row(table, "graded-3-2-1")[1] == "0.922495 / 0.922495 (+0.000000)"
    if importlib.util.find_spec("sklearn") is not None:
        assert row(table, "tie-gold-first")[3] == "**0.8 / 0.5 (+0.3)**"
        assert row(table, "tie-gold-first")[-1] == "[sklearn-tie-average]"
    if importlib.util.find_spec("ranx") is None:
        assert row(table, "tie-gold-first")[2] == "not measured / 1.000000"
        assert "- not measured: ranx cannot be imported here (ranx is not installed) (3 cells)" in table
    # ragsweep's bench path: a tie goes to the first file_uuid, so the gold that sorts first ranks first
    assert [row(table, k)[4] for k in ("graded-3-2-1", "tie-gold-first", "tie-gold-last")] == [
        "0.9225 / —", "1 / —", "0.6309 / —"]


def dcg(grades: list[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(grades))


@pytest.mark.parametrize("column", ["pytrec_eval", "sklearn", "ragsweep", "ranx"])
def test_each_library_against_ndcg_by_hand(column: str) -> None:
    module, _distribution, score = LIBRARIES[column]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed")
    graded = dcg([2, 3, 1]) / dcg([3, 2, 1])  # b_0 (2), a_0 (3), c_0 (1) against the ideal 3, 2, 1
    assert graded == pytest.approx(0.922495, abs=5e-7)
    second = 1 / math.log2(3)  # the gold document at rank 2
    tie_average = (1 + second) / 2  # sklearn: half a gain at each of the two tied positions
    expected = {"pytrec_eval": (graded, second, 1.0),  # trec_eval: ties by doc id descending
                "ranx": (graded, 1.0, second),  # insertion order
                "sklearn": (graded, tie_average, tie_average),
                "ragsweep": (graded, 1.0, second)}[column]  # (doc_type, file_uuid, chunk_index) ascending
    got = tuple(score(CASES[k]) for k in ("graded-3-2-1", "tie-gold-first", "tie-gold-last"))
    assert got == pytest.approx(expected, abs=1e-9)


def test_absent_stage4_results_say_what_to_run(tmp_path: Path) -> None:
    out = tmp_path / "page.md"
    assert generate(tmp_path / "empty", out) == 0
    page = out.read_text(encoding="utf-8")
    bench = tmp_path / "empty" / "bench"
    digest = section(page, "Stage 4: the digest leg, measured as file selection")
    assert digest.strip().splitlines()[-1] == (
        f"Methodology lines 470–477. not measured: no bench run at --stage route under {bench}; run "
        f"`ragsweep bench --state STATE --stage route --control-name route --out {bench}/route --workers 2`")
    answers = section(page, "the answerers on the aggregation class (EM; per rule exact / scored)")
    assert (f"`ragsweep bench --state STATE --corpus synthetic --answerer none --control-name answers-none "
            f"--out {bench}/answers-none --workers 2`") in answers


def test_without_per_query_the_arithmetic_says_why(tmp_path: Path) -> None:
    write_stage4(tmp_path / "bench", per_query_beside_route=False)
    out = tmp_path / "page.md"
    assert generate(tmp_path, out) == 0
    table = section(out.read_text(encoding="utf-8"), "Stage 4: from the summarize class to the digest tier")
    assert row(table, "summarize_with_tier")[1] == "not measured / 399"
    assert "- not measured: no per_query.json beside the route run (" in table
    assert row(table, "leakage")[1] == "**33.333% / 0.104% (+33.229%)**"  # from the confusion alone
    assert row(table, "routed_to_digest_tier")[1] == "**3 / 401 (-398)**"


def test_a_malformed_digest_leg_is_one_line_naming_the_field(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    write_stage4(tmp_path / "bench")
    path = tmp_path / "bench" / "route" / "metrics.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    del doc["digest_leg"]["rescued"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "page.md"
    capsys.readouterr()
    assert generate(tmp_path, out) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.endswith(f"{path}: digest_leg.rescued is missing")
    assert not out.exists()


def test_every_stage4_table_is_transcribed() -> None:
    ids = {t.id for t in load_tables().tables}
    assert {"stage4-digest-leg", "stage4-digest-arithmetic", "stage4-router-confusion", "answers-reference",
            "answers-answerers", "metric-libraries"} <= ids
