"""What the watcher reports about a failed pod (pure: client models in, text out)."""

from __future__ import annotations

import pytest

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")

from kubernetes import client as k

from harness.sweep.k8s.watch import JobResult, _terminated, stuck, unschedulable


def status(name: str, terminated: int | None = None, waiting: str | None = None) -> k.V1ContainerStatus:
    state = (k.V1ContainerState(terminated=k.V1ContainerStateTerminated(exit_code=terminated, reason="Error"))
             if terminated is not None else k.V1ContainerState(waiting=k.V1ContainerStateWaiting(reason=waiting)))
    return k.V1ContainerStatus(name=name, image="i", image_id="i", ready=False, restart_count=0, state=state)


def pod(init: list[k.V1ContainerStatus], main: list[k.V1ContainerStatus]) -> k.V1Pod:
    return k.V1Pod(status=k.V1PodStatus(phase="Failed", init_container_statuses=init, container_statuses=main))


@pytest.mark.parametrize(("init", "main", "expected"), [
    ([status("fetch-state", 0)], [status("arm", 1)], (1, "Error", "")),
    ([status("fetch-state", 0)], [status("arm", 0)], (0, "Error", "")),
    # The init container failed: the main container never started (a kubelet leaves it waiting).
    ([status("fetch-state", 5)], [status("arm", waiting="PodInitializing")], (5, "Error", "fetch-state")),
    ([status("fetch-state", 0), status("fetch-reranker", 5)], [status("arm", waiting="PodInitializing")],
     (5, "Error", "fetch-reranker")),
    ([], [status("arm", waiting="ContainerCreating")], (None, "", "")),
])
def test_the_container_that_ended_the_pod(init: list[k.V1ContainerStatus], main: list[k.V1ContainerStatus],
                                          expected: tuple[int | None, str, str]) -> None:
    assert _terminated(pod(init, main)) == expected


def test_the_report_names_a_failed_init_container() -> None:
    result = JobResult("arm-x", False, "BackoffLimitExceeded", "", 2, 5, "arm-x-abc", "Error",
                       ("jobs.sync: error: no state/state.tar.gz",), "fetch-state")
    assert result.describe() == ("job arm-x failed: BackoffLimitExceeded; 2 pod(s) failed; last pod arm-x-abc: "
                                 "init container fetch-state exit 5 Error; last log line: jobs.sync: error: no "
                                 "state/state.tar.gz")
    plain = JobResult("arm-x", False, "BackoffLimitExceeded", "", 2, 1, "arm-x-abc", "Error", ("boom",))
    assert "last pod arm-x-abc: exit 1 Error" in plain.describe()


def pending_pod(message: str, phase: str = "Pending") -> k.V1Pod:
    condition = k.V1PodCondition(type="PodScheduled", status="False", reason="Unschedulable", message=message)
    return k.V1Pod(metadata=k.V1ObjectMeta(name="arm-x-abc"), status=k.V1PodStatus(phase=phase, conditions=[condition]))


# The shape of kube-scheduler's message for a GPU arm on a cluster with no GPU node (its documented format;
# tests/test_k8s_cluster.py checks the real one on the single-node cluster).
NO_GPU = ("0/1 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
          "affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
BUSY = ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.")


def test_a_pod_no_node_can_ever_run_is_reported_with_the_schedulers_words() -> None:
    assert unschedulable(pending_pod(NO_GPU)) == NO_GPU


HALF = ("0/2 nodes are available: preemption: 0/2 nodes are available: "
        "1 Preemption is not helpful for scheduling, 1 No preemption victims found")


@pytest.mark.parametrize("pod", [pending_pod(BUSY), pending_pod(NO_GPU, phase="Running"), pending_pod(HALF)])
def test_a_pod_waiting_for_room_is_waited_for(pod: k.V1Pod) -> None:
    assert unschedulable(pod) is None


def waiting_pod(reason: str, message: str) -> k.V1Pod:
    waiting = k.V1ContainerStatus(name="arm", image="x", image_id="", ready=False, restart_count=0,
                                  state=k.V1ContainerState(waiting=k.V1ContainerStateWaiting(reason=reason,
                                                                                             message=message)))
    return k.V1Pod(metadata=k.V1ObjectMeta(name="arm-x-abc"),
                   status=k.V1PodStatus(phase="Pending", container_statuses=[waiting]))


def test_an_image_that_cannot_be_pulled_is_named() -> None:
    pod = waiting_pod("ErrImagePull", "failed to pull and unpack image: not found")
    assert stuck(pod) == ("ErrImagePull", "container arm: failed to pull and unpack image: not found")
    assert stuck(waiting_pod("ContainerCreating", "")) is None


def test_a_pull_that_may_succeed_on_the_next_try_is_waited_for() -> None:
    pod = waiting_pod("ErrImagePull", "failed to do request: dial tcp 127.0.0.1:5000: connect: connection refused")
    assert stuck(pod) is None
    assert stuck(waiting_pod("ImagePullBackOff", "Back-off pulling image: manifest unknown"))[0] == "ImagePullBackOff"
