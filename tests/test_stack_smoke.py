"""Smoke test of the local stack that `make stack-up` starts (stack/up.sh).

Each service must answer for real: OpenSearch with its four plugins runs a hybrid query
through both fusion pipelines, PostgreSQL, Redis and the S3 server round-trip data.

The connection settings come from the stack's env file (RAGSWEEP_STACK_DIR/stack.env,
default var/stack/stack.env). Without it every test skips with the reason, unless
RAGSWEEP_REQUIRE_STACK=1, where a missing stack or client library is a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[1]

REQUIRED_SETTINGS = (
    "RAGSWEEP_OPENSEARCH_URL",
    "RAGSWEEP_PG_DSN",
    "RAGSWEEP_REDIS_URL",
    "RAGSWEEP_S3_ENDPOINT",
    "RAGSWEEP_S3_BUCKET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)

# plugin names as _cat/plugins reports them (ML Commons installs as "opensearch-ml")
REQUIRED_PLUGINS = {
    "opensearch-job-scheduler",
    "opensearch-knn",
    "opensearch-ml",
    "opensearch-neural-search",
}


def _unavailable(reason: str) -> None:
    if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
        pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
    pytest.skip(reason)


def _env_file() -> Path:
    stack_dir = os.environ.get("RAGSWEEP_STACK_DIR") or str(REPO_ROOT / "var" / "stack")
    return Path(stack_dir) / "stack.env"


def read_env_file(path: Path) -> dict[str, str]:
    settings: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        settings[key] = value
    return settings


@pytest.fixture(scope="module")
def stack() -> dict[str, str]:
    path = _env_file()
    if not path.is_file():
        _unavailable(f"local stack not up: {path} is absent (run `make stack-up`)")
    settings = read_env_file(path)
    missing = [key for key in REQUIRED_SETTINGS if not settings.get(key)]
    assert not missing, f"{path} lacks {missing}"
    return settings


# ----------------------------------------------------------------------- OpenSearch


def _opensearch(stack: dict[str, str], method: str, path: str, body: Any = None) -> Any:
    """One JSON request; a list body is sent as NDJSON (the _bulk format)."""
    url = stack["RAGSWEEP_OPENSEARCH_URL"].rstrip("/") + path
    headers = {}
    data = None
    if isinstance(body, list):
        data = "".join(json.dumps(line) + "\n" for line in body).encode()
        headers["Content-Type"] = "application/x-ndjson"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{method} {path} -> HTTP {e.code}: {e.read().decode(errors='replace')}") from e


def test_opensearch_health_version_and_plugins(stack: dict[str, str]) -> None:
    health = _opensearch(stack, "GET", "/_cluster/health")
    assert health["status"] in {"green", "yellow"}
    assert health["number_of_nodes"] == 1

    version = _opensearch(stack, "GET", "/")["version"]["number"]
    # z_score normalization exists only from neural-search 3.0
    assert int(version.split(".")[0]) >= 3, version
    assert version == stack.get("RAGSWEEP_STACK_OPENSEARCH_VERSION", version)

    plugins = _opensearch(stack, "GET", "/_cat/plugins?format=json")
    components = {row["component"] for row in plugins}
    assert components >= REQUIRED_PLUGINS, f"missing plugins: {REQUIRED_PLUGINS - components}"
    assert {row["version"] for row in plugins if row["component"] in REQUIRED_PLUGINS} == {f"{version}.0"}


# Three chunks, chosen so both rankings are known by hand. Query text "budget", query
# vector [1, 0, 0], lucene HNSW with l2 (score 1 / (1 + squared distance)):
#   text (BM25): d1 (tf 2, short) > d2 (tf 1, long); d3 does not match
#   vector:      d1 (1.0) > d3 (1 / 1.4) > d2 (1 / 3)
CHUNKS = {
    "d1": {"text": "budget budget forecast", "vec": [1.0, 0.0, 0.0]},
    "d2": {"text": "budget review of the quarterly roadmap", "vec": [0.0, 1.0, 0.0]},
    "d3": {"text": "roadmap planning", "vec": [0.8, 0.6, 0.0]},
}
HYBRID_QUERY = {
    "size": 10,
    "_source": False,
    "query": {
        "hybrid": {
            "queries": [
                {"match": {"text": "budget"}},
                {"knn": {"vec": {"vector": [1.0, 0.0, 0.0], "k": 3}}},
            ]
        }
    },
}


@pytest.fixture
def smoke_index(stack: dict[str, str]) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:12]
    names = {
        "index": f"ragsweep-smoke-{suffix}",
        "rrf": f"ragsweep-smoke-rrf-{suffix}",
        "zscore": f"ragsweep-smoke-zscore-{suffix}",
    }
    # engine lucene: the k-NN zip on Maven Central carries no faiss/nmslib native
    # libraries, and a faiss segment flush kills the node (docs/stack.md).
    _opensearch(
        stack,
        "PUT",
        f"/{names['index']}",
        {
            "settings": {"index": {"knn": True, "number_of_shards": 1, "number_of_replicas": 0}},
            "mappings": {
                "properties": {
                    "text": {"type": "text"},
                    "vec": {
                        "type": "knn_vector",
                        "dimension": 3,
                        "method": {"name": "hnsw", "space_type": "l2", "engine": "lucene"},
                    },
                }
            },
        },
    )
    try:
        bulk: list[dict[str, Any]] = []
        for doc_id, doc in CHUNKS.items():
            bulk += [{"index": {"_id": doc_id}}, doc]
        result = _opensearch(stack, "POST", f"/{names['index']}/_bulk?refresh=true", bulk)
        assert result["errors"] is False, result
        _opensearch(
            stack,
            "PUT",
            f"/_search/pipeline/{names['rrf']}",
            {
                "phase_results_processors": [
                    {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 60}}}
                ]
            },
        )
        _opensearch(
            stack,
            "PUT",
            f"/_search/pipeline/{names['zscore']}",
            {
                "phase_results_processors": [
                    {
                        "normalization-processor": {
                            "normalization": {"technique": "z_score"},
                            "combination": {"technique": "arithmetic_mean", "parameters": {"weights": [0.5, 0.5]}},
                        }
                    }
                ]
            },
        )
        yield names
    finally:
        for pipeline in (names["rrf"], names["zscore"]):
            with contextlib.suppress(AssertionError):
                _opensearch(stack, "DELETE", f"/_search/pipeline/{pipeline}")
        _opensearch(stack, "DELETE", f"/{names['index']}")


def _hybrid(stack: dict[str, str], index: str, pipeline: str) -> list[tuple[str, float]]:
    result = _opensearch(stack, "POST", f"/{index}/_search?search_pipeline={pipeline}", HYBRID_QUERY)
    return [(hit["_id"], hit["_score"]) for hit in result["hits"]["hits"]]


def test_opensearch_hybrid_query_through_rrf_pipeline(stack: dict[str, str], smoke_index: dict[str, str]) -> None:
    hits = _hybrid(stack, smoke_index["index"], smoke_index["rrf"])
    # RRF, rank_constant 60: sum over sub-queries of 1 / (60 + rank)
    expected = [
        ("d1", 1 / 61 + 1 / 61),  # text rank 1, vector rank 1
        ("d2", 1 / 62 + 1 / 63),  # text rank 2, vector rank 3
        ("d3", 1 / 62),  # vector rank 2 only
    ]
    assert [doc_id for doc_id, _ in hits] == [doc_id for doc_id, _ in expected]
    for (_, got), (_, want) in zip(hits, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-6)


def test_opensearch_hybrid_query_through_z_score_pipeline(stack: dict[str, str], smoke_index: dict[str, str]) -> None:
    stored = _opensearch(stack, "GET", f"/_search/pipeline/{smoke_index['zscore']}")
    processor = stored[smoke_index["zscore"]]["phase_results_processors"][0]["normalization-processor"]
    assert processor["normalization"]["technique"] == "z_score"

    hits = _hybrid(stack, smoke_index["index"], smoke_index["zscore"])
    assert {doc_id for doc_id, _ in hits} == set(CHUNKS)
    # d1 leads both sub-queries, so it leads any monotone combination of them
    assert hits[0][0] == "d1"
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[1]


# ----------------------------------------------------------------------- PostgreSQL


def test_postgres_select_and_round_trip(stack: dict[str, str]) -> None:
    try:
        import psycopg
    except ImportError:
        _unavailable('psycopg is not installed (pip install "psycopg[binary]>=3.1,<4")')
    with psycopg.connect(stack["RAGSWEEP_PG_DSN"], connect_timeout=10) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.execute("SELECT current_database(), current_user").fetchone() == (
            urlsplit(stack["RAGSWEEP_PG_DSN"]).path.lstrip("/"),
            urlsplit(stack["RAGSWEEP_PG_DSN"]).username,
        )
        conn.execute("CREATE TEMPORARY TABLE smoke (turn_id int PRIMARY KEY, speaker text NOT NULL)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO smoke VALUES (%s, %s)", [(1, "Ana"), (2, "Bo"), (3, "Ana")])
        rows = conn.execute("SELECT speaker, count(*) FROM smoke GROUP BY speaker ORDER BY speaker").fetchall()
        assert rows == [("Ana", 2), ("Bo", 1)]


# ---------------------------------------------------------------------------- Redis


def _resp(*parts: str) -> bytes:
    encoded = [p.encode() for p in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in encoded)


def test_redis_ping_and_round_trip(stack: dict[str, str]) -> None:
    url = urlsplit(stack["RAGSWEEP_REDIS_URL"])
    assert url.hostname == "127.0.0.1"
    key = f"ragsweep:smoke:{uuid.uuid4().hex}"
    with socket.create_connection((url.hostname, url.port or 6379), timeout=10) as sock:
        reader = sock.makefile("rb")
        sock.sendall(_resp("PING"))
        assert reader.readline() == b"+PONG\r\n"
        sock.sendall(_resp("SET", key, "chunk-42", "EX", "60"))
        assert reader.readline() == b"+OK\r\n"
        sock.sendall(_resp("GET", key))
        assert reader.readline() == b"$8\r\n"
        assert reader.readline() == b"chunk-42\r\n"
        sock.sendall(_resp("DEL", key))
        assert reader.readline() == b":1\r\n"


# ------------------------------------------------------------------------------- S3


def test_s3_put_get_list(stack: dict[str, str]) -> None:
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        _unavailable('boto3 is not installed (pip install "boto3>=1.34,<2")')
    s3 = boto3.client(
        "s3",
        endpoint_url=stack["RAGSWEEP_S3_ENDPOINT"],
        aws_access_key_id=stack["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=stack["AWS_SECRET_ACCESS_KEY"],
        region_name=stack.get("AWS_DEFAULT_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
    )
    bucket = stack["RAGSWEEP_S3_BUCKET"]
    prefix = f"smoke/{uuid.uuid4().hex}/"
    body = json.dumps({"arm": "rrf-60", "ndcg_cut_10": 0.5}).encode()
    s3.put_object(Bucket=bucket, Key=prefix + "metrics.json", Body=body)
    s3.put_object(Bucket=bucket, Key=prefix + "runinfo.json", Body=b"{}")
    try:
        assert s3.get_object(Bucket=bucket, Key=prefix + "metrics.json")["Body"].read() == body
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)
        assert sorted(obj["Key"] for obj in listed["Contents"]) == [prefix + "metrics.json", prefix + "runinfo.json"]
    finally:
        for name in ("metrics.json", "runinfo.json"):
            s3.delete_object(Bucket=bucket, Key=prefix + name)
    assert s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("KeyCount", 0) == 0
