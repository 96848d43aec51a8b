"""A sweep with a release of its own: ``ragsweep sweep run --executor k8s --corpus NAME=DIR ...``.

What stack/k8s/sweep.sh did in shell, here on the kubernetes client and boto3:

1. an ephemeral namespace by stack/k8s/ci-namespace.sh (the one rule every caller uses: Pod Security
   "restricted", an expiry label, the janitor's RoleBinding; a namespace it did not make is refused);
2. ``helm install`` of charts/ragsweep with the images' digests (helm is the one tool it runs), every
   service pod Ready;
3. the object store reached through ``kubectl port-forward``, restarted while the sweep runs (its pod
   can be deleted or rescheduled), with the credentials of the release's own Secret;
4. every corpus uploaded under its name (one archive, ``corpora/corpora.tar.gz``), so the injector
   builds one state of them all: two corpora, a sweep that gives verdicts;
5. the injector Job waited for, with its build-state container's last line each minute; its state
   downloaded to ``OUT/k8s-sweeps/<namespace>/state``, so a local sweep can measure the same state;
6. the arms as Jobs and the collector Job (harness.sweep.k8s.executor), once per backend asked for
   (``helm upgrade`` of ``jobs.backend`` between them; one injector for both);
7. every sweep file copied beside the logs, each step's time in ``timings.json`` there, and the
   release and namespace removed (``--keep`` keeps them; the janitor deletes them once expired).

``kubectl get pods -o wide``'s facts (phase, node, IP, each container's image digest) are appended to
``pods.log`` there every 20 s while it runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, RefusedError, UsageError
from harness.objectstore import S3Store, client_config
from harness.sweep.k8s.submit import ClusterError
from harness.sweep.k8s.watch import finished_condition

ROOT = Path(__file__).resolve().parents[3]
_NAME = r"^[a-z0-9][a-z0-9._-]{0,99}$"


@dataclass(frozen=True)
class LaunchPlan:
    """One release's sweep: the corpora it injects and where the chart, its values and its logs are."""

    corpora: tuple[tuple[str, Path], ...]
    out: Path  # a local folder: var/ (sweeps/<id>/ and k8s-sweeps/<namespace>/)
    values: tuple[Path, ...]
    helm: str
    release: str = "ragsweep"
    namespace: str | None = None
    pipeline: str | None = None
    ttl_hours: int = 4
    keep: bool = False
    backends: tuple[str, ...] = ()  # () measures what the release's settings say
    port: int = 19000
    injector_timeout_s: float = 7200.0


def parse_corpora(items: Sequence[str]) -> tuple[tuple[str, Path], ...]:
    """``NAME=DIR`` each (a bare DIR is the synthetic corpus), sorted by name; one line for a bad one."""
    import re

    out: dict[str, Path] = {}
    for item in items:
        name, _, folder = item.partition("=") if "=" in item else ("synthetic", "", item)
        if not re.match(_NAME, name):
            raise UsageError(f"--corpus {item}: the name {name!r} is not lower-case letters, digits, '.', '_', '-'")
        if name in out:
            raise UsageError(f"--corpus {name} given twice")
        path = Path(folder).resolve()
        if not path.is_dir():
            raise UsageError(f"--corpus {item}: {folder} is not a folder (make synth; make qmsum)")
        out[name] = path
    if not out:
        raise UsageError("--corpus NAME=DIR: give each corpus the release's injector builds the state from")
    return tuple(sorted(out.items()))


def corpora_key(corpora: Sequence[tuple[str, Path]]) -> str:
    """sha256 over every corpus's name, file names and bytes: the namespace's and pipeline's key."""
    h = hashlib.sha256()
    for name, folder in corpora:
        h.update(f"corpus {name}\n".encode())
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(f"{path.relative_to(folder).as_posix()} {hashlib.sha256(path.read_bytes()).hexdigest()}\n"
                     .encode())
    return h.hexdigest()[:10]


def say(text: str) -> None:
    print(f"[sweep-k8s {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def _run(argv: Sequence[str], what: str, log: Path | None = None, timeout: float = 1200.0) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if log is not None:
        with log.open("a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise ClusterError(f"{what} failed (exit {done.returncode}): {tail}"
                           + (f" (log {log})" if log else ""))
    return done.stdout


class _Every(threading.Thread):
    """``action`` every ``period`` seconds until stopped (a failure is logged, never raised)."""

    def __init__(self, period: float, action: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.period, self.action, self.stop = period, action, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.period):
            try:
                self.action()
            except Exception as e:  # the log is a by-product: the sweep goes on
                print(f"note: {e}", file=sys.stderr)


def _pod_lines(core: Any, namespace: str) -> str:
    rows = [f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}", "NAME PHASE NODE IP CONTAINERS IMAGE_IDS"]
    for pod in core.list_namespaced_pod(namespace).items:
        statuses = pod.status.container_statuses or []
        rows.append(" ".join([pod.metadata.name, str(pod.status.phase), str(pod.spec.node_name),
                              str(pod.status.pod_ip), ",".join(s.name for s in statuses) or "-",
                              ",".join(str(s.image_id) for s in statuses) or "-"]))
    return "\n".join(rows) + "\n\n"


class PortForward:
    """``kubectl port-forward svc/<release>-object-store PORT:9000``, restarted until stopped."""

    def __init__(self, namespace: str, service: str, port: int, log: Path) -> None:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise UsageError("no kubectl on PATH: the launcher reaches the release's object store through "
                             "`kubectl port-forward`")
        self.argv = [kubectl, "-n", namespace, "port-forward", f"svc/{service}", f"{port}:9000"]
        self.port, self.log, self.stopped = port, log, threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        with self.log.open("ab") as log:
            while not self.stopped.is_set():
                self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log)
                code = self.proc.wait()
                log.write(f"[{time.strftime('%H:%M:%S')}] port-forward exited ({code}); restarting\n".encode())
                log.flush()
                self.stopped.wait(1.0)

    def start(self, wait_s: float = 30.0) -> str:
        self.thread.start()
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            with socket.socket() as s:
                s.settimeout(1.0)
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return f"http://127.0.0.1:{self.port}"
            time.sleep(0.2)
        raise ClusterError(f"kubectl port-forward to the object store did not listen on 127.0.0.1:{self.port} "
                           f"within {wait_s:g}s (log {self.log}); is the port taken?")

    def close(self) -> None:
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def release_store(core: Any, namespace: str, release: str, spec: str, endpoint: str) -> S3Store:
    """The release's bucket at ``endpoint`` with the credentials of its own Secret (read, never printed)."""
    import boto3

    data = core.read_namespaced_secret(f"{release}-object-store", namespace).data or {}
    key_id, secret = (base64.b64decode(data[k]).decode() for k in ("access-key-id", "secret-access-key"))
    client = boto3.session.Session(aws_access_key_id=key_id, aws_secret_access_key=secret,
                                   region_name="us-east-1").client("s3", endpoint_url=endpoint, config=client_config())
    bucket, _, prefix = spec.removeprefix("s3://").partition("/")
    return S3Store(bucket, endpoint, prefix=prefix, client=client)


def wait_injector(batch: Any, core: Any, namespace: str, release: str, timeout_s: float) -> None:
    """Until the injector Job completes (a failed one: its pod's last lines, and an error)."""
    selector = f"app.kubernetes.io/instance={release},app.kubernetes.io/component=injector"
    started, last_said = time.monotonic(), 0.0
    while True:
        jobs = batch.list_namespaced_job(namespace, label_selector=selector).items
        done = [finished_condition(j) for j in jobs]
        if any(d is not None and d[0] for d in done):
            return
        failed = next((d for d in done if d is not None and not d[0]), None)
        if failed is not None:
            for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
                for c in ("fetch-corpora", "build-state", "publish-state"):
                    try:
                        tail = core.read_namespaced_pod_log(pod.metadata.name, namespace, container=c, tail_lines=10)
                    except Exception:  # a container that never started has no log
                        continue
                    print(f"--- {pod.metadata.name}/{c}\n{tail}", file=sys.stderr)
            raise ClusterError(f"the injector Job failed ({failed[1]}: {failed[2]}); "
                               f"kubectl -n {namespace} describe job -l {selector}")
        waited = time.monotonic() - started
        if waited > timeout_s:
            raise ClusterError(f"the injector Job did not finish within {timeout_s:g}s")
        if waited - last_said >= 60:
            last_said = waited
            say(f"  injector: {_last_line(core, namespace, selector)}")
        time.sleep(10)


def _last_line(core: Any, namespace: str, selector: str) -> str:
    for pod in core.list_namespaced_pod(namespace, label_selector=selector).items:
        try:  # progress bars redraw with \r
            text = core.read_namespaced_pod_log(pod.metadata.name, namespace, container="build-state", tail_lines=5)
        except Exception:
            continue
        lines = [x.strip() for x in str(text).replace("\r", "\n").splitlines() if x.strip()]
        if lines:
            return lines[-1][:160]
    return "no output from build-state yet"


def launch(plan: LaunchPlan, args: Any, *, kube: Callable[[], tuple[Any, Any]]) -> int:
    """The whole sweep in a release of its own; ``args`` are `sweep run`'s (arms, manifest, reranker, ...)."""
    from harness.sweep.k8s.executor import Release, read_settings, run_from_args
    from harness.sweep.k8s.sync import pull, push

    started, timings = time.monotonic(), {}
    key = corpora_key(plan.corpora)
    namespace = plan.namespace or f"ragsweep-{key}-{int(time.time()) % 1_000_000:06d}"
    logdir = plan.out.resolve() / "k8s-sweeps" / namespace
    batch, core = kube()  # a kubeconfig that cannot be loaded stops it before a namespace is made
    made = subprocess.run(["bash", str(ROOT / "stack" / "k8s" / "ci-namespace.sh"), namespace,
                           plan.pipeline or f"sweep-{key}", str(plan.ttl_hours)], cwd=ROOT, timeout=120)
    if made.returncode == 3:
        raise RefusedError(f"namespace {namespace} exists and was not made for this sweep's pipeline")
    if made.returncode != 0:
        raise ClusterError(f"stack/k8s/ci-namespace.sh {namespace}: exit {made.returncode}")
    logdir.mkdir(parents=True, exist_ok=True)
    say(f"namespace {namespace} (restricted Pod Security); logs in {logdir}")

    def log_pods() -> None:
        with (logdir / "pods.log").open("a", encoding="utf-8") as f:
            f.write(_pod_lines(core, namespace))

    pods = _Every(20.0, log_pods)
    pods.start()
    forward: PortForward | None = None
    rc = 1
    try:
        names = json.dumps([name for name, _ in plan.corpora])
        say(f"helm install {plan.release} (every service pod Ready, up to 15 min); corpora {names}")
        t = time.monotonic()
        _run([plan.helm, "install", plan.release, str(ROOT / "charts" / "ragsweep"), "-n", namespace,
              *[a for v in plan.values for a in ("-f", str(v))], "--set-json", f"corpus.names={names}",
              "--wait", "--timeout", "15m"], "helm install", logdir / "helm-install.log")
        timings["install"] = time.monotonic() - t
        (logdir / "pods-installed.txt").write_text(_pod_lines(core, namespace))
        say(f"release installed in {timings['install']:.0f}s")

        forward = PortForward(namespace, f"{plan.release}-object-store", plan.port, logdir / "port-forward.log")
        endpoint = forward.start()
        settings = read_settings(core, namespace, f"{plan.release}-launcher")
        store = release_store(core, namespace, plan.release, settings.store, endpoint)
        t = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="ragsweep-corpora-") as staging:
            for name, folder in plan.corpora:
                shutil.copytree(folder, Path(staging) / name)
            push(store, Path(staging), "corpora/corpora.tar.gz")
        timings["upload"] = time.monotonic() - t
        say(f"corpora uploaded in {timings['upload']:.0f}s; waiting for the injector Job "
            "(inject, index through the Celery workers, settle)")

        t = time.monotonic()
        wait_injector(batch, core, namespace, plan.release, plan.injector_timeout_s)
        timings["injector"] = time.monotonic() - t
        say(f"injector complete in {timings['injector']:.0f}s")
        state = logdir / "state"
        pull(store, "state/state.tar.gz", state)
        say(f"the injector's state: {state}")

        rc = 0
        for backend in plan.backends or (settings.backend,):
            if backend != read_settings(core, namespace, f"{plan.release}-launcher").backend:
                say(f"helm upgrade: the arms measure the {backend} backend")
                _run([plan.helm, "upgrade", plan.release, str(ROOT / "charts" / "ragsweep"), "-n", namespace,
                      "--reuse-values", "--set", f"jobs.backend={backend}", "--wait", "--timeout", "10m"],
                     "helm upgrade", logdir / "helm-install.log")
            t = time.monotonic()
            release = Release(namespace=namespace, launcher_config=f"{plan.release}-launcher", s3_endpoint=endpoint)
            code = run_from_args(replace_args(args, state=state, backend=None), release, store=store)
            timings[f"arms+collector ({backend})"] = time.monotonic() - t
            say(f"arms and collector on the {backend} backend: {timings[f'arms+collector ({backend})']:.0f}s")
            rc = rc or code
        copied = store.list("sweeps/")
        for k in copied:
            target = logdir / "store" / k
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(store.get_bytes(k))
        say(f"{len(copied)} sweep files copied to {logdir / 'store'}")
        return rc
    except HarnessError:
        rc = 1
        raise
    finally:
        pods.stop.set()
        if forward is not None:
            forward.close()
        timings["total"] = time.monotonic() - started
        (logdir / "timings.json").write_text(json.dumps({k: round(v, 1) for k, v in timings.items()}, indent=2) + "\n")
        _teardown(plan, namespace, core)
        say(f"sweep on Kubernetes done in {timings['total']:.0f}s (rc {rc})")


def replace_args(args: Any, **changes: Any) -> Any:
    """A copy of `sweep run`'s parsed arguments with ``changes`` (the launcher's state, no --backend)."""
    import argparse

    return argparse.Namespace(**{**vars(args), **changes})


def _teardown(plan: LaunchPlan, namespace: str, core: Any) -> None:
    if plan.keep:
        say(f"--keep: namespace {namespace} kept (helm uninstall {plan.release} -n {namespace}; "
            f"kubectl delete namespace {namespace})")
        return
    say(f"tearing down: helm uninstall, namespace {namespace} deleted")
    subprocess.run([plan.helm, "uninstall", plan.release, "-n", namespace, "--wait", "--timeout", "5m"],
                   capture_output=True, timeout=400, cwd=ROOT)
    try:
        core.delete_namespace(namespace)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            core.read_namespace(namespace)
            time.sleep(2)
    except Exception:  # 404: gone (the loop's way out); anything else: the janitor deletes it once expired
        pass
    # the single-node cluster's released volumes: wiped and offered again (the embedding cache's kept)
    subprocess.run(["bash", str(ROOT / "stack" / "k8s" / "cluster.sh"), "recycle"], capture_output=True,
                   timeout=300, cwd=ROOT)


__all__ = ["LaunchPlan", "corpora_key", "launch", "parse_corpora"]
