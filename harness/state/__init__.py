"""A corpus state: the corpora as injected, the relational store and the index, built once.

Layout of ``STATE/``::

    state.json            what was built: corpora (versions, checksums), chunking, index, and
                          ``contents``: every file's sha256 and the state's identity, a content
                          address (harness.state.contents), checked whenever the state is opened
    build.json            when and how long (the stack's dispatch time, its settle polls): apart,
                          so the same corpora built twice get the same identity
    corpora/<name>.json   each corpus as read into the model (the judge reads it back)
    store.sqlite          the relational store (meetings, speakers, segments)
    index/                the embedded search index (see harness.index.embedded)
    ingest.json           only when built through the ingest tasks (--dispatch/--store):
                          how it was indexed (harness.state.ingest, docs/ingest.md)

A state is built into ``STATE.partial-<pid>-<random>`` and renamed when complete, so a reader
never sees half a state; one build at a time per folder (``.STATE.lock``, harness.state.lock);
arms open it read-only, any number at once.

Stage modules: this one opens a state (:class:`State`); ``build`` builds one,
``ingest`` indexes it through the ingest tasks (``--dispatch``/``--store``) and
``stack`` also indexes it into OpenSearch (``--backend stack``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.corpora.checks import check_corpora
from harness.errors import InputDataError, IntegrityError
from harness.index.documents import doc_from_record
from harness.index.embedded import EmbeddedIndex
from harness.inputfiles import read_json_input
from harness.model import Chunk, Corpus

STATE_SCHEMA = "ragsweep.state/2"  # /2: state.json records what the state holds (harness.state.contents)
BUILD_SCHEMA = "ragsweep.state-build/1"
STACK_TIMINGS = ("dispatched_at", "settle")  # the stack block's when and how long: build.json, not state.json
_CLAIM_KEYS = ("schema", "corpora", "chunking", "index", "contents")
CORPUS_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")  # a corpus names its file: corpora/<name>.json


def read_manifest(path: Path) -> dict[str, Any]:
    """``STATE/state.json``, parsed and shaped like a state's claim (IntegrityError, one line, naming the
    file and what is wrong)."""
    manifest_path = path / "state.json"
    if not path.is_dir():
        raise IntegrityError(f"{path}: not a state folder; run `ragsweep state build` first")
    if not manifest_path.is_file():
        raise IntegrityError(f"{path}: not a state (no state.json); run `ragsweep state build` first")
    try:
        manifest = read_json_input(manifest_path)  # bounded: its size and nesting (harness.inputfiles)
    except InputDataError as e:
        raise IntegrityError(f"{e}; the state is damaged: rebuild it") from e
    except OSError as e:
        raise IntegrityError(f"{manifest_path}: cannot be read ({e.strerror})") from e
    if not isinstance(manifest, dict):
        raise IntegrityError(f"{manifest_path}: not a JSON object; the state is damaged: rebuild it")
    if manifest.get("schema") != STATE_SCHEMA:
        raise IntegrityError(f"{manifest_path}: schema {manifest.get('schema')!r}, expected {STATE_SCHEMA}; "
                             "rebuild the state with `ragsweep state build --force`")
    missing = [k for k in _CLAIM_KEYS if k not in manifest]
    if missing:
        raise IntegrityError(f"{manifest_path}: no {missing[0]!r}; the state is damaged: rebuild it")
    _check_corpus_names(manifest["corpora"], manifest_path)
    return manifest


def _check_corpus_names(corpora: Any, where: Path) -> None:
    """Each corpus's name, which names a file of the state, is a corpus name: never a path out of it."""
    if not isinstance(corpora, list) or not all(isinstance(c, dict) for c in corpora):
        raise IntegrityError(f"{where}: corpora is not a list of objects; the state is damaged: rebuild it")
    for i, corpus in enumerate(corpora):
        name = corpus.get("name")
        if not isinstance(name, str) or not CORPUS_NAME.fullmatch(name):
            raise IntegrityError(f"{where}: corpora[{i}].name {name!r} is not a corpus name "
                                 f"({CORPUS_NAME.pattern}); the state is damaged: rebuild it")


def verified_identity(path: Path) -> str:
    """The state's content address, once every file has been checked against it (exit 5 naming the first
    that differs; once per process)."""
    from harness.state.contents import verify

    return verify(path, read_manifest(path))


def verified_measurement(path: Path) -> str:
    """The state's measurement identity (what decides an embedded arm's numbers: harness.state.contents),
    once every file has been checked (exit 5 as :func:`verified_identity`)."""
    from harness.state.contents import measured, verify

    manifest = read_manifest(path)
    verify(path, manifest)
    return measured(path, manifest)


@dataclass
class State:
    """An opened, read-only corpus state, verified against what it was built with."""

    path: Path
    manifest: dict[str, Any]
    corpora: list[Corpus]
    index: EmbeddedIndex
    identity: str = ""

    @classmethod
    def open(cls, path: Path) -> State:
        from harness.state.contents import verify

        manifest = read_manifest(path)
        identity = verify(path, manifest)
        corpora = []
        for c in manifest["corpora"]:
            file = path / "corpora" / f"{c['name']}.json"
            try:
                corpora.append(Corpus.model_validate_json(file.read_text(encoding="utf-8")))
            except (ValueError, OSError) as e:  # verified above: only a state built wrong gets here
                raise IntegrityError(f"{file}: not a corpus ({str(e).splitlines()[0]}); rebuild the state") from e
        # the rules state build applied (harness.corpora.checks): a state built before it did, or whose
        # corpus copy was edited and its digests re-recorded, is refused, not measured
        check_corpora(corpora, {c.name: str(path / "corpora" / f"{c.name}.json") for c in corpora},
                      advice="the state holds a corpus that breaks them: rebuild it from a corpus that passes "
                             "(`ragsweep state build --force`)")
        return cls(path=path, manifest=manifest, corpora=corpora, index=EmbeddedIndex(path / "index"),
                   identity=identity)

    def build_record(self) -> dict[str, Any]:
        """``build.json``: when and how long (not part of the identity); empty when absent."""
        try:
            record = read_json_input(self.path / "build.json")
        except (OSError, InputDataError):
            return {}
        return record if isinstance(record, dict) else {}

    def stack_block(self) -> dict[str, Any] | None:
        """The state's OpenSearch block, with its dispatch time from build.json (the settle check reads it)."""
        block = self.manifest.get("stack")
        if block is None:
            return None
        return {**block, **(self.build_record().get("stack") or {})}

    def chunks(self) -> list[Chunk]:
        return [doc_from_record(d).chunk() for d in self.index.docs if d["doc_type"] == "chunk"]

    def store_path(self) -> Path:
        return self.path / "store.sqlite"
