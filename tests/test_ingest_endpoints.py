"""The stack's addresses reach ingest as Endpoints from the entrypoint, never from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.index.ingest.messages import PG_DSN_ENV, Endpoints, SinkSpec, StoreSpec
from harness.index.ingest.sinks import OpenSearchSink, ShardSink, open_sink
from harness.index.opensearch.client import URL_ENV


def test_a_postgres_store_opens_at_the_endpoints_dsn_not_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PG_DSN_ENV, "postgresql://nobody@127.0.0.1:9/none")
    spec = StoreSpec("postgres", PG_DSN_ENV, "s")
    with pytest.raises(UsageError, match=r"^the Postgres store needs RAGSWEEP_PG_DSN \(make stack-up"):
        spec.open(readonly=True)
    with pytest.raises(UsageError, match="needs RAGSWEEP_PG_DSN"):
        spec.open(readonly=True, endpoints=Endpoints(opensearch_url="http://127.0.0.1:9"))
    assert spec.describe() == {"engine": "postgres", "dsn_from": PG_DSN_ENV, "schema": "s"}  # no DSN in it


def test_the_opensearch_sink_is_at_the_endpoints_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9")
    with pytest.raises(UsageError, match="no OpenSearch URL"):
        open_sink(SinkSpec("opensearch", "ix"))
    sink = open_sink(SinkSpec("opensearch", "ix"), Endpoints(opensearch_url="http://node:9200/"))
    assert isinstance(sink, OpenSearchSink) and (sink.index, sink.client.url) == ("ix", "http://node:9200")


def test_the_shard_sink_needs_no_endpoints(tmp_path: Path) -> None:
    assert isinstance(open_sink(SinkSpec("embedded", str(tmp_path))), ShardSink)
    with pytest.raises(UsageError, match=r"unknown index backend 'nope'"):
        open_sink(SinkSpec("nope", "x"))
