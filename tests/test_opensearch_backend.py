"""Unit tests of harness.index.opensearch.mapping and .queries: mappings and query bodies as plain dicts, no server."""

from __future__ import annotations

import json

import numpy as np
import pytest

from harness.errors import IntegrityError, UsageError
from harness.index import embedded
from harness.index.backend import LegHit
from harness.index.documents import IndexDoc
from harness.index.opensearch.mapping import (
    INDEX_PREFIX,
    INDEX_VERSION,
    analysis_settings,
    doc_source,
    index_body,
    index_name,
    state_identity,
)
from harness.index.opensearch.queries import (
    QUERY_SAFE,
    bm25_query,
    bm25_text,
    checked_buckets,
    filter_clauses,
    knn_query,
    leg_body,
    phrase_body,
    provenance_body,
    sort_leg,
)


def test_index_body_is_one_sorted_shard_with_a_lucene_cosine_field_per_mode() -> None:
    body = index_body({"header": 384, "body": 8}, analysis="mirror", meta={"state_identity": "abc"})
    settings = body["settings"]["index"]
    assert settings["number_of_shards"] == 1 and settings["number_of_replicas"] == 0 and settings["knn"] is True
    # doc id order after the force-merge = the protocol's tie order inside a plane
    assert settings["sort.field"] == ["doc_type", "file_uuid", "chunk_index"]
    assert settings["sort.order"] == ["asc", "asc", "asc"]
    mappings = body["mappings"]
    assert mappings["dynamic"] == "strict"
    assert mappings["_meta"] == {"version": INDEX_VERSION, "state_identity": "abc"}
    props = mappings["properties"]
    for mode, dimension in (("header", 384), ("body", 8)):
        assert props[f"vector_{mode}"] == {
            "type": "knn_vector", "dimension": dimension,
            "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
        }
    assert props["embedding_model"]["properties"] == {"body": {"type": "keyword"}, "header": {"type": "keyword"}}
    for keyword in ("doc_type", "file_uuid", "speaker", "id"):
        assert props[keyword] == {"type": "keyword"}
    assert props["chunk_index"] == {"type": "integer"}
    assert props["indexed_at"] == {"type": "date", "format": "epoch_millis"}
    assert props["content"]["analyzer"] == "ragsweep_en_stem"
    assert props["content"]["fields"]["exact"]["analyzer"] == "ragsweep_exact"
    assert props["title"]["analyzer"] == "ragsweep_en_stem"


def test_english_profile_is_the_builtin_analyzers() -> None:
    body = index_body({"header": 4}, analysis="english", meta={})
    props = body["mappings"]["properties"]
    assert props["content"]["analyzer"] == "english" and props["title"]["analyzer"] == "english"
    assert props["content"]["fields"]["exact"]["analyzer"] == "standard"
    assert "analysis" not in body["settings"]["index"]
    with pytest.raises(UsageError):
        analysis_settings("german")  # type: ignore[arg-type]


def test_mirror_profile_copies_tantivys_tokenizers() -> None:
    analysis = analysis_settings("mirror")
    # SimpleTokenizer: split on every char that is not alphanumeric
    assert analysis["tokenizer"]["ragsweep_simple"] == {"type": "pattern", "pattern": r"[^\p{IsAlphabetic}\p{N}]+"}
    # RemoveLongFilter::limit(40) keeps tokens of at most 39 bytes
    assert analysis["filter"]["ragsweep_remove_long"] == {"type": "length", "min": 0, "max": 39}
    # en_stem = Snowball English (Porter2), after lower-casing
    assert analysis["filter"]["ragsweep_porter2"] == {"type": "snowball", "language": "English"}
    assert analysis["analyzer"]["ragsweep_en_stem"]["filter"] == ["ragsweep_remove_long", "lowercase",
                                                                 "ragsweep_porter2"]
    assert analysis["analyzer"]["ragsweep_exact"]["filter"] == ["ragsweep_remove_long", "lowercase"]


def test_query_cleaning_is_the_embedded_backends() -> None:
    assert QUERY_SAFE.pattern == embedded._QUERY_SAFE.pattern
    assert QUERY_SAFE.flags == embedded._QUERY_SAFE.flags


@pytest.mark.parametrize(("text", "expected"), [
    ("What did the designer say about the battery?", "What did the designer say about battery"),
    ("the The the", "the The"),  # tantivy drops repeated literals, case-sensitively
    ("battery batteries", "battery batteries"),  # same stem, different literals: both kept
    ("don't -- stop!!", "don t stop"),
    ("   ", ""),
])
def test_bm25_text_keeps_each_literal_once(text: str, expected: str) -> None:
    assert bm25_text(text) == expected


def test_bm25_query_is_most_fields_with_filters_that_do_not_score() -> None:
    query = bm25_query("budget review", doc_type="chunk", file_uuids=["f2", "f1", "f2"], speaker="Ana")
    assert query == {"bool": {
        "must": [{"multi_match": {"query": "budget review", "type": "most_fields", "fields": ["content", "title"]}}],
        "filter": [{"term": {"doc_type": "chunk"}}, {"terms": {"file_uuid": ["f1", "f2"]}},
                   {"term": {"speaker": "Ana"}}],
    }}
    assert filter_clauses("digest", None, None) == [{"term": {"doc_type": "digest"}}]


def test_exact_knn_is_a_script_score_of_half_one_plus_cosine_over_the_filter() -> None:
    vector = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    query = knn_query(vector, 100, mode="header", strategy="exact", file_uuids=["f1"])
    script = query["script_score"]["script"]
    assert script["source"] == "(1.0 + cosineSimilarity(params.query_value, doc[params.field])) / 2.0"
    assert script["params"]["field"] == "vector_header"
    assert [np.float32(v) for v in script["params"]["query_value"]] == list(vector)
    assert query["script_score"]["query"] == {"bool": {"filter": [{"term": {"doc_type": "chunk"}},
                                                                   {"terms": {"file_uuid": ["f1"]}}]}}


def test_hnsw_knn_asks_for_the_leg_depth() -> None:
    query = knn_query(np.ones(3, dtype=np.float32), 192, mode="body", strategy="hnsw", speaker="Bo")
    field = query["knn"]["vector_body"]
    assert field["k"] == 192 and field["method_parameters"] == {"ef_search": 192}
    assert field["filter"] == {"bool": {"filter": [{"term": {"doc_type": "chunk"}}, {"term": {"speaker": "Bo"}}]}}
    assert knn_query(np.ones(3), 10, mode="body", strategy="hnsw")["knn"]["vector_body"]["method_parameters"] == {
        "ef_search": 100}
    with pytest.raises(UsageError):
        knn_query(np.ones(3), 10, mode="body", strategy="ivf")  # type: ignore[arg-type]


def test_leg_phrase_and_provenance_bodies() -> None:
    leg = leg_body({"match_all": {}}, 7)
    assert leg["size"] == 7 and leg["track_total_hits"] is False and "file_uuid" in leg["_source"]
    phrase = phrase_body("rubber case", 50)
    assert phrase["size"] == 0
    assert phrase["query"]["bool"]["must"] == [{"match_phrase": {"content.exact": "rubber case"}}]
    assert phrase["query"]["bool"]["filter"] == [{"term": {"doc_type": "chunk"}}]
    assert phrase["aggs"]["files"]["terms"]["field"] == "file_uuid"
    assert phrase["aggs"]["files"]["terms"]["size"] == 50
    assert "hybrid" not in json.dumps(phrase)
    survey = provenance_body("header")
    assert survey["aggs"]["models"]["terms"]["field"] == "embedding_model.header"
    assert survey["aggs"]["unattributed"] == {"missing": {"field": "embedding_model.header"}}


def test_sort_leg_breaks_equal_scores_by_file_then_chunk_index() -> None:
    hits = [("b_2", 1.0, "b", 2), ("a_10", 1.0, "a", 10), ("a_9", 1.0, "a", 9), ("c_0", 2.0, "c", 0)]
    # chunk_index compares as a number: a_9 before a_10 although "a_10" < "a_9" as strings
    assert sort_leg(hits) == [LegHit("c_0", 2.0), LegHit("a_9", 1.0), LegHit("a_10", 1.0), LegHit("b_2", 1.0)]


def test_checked_buckets_refuses_a_truncated_aggregation() -> None:
    agg = {"buckets": [{"key": "f1", "doc_count": 3}], "sum_other_doc_count": 0}
    assert checked_buckets(agg, 1, "x") == {"f1": 3}
    with pytest.raises(IntegrityError, match="truncated at size 1: 2 documents"):
        checked_buckets({**agg, "sum_other_doc_count": 2}, 1, "x")


def test_index_name_derives_from_the_state_identity() -> None:
    embedding = {"header": {"model": "m@sha256:1", "dimension": 4, "file": "vectors-header.npy"}}
    one = state_identity([{"name": "qmsum", "artefacts_sha256": "aa"}], {"max_words": 200}, embedding, "mirror")
    assert one["embedding"] == {"header": {"model": "m@sha256:1", "dimension": 4}}  # not the file name
    same = state_identity([{"name": "qmsum", "artefacts_sha256": "aa"}], {"max_words": 200}, embedding, "mirror")
    other = state_identity([{"name": "qmsum", "artefacts_sha256": "ab"}], {"max_words": 200}, embedding, "mirror")
    english = state_identity([{"name": "qmsum", "artefacts_sha256": "aa"}], {"max_words": 200}, embedding,
                             "english")
    assert index_name(one) == index_name(same)
    assert len({index_name(one), index_name(other), index_name(english)}) == 3
    assert index_name(one).startswith(INDEX_PREFIX) and len(index_name(one)) == len(INDEX_PREFIX) + 16


def test_doc_source_carries_the_exact_float32_vector_and_its_model() -> None:
    doc = IndexDoc(id="f_3", file_uuid="f", doc_type="chunk", chunk_index=3, speaker="Ana", start=1.0, end=2.0,
                   title="T", date="2024-01-01", roster=("Ana",), content="hello")
    vector = np.array([1 / 3, -2 / 7, 1e-8], dtype=np.float32)
    source = doc_source(doc, {"header": vector}, {"header": "m@sha256:1"}, 1234)
    assert source["embedding_model"] == {"header": "m@sha256:1"}
    assert source["indexed_at"] == 1234 and source["chunk_index"] == 3 and source["speaker"] == "Ana"
    # the JSON text parses back to the very same float32 values (what the node stores)
    parsed = json.loads(json.dumps(source))["vector_header"]
    assert np.array_equal(np.array(parsed, dtype=np.float32), vector)
    assert set(source) == {"id", "doc_type", "file_uuid", "chunk_index", "speaker", "content", "title",
                           "indexed_at", "embedding_model", "vector_header"}
