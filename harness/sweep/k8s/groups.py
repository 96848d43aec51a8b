"""A legs group's arms as one Job (``jobs.groupArms``; on in the single-node values).

On the embedded backend the arms of a group share their legs (harness.sweep.legs). By default the
launcher runs a legs Job that publishes them, then one Job per arm that reads them: every Job starts a
pod, downloads and unpacks the state and loads it. On the single node that cost dominates: the ten
fusion arm Jobs over the two-corpus state took 252.5 s where one local process took 82.3 s (each Job
about 33 s, of which the arm's own work was about 5.5 s). With ``group_arms`` a group of two or more
pending arms without a rerank stage is one Job running the group's task as the local executor does
(``jobs.arm`` over every arm of the group: the legs fetched once in-process, then the arms forked over
the pod's whole CPU cores, ``Task.processes``), so the pod, the state and the legs are paid once. Its
arms are judged one by one when it ends, as an arm Job's arm is; one that failed fails only itself if
its pod said so (its own failed.json), else the Job's failure is each arm's.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubernetes import client as k

from harness.sweep.catalogue import Arm
from harness.sweep.k8s.builders import (
    ARM_COMMAND,
    ARM_CONTAINER,
    _job,
    _pod,
    _resources,
    _security_context,
    _state_volumes,
    job_name,
    labels,
    task_env,
)
from harness.sweep.k8s.settings import LauncherSettings, whole_cores
from harness.sweep.legs import group_arms, group_id


def group_units(settings: LauncherSettings, pending: Sequence[tuple[Arm, str]], sweep_id: str,
                identity: str) -> tuple[list[tuple[str, list[tuple[Arm, str]]]], list[tuple[Arm, str]]]:
    """(the group Jobs: (job name, its pending (arm, digest)s)), and the pending arms left to the per-arm
    path (rerank arms, arms alone in their group, every arm when ``group_arms`` is off or the backend is
    not embedded)."""
    if not settings.group_arms or settings.backend != "embedded":
        return [], list(pending)
    digests = {arm.name: digest for arm, digest in pending}
    units: list[tuple[str, list[tuple[Arm, str]]]] = []
    grouped: set[str] = set()
    for group in group_arms([a for a, _ in pending if not a.needs_reranker], settings.backend):
        if not group.shared or group.key is None or len(group.arms) < 2:
            continue
        name = job_name("group", sweep_id, group_id(identity, group.key))
        units.append((name, [(arm, digests[arm.name]) for arm in group.arms]))
        grouped.update(arm.name for arm in group.arms)
    return units, [(a, d) for a, d in pending if a.name not in grouped]


def limit_cores(settings: LauncherSettings) -> int:
    """The arm pod's whole CPU cores at its limit (else its request), at least 1: the group's processes."""
    return whole_cores(settings.arm.resources, at_limit=True) or 1


def build_group_job(settings: LauncherSettings, arms: Sequence[Arm], sweep_id: str, name: str) -> k.V1Job:
    """The group's arms as one Job named ``name``: ``jobs.arm`` over them all, on a CPU node."""
    shape = settings.arm
    init, volumes, mounts = _state_volumes(settings, settings.images.cpu, shape)
    container = k.V1Container(
        name=ARM_CONTAINER, image=settings.images.cpu, image_pull_policy=settings.image_pull_policy,
        command=list(ARM_COMMAND), resources=_resources(shape.resources), security_context=_security_context(),
        env=task_env(settings, arms, sweep_id, reranker=False, processes=limit_cores(settings)),
        volume_mounts=mounts, termination_message_policy="FallbackToLogsOnError",
    )
    pod = _pod(settings, shape, [container], volumes, init)
    annotations = {"ragsweep.io/sweep-id": sweep_id, "ragsweep.io/family": arms[0].family,
                   "ragsweep.io/arms": ",".join(a.name for a in arms)}
    return _job(name, labels(settings, "arm", sweep_id), annotations, shape, pod)
