"""What the launcher needs to know about a release, as the chart writes it.

The chart renders ``<release>-launcher`` (a ConfigMap, key ``settings.json``) from its values:
image digests, the in-cluster object store, the name and keys of the credentials Secret, the Secret
holding the CA of OpenSearch's certificate,
the service accounts the arm and collector pods run as, placement (CPU and GPU), resources and the Job
policy (backoffLimit, activeDeadlineSeconds, ttlSecondsAfterFinished). The launcher reads it
and builds Jobs that agree with the release, so no value is typed twice. No credential is
ever in it: only the Secret's name and key names.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.alias_generators import to_camel

from harness.errors import InputDataError
from harness.inputfiles import parse_json_input
from harness.model import Backend

SETTINGS_SCHEMA = "ragsweep.k8s-launcher/1"
SETTINGS_KEY = "settings.json"
# An image reference pinned by digest: anything before '@', then a sha256 digest.
DIGEST_REF = r"^[^@\s]+@sha256:[0-9a-f]{64}$"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class SecretKey(_Model):
    name: str = Field(min_length=1)
    key: str = Field(min_length=1)


class Credentials(_Model):
    """Where the object store's access key pair lives (a Secret the chart made or was given)."""

    access_key_id: SecretKey
    secret_access_key: SecretKey


class SecretEnv(_Model):
    """An environment variable whose value is a key of a Secret (e.g. PGPASSWORD)."""

    name: str = Field(min_length=1)
    secret: str = Field(min_length=1)
    key: str = Field(min_length=1)


class CaFile(_Model):
    """The CA that signed the release's OpenSearch certificate: a key of a Secret (the chart's
    ``<release>-opensearch-ca``, or ca.crt of an existing TLS Secret), mounted as a file."""

    secret: str = Field(min_length=1)
    key: str = Field(min_length=1)


class Resources(_Model):
    requests: dict[str, str] = Field(default_factory=dict)
    limits: dict[str, str] = Field(default_factory=dict)


class Placement(_Model):
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: tuple[dict[str, Any], ...] = ()


class JobPolicy(_Model):
    backoff_limit: int = Field(1, ge=0, le=10)
    active_deadline_seconds: int = Field(7200, ge=60)
    ttl_seconds_after_finished: int = Field(86400, ge=0)


class PodShape(_Model):
    policy: JobPolicy = JobPolicy()
    resources: Resources = Resources()
    placement: Placement = Placement()


class GpuShape(_Model):
    """Rerank-stage arms: the extended resource they request and the nodes that have it. ``enabled``
    false: a cluster without GPUs; the cross-encoder's pods (rerank arms, scores Jobs) run on CPU nodes
    as the other arms do (the CPU image, ``arm``'s shape and placement), the cross-encoder on their CPU."""

    enabled: bool = True
    resource_name: str = "nvidia.com/gpu"
    count: int = Field(1, ge=1, le=8)
    policy: JobPolicy = JobPolicy()
    resources: Resources = Resources()
    placement: Placement = Placement()


class Images(_Model):
    cpu: str = Field(pattern=DIGEST_REF)
    gpu: str | None = Field(None, pattern=DIGEST_REF)  # required when gpu.enabled


class LauncherSettings(_Model):
    schema_: Literal["ragsweep.k8s-launcher/1"] = Field("ragsweep.k8s-launcher/1", alias="schema")
    release: str = Field(min_length=1)
    images: Images
    image_pull_policy: Literal["IfNotPresent", "Always", "Never"] = "IfNotPresent"
    image_pull_secrets: tuple[str, ...] = ()
    service_account: str = Field(min_length=1)  # arms, legs and scores Jobs
    # The collector Job's own account (the chart's <release>-collector); unset: service_account
    collector_service_account: str | None = Field(None, min_length=1)
    store: str = Field(min_length=1)  # s3://BUCKET[/PREFIX] as the pods see it, or a folder in tests
    s3_endpoint: str | None = None
    region: str = "us-east-1"
    credentials: Credentials | None = None
    # Non-secret connection settings of the release's services (OpenSearch URL, a DSN without
    # its password, the k-NN engine), and the secrets they need, by reference.
    extra_env: dict[str, str] = Field(default_factory=dict)
    secret_env: tuple[SecretEnv, ...] = ()
    # OpenSearch behind TLS (the chart's opensearch.tls.enabled): the CA its clients trust; None: plain HTTP
    opensearch_ca: CaFile | None = None
    state_path: str = "/var/lib/ragsweep/state"
    state_key: str = "state/state.tar.gz"
    reranker_path: str = "/var/lib/ragsweep/reranker"
    workers: int = Field(1, ge=1)
    # What the arms search: the release's OpenSearch (the injector builds the state with
    # --backend stack), or the state's embedded index.
    backend: Backend = "stack"
    parallelism: int = Field(4, ge=1)
    group_arms: bool = False  # a legs group's arms as one Job (harness.sweep.k8s.groups)
    shards: int = Field(1, ge=1, le=64)  # >= 2: a legs group's queries over this many shard Jobs, then a merge
    arm: PodShape = PodShape()
    collector: PodShape = PodShape()
    gpu: GpuShape = GpuShape()

    @model_validator(mode="after")
    def _gpu_image(self) -> LauncherSettings:
        if self.gpu.enabled and self.images.gpu is None:
            raise ValueError("images.gpu is required when gpu.enabled (rerank arms run the GPU image)")
        return self


def rerank_scorer(settings: LauncherSettings) -> tuple[str, str]:
    """What runs a rerank Job's cross-encoder (--rerank-backend, --rerank-device): torch on the GPU it asks
    for, or on its CPU node's cores where the release has no GPUs (gpu.enabled false). In the sweep's
    measurement identity, so the executor and the Job agree on a rerank arm's config hash."""
    return ("torch", "cuda" if settings.gpu.enabled else "cpu")


def whole_cores(resources: Resources, *, at_limit: bool = False) -> int | None:
    """The cross-encoder's threads on a CPU node: the whole cores the pod is sure of, its CPU request (else
    its limit; ``at_limit``: its limit, else its request), at least one; None with neither. Torch's own
    count is the node's cores whatever the pod's share, and more threads than cores the pods have to
    themselves spin against each other: two pods of 2 threads on the 2-core single-node cluster scored
    5.2 pairs/s between them (docs/cluster.md)."""
    from kubernetes.utils import parse_quantity  # the builders' dependency, which call this

    first, second = (resources.limits, resources.requests) if at_limit else (resources.requests, resources.limits)
    amount = first.get("cpu") or second.get("cpu")
    return None if amount is None else max(1, int(parse_quantity(amount)))


def parse_settings(text: str, source: str) -> LauncherSettings:
    """Read the chart's settings.json; errors name the source and the field on one line."""
    doc = parse_json_input(text, source)  # bounded nesting, one line naming the source
    try:
        return LauncherSettings.model_validate(doc)
    except PydanticValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" if err["loc"] else err["msg"]
                             for err in e.errors())
        raise InputDataError(f"{source}: {problems}") from e
