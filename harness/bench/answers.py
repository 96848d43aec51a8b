"""The arm's answers block: the answer engine over the state's store, or the stack's PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

from harness.answers import Sources, answers_block
from harness.answers.results import AnswerSettings
from harness.errors import IntegrityError
from harness.index.ingest.messages import Endpoints, StoreSpec
from harness.model import Corpus
from harness.state import State
from harness.store import SqliteStore


def arm_answers(state: State, corpora: list[Corpus], settings: AnswerSettings, search: Any = None, *,
                backend: str = "embedded", pg_dsn: str = "") -> dict[str, Any]:
    """The answer engine over the phrase aggregation and the relational store (harness.answers).

    The store is the state's own SQLite file, except on the stack backend for a state ingested
    from the stack's PostgreSQL (``state build --store postgres``): then the answers read
    PostgreSQL at ``pg_dsn``, as the product would, and the block records which schema.
    """
    with SqliteStore.open(state.store_path(), readonly=True) as own:
        postgres = ingested_postgres(state) if backend == "stack" else None
        if postgres is None:
            sources = Sources(search=search or state.index, store=own, bucket_size=settings.bucket_size)
            return answers_block(corpora, sources, settings)
        spec, described = postgres
        with spec.open(readonly=True, endpoints=Endpoints(pg_dsn=pg_dsn or None)) as store:
            mine, theirs = own.stats(), store.stats()
            if theirs != mine:
                raise IntegrityError(
                    f"the PostgreSQL store {described} holds {theirs.files} files / {theirs.segments} segments / "
                    f"{theirs.speakers} speakers, the state {state.path} {mine.files} / {mine.segments} / "
                    f"{mine.speakers}: answers over it would not be this state's (another corpus was injected "
                    "into the schema since the build); rebuild the state into a fresh RAGSWEEP_PG_SCHEMA")
            sources = Sources(search=search or state.index, store=store, bucket_size=settings.bucket_size)
            block = answers_block(corpora, sources, settings)
    block["answerer"]["store"] = described
    return block


def ingested_postgres(state: State) -> tuple[StoreSpec, dict[str, Any]] | None:
    """The PostgreSQL store a state was ingested from (ingest.json), or None."""
    record = state.path / "ingest.json"
    if not record.is_file():
        return None
    store = json.loads(record.read_text(encoding="utf-8")).get("store", {})
    if store.get("engine") != "postgres":
        return None
    return StoreSpec("postgres", store["dsn_from"], store.get("schema")), {"engine": "postgres",
                                                                         "schema": store.get("schema")}
