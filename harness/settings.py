"""The one settings model: every ``RAGSWEEP_*`` environment variable, read in one place.

Outside the CLI package, since the Job entrypoints read it too: only the CLI (harness.cli,
harness.commands) and the Job entrypoints (jobs/) read it (tests/test_import_graph.py: no stage
imports it), and they pass what
a library function needs down as an argument (the stack's addresses as
harness.index.ingest.messages.Endpoints). What still touches os.environ under harness/ is listed,
with why, in tests/test_environ_reads.py: the Celery app (the workers' own entrypoint) and the
Hugging Face offline switches (written, not read).
A Job spec sets these variables (harness/sweep/k8s/builders.py); on a laptop they are the
stack's addresses (stack/env.sh). A flag, where an entrypoint has one, wins over its variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from harness.errors import UsageError
from harness.machinecache import machine_cache
from harness.model import EmbeddingBackend

ENV_PREFIX = "RAGSWEEP_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    # -- the stack's addresses ------------------------------------------------------------------
    opensearch_url: str = ""
    pg_dsn: str | None = None  # the stack's PostgreSQL (--store postgres; the answers of a state built so)
    pg_schema: str | None = None  # the Postgres store's schema (default: the DSN's search path)
    s3_endpoint: str | None = None
    # -- the machine's cache outside every clone (harness.machinecache; RAGSWEEP_MACHINE_CACHE, else root's
    # /var/cache/ragsweep, else $XDG_CACHE_HOME or ~/.cache) -----------------------------------------
    machine_cache: str | None = None
    xdg_cache_home: str | None = Field(None, validation_alias="XDG_CACHE_HOME")
    # -- the machine's embedding cache (harness.index.embedcache): a folder, or "none"; by default in the
    # machine's cache, so a fresh clone encodes no text the machine has encoded ----------------------
    embedding_cache: str = Field(default_factory=lambda data: str(
        machine_cache(data["machine_cache"], data["xdg_cache_home"]) / "embeddings"))
    # -- the team's embedding cache under it (harness.index.teamcache): s3://bucket[/prefix], a folder every
    # machine mounts, or off; its S3 endpoint (else s3_endpoint's). Credentials: boto3's chain, never here --
    team_cache: str | None = None
    team_cache_endpoint: str | None = None
    # -- what runs the embedding model (--embedding-backend; harness.index.onnx_backend): torch or onnx --
    embedding_backend: EmbeddingBackend = "torch"
    onnx_cache: str = "var/cache/onnx"  # where the onnx backend keeps the model's local export
    # -- the machine's cross-encoder score cache (harness.retrieval.scorecache): a folder, or "none" --
    rerank_cache: str = "var/cache/rerank"
    rerank_device: str = "cpu"  # what runs the cross-encoder: cpu, cuda or cuda:N (harness.retrieval.rerank)
    rerank_backend: str = "torch"  # the cross-encoder's runtime: torch, or onnx (onnxruntime on the CPU)
    # -- what a Job is told: jobs.arm, jobs.legs and jobs.scores their task, whole: its fields are
    # harness.sweep.task.Task's, defined there once, never here -------------------------------------
    task: str | None = None
    # -- what the collector is told (jobs/collect.py; store and s3_endpoint: jobs/sync.py too) ------
    store: str | None = None
    sweep_id: str | None = None
    arms: str = "all"
    manifest: Path | None = None
    # -- what the sync containers are told (jobs/sync.py) ---------------------------------------
    sync_key: str | None = None  # the archive's key in the store
    sync_from: Path | None = None  # push: the folder to pack
    sync_out: Path | None = None  # pull: the folder to unpack into
    sync_wait: float = 0.0  # pull: seconds to wait for the archive to appear
    # -- the Kubernetes launcher (ragsweep sweep run --executor k8s; docs/kubernetes.md). Unset is
    # harness.sweep.k8s.executor.Release's default (launcher ConfigMap ragsweep-launcher, 6 h) ----
    k8s_namespace: str | None = None  # the chart release's namespace
    k8s_launcher_config: str | None = None  # the ConfigMap holding the launcher settings
    k8s_s3_endpoint: str | None = None  # the store as the launcher reaches it (a port-forward)
    k8s_context: str | None = None  # the kubeconfig context (default: the current one)
    k8s_timeout: float | None = None  # the sweep's overall deadline, in seconds
    # Not RAGSWEEP_: Kubernetes sets it in every pod; the launcher then uses the pod's service account.
    kubernetes_service_host: str | None = Field(None, validation_alias="KUBERNETES_SERVICE_HOST")


def settings() -> Settings:
    """The environment as it is now (read on every call: tests and Jobs set it late). A value that does
    not fit its field is a usage error (exit 2) on one line naming the variable, not pydantic's dump."""
    try:
        return Settings()
    except PydanticValidationError as e:
        raise UsageError(f"{'; '.join(_problem(error) for error in e.errors())}; "
                         "set it to what is expected, or unset it") from e


def _variable(field: str) -> str:
    """The environment variable a settings field is read from."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    return alias if isinstance(alias, str) else f"{ENV_PREFIX}{field.upper()}"


def _problem(error: Any) -> str:
    field = str(error["loc"][0]) if error.get("loc") else ""
    value = repr(error.get("input"))
    shown = value if len(value) <= 60 else value[:57] + "..."
    return f"{_variable(field)}={shown}: {error['msg']}"
