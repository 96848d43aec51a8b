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

With ``shards`` W >= 2 (``jobs.shards``) such a group of retrieve and diversify arms has its judged queries
split as the local ``--shard-queries`` splits them (harness.sweep.shards): W shard Jobs (``jobs.shard``,
query i is shard i mod W's), each encoding its own queries, fetching the group's legs for them and
publishing every arm's per-query outcomes, then one merge Job (``jobs.merge``) that writes each arm's
files from them, the unsharded run's bytes. The shard Jobs run at once, on whichever nodes have room: on
a cluster of several nodes the legs (the kNN plane streamed per query, memory-bound) are spread over
their memory buses, which no process on one node can do. A shard Job that fails fails its group's arms,
naming it, and no merge runs for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
from harness.sweep.task import Job

SHARD_CONTAINER = "shard"
SHARD_COMMAND = ("python", "-m", "jobs.shard")
MERGE_COMMAND = ("python", "-m", "jobs.merge")


@dataclass(frozen=True)
class ShardedGroup:
    """A legs group whose queries are split over ``shards`` shard Jobs, then merged by one merge Job."""

    gid: str  # group_id(identity, key): the Jobs' names are made from it
    arms: tuple[tuple[Arm, str], ...]  # (arm, config hash), the group's pending arms
    shards: int

    def shard_name(self, sweep_id: str, k: int) -> str:
        return job_name("shard", sweep_id, f"{self.gid}-{k + 1}-of-{self.shards}")

    def merge_name(self, sweep_id: str) -> str:
        return job_name("merge", sweep_id, self.gid)


def sharded_groups(settings: LauncherSettings, pending: Sequence[tuple[Arm, str]],
                   identity: str) -> tuple[list[ShardedGroup], list[tuple[Arm, str]]]:
    """(the groups whose queries are sharded (``shards`` >= 2, the embedded backend: every legs group of two
    or more pending retrieve or diversify arms), the pending arms left to the other paths)."""
    from harness.bench.stages import STAGES

    if settings.shards < 2 or settings.backend != "embedded":
        return [], list(pending)
    digests = {arm.name: digest for arm, digest in pending}
    found: list[ShardedGroup] = []
    for group in group_arms([a for a, _ in pending if not a.needs_reranker], settings.backend):
        if not group.shared or group.key is None or len(group.arms) < 2:
            continue
        if all(STAGES[arm.arm_config.stage].fork_safe for arm in group.arms):
            found.append(ShardedGroup(group_id(identity, group.key),
                                      tuple((arm, digests[arm.name]) for arm in group.arms), settings.shards))
    taken = {arm.name for g in found for arm, _ in g.arms}
    return found, [(a, d) for a, d in pending if a.name not in taken]


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


def build_group_job(settings: LauncherSettings, arms: Sequence[Arm], sweep_id: str, name: str, *,
                    job: Job = "arm", shard: tuple[int, int] | None = None, shards: int | None = None) -> k.V1Job:
    """The group's arms as one Job named ``name``, on a CPU node: ``jobs.arm`` over them all (forked over the
    pod's whole cores), or a sharded group's shard (``job`` "shard", ``shard`` (k, W)) or merge (``job``
    "merge", ``shards`` W)."""
    shape = settings.arm
    init, volumes, mounts = _state_volumes(settings, settings.images.cpu, shape)
    command = {"arm": ARM_COMMAND, "shard": SHARD_COMMAND, "merge": MERGE_COMMAND}[job]
    container = k.V1Container(
        name=SHARD_CONTAINER if job == "shard" else ARM_CONTAINER, image=settings.images.cpu,
        image_pull_policy=settings.image_pull_policy, command=list(command),
        resources=_resources(shape.resources), security_context=_security_context(),
        env=task_env(settings, arms, sweep_id, job=job, reranker=False, shard=shard, shards=shards,
                     processes=limit_cores(settings) if job == "arm" else 1),
        volume_mounts=mounts, termination_message_policy="FallbackToLogsOnError",
    )
    pod = _pod(settings, shape, [container], volumes, init)
    annotations = {"ragsweep.io/sweep-id": sweep_id, "ragsweep.io/family": arms[0].family,
                   "ragsweep.io/arms": ",".join(a.name for a in arms)}
    return _job(name, labels(settings, "arm", sweep_id), annotations, shape, pod)
