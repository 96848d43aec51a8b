"""Pins the methodology's "Metric implementation matters" table and the -c semantics."""

from __future__ import annotations

import math

import pytest

from harness.metrics.engine import evaluate, mean
from harness.metrics.normalise import normalise_run
from harness.model import Qrels, RankedDoc, Run

pytrec_eval = pytest.importorskip("pytrec_eval")


def _run(qid: str, docs: list[tuple[str, float]]) -> Run:
    return Run(ranked={qid: tuple(RankedDoc(doc_id=d, score=s) for d, s in docs)})


def test_graded_3_2_1_ndcg10_is_0_922495() -> None:
    # DCG  = 2/log2(2) + 3/log2(3) + 1/log2(4) = 2 + 1.892789 + 0.5 = 4.392789
    # IDCG = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.261860 + 0.5 = 4.761860
    qrels = Qrels(judgements={"q": {"a": 3, "b": 2, "c": 1}})
    run = normalise_run(_run("q", [("b", 3.0), ("a", 2.0), ("c", 1.0)]))
    result = evaluate(qrels, run)
    expected = (2 + 3 / math.log2(3) + 0.5) / (3 + 2 / math.log2(3) + 0.5)
    assert result.per_query["q"]["nDCG@10"] == pytest.approx(expected, abs=1e-9)
    assert round(result.per_query["q"]["nDCG@10"], 6) == 0.922495


def test_raw_trec_eval_lets_the_doc_id_decide_a_tie() -> None:
    # The instrument's hazard, shown on the raw engine: at equal score trec_eval ranks by
    # doc id descending, so the same retrieval scores 0.630930 or 1.0 by naming alone.
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {"a_gold": 1}}, {"ndcg_cut.10"})
    gold_first = evaluator.evaluate({"q": {"a_gold": 1.0, "b_other": 1.0}})["q"]["ndcg_cut_10"]
    evaluator = pytrec_eval.RelevanceEvaluator({"q": {"z_gold": 1}}, {"ndcg_cut.10"})
    gold_last = evaluator.evaluate({"q": {"z_gold": 1.0, "b_other": 1.0}})["q"]["ndcg_cut_10"]
    assert gold_first == pytest.approx(1 / math.log2(3))  # 0.630930
    assert gold_last == pytest.approx(1.0)


def test_normalisation_makes_both_tie_orderings_score_the_same() -> None:
    def score(gold_id: str, other_id: str) -> float:
        docs = (
            RankedDoc(doc_id=other_id, score=1.0, file_uuid="f2", chunk_index=0),
            RankedDoc(doc_id=gold_id, score=1.0, file_uuid="f1", chunk_index=3),
        )
        run = normalise_run(Run(ranked={"q": docs}))
        return evaluate(Qrels(judgements={"q": {gold_id: 1}}), run).per_query["q"]["nDCG@10"]

    # f1 < f2, so by the tie policy the gold chunk is first whatever it is called
    assert score("a_gold", "b_other") == score("z_gold", "b_other") == pytest.approx(1.0)


def test_ndcg_cut_truncates_the_ideal() -> None:
    # 20 relevant documents, the run returns 10 of them at the top.
    relevant = [f"d{i:02d}" for i in range(20)]
    qrels = {"q": dict.fromkeys(relevant, 1)}
    run = {"q": {d: float(100 - i) for i, d in enumerate(relevant[:10])}}
    cut = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)["q"]["ndcg_cut_10"]
    bare = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)["q"]["ndcg"]
    dcg10 = sum(1 / math.log2(i + 2) for i in range(10))
    idcg20 = sum(1 / math.log2(i + 2) for i in range(20))
    assert cut == pytest.approx(1.0)
    assert bare == pytest.approx(dcg10 / idcg20)
    assert round(bare, 3) == 0.645
    ours = evaluate(Qrels(judgements=qrels), normalise_run(_run("q", list(run["q"].items()))))
    assert ours.per_query["q"]["nDCG@10"] == pytest.approx(1.0)


def test_unanswered_query_scores_zero_and_lowers_the_mean() -> None:
    qrels = Qrels(judgements={"q1": {"a": 1}, "q2": {"b": 1}})
    run = normalise_run(_run("q1", [("a", 1.0)]))
    result = evaluate(qrels, run)
    assert result.unanswered == ("q2",)
    assert result.per_query["q2"] == dict.fromkeys(result.measures, 0.0)
    assert mean(result.per_query, "nDCG@10") == pytest.approx(0.5)
    # the substitution the -c semantics exists to prevent: a mean over returned queries
    raw = pytrec_eval.RelevanceEvaluator(qrels.judgements, {"ndcg_cut.10"}).evaluate({"q1": {"a": 1.0}})
    assert sum(v["ndcg_cut_10"] for v in raw.values()) / len(raw) == pytest.approx(1.0)


def test_empty_ranked_list_is_unanswered() -> None:
    qrels = Qrels(judgements={"q1": {"a": 1}})
    result = evaluate(qrels, Run(ranked={"q1": ()}))
    assert result.unanswered == ("q1",)
    assert result.per_query["q1"]["MRR"] == 0.0


def test_query_only_in_run_is_ignored() -> None:
    qrels = Qrels(judgements={"q1": {"a": 1}})
    run = normalise_run(Run(ranked={"q1": (RankedDoc(doc_id="a", score=1.0),),
                                    "qx": (RankedDoc(doc_id="z", score=1.0),)}))
    result = evaluate(qrels, run)
    assert sorted(result.per_query) == ["q1"]


def _convention(style: str, file_uuid: str, doc_type: str, n: int) -> str:
    if style == "native":
        return f"{file_uuid}_digest" if doc_type == "digest" else f"{file_uuid}_{n}"
    return f"summary-{file_uuid}" if doc_type == "digest" else f"zz-{n:04d}-{file_uuid}"


@pytest.mark.parametrize("stage", ["retrieve", "rerank"])
def test_doc_id_convention_swap_leaves_every_metric_unchanged(stage: str) -> None:
    layout = [  # (file, doc_type, chunk_index, score, grade) with deliberate ties
        ("f1", "chunk", 0, 0.5, 2), ("f1", "digest", 0, 0.5, 0), ("f1", "chunk", 1, 0.5, 1),
        ("f2", "chunk", 0, 0.9, 0), ("f2", "chunk", 7, 0.5, 2), ("f3", "chunk", 2, 0.1, 1),
    ]
    results = []
    for style in ("native", "other"):
        docs = tuple(
            RankedDoc(doc_id=_convention(style, f, t, n), score=s, doc_type=t, file_uuid=f, chunk_index=n)  # type: ignore[arg-type]
            for f, t, n, s, _g in layout
        )
        qrels = {"q": {_convention(style, f, t, n): g for f, t, n, _s, g in layout if g}}
        run = normalise_run(Run(ranked={"q": docs}), stage=stage)  # type: ignore[arg-type]
        results.append(evaluate(Qrels(judgements=qrels), run).per_query["q"])
    assert results[0] == results[1]


def test_retrieve_stage_sorts_and_rerank_stage_keeps_order() -> None:
    docs = (
        RankedDoc(doc_id="x", score=0.1, file_uuid="f2"),
        RankedDoc(doc_id="y", score=0.9, file_uuid="f1"),
    )
    retrieve = normalise_run(Run(ranked={"q": docs}), "retrieve").ranked["q"]
    rerank = normalise_run(Run(ranked={"q": docs}), "rerank").ranked["q"]
    assert [d.doc_id for d in retrieve] == ["y", "x"]
    assert [d.doc_id for d in rerank] == ["x", "y"]
    assert [d.score for d in rerank] == [2.0, 1.0]
    # and the engine ranks exactly that order: gold "x" first in rerank -> MRR 1
    qrels = Qrels(judgements={"q": {"x": 1}})
    assert evaluate(qrels, Run(ranked={"q": rerank})).per_query["q"]["MRR"] == 1.0
    assert evaluate(qrels, Run(ranked={"q": retrieve})).per_query["q"]["MRR"] == 0.5
