"""The OpenSearch sink: index_file and the orphan sweep writing through the stack index's bulk writer.

Integration: needs the stack's OpenSearch (RAGSWEEP_OPENSEARCH_URL). Creates its own
index with harness.index.opensearch's mapping and deletes it afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.index.ingest.coordinator import finish_reindex, index_file, run_eager, start_reindex
from harness.index.ingest.ledger import MemoryLedger
from harness.index.ingest.messages import Endpoints, ReindexRequest, SinkSpec, StoreSpec, file_jobs
from harness.index.ingest.sinks import OpenSearchSink
from harness.index.opensearch.client import OpenSearchClient
from harness.model import Meeting
from harness.store import SqliteStore
from tests.test_ingest_eager import TIES, HashEmbedder, meeting

pytestmark = pytest.mark.integration

OTHER = meeting("other", [("Zed", 0.0, 2.0, "Another file. It has two sentences.")])
GONE = meeting("gone", [("Old", 0.0, 1.0, "This file left the store.")])


@pytest.fixture
def index() -> Iterator[str]:
    if not os.environ.get("RAGSWEEP_OPENSEARCH_URL"):
        reason = "RAGSWEEP_OPENSEARCH_URL is unset: the local stack is not up (run `make stack-up`)"
        if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
            pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
        pytest.skip(reason)
    from harness.index.opensearch.client import client_from_env
    from harness.index.opensearch.mapping import index_body
    from harness.index.opensearch.writer import create_index

    client = client_from_env(os.environ)
    name = f"ragsweep-test-ingest-{uuid.uuid4().hex[:8]}"
    create_index(client, name, index_body({"header": 8}, analysis="mirror", meta={}))
    yield name
    client.request("DELETE", f"/{name}", missing_ok=True)


def _request(store_file: Path, index: str, *meetings: Meeting) -> ReindexRequest:
    with SqliteStore.open(store_file) as store:
        store.inject(meetings)
    return ReindexRequest(store=StoreSpec("sqlite", str(store_file)),
                                 sink=SinkSpec("opensearch", index),
                                 embedding={"header": "object:hash-embedder@1"})


def _count(sink: OpenSearchSink, file_uuid: str) -> int:
    body = {"query": {"term": {"file_uuid": file_uuid}}}
    return int(sink.client.request("POST", f"/{sink.index}/_count", body)["count"])


def test_index_file_and_the_sweep_through_opensearch(index: str, tmp_path: Path) -> None:
    url = os.environ["RAGSWEEP_OPENSEARCH_URL"]
    sink, at = OpenSearchSink(index, OpenSearchClient(url)), Endpoints(opensearch_url=url)
    # an earlier run indexed a file the store no longer holds
    run_eager(_request(tmp_path / "old.sqlite", index, GONE), {"header": HashEmbedder()}, endpoints=at)
    assert sink.files() == {GONE.file_uuid}

    request = _request(tmp_path / "store.sqlite", index, TIES, OTHER)
    ledger = MemoryLedger()
    run = start_reindex(request, ledger, endpoints=at)
    index_file(file_jobs(run)[0], ledger, {"header": HashEmbedder()}, endpoints=at)
    declined = finish_reindex(run, ledger, endpoints=at)             # one of two files unaccounted
    assert not declined.sweep.ran and GONE.file_uuid in sink.files()

    report = run_eager(request, {"header": HashEmbedder()}, endpoints=at)
    assert report.sweep.ran and report.sweep.orphans == (GONE.file_uuid,)
    assert report.sweep.documents_deleted == 2                # GONE's chunk and its digest
    assert sink.files() == {TIES.file_uuid, OTHER.file_uuid}
    documents = {r["file_uuid"]: r["documents"] for r in report.results}
    # TIES: five speaker turns -> 5 chunks; digests cut min(6, 5) = 5 sections, one per chunk
    assert documents[TIES.file_uuid] == 10 and _count(sink, TIES.file_uuid) == 10
    # indexing a file again replaces its documents (delete, then bulk write): no duplicates
    again = run_eager(request, {"header": HashEmbedder()}, endpoints=at)
    assert again.sweep.ran and again.sweep.orphans == ()
    assert _count(sink, TIES.file_uuid) == 10 and _count(sink, OTHER.file_uuid) == documents[OTHER.file_uuid]
