"""``K8sExecutor``: the sweep's arms as Jobs in a release's namespace, then a collector Job.

The flow of ``run(arms, sweep_id)``:

1. every arm whose artefact set is complete for ``config_hash(arm, measurement_identity)``
   is skipped (the identity comes from the cluster state's ``state.json``, the same bytes the
   arm pods unpack, so the pods and the launcher agree on every hash);
2. the reranker (when a rerank arm is pending) is pushed to the store once per weights hash;
3. on the embedded backend, each group of two or more pending arms that share legs
   (harness.sweep.legs) gets one legs Job (``jobs.legs``) unless its legs.json is already in the
   store; the group's arm Jobs are submitted once it succeeded and read the legs from there
   (their task's ``legs``). A legs Job that fails fails its group's arms, naming it: no arm fetches
   shared legs itself behind the launcher's back (docs/kubernetes.md, "Shared legs"). Then a group
   with two or more pending rerank arms gets scores Jobs (``jobs.scores``, one part of its queries
   each, at most ``parallelism``) unless their parts are published; its rerank arm Jobs read them
   (their task's ``scores``). A scores Job that fails fails the group's rerank arms, naming it
   (docs/kubernetes.md, "Shared cross-encoder scores"). ``jobs.groupArms``/``jobs.shards``: harness.sweep.k8s.groups;
4. arm Jobs are built (``builders``), submitted (``submit``) at most ``parallelism`` at a time, and
   waited for on one watch with an overall deadline (``watch``);
5. a Job that failed, or that completed without a complete artefact set, becomes a failed
   outcome with the failing condition, the retries and the pod's last log line; when the pod
   did not leave its own ``failed.json`` (it was killed, evicted or timed out), the launcher
   writes one, so the collector names the arm and says why.

``collect`` then runs ``jobs.collect`` as a Job, whose comparison.md/json land in the store
beside the arms. ``run_from_args`` is what ``ragsweep sweep run --executor k8s`` calls, with
where the release is (``Release``) from the CLI's settings (``RAGSWEEP_K8S_*``).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import EXIT_PARTIAL, UsageError
from harness.objectstore import StorageError
from harness.state.contents import claim_only
from harness.sweep.catalogue import Arm, config_hash
from harness.sweep.executor import (
    ArmOutcome,
    SweepReport,
    default_sweep_id,
    legs_identity,
    measurement_identity,
    state_identity,
)
from harness.sweep.k8s.groups import ShardedGroup, build_group_job, group_units, sharded_groups
from harness.sweep.k8s.plan import plan_legs, plan_scores
from harness.sweep.k8s.settings import SETTINGS_KEY, LauncherSettings, parse_settings, rerank_scorer
from harness.sweep.k8s.submit import RetryPolicy, call_api, create_job, delete_job
from harness.sweep.k8s.watch import STUCK_REASONS, JobResult, JobWatcher, WatchTimeout
from harness.sweep.measured import check_sweep_measures
from harness.sweep.storage import ArtefactStore, incomplete_reason, is_complete, publish_failure, read_failure

DEFAULT_TIMEOUT_S = 6 * 3600.0


def state_json_key(settings: LauncherSettings) -> str:
    folder = settings.state_key.rsplit("/", 1)[0] if "/" in settings.state_key else ""
    return f"{folder}/state.json" if folder else "state.json"


def reranker_key(reranker: Path) -> str:
    from harness.retrieval.rerank import reranker_provenance

    return f"rerankers/{reranker_provenance(reranker)['weights_sha256'][:16]}/reranker.tar.gz"


@dataclass
class _Running:
    arm: Arm
    digest: str
    started: float


@dataclass
class K8sExecutor:
    settings: LauncherSettings
    namespace: str
    batch: Any
    core: Any
    store: ArtefactStore
    state: Path
    reranker: Path | None = None
    parallelism: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    quiet: bool = False

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def _reranker_key(self, pending: Sequence[Arm]) -> str | None:
        if not any(a.needs_reranker for a in pending):
            return None
        if self.reranker is None:
            names = ", ".join(a.name for a in pending if a.needs_reranker)
            raise UsageError(f"arms {names} run the rerank stage and need --reranker DIR "
                             "(train one with `ragsweep reranker train --out DIR`)")
        from harness.sweep.k8s.sync import push

        key = reranker_key(self.reranker)
        if not self.store.exists(f"{key}.sha256"):
            self._say(f"pushing reranker {self.reranker} to {self.store.describe()}/{key}")
            push(self.store, self.reranker, key)
        return key

    def _outcome(self, sweep_id: str, run: _Running, result: JobResult) -> ArmOutcome:
        try:
            return self._judge(sweep_id, run, result)
        except StorageError as e:
            # The store is out longer than its retries (its pod was deleted, or the launcher's
            # port-forward broke): the arm is not counted as published, nothing is written
            # in its name, and a rerun of the sweep finds it complete or runs it again.
            return ArmOutcome(run.arm, "failed", time.monotonic() - run.started,
                              f"the object store could not be read to check job {result.name}: {e}; "
                              "rerun the sweep (complete arms are skipped)")

    def _judge(self, sweep_id: str, run: _Running, result: JobResult) -> ArmOutcome:
        seconds = time.monotonic() - run.started
        if result.succeeded:
            reason = incomplete_reason(self.store, sweep_id, run.arm, run.digest)
            if reason is None:
                return ArmOutcome(run.arm, "published", seconds)
            message = f"job {result.name} complete but its artefacts are not: {reason}"
            publish_failure(self.store, sweep_id, run.arm, run.digest, message)
            return ArmOutcome(run.arm, "failed", seconds, message)
        message = result.describe()
        if result.reason == "Unschedulable" or result.reason in STUCK_REASONS:
            # No node can ever run it (e.g. a GPU arm on a GPU-less cluster), or its image cannot
            # be pulled: named at once, its Job deleted, not waited on until the deadline.
            delete_job(self.batch, self.namespace, result.name, self.policy)
            message = f"not run: {message}"
            publish_failure(self.store, sweep_id, run.arm, run.digest, message)
            return ArmOutcome(run.arm, "failed", seconds, message)
        own = read_failure(self.store, sweep_id, run.arm)
        if own is not None and own.get("config_hash") == run.digest and own.get("error"):
            # The pod said why in its own words (a HarnessError); keep that, add the Job's view.
            return ArmOutcome(run.arm, "failed", seconds, f"{own['error']} [{message}]")
        publish_failure(self.store, sweep_id, run.arm, run.digest, message)
        return ArmOutcome(run.arm, "failed", seconds, message)

    def _legs(self, sweep_id: str, pending: list[tuple[Arm, str]], report: SweepReport,
              arms: Sequence[Arm] = ()) -> dict[str, str]:
        """Run the legs Jobs the pending arms need and wait for them all; the arms of a group whose legs
        could not be published are failed (removed from ``pending``). Returns arm name -> legs key."""
        from harness.sweep.k8s.builders import build_legs_job

        plan = plan_legs(self.store, sweep_id, [a for a, _ in pending], self.settings.backend,
                         legs_identity(self.state, self.settings.backend), arms)
        self._before(sweep_id, pending, report, "legs", [
            (name, build_legs_job(self.settings, group.arms, sweep_id, name, key), group.arms, key)
            for name, group, key in plan.jobs])
        return plan.legs_of

    def _scores(self, sweep_id: str, pending: list[tuple[Arm, str]], report: SweepReport, legs_of: dict[str, str],
                reranker_key: str | None, width: int) -> dict[str, list[str]]:
        """Run the scores Jobs the pending rerank arms of shared groups need and wait for them all; the
        rerank arms of a group a part of whose scores could not be published are failed. Returns arm name
        -> the store keys of its group's published scores."""
        from harness.sweep.k8s.builders import build_scores_job

        if reranker_key is None:
            return {}
        plan = plan_scores(self.store, sweep_id, [a for a, _ in pending], self.settings.backend, legs_of,
                           reranker_key, width)
        self._before(sweep_id, pending, report, "scores", [
            (job.name, build_scores_job(self.settings, job.arms, sweep_id, job.name, legs=job.legs, scores=job.key,
                                        part=job.part, reranker_key=reranker_key), job.arms, job.key)
            for job in plan.jobs])
        return plan.scores_of

    def _shards(self, sweep_id: str, sharded: list[ShardedGroup],
                report: SweepReport) -> list[tuple[str, list[tuple[Arm, str]], str]]:
        """Run every sharded group's shard Jobs and wait for them all; returns the merge units (job name, the
        group's arms, "merge") of the groups whose shards all published (the others' arms are failed)."""
        from harness.sweep.shards import shard_key

        pending = [pair for group in sharded for pair in group.arms]
        self._before(sweep_id, pending, report, "shard", [
            (group.shard_name(sweep_id, k),
             build_group_job(self.settings, [a for a, _ in group.arms], sweep_id, group.shard_name(sweep_id, k),
                             job="shard", shard=(k, group.shards)),
             tuple(a for a, _ in group.arms), shard_key(sweep_id, group.arms[-1][0], (k, group.shards)))
            for group in sharded for k in range(group.shards)])
        alive = {arm.name for arm, _ in pending}
        return [(group.merge_name(sweep_id), list(group.arms), "merge")
                for group in sharded if all(arm.name in alive for arm, _ in group.arms)]

    def _before(self, sweep_id: str, pending: list[tuple[Arm, str]], report: SweepReport, what: str,
                jobs: list[tuple[str, Any, tuple[Arm, ...], str]]) -> None:
        """Submit ``jobs`` ((name, Job, the arms it serves, the store key it must write)), the ``what`` Jobs
        that publish what arms share, and wait for them all; the arms a Job that failed, or wrote no key,
        served are failed naming it (and removed from ``pending``)."""
        from harness.sweep.k8s.builders import sweep_selector

        if not jobs:
            return
        started = time.monotonic()
        for name, job, arms, _ in jobs:
            self._say(f"  {create_job(self.batch, self.namespace, job, self.policy)} {what} job {name} for "
                      f"{len(arms)} arms ({', '.join(a.name for a in arms)})")
        watcher = JobWatcher(self.batch, self.core, self.namespace, sweep_selector(sweep_id, "arm"),
                             self.timeout_s, container=what, policy=self.policy)
        waiting = {name: (arms, key) for name, _, arms, key in jobs}

        def fail(arms: tuple[Arm, ...], message: str) -> None:
            for arm, digest in [(a, d) for a, d in pending if a in arms]:  # once, though two parts failed
                publish_failure(self.store, sweep_id, arm, digest, message)
                report.outcomes.append(ArmOutcome(arm, "failed", time.monotonic() - started, message))
            pending[:] = [(a, d) for a, d in pending if a not in arms]

        try:
            while waiting:
                for result in watcher.wait(list(waiting)):
                    arms, key = waiting.pop(result.name)
                    if result.succeeded and self.store.exists(key):
                        self._say(f"  {what} job {result.name} ok ({time.monotonic() - started:.0f}s)")
                        continue
                    why = result.describe() if not result.succeeded else f"it wrote no {key}"
                    fail(arms, f"not run: its group's {what} job {result.name} failed: {why}")
        except WatchTimeout as e:
            for name, (arms, _) in waiting.items():
                fail(arms, f"not run: its group's {what} job {name} did not finish before the sweep's deadline: {e}")

    def run(self, arms: Sequence[Arm], sweep_id: str) -> SweepReport:
        from harness.sweep.k8s.builders import arm_job_name, build_arm_job, sweep_selector

        started = time.monotonic()
        report = SweepReport(sweep_id=sweep_id)
        pending: list[tuple[Arm, str]] = []
        for arm in arms:
            digest = config_hash(arm, measurement_identity(self.state, arm, self.reranker, self.settings.backend,
                                                           rerank_scorer(self.settings)))
            if is_complete(self.store, sweep_id, arm, digest):
                report.outcomes.append(ArmOutcome(arm, "skipped", message="complete for this config"))
            else:
                pending.append((arm, digest))
        key = self._reranker_key([a for a, _ in pending])
        identity = legs_identity(self.state, self.settings.backend)
        sharded, pending = sharded_groups(self.settings, pending, identity)
        groups, pending = group_units(self.settings, pending, sweep_id, identity)
        merges = self._shards(sweep_id, sharded, report)
        legs_of = self._legs(sweep_id, pending, report, arms)
        width = max(1, self.parallelism or self.settings.parallelism)
        scores_of = self._scores(sweep_id, pending, report, legs_of, key, width)
        queue = [*merges, *[(name, unit, "arm") for name, unit in groups],
                 *[(arm_job_name(sweep_id, a), [(a, d)], "arm") for a, d in pending]]
        total = sum(len(unit) for _, unit, _ in queue)
        self._say(f"sweep {sweep_id}: {len(arms)} arms, {len(arms) - total - len(report.failed)} already complete, "
                  f"{total} to run as {len(queue)} Jobs in {self.namespace}, at most {width} at once")
        watcher = JobWatcher(self.batch, self.core, self.namespace, sweep_selector(sweep_id, "arm"),
                             self.timeout_s, container="arm", policy=self.policy)
        running: dict[str, list[_Running]] = {}
        done = 0
        try:
            while queue or running:
                while queue and len(running) < width:
                    name, unit, kind = queue.pop(0)
                    arm = unit[0][0]
                    job = (build_group_job(self.settings, [a for a, _ in unit], sweep_id, name, job="merge",
                                           shards=self.settings.shards) if kind == "merge" else
                           build_group_job(self.settings, [a for a, _ in unit], sweep_id, name) if len(unit) > 1 else
                           build_arm_job(self.settings, arm, sweep_id, reranker_key=key if arm.needs_reranker else None,
                                         legs=legs_of.get(arm.name), scores=scores_of.get(arm.name, ())))
                    how = create_job(self.batch, self.namespace, job, self.policy)
                    running[name] = [_Running(a, d, time.monotonic()) for a, d in unit]
                    self._say(f"  {how} job {name} for {', '.join(a.name for a, _ in unit)}"
                              f"{' (GPU)' if arm.needs_reranker and self.settings.gpu.enabled else ''}")
                for result in watcher.wait(list(running)):
                    for run in running.pop(result.name):
                        outcome = self._outcome(sweep_id, run, result)
                        report.outcomes.append(outcome)
                        done += 1
                        status = "ok" if outcome.status == "published" else f"FAILED: {outcome.message}"
                        self._say(f"  [{done}/{total}] {outcome.arm.name} {status} ({outcome.seconds:.0f}s)")
        except WatchTimeout as e:
            for name, runs in running.items():
                for run in runs:
                    message = f"job {name} did not finish before the sweep's deadline: {e}"
                    publish_failure(self.store, sweep_id, run.arm, run.digest, message)
                    report.outcomes.append(ArmOutcome(run.arm, "failed", time.monotonic() - run.started, message))
            late = "not submitted: the sweep's deadline passed first"
            for _, unit, _ in queue:
                for arm, digest in unit:
                    publish_failure(self.store, sweep_id, arm, digest, late)
                    report.outcomes.append(ArmOutcome(arm, "failed", 0.0, late))
        report.wall_seconds = time.monotonic() - started
        return report

    def collect(self, sweep_id: str, selector: str, timeout_s: float = 1800.0) -> JobResult:
        """Run the collector Job and wait for it; comparison.md/json land in the store."""
        from harness.sweep.k8s.builders import build_collector_job, collector_job_name, sweep_selector

        job = build_collector_job(self.settings, sweep_id, selector)
        name = collector_job_name(sweep_id)
        create_job(self.batch, self.namespace, job, self.policy)
        self._say(f"collector job {name} submitted")
        watcher = JobWatcher(self.batch, self.core, self.namespace, sweep_selector(sweep_id, "collector"), timeout_s,
                             container="collector", policy=self.policy)
        return watcher.wait([name])[0]


# --- the CLI's entry ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Release:
    """Where the launcher finds the chart release and how long it waits: the CLI fills it from its
    settings (RAGSWEEP_K8S_NAMESPACE, _LAUNCHER_CONFIG, _S3_ENDPOINT, _CONTEXT, _TIMEOUT)."""

    namespace: str | None = None
    launcher_config: str = "ragsweep-launcher"  # the ConfigMap with the launcher settings
    s3_endpoint: str | None = None  # the store as the launcher reaches it (a port-forward), if not the release's
    context: str | None = None  # the kubeconfig context; None: the current one
    timeout_s: float = DEFAULT_TIMEOUT_S
    in_cluster: bool = False  # the launcher runs in a pod (KUBERNETES_SERVICE_HOST): its service account


def kube_clients(context: str | None = None, *, in_cluster: bool = False) -> tuple[Any, Any]:
    """BatchV1Api and CoreV1Api from the in-cluster service account or the kubeconfig."""
    from kubernetes import client, config

    if in_cluster:
        config.load_incluster_config()
    else:
        config.load_kube_config(context=context or None)
    return client.BatchV1Api(), client.CoreV1Api()


def read_settings(core: Any, namespace: str, name: str, policy: RetryPolicy | None = None) -> LauncherSettings:
    configmap = call_api(lambda: core.read_namespaced_config_map(name, namespace), f"read configmap {namespace}/{name}",
                         policy or RetryPolicy())
    data = configmap.data or {}
    if SETTINGS_KEY not in data:
        raise UsageError(f"configmap {namespace}/{name} has no {SETTINGS_KEY}; is the ragsweep chart installed "
                         "there? (helm -n NAMESPACE list)")
    return parse_settings(data[SETTINGS_KEY], f"configmap {namespace}/{name}")


def run_from_args(args: Any, release: Release, store: ArtefactStore | None = None) -> int:
    """``ragsweep sweep run --executor k8s``: the release is ``release.namespace`` and ``release.launcher_config``;
    the store is reached at ``release.s3_endpoint`` (a port-forward) when the launcher runs outside the cluster,
    or is ``store`` (harness.sweep.k8s.launch: the release's own, with its Secret's credentials)."""
    from harness.sweep.catalogue import select_arms
    from harness.sweep.executor import catalogue_for, open_store, publish_catalogue

    namespace = release.namespace
    if not namespace:
        raise UsageError("--executor k8s needs RAGSWEEP_K8S_NAMESPACE (the namespace of the chart release; "
                         "`make sweep-k8s` sets it)")
    batch, core = kube_clients(release.context, in_cluster=release.in_cluster)
    settings = read_settings(core, namespace, release.launcher_config)
    if getattr(args, "backend", None) not in (None, settings.backend):
        raise UsageError(f"--backend {args.backend}: the release's arms measure {settings.backend} (its launcher "
                         "settings); drop --backend, or run --executor local")
    if store is None:
        store = open_store(settings.store, release.s3_endpoint or args.s3_endpoint or settings.s3_endpoint)
    with tempfile.TemporaryDirectory(prefix="ragsweep-k8s-state-") as tmp:
        state = Path(tmp)
        (state / "state.json").write_bytes(store.get_bytes(state_json_key(settings)))
        claim_only(state)  # the files are in the cluster: each Job verifies the state it opens
        identity = state_identity(state, settings.backend)
        local = Path(args.state) if args.state is not None else None
        mine = state_identity(local, settings.backend) if local and (local / "state.json").is_file() else identity
        if mine != identity:
            print(f"note: the cluster's state ({identity[:12]}) is not --state ({mine[:12]}): "
                  "arms are measured on the state the release's injector built", file=sys.stderr)
        catalogue = catalogue_for(args.manifest)
        arms = select_arms(catalogue, args.arms)
        sweep_id = str(args.sweep_id) if args.sweep_id else default_sweep_id(args.arms, identity, settings.backend)
        check_sweep_measures(store, sweep_id, state)  # one sweep id, one measurement (exit 5, nothing run)
        executor = K8sExecutor(settings, namespace, batch, core, store, state, reranker=args.reranker,
                               parallelism=args.workers, timeout_s=release.timeout_s)
        publish_catalogue(store, sweep_id, catalogue)  # the collector Job reads the families from here
        report = executor.run(arms, sweep_id)
    collected = executor.collect(sweep_id, args.arms)
    ran = [o for o in report.outcomes if o.status == "published"]
    print(f"sweep {sweep_id}: {len(ran)} run, {sum(o.status == 'skipped' for o in report.outcomes)} skipped, "
          f"{len(report.failed)} failed; wall {report.wall_seconds:.1f}s in namespace {namespace}")
    for outcome in report.failed:
        print(f"  failed: {outcome.arm.name}: {outcome.message}", file=sys.stderr)
    if not collected.succeeded:
        print(f"collector: {collected.describe()}", file=sys.stderr)
        return EXIT_PARTIAL
    key = f"sweeps/{sweep_id}/comparison.md"
    if not str(args.out).startswith("s3://"):
        local = Path(args.out) / key
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(store.get_bytes(key))
        local.with_name("comparison.json").write_bytes(store.get_bytes(f"sweeps/{sweep_id}/comparison.json"))
        print(f"comparison: {local} (from {store.describe()}/{key})")
    else:
        print(f"comparison: {store.describe()}/{key}")
    return EXIT_PARTIAL if report.failed else 0
