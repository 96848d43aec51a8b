"""``state build --backend stack``: the state's documents and vectors into OpenSearch too (docs/opensearch.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.index.documents import doc_from_record
from harness.index.opensearch.backend import OpenSearchBackend
from harness.index.opensearch.client import OpenSearchClient
from harness.index.opensearch.mapping import AnalysisProfile, state_identity
from harness.index.opensearch.settle import DEFAULT_SETTLE_TIMEOUT, settle_for_measurement
from harness.index.opensearch.writer import build_stack_index
from harness.index.provenance import survey


def index_state(index_dir: Path, state: Mapping[str, Any], *, analysis: AnalysisProfile = "mirror",
                url: str | None = None, client: OpenSearchClient | None = None,
                settle_timeout: float | None = None) -> dict[str, Any]:
    """``state build --backend stack``: index the built state's documents, settle, survey them back.

    Documents come from the embedded build's ``docs.jsonl`` (whichever path wrote it) and
    vectors from its ``vectors-{mode}.npy``. Returns the state's ``stack`` block, with the
    provenance read from the indexed documents. Without a ``client`` one is made for ``url``
    (the CLI's RAGSWEEP_OPENSEARCH_URL).
    """
    if client is None:
        client = OpenSearchClient(url or "")
    with (index_dir / "docs.jsonl").open(encoding="utf-8") as fh:
        docs = [doc_from_record(json.loads(line)) for line in fh]
    embedding = state["index"]["embedding"]
    identity = state_identity(state["corpora"], state["chunking"], embedding, analysis)
    block = build_stack_index(index_dir, docs, identity, client=client, analysis=analysis)
    report = settle_for_measurement(client, block["index"], {d.file_uuid for d in docs if d.doc_type == "chunk"},
                                    block["dispatched_at"], timeout=settle_timeout or DEFAULT_SETTLE_TIMEOUT)
    backend = OpenSearchBackend(client, block["index"])
    block["settle"] = report.to_dict()
    block["provenance"] = {
        mode: survey(backend.embedding_models(mode), dimension=backend.dimension(mode),
                     configured=embedding[mode]["model"])
        for mode in sorted(embedding)
    }
    return block
