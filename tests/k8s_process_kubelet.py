"""A process kubelet for the Kubernetes test bed (stack/k8s): pods bound to the fake nodes run
as local processes, and their real outcome goes back to the API server.

kwok keeps the nodes Ready but has no pod stage here (stack/k8s/kwok.yaml), so nothing else
touches these pods. For each pod scheduled onto one of ``--node``:

* the environment is resolved the way a kubelet does it: ``value`` (with ``$(VAR)``
  references), ``secretKeyRef`` / ``configMapKeyRef`` read from the API server, ``fieldRef``
  for the pod's own name, namespace, node and IPs; nothing of this process's environment
  leaks in but PATH, LANG and HOME;
* volumes: every ``emptyDir`` is a folder of the pod; a container's ``mountPath`` is translated
  to that folder in its command, args, env values (every string of a JSON one: a Job's task) and working
  dir (there is no mount namespace), so an init container and the main container share a volume as in a pod;
* the image is not pulled: ``python`` in a command is this interpreter (the image's Python
  is the project's venv), and the code is the checkout (PYTHONPATH);
* init containers run one after another, then the containers; stdout and stderr are written
  to a CRI-format log file per container, registered as a kwok ``Logs`` object (owned by
  the pod), so ``kubectl logs`` / ``read_namespaced_pod_log`` go API server -> kwok's kubelet
  endpoint -> that file, as with a real node;
* the pod's status is patched as a kubelet reports it: Pending, Running, then Succeeded or
  Failed with each container's ``terminated`` exit code, reason and, under
  ``terminationMessagePolicy: FallbackToLogsOnError``, the log's tail as its message;
* a pod deleted while it runs gets SIGTERM, then SIGKILL after its grace period, and is
  then removed (grace period 0), as a kubelet confirms a deletion.

Not simulated: images, resource limits (except the fault below), security contexts,
probes, restarts in place (restartPolicy Never is all the launcher uses).

Fault injection (``--address-space-limit LABEL=VALUE:SIZE``): the main containers of pods
with that label run with RLIMIT_AS capped at SIZE, as on a node whose memory is too small
for them. What then fails, and how the program reports it, is the program's own doing.

    python tests/k8s_process_kubelet.py --kubeconfig var/k8s/kubeconfig --workdir DIR \\
        --node ragsweep-cpu-0 --node ragsweep-gpu-0 [--address-space-limit ragsweep.io/arm=X:1Gi]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import functools
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent
SMP = "application/strategic-merge-patch+json"
_VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)|\$\$")
_SIZE = re.compile(r"^(\d+)(Ki|Mi|Gi|Ti)?$")
MESSAGE_LINES = 80
MESSAGE_BYTES = 4096


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_size(text: str) -> int:
    match = _SIZE.match(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size such as 1Gi or 800Mi")
    unit = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}.get(match.group(2) or "", 1)
    return int(match.group(1)) * unit


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: defined names are replaced, $$ is a literal $."""
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _VAR_REF.sub(sub, value)


@dataclass
class Fault:
    label: str
    value: str
    address_space: int

    @classmethod
    def parse(cls, text: str) -> Fault:
        selector, _, size = text.rpartition(":")
        label, sep, value = selector.partition("=")
        if not sep or not label or not size:
            raise argparse.ArgumentTypeError(f"{text!r}: expected LABEL=VALUE:SIZE")
        return cls(label, value, parse_size(size))

    def matches(self, pod: Any) -> bool:
        return (pod.metadata.labels or {}).get(self.label) == self.value


@dataclass
class Container:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    started: str
    pumps: list[threading.Thread] = field(default_factory=list)


class PodRun:
    """One pod's life on the node, in its own thread."""

    def __init__(self, kubelet: ProcessKubelet, pod: Any) -> None:
        self.kubelet = kubelet
        self.pod = pod
        self.ns = pod.metadata.namespace
        self.name = pod.metadata.name
        self.uid = pod.metadata.uid
        self.dir = kubelet.workdir / "pods" / f"{self.ns}_{self.name}_{self.uid[:8]}"
        self.deleted = threading.Event()
        self.grace_s = 30.0
        self.running: list[Container] = []
        self.lock = threading.Lock()

    # -- the API side

    def patch_status(self, status: dict[str, Any]) -> None:
        self.kubelet.call(lambda: self.kubelet.core.patch_namespaced_pod_status(
            self.name, self.ns, {"status": status}, _content_type=SMP))

    def register_logs(self, containers: list[str]) -> None:
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
            "metadata": {"name": self.name, "namespace": self.ns, "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod", "name": self.name, "uid": self.uid}]},
            "spec": {"logs": [{"containers": [c], "logsFile": str(self.log_path(c))} for c in containers]},
        }
        try:
            self.kubelet.custom.create_namespaced_custom_object("kwok.x-k8s.io", "v1alpha1", self.ns, "logs", body)
        except Exception as e:  # a Logs object left by a pod of the same name: replace it
            if getattr(e, "status", None) != 409:
                raise
            self.kubelet.custom.delete_namespaced_custom_object("kwok.x-k8s.io", "v1alpha1", self.ns, "logs",
                                                                self.name)
            self.kubelet.custom.create_namespaced_custom_object("kwok.x-k8s.io", "v1alpha1", self.ns, "logs",
                                                                body)

    def secret_value(self, name: str, key: str, optional: bool) -> str | None:
        try:
            secret = self.kubelet.call(functools.partial(self.kubelet.core.read_namespaced_secret, name, self.ns))
        except Exception as e:
            if optional:
                return None
            raise RuntimeError(f"secret {self.ns}/{name}: {getattr(e, 'reason', e)}") from e
        data = secret.data or {}
        if key not in data:
            if optional:
                return None
            raise RuntimeError(f"couldn't find key {key} in Secret {self.ns}/{name}")
        return base64.b64decode(data[key]).decode("utf-8")

    def configmap_value(self, name: str, key: str, optional: bool) -> str | None:
        try:
            read = functools.partial(self.kubelet.core.read_namespaced_config_map, name, self.ns)
            configmap = self.kubelet.call(read)
            data = configmap.data or {}
        except Exception as e:
            if optional:
                return None
            raise RuntimeError(f"configmap {self.ns}/{name}: {getattr(e, 'reason', e)}") from e
        if key not in data and not optional:
            raise RuntimeError(f"couldn't find key {key} in ConfigMap {self.ns}/{name}")
        return data.get(key)

    # -- the node side

    def log_path(self, container: str) -> Path:
        return self.dir / "logs" / f"{container}.log"

    def mounts(self, container: Any) -> list[tuple[str, Path]]:
        volumes = {v.name: v for v in self.pod.spec.volumes or []}
        out = []
        for mount in container.volume_mounts or []:
            volume = volumes.get(mount.name)
            if volume is None or volume.empty_dir is None:
                raise RuntimeError(f"volume {mount.name}: only emptyDir volumes are supported by the process kubelet")
            host = self.dir / "volumes" / mount.name
            if mount.sub_path:
                host = host / mount.sub_path
            host.mkdir(parents=True, exist_ok=True)
            out.append((mount.mount_path.rstrip("/") or "/", host))
        return sorted(out, key=lambda m: len(m[0]), reverse=True)

    @staticmethod
    def translate(value: str, mounts: list[tuple[str, Path]]) -> str:
        """A mount path in ``value`` as the pod's folder; a JSON object (a Job's task, RAGSWEEP_TASK) has every
        string in it translated so."""
        if value.startswith("{"):
            try:
                doc = json.loads(value)
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                def walk(item: Any) -> Any:
                    if isinstance(item, str):
                        return PodRun.translate(item, mounts)
                    if isinstance(item, list):
                        return [walk(x) for x in item]
                    if isinstance(item, dict):
                        return {k: walk(v) for k, v in item.items()}
                    return item

                return json.dumps(walk(doc))
        for path, host in mounts:
            if value == path:
                return str(host)
            if value.startswith(path + "/"):
                return str(host) + value[len(path):]
        return value

    def environment(self, container: Any, mounts: list[tuple[str, Path]]) -> dict[str, str]:
        env: dict[str, str] = {}
        for source in container.env_from or []:
            prefix = source.prefix or ""
            if source.secret_ref is not None:
                name = source.secret_ref.name
                secret = self.kubelet.call(functools.partial(self.kubelet.core.read_namespaced_secret, name, self.ns))
                env.update({prefix + k: base64.b64decode(v).decode() for k, v in (secret.data or {}).items()})
            if source.config_map_ref is not None:
                name = source.config_map_ref.name
                cm = self.kubelet.call(functools.partial(self.kubelet.core.read_namespaced_config_map, name, self.ns))
                env.update({prefix + k: v for k, v in (cm.data or {}).items()})
        fields = {"metadata.name": self.name, "metadata.namespace": self.ns, "metadata.uid": self.uid,
                  "spec.nodeName": self.pod.spec.node_name, "spec.serviceAccountName":
                  self.pod.spec.service_account_name or "default", "status.podIP": "127.0.0.1",
                  "status.hostIP": "127.0.0.1"}
        for var in container.env or []:
            value: str | None
            if var.value_from is None:
                value = expand(var.value or "", env)
            elif var.value_from.secret_key_ref is not None:
                ref = var.value_from.secret_key_ref
                value = self.secret_value(ref.name, ref.key, bool(ref.optional))
            elif var.value_from.config_map_key_ref is not None:
                ref = var.value_from.config_map_key_ref
                value = self.configmap_value(ref.name, ref.key, bool(ref.optional))
            elif var.value_from.field_ref is not None:
                value = fields.get(var.value_from.field_ref.field_path)
                if value is None:
                    raise RuntimeError(f"env {var.name}: fieldRef {var.value_from.field_ref.field_path} "
                                       "is not supported by the process kubelet")
            else:
                raise RuntimeError(f"env {var.name}: this valueFrom is not supported by the process kubelet")
            if value is not None:
                env[var.name] = self.translate(value, mounts)
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
        return {**base, "HOME": str(self.dir / "home"), "HOSTNAME": self.name, "PYTHONPATH": str(ROOT),
                "PYTHONUNBUFFERED": "1", **env}

    def start(self, container: Any, limit: int | None) -> Container:
        mounts = self.mounts(container)
        env = self.environment(container, mounts)
        argv = [expand(a, env) for a in [*(container.command or []), *(container.args or [])]]
        if not argv:
            raise RuntimeError(f"container {container.name}: no command (images are not run by the process kubelet)")
        argv = [self.translate(a, mounts) for a in argv]
        if argv[0] in ("python", "python3"):
            argv[0] = self.kubelet.python
        cwd = Path(self.translate(container.working_dir, mounts)) if container.working_dir else self.dir / "work"
        cwd.mkdir(parents=True, exist_ok=True)
        (self.dir / "home").mkdir(parents=True, exist_ok=True)
        log = self.log_path(container.name)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(b"")

        def cap() -> None:
            assert limit is not None
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True,
                                   preexec_fn=cap if limit is not None else None)
        run = Container(container.name, process, log, now())
        sink = log.open("a", encoding="utf-8")
        write_lock = threading.Lock()
        for stream, name in ((process.stdout, "stdout"), (process.stderr, "stderr")):
            pump = threading.Thread(target=_pump, args=(stream, name, sink, write_lock), daemon=True)
            pump.start()
            run.pumps.append(pump)
        self.kubelet.say(f"{self.ns}/{self.name}: {container.name} started (pid {process.pid}"
                         f"{f', address space capped at {limit >> 20} MiB' if limit else ''}): {' '.join(argv)}")
        return run

    def wait(self, run: Container) -> dict[str, Any]:
        deadline: float | None = None
        while True:
            try:
                code = run.process.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                pass
            if self.deleted.is_set():
                if deadline is None:
                    self.kubelet.say(f"{self.ns}/{self.name}: deleted; SIGTERM to {run.name}")
                    _signal(run.process, signal.SIGTERM)
                    deadline = time.monotonic() + self.grace_s
                elif time.monotonic() > deadline:
                    _signal(run.process, signal.SIGKILL)
        for pump in run.pumps:
            pump.join(timeout=10)
        exit_code = code if code >= 0 else 128 - code
        state = {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                 "startedAt": run.started, "finishedAt": now(), "containerID": f"process://{run.process.pid}"}
        return state

    def message(self, container: Any, state: dict[str, Any]) -> None:
        """terminationMessagePolicy FallbackToLogsOnError: the log's tail on a failure."""
        if state["exitCode"] == 0 or (container.termination_message_policy or "File") != "FallbackToLogsOnError":
            return
        lines = [line.split(" ", 3)[-1] for line in self.log_path(container.name).read_text(
            encoding="utf-8", errors="replace").splitlines()]
        state["message"] = "\n".join(lines[-MESSAGE_LINES:])[-MESSAGE_BYTES:]

    def status_of(self, container: Any, state: dict[str, Any] | None, waiting: str | None = None) -> dict[str, Any]:
        image = container.image or ""
        entry: dict[str, Any] = {"name": container.name, "image": image, "imageID": image, "ready": False,
                                 "restartCount": 0, "started": False}
        if state is not None:
            entry["state"] = {"terminated": state}
        elif waiting is not None:
            entry["state"] = {"waiting": {"reason": waiting}}
        else:
            entry["state"] = {"running": {"startedAt": now()}}
            entry["ready"] = entry["started"] = True
        return entry

    def run(self) -> None:
        try:
            self._run()
        except Exception as e:  # the node's own failure: report it on the pod, as a kubelet would
            self.kubelet.say(f"{self.ns}/{self.name}: process kubelet error: {type(e).__name__}: {e}")
            try:
                self.patch_status({"phase": "Failed", "reason": "ProcessKubeletError", "message": str(e)[:1000]})
            except Exception as again:
                self.kubelet.say(f"{self.ns}/{self.name}: could not report it: {again}")
        finally:
            self.kubelet.finished(self)

    def _run(self) -> None:
        spec = self.pod.spec
        init = list(spec.init_containers or [])
        main = list(spec.containers)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.grace_s = float(spec.termination_grace_period_seconds or 30)
        self.register_logs([c.name for c in init + main])
        limit = next((f.address_space for f in self.kubelet.faults if f.matches(self.pod)), None)
        started = now()
        conditions = [{"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started},
                      {"type": "Initialized", "status": "False" if init else "True", "lastTransitionTime": started,
                       **({"reason": "ContainersNotInitialized"} if init else {})},
                      {"type": "ContainersReady", "status": "False", "lastTransitionTime": started},
                      {"type": "Ready", "status": "False", "lastTransitionTime": started}]
        self.patch_status({"phase": "Pending", "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
                           "podIP": "127.0.0.1", "podIPs": [{"ip": "127.0.0.1"}], "startTime": started,
                           "conditions": conditions,
                           "initContainerStatuses": [self.status_of(c, None, "PodInitializing") for c in init],
                           "containerStatuses": [self.status_of(c, None, "PodInitializing") for c in main]})
        init_states: list[dict[str, Any]] = []
        for container in init:
            if self.deleted.is_set():
                break
            self.patch_status({"initContainerStatuses": [
                self.status_of(c, s) for c, s in zip(init, init_states, strict=False)] + [
                self.status_of(container, None)] + [
                self.status_of(c, None, "PodInitializing") for c in init[len(init_states) + 1:]]})
            state = self.wait(self.start(container, None))
            self.message(container, state)
            init_states.append(state)
            if state["exitCode"] != 0:
                self.kubelet.say(f"{self.ns}/{self.name}: init container {container.name} exit {state['exitCode']}")
                self.finish(init, init_states, main, [], failed=True)
                return
        if self.deleted.is_set():
            self.finish(init, init_states, main, [], failed=True)
            return
        runs = [self.start(c, limit) for c in main]
        ready = now()
        self.patch_status({"phase": "Running", "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": ready},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": ready},
            {"type": "Ready", "status": "True", "lastTransitionTime": ready}],
            "initContainerStatuses": [self.status_of(c, s) for c, s in zip(init, init_states, strict=True)],
            "containerStatuses": [self.status_of(c, None) for c in main]})
        states = []
        for container, run in zip(main, runs, strict=True):
            state = self.wait(run)
            self.message(container, state)
            states.append(state)
            self.kubelet.say(f"{self.ns}/{self.name}: {container.name} exit {state['exitCode']}")
        self.finish(init, init_states, main, states, failed=any(s["exitCode"] != 0 for s in states))

    def finish(self, init: list[Any], init_states: list[dict[str, Any]], main: list[Any],
               states: list[dict[str, Any]], failed: bool) -> None:
        done = now()
        reason = "PodFailed" if failed else "PodCompleted"
        statuses = [self.status_of(c, s) for c, s in zip(main, states, strict=False)]
        # Never started (an init container failed): left waiting, as a kubelet leaves them.
        statuses += [self.status_of(c, None, "PodInitializing") for c in main[len(states):]]
        init_statuses = [self.status_of(c, s) for c, s in zip(init, init_states, strict=False)]
        self.patch_status({
            "phase": "Failed" if failed else "Succeeded",
            "conditions": [{"type": "Ready", "status": "False", "reason": reason, "lastTransitionTime": done},
                           {"type": "ContainersReady", "status": "False", "reason": reason,
                            "lastTransitionTime": done}],
            "initContainerStatuses": init_statuses, "containerStatuses": statuses})
        self.kubelet.say(f"{self.ns}/{self.name}: {'Failed' if failed else 'Succeeded'}")
        if self.deleted.is_set():
            self.kubelet.confirm_deletion(self.pod)


def _pump(stream: Any, name: str, sink: TextIO, lock: threading.Lock) -> None:
    """CRI log format: <RFC3339Nano time> <stream> F <line>."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with lock:
            sink.write(f"{stamp} {name} F {line}\n")
            sink.flush()
    stream.close()


def _signal(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


class ProcessKubelet:
    def __init__(self, core: Any, custom: Any, nodes: list[str], workdir: Path, *, python: str = sys.executable,
                 faults: list[Fault] | None = None, say: Callable[[str], None] | None = None) -> None:
        self.core = core
        self.custom = custom
        self.nodes = set(nodes)
        self.workdir = workdir
        self.python = python
        self.faults = faults or []
        self._say = say or (lambda text: print(f"[process-kubelet {now()}] {text}", file=sys.stderr, flush=True))
        self.runs: dict[str, PodRun] = {}
        self.seen: set[str] = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ready = threading.Event()

    def say(self, text: str) -> None:
        self._say(text)

    def call(self, fn: Callable[[], Any], attempts: int = 5) -> Any:
        for attempt in range(attempts):
            try:
                return fn()
            except Exception as e:
                status = getattr(e, "status", None)
                if attempt + 1 == attempts or (status is not None and status not in (0, 409, 429) and status < 500):
                    raise
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def finished(self, run: PodRun) -> None:
        with self.lock:
            self.runs.pop(run.uid, None)

    def confirm_deletion(self, pod: Any) -> None:
        from kubernetes import client as k

        try:
            self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0,
                                            body=k.V1DeleteOptions(grace_period_seconds=0,
                                                                   preconditions=k.V1Preconditions(uid=pod.metadata.uid)))
        except Exception as e:
            if getattr(e, "status", None) not in (404, 409):
                self.say(f"{pod.metadata.namespace}/{pod.metadata.name}: delete failed: {e}")

    def handle(self, kind: str, pod: Any) -> None:
        if pod.spec.node_name not in self.nodes:
            return
        uid = pod.metadata.uid
        phase = pod.status.phase if pod.status else None
        with self.lock:
            run = self.runs.get(uid)
            if pod.metadata.deletion_timestamp is not None or kind == "DELETED":
                if run is not None:
                    run.deleted.set()
                elif kind != "DELETED":
                    self.confirm_deletion(pod)
                return
            if uid in self.seen or phase in ("Succeeded", "Failed"):
                return
            self.seen.add(uid)
            if phase == "Running":  # ours from an earlier kubelet: its process is gone
                self.say(f"{pod.metadata.namespace}/{pod.metadata.name}: running before this kubelet started; "
                         "failing it")
                threading.Thread(target=self._orphan, args=(pod,), daemon=True).start()
                return
            run = PodRun(self, pod)
            self.runs[uid] = run
        self.say(f"{pod.metadata.namespace}/{pod.metadata.name}: bound to {pod.spec.node_name}; running it")
        threading.Thread(target=run.run, name=f"pod-{pod.metadata.name}", daemon=True).start()

    def _orphan(self, pod: Any) -> None:
        self.call(lambda: self.core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, {
            "status": {"phase": "Failed", "reason": "NodeRestart",
                       "message": "the process kubelet restarted while the pod ran"}}, _content_type=SMP))

    def serve(self) -> None:
        """List and watch every pod; pods on our nodes are run. Returns when ``stop`` is set."""
        from kubernetes import watch

        version = None
        while not self.stop.is_set():
            try:
                if version is None:
                    listing = self.core.list_pod_for_all_namespaces()
                    for pod in listing.items:
                        self.handle("ADDED", pod)
                    version = listing.metadata.resource_version
                    if not self.ready.is_set():
                        self.ready.set()
                        self.say(f"watching pods from resourceVersion {version}")
                stream = watch.Watch()
                for event in stream.stream(self.core.list_pod_for_all_namespaces, resource_version=version,
                                           timeout_seconds=5, allow_watch_bookmarks=True):
                    if self.stop.is_set():
                        stream.stop()
                        break
                    obj = event["object"]
                    if event["type"] == "BOOKMARK":
                        version = obj.metadata.resource_version if hasattr(obj, "metadata") else \
                            obj["metadata"]["resourceVersion"]
                        continue
                    if event["type"] == "ERROR":
                        version = None
                        break
                    version = obj.metadata.resource_version
                    self.handle(event["type"], obj)
            except Exception as e:
                if getattr(e, "status", None) == 410:
                    version = None
                    continue
                if self.stop.is_set():
                    break
                self.say(f"watch: {type(e).__name__}: {e}; listing again")
                version = None
                time.sleep(1)

    def shutdown(self) -> None:
        self.stop.set()
        with self.lock:
            runs = list(self.runs.values())
        for run in runs:
            run.grace_s = min(run.grace_s, 5.0)
            run.deleted.set()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--node", action="append", required=True, help="a node whose pods this kubelet runs")
    p.add_argument("--workdir", type=Path, required=True, help="pod folders (volumes, logs) go here")
    p.add_argument("--python", default=sys.executable, help="what `python` in a container command runs")
    p.add_argument("--address-space-limit", dest="faults", type=Fault.parse, action="append", default=[],
                   metavar="LABEL=VALUE:SIZE")
    args = p.parse_args(argv)

    from kubernetes import client, config

    api = config.new_client_from_config(config_file=args.kubeconfig)
    kubelet = ProcessKubelet(client.CoreV1Api(api), client.CustomObjectsApi(api), args.node, args.workdir,
                             python=args.python, faults=args.faults)
    args.workdir.mkdir(parents=True, exist_ok=True)

    def stop(*_: Any) -> None:
        kubelet.shutdown()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    kubelet.say(f"running pods of {', '.join(sorted(kubelet.nodes))}; pod folders in {args.workdir}"
                + (f"; faults: {args.faults}" if args.faults else ""))
    kubelet.serve()
    deadline = time.monotonic() + 15
    while kubelet.runs and time.monotonic() < deadline:
        time.sleep(0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
