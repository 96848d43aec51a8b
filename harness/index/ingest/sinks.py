"""Where ``index_file`` writes a file's documents: the embedded backend's shards, or the stack index.

The embedded backend's sink writes one shard object per file (a folder or an S3 prefix); :mod:`.assemble` turns
the shards into the state's index. The OpenSearch sink writes through
:mod:`harness.index.opensearch.writer`'s bulk writer.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tarfile
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
from harness.objectstore import ArtefactStore, LocalFolderStore, MissingArtefactError, open_store


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
    """Per-file shards for the embedded backend: one object ``<file_uuid>.shard`` per file in an artefact store.

    The store is a folder (``STATE/shards`` when the state is built on this machine) or an S3
    bucket prefix (``s3://bucket/prefix``: Celery workers in other pods than the state's
    builder, as on Kubernetes). A shard is one uncompressed tar of ``shard.json``,
    ``docs.jsonl`` and ``vectors-<mode>.npy``, written with one atomic put, so a reader sees
    a file's old shard or its new one, never half of one; ``read`` re-checks the sha256 the
    writer recorded.
    """

    SUFFIX: Final = ".shard"

    def __init__(self, root: str | os.PathLike[str] | ArtefactStore, s3_endpoint: str | None = None) -> None:
        if isinstance(root, ArtefactStore):
            self.store: ArtefactStore = root
            self._folder: Path | None = None
        else:
            self.store = open_store(os.fspath(root), s3_endpoint)
            self._folder = self.store.root if isinstance(self.store, LocalFolderStore) else None

    def describe(self) -> str:
        return self.store.describe()

    def _key(self, file_uuid: str) -> str:
        if not file_uuid or "/" in file_uuid or file_uuid.startswith("."):
            raise UsageError(f"not a file_uuid: {file_uuid!r}")
        return f"{file_uuid}{self.SUFFIX}"

    def write_file(self, file_uuid: str, docs: Sequence[IndexDoc], vectors: Mapping[str, np.ndarray],
                   provenance: Mapping[str, Any]) -> str:
        key = self._key(file_uuid)
        members: dict[str, bytes] = {}
        h = hashlib.sha256()
        body = "".join(json.dumps(asdict(d), sort_keys=True, ensure_ascii=False) + "\n" for d in docs).encode("utf-8")
        members["docs.jsonl"] = body
        h.update(body)
        for mode in sorted(vectors):
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(vectors[mode], dtype=np.float32))
            members[f"vectors-{mode}.npy"] = buf.getvalue()
            h.update(members[f"vectors-{mode}.npy"])
        digest = h.hexdigest()
        meta = {**provenance, "file_uuid": file_uuid, "documents": len(docs), "modes": sorted(vectors),
                "sha256": digest}
        members = {"shard.json": (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8"), **members}
        self.store.put_bytes(key, _tar(members))
        return digest

    def files(self) -> set[str]:
        return {key[:-len(self.SUFFIX)] for key in self.store.list()
                if key.endswith(self.SUFFIX) and "/" not in key}

    def delete_files(self, file_uuids: Collection[str]) -> int:
        deleted = 0
        present = self.files()
        for file_uuid in sorted(file_uuids):
            if file_uuid in present:
                deleted += int(self._unpack(file_uuid)[0]["documents"])
            self.store.delete(self._key(file_uuid))
        return deleted

    def clear(self) -> None:
        """Delete every shard (after assembly, or before a fresh build); a local folder goes too
        once it is empty (a --shards folder that holds anything else is left as it is)."""
        for file_uuid in sorted(self.files()):
            self.store.delete(self._key(file_uuid))
        if self._folder is not None:
            with contextlib.suppress(OSError):
                self._folder.rmdir()

    def _unpack(self, file_uuid: str) -> tuple[dict[str, Any], dict[str, bytes]]:
        key = self._key(file_uuid)
        where = f"{self.describe()}: {key}"
        try:
            raw = self.store.get_bytes(key)
        except MissingArtefactError as e:
            raise IntegrityError(f"{where}: no shard for {file_uuid}; the reindex did not index it") from e
        try:
            with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
                members = {}
                for info in tar.getmembers():
                    fh = tar.extractfile(info) if info.isfile() else None
                    if fh is None:
                        raise IntegrityError(f"{where}: member {info.name!r} is not a file")
                    members[info.name] = fh.read()
            meta = json.loads(members["shard.json"])
        except (tarfile.TarError, KeyError, ValueError) as e:
            raise IntegrityError(f"{where}: not a shard ({type(e).__name__}: {e})") from e
        return meta, members

    def read(self, file_uuid: str) -> tuple[list[IndexDoc], dict[str, np.ndarray], dict[str, Any]]:
        meta, members = self._unpack(file_uuid)
        where = f"{self.describe()}: {self._key(file_uuid)}"
        h = hashlib.sha256(members.get("docs.jsonl", b""))
        for mode in meta["modes"]:
            h.update(members.get(f"vectors-{mode}.npy", b""))
        if h.hexdigest() != meta["sha256"]:
            raise IntegrityError(f"{where}: contents do not match the sha256 the writer recorded")
        docs = [doc_from_record(json.loads(line)) for line in members["docs.jsonl"].decode("utf-8").splitlines()]
        vectors = {mode: np.load(io.BytesIO(members[f"vectors-{mode}.npy"])) for mode in meta["modes"]}
        for mode, matrix in vectors.items():
            if matrix.shape[0] != len(docs):
                raise IntegrityError(f"{where}: vectors-{mode} has {matrix.shape[0]} rows for {len(docs)} documents")
        return docs, vectors, meta


def _tar(members: Mapping[str, bytes]) -> bytes:
    """An uncompressed tar of these members, in this order, with fixed owners and times."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


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
    "embedded": lambda root, endpoints: ShardSink(root, endpoints.s3_endpoint),
    "opensearch": _opensearch_sink,
}


def open_sink(spec: SinkSpec, endpoints: Endpoints = NO_ENDPOINTS) -> DocumentSink:
    try:
        factory = SINKS[spec.backend]
    except KeyError as e:
        raise UsageError(f"unknown index backend {spec.backend!r}; expected one of {sorted(SINKS)}") from e
    return factory(spec.location, endpoints)
