"""The stack backend against the real OpenSearch that `make stack-up` starts.

Skips, printing why, when RAGSWEEP_OPENSEARCH_URL is unset or the node does not answer;
fails instead when RAGSWEEP_REQUIRE_STACK=1. Indexes a test mutates are its own (a
unique name), deleted afterwards; the fixture state's index is only read.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.cli import main
from harness.errors import IntegrityError
from harness.index.documents import doc_from_record
from harness.index.opensearch.backend import OpenSearchBackend
from harness.index.opensearch.client import URL_ENV, OpenSearchClient
from harness.index.opensearch.mapping import index_body
from harness.index.opensearch.settle import IndexingGuard, await_settled, settle_for_measurement
from harness.index.opensearch.writer import build_stack_index, bulk_index, create_index
from harness.index.provenance import survey
from harness.state import State
from harness.state.contents import contents_block

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).parent / "fixtures" / "qmsum"
MANIFEST = FIXTURE / "SOURCES.tsv"


def unavailable(reason: str) -> None:
    if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
        pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
    pytest.skip(reason)


def stack_client() -> OpenSearchClient:
    url = os.environ.get(URL_ENV)
    if not url:
        unavailable(f"{URL_ENV} is unset: the local stack is not up (make stack-up)")
    client = OpenSearchClient(str(url), deadline=2.0)
    try:
        client.version()
    except Exception as e:  # any failure to answer is "not available"
        unavailable(f"OpenSearch at {url} does not answer: {e}")
    return client


def build_stack_state(out: Path) -> Path:
    pytest.importorskip("sentence_transformers")
    code = main(["state", "build", "--backend", "stack", "--corpus", f"qmsum={FIXTURE}",
                 "--manifest", f"qmsum={MANIFEST}", "--out", str(out)])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def client() -> OpenSearchClient:
    return stack_client()


@pytest.fixture(scope="module")
def state_path(client: OpenSearchClient, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_stack_state(tmp_path_factory.mktemp("stack") / "state")


@pytest.fixture(scope="module")
def state(state_path: Path) -> State:
    return State.open(state_path)


@pytest.fixture
def scratch(client: OpenSearchClient) -> Iterator[list[str]]:
    """Names of scratch indexes a test creates; all deleted afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        client.request("DELETE", f"/{name}", missing_ok=True)


def scratch_name(names: list[str]) -> str:
    names.append(f"ragsweep-test-{uuid.uuid4().hex[:12]}")
    return names[-1]


def state_docs(state: State) -> list[Any]:
    return [doc_from_record(d) for d in state.index.docs]


def copy_state_onto(state: State, tmp: Path, client: OpenSearchClient, names: list[str],
                    models: list[dict[str, str]] | None = None) -> Path:
    """A copy of the state whose stack block names a fresh scratch index of the same documents."""
    out = tmp / "copy"
    shutil.copytree(state.path, out)
    identity = {"test": uuid.uuid4().hex}
    block = build_stack_index(out / "index", state_docs(state), identity, client=client)
    names.append(block["index"])
    if models is not None:  # re-write the documents in two halves, each half naming its own model
        docs = state_docs(state)
        vectors = {m: np.load(out / "index" / e["file"]) for m, e in state.index.meta["embedding"].items()}
        half = len(docs) // 2
        bulk_index(client, block["index"], docs[:half], {m: v[:half] for m, v in vectors.items()}, models[0])
        bulk_index(client, block["index"], docs[half:], {m: v[half:] for m, v in vectors.items()}, models[1])
    manifest = json.loads((out / "state.json").read_text())
    manifest["stack"] = {**manifest["stack"], "index": block["index"], "state_identity": block["state_identity"]}
    (out / "build.json").write_text(json.dumps({"stack": {"dispatched_at": block["dispatched_at"]}}))
    manifest["contents"] = contents_block(out, manifest)  # a state of its own: its claim re-recorded
    (out / "state.json").write_text(json.dumps(manifest))
    return out


# --------------------------------------------------------------------------------- building


def test_state_build_indexes_every_document(state: State, client: OpenSearchClient) -> None:
    stack = state.manifest["stack"]
    assert state.manifest["backend"] == "stack"
    meta = state.index.meta
    assert (stack["documents"], stack["chunk_documents"], stack["digest_documents"], stack["files"]) == (
        meta["documents"], meta["chunk_documents"], meta["digest_documents"], meta["files"]) == (80, 56, 24, 4)
    backend = OpenSearchBackend(client, stack["index"])
    assert backend.counts() == {"documents": 80, "docs_deleted": 0, "chunk_documents": 56, "digest_documents": 24,
                                "files": 4}
    settle = (state.stack_block() or {})["settle"]  # build.json: when and how long live apart from the claim
    assert settle["segments"] == 1 and settle["chunks"] == 56
    model = meta["embedding"]["header"]["model"]
    assert stack["provenance"]["header"]["embedding_verdict"] == "uniform"
    assert stack["provenance"]["header"]["embedding_models"] == {model: 80}
    assert stack["provenance"]["header"]["embedding_dimension"] == 384
    assert backend.mapping["_meta"] == {"version": 1, "state_identity": stack["state_identity"], "analysis": "mirror"}
    # a sampled record came through whole
    doc = state.index.docs[5]
    record = backend.record(doc["id"])
    assert (record.file_uuid, record.chunk_index, record.speaker, record.content) == (
        doc["file_uuid"], doc["chunk_index"], doc["speaker"], doc["content"])


def test_legs_agree_with_the_embedded_backend(state: State, client: OpenSearchClient) -> None:
    """BM25: same order; embedded = (k1+1) x Lucene (tantivy keeps BM25's (k1+1) factor, Lucene dropped it;
    filters score nothing on either side). kNN: within 4 ulps."""
    from harness.index.embed import SentenceTransformerEmbedder

    backend = OpenSearchBackend(client, state.manifest["stack"]["index"])
    queries = sorted((q for c in state.corpora for q in c.queries), key=lambda q: q.id)
    vectors = SentenceTransformerEmbedder().encode([q.text for q in queries])
    for query, vector in zip(queries, vectors, strict=True):
        emb, ours = state.index.bm25(query.text, 100), backend.bm25(query.text, 100)
        assert [h.doc_id for h in ours] == [h.doc_id for h in emb], query.id
        for e, o in zip(emb, ours, strict=True):
            assert e.score == pytest.approx(2.2 * o.score, rel=2e-6), (query.id, e.doc_id)
        emb_knn, our_knn = state.index.knn(vector, 100, mode="header"), backend.knn(vector, 100, mode="header")
        assert [h.doc_id for h in our_knn] == [h.doc_id for h in emb_knn], query.id
        for e, o in zip(emb_knn, our_knn, strict=True):
            # Lucene's cosine (dot / sqrt(|q|^2 |d|^2), SIMD float sums) vs numpy's sgemv dot of unit vectors:
            # observed at most 2 float32 ulps apart; 4 is the bound this test holds them to
            ulps = abs(float(np.float32(e.score)) - o.score) / float(np.spacing(np.float32(o.score)))
            assert ulps <= 4, (query.id, e.doc_id, ulps)


def test_phrase_buckets_match_the_embedded_backend_and_truncation_raises(state: State,
                                                                        client: OpenSearchClient) -> None:
    backend = OpenSearchBackend(client, state.manifest["stack"]["index"])
    for phrase in ("remote control", "the", "playground surfacing", "no such phrase anywhere"):
        assert backend.phrase_file_buckets(phrase) == state.index.phrase_file_buckets(phrase), phrase
    everywhere = backend.phrase_file_buckets("the")
    assert len(everywhere) == 4
    with pytest.raises(IntegrityError, match="truncated at size 1"):
        backend.phrase_file_buckets("the", size=1)


# ---------------------------------------------------------------------------------- settling


def test_settle_refuses_an_incomplete_index(state: State, client: OpenSearchClient, scratch: list[str]) -> None:
    name = scratch_name(scratch)
    docs = state_docs(state)
    vectors = {"header": np.load(state.path / "index" / "vectors-header.npy")}
    create_index(client, name, index_body({"header": 384}, analysis="mirror", meta={}))
    files = sorted({d.file_uuid for d in docs})
    partial = [i for i, d in enumerate(docs) if d.file_uuid != files[-1]]  # one file not written yet
    bulk_index(client, name, [docs[i] for i in partial], {"header": vectors["header"][partial]},
               {"header": "m@sha256:1"})
    with pytest.raises(IntegrityError, match=r"1 of 4 expected files have no chunks yet"):
        await_settled(client, name, files, None, interval=0.2, timeout=1.0)
    # written before the dispatch: the reindex that should replace it has not started
    later = 2**41
    with pytest.raises(IntegrityError, match=r"documents were indexed before the dispatch"):
        await_settled(client, name, files[:-1], later, interval=0.2, timeout=1.0)
    # complete and newer than the dispatch: settles, and force-merges to one segment
    rest = [i for i, d in enumerate(docs) if d.file_uuid == files[-1]]
    bulk_index(client, name, [docs[i] for i in rest], {"header": vectors["header"][rest]}, {"header": "m@sha256:1"})
    report = settle_for_measurement(client, name, files, 0, interval=0.2, timeout=30)
    assert (report.files, report.chunks, report.segments, report.docs_deleted) == (4, 56, 1, 0)


def test_indexing_total_voids_a_measurement(state: State, client: OpenSearchClient, scratch: list[str]) -> None:
    name = scratch_name(scratch)
    docs = state_docs(state)[:3]
    vectors = {"header": np.load(state.path / "index" / "vectors-header.npy")[:3]}
    create_index(client, name, index_body({"header": 384}, analysis="mirror", meta={}))
    bulk_index(client, name, docs, vectors, {"header": "m@sha256:1"})
    with IndexingGuard(client, name) as guard:
        client.request("POST", f"/{name}/_search", {"query": {"match_all": {}}})  # reads change nothing
    assert guard.before == guard.after == 3
    with pytest.raises(IntegrityError, match=r"took 1 writes during the measurement \(indexing.total 3 -> 4\)"), \
            IndexingGuard(client, name):
        bulk_index(client, name, docs[:1], {"header": vectors["header"][:1]}, {"header": "m@sha256:1"})


def test_a_write_during_bench_voids_it_and_writes_nothing(state: State, client: OpenSearchClient,
                                                          scratch: list[str], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.retrieval import server_fusion

    copy = copy_state_onto(state, tmp_path, client, scratch)
    index = json.loads((copy / "state.json").read_text())["stack"]["index"]
    original = server_fusion.ServerFusionRetriever.retrieve
    written: list[bool] = []

    def retrieve_and_write(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not written:  # a reindex touching one document mid-measurement
            client.request("POST", f"/{index}/_update/{state.index.docs[0]['id']}",
                           {"doc": {"speaker": state.index.docs[0]["speaker"]}, "detect_noop": False})
            written.append(True)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(server_fusion.ServerFusionRetriever, "retrieve", retrieve_and_write)
    out = tmp_path / "out"
    assert main(["bench", "--state", str(copy), "--backend", "stack", "--control-name", "void",
                 "--out", str(out)]) == 5
    assert written and not (out / "metrics.json").exists()


# ---------------------------------------------------------------------------------- provenance


def test_survey_verdicts_read_from_the_documents(state: State, client: OpenSearchClient,
                                                 scratch: list[str]) -> None:
    docs = state_docs(state)[:4]
    vectors = {"header": np.load(state.path / "index" / "vectors-header.npy")[:4]}
    cases = {
        "empty": [],
        "uniform": [{"header": "a@sha256:1"}] * 4,
        "unattributed": [{"header": "neural"}] * 4,
        "partially_unattributed": [{"header": "a@sha256:1"}] * 3 + [{}],
        "mixed": [{"header": "a@sha256:1"}] * 2 + [{"header": "b@sha256:2"}] * 2,
    }
    for verdict, models in cases.items():
        name = scratch_name(scratch)
        create_index(client, name, index_body({"header": 384}, analysis="mirror", meta={}))
        for i, model in enumerate(models):
            bulk_index(client, name, docs[i:i + 1], {"header": vectors["header"][i:i + 1]}, model)
        client.request("POST", f"/{name}/_refresh")
        backend = OpenSearchBackend(client, name)
        block = survey(backend.embedding_models("header"), dimension=backend.dimension("header"), configured="a")
        assert block["embedding_verdict"] == verdict, (verdict, block)
        assert block["embedding_dimension"] == 384
        assert block["documents"] == len(models)


def test_bench_refuses_a_mixed_vector_space_with_exit_3(state: State, client: OpenSearchClient,
                                                       scratch: list[str], tmp_path: Path) -> None:
    model = state.index.meta["embedding"]["header"]["model"]
    copy = copy_state_onto(state, tmp_path, client, scratch,
                           models=[{"header": model}, {"header": "other-model@sha256:0123456789abcdef"}])
    out = tmp_path / "out"
    assert main(["bench", "--state", str(copy), "--backend", "stack", "--control-name", "mixed",
                 "--out", str(out)]) == 3
    assert not (out / "metrics.json").exists()


# ------------------------------------------------------------------------------------- bench


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_bench_on_the_stack_ranks_exactly_as_the_embedded_backend(state_path: Path, tmp_path: Path) -> None:
    runs = {"embedded": ["--backend", "embedded"], "server": ["--backend", "stack"],
            "client": ["--backend", "stack", "--fusion-mode", "client"]}
    for name, flags in runs.items():
        assert main(["bench", "--state", str(state_path), "--control-name", "fx", "--out", str(tmp_path / name),
                     *flags]) == 0
    rows = {name: json.loads((tmp_path / name / "metrics.json").read_text())["rows"] for name in runs}
    assert rows["server"] == rows["embedded"] == rows["client"]
    assert _sha(tmp_path / "server" / "run.trec") == _sha(tmp_path / "embedded" / "run.trec")
    assert _sha(tmp_path / "client" / "run.trec") == _sha(tmp_path / "embedded" / "run.trec")
    doc = json.loads((tmp_path / "server" / "metrics.json").read_text())
    assert doc["retrieval"]["backend"] == "stack" and doc["retrieval"]["fusion_mode"] == "server"
    assert doc["index"]["backend"]["name"] == "stack" and doc["index"]["embedding_verdict"] == "uniform"
    runinfo = json.loads((tmp_path / "server" / "runinfo.json").read_text())
    assert runinfo["stack"]["indexing_total"]["before"] == runinfo["stack"]["indexing_total"]["after"]
    assert runinfo["stack"]["pipelines_verified"] == ["transcript-hybrid-search"]
    assert {"p50", "p95"} <= set(runinfo["retrieval_latency_ms"])


def test_time_also_records_both_backends_latency_in_one_runinfo(state_path: Path, tmp_path: Path) -> None:
    """One run, same queries: the stack measured, the embedded backend timed beside it; metrics unchanged."""
    base = ["bench", "--state", str(state_path), "--control-name", "fx", "--backend", "stack"]
    assert main([*base, "--out", str(tmp_path / "alone")]) == 0
    assert main([*base, "--time-also", "embedded", "--out", str(tmp_path / "paired")]) == 0
    for name in ("metrics.json", "run.trec"):
        assert _sha(tmp_path / "alone" / name) == _sha(tmp_path / "paired" / name)
    runinfo = json.loads((tmp_path / "paired" / "runinfo.json").read_text())
    by_backend = runinfo["retrieval_latency_ms_by_backend"]
    queries = json.loads((tmp_path / "paired" / "metrics.json").read_text())["queries"]["scored"]
    assert by_backend["stack"]["samples"] == by_backend["embedded"]["samples"] == queries > 0
    assert by_backend["stack"]["p50"] <= by_backend["stack"]["p95"]
    assert by_backend["stack"] == {**runinfo["retrieval_latency_ms"]}
    agreement = runinfo["backend_agreement"]
    assert agreement["backends"] == ["stack", "embedded"] and agreement["queries"] == queries
    assert agreement["identical_ranked_lists"] == queries  # the fixture has no score ties (see the test above)
    assert main([*base, "--time-also", "stack", "--out", str(tmp_path / "same")]) == 2
    assert main([*base, "--time-also", "embedded", "--stage", "diversify", "--out", str(tmp_path / "pool")]) == 2
    assert not (tmp_path / "same").exists() and not (tmp_path / "pool").exists()


@pytest.mark.slow
def test_two_full_reindexes_give_byte_identical_metrics(state_path: Path, client: OpenSearchClient,
                                                        tmp_path: Path) -> None:
    """Rebuild the same state twice (delete + index + settle each time); chunks, metrics.json and the
    state's identity identical (its dispatch time and settle polls live in build.json, apart)."""
    digests, chunks, identities = [], [], []
    for n in (1, 2):
        out = build_stack_state(tmp_path / f"rebuild{n}")
        claim = json.loads((out / "state.json").read_text())
        stack, settle = claim["stack"], json.loads((out / "build.json").read_text())["stack"]["settle"]
        chunks.append((stack["files"], stack["chunk_documents"], settle["chunks"]))
        identities.append(claim["contents"]["identity"])
        assert main(["bench", "--state", str(out), "--backend", "stack", "--control-name", "det",
                     "--out", str(tmp_path / f"bench{n}")]) == 0
        digests.append({f: _sha(tmp_path / f"bench{n}" / f) for f in ("metrics.json", "metrics.md", "run.trec")})
    assert chunks[0] == chunks[1] == (4, 56, 56)
    assert digests[0] == digests[1]
    assert identities[0] == identities[1]


def test_answers_on_the_stack_read_the_postgres_store_the_state_was_ingested_from(
        client: OpenSearchClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """state build --store postgres --backend stack: the stack's answers come from PostgreSQL (and agree with the
    embedded run's); a schema that has gained other files since the build is refused (exit 5), nothing written."""
    from harness.index.ingest.messages import PG_DSN_ENV, PG_SCHEMA_ENV
    from harness.store.postgres import PostgresStore

    dsn = os.environ.get(PG_DSN_ENV)
    if not dsn:
        unavailable(f"{PG_DSN_ENV} is unset: the local stack's PostgreSQL is not up (make stack-up)")
    assert dsn is not None
    schema = f"t_answers_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(PG_SCHEMA_ENV, schema)
    try:
        state = tmp_path / "state"
        assert main(["state", "build", "--backend", "stack", "--store", "postgres", "--corpus", f"qmsum={FIXTURE}",
                     "--manifest", f"qmsum={MANIFEST}", "--out", str(state)]) == 0
        base = ["bench", "--state", str(state), "--control-name", "fx"]
        assert main([*base, "--backend", "stack", "--out", str(tmp_path / "stack")]) == 0
        assert main([*base, "--backend", "embedded", "--out", str(tmp_path / "embedded")]) == 0
        on_stack, embedded = (json.loads((tmp_path / n / "metrics.json").read_text())["answers"]
                              for n in ("stack", "embedded"))
        assert on_stack["answerer"]["store"] == {"engine": "postgres", "schema": schema}
        assert "store" not in embedded["answerer"]  # the state's own SQLite file
        assert on_stack["rows"] == embedded["rows"] and on_stack["per_query"] == embedded["per_query"]
        assert f"store PostgreSQL schema `{schema}`" in (tmp_path / "stack" / "answers.md").read_text()

        with PostgresStore.open(dsn, schema=schema) as store:  # another corpus lands in the schema
            store.inject([_extra_meeting()])
        assert main([*base, "--backend", "stack", "--out", str(tmp_path / "after")]) == 5
        assert not (tmp_path / "after").exists()
    finally:
        PostgresStore.drop_schema(dsn, schema)


def _extra_meeting() -> Any:
    from harness.model import Meeting, Turn, file_uuid_for

    return Meeting(corpus="other", source_id="X001", file_uuid=file_uuid_for("other", "X001"),
                   title="another corpus", timings_real=False, tier="A", licence="test", domain="other",
                   turns=(Turn(index=0, speaker="A", start=0.0, end=1.0, text="a turn from another corpus", words=5),))
