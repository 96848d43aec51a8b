"""Submission retries (429/5xx with capped, sleeping backoff and a deadline; 4xx at once) and
rerun handling of an existing Job. The API here is a hand-written stand-in object raising the
client's real ApiException: a stopgap for the API's error behaviour, not a cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from fakes import Clock

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")

from kubernetes.client.exceptions import ApiException

from harness.sweep.k8s.submit import ClusterError, RetryPolicy, call_api, create_job


def policy(clock: Clock, deadline: float = 30.0) -> RetryPolicy:
    return RetryPolicy(deadline_s=deadline, base_s=0.5, cap_s=4.0, sleep=clock.sleep, clock=clock.time)


def failing(statuses: list[int], result: Any = "ok") -> Any:
    calls = iter(statuses)

    def call() -> Any:
        status = next(calls, None)
        if status is None:
            return result
        raise ApiException(status=status, reason="test")
    return call


def test_throttling_and_server_errors_are_retried_with_capped_backoff() -> None:
    clock = Clock()
    assert call_api(failing([429, 503, 500, 502, 429, 504]), "create", policy(clock)) == "ok"
    assert len(clock.sleeps) == 6
    assert all(s <= 4.0 for s in clock.sleeps)  # capped
    assert clock.sleeps[-1] >= 2.0  # 0.5 * 2**5 capped at 4, jittered by 0.5-1


def test_a_client_error_is_not_retried() -> None:
    clock = Clock()
    with pytest.raises(ClusterError, match="403"):
        call_api(failing([403]), "create", policy(clock))
    assert clock.sleeps == []


def test_the_deadline_stops_the_retries() -> None:
    clock = Clock()
    with pytest.raises(ClusterError, match="deadline"):
        call_api(failing([503] * 1000), "create", policy(clock, deadline=10.0))
    assert sum(clock.sleeps) <= 10.0


class Batch:
    """Just enough of BatchV1Api for create_job: one existing Job, finished or not."""

    def __init__(self, finished: bool) -> None:
        self.exists = True
        self.finished = finished
        self.calls: list[str] = []

    def create_namespaced_job(self, namespace: str, job: Any) -> Any:
        self.calls.append("create")
        if self.exists:
            raise ApiException(status=409, reason="AlreadyExists")
        self.exists = True
        return job

    def read_namespaced_job(self, name: str, namespace: str) -> Any:
        self.calls.append("read")
        if not self.exists:
            raise ApiException(status=404, reason="NotFound")
        conditions = [SimpleNamespace(type="Failed", status="True")] if self.finished else []
        return SimpleNamespace(status=SimpleNamespace(conditions=conditions))

    def delete_namespaced_job(self, name: str, namespace: str, body: Any = None) -> Any:
        self.calls.append("delete")
        self.exists = False


JOB = SimpleNamespace(metadata=SimpleNamespace(name="arm-x-12345678"))


def test_a_running_job_of_the_same_name_is_adopted() -> None:
    batch = Batch(finished=False)
    assert create_job(batch, "ns", JOB, policy(Clock())) == "adopted"
    assert "delete" not in batch.calls


def test_a_finished_job_of_the_same_name_is_replaced() -> None:
    batch = Batch(finished=True)
    assert create_job(batch, "ns", JOB, policy(Clock())) == "replaced"
    assert batch.calls == ["create", "read", "delete", "read", "create"]
