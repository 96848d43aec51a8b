"""``--backend stack`` (and ``--time-also stack``): the state's OpenSearch index, settled first."""

from __future__ import annotations

from typing import Any

from harness.errors import UsageError
from harness.state import State


def open_stack(state: State, url: str, knn_strategy: str, settle_timeout: float) -> Any:
    """The state's OpenSearch index, settled and checked against the state's chunks."""
    from harness.retrieval.server_fusion import open_stack_session

    block = state.stack_block()
    if block is None:
        raise UsageError(f"{state.path} was built without --backend stack: it has no OpenSearch index; "
                         "rebuild it with `ragsweep state build --backend stack`")
    chunks = [d for d in state.index.docs if d["doc_type"] == "chunk"]
    return open_stack_session(block, {d["file_uuid"] for d in chunks}, len(chunks), url=url,
                              knn_strategy=knn_strategy, settle_timeout=settle_timeout)
