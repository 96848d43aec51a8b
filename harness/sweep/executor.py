"""Executors: run a sweep's arms in parallel and collect them.

``local``: a pool of ``jobs.arm`` subprocesses (``--workers``, default the core count)
over one shared, read-only corpus state — the index is built once per state, never per
arm. Arms that share legs (harness.sweep.legs) run as one group, whose legs are fetched once:
a group of retrieve and diversify arms in one process, which opens the state, encodes the
queries and fetches the legs once, then forks a process per idle worker and fuses, scores and
publishes each arm; a group with rerank arms (the cross-encoder is not used after a fork) has
its legs and query vectors fetched once by a ``jobs.legs`` process and published to the store,
as on Kubernetes, and its arms spread over a process per worker that reads them
(``share_legs=False``: one process per arm, as before). Each arm publishes its
artefacts (or a failure marker) to the artefact store;
failures are collected and reported without stopping the other arms. A rerun skips
every arm whose complete artefact set matches its config hash, so killing a sweep and
running it again completes only what is missing.

The sweep id defaults to ``{selector}-{state identity[:12]}``: the same family over the
same state is the same sweep, which is what makes a rerun a resume.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, cast

from harness.errors import InputDataError, UsageError
from harness.model import BACKENDS, Backend, EmbeddingBackend
from harness.objectstore import ArtefactStore, open_store
from harness.sweep import procs
from harness.sweep.catalogue import (
    CATALOGUE,
    Arm,
    Catalogue,
    config_hash,
    select_arms,
)
from harness.sweep.legs import ArmGroup, group_arms, group_id, legs_store_key, published_legs
from harness.sweep.manifest import emit_manifest, load_manifest, parse_manifest
from harness.sweep.storage import is_complete, publish_failure, read_failure
from harness.sweep.task import Job, RerankBackend, Task, build_task

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


def state_identity(state: Path, backend: str = "embedded") -> str:
    """What the arms measure, the state's files checked (exit 5 if changed): for the embedded backend its
    measurement identity (harness.state.contents), for another its content address (the stack block counts)."""
    from harness.state import verified_identity, verified_measurement

    return verified_measurement(state) if check_backend(backend) == "embedded" else verified_identity(state)


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise UsageError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    return backend


def legs_identity(state: Path, backend: str = "embedded") -> str:
    """What a group's legs are true of: the state, and the search backend when it is not the embedded default."""
    identity = state_identity(state, backend)
    if check_backend(backend) != "embedded":
        identity += f"+backend:{backend}"
    return identity


def measurement_identity(state: Path, arm: Arm, reranker: Path | None, backend: str = "embedded",
                         scorer: tuple[str, str] = ("torch", "cpu")) -> str:
    """What an arm's artefacts are true of: the state, the search backend when it is not the
    embedded default, and, when the arm reranks, the reranker weights and (unless torch on the CPU)
    what ran them, ``scorer`` = (--rerank-backend, --rerank-device): their scores differ in last bits."""
    identity = legs_identity(state, backend)
    if arm.needs_reranker and reranker is not None:
        from harness.retrieval.rerank import reranker_provenance, scorer_suffix

        identity += f"+reranker:{reranker_provenance(reranker)['weights_sha256']}{scorer_suffix(*scorer)}"
    return identity


def catalogue_for(manifest: Path | None) -> Catalogue:
    return load_manifest(manifest) if manifest else CATALOGUE


def default_sweep_id(selector: str, identity: str, backend: str = "embedded") -> str:
    """``{selector}-{identity[:12]}``, with ``-stack`` after the selector for the stack backend:
    the same arms over the same state on two backends are two sweeps, side by side."""
    safe = "-".join(part for part in selector.replace(",", "-").split("-") if part)
    if check_backend(backend) != "embedded":
        safe += f"-{backend}"
    return f"{safe}-{identity[:12]}"


@dataclass
class ArmOutcome:
    arm: Arm
    status: str  # "skipped" | "published" | "failed"
    seconds: float = 0.0  # the process's: a group's arms share one
    message: str = ""
    group_size: int = 1  # arms in the process that ran it


def process_seconds(outcomes: Sequence[ArmOutcome], legs_seconds: float = 0.0) -> float:
    """The sum of the processes' times (a group's time counted once, not once per arm), with the
    seconds of the processes that published legs (``legs_seconds``)."""
    return sum(o.seconds / o.group_size for o in outcomes) + legs_seconds


@dataclass
class SweepReport:
    sweep_id: str
    outcomes: list[ArmOutcome] = field(default_factory=list)
    wall_seconds: float = 0.0
    legs_seconds: float = 0.0  # the jobs.legs processes' (they publish no arm)

    @property
    def failed(self) -> list[ArmOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


@dataclass(frozen=True)
class _Process:
    """One process of a sweep: its task, and the legs process whose published legs it reads, which must
    have succeeded before it starts."""

    name: str
    task: Task
    after: tuple[str, ...] = ()  # the legs process, or a merge's shard processes

    @property
    def arms(self) -> tuple[Arm, ...]:
        """The arms it runs and publishes (none for a jobs.legs or jobs.shard process)."""
        return self.task.arms if self.task.job in ("arm", "merge") else ()

    def command(self, task_file: Path) -> list[str]:
        """``python -m jobs.<job> --task FILE``: the task is the one thing a child is handed."""
        return [sys.executable, "-m", f"jobs.{self.task.job}", "--task", str(task_file)]


class Executor(Protocol):
    def run(self, arms: Sequence[Arm], sweep_id: str) -> SweepReport: ...


@dataclass
class LocalExecutor:
    state: Path
    store_spec: str
    workers: int
    reranker: Path | None = None
    s3_endpoint: str | None = None
    arm_workers: int = 1
    quiet: bool = False
    backend: str = "embedded"
    catalogue: Catalogue | None = None  # recorded in the store as sweeps/<id>/catalogue.json
    share_legs: bool = True  # arms one fetch of legs serves share it (harness.sweep.legs)
    # the cross-encoder score cache every group process shares (harness.retrieval.scorecache); None: none
    rerank_cache: Path | None = None
    rerank_device: str = "cpu"  # what runs the cross-encoder in every group process (harness.retrieval.rerank)
    rerank_backend: str = "torch"  # torch, or onnx: onnxruntime on the CPU (harness.retrieval.rerank)
    embedding_backend: EmbeddingBackend = "torch"  # what encodes the queries: what built the state's index
    onnx_cache: Path = Path("var/cache/onnx")  # where the onnx runtimes keep the models' local export
    shard_queries: bool = False  # a fork-safe group's queries split over its workers (harness.sweep.shards)

    def __post_init__(self) -> None:
        # the processes run from the checkout (cwd=ROOT): a relative path is the caller's, made absolute
        self.state, self.store_spec = self.state.resolve(), procs.absolute_store(self.store_spec)
        self.reranker = self.reranker.resolve() if self.reranker else None
        self.rerank_cache = self.rerank_cache.resolve() if self.rerank_cache else None
        self.onnx_cache = self.onnx_cache.resolve()

    def _task(self, job: Job, arms: Sequence[Arm], sweep_id: str, *, processes: int = 1, legs: str | None = None,
              part: tuple[int, int] = (0, 1), prescore: Sequence[Arm] = (), shard: tuple[int, int] | None = None,
              shards: int | None = None) -> Task:
        """A process's task, built as the Kubernetes Jobs' are (harness.sweep.task.build_task)."""
        rerank = job == "arm" and self.reranker is not None
        # the workers' processes score at once: each gets its share of the cores (threads spin when there
        # are more than cores: two torch processes of 2 threads on 2 cores scored 11 pairs/s between them,
        # of 1 thread 82; onnxruntime 78 and 118: docs/sweeps.md)
        threads = max(1, (os.cpu_count() or 1) // self.workers) if self.rerank_device == "cpu" else 0
        return build_task(job, tuple(arms), state=self.state, store=self.store_spec, sweep_id=sweep_id,
                          backend=cast(Backend, check_backend(self.backend)), s3_endpoint=self.s3_endpoint,
                          workers=self.arm_workers if job == "arm" else 1, embedding_backend=self.embedding_backend,
                          onnx_cache=self.onnx_cache, reranker=self.reranker if rerank else None,
                          rerank_device=self.rerank_device, rerank_backend=cast(RerankBackend, self.rerank_backend),
                          rerank_threads=threads, rerank_cache=self.rerank_cache, legs=legs, part=part,
                          prescore=tuple(prescore), processes=processes, shard=shard, shards=shards)

    def _tasks(self, group: ArmGroup, sweep_id: str, spread: int, store: ArtefactStore,
               arms: Sequence[Arm] = ()) -> list[_Process]:
        """The processes that run ``group``: one, forking ``spread`` ways once its legs are fetched
        when its arms may fork; else, for a group with arms that run the cross-encoder and more than
        one worker, a jobs.legs process that publishes its legs (unless a rerun finds them, or the
        deeper legs of the sweep's other ``arms``, already published: harness.sweep.legs.published_legs)
        and up to ``workers`` processes that read them, every one the group's n-th arms, answering their
        queries from its own part of them on (its task's ``part``), after scoring the pairs of the
        group's rerank arms into the shared score cache from its part on (its task's ``prescore``). With
        ``shard_queries``, a fork-safe group: ``spread`` jobs.shard processes, a jobs.merge (harness.sweep.shards)."""
        from harness.bench.stages import STAGES

        fork_safe = all(STAGES[arm.arm_config.stage].fork_safe for arm in group.arms)
        if self.shard_queries and fork_safe and group.shared and spread > 1 and self.backend == "embedded":
            shards = [_Process(f"{group.name} shard {k + 1}/{spread}",
                               self._task("shard", group.arms, sweep_id, shard=(k, spread))) for k in range(spread)]
            merge = self._task("merge", group.arms, sweep_id, shards=spread)
            return [*shards, _Process(f"{group.name} merge", merge, tuple(s.name for s in shards))]
        if not group.shared or fork_safe or min(self.workers, len(group.arms)) < 2:
            task = self._task("arm", group.arms, sweep_id, processes=spread if group.shared else 1)
            return [_Process(group.name, task)]
        assert group.key is not None
        identity = legs_identity(self.state, self.backend)
        found = published_legs(store, sweep_id, identity, group, arms, self.backend)
        key = found or legs_store_key(sweep_id, group_id(identity, group.key))
        tasks: list[_Process] = []
        after: tuple[str, ...] = ()
        if found is None:
            after = (f"{group.name} legs",)
            tasks.append(_Process(after[0], self._task("legs", group.arms, sweep_id, legs=key)))
        parts = min(self.workers, len(group.arms))
        # with a score cache the processes share, each first scores the pairs of all the group's rerank
        # arms for its part of the queries (its task's prescore), so that no process idles while another
        # scores an arm of its own alone (the cold catalogue: 42 of its 71 minutes, docs/growth.md)
        rerank = [arm for arm in group.arms if arm.needs_reranker]
        prescore = rerank if self.rerank_cache and parts > 1 else []
        for k in range(parts):
            task = self._task("arm", group.arms[k::parts], sweep_id, legs=key, part=(k, parts), prescore=prescore)
            tasks.append(_Process(f"{group.name} {k + 1}/{parts}", task, after))
        return tasks

    def _say(self, text: str) -> None:
        # Progress, not results: the CLI shows harness INFO records on stderr (harness.cli).
        if not self.quiet:
            log.info(text)

    def run(self, arms: Sequence[Arm], sweep_id: str) -> SweepReport:
        if self.workers < 1:
            raise UsageError("--workers must be at least 1")
        if any(a.needs_reranker for a in arms) and self.reranker is None:
            names = ", ".join(a.name for a in arms if a.needs_reranker)
            raise UsageError(f"arms {names} run the rerank stage and need --reranker DIR "
                             "(train one with `ragsweep reranker train --out DIR`)")
        started = time.perf_counter()
        # Read the state (and reranker) first: one that is missing is refused before the store is written.
        scorer = (self.rerank_backend, self.rerank_device)
        digests = [config_hash(arm, measurement_identity(self.state, arm, self.reranker, self.backend, scorer))
                   for arm in arms]
        # one sweep at a time on this --out (harness.sweep.procs), held before it reads what is complete
        with procs.lock_out(self.store_spec) as lock:
            return self._run(arms, sweep_id, digests, lock, started)

    def _run(self, arms: Sequence[Arm], sweep_id: str, digests: list[str], lock: procs.OutLock | None,
             started: float) -> SweepReport:
        store = open_store(self.store_spec, self.s3_endpoint)
        report = SweepReport(sweep_id=sweep_id)
        pending: list[Arm] = []
        for arm, digest in zip(arms, digests, strict=True):
            if is_complete(store, sweep_id, arm, digest):
                report.outcomes.append(ArmOutcome(arm, "skipped", message="complete for this config"))
            else:
                pending.append(arm)
        digest_of = {arm.name: digest for arm, digest in zip(arms, digests, strict=True)}
        groups = group_arms(pending, self.backend, share=self.share_legs)
        # Fewer groups than workers: a group spreads its arms over the idle workers once its legs are
        # fetched (its task's processes, or processes reading its published legs), so a one-family
        # sweep does not leave cores idle.
        spread = max(1, self.workers // max(1, len(groups)))
        queue = [task for group in groups for task in self._tasks(group, sweep_id, spread, store, arms)]
        legs_tasks = sum(not task.arms for task in queue)
        self._say(f"sweep {sweep_id}: {len(arms)} arms, {len(arms) - len(pending)} already complete, "
                  f"{len(pending)} to run in {len(groups)} groups, {len(queue)} processes "
                  f"({legs_tasks} publishing legs) on {min(self.workers, max(1, len(queue)))} workers"
                  + (f", each group's arms over up to {spread} processes" if spread > 1 else ""))
        running: dict[str, tuple[_Process, subprocess.Popen[bytes], float, Path]] = {}
        finished: dict[str, str] = {}  # legs task -> "" when it succeeded, else why not
        done = 0

        def record(task: _Process, outcomes: list[ArmOutcome]) -> None:
            nonlocal done
            for outcome in outcomes:
                done += 1
                report.outcomes.append(outcome)
                shared = f" (one process for {len(task.arms)} arms)" if len(task.arms) > 1 else ""
                if outcome.status == "published":
                    self._say(f"  [{done}/{len(pending)}] {outcome.arm.name} ok in {outcome.seconds:.1f}s{shared}")
                else:
                    self._say(f"  [{done}/{len(pending)}] {outcome.arm.name} FAILED ({outcome.message})")

        with procs.LogFolder.for_sweep(self.store_spec, sweep_id, [t.name for t in queue]) as logs, \
                procs.exit_on_sigterm():
            if self.catalogue is not None:  # written once its logs are known not to be links
                publish_catalogue(store, sweep_id, self.catalogue)
            try:
                while queue or running:
                    for task in list(queue):
                        if len(running) >= self.workers:
                            break
                        if any(name not in finished for name in task.after):
                            continue  # its legs (or its shards) are still being fetched
                        queue.remove(task)
                        before = next((finished[name] for name in task.after if finished[name]), "")
                        if before:
                            kind = "shard" if task.task.job == "merge" else "legs"
                            why = f"not run: its group's {kind} process failed: {before}"
                            for arm in task.arms:  # named in the store, as an arm that failed is, for the collector
                                publish_failure(store, sweep_id, arm, digest_of[arm.name], why)
                            record(task, [ArmOutcome(arm, "failed", 0.0, why, len(task.arms)) for arm in task.arms])
                            continue
                        task_file = logs.write_task(task.name, task.task.to_json())
                        with logs.open(task.name) as fh:
                            # Under `python -m` the working directory leads sys.path, so cwd=ROOT imports jobs
                            # and harness from this checkout (every path the task names is absolute).
                            proc = procs.start(task.command(task_file), fh, ROOT, lock)
                        running[task.name] = (task, proc, time.perf_counter(), logs.path(task.name))
                    time.sleep(0.2)
                    for name in list(running):
                        task, proc, t0, log_path = running[name]
                        code = proc.poll()
                        if code is None:
                            continue
                        del running[name]
                        seconds = time.perf_counter() - t0
                        if not task.arms:
                            report.legs_seconds += seconds
                            finished[name] = ("" if code == 0 else
                                              f"{name}: exit {code}: {_last_line(log_path)}; log {log_path}")
                            self._say(f"  {name}: {'published' if code == 0 else 'FAILED'} in {seconds:.1f}s")
                            continue
                        record(task, [self._outcome(store, sweep_id, arm, digest_of[arm.name], code, log_path,
                                                    seconds, len(task.arms)) for arm in task.arms])
            finally:  # stopped (SIGTERM, Ctrl-C) or refused: no arm process outlives the sweep
                if running:
                    log.warning("stopping %d arm processes of sweep %s", len(running), sweep_id)
                    procs.stop([proc for _, proc, _, _ in running.values()])
        report.wall_seconds = time.perf_counter() - started
        return report

    @staticmethod
    def _outcome(store: ArtefactStore, sweep_id: str, arm: Arm, digest: str, code: int, log: Path,
                 seconds: float, group_size: int) -> ArmOutcome:
        """What became of one arm of a finished process: its complete set in the store, else its failure."""
        if code == 0 or group_size > 1:
            if is_complete(store, sweep_id, arm, digest):
                return ArmOutcome(arm, "published", seconds, group_size=group_size)
            failure = read_failure(store, sweep_id, arm)
            if failure is not None and failure.get("config_hash") == digest:
                return ArmOutcome(arm, "failed", seconds, f"exit {code}: {failure['error']}", group_size)
        return ArmOutcome(arm, "failed", seconds, f"exit {code}: {_last_line(log)}; log {log}", group_size)


def _last_line(log: Path) -> str:
    return (log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["?"])[0]


def catalogue_key(sweep_id: str) -> str:
    return f"sweeps/{sweep_id}/catalogue.json"


def publish_catalogue(store: ArtefactStore, sweep_id: str, catalogue: Catalogue) -> None:
    """Record the arms catalogue a sweep runs (built-in or --manifest) beside its arms: the
    collector, wherever it runs (a Job in the cluster), reads the families from it."""
    store.put_text(catalogue_key(sweep_id), emit_manifest(catalogue))


def stored_catalogue(store: ArtefactStore, sweep_id: str) -> Catalogue | None:
    from harness.sweep.storage import MissingArtefactError

    key = catalogue_key(sweep_id)
    where = f"{store.describe()}/{key}"
    try:
        doc = json.loads(store.get_text(key))
    except MissingArtefactError:
        return None
    except json.JSONDecodeError as e:
        raise InputDataError(f"{where}:{e.lineno}: not JSON ({e.msg})") from e
    return parse_manifest(doc, where)


def collect_sweep(store: ArtefactStore, sweep_id: str, selector: str, manifest: Path | None) -> str:
    """Write comparison.md / comparison.json (and the plot) for the sweep, and latency.md when the sweep
    measured latency or the gate has a budget (harness.sweep.latencygate); returns comparison.md's key.

    The families come from ``manifest`` when given, else from the catalogue the sweep recorded
    in the store, else from the built-in catalogue (a sweep written before catalogues were recorded).
    """
    from harness.sweep.collect import collect
    from harness.sweep.latencygate import write_latency_md

    catalogue = load_manifest(manifest) if manifest else (stored_catalogue(store, sweep_id) or CATALOGUE)
    arms = select_arms(catalogue, selector)
    comparison, _ = collect(store, sweep_id, arms, families=catalogue.families, gate=catalogue.gate)
    write_latency_md(store, sweep_id, comparison, catalogue.gate)  # durations: apart from comparison.md
    return f"sweeps/{sweep_id}/comparison.md"
