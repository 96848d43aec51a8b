"""The reproduction page's index tables: the stage-1 ablation by state, header against body, the reranker.

Real results files (tests/reproduction_fixtures.py): stage-1 runs on the default state (its index
holds the synthetic files too) and on QMSum-only states, whose paths sort first on purpose, so a
page that took the first run by path for the methodology's stage-1 tables would take the
ablation's; the embedding family collected by the real collector with the methodology's own Stage 3
deltas; rerank arms whose metrics.json record a trained reranker.
"""

from __future__ import annotations

import pytest

from harness.cli import main
from tests.reproduction_fixtures import publish_sweep, write_bench_run

TWO_CORPUS = {"corpus": 0.0937, "gold-files": 0.3148}
QMSUM_HEADER = {"corpus": 0.0950, "gold-files": 0.3200}
QMSUM_BODY = {"corpus": 0.1000, "gold-files": 0.3296}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("var")
    publish_sweep(root, "budget-two", ("budget",))
    publish_sweep(root, "embedding-two", ("embedding",))
    publish_sweep(root, "diversity-two", ("diversity",))
    bench = root / "bench"
    for scope in ("corpus", "gold-files"):
        write_bench_run(bench / f"scope-{scope}", scope, TWO_CORPUS[scope])
        write_bench_run(bench / f"a-qmsum-only-header-{scope}", scope, QMSUM_HEADER[scope], qmsum_only=True)
        write_bench_run(bench / f"a-qmsum-only-body-{scope}", scope, QMSUM_BODY[scope], qmsum_only=True,
                        embedding_text="body")
    out = tmp_path_factory.mktemp("docs") / "reproduction.md"
    assert main(["report", "reproduction", "--sweeps", str(root), "--bench-dir", str(bench), "--out", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def section(page: str, title: str) -> str:
    start = page.index(f"### {title}\n")
    ends = [e for e in (page.find("\n### ", start + 1), page.find("\n## ", start + 1)) if e >= 0]
    return page[start:min(ends)]


def row(text: str, key: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {key} |") or x.startswith(f"| {key}: "))
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_the_methodology_stage1_tables_come_from_the_default_state_not_the_ablation(page: str) -> None:
    corpus = section(page, "stage 1, corpus scope (QMSum)")
    assert "scope-corpus/metrics.json" in corpus and "qmsum-only" not in corpus.split("\n|")[0]
    assert row(corpus, "all")[3] == "**0.0937 / 0.1052 (-0.0115)**"
    gold = section(page, "stage 1, gold-files scope (QMSum)")
    assert row(gold, "all")[3] == "**0.3148 / 0.3296 (-0.0148)**"


def test_the_ablation_tables_come_from_the_qmsum_only_body_state(page: str) -> None:
    corpus = section(page, "stage 1, corpus scope (QMSum), on a QMSum-only state embedding the bare chunk text")
    assert "a-qmsum-only-body-corpus/metrics.json" in corpus
    assert row(corpus, "all")[3] == "0.1000 / 0.1052 (-0.0052)"
    gold = section(page, "stage 1, gold-files scope (QMSum), on a QMSum-only state embedding the bare chunk text")
    assert row(gold, "all")[3] == "0.3296 / 0.3296 (+0.0000)"


def test_the_gap_table_puts_the_three_states_side_by_side_and_says_what_each_closes(page: str) -> None:
    gap = section(page, "stage 1 by state: QMSum all class nDCG@10 at each scope")
    assert row(gap, "corpus")[1:4] == ["**0.0937 / 0.1052 (-0.0115)**", "**0.0950 / 0.1052 (-0.0102)**",
                                       "0.1000 / 0.1052 (-0.0052)"]
    # (0.0950 - 0.0937) / (0.1052 - 0.0937) = 11%, (0.1000 - 0.0937) / 0.0115 = 55%
    assert ("at corpus scope the two-corpus state's 0.0937 is -0.0115 (-10.9%) from the methodology's 0.1052; "
            "QMSum-only header 0.0950 closes 11% of it; QMSum-only body 0.1000 closes 55% of it.") in gap
    assert "unexplained" not in gap


def test_header_against_body_is_the_embedding_family_with_the_methodology_sign(page: str) -> None:
    table = section(page, "embedding family: the title/date/roster header against the bare chunk text "
                          "(index v6 against pre-v6)")
    assert "embedding-two/comparison.json" in table and "arm embed-body" in table
    qmsum = row(table, "qmsum all")
    # the control is 0.0983 and the body arm 0.0983 - 0.0181: pre-v6 is the body, v6 the header, Δ header - body
    assert qmsum[2:5] == ["0.0802 / 0.0802 (+0.0000)", "0.0983 / 0.0983 (+0.0000)", "+0.0181 / +0.0181 (+0.0000)"]
    synthetic = row(table, "synthetic all")
    assert synthetic[4] == "+0.0210 / +0.0210 (+0.0000)"
    assert synthetic[5] == "**+0.0105 / +0.0383 (-0.0278)**"  # nDCG@5 is half of nDCG@10 in the fixture


def test_every_rerank_table_names_the_reranker_and_why_it_is_not_the_methodologys(page: str) -> None:
    budget = section(page, "budget family (475-query subset in the methodology)")
    assert "cross-encoder/ms-marco-MiniLM-L6-v2" in budget and "cannot be installed here" in budget
    assert ("reranker of every rerank row: `ragsweep reranker train` on all-MiniLM-L6-v2@sha256:53aa51172d142c89 "
            "(weights sha256 abababababab…): 300 steps, 4000 pairs from the synthetic corpus otsynth-v1+gen1.0.0 "
            "of seed 424242") in budget


def test_the_families_the_methodology_did_not_measure_get_rows_of_their_own_outside_the_pooled_set(page: str) -> None:
    arms = section(page, "per-arm Δ against the family control, all class nDCG@10")
    assert row(arms, "embed-body")[1:4] == ["-0.0181 / —", "-0.0210 / —", "agree / —"]
    assert row(arms, "rerank-48-12-4")[1:3] == ["-0.0194 / —", "-0.0780 / —"]
    coefficients = section(page, "agreement coefficients, all class")
    assert row(coefficients, "diversity")[0] == "diversity: not in the methodology"
    assert row(coefficients, "diversity")[1] == "3 / —"
    assert row(coefficients, "embedding")[1] == "1 / —"
    # the pooled set stays the methodology's families (here only budget is measured): 8 arms, not 12
    assert row(coefficients, "pooled")[1] == "**8 / 21 (-13)**"


def test_the_diversity_table_decomposes_the_rerank_stage_loss(page: str) -> None:
    table = section(page, "retrieval top-12 vs the rerank stage, nDCG@10 all")
    assert row(table, "diversity-only")[0] == "diversity-only: not in the methodology: pool 48, diversity_sample, " \
                                              "no cross-encoder"
    assert row(table, "diversity-only")[2] == "-0.0100 / —"
    # the contrasts: the cross-encoder's selection (rerank vs diversity-only), diversity_sample's (vs retrieve-48)
    assert "rerank-48-12-4 against diversity-only, all-class nDCG@10 Δ: qmsum -0.0094 (p " in table
    assert "diversity-only against retrieve-48, all-class nDCG@10 Δ: qmsum -0.0141 (p " in table
