"""The one settings model: every ``RAGSWEEP_*`` environment variable, read in one place.

Only the CLI (harness.commands) and the Job entrypoints (jobs/) read it, and they pass what
a library function needs down as an argument (the stack's addresses as
harness.index.ingest.messages.Endpoints). What still reads os.environ under harness/ is listed,
with why, in tests/test_environ_reads.py: the Celery app (the workers' own entrypoint), the
Hugging Face offline switches, the k8s launcher and the local executor's child environment.
A Job spec sets these variables (harness/sweep/k8s/builders.py); on a laptop they are the
stack's addresses (stack/env.sh). A flag, where an entrypoint has one, wins over its variable.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

from harness.model import Backend


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGSWEEP_", frozen=True, extra="ignore")

    # -- the stack's addresses ------------------------------------------------------------------
    opensearch_url: str = ""
    pg_dsn: str | None = None  # the stack's PostgreSQL (--store postgres; the answers of a state built so)
    pg_schema: str | None = None  # the Postgres store's schema (default: the DSN's search path)
    s3_endpoint: str | None = None
    # -- the machine's embedding cache (harness.index.embedcache): a folder, or "none" -------------
    embedding_cache: str = "var/cache/embeddings"
    # -- what a Job is told (jobs/arm.py, jobs/collect.py) --------------------------------------
    state: Path | None = None
    store: str | None = None
    sweep_id: str | None = None
    arm: str | None = None  # the arm spec as JSON {name, family, axis, config}, or a list of arms sharing legs
    legs: str | None = None  # the store key of a group's published legs.json (jobs.arm reads, jobs.legs writes)
    arms: str = "all"
    manifest: Path | None = None
    reranker: Path | None = None
    workers: int = 1
    backend: Backend = "embedded"


def settings() -> Settings:
    """The environment as it is now (read on every call: tests and Jobs set it late)."""
    return Settings()
