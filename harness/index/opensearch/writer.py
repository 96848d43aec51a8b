"""The writer of a state's OpenSearch index: (re)create it, bulk-write documents and vectors.

Settling (refresh, force-merge, the three conditions) is the measurement's job
(:mod:`harness.index.opensearch.settle`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import IntegrityError
from harness.index.documents import IndexDoc
from harness.index.opensearch.client import OpenSearchClient
from harness.index.opensearch.mapping import (
    INDEX_VERSION,
    AnalysisProfile,
    doc_source,
    identity_digest,
    index_body,
    index_name,
)


def create_index(client: OpenSearchClient, name: str, body: Mapping[str, Any]) -> None:
    """(Re)create ``name``: an existing index of that name is deleted first (a full reindex)."""
    client.request("DELETE", f"/{name}", missing_ok=True)
    client.request("PUT", f"/{name}", dict(body))


def bulk_index(client: OpenSearchClient, name: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
               models: Mapping[str, str], *, batch: int = 500, clock: Any = time.time) -> int:
    """Index every document in order, one bulk request per ``batch``; returns how many were written."""
    written = 0
    for lo in range(0, len(docs), batch):
        lines: list[dict[str, Any]] = []
        stamp = int(clock() * 1000)
        for row in range(lo, min(lo + batch, len(docs))):
            doc = docs[row]
            lines.append({"index": {"_index": name, "_id": doc.id}})
            lines.append(doc_source(doc, {m: v[row] for m, v in vectors.items()}, models, stamp))
        result = client.request("POST", "/_bulk", lines)
        if result.get("errors"):
            failed = [item["index"] for item in result["items"] if item["index"].get("error")]
            raise IntegrityError(f"bulk indexing into {name}: {len(failed)} documents failed, first: {failed[0]}")
        written += len(result["items"])
    return written


def build_stack_index(index_dir: Path, docs: Sequence[IndexDoc], identity: Mapping[str, Any], *,
                      client: OpenSearchClient, analysis: AnalysisProfile = "mirror") -> dict[str, Any]:
    """Index a built embedded index folder's documents and vectors into a fresh OpenSearch index.

    Returns the state's ``stack`` block: index name, version, mapping, dispatch time and counts.
    Settling (refresh, force-merge, the three conditions) is the measurement's job (harness.index.opensearch.settle).
    """
    meta = json.loads((index_dir / "meta.json").read_text(encoding="utf-8"))
    embedding = meta["embedding"]
    vectors = {mode: np.load(index_dir / e["file"], mmap_mode="r") for mode, e in sorted(embedding.items())}
    for mode, matrix in vectors.items():
        if matrix.shape[0] != len(docs):
            raise IntegrityError(f"{index_dir}: vectors-{mode} has {matrix.shape[0]} rows for {len(docs)} documents")
    name = index_name(identity)
    digest = identity_digest(identity)
    body = index_body({m: e["dimension"] for m, e in embedding.items()}, analysis=analysis,
                      meta={"state_identity": digest, "analysis": analysis})
    create_index(client, name, body)
    dispatched_at = int(time.time() * 1000)
    written = bulk_index(client, name, docs, vectors, {m: e["model"] for m, e in embedding.items()})
    return {
        "backend": "stack",
        "engine": f"OpenSearch {client.version()}",
        "index": name,
        "state_identity": digest,
        "_meta": {"version": INDEX_VERSION},
        "analysis": analysis,
        "knn_field": {"method": "hnsw", "engine": "lucene", "space_type": "cosinesimil"},
        "mapping_sha256": hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest(),
        "dispatched_at": dispatched_at,
        "documents": written,
        "chunk_documents": sum(1 for d in docs if d.doc_type == "chunk"),
        "digest_documents": sum(1 for d in docs if d.doc_type == "digest"),
        "files": len({d.file_uuid for d in docs}),
    }
