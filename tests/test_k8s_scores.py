"""Shared cross-encoder scores on Kubernetes: the scores Jobs the launcher plans and builds, the rerank arm
Jobs told where the scores are, and what a failed scores Job does to its group (no cluster: the Job
builders are pure, and the launcher's flow runs over stand-ins for the API calls, named as such).
tests/test_sweep_scores.py runs jobs.scores and jobs.arm --scores themselves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")

from harness.objectstore import LocalFolderStore
from harness.sweep.catalogue import CATALOGUE, Arm
from harness.sweep.k8s.builders import build_arm_job, build_scores_job, scores_job_name, serialize
from harness.sweep.k8s.plan import plan_legs, plan_scores
from harness.sweep.task import Task
from tests.test_k8s_builders import DIGEST, RERANKER, SWEEP, S, credential_findings, env_of

ALL = list(CATALOGUE.arms)
RERANK = [a for a in ALL if a.needs_reranker]


def _plans(store: LocalFolderStore, arms: list[Arm], width: int = 4) -> tuple[Any, Any]:
    legs = plan_legs(store, SWEEP, arms, "embedded", "state-identity")
    return legs, plan_scores(store, SWEEP, arms, "embedded", legs.legs_of, RERANKER, width)


def test_a_group_of_rerank_arms_gets_one_scores_job_per_part_and_a_published_part_none(tmp_path: Path) -> None:
    store = LocalFolderStore(tmp_path)
    legs, plan = _plans(store, ALL)
    # the whole catalogue: the fifteen rerank arms are in the header group, window 384 (embed-body fuses
    # other vectors and reranks nothing); four parts, the launcher's parallelism
    assert len(RERANK) == 15 and len(plan.jobs) == 4
    assert all(job.arms == tuple(RERANK) for job in plan.jobs)
    assert [job.part for job in plan.jobs] == [(k, 4) for k in range(4)]
    assert {job.legs for job in plan.jobs} == {legs.legs_of[RERANK[0].name]}
    keys = [job.key for job in plan.jobs]
    assert set(plan.scores_of) == {a.name for a in RERANK} and all(v == keys for v in plan.scores_of.values())
    assert keys[0].startswith(f"sweeps/{SWEEP}/scores/") and keys[0].endswith("/part-1-of-4.json")
    assert len({job.name for job in plan.jobs}) == 4 and all(j.name.startswith("scores-") for j in plan.jobs)
    # never more parts than rerank arms; one part with parallelism 1
    assert len(_plans(store, ALL, width=64)[1].jobs) == 15 and len(_plans(store, ALL, width=1)[1].jobs) == 1
    store.put_text(keys[1], "{}")  # a part already published (a rerun): only the others are scored
    assert [job.key for job in _plans(store, ALL)[1].jobs] == [keys[0], *keys[2:]]
    # another reranker: other parts, all of them to score
    other = plan_scores(store, SWEEP, ALL, "embedded", legs.legs_of, "rerankers/ffffffffffffffff/reranker.tar.gz", 4)
    assert len(other.jobs) == 4 and not set(other.scores_of[RERANK[0].name]) & set(keys)
    # a single rerank arm shares nothing: it scores its own pairs; nor does the stack (no shared legs)
    pool = CATALOGUE.family("pool")
    assert _plans(store, [pool.arm("pool-12"), CATALOGUE.family("fusion").arm("rrf-60")])[1].jobs == []
    assert plan_scores(store, SWEEP, ALL, "stack", {}, RERANKER, 4).jobs == []


def test_a_scores_job_runs_jobs_scores_on_a_gpu_node_and_the_rerank_arms_are_told_where() -> None:
    arms = CATALOGUE.family("budget").arms[:3]
    legs = f"sweeps/{SWEEP}/legs/0123456789abcdef/legs.json"
    key = f"sweeps/{SWEEP}/scores/fedcba9876543210/part-2-of-3.json"
    name = scores_job_name(SWEEP, "fedcba9876543210", (1, 3))
    job = serialize(build_scores_job(S, arms, SWEEP, name, legs=legs, scores=key, part=(1, 3), reranker_key=RERANKER))
    assert job["metadata"]["name"] == name and name.startswith("scores-")
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["name"] == "scores" and container["command"] == ["python", "-m", "jobs.scores"]
    assert container["image"] == f"registry.example.com/ragsweep/ragsweep-gpu@{DIGEST}"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"} and pod["tolerations"]
    assert [c["name"] for c in pod["initContainers"]] == ["fetch-state", "fetch-reranker"]
    env = {n: e.get("value") for n, e in env_of(container).items()}
    task = Task.from_json(env["RAGSWEEP_TASK"])
    assert task.job == "scores" and task.arms == tuple(arms)
    assert task.legs == legs and task.scores == (key,) and task.part == (1, 3)
    # the arm Jobs' scorer: torch on the GPU it asks for; its scores kept in memory (nothing outlives the pod)
    assert task.rerank_device == "cuda" and task.rerank_cache is None
    assert task.reranker == Path(S.reranker_path)
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "arm"  # the store, as an arm reaches it
    assert job["metadata"]["annotations"]["ragsweep.io/scores"] == key
    assert job["spec"]["backoffLimit"] == S.gpu.policy.backoff_limit and credential_findings(job) == []
    assert {n for n in env if n.startswith("RAGSWEEP_") and n not in S.extra_env} == {"RAGSWEEP_TASK"}

    keys = [key.replace("2-of-3", f"{k}-of-3") for k in (1, 2, 3)]
    (arm,) = serialize(build_arm_job(S, arms[0], SWEEP, reranker_key=RERANKER, legs=legs, scores=keys)
                       )["spec"]["template"]["spec"]["containers"]
    told = Task.from_json(env_of(arm)["RAGSWEEP_TASK"]["value"])
    assert told.scores == tuple(keys) and str(told.rerank_cache).startswith("/tmp/")
    (alone,) = serialize(build_arm_job(S, arms[0], SWEEP, reranker_key=RERANKER))["spec"]["template"]["spec"][
        "containers"]
    assert Task.from_json(env_of(alone)["RAGSWEEP_TASK"]["value"]).scores == ()


class _Batch:
    """A stand-in for the Job API: remembers what was created (not a server)."""

    def __init__(self) -> None:
        self.created: list[Any] = []


def test_a_failed_scores_job_fails_its_groups_rerank_arms_once_naming_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two of four parts fail: each rerank arm of the group is failed once, with a failed.json naming the first
    failed Job; the fusion arms of the group and everything else stay pending; a part whose Job succeeded but
    wrote nothing is a failure too."""
    from harness.sweep import storage
    from harness.sweep.executor import SweepReport
    from harness.sweep.k8s import executor as k8s
    from harness.sweep.k8s.watch import JobResult

    batch = _Batch()
    monkeypatch.setattr(k8s, "create_job", lambda api, namespace, job, policy: api.created.append(job) or "created")

    class Watcher:
        """A stand-in for JobWatcher: the first part's Job failed, the second wrote nothing, the rest published."""

        def __init__(self, *args: Any, container: str, **kwargs: Any) -> None:
            assert container == "scores"

        def wait(self, names: list[str]) -> list[JobResult]:
            results = []
            for job in batch.created:
                name, key = job.metadata.name, job.metadata.annotations["ragsweep.io/scores"]
                if name not in names:
                    continue
                if key.endswith("part-1-of-4.json"):
                    results.append(JobResult(name, False, "BackoffLimitExceeded", "", 2, 1))
                    continue
                if not key.endswith("part-2-of-4.json"):
                    store.put_text(key, "{}")
                results.append(JobResult(name, True))
            return results

    monkeypatch.setattr(k8s, "JobWatcher", Watcher)
    store = LocalFolderStore(tmp_path)
    embedded = S.model_copy(update={"backend": "embedded"})  # shared legs, and so shared scores
    executor = k8s.K8sExecutor(embedded, "ns", batch, None, store, tmp_path, quiet=True)
    pending = [(arm, f"{n:064x}") for n, arm in enumerate(ALL)]
    legs = plan_legs(store, SWEEP, ALL, "embedded", "state-identity")
    report = SweepReport(sweep_id=SWEEP)
    scores_of = executor._scores(SWEEP, pending, report, legs.legs_of, RERANKER, 4)
    assert len(batch.created) == 4 and set(scores_of) == {a.name for a in RERANK}
    assert sorted(o.arm.name for o in report.outcomes) == sorted(a.name for a in RERANK)  # each once
    assert {o.status for o in report.outcomes} == {"failed"}
    first = report.outcomes[0].message
    assert first.startswith("not run: its group's scores job scores-") and "BackoffLimitExceeded" in first
    assert [a for a, _ in pending] == [a for a in ALL if not a.needs_reranker]
    failure = storage.read_failure(store, SWEEP, RERANK[0])
    assert failure is not None and failure["error"] == first
    # no reranker to push (no rerank arm pending): no scores Job at all
    assert executor._scores(SWEEP, list(pending), SweepReport(sweep_id=SWEEP), legs.legs_of, None, 4) == {}
