"""The chart and the launcher on a real single-node cluster: pods in containers.

What is real: everything. The control plane of the kwok test bed, plus a node (containerd +
runc, the bridge CNI plugin, kubelet and kube-proxy built from k8s.io/kubernetes), CoreDNS,
local volumes; the images are the ones `make images` built and pushed to the loopback
registry, pulled by digest. The release is `helm install` of charts/ragsweep into an ephemeral
namespace under Pod Security "restricted"; its injector ingests a small synthetic corpus through
the Celery workers into the release's OpenSearch and PostgreSQL; the arms run as Jobs.

Faults are made for real: a running arm container's process is killed with SIGKILL on the
node, an arm runs with a memory limit too small for it (the kernel's OOM killer ends it), the
object store's pod is deleted while arms publish, and an arm's image digest does not exist.
The chart's NetworkPolicies are enforced on the node (kube-network-policies): a probe pod labelled
as a component the policies do not admit times out, and with enforcement off the same probe connects.

`make test-k8s` and `make test-all` run this file (RAGSWEEP_K8S_CLUSTER=1); `make test` runs the tests
marked cluster_smoke, as root, after building the node's binaries when missing (stack/test.sh). Everywhere
else it skips with one line: what is missing (the node's binaries, the images), or that `make test-k8s` runs it.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.k8s_health import checked, cluster_health, run_teardown

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("RAGSWEEP_K8S_BIN") or ROOT / "var" / "tools" / "bin")
CLUSTER_DIR = Path(os.environ.get("RAGSWEEP_CLUSTER_DIR") or ROOT / "var" / "cluster")
IMAGES = Path(os.environ.get("RAGSWEEP_IMAGES_DIR") or ROOT / "var" / "images")
KUBECONFIG = CLUSTER_DIR / "kubeconfig"
NODE_BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy",
                 "registry", "helm")
RAGSWEEP = Path(sys.executable).with_name("ragsweep")
RELEASE = "ragsweep"


def _missing() -> list[str]:
    missing = [f"{b} (make k8s-apiserver-tools)" for b in NODE_BINARIES if not os.access(BIN / b, os.X_OK)]
    if not (IMAGES / "values.yaml").is_file():
        missing.append("the images (make images)")
    # kubectl apart: Debian's kubernetes-client conflicts with a kubectl another package installed (this
    # machine's), and a failed apt-get transaction leaves containerd unpacked but not configured
    for tool, hint in (("containerd", "apt-get install containerd runc"), ("runc", "apt-get install runc"),
                       ("ctr", "apt-get install containerd"), ("kubectl", "any kubectl; Debian's kubernetes-client")):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode != 0:
            missing.append(f"{tool} ({hint})")
    if os.geteuid() != 0:
        missing.append("root (the node runs containers)")
    return missing


def kubectl(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(KUBECONFIG), *args], capture_output=True, text=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@pytest.fixture(scope="module")
def cluster() -> Iterator[Path]:
    """The single-node cluster, started here unless it already runs (then left running)."""
    missing = _missing()
    if missing and os.environ.get("RAGSWEEP_REQUIRE_K8S") == "1":  # make test (stack/test.sh) built them
        pytest.fail(f"no single-node cluster: missing {', '.join(missing)} (RAGSWEEP_REQUIRE_K8S=1)")
    if missing:
        pytest.skip(f"no single-node cluster: missing {', '.join(missing)}; `make test-k8s` builds and runs it")
    if os.environ.get("RAGSWEEP_K8S_CLUSTER") != "1":
        pytest.skip("the single-node cluster tests run under `make test-k8s` (RAGSWEEP_K8S_CLUSTER=1; ~20 min)")
    started = time.monotonic()
    up = subprocess.run(["bash", str(ROOT / "stack" / "k8s" / "cluster.sh"), "up"], cwd=ROOT, capture_output=True,
                        text=True, timeout=900)
    if up.returncode != 0:
        pytest.fail(f"stack/k8s/cluster.sh up failed (exit {up.returncode}):\n{up.stderr[-3000:]}")
    print(f"\ncluster up in {time.monotonic() - started:.0f}s", file=sys.stderr)
    yield KUBECONFIG


@dataclass
class Release:
    namespace: str
    core: Any
    batch: Any
    endpoint: str
    store_url: str
    corpora: Path
    forward: PortForward


class PortForward:
    """``kubectl port-forward`` to the object store, restarted whenever it exits: it ends with
    the pod it forwards to, and one test deletes that pod (as stack/k8s/sweep.sh's loop does)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv, self.restarts = argv, 0
        self._stopping = threading.Event()
        self._process: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self._process.wait()
            if not self._stopping.is_set():
                self.restarts += 1
                self._stopping.wait(1.0)

    def stop(self) -> None:
        self._stopping.set()
        if self._process is not None:
            self._process.terminate()
        self._thread.join(timeout=10)


def _small_corpus(tmp: Path) -> Path:
    """A 12-meeting synthetic selection: an injector run of a minute, arms of seconds."""
    full, selected = tmp / "full", tmp / "corpus"
    subprocess.run([str(RAGSWEEP), "synth", "generate", "--seed", "7", "--meetings", "60", "--out", str(full)],
                   check=True, cwd=ROOT, capture_output=True, timeout=600)
    subprocess.run([str(RAGSWEEP), "synth", "select", "--from", str(full), "--budget", "12", "--out", str(selected)],
                   check=True, cwd=ROOT, capture_output=True, timeout=600)
    return selected


@pytest.fixture(scope="module")
def release(cluster: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    """charts/ragsweep installed into an ephemeral restricted namespace, the corpus injected."""
    from kubernetes import client as k
    from kubernetes import config

    tmp = tmp_path_factory.mktemp("k8s-cluster")
    corpora = _small_corpus(tmp)
    namespace = f"ragsweep-test-{uuid.uuid4().hex[:6]}"
    # as make ci-namespace and stack/k8s/sweep.sh make theirs: created (never applied), the janitor bound inside
    subprocess.run(["bash", str(ROOT / "stack" / "k8s" / "ci-namespace.sh"), namespace, "pytest", "4"],
                   env={**os.environ, "KUBECONFIG": str(cluster)}, check=True, capture_output=True, text=True)
    helm = [str(BIN / "helm"), "--kubeconfig", str(cluster)]

    def health() -> str:
        return cluster_health(CLUSTER_DIR, cluster, namespace, ROOT / "stack" / "k8s" / "cluster.sh")

    try:
        try:
            install = subprocess.run([*helm, "install", RELEASE, str(ROOT / "charts" / "ragsweep"), "-n", namespace,
                                      "-f", str(ROOT / "charts" / "ragsweep" / "ci" / "single-node-values.yaml"),
                                      "-f", str(IMAGES / "values.yaml"), "--set", "tests.enabled=false",
                                      "--wait", "--timeout", "15m"], capture_output=True, text=True, timeout=1000)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"helm install: no answer in {e.timeout:.0f}s\n{health()}")
        if install.returncode != 0:
            pytest.fail(f"helm install (exit {install.returncode}): {install.stderr[-2000:]}\n{health()}")
        config.load_kube_config(str(cluster))
        core, batch = k.CoreV1Api(), k.BatchV1Api()
        port = 19100 + os.getpid() % 800
        forward = PortForward(["kubectl", "--kubeconfig", str(cluster), "-n", namespace, "port-forward",
                               f"svc/{RELEASE}-object-store", f"{port}:9000"])
        secret = core.read_namespaced_secret(f"{RELEASE}-object-store", namespace).data
        os.environ["AWS_ACCESS_KEY_ID"] = base64.b64decode(secret["access-key-id"]).decode()
        os.environ["AWS_SECRET_ACCESS_KEY"] = base64.b64decode(secret["secret-access-key"]).decode()
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        endpoint = f"http://127.0.0.1:{port}"
        time.sleep(2)
        staging = tmp / "staging"
        (staging).mkdir()
        subprocess.run(["cp", "-r", str(corpora), str(staging / "synthetic")], check=True)
        subprocess.run([sys.executable, "-m", "jobs.sync", "push", "--store", "s3://ragsweep",
                        "--s3-endpoint", endpoint, "--from", str(staging), "--key", "corpora/corpora.tar.gz"],
                       check=True, cwd=ROOT, capture_output=True, timeout=300)
        try:
            kubectl("-n", namespace, "wait", "--for=condition=complete", "job", "-l",
                    f"app.kubernetes.io/instance={RELEASE},app.kubernetes.io/component=injector", "--timeout=1200s",
                    timeout=1300)
        except (AssertionError, subprocess.TimeoutExpired) as e:
            pytest.fail(f"the injector did not complete: {e}\n{health()}")
        yield Release(namespace, core, batch, endpoint, "s3://ragsweep", corpora, forward)
    finally:
        # each step's failure is printed, never raised over the error that ended the run; after a step that
        # got no answer the rest are skipped, not waited out (tests/k8s_health.py)
        steps: list[tuple[str, Callable[[], object]]] = []
        if "forward" in locals():
            steps.append(("stop the port-forward", forward.stop))
        if os.environ.get("RAGSWEEP_K8S_KEEP") != "1":
            steps += [
                ("helm uninstall", checked([*helm, "uninstall", RELEASE, "-n", namespace, "--wait", "--timeout", "5m"],
                                           400)),
                ("delete the namespace", checked(["kubectl", "--kubeconfig", str(cluster), "delete", "namespace",
                                                  namespace, "--wait=true", "--timeout=300s"], 400)),
                ("recycle the volumes", checked(["bash", str(ROOT / "stack" / "k8s" / "cluster.sh"), "recycle"], 120)),
            ]
        run_teardown(steps, say=lambda line: print(line, file=sys.stderr))


def executor(release: Release, tmp: Path, **changes: Any) -> Any:
    """The launcher as `ragsweep sweep run --executor k8s` builds it (the release's settings and
    the state its injector built), with settings changed as a test asks."""
    from harness.state.contents import claim_only
    from harness.sweep.executor import open_store
    from harness.sweep.k8s.executor import K8sExecutor, read_settings, state_json_key

    settings = read_settings(release.core, release.namespace, f"{RELEASE}-launcher")
    if changes:
        settings = settings.model_copy(update=changes)
    store = open_store(settings.store, release.endpoint)
    state = tmp / "state"
    state.mkdir(exist_ok=True)
    (state / "state.json").write_bytes(store.get_bytes(state_json_key(settings)))
    claim_only(state)  # as the launcher does: the state's files are in the cluster
    return K8sExecutor(settings, release.namespace, release.batch, release.core, store, state, timeout_s=1800)


@pytest.mark.cluster_smoke  # make test runs these when the machine has the node's binaries
def test_every_pod_runs_in_a_container_from_a_pinned_digest(release: Release) -> None:
    pods = json.loads(kubectl("-n", release.namespace, "get", "pods", "-o", "json"))["items"]
    services = {p["metadata"]["labels"].get("app.kubernetes.io/component") for p in pods
                if p["status"]["phase"] == "Running"}
    assert {"opensearch", "postgresql", "redis", "object-store", "worker-embedding", "worker-cpu"} <= services
    for pod in pods:
        for status in pod["status"].get("containerStatuses", []) + pod["status"].get("initContainerStatuses", []):
            assert "@sha256:" in status["image"] or status["imageID"].split("@")[-1].startswith("sha256:")
        for container in pod["spec"]["containers"] + pod["spec"].get("initContainers", []):
            assert "@sha256:" in container["image"], (pod["metadata"]["name"], container["image"])
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["runAsNonRoot"] is True


# What a probe pod runs: resolve (DNS is open to every pod of the release), then connect. A drop
# by the policy enforcer is a timeout (nothing answers), a refusal would be a reset: distinct exits.
_PROBE = """
import socket, sys
host, port, tries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
address = socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)[0][4]
for attempt in range(tries):
    try:
        socket.create_connection(address, timeout=6).close()
    except socket.timeout:
        print("timeout", address, flush=True)
        continue
    except OSError as e:
        print("error", address, e, flush=True)
        sys.exit(4)
    print("connected", address, "attempt", attempt + 1, flush=True)
    sys.exit(0)
sys.exit(3)
"""


def _probe(release: Release, component: str, host: str, port: int, tries: int) -> tuple[int, str]:
    """A one-shot pod of the release labelled as COMPONENT (the worker's image and security
    context) connects to HOST:PORT; its exit code (0 connected, 3 timed out every try) and log."""
    worker = release.core.list_namespaced_pod(
        release.namespace, label_selector=f"app.kubernetes.io/instance={RELEASE},"
                                          "app.kubernetes.io/component=worker-cpu").items[0]
    container = worker.spec.containers[0]
    name = f"probe-{component}-{uuid.uuid4().hex[:5]}"
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/instance": RELEASE,
                                              "app.kubernetes.io/component": component}},
        "spec": {
            "restartPolicy": "Never", "automountServiceAccountToken": False,
            "securityContext": release.core.api_client.sanitize_for_serialization(worker.spec.security_context),
            "containers": [{
                "name": "probe", "image": container.image,
                "command": ["python3", "-c", _PROBE, host, str(port), str(tries)],
                "securityContext": release.core.api_client.sanitize_for_serialization(container.security_context),
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                              "limits": {"cpu": "200m", "memory": "128Mi"}},
            }],
        },
    }
    return _run_once(release, name, pod)


def _run_once(release: Release, name: str, pod: Any) -> tuple[int, str]:
    """Create the one-shot POD (named NAME), wait up to 3 minutes for it to end, delete it: its exit code and log."""
    release.core.create_namespaced_pod(release.namespace, pod)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        phase = release.core.read_namespaced_pod(name, release.namespace).status.phase
        if phase in ("Succeeded", "Failed"):
            break
        time.sleep(1)
    status = release.core.read_namespaced_pod(name, release.namespace).status
    log = release.core.read_namespaced_pod_log(name, release.namespace)
    release.core.delete_namespaced_pod(name, release.namespace, grace_period_seconds=0)
    terminated = (status.container_statuses or [None])[0]
    assert terminated is not None and terminated.state.terminated is not None, f"{name} did not finish: {status.phase}"
    return terminated.state.terminated.exit_code, log.strip()


def _dropped_packets() -> float:
    """kube-network-policies' own count of packets it dropped (its metrics on the node)."""
    import urllib.request

    port = os.environ.get("RAGSWEEP_CLUSTER_NETPOL_METRICS_PORT", "9080")  # cluster.sh's default
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("kube_network_policies_packet_count{") and 'verdict="drop"' in line)


def test_network_policies_are_enforced_and_the_check_can_fail(release: Release) -> None:
    """The chart's policies on the node: PostgreSQL admits the injector and not the collector
    (the collector's only peer is the object store). Then the negative control: with the
    enforcer's hook removed, the collector's connection succeeds, so this test would catch an
    enforcer that is up but judges nothing (kube-network-policies' own nftables dataplane is one
    on this kernel)."""
    cluster_sh = ["bash", str(ROOT / "stack" / "k8s" / "cluster.sh")]
    status = subprocess.run([*cluster_sh, "status"], capture_output=True, text=True, timeout=60).stdout
    assert "enforcing" in status, status
    postgresql = (f"{RELEASE}-postgresql", 5432)
    dropped = _dropped_packets()
    allowed, log = _probe(release, "injector", *postgresql, tries=3)
    print(f"\ninjector -> postgresql: exit {allowed}: {log}", file=sys.stderr)
    assert allowed == 0, log
    denied, log = _probe(release, "collector", *postgresql, tries=2)
    print(f"collector -> postgresql: exit {denied}: {log}", file=sys.stderr)
    assert denied == 3, log  # timed out every try: dropped, not refused
    assert _dropped_packets() > dropped
    object_store, log = _probe(release, "collector", f"{RELEASE}-object-store", 9000, tries=3)
    print(f"collector -> object store: exit {object_store}: {log}", file=sys.stderr)
    assert object_store == 0, log
    try:
        off = subprocess.run([*cluster_sh, "up"], env={**os.environ, "RAGSWEEP_CLUSTER_NETWORK_POLICY": "off"},
                             capture_output=True, text=True, timeout=300)
        assert off.returncode == 0, off.stderr[-2000:]
        unenforced, log = _probe(release, "collector", *postgresql, tries=1)
        print(f"collector -> postgresql, enforcement off: exit {unenforced}: {log}", file=sys.stderr)
        assert unenforced == 0, log
    finally:
        on = subprocess.run([*cluster_sh, "up"], capture_output=True, text=True, timeout=300)
    assert on.returncode == 0, on.stderr[-2000:]
    assert "enforcing" in subprocess.run([*cluster_sh, "status"], capture_output=True, text=True, timeout=60).stdout


def _in_thread(result: dict[str, Any], run: Any) -> threading.Thread:
    """``run()`` in a started thread; its return value or its exception lands in ``result``."""
    def target() -> None:
        try:
            result["report"] = run()
        except BaseException as e:  # re-raised in the test's thread by _report
            result["error"] = e
    thread = threading.Thread(target=target)
    thread.start()
    return thread


def _report(result: dict[str, Any]) -> Any:
    if "error" in result:
        raise AssertionError(f"the launcher raised: {result['error']!r}") from result["error"]
    assert "report" in result, "the launcher did not return within the test's wait"
    return result["report"]


def _ctr_pid(namespace: str, pod: str, container: str) -> int:
    """The host pid of a running container's main process (containerd's view, on the node)."""
    status = json.loads(kubectl("-n", namespace, "get", "pod", pod, "-o", "json"))["status"]
    cid = next(s["containerID"] for s in status["containerStatuses"] if s["name"] == container)
    cid = cid.split("://", 1)[1]
    out = subprocess.run(["ctr", "--address", str(CLUSTER_DIR / "containerd" / "containerd.sock"), "-n", "k8s.io",
                          "tasks", "ls"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines()[1:]:
        task, pid, *_ = line.split()
        if task == cid:
            return int(pid)
    raise AssertionError(f"no task for container {cid}")


def _arm_pod(release: Release, sweep_id: str, arm: str, phase: str = "Running", timeout: float = 600) -> str:
    from harness.sweep.k8s.builders import sweep_selector

    selector = f"{sweep_selector(sweep_id, 'arm')},ragsweep.io/arm={arm}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = release.core.list_namespaced_pod(release.namespace, label_selector=selector).items
        for pod in pods:
            if pod.status.phase == phase and all(s.ready for s in pod.status.container_statuses or []):
                return str(pod.metadata.name)
        time.sleep(1)
    raise AssertionError(f"no {phase} pod of arm {arm} within {timeout}s")


def test_an_arm_whose_container_is_killed_retries_and_publishes_once(release: Release, tmp_path: Path) -> None:
    from harness.sweep.catalogue import CATALOGUE

    arm = CATALOGUE.family("fusion").arm("rrf-60")
    launcher = executor(release, tmp_path)
    sweep_id = f"kill-{uuid.uuid4().hex[:6]}"

    result: dict[str, Any] = {}
    worker = _in_thread(result, lambda: launcher.run([arm], sweep_id))
    pod = _arm_pod(release, sweep_id, arm.name)
    pid = _ctr_pid(release.namespace, pod, "arm")
    os.kill(pid, signal.SIGKILL)
    print(f"\nkilled pid {pid} (container arm of pod {pod})", file=sys.stderr)
    worker.join(timeout=1200)
    report = _report(result)
    outcome = report.outcomes[0]
    assert outcome.status == "published", outcome.message
    from harness.sweep.k8s.builders import sweep_selector

    pods = release.core.list_namespaced_pod(release.namespace,
                                            label_selector=f"{sweep_selector(sweep_id, 'arm')}").items
    phases = sorted(p.status.phase for p in pods)
    print(f"pods of {arm.name}: {phases}", file=sys.stderr)
    assert "Failed" in phases and "Succeeded" in phases
    again = launcher.run([arm], sweep_id)
    assert [o.status for o in again.outcomes] == ["skipped"]


def test_an_arm_over_its_memory_limit_is_reported_oomkilled(release: Release, tmp_path: Path) -> None:
    from harness.sweep.catalogue import CATALOGUE

    arm = CATALOGUE.family("fusion").arm("norm-minmax-arith")
    launcher = executor(release, tmp_path)
    small = launcher.settings.arm.model_copy(update={"resources": launcher.settings.arm.resources.model_copy(
        update={"limits": {"cpu": "1", "memory": "300Mi"}, "requests": {"cpu": "100m", "memory": "300Mi"}})})
    launcher = executor(release, tmp_path, arm=small)
    report = launcher.run([arm], f"oom-{uuid.uuid4().hex[:6]}")
    outcome = report.outcomes[0]
    print(f"\n{arm.name}: {outcome.message}", file=sys.stderr)
    assert outcome.status == "failed"
    assert "OOMKilled" in outcome.message


def test_a_missing_image_digest_fails_fast_with_errimagepull(release: Release, tmp_path: Path) -> None:
    from harness.sweep.catalogue import CATALOGUE

    arm = CATALOGUE.family("fusion").arm("norm-l2-arith")
    launcher = executor(release, tmp_path)
    image = launcher.settings.images.cpu.split("@")[0] + "@sha256:" + "0" * 64
    launcher = executor(release, tmp_path, images=launcher.settings.images.model_copy(update={"cpu": image}))
    started = time.monotonic()
    report = launcher.run([arm], f"pull-{uuid.uuid4().hex[:6]}")
    seconds = time.monotonic() - started
    outcome = report.outcomes[0]
    print(f"\n{arm.name} after {seconds:.0f}s: {outcome.message}", file=sys.stderr)
    assert outcome.status == "failed"
    assert "ErrImagePull" in outcome.message or "ImagePullBackOff" in outcome.message
    assert seconds < 180


def test_the_object_store_pod_deleted_mid_sweep_leaves_nothing_half_written(release: Release, tmp_path: Path) -> None:
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.storage import incomplete_reason

    family = CATALOGUE.family("fusion")
    arms = [family.arm(n) for n in ("rrf-30-default", "rrf-30-explicit", "norm-zscore-arith")]
    launcher = executor(release, tmp_path)
    sweep_id = f"s3-{uuid.uuid4().hex[:6]}"

    result: dict[str, Any] = {}
    worker = _in_thread(result, lambda: launcher.run(arms, sweep_id))
    _arm_pod(release, sweep_id, arms[0].name)
    kubectl("-n", release.namespace, "delete", "pod", f"{RELEASE}-object-store-0", "--wait=false")
    print("\nobject store pod deleted", file=sys.stderr)
    worker.join(timeout=1800)
    report = _report(result)
    print(f"port-forward restarted {release.forward.restarts} time(s)", file=sys.stderr)
    for outcome in report.outcomes:
        print(f"  {outcome.arm.name}: {outcome.status} {outcome.message[:200]}", file=sys.stderr)
    kubectl("-n", release.namespace, "wait", "--for=condition=Ready", f"pod/{RELEASE}-object-store-0",
            "--timeout=300s", timeout=320)
    # Nothing half-written: an arm is complete with every artefact's checksum, or not complete at all.
    from harness.sweep.catalogue import config_hash
    from harness.sweep.executor import measurement_identity

    for outcome in report.outcomes:
        digest = config_hash(outcome.arm, measurement_identity(launcher.state, outcome.arm, None,
                                                               launcher.settings.backend))
        reason = incomplete_reason(launcher.store, sweep_id, outcome.arm, digest)
        assert (reason is None) == (outcome.status == "published"), (outcome.arm.name, reason, outcome.message)
    rerun = launcher.run(arms, sweep_id)
    assert all(o.status in ("skipped", "published") for o in rerun.outcomes), [o.message for o in rerun.outcomes]


def test_a_rerank_family_without_gpus_shares_legs_and_scores_in_containers(release: Release, tmp_path: Path) -> None:
    """The release's launcher with gpu.enabled false on the embedded backend: for pool-12, pool-24 and pool-96
    one legs Job, two scores Jobs (parallelism 2) and three arm Jobs run in containers (non-root, read-only
    root, the reranker on a read-only volume, the score cache on the scratch volume), the cross-encoder on
    the CPU. Each arm's files are the bytes jobs.arm writes for it alone here, over the state the injector
    built; none of the arm pods scored a pair but the one it checks; a rerun submits nothing."""
    import dataclasses

    from harness.retrieval.train import train_reranker
    from harness.state import State
    from harness.sweep.catalogue import CATALOGUE, config_hash
    from harness.sweep.executor import measurement_identity
    from harness.sweep.k8s.builders import sweep_selector
    from harness.sweep.k8s.settings import rerank_scorer
    from harness.sweep.storage import is_complete
    from jobs import arm as arm_job
    from tests.test_sweep_legs import DETERMINISTIC
    from tests.test_sweep_task import task_argv

    launcher = executor(release, tmp_path)
    settings = launcher.settings.model_copy(update={
        "backend": "embedded", "gpu": launcher.settings.gpu.model_copy(update={"enabled": False})})
    assert rerank_scorer(settings) == ("torch", "cpu")
    state = tmp_path / "pulled"  # the injector's state, as the pods unpack it
    subprocess.run([sys.executable, "-m", "jobs.sync", "pull", "--store", release.store_url, "--s3-endpoint",
                    release.endpoint, "--key", launcher.settings.state_key, "--out", str(state)],
                   check=True, cwd=ROOT, capture_output=True, timeout=600)
    reranker = tmp_path / "reranker"
    train_reranker(State.open(state).corpora[0], reranker, seed=1, steps=2, batch_size=4)
    launcher = dataclasses.replace(launcher, settings=settings, reranker=reranker)
    pool = CATALOGUE.family("pool")
    arms = [pool.arm(name) for name in ("pool-12", "pool-24", "pool-96")]
    sweep_id = f"share-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    report = launcher.run(arms, sweep_id)
    wall = time.monotonic() - started
    assert [o.status for o in report.outcomes] == ["published"] * 3, [(o.arm.name, o.message) for o in report.outcomes]

    jobs = release.batch.list_namespaced_job(release.namespace, label_selector=sweep_selector(sweep_id, "arm")).items
    assert sorted(j.metadata.name.split("-", 1)[0] for j in jobs) == ["arm", "arm", "arm", "legs", "scores", "scores"]
    assert all(j.status.succeeded == 1 for j in jobs), [(j.metadata.name, j.status.failed) for j in jobs]
    pods = release.core.list_namespaced_pod(release.namespace, label_selector=sweep_selector(sweep_id, "arm")).items
    for pod in pods:
        (status,) = pod.status.container_statuses
        assert status.image_id.split("@")[-1].startswith("sha256:"), status.image_id
        assert pod.spec.containers[0].image == launcher.settings.images.cpu
        assert "nvidia.com/gpu" not in (pod.spec.containers[0].resources.limits or {})
    alone = tmp_path / "alone"
    for arm in arms:
        digest = config_hash(arm, measurement_identity(launcher.state, arm, reranker, "embedded", ("torch", "cpu")))
        assert is_complete(launcher.store, sweep_id, arm, digest), arm.name
        assert arm_job.main(task_argv(tmp_path, "arm", [arm], state=state, sweep_id=sweep_id, store=str(alone),
                                      reranker=reranker)) == 0
        folder = f"sweeps/{sweep_id}/{arm.family}/{arm.name}"
        for name in DETERMINISTIC:
            assert launcher.store.get_bytes(f"{folder}/{name}") == (alone / folder / name).read_bytes(), name
        runinfo = json.loads(launcher.store.get_text(f"{folder}/runinfo.json"))
        assert (runinfo["rerank"]["scored"], runinfo["rerank"]["checked"]) == (0, 1), runinfo["rerank"]
        assert len(runinfo["legs"]["published_scores"]["parts"]) == 2
    again = launcher.run(arms, sweep_id)
    assert [o.status for o in again.outcomes] == ["skipped"] * 3
    print(f"\nsharing in containers, {sweep_id}: {wall:.0f}s for "
          + ", ".join(sorted(j.metadata.name for j in jobs)), file=sys.stderr)


def test_a_gpu_arm_on_a_gpu_less_node_is_named_unschedulable_not_dropped(release: Release) -> None:
    """The rerank arm keeps its GPU request, node selector and toleration; the real scheduler
    finds no node for it, and the watcher reports the scheduler's words at once."""
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.k8s.builders import arm_job_name, build_arm_job, sweep_selector
    from harness.sweep.k8s.executor import read_settings
    from harness.sweep.k8s.submit import create_job, delete_job
    from harness.sweep.k8s.watch import JobWatcher

    settings = read_settings(release.core, release.namespace, f"{RELEASE}-launcher")
    arm = next(a for a in CATALOGUE.arms if a.needs_reranker)
    sweep_id = f"gpu-{uuid.uuid4().hex[:6]}"
    job = build_arm_job(settings, arm, sweep_id, reranker_key="rerankers/none/reranker.tar.gz")
    pod = job.spec.template.spec
    assert pod.node_selector == {"nvidia.com/gpu.present": "true"}
    assert any(t.key == "nvidia.com/gpu" for t in pod.tolerations)
    assert pod.containers[0].resources.limits["nvidia.com/gpu"] == "1"
    create_job(release.batch, release.namespace, job)
    started = time.monotonic()
    watcher = JobWatcher(release.batch, release.core, release.namespace, sweep_selector(sweep_id, "arm"), 300.0)
    (result,) = watcher.wait([arm_job_name(sweep_id, arm)])
    print(f"\n{arm.name} after {time.monotonic() - started:.0f}s: {result.describe()}", file=sys.stderr)
    assert (result.succeeded, result.reason, result.pod_reason) == (False, "Unschedulable", "Pending")
    # the real scheduler's words (kube-scheduler 1.37): the GPU selector above is what no node matches
    assert "didn't match Pod's node affinity/selector" in result.message, result.message
    delete_job(release.batch, release.namespace, arm_job_name(sweep_id, arm))


# What a pod labelled as an arm asks the release's OpenSearch (the NetworkPolicy admits arms to it): its
# cluster health over TLS with the release's password (from the arm's own environment: the URL the chart
# assembles from the Secret), with none, with a wrong one, over plain HTTP on the TLS port, and a bare
# connection to OpenSearch's own port (9201, bound to the pod's loopback behind nginx).
_OPENSEARCH_PROBE = """
import base64, json, os, socket, ssl, sys, urllib.error, urllib.request
from urllib.parse import unquote, urlsplit
url = urlsplit(os.environ["RAGSWEEP_OPENSEARCH_URL"])
tls = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
def status(base, password=None):
    request = urllib.request.Request(base + "/_cluster/health")
    if password is not None:
        token = base64.b64encode(f"{unquote(url.username)}:{password}".encode()).decode()
        request.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(request, context=tls, timeout=20) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError as e:
        return type(e).__name__
def connect(port):
    try:
        socket.create_connection((url.hostname, port), timeout=6).close()
        return "connected"
    except OSError as e:
        return type(e).__name__
https, http = f"https://{url.hostname}:{url.port}", f"http://{url.hostname}:{url.port}"
print(json.dumps({"scheme": url.scheme, "password": status(https, unquote(url.password)), "none": status(https),
                  "wrong": status(https, unquote(url.password) + "x"), "plain_http": status(http),
                  "port_9201": connect(9201)}))
"""


def _run_pod(release: Release, component: str, command: list[str], env: list[Any], volumes: list[Any],
             mounts: list[Any]) -> tuple[int, str]:
    """A one-shot pod of the release labelled as COMPONENT, in the worker's image and security context,
    with ENV and VOLUMES as the launcher's Job builders give them; its exit code and log."""
    from kubernetes import client as k

    worker = release.core.list_namespaced_pod(
        release.namespace, label_selector=f"app.kubernetes.io/instance={RELEASE},"
                                          "app.kubernetes.io/component=worker-cpu").items[0]
    container = worker.spec.containers[0]
    name = f"probe-{component}-{uuid.uuid4().hex[:5]}"
    pod = k.V1Pod(
        metadata=k.V1ObjectMeta(name=name, labels={"app.kubernetes.io/instance": RELEASE,
                                                   "app.kubernetes.io/component": component}),
        spec=k.V1PodSpec(restart_policy="Never", automount_service_account_token=False,
                         security_context=worker.spec.security_context, volumes=volumes or None,
                         containers=[k.V1Container(
                             name="probe", image=container.image, command=command, env=env,
                             volume_mounts=mounts or None, security_context=container.security_context,
                             resources=k.V1ResourceRequirements(requests={"cpu": "50m", "memory": "64Mi"},
                                                                limits={"cpu": "500m", "memory": "256Mi"}))]))
    return _run_once(release, name, pod)


@pytest.mark.cluster_smoke  # make test runs these when the machine has the node's binaries
def test_opensearch_answers_an_arm_pod_only_with_the_releases_password(release: Release) -> None:
    """An arm pod reaches OpenSearch through the pod's nginx only: over TLS (the release's CA), and with the
    password of the release's Secret; without it, or with a wrong one, nginx answers 401 before OpenSearch
    sees the request; plain HTTP is refused, and OpenSearch's own port is not reachable from another pod."""
    from harness.sweep.k8s.env import ca_volume, service_env
    from harness.sweep.k8s.executor import read_settings

    settings = read_settings(release.core, release.namespace, f"{RELEASE}-launcher")
    assert settings.opensearch_ca is not None, "the release's OpenSearch speaks plain HTTP (opensearch.tls.enabled)"
    volumes, mounts = ca_volume(settings)
    code, log = _run_pod(release, "arm", ["python3", "-c", _OPENSEARCH_PROBE], service_env(settings), volumes,
                         mounts)
    print(f"\narm pod -> opensearch: exit {code}: {log}", file=sys.stderr)
    assert code == 0, log
    seen = json.loads(log.splitlines()[-1])
    assert seen["scheme"] == "https"
    assert (seen["password"], seen["none"], seen["wrong"]) == (200, 401, 401), seen
    assert seen["plain_http"] == 400, seen  # nginx: "The plain HTTP request was sent to HTTPS port"
    assert seen["port_9201"] != "connected", seen


@pytest.mark.cluster_smoke  # make test runs these when the machine has the node's binaries
def test_the_collector_runs_as_its_own_account_which_may_not_call_the_api(release: Release, tmp_path: Path) -> None:
    """A sweep's collector Job runs as <release>-collector, not as the arms' account; that account, like the
    arms', is refused every API call the launcher's account may make (the contrast: the launcher's yes)."""
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.executor import publish_catalogue
    from harness.sweep.k8s.builders import sweep_selector

    family = CATALOGUE.family("fusion")
    launcher = executor(release, tmp_path)
    sweep_id = f"collect-{uuid.uuid4().hex[:6]}"
    publish_catalogue(launcher.store, sweep_id, CATALOGUE)  # as `sweep run --executor k8s` does
    report = launcher.run([family.arm(family.control), family.arm("rrf-60")], sweep_id)
    assert [o.status for o in report.outcomes] == ["published"] * 2, [o.message for o in report.outcomes]
    result = launcher.collect(sweep_id, "fusion")
    assert result.succeeded, result.describe()
    pods = release.core.list_namespaced_pod(release.namespace,
                                            label_selector=sweep_selector(sweep_id, "collector")).items
    arm_pods = release.core.list_namespaced_pod(release.namespace, label_selector=sweep_selector(sweep_id, "arm")).items
    accounts = {p.spec.service_account_name for p in pods}, {p.spec.service_account_name for p in arm_pods}
    print(f"\ncollector pods run as {accounts[0]}, arm pods as {accounts[1]}", file=sys.stderr)
    assert accounts == ({f"{RELEASE}-collector"}, {f"{RELEASE}-arm"})
    assert all(p.spec.automount_service_account_token is False for p in pods)
    assert launcher.store.exists(f"sweeps/{sweep_id}/comparison.json")
    answers = {}
    for who in ("collector", "arm", "launcher"):
        subject = f"system:serviceaccount:{release.namespace}:{RELEASE}-{who}"
        answers[who] = [kubectl("auth", "can-i", verb, resource, "-n", release.namespace, "--as", subject,
                                check=False).strip() for verb, resource in (("create", "jobs"), ("list", "pods"))]
    print(f"can-i create jobs, list pods: {answers}", file=sys.stderr)
    assert answers == {"collector": ["no", "no"], "arm": ["no", "no"], "launcher": ["yes", "yes"]}


def test_the_janitor_may_delete_only_the_namespaces_ci_namespace_made(release: Release) -> None:
    """manifests/ci-janitor.yaml's account and roles (its CronJob aside: it needs an image with kubectl)
    applied to the cluster: `kubectl auth can-i` answers no for the janitor outside its namespaces, and a
    real request (a server dry run) is refused for kube-system and default and admitted for the release's
    namespace, which stack/k8s/ci-namespace.sh made and bound the janitor into."""
    import yaml

    docs = [d for d in yaml.safe_load_all((ROOT / "manifests" / "ci-janitor.yaml").read_text())
            if d and d["kind"] != "CronJob"]
    applied = subprocess.run(["kubectl", "--kubeconfig", str(KUBECONFIG), "apply", "-f", "-"],
                             input=yaml.safe_dump_all(docs), capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr
    janitor = "system:serviceaccount:ci-system:ragsweep-ci-janitor"
    can_i = {ns: kubectl("auth", "can-i", "delete", f"namespace/{ns}", "--as", janitor, check=False).strip()
             for ns in ("kube-system", "default")}
    can_i["list namespaces"] = kubectl("auth", "can-i", "list", "namespaces", "--as", janitor, check=False).strip()
    dry = {}
    for ns in ("kube-system", "default", release.namespace):
        done = subprocess.run(["kubectl", "--kubeconfig", str(KUBECONFIG), "delete", "namespace", ns,
                               "--dry-run=server", "--as", janitor], capture_output=True, text=True, timeout=60)
        dry[ns] = "deleted" if done.returncode == 0 and "server dry run" in done.stdout else done.stderr.strip()
    print(f"\njanitor can-i: {can_i}\njanitor delete --dry-run=server: {dry}", file=sys.stderr)
    assert can_i == {"kube-system": "no", "default": "no", "list namespaces": "yes"}
    assert "Forbidden" in dry["kube-system"] and "Forbidden" in dry["default"], dry
    assert dry[release.namespace] == "deleted", dry


def test_an_upgrade_keeps_every_generated_secret_and_helm_test_passes(release: Release) -> None:
    """`helm upgrade --reuse-values --set tests.enabled=true` renders the chart again against the live API
    server: every Secret it generated (OpenSearch's certificate, CA and password, the PostgreSQL, Redis and
    object-store credentials) keeps its bytes (the templates' lookup), and `helm test` then passes: each
    service answers its own client, and OpenSearch refuses the harness's client without the password (its test
    pod exits non-zero when a request without it is answered). The hook pods are deleted once they succeed, so
    the suites' phases are what is left to read."""
    def secrets() -> dict[str, Any]:
        items = release.core.list_namespaced_secret(
            release.namespace, label_selector=f"app.kubernetes.io/instance={RELEASE}").items
        return {s.metadata.name: s.data for s in items if s.type != "helm.sh/release.v1"}

    before = secrets()
    helm = [str(BIN / "helm"), "--kubeconfig", str(KUBECONFIG)]
    upgrade = subprocess.run([*helm, "upgrade", RELEASE, str(ROOT / "charts" / "ragsweep"), "-n", release.namespace,
                              "--reuse-values", "--set", "tests.enabled=true", "--wait", "--timeout", "10m"],
                             capture_output=True, text=True, timeout=700)
    assert upgrade.returncode == 0, upgrade.stderr[-2000:]
    after = secrets()
    print(f"\nsecrets kept across the upgrade: {sorted(before)}", file=sys.stderr)
    assert {f"{RELEASE}-opensearch-ca", f"{RELEASE}-postgresql", f"{RELEASE}-object-store"} <= set(before)
    assert after == before
    test = subprocess.run([*helm, "test", RELEASE, "-n", release.namespace, "--timeout", "10m"],
                          capture_output=True, text=True, timeout=700)
    suites = [line.split(":", 1)[1].strip() for line in test.stdout.splitlines() if line.startswith("TEST SUITE:")]
    phases = [line.split(":", 1)[1].strip() for line in test.stdout.splitlines() if line.startswith("Phase:")]
    print(f"helm test: {dict(zip(suites, phases, strict=True))}", file=sys.stderr)
    assert test.returncode == 0, test.stderr[-2000:]
    assert sorted(suites) == [f"{RELEASE}-test-{s}" for s in ("object-store", "opensearch", "postgresql", "redis")]
    assert phases == ["Succeeded"] * 4
