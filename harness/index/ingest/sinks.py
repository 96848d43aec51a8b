"""Where ``index_file`` writes a file's documents: the embedded backend's shards, or the stack index.

The embedded backend's sink writes one shard folder per file; :mod:`.assemble` turns
the shards into the state's index. The OpenSearch sink writes through
:mod:`harness.index.opensearch.writer`'s bulk writer.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np

from harness.errors import IntegrityError, UsageError
from harness.index.documents import IndexDoc, doc_from_record
from harness.index.ingest.messages import NO_ENDPOINTS, Endpoints, SinkSpec
from harness.index.opensearch.client import OpenSearchClient
from harness.index.opensearch.queries import checked_buckets
from harness.index.opensearch.writer import bulk_index


class DocumentSink(Protocol):
    """The small interface index_file and the orphan sweep write through."""

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        """Replace one file's documents; return a sha256 of what was written."""
        ...

    def files(self) -> set[str]:
        """file_uuids that have documents in the index."""
        ...

    def delete_files(self, file_uuids: Collection[str]) -> int:
        """Delete every document of these files; return how many were deleted."""
        ...


class ShardSink:
    """Per-file shards for the embedded backend: ``ROOT/<file_uuid>/{docs.jsonl, vectors-<mode>.npy, shard.json}``.

    A shard is written to a hidden sibling and renamed into place, ``shard.json`` last,
    so a reader sees a file's old shard or its new one, never half of one.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _dir(self, file_uuid: str) -> Path:
        if not file_uuid or "/" in file_uuid or file_uuid.startswith("."):
            raise UsageError(f"not a file_uuid: {file_uuid!r}")
        return self.root / file_uuid

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        final = self._dir(file_uuid)
        tmp = self.root / f".tmp-{file_uuid}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            h = hashlib.sha256()
            body = "".join(json.dumps(asdict(d), sort_keys=True, ensure_ascii=False) + "\n" for d in docs)
            (tmp / "docs.jsonl").write_text(body, encoding="utf-8", newline="\n")
            h.update(body.encode("utf-8"))
            for mode in sorted(vectors):
                np.save(tmp / f"vectors-{mode}.npy", np.ascontiguousarray(vectors[mode], dtype=np.float32))
                h.update((tmp / f"vectors-{mode}.npy").read_bytes())
            digest = h.hexdigest()
            meta = {**provenance, "file_uuid": file_uuid, "documents": len(docs), "modes": sorted(vectors),
                    "sha256": digest}
            (tmp / "shard.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            old = self.root / f".old-{file_uuid}-{uuid.uuid4().hex[:8]}"
            if final.exists():
                final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return digest

    def files(self) -> set[str]:
        if not self.root.is_dir():
            return set()
        return {p.name for p in self.root.iterdir() if not p.name.startswith(".") and (p / "shard.json").is_file()}

    def delete_files(self, file_uuids: Collection[str]) -> int:
        deleted = 0
        for file_uuid in sorted(file_uuids):
            path = self._dir(file_uuid)
            if (path / "shard.json").is_file():
                deleted += int(json.loads((path / "shard.json").read_text(encoding="utf-8"))["documents"])
            shutil.rmtree(path, ignore_errors=True)
        return deleted

    def read(self, file_uuid: str) -> tuple[list[IndexDoc], dict[str, np.ndarray], dict[str, Any]]:
        path = self._dir(file_uuid)
        if not (path / "shard.json").is_file():
            raise IntegrityError(f"{path}: no shard for {file_uuid}; the reindex did not index it")
        meta = json.loads((path / "shard.json").read_text(encoding="utf-8"))
        with (path / "docs.jsonl").open(encoding="utf-8") as fh:
            docs = [doc_from_record(json.loads(line)) for line in fh]
        vectors = {mode: np.load(path / f"vectors-{mode}.npy") for mode in meta["modes"]}
        for mode, matrix in vectors.items():
            if matrix.shape[0] != len(docs):
                raise IntegrityError(f"{path}: vectors-{mode} has {matrix.shape[0]} rows for {len(docs)} documents")
        return docs, vectors, meta


class OpenSearchSink:
    """The stack index through harness.index.opensearch.writer's bulk writer (the index must exist)."""

    def __init__(self, index: str, client: OpenSearchClient) -> None:
        self.index = index
        self.client = client

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        # delete-then-write, as the product's indexer does: a mid-run poll sees the file
        # missing, never half old and half new (the settle check's first condition)
        self.delete_files([file_uuid])
        bulk_index(self.client, self.index, docs, vectors, dict(provenance["embedding"]))
        h = hashlib.sha256()
        for d in docs:
            h.update((json.dumps(asdict(d), sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
        for mode in sorted(vectors):
            h.update(np.ascontiguousarray(vectors[mode], dtype=np.float32).tobytes())
        return h.hexdigest()

    def files(self, size: int = 65_536) -> set[str]:
        self.client.request("POST", f"/{self.index}/_refresh")
        body = {"size": 0, "aggs": {"files": {"terms": {"field": "file_uuid", "size": size}}}}
        result = self.client.request("POST", f"/{self.index}/_search", body)
        return set(checked_buckets(result["aggregations"]["files"], size, f"files in {self.index}"))

    def delete_files(self, file_uuids: Collection[str]) -> int:
        if not file_uuids:
            return 0
        body = {"query": {"terms": {"file_uuid": sorted(file_uuids)}}}
        result = self.client.request("POST", f"/{self.index}/_delete_by_query", body,
                                     params={"refresh": True, "conflicts": "proceed"})
        return int(result.get("deleted", 0))


def _opensearch_sink(index: str, endpoints: Endpoints) -> OpenSearchSink:
    return OpenSearchSink(index, OpenSearchClient(endpoints.opensearch_url or ""))


SINKS: Final[dict[str, Callable[[str, Endpoints], DocumentSink]]] = {
    "embedded": lambda root, _: ShardSink(root),
    "opensearch": _opensearch_sink,
}


def open_sink(spec: SinkSpec, endpoints: Endpoints = NO_ENDPOINTS) -> DocumentSink:
    try:
        factory = SINKS[spec.backend]
    except KeyError as e:
        raise UsageError(f"unknown index backend {spec.backend!r}; expected one of {sorted(SINKS)}") from e
    return factory(spec.location, endpoints)
