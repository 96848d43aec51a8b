"""The hand-written QMSum-format fixture through inspect, state build, judge, bench and score.

Uses the real embedding model (all-MiniLM-L6-v2 from its PyPI package) and the real
metric engine; nothing is mocked.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.bench.runinfo import RunInfo
from harness.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
MANIFEST = FIXTURE / "SOURCES.tsv"

pytestmark = pytest.mark.integration


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers")
    out = tmp_path_factory.mktemp("e2e") / "state"
    code = main(["state", "build", "--corpus", f"qmsum={FIXTURE}", "--manifest", f"qmsum={MANIFEST}",
                 "--out", str(out)])
    assert code == 0
    return out


def test_inspect_reports_the_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["corpus", "inspect", "qmsum", "--dest", str(FIXTURE), "--manifest", str(MANIFEST), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"] == 4


def test_two_runs_are_byte_identical(state: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert main(["bench", "--state", str(state), "--control-name", "fixture", "--out", str(tmp_path / name)]) == 0
    for artefact in ("metrics.json", "metrics.md", "per_query.json", "run.trec", "qrels.trec"):
        assert _sha(tmp_path / "a" / artefact) == _sha(tmp_path / "b" / artefact), artefact
    RunInfo.model_validate_json((tmp_path / "a" / "runinfo.json").read_bytes())  # the bench stage's model


def test_results_name_what_they_measured(state: Path, tmp_path: Path) -> None:
    assert main(["bench", "--state", str(state), "--control-name", "fixture", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["metric_engine"]["name"] == "pytrec_eval_terrier" and doc["metric_engine"]["version"] == "0.5.10"
    assert doc["index"]["embedding_verdict"] == "uniform"
    assert doc["index"]["embedding_models"] == {doc["index"]["configured_embedding_model"]: doc["index"]["documents"]}
    assert doc["retrieval"]["fusion"]["selected_explicitly"] is False
    assert doc["relevance_policy"]["high"] == 0.5
    assert doc["corpora"][0]["artefacts_sha256"]
    assert doc["queries"]["scored"] + doc["queries"]["dropped_unjudgeable"] == 12
    assert "elapsed_seconds" not in json.dumps(doc)
    rows = {(r["corpus"], r["query_class"]): r for r in doc["rows"]}
    assert rows[("qmsum", "all")]["n"] == rows[("qmsum", "lookup")]["n"] + rows[("qmsum", "summarize")]["n"]


def test_score_reproduces_the_bench_numbers_from_trec_files(state: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--state", str(state), "--control-name", "fixture", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["score", "--qrels", str(tmp_path / "qrels.trec"), "--run", str(tmp_path / "run.trec"), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    all_row = next(r for r in metrics["rows"] if r["query_class"] == "all")
    for name in ("nDCG@5", "nDCG@10", "nDCG@20", "R@10", "MRR"):
        assert scored["measures"][name] == pytest.approx(all_row["metrics"][name], abs=1e-12)


def test_gold_files_scope_is_an_upper_bound(state: Path, tmp_path: Path) -> None:
    assert main(["bench", "--state", str(state), "--control-name", "c", "--out", str(tmp_path / "c")]) == 0
    assert main(["bench", "--state", str(state), "--control-name", "g", "--scope", "gold-files",
                 "--out", str(tmp_path / "g")]) == 0
    corpus = json.loads((tmp_path / "c" / "metrics.json").read_text())["rows"][-1]["metrics"]
    gold = json.loads((tmp_path / "g" / "metrics.json").read_text())["rows"][-1]["metrics"]
    assert gold["fileR@1"] == 1.0
    assert gold["nDCG@10"] >= corpus["nDCG@10"]


def test_compare_prints_per_class_deltas(state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--state", str(state), "--control-name", "ctl", "--out", str(tmp_path / "ctl")]) == 0
    assert main(["bench", "--state", str(state), "--control-name", "rrf60", "--fusion", "rrf", "--rank-constant",
                 "60", "--out", str(tmp_path / "arm"), "--compare", str(tmp_path / "ctl" / "metrics.json")]) == 0
    text = (tmp_path / "arm" / "compare.md").read_text()
    assert "rrf60 vs ctl" in text and "| qmsum | A | lookup |" in text


def test_bm25_filters_do_not_score_and_operator_words_are_plain_words(state: Path) -> None:
    from harness.index.embedded import EmbeddedIndex

    index = EmbeddedIndex(state / "index")
    files = sorted({d["file_uuid"] for d in index.docs})
    plain = index.bm25("remote control buttons", 5)
    scoped = index.bm25("remote control buttons", 5, file_uuids=files)
    assert plain and [(h.doc_id, h.score) for h in plain] == [(h.doc_id, h.score) for h in scoped]
    assert index.bm25("what did we decide IN the meeting AND NOT later", 5)  # no query-syntax error


def test_the_knn_leg_gathers_its_plane_once_and_scores_what_a_fresh_gather_scores(state: Path) -> None:
    import numpy as np

    from harness.index.embedded import EmbeddedIndex, top_by_score_then_row

    index = EmbeddedIndex(state / "index")
    matrix = index.vectors("header")
    rng = np.random.default_rng(7)
    for doc_type, rows in (("chunk", np.flatnonzero(index._row_is_chunk)),
                           ("digest", np.flatnonzero(~index._row_is_chunk))):
        for _ in range(5):
            query = rng.standard_normal(matrix.shape[1]).astype(np.float32)
            # what the leg computed before it kept the plane: the rows gathered afresh for this query
            scores = (1.0 + (matrix[rows] @ query).astype(np.float64)) / 2.0
            expected = [(index.docs[int(rows[i])]["id"], float(scores[i]))
                        for i in top_by_score_then_row(scores, 7)]
            assert [(h.doc_id, h.score) for h in index.knn(query, 7, mode="header", doc_type=doc_type)] == expected
        assert index._plane("header", doc_type)[1] is index._plane("header", doc_type)[1]
    files = sorted(index.file_ids)[:1]
    scoped = index.knn(rng.standard_normal(matrix.shape[1]).astype(np.float32), 500, mode="header", file_uuids=files)
    assert scoped and {index.record(h.doc_id).file_uuid for h in scoped} == set(files)
    assert len(scoped) == sum(d["file_uuid"] in files and d["doc_type"] == "chunk" for d in index.docs)


def test_a_mixed_vector_space_is_refused_with_exit_3_and_nothing_written(state: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    mixed = tmp_path / "mixed-state"
    shutil.copytree(state, mixed)
    docs = (mixed / "index" / "docs.jsonl").read_text().splitlines()
    relabelled = []
    for i, line in enumerate(docs):
        record = json.loads(line)
        if i % 2:
            record["embedding_model"]["header"] = "other-model@sha256:0000000000000000"
        relabelled.append(json.dumps(record, sort_keys=True))
    (mixed / "index" / "docs.jsonl").write_text("\n".join(relabelled) + "\n")
    out = tmp_path / "out"
    assert main(["bench", "--state", str(mixed), "--control-name", "mixed", "--out", str(out)]) == 5  # edited
    capsys.readouterr()
    # as a state built mixed would record it (ingest shards from two models): its digests agree with it
    from harness.state.contents import contents_block

    claim = json.loads((mixed / "state.json").read_text())
    claim["contents"] = contents_block(mixed, claim)
    (mixed / "state.json").write_text(json.dumps(claim))
    assert main(["bench", "--state", str(mixed), "--control-name", "mixed", "--out", str(out)]) == 3
    assert "mixed vector space" in capsys.readouterr().err
    assert not out.exists()
