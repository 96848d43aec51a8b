"""Submitting Jobs: separate from building them, retried only where the API says "try again".

Every call goes through ``call_api``: throttling (429), server errors (5xx) and dropped
connections are retried with capped exponential backoff (jittered, really sleeping) until
a deadline; anything else (403 from RBAC, 422 from validation) fails at once with the API's
own message. A Job name is stable per (sweep, arm), so a rerun meets the previous run's Job:
one still running is adopted, a finished one is deleted (foreground, waiting until it is
gone) and created again, because a Job's pod template cannot be changed in place.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.errors import HarnessError
from harness.sweep.storage import StorageError, retry_transient

T = TypeVar("T")


class ClusterError(HarnessError):
    """The Kubernetes API refused a request, or kept failing past the deadline."""


def is_transient_api_error(error: BaseException) -> bool:
    """429, 5xx and connection-level failures; never a 4xx that retrying cannot fix."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError as Urllib3Error

    if isinstance(error, ApiException):
        status = int(error.status or 0)
        return status == 429 or status >= 500 or status == 0
    return isinstance(error, Urllib3Error | ConnectionError | TimeoutError)


def api_status(error: BaseException) -> int | None:
    from kubernetes.client.exceptions import ApiException

    return int(error.status or 0) if isinstance(error, ApiException) else None


def _reason(error: BaseException) -> str:
    from kubernetes.client.exceptions import ApiException

    if isinstance(error, ApiException):
        import json

        try:
            body = json.loads(error.body or "{}")
            return f"{error.status} {body.get('reason', error.reason)}: {body.get('message', '')}".strip()
        except ValueError:
            return f"{error.status} {error.reason}"
    return f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class RetryPolicy:
    deadline_s: float = 120.0
    base_s: float = 0.5
    cap_s: float = 16.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


def call_api(call: Callable[[], T], what: str, policy: RetryPolicy = RetryPolicy(),
             passthrough: tuple[int, ...] = ()) -> T:
    """Run one API call under the retry policy. Statuses in ``passthrough`` are raised unchanged
    (the caller handles them, e.g. 404 on a read or 409 on a create)."""
    try:
        return retry_transient(call, is_transient=is_transient_api_error, what=what, deadline_s=policy.deadline_s,
                               base_s=policy.base_s, cap_s=policy.cap_s, sleep=policy.sleep, clock=policy.clock)
    except StorageError as e:  # retry_transient's "still failing past the deadline"
        raise ClusterError(str(e)) from e
    except Exception as e:
        if api_status(e) in passthrough:
            raise
        if api_status(e) is None and not is_transient_api_error(e):
            raise
        raise ClusterError(f"{what}: {_reason(e)}") from e


def job_finished(job: Any) -> bool:
    for condition in (job.status.conditions if job.status and job.status.conditions else []):
        if condition.type in ("Complete", "Failed") and condition.status == "True":
            return True
    return False


def create_job(batch: Any, namespace: str, job: Any, policy: RetryPolicy = RetryPolicy()) -> str:
    """Create the Job; returns "created", "adopted" (one of that name is still running) or
    "replaced" (a finished one of that name was deleted first)."""
    name = job.metadata.name
    try:
        call_api(lambda: batch.create_namespaced_job(namespace, job), f"create job {namespace}/{name}", policy,
                 passthrough=(409,))
        return "created"
    except Exception as e:
        if api_status(e) != 409:
            raise
    existing = call_api(lambda: batch.read_namespaced_job(name, namespace), f"read job {namespace}/{name}", policy)
    if not job_finished(existing):
        return "adopted"
    delete_job(batch, namespace, name, policy)
    call_api(lambda: batch.create_namespaced_job(namespace, job), f"create job {namespace}/{name}", policy)
    return "replaced"


def delete_job(batch: Any, namespace: str, name: str, policy: RetryPolicy = RetryPolicy(),
               gone_within_s: float = 120.0) -> None:
    """Delete a Job and its pods (foreground) and wait until the name is free again."""
    from kubernetes import client as k

    body = k.V1DeleteOptions(propagation_policy="Foreground")
    try:
        call_api(lambda: batch.delete_namespaced_job(name, namespace, body=body), f"delete job {namespace}/{name}",
                 policy, passthrough=(404,))
    except Exception as e:
        if api_status(e) != 404:
            raise
        return
    started = policy.clock()
    while policy.clock() - started < gone_within_s:
        try:
            call_api(lambda: batch.read_namespaced_job(name, namespace), f"read job {namespace}/{name}", policy,
                     passthrough=(404,))
        except Exception as e:
            if api_status(e) == 404:
                return
            raise
        policy.sleep(1.0)
    raise ClusterError(f"job {namespace}/{name} still exists {gone_within_s:g}s after its deletion; "
                       "a finalizer may hold it (kubectl get job -o yaml)")
