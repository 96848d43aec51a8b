"""A legs group's arms as one Job (harness.sweep.k8s.groups, the chart's jobs.groupArms)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.sweep.catalogue import CATALOGUE, Arm
from harness.sweep.k8s.builders import serialize
from harness.sweep.k8s.groups import build_group_job, group_units, limit_cores
from tests.test_k8s_builders import SWEEP, env_of, settings, task_of

FUSION = CATALOGUE.family("fusion").arms
BUDGET = CATALOGUE.family("budget").arms  # rerank arms


def _pending(arms: Sequence[Arm]) -> list[tuple[Arm, str]]:
    return [(arm, f"digest-{arm.name}") for arm in arms]


def test_off_or_on_the_stack_every_arm_keeps_its_own_job() -> None:
    pending = _pending(FUSION)
    for s in (settings(backend="embedded"), settings(backend="stack", groupArms=True)):
        assert group_units(s, pending, SWEEP, "identity") == ([], pending)


def test_on_the_embedded_backend_a_shared_group_is_one_job_and_rerank_arms_keep_theirs() -> None:
    s = settings(backend="embedded", groupArms=True)
    pending = _pending([*FUSION, *BUDGET])
    units, rest = group_units(s, pending, SWEEP, "identity")
    ((name, unit),) = units
    assert unit == _pending(FUSION)
    assert [a for a, _ in rest] == list(BUDGET)  # the cross-encoder path: legs and scores Jobs, then per arm
    assert name.startswith("group-") and len(name) <= 63
    assert group_units(s, pending, SWEEP, "identity")[0][0][0] == name            # stable across reruns
    assert group_units(s, pending, "fusion-other", "identity")[0][0][0] != name   # one per sweep
    # one arm left of a group (the others complete): its own arm Job, as before
    assert group_units(s, pending[:1], SWEEP, "identity") == ([], pending[:1])


def test_the_group_job_runs_the_groups_task_forked_over_the_pods_whole_cores() -> None:
    s = settings(backend="embedded", groupArms=True)
    job = serialize(build_group_job(s, FUSION, SWEEP, "group-x-12345678"))
    assert job["metadata"]["name"] == "group-x-12345678"
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "arm"  # the arms' watcher and policy
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "jobs.arm"] and container["image"] == s.images.cpu
    task = task_of(container)
    assert task.job == "arm" and task.arms == tuple(FUSION) and task.legs is None and task.reranker is None
    assert task.processes == limit_cores(s) == 2  # the settings' arm limit: cpu "2"
    assert "RAGSWEEP_TASK" in env_of(container) and pod["restartPolicy"] == "Never"


def test_shards_split_a_shared_retrieve_group_and_leave_rerank_arms_and_the_stack_alone() -> None:
    from harness.sweep.k8s.groups import sharded_groups

    pending = _pending([*FUSION, *BUDGET])
    for s in (settings(backend="embedded", groupArms=True), settings(backend="stack", shards=3)):
        assert sharded_groups(s, pending, "identity") == ([], pending)  # shards 1 (the default), or the stack
    s = settings(backend="embedded", groupArms=True, shards=3)
    (group,), rest = sharded_groups(s, pending, "identity")
    assert group.arms == tuple(_pending(FUSION)) and group.shards == 3
    assert [a for a, _ in rest] == list(BUDGET)  # rerank arms never shard: their legs and scores Jobs
    names = [group.shard_name(SWEEP, k) for k in range(3)] + [group.merge_name(SWEEP)]
    assert len(set(names)) == 4 and all(len(n) <= 63 for n in names)
    assert [n.split("-", 1)[0] for n in names] == ["shard", "shard", "shard", "merge"]
    assert group.shard_name(SWEEP, 0) == sharded_groups(s, pending, "identity")[0][0].shard_name(SWEEP, 0)  # stable
    assert sharded_groups(s, pending, "other")[0][0].merge_name(SWEEP) != names[3]  # one per state's legs
    assert sharded_groups(s, pending[:1], "identity") == ([], pending[:1])  # one arm left: its own Job


def test_a_shard_job_answers_its_shard_and_the_merge_job_writes_the_arms() -> None:
    s = settings(backend="embedded", groupArms=True, shards=2)
    shard = serialize(build_group_job(s, FUSION, SWEEP, "shard-x-1", job="shard", shard=(1, 2)))
    merge = serialize(build_group_job(s, FUSION, SWEEP, "merge-x", job="merge", shards=2))
    (sc,) = shard["spec"]["template"]["spec"]["containers"]
    (mc,) = merge["spec"]["template"]["spec"]["containers"]
    assert (sc["name"], sc["command"]) == ("shard", ["python", "-m", "jobs.shard"])  # the shard watcher's container
    assert (mc["name"], mc["command"]) == ("arm", ["python", "-m", "jobs.merge"])    # judged as the arms' Job
    st, mt = task_of(sc), task_of(mc)
    assert (st.job, st.shard, st.processes, st.arms) == ("shard", (1, 2), 1, tuple(FUSION))
    assert (mt.job, mt.shards, mt.shard, mt.arms) == ("merge", 2, None, tuple(FUSION))
    for job in (shard, merge):
        assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "arm"
