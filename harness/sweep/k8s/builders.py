"""Pure builders: an arm (or a collection) in, a typed ``V1Job`` out. No API calls, no I/O.

Every Job carries backoffLimit, activeDeadlineSeconds, ttlSecondsAfterFinished and a pod
that never restarts in place (restartPolicy Never, so a retry is a new pod the Job
controller counts), the ``app.kubernetes.io/*`` labels and ``ragsweep.io/sweep-id``,
``/family`` and ``/arm`` (label-safe; the exact values are annotations). The image is
referenced by digest. The container runs ``python -m jobs.arm`` with no arguments: its input is
one task (harness.sweep.task, built as the local executor builds it) in one environment variable,
``RAGSWEEP_TASK``, and credentials enter only through ``secretKeyRef`` (harness.sweep.k8s.env; with
OpenSearch's CA file where it speaks TLS), never in the task.
A legs Job (``python -m jobs.legs``, on a CPU node) fetches a group's
shared legs once and publishes them; the group's arm Jobs are told where (their task's ``legs``). A
scores Job (``python -m jobs.scores``, on a GPU node) scores one part of a group's cross-encoder
pairs and publishes them; the group's rerank arm Jobs are told where (their task's ``scores``).
A rerank-stage arm requests the GPU resource and carries the GPU placement; every other arm
gets the CPU placement and no GPU toleration. A release without GPUs (``gpu.enabled`` false) runs
its rerank arms and scores Jobs as CPU pods, the cross-encoder on the CPU (``rerank_scorer``).

A pod failure policy fails the Job at once on the harness's deterministic exit codes (usage,
refusal, bad input, integrity: retrying cannot help) and retries anything else up to
backoffLimit; a pod evicted by a disruption does not count against it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, cast

from kubernetes import client as k

from harness.errors import EXIT_INPUT, EXIT_INTEGRITY, EXIT_LICENCE, EXIT_REFUSED, EXIT_USAGE, EXIT_VALIDATION
from harness.sweep.catalogue import Arm
from harness.sweep.k8s.env import SCRATCH, ca_volume, runtime_env, service_env, store_env
from harness.sweep.k8s.env import plain as _env
from harness.sweep.k8s.settings import LauncherSettings, PodShape, rerank_scorer, whole_cores
from harness.sweep.task import Job, RerankBackend, build_task

APP_NAME = "ragsweep"
MANAGED_BY = "ragsweep-launcher"
LABEL_SWEEP = "ragsweep.io/sweep-id"
LABEL_FAMILY = "ragsweep.io/family"
LABEL_ARM = "ragsweep.io/arm"
LABEL_COMPONENT = "app.kubernetes.io/component"
ARM_CONTAINER = "arm"
COLLECTOR_CONTAINER = "collector"
# Exit codes that mean "the same input fails the same way" (harness.errors): no retry.
DETERMINISTIC_EXIT_CODES = (EXIT_USAGE, EXIT_REFUSED, EXIT_INPUT, EXIT_INTEGRITY, EXIT_LICENCE, EXIT_VALIDATION)
PYTHON = "python"
ARM_COMMAND = (PYTHON, "-m", "jobs.arm")
LEGS_COMMAND = (PYTHON, "-m", "jobs.legs")
LEGS_CONTAINER = "legs"
SCORES_COMMAND = (PYTHON, "-m", "jobs.scores")
SCORES_CONTAINER = "scores"
COLLECT_COMMAND = (PYTHON, "-m", "jobs.collect")
SYNC_COMMAND = (PYTHON, "-m", "jobs.sync", "pull")
RERANK_CACHE = f"{SCRATCH}/rerank-cache"
TASK_VAR = "RAGSWEEP_TASK"  # a Job's one input: its task, whole (harness.sweep.task)
UID = 10001

_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_UNSAFE = re.compile(r"[^a-z0-9-]+")


def label_value(text: str) -> str:
    """A valid label value for ``text``: itself when it is one, else a readable head and a hash."""
    if len(text) <= 63 and _LABEL_VALUE.match(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    head = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)[:52].strip("-_.")
    return f"{head}-{digest}" if head else digest


def _slug(text: str, width: int) -> str:
    return _DNS_UNSAFE.sub("-", text.lower())[:width].strip("-") or "x"


def job_name(kind: str, sweep_id: str, name: str) -> str:
    """A DNS-1123 label (<= 63 chars) unique per (kind, sweep, arm) and stable across reruns."""
    digest = hashlib.sha256(f"{kind}\0{sweep_id}\0{name}".encode()).hexdigest()[:8]
    return f"{kind}-{_slug(name, 63 - len(kind) - 10)}-{digest}"


def arm_job_name(sweep_id: str, arm: Arm) -> str:
    return job_name("arm", sweep_id, arm.name)


def legs_job_name(sweep_id: str, group: str) -> str:
    return job_name("legs", sweep_id, group)


def scores_job_name(sweep_id: str, scores: str, part: tuple[int, int]) -> str:
    return job_name("scores", sweep_id, f"{scores}-{part[0] + 1}-of-{part[1]}")


def collector_job_name(sweep_id: str) -> str:
    return job_name("collect", sweep_id, sweep_id)


def labels(settings: LauncherSettings, component: str, sweep_id: str, arm: Arm | None = None) -> dict[str, str]:
    out = {
        "app.kubernetes.io/name": APP_NAME,
        "app.kubernetes.io/instance": label_value(settings.release),
        LABEL_COMPONENT: component,
        "app.kubernetes.io/part-of": APP_NAME,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        LABEL_SWEEP: label_value(sweep_id),
    }
    if arm is not None:
        out[LABEL_FAMILY] = label_value(arm.family)
        out[LABEL_ARM] = label_value(arm.name)
    return out


def sweep_selector(sweep_id: str, component: str | None = None) -> str:
    selector = f"{LABEL_SWEEP}={label_value(sweep_id)},app.kubernetes.io/managed-by={MANAGED_BY}"
    return f"{selector},{LABEL_COMPONENT}={component}" if component else selector


def task_env(settings: LauncherSettings, arm: Arm | Sequence[Arm], sweep_id: str, *, job: Job = "arm",
             legs: str | None = None, reranker: bool | None = None, scores: Sequence[str] = (),
             part: tuple[int, int] = (0, 1), cache: bool = True, processes: int = 1,
             shard: tuple[int, int] | None = None, shards: int | None = None) -> list[k.V1EnvVar]:
    """A Job's one task (harness.sweep.task, built as the local executor builds it) in RAGSWEEP_TASK, then the
    store's region and credentials (by reference only), the service and runtime settings. ``legs``: the store
    key of the group's legs.json (an arm's and a scores Job's to read, a legs Job's to write); ``scores``: the
    store keys of its cross-encoder scores (an arm's to read, a scores Job's one to write); ``reranker``:
    whether the Job runs the cross-encoder (default: a rerank arm does); ``cache``: whether its score cache is
    on the scratch volume (else in the process's memory)."""
    arms = (arm,) if isinstance(arm, Arm) else tuple(arm)
    rerank = reranker if reranker is not None else isinstance(arm, Arm) and arm.needs_reranker
    backend, device = rerank_scorer(settings)
    # the root filesystem is read-only: the cross-encoder score cache lives on the pod's scratch volume, so it
    # lasts one pod (docs/sweeps.md, "The machine's score cache"). The Job asks for the GPU resource
    # (gpu.resource_name): the cross-encoder runs on it; without GPUs on its CPU node's cores, as many threads
    # as the pod's CPU request has whole cores
    threads = None if settings.gpu.enabled else whole_cores(settings.arm.resources)
    task = build_task(job, arms, state=settings.state_path, store=settings.store, sweep_id=sweep_id,
                      backend=settings.backend, s3_endpoint=settings.s3_endpoint, workers=settings.workers,
                      reranker=settings.reranker_path if rerank else None, rerank_device=device,
                      rerank_backend=cast(RerankBackend, backend), rerank_threads=threads or 0,
                      rerank_cache=RERANK_CACHE if cache else None, legs=legs, scores=tuple(scores), part=part,
                      processes=processes, shard=shard, shards=shards)
    env = [_env(TASK_VAR, task.to_json())]
    env += [e for e in store_env(settings) if e.name not in ("RAGSWEEP_STORE", "RAGSWEEP_S3_ENDPOINT")]
    return env + service_env(settings) + runtime_env()


def _security_context() -> k.V1SecurityContext:
    return k.V1SecurityContext(run_as_non_root=True, run_as_user=UID, run_as_group=UID,
                               allow_privilege_escalation=False, read_only_root_filesystem=True,
                               capabilities=k.V1Capabilities(drop=["ALL"]))


def _resources(shape_resources: Any, extra_limits: dict[str, str] | None = None) -> k.V1ResourceRequirements:
    limits = {**shape_resources.limits, **(extra_limits or {})}
    requests = {**shape_resources.requests, **(extra_limits or {})}
    return k.V1ResourceRequirements(requests=requests or None, limits=limits or None)


def _tolerations(raw: Sequence[dict[str, Any]]) -> list[k.V1Toleration] | None:
    if not raw:
        return None
    return [k.V1Toleration(key=t.get("key"), operator=t.get("operator"), value=t.get("value"),
                           effect=t.get("effect"), toleration_seconds=t.get("tolerationSeconds")) for t in raw]


def _storage(amounts: dict[str, str]) -> dict[str, str]:
    return {name: amount for name, amount in amounts.items() if name == "ephemeral-storage"}


def _sync_container(settings: LauncherSettings, image: str, name: str, key: str, out: str,
                    mount: k.V1VolumeMount, shape: PodShape) -> k.V1Container:
    """An init container that unpacks ``key`` into ``out``. Its ephemeral-storage is its pod's main container's:
    the kubelet holds a pod to the larger of its init containers' limits and its main containers' sum, and
    what this one unpacks stays on the pod's volume (a smaller limit here would cap the pod)."""
    env = [*store_env(settings), _env("RAGSWEEP_SYNC_KEY", key), _env("RAGSWEEP_SYNC_OUT", out)]
    requests = {"cpu": "100m", "memory": "256Mi", **_storage(shape.resources.requests)}
    limits = {"cpu": "1", "memory": "512Mi", **_storage(shape.resources.limits)}
    return k.V1Container(
        name=name, image=image, image_pull_policy=settings.image_pull_policy, command=list(SYNC_COMMAND),
        env=env, security_context=_security_context(),
        resources=k.V1ResourceRequirements(requests=requests, limits=limits),
        volume_mounts=[mount, k.V1VolumeMount(name="scratch", mount_path=SCRATCH)])


def _pod_failure_policy() -> k.V1PodFailurePolicy:
    # No containerName: the rule covers the init containers too (the state/reranker fetch
    # exits with the same codes, e.g. 5 for a missing key, which no retry can fix).
    return k.V1PodFailurePolicy(rules=[
        k.V1PodFailurePolicyRule(action="FailJob", on_exit_codes=k.V1PodFailurePolicyOnExitCodesRequirement(
            operator="In", values=list(DETERMINISTIC_EXIT_CODES))),
        k.V1PodFailurePolicyRule(action="Ignore", on_pod_conditions=[
            k.V1PodFailurePolicyOnPodConditionsPattern(type="DisruptionTarget", status="True")]),
    ])


def _pod(settings: LauncherSettings, shape: PodShape, containers: list[k.V1Container],
         volumes: list[k.V1Volume], init: list[k.V1Container] | None = None,
         service_account: str | None = None) -> k.V1PodSpec:
    """What every ragsweep Job pod shares: no restarts in place, no API token, non-root; the arms' service
    account unless ``service_account`` names another."""
    pull_secrets = [k.V1LocalObjectReference(name=n) for n in settings.image_pull_secrets] or None
    return k.V1PodSpec(
        restart_policy="Never", service_account_name=service_account or settings.service_account,
        automount_service_account_token=False, enable_service_links=False,
        security_context=k.V1PodSecurityContext(
            run_as_non_root=True, run_as_user=UID, run_as_group=UID, fs_group=UID,
            seccomp_profile=k.V1SeccompProfile(type="RuntimeDefault")),
        image_pull_secrets=pull_secrets, containers=containers, init_containers=init or None, volumes=volumes,
        node_selector=dict(shape.placement.node_selector) or None,
        tolerations=_tolerations(shape.placement.tolerations))


def _job(name: str, job_labels: dict[str, str], annotations: dict[str, str], shape: PodShape,
         pod: k.V1PodSpec) -> k.V1Job:
    policy = shape.policy
    return k.V1Job(
        api_version="batch/v1", kind="Job",
        metadata=k.V1ObjectMeta(name=name, labels=job_labels, annotations=annotations),
        spec=k.V1JobSpec(
            backoff_limit=policy.backoff_limit,
            active_deadline_seconds=policy.active_deadline_seconds,
            ttl_seconds_after_finished=policy.ttl_seconds_after_finished,
            pod_failure_policy=_pod_failure_policy(),
            template=k.V1PodTemplateSpec(metadata=k.V1ObjectMeta(labels=job_labels, annotations=annotations),
                                         spec=pod),
        ),
    )


def _state_volumes(settings: LauncherSettings, image: str, shape: PodShape) -> tuple[
        list[k.V1Container], list[k.V1Volume], list[k.V1VolumeMount]]:
    """The fetch-state init container, the state and scratch volumes (and OpenSearch's CA, which the main
    container's SSL_CERT_FILE names), and the main container's mounts."""
    state_mount = k.V1VolumeMount(name="state", mount_path=settings.state_path)
    init = [_sync_container(settings, image, "fetch-state", settings.state_key, settings.state_path, state_mount,
                            shape)]
    volumes = [k.V1Volume(name="state", empty_dir=k.V1EmptyDirVolumeSource()),
               k.V1Volume(name="scratch", empty_dir=k.V1EmptyDirVolumeSource())]
    # Writable: tantivy's index reader takes a lock file in the index folder (on a read-only mount
    # every arm fails "Failed to acquire Lockfile: Read-only file system"). The volume is this pod's
    # own emptyDir, filled by fetch-state; nothing leaves it.
    mounts = [k.V1VolumeMount(name="state", mount_path=settings.state_path),
              k.V1VolumeMount(name="scratch", mount_path=SCRATCH)]
    ca_volumes, ca_mounts = ca_volume(settings)
    return init, volumes + ca_volumes, mounts + ca_mounts


def build_legs_job(settings: LauncherSettings, arms: Sequence[Arm], sweep_id: str, name: str, legs: str) -> k.V1Job:
    """A group's legs Job named ``name`` (``legs_job_name``, the name the launcher waits for): ``jobs.legs``
    fetches the legs every arm of ``arms`` asks for and writes them to the store at ``legs``; it runs on a
    CPU node whatever the arms' stages (no cross-encoder is loaded)."""
    init, volumes, mounts = _state_volumes(settings, settings.images.cpu, settings.arm)
    container = k.V1Container(
        name=LEGS_CONTAINER, image=settings.images.cpu, image_pull_policy=settings.image_pull_policy,
        command=list(LEGS_COMMAND), env=task_env(settings, arms, sweep_id, job="legs", legs=legs, reranker=False),
        resources=_resources(settings.arm.resources), security_context=_security_context(), volume_mounts=mounts,
        termination_message_policy="FallbackToLogsOnError",
    )
    pod = _pod(settings, settings.arm, [container], volumes, init)
    annotations = {"ragsweep.io/sweep-id": sweep_id, "ragsweep.io/legs": legs,
                   "ragsweep.io/arms": ",".join(a.name for a in arms)}
    # Component "arm": the chart's NetworkPolicy grants by component, and a legs pod needs exactly what an
    # arm pod needs (the object store, the state). The job name (legs-...) and the annotations tell them apart.
    return _job(name, labels(settings, "arm", sweep_id), annotations, settings.arm, pod)


def _rerank_pod(settings: LauncherSettings, name: str, command: Sequence[str], env: list[k.V1EnvVar],
                reranker_key: str) -> tuple[PodShape, k.V1PodSpec]:
    """A pod that runs the cross-encoder: the GPU image, shape and placement (or, gpu.enabled false, the CPU
    image and the arms' shape and placement), the reranker fetched by an init container into a read-only
    volume."""
    if settings.gpu.enabled:
        shape = PodShape(policy=settings.gpu.policy, resources=settings.gpu.resources,
                         placement=settings.gpu.placement)
        image = settings.images.gpu
        gpu = {settings.gpu.resource_name: str(settings.gpu.count)}
    else:
        shape, image, gpu = settings.arm, settings.images.cpu, {}
    assert image is not None  # LauncherSettings requires images.gpu when gpu.enabled
    init, volumes, mounts = _state_volumes(settings, image, shape)
    init.append(_sync_container(settings, image, "fetch-reranker", reranker_key, settings.reranker_path,
                                k.V1VolumeMount(name="reranker", mount_path=settings.reranker_path), shape))
    volumes.append(k.V1Volume(name="reranker", empty_dir=k.V1EmptyDirVolumeSource()))
    mounts.append(k.V1VolumeMount(name="reranker", mount_path=settings.reranker_path, read_only=True))
    container = k.V1Container(
        name=name, image=image, image_pull_policy=settings.image_pull_policy, command=list(command), env=env,
        resources=_resources(shape.resources, gpu),
        security_context=_security_context(), volume_mounts=mounts, termination_message_policy="FallbackToLogsOnError",
    )
    return shape, _pod(settings, shape, [container], volumes, init)


def build_scores_job(settings: LauncherSettings, arms: Sequence[Arm], sweep_id: str, name: str, *, legs: str,
                     scores: str, part: tuple[int, int], reranker_key: str) -> k.V1Job:
    """A scores Job named ``name`` (``scores_job_name``): ``jobs.scores`` scores the cross-encoder pairs of the
    rerank ``arms`` of a group over the ``part`` (k, P) of its queries, from the legs at ``legs``, and writes
    them to the store at ``scores``; on a GPU node, the cross-encoder on the GPU, as a rerank arm's Job runs it
    (the same scorer key, so the arms read the scores; gpu.enabled false: both on CPU nodes); scores kept in
    memory, not on the scratch volume."""
    env = task_env(settings, arms, sweep_id, job="scores", legs=legs, reranker=True, scores=(scores,), part=part,
                   cache=False)
    shape, pod = _rerank_pod(settings, SCORES_CONTAINER, SCORES_COMMAND, env, reranker_key)
    annotations = {"ragsweep.io/sweep-id": sweep_id, "ragsweep.io/legs": legs, "ragsweep.io/scores": scores,
                   "ragsweep.io/arms": ",".join(a.name for a in arms)}
    # Component "arm", as a legs Job: it needs what a rerank arm's pod needs (the object store, the state)
    return _job(name, labels(settings, "arm", sweep_id), annotations, shape, pod)


def build_arm_job(settings: LauncherSettings, arm: Arm, sweep_id: str, *, reranker_key: str | None = None,
                  legs: str | None = None, scores: Sequence[str] = ()) -> k.V1Job:
    """One arm as one Job. ``reranker_key`` is the store key of the reranker archive (rerank arms); ``legs``
    the store key of its group's published legs (the arm reads them instead of fetching its own); ``scores``
    the store keys of its group's published cross-encoder scores (read into its score cache first)."""
    env = task_env(settings, arm, sweep_id, legs=legs, scores=scores)
    if arm.needs_reranker:
        if not reranker_key:
            from harness.errors import UsageError

            raise UsageError(f"arm {arm.name} runs the rerank stage: its Job needs the reranker's store key")
        shape, pod = _rerank_pod(settings, ARM_CONTAINER, ARM_COMMAND, env, reranker_key)
    else:
        shape = settings.arm
        init, volumes, mounts = _state_volumes(settings, settings.images.cpu, shape)
        container = k.V1Container(
            name=ARM_CONTAINER, image=settings.images.cpu, image_pull_policy=settings.image_pull_policy,
            command=list(ARM_COMMAND), env=env, resources=_resources(shape.resources),
            security_context=_security_context(), volume_mounts=mounts,
            termination_message_policy="FallbackToLogsOnError",
        )
        pod = _pod(settings, shape, [container], volumes, init)
    annotations = {"ragsweep.io/sweep-id": sweep_id, "ragsweep.io/family": arm.family, "ragsweep.io/arm": arm.name}
    return _job(arm_job_name(sweep_id, arm), labels(settings, "arm", sweep_id, arm), annotations,
                shape, pod)


def build_collector_job(settings: LauncherSettings, sweep_id: str, selector: str) -> k.V1Job:
    """The collector: ``python -m jobs.collect`` over the sweep's artefacts, on a CPU node."""
    env = [_env("RAGSWEEP_SWEEP_ID", sweep_id), _env("RAGSWEEP_ARMS", selector), *store_env(settings),
           *runtime_env()]
    container = k.V1Container(
        name=COLLECTOR_CONTAINER, image=settings.images.cpu, image_pull_policy=settings.image_pull_policy,
        command=list(COLLECT_COMMAND), env=env, resources=_resources(settings.collector.resources),
        security_context=_security_context(), volume_mounts=[k.V1VolumeMount(name="scratch", mount_path=SCRATCH)],
        termination_message_policy="FallbackToLogsOnError",
    )
    pod = _pod(settings, settings.collector, [container],
               [k.V1Volume(name="scratch", empty_dir=k.V1EmptyDirVolumeSource())],
               service_account=settings.collector_service_account)
    annotations = {"ragsweep.io/sweep-id": sweep_id, "ragsweep.io/arms": selector}
    return _job(collector_job_name(sweep_id), labels(settings, "collector", sweep_id), annotations,
                settings.collector, pod)


def serialize(obj: Any) -> Any:
    """The API's JSON form of a client model (camelCase keys, no nulls): what is sent and validated."""
    return k.ApiClient().sanitize_for_serialization(obj)
