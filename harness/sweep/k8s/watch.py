"""Waiting for Jobs: one watch over the sweep's label selector, with an overall deadline.

``JobWatcher.wait`` lists the sweep's Jobs (which also gives a resourceVersion), returns those
of the asked names that have finished, and otherwise watches from that version, each watch
request bounded by the time left, until one finishes or the deadline passes. A finished Job
is one with a ``Complete`` or ``Failed`` condition whose status is True (``FailureTarget`` and
``SuccessCriteriaMet`` are interim: the pods are still terminating). For a failed Job the
result carries the condition's reason and message, how many pods failed (so a retry shows),
the last failed pod's exit code and reason, and that pod's last log lines; logs that cannot
be read say why instead of failing the report. When an init container failed (the state or
the reranker could not be fetched), the main container never started: the exit code, the
reason and the log lines are then the init container's, and the report names it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.sweep.k8s.submit import ClusterError, RetryPolicy, api_status, call_api

LOG_LINES = 20
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


class WatchTimeout(ClusterError):
    """The overall deadline passed with Jobs still running."""


@dataclass(frozen=True)
class JobResult:
    name: str
    succeeded: bool
    reason: str = ""
    message: str = ""
    failed_pods: int = 0
    exit_code: int | None = None
    pod: str = ""
    pod_reason: str = ""
    log_tail: tuple[str, ...] = field(default_factory=tuple)
    init_container: str = ""  # set when an init container failed and the main one never ran

    def describe(self) -> str:
        """One line: the failing condition, the retries, the pod's exit and its last log line."""
        if self.succeeded:
            return f"job {self.name} complete"
        parts = [f"job {self.name} failed: {self.reason or 'Failed'}"]
        if self.message:
            parts[0] += f" ({self.message})"
        parts.append(f"{self.failed_pods} pod(s) failed")
        if self.pod:
            exit_text = f"exit {self.exit_code}" if self.exit_code is not None else "no exit code"
            where = f"init container {self.init_container} " if self.init_container else ""
            parts.append(f"last pod {self.pod}: {where}{exit_text}{f' {self.pod_reason}' if self.pod_reason else ''}")
        if self.log_tail:
            parts.append(f"last log line: {self.log_tail[-1]}")
        return "; ".join(parts)


# The scheduler's verdict when no node of the cluster can ever run the pod (no node has the
# resource, or none matches its selector): nothing but a change of the cluster helps, so waiting
# for the deadline would only hide it. Any other Unschedulable message (busy nodes) is waited out.
_UNRESOLVABLE = re.compile(r"preemption: (\d+)/(\d+) nodes are available: (\d+) Preemption is not helpful")


def unschedulable(pod: Any) -> str | None:
    """The scheduler's message when ``pod`` cannot be placed on any node of the cluster, else None."""
    status = getattr(pod, "status", None)
    if status is None or status.phase != "Pending":
        return None
    for condition in status.conditions or ():
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
            match = _UNRESOLVABLE.search(condition.message or "")
            if match and match.group(1) == "0" and match.group(2) == match.group(3):
                return (condition.message or "").strip()
    return None


# A container that cannot even start, for a reason no retry of the pod fixes: the image
# reference is malformed or names nothing the registry has, or the pod references a
# Secret/ConfigMap that is absent. The kubelet keeps such a pod Pending forever (backing off),
# so the Job would never fail. A pull that failed for another reason (the registry did not
# answer) may succeed on the kubelet's next try, and is waited for.
STUCK_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError")
_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff")
_NOT_THERE = re.compile(r"not found|manifest unknown|name unknown|unauthorized|denied|invalid reference", re.I)


def stuck(pod: Any) -> tuple[str, str] | None:
    """(reason, message) of the first container of ``pod`` that cannot start, else None."""
    status = getattr(pod, "status", None)
    if status is None or status.phase != "Pending":
        return None
    for cs in (status.init_container_statuses or []) + (status.container_statuses or []):
        waiting = cs.state.waiting if cs.state else None
        if waiting is None or waiting.reason not in STUCK_REASONS:
            continue
        message = (waiting.message or waiting.reason).strip()
        if waiting.reason in _PULL_REASONS and not _NOT_THERE.search(message):
            continue
        return waiting.reason, f"container {cs.name}: {message}"
    return None


def finished_condition(job: Any) -> tuple[bool, str, str] | None:
    """(succeeded, reason, message) once the Job is Complete or Failed; None while it runs."""
    conditions = job.status.conditions if job.status and job.status.conditions else []
    for condition in conditions:
        if condition.status != "True":
            continue
        if condition.type == "Complete":
            return True, condition.reason or "Completed", condition.message or ""
        if condition.type == "Failed":
            return False, condition.reason or "Failed", condition.message or ""
    return None


def _terminated(pod: Any) -> tuple[int | None, str, str]:
    """(exit code, reason, init container name or "") of what ended the pod: a container that
    exited non-zero, else an init container that did, else any container that terminated."""
    statuses = (pod.status.container_statuses or []) if pod.status else []
    init = (pod.status.init_container_statuses or []) if pod.status else []
    for group, is_init in ((statuses, False), (init, True)):
        for status in group:
            state = status.state.terminated if status.state else None
            if state is not None and state.exit_code:
                return int(state.exit_code), state.reason or "", status.name if is_init else ""
    for status in statuses:
        state = status.state.terminated if status.state else None
        if state is not None:
            return int(state.exit_code), state.reason or "", ""
    return None, (pod.status.reason or "") if pod.status else "", ""


@dataclass
class JobWatcher:
    batch: Any
    core: Any
    namespace: str
    selector: str
    timeout_s: float
    container: str = "arm"
    log_lines: int = LOG_LINES
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    clock: Callable[[], float] = time.monotonic
    _deadline: float = 0.0

    def __post_init__(self) -> None:
        self._deadline = self.clock() + self.timeout_s

    def left(self) -> float:
        return self._deadline - self.clock()

    def _failure(self, job: Any, reason: str, message: str) -> JobResult:
        name = job.metadata.name
        failed = int(job.status.failed or 0) if job.status else 0
        selector = f"{JOB_NAME_LABEL}={name}"
        pods = call_api(lambda: self.core.list_namespaced_pod(self.namespace, label_selector=selector),
                        f"list pods of job {name}", self.policy).items
        pods = sorted(pods, key=lambda p: (p.metadata.creation_timestamp is not None, p.metadata.creation_timestamp,
                                           p.metadata.name))
        failed_pods = [p for p in pods if p.status and p.status.phase == "Failed"] or pods
        if not failed_pods:
            return JobResult(name, False, reason, message, failed)
        last = failed_pods[-1]
        exit_code, pod_reason, init_container = _terminated(last)
        return JobResult(name, False, reason, message, max(failed, len([p for p in pods if p.status and
                                                                          p.status.phase == "Failed"])),
                         exit_code, last.metadata.name, pod_reason,
                         self.logs(last.metadata.name, init_container or None), init_container)

    def logs(self, pod: str, container: str | None = None) -> tuple[str, ...]:
        """The last log lines of ``container`` (default: the watcher's main container)."""
        container = container or self.container
        try:
            text = call_api(lambda: self.core.read_namespaced_pod_log(pod, self.namespace, container=container,
                                                                      tail_lines=self.log_lines),
                            f"logs of pod {pod}", RetryPolicy(deadline_s=10.0, sleep=self.policy.sleep,
                                                              clock=self.policy.clock), passthrough=(400, 404))
        except Exception as e:
            status = api_status(e)
            return (f"(logs unavailable: {f'HTTP {status}' if status else type(e).__name__}: "
                    f"{str(getattr(e, 'reason', '') or e).strip()[:200]})",)
        lines = [line for line in str(text or "").splitlines() if line.strip()]
        return tuple(lines[-self.log_lines:])

    def _result(self, job: Any) -> JobResult | None:
        done = finished_condition(job)
        if done is None:
            return None
        succeeded, reason, message = done
        return JobResult(job.metadata.name, True, reason, message) if succeeded else self._failure(job, reason, message)

    def _never_scheduled(self, pending: set[str]) -> list[JobResult]:
        """Jobs whose pod no node of the cluster can run (e.g. a GPU arm on a GPU-less cluster)
        or whose container can never start (its image cannot be pulled)."""
        pods = call_api(lambda: self.core.list_namespaced_pod(self.namespace, label_selector=self.selector),
                        f"list pods {self.selector}", self.policy).items
        results = []
        for pod in pods:
            job = (pod.metadata.labels or {}).get(JOB_NAME_LABEL)
            if job not in pending:
                continue
            message = unschedulable(pod)
            cannot_start = stuck(pod)
            if message:
                pending.discard(job)
                results.append(JobResult(job, False, "Unschedulable", message, 0, None, pod.metadata.name, "Pending"))
            elif cannot_start:
                pending.discard(job)
                results.append(JobResult(job, False, cannot_start[0], cannot_start[1], 0, None, pod.metadata.name,
                                         "Pending"))
        return results

    def wait(self, names: Iterable[str]) -> list[JobResult]:
        """Block until at least one of ``names`` has finished (or can never be scheduled); return
        every one that has."""
        from kubernetes import watch

        pending = set(names)
        if not pending:
            return []
        while True:
            listing = call_api(lambda: self.batch.list_namespaced_job(self.namespace, label_selector=self.selector),
                               f"list jobs {self.selector}", self.policy)
            results = [r for job in listing.items if job.metadata.name in pending
                       for r in [self._result(job)] if r is not None]
            results += self._never_scheduled(pending - {r.name for r in results})
            if results:
                return results
            left = self.left()
            if left <= 0:
                raise WatchTimeout(f"{len(pending)} job(s) still running after {self.timeout_s:g}s: "
                                   f"{', '.join(sorted(pending))} (kubectl -n {self.namespace} get jobs -l "
                                   f"'{self.selector}')")
            stream = watch.Watch()
            try:
                for event in stream.stream(self.batch.list_namespaced_job, self.namespace,
                                           label_selector=self.selector,
                                           resource_version=listing.metadata.resource_version,
                                           timeout_seconds=max(1, min(int(left) + 1, 30))):
                    job = event["object"]
                    if event["type"] in ("ADDED", "MODIFIED") and job.metadata.name in pending:
                        result = self._result(job)
                        if result is not None:
                            stream.stop()
                            return [result]
            except Exception as e:
                # 410 Gone (the version expired) or a dropped stream: list again and resume.
                status = api_status(e)
                if status is not None and status not in (0, 410, 429) and status < 500:
                    raise ClusterError(f"watch jobs {self.selector}: {e}") from e
            finally:
                stream.stop()
