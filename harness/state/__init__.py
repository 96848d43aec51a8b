"""A corpus state: the corpora as injected, the relational store and the index, built once.

Layout of ``STATE/``::

    state.json            what was built: corpora (versions, checksums), chunking, index
    corpora/<name>.json   each corpus as read into the model (the judge reads it back)
    store.sqlite          the relational store (meetings, speakers, segments)
    index/                the embedded search index (see harness.index.embedded)
    ingest.json           only when built through the ingest tasks (--dispatch/--store):
                          how it was indexed (harness.state.ingest, docs/ingest.md)

A state is built into ``STATE.partial`` and renamed when complete, so a reader never
sees half a state; arms open it read-only, any number at once.

Stage modules: this one opens a state (:class:`State`); ``build`` builds one,
``ingest`` indexes it through the ingest tasks (``--dispatch``/``--store``) and
``stack`` also indexes it into OpenSearch (``--backend stack``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import IntegrityError
from harness.index.documents import doc_from_record
from harness.index.embedded import EmbeddedIndex
from harness.model import Chunk, Corpus

STATE_SCHEMA = "ragsweep.state/1"


@dataclass
class State:
    """An opened, read-only corpus state."""

    path: Path
    manifest: dict[str, Any]
    corpora: list[Corpus]
    index: EmbeddedIndex

    @classmethod
    def open(cls, path: Path) -> State:
        manifest_path = path / "state.json"
        if not manifest_path.is_file():
            raise IntegrityError(f"{path}: not a state (no state.json); run `ragsweep state build` first")
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("schema") != STATE_SCHEMA:
            raise IntegrityError(f"{manifest_path}: schema {manifest.get('schema')!r}, expected {STATE_SCHEMA}")
        corpora = [
            Corpus.model_validate_json((path / "corpora" / f"{c['name']}.json").read_text(encoding="utf-8"))
            for c in manifest["corpora"]
        ]
        return cls(path=path, manifest=manifest, corpora=corpora, index=EmbeddedIndex(path / "index"))

    def chunks(self) -> list[Chunk]:
        return [doc_from_record(d).chunk() for d in self.index.docs if d["doc_type"] == "chunk"]

    def store_path(self) -> Path:
        return self.path / "store.sqlite"
