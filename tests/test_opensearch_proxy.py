"""The chart's OpenSearch proxy, run for real: nginx (Debian 12's, the package the OpenSearch image installs)
runs the nginx.conf, certificate, key and htpasswd line that `helm template` renders, on loopback in front of
the local stack's OpenSearch, as a non-root user (as in the pod), and the harness's own client talks to it:
no credentials, a wrong password, plain HTTP to the TLS port and an unknown CA are each refused in one line;
the right password with the release's CA reads and writes. Both htpasswd schemes (plain, bcrypt) are run.
The helm test pod's script and the OpenSearch container's probe commands are run as rendered, too.

Only two lines of the rendered nginx.conf change (each checked to occur once): the listen address (a free
loopback port, not the pod's 9200) and the upstream (the stack's OpenSearch, not the pod's 127.0.0.1:9201).
Skips, saying why, when helm or nginx is not installed (apt-get install nginx) or the stack is not up (fails
instead under RAGSWEEP_REQUIRE_STACK=1).
"""

from __future__ import annotations

import base64
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness.errors import UsageError
from harness.index.opensearch.client import URL_ENV, OpenSearchClient

yaml = pytest.importorskip("yaml")
pytest.importorskip("opensearchpy")

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "ragsweep"
USER = "ragsweep"


def unavailable(reason: str) -> None:
    if os.environ.get("RAGSWEEP_REQUIRE_STACK") == "1":
        pytest.fail(f"{reason} (RAGSWEEP_REQUIRE_STACK=1)")
    pytest.skip(reason)


def _tool(name: str, why: str) -> str:
    for candidate in ((ROOT / "var" / "tools" / "bin" / name) if name == "helm" else None, shutil.which(name),
                      Path("/usr/sbin") / name):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.skip(why)


def _stack_url() -> str:
    url = os.environ.get(URL_ENV)
    if not url:
        unavailable(f"{URL_ENV} is unset: the local stack is not up (make stack-up)")
    try:
        OpenSearchClient(str(url), deadline=2.0).version()
    except Exception as e:  # any failure to answer is "not available"
        unavailable(f"OpenSearch at {url} does not answer: {e}")
    return str(url)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rendered(scheme: str) -> list[dict[str, Any]]:
    helm = _tool("helm", "helm is not built: run `make k8s-tools`")
    out = subprocess.run([helm, "template", "rs", str(CHART), "--namespace", "ragsweep-test", "--kube-version",
                          "1.33.0", "-f", str(CHART / "ci" / "default-values.yaml"),
                          "--set", f"opensearch.auth.scheme={scheme}"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the rendered nginx.conf should have {old!r} once"
    return text.replace(old, new)


@dataclass(frozen=True)
class Proxy:
    url: str  # https://127.0.0.1:PORT, no credentials
    password: str
    ca: Path
    docs: list[dict[str, Any]]

    def with_password(self, password: str) -> str:
        return self.url.replace("https://", f"https://{USER}:{password}@")


@pytest.fixture(scope="module", params=["plain", "bcrypt"])
def proxy(request: pytest.FixtureRequest) -> Iterator[Proxy]:
    nginx = _tool("nginx", "nginx is not installed (apt-get install nginx; the OpenSearch image's is Debian 12's)")
    stack = urlsplit(_stack_url())
    docs = _rendered(request.param)
    data = _named(docs, "Secret", "rs-ragsweep-opensearch-tls")["data"]
    auth = _named(docs, "Secret", "rs-ragsweep-opensearch-auth")["data"]
    conf = _named(docs, "ConfigMap", "rs-ragsweep-opensearch-proxy")["data"]["nginx.conf"]
    port = _free_port()
    conf = _replace_once(conf, "listen 9200 ssl;", f"listen 127.0.0.1:{port} ssl;")
    conf = _replace_once(conf, "server 127.0.0.1:9201;", f"server {stack.hostname}:{stack.port};")
    with tempfile.TemporaryDirectory(prefix="ragsweep-proxy-") as tmp:
        base = Path(tmp)
        files = base / "conf"  # the pod's projected volume: nginx.conf and the files it names
        run = base / "run"  # the pod's /tmp: nginx's -p prefix (pid file, temp folders)
        files.mkdir()
        run.mkdir()
        (files / "nginx.conf").write_text(conf)
        (files / "tls.crt").write_bytes(base64.b64decode(data["tls.crt"]))
        (files / "tls.key").write_bytes(base64.b64decode(data["tls.key"]))
        (files / "htpasswd").write_bytes(base64.b64decode(auth["htpasswd"]))
        (base / "ca.crt").write_bytes(base64.b64decode(data["ca.crt"]))
        command = [nginx, "-p", f"{run}/", "-e", "stderr", "-c", str(files / "nginx.conf")]
        if os.geteuid() == 0:  # the pod runs nginx as uid 1000, master and workers: here as nobody
            nobody = pwd.getpwnam("nobody")
            for path in (base, files, run, *files.iterdir()):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
            base.chmod(0o755)
            command = [_tool("setpriv", "setpriv (util-linux) is needed to run nginx as nobody"),
                       f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", *command]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        process.kill()
                        pytest.fail(f"nginx did not start: {process.communicate()[1]}")
                    time.sleep(0.05)
            yield Proxy(f"https://127.0.0.1:{port}", base64.b64decode(auth["password"]).decode(), base / "ca.crt",
                        docs)
        finally:
            process.send_signal(signal.SIGQUIT)  # graceful: finish what is in flight
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def ca(proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The release's CA as a pod has it: SSL_CERT_FILE, which opensearch-py reads when it connects."""
    monkeypatch.setenv("SSL_CERT_FILE", str(proxy.ca))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return proxy.ca


def test_without_credentials_the_proxy_refuses_in_one_line(proxy: Proxy, ca: Path) -> None:
    with pytest.raises(UsageError) as refused:
        OpenSearchClient(proxy.url, deadline=1.0).request("GET", "/")
    message = str(refused.value)
    assert message == (f"OpenSearch at {proxy.url} refused GET / (HTTP 401: 401 Authorization Required): the node "
                       "asks for credentials and the URL carries none (https://USER:PASSWORD@host:9200; a release's "
                       "pods get them from its Secret)")
    assert refused.value.exit_code == 2


def test_a_wrong_password_is_refused_and_never_printed(proxy: Proxy, ca: Path) -> None:
    wrong = "x" + proxy.password[1:]
    with pytest.raises(UsageError, match=r"^OpenSearch at https://\*\*\*@127\.0\.0\.1:\d+ refused GET / \(HTTP 401: "
                                         r"401 Authorization Required\): the user and password in the URL were not "
                                         r"accepted$") as refused:
        OpenSearchClient(proxy.with_password(wrong), deadline=1.0).request("GET", "/")
    assert wrong not in str(refused.value)


def test_the_right_password_and_the_releases_ca_read_and_write(proxy: Proxy, ca: Path) -> None:
    """A real round trip through the proxy: create an index, _bulk (an NDJSON body), search, delete; the
    proxied search answers exactly what OpenSearch answers directly."""
    node = OpenSearchClient(proxy.with_password(proxy.password))
    direct = OpenSearchClient(_stack_url())
    assert node.version() == direct.version()
    index = f"proxy-test-{uuid.uuid4().hex[:12]}"
    try:
        node.request("PUT", f"/{index}", {"settings": {"number_of_shards": 1, "number_of_replicas": 0}})
        lines: list[Any] = []
        for i in range(20):
            lines += [{"index": {"_index": index, "_id": str(i)}}, {"text": f"meeting {i} about budget {i % 3}"}]
        assert node.request("POST", "/_bulk", lines, params={"refresh": "true"})["errors"] is False
        query = {"query": {"match": {"text": "budget 1"}}, "size": 5}
        proxied = node.request("POST", f"/{index}/_search", query)
        assert proxied["hits"]["total"]["value"] == 20
        assert [h["_id"] for h in proxied["hits"]["hits"]] == \
            [h["_id"] for h in direct.request("POST", f"/{index}/_search", query)["hits"]["hits"]]
    finally:
        direct.request("DELETE", f"/{index}", missing_ok=True)


def test_plain_http_to_the_tls_port_is_refused_with_what_to_do(proxy: Proxy) -> None:
    plain = proxy.with_password(proxy.password).replace("https://", "http://")
    with pytest.raises(UsageError, match=r"^OpenSearch at http://\*\*\*@127\.0\.0\.1:\d+ speaks TLS on that port "
                                         r"\(HTTP 400: 400 The plain HTTP request was sent to HTTPS port\): use an "
                                         r"https:// URL$"):
        OpenSearchClient(plain, deadline=1.0).request("GET", "/")


def test_without_the_releases_ca_the_certificate_is_refused(proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(UsageError, match=r"^OpenSearch at https://\*\*\*@127\.0\.0\.1:\d+: TLS failed on GET / "
                                         r"\(.*certificate verify failed"):
        OpenSearchClient(proxy.with_password(proxy.password), deadline=1.0).request("GET", "/")


def test_the_helm_test_pods_script_passes_and_sees_the_refusal(proxy: Proxy) -> None:
    """The chart's OpenSearch test pod, as rendered (its command, the required plugins as arguments), run here
    against the proxy with the environment the pod gets."""
    pod = _named(proxy.docs, "Pod", "rs-ragsweep-test-opensearch")
    command = pod["spec"]["containers"][0]["command"]
    assert command[:2] == ["python", "-c"]
    env = {**os.environ, "SSL_CERT_FILE": str(proxy.ca), "RAGSWEEP_OPENSEARCH_URL": proxy.with_password(proxy.password)}
    env.pop("SSL_CERT_DIR", None)
    result = subprocess.run([sys.executable, *command[1:]], env=env, cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "plugins ok:" in result.stdout and "without the password: OpenSearch at https://127.0.0.1:" in result.stdout
    assert "HTTP 401" in result.stdout and proxy.password not in result.stdout + result.stderr
    # and it fails when a required plugin is missing
    missing = subprocess.run([sys.executable, *command[1:], "opensearch-no-such-plugin"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 1 and "missing plugins: opensearch-no-such-plugin" in missing.stderr


def test_the_opensearch_containers_probes_answer_from_inside_the_pod(proxy: Proxy) -> None:
    """The exec probes, as rendered, with the pod's loopback port swapped for the stack's: healthy OpenSearch
    passes all three; a port nobody listens on fails them."""
    stack = urlsplit(_stack_url())
    bash = _tool("bash", "no bash")
    search = next(c for c in _named(proxy.docs, "StatefulSet", "rs-ragsweep-opensearch")["spec"]["template"]["spec"][
        "containers"] if c["name"] == "opensearch")
    closed = _free_port()
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        script = search[probe]["exec"]["command"][2]
        assert search[probe]["exec"]["command"][:2] == ["bash", "-c"]
        up = _replace_once(script, "/127.0.0.1/9201", f"/{stack.hostname}/{stack.port}")
        healthy = subprocess.run([bash, "-c", up], capture_output=True, timeout=30)
        assert healthy.returncode == 0, (probe, healthy.stderr)
        down = subprocess.run([bash, "-c", _replace_once(script, "/127.0.0.1/9201", f"/127.0.0.1/{closed}")],
                              capture_output=True, timeout=30)
        assert down.returncode != 0, probe


def test_the_proxy_hop_costs_little_on_loopback(proxy: Proxy, ca: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Small searches, direct and through the proxy, interleaved, one keep-alive connection each: the answers are
    the same; the cost per search is printed (docs/kubernetes.md quotes it). bcrypt makes nginx check the
    password with a cost-10 hash on every request, so it gets fewer searches."""
    n = 200 if _scheme(proxy) == "plain" else 20
    node = OpenSearchClient(proxy.with_password(proxy.password))
    direct = OpenSearchClient(_stack_url())
    index = f"proxy-bench-{uuid.uuid4().hex[:12]}"
    try:
        direct.request("PUT", f"/{index}", {"settings": {"number_of_shards": 1, "number_of_replicas": 0}})
        lines: list[Any] = []
        for i in range(50):
            lines += [{"index": {"_index": index, "_id": str(i)}}, {"text": f"turn {i} of meeting {i % 7}"}]
        direct.request("POST", "/_bulk", lines, params={"refresh": "true"})
        query = {"query": {"match": {"text": "meeting 3"}}, "size": 10}
        node.request("POST", f"/{index}/_search", query)  # connect (TLS handshake) outside the clock
        direct.request("POST", f"/{index}/_search", query)
        took = {"direct": 0.0, "proxy": 0.0}
        for _ in range(n):
            ids = {}
            for name, client in (("direct", direct), ("proxy", node)):
                start = time.perf_counter()
                ids[name] = [h["_id"] for h in client.request("POST", f"/{index}/_search", query)["hits"]["hits"]]
                took[name] += time.perf_counter() - start
            assert ids["proxy"] == ids["direct"] and len(ids["direct"]) == 10
    finally:
        direct.request("DELETE", f"/{index}", missing_ok=True)
    per = {name: 1000 * total / n for name, total in took.items()}
    with capsys.disabled():
        print(f"\n[proxy {_scheme(proxy)}] {n} searches: direct {per['direct']:.2f} ms, through nginx "
              f"{per['proxy']:.2f} ms each (+{per['proxy'] - per['direct']:.2f} ms)")


def _scheme(proxy: Proxy) -> str:
    line = base64.b64decode(_named(proxy.docs, "Secret", "rs-ragsweep-opensearch-auth")["data"]["htpasswd"]).decode()
    return "plain" if "{PLAIN}" in line else "bcrypt"


# --- an arm Job's pod through the proxy, as a release runs it ----------------------------------------------------

def _kubelet_env(job: dict[str, Any], secrets: dict[str, dict[str, str]], mounts: dict[str, Path]) -> dict[str, str]:
    """The main container's environment as the kubelet gives it: secretKeyRef resolved, $(VAR) expanded from the
    variables listed before it (an unknown one left as written, as Kubernetes does), and a value that is a path
    under a mount replaced by the path under the folder that stands for the volume here."""
    import re

    (container,) = job["spec"]["template"]["spec"]["containers"]
    env: dict[str, str] = {}
    for e in container["env"]:
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        value = secrets[ref["name"]][ref["key"]] if ref else e["value"]
        if not ref:
            value = re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), value)
            for path, folder in mounts.items():
                if value == path or value.startswith(path + "/"):
                    value = str(folder) + value[len(path):]
                    break
        env[e["name"]] = value
    return env


@pytest.fixture(scope="module")
def stack_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers", reason="the embed extra is not installed")
    pytest.importorskip("pytrec_eval", reason="the eval extra is not installed")
    pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")
    _stack_url()
    fixture = ROOT / "tests" / "fixtures" / "qmsum"
    out = tmp_path_factory.mktemp("proxy-arm-stack") / "state"
    result = subprocess.run([str(Path(sys.executable).with_name("ragsweep")), "state", "build", "--backend", "stack",
                             "--corpus", f"qmsum={fixture}", "--manifest", f"qmsum={fixture / 'SOURCES.tsv'}",
                             "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


def test_an_arm_job_reaches_opensearch_through_the_proxy_with_its_secret_and_is_refused_without(
        proxy: Proxy, stack_state: Path, tmp_path: Path) -> None:
    """An arm Job built from the chart's own launcher ConfigMap (the OpenSearch host swapped for the proxy's
    address), its pod's environment resolved as the kubelet would: with the release's password and CA the arm
    measures the stack and publishes; with another password it exits 2 (a usage error, which the Job's pod failure
    policy does not retry) on one line, and publishes failed.json saying why."""
    if _scheme(proxy) != "plain":
        pytest.skip("bcrypt costs nginx about 60 ms a request: the plain scheme's run covers the arm")
    from harness.sweep.catalogue import CATALOGUE
    from harness.sweep.k8s.builders import build_arm_job, serialize
    from harness.sweep.k8s.settings import LauncherSettings, parse_settings
    from harness.sweep.storage import LocalFolderStore

    (configmap,) = [d for d in proxy.docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    chart = parse_settings(configmap["data"]["settings.json"], "launcher")
    url = chart.extra_env["RAGSWEEP_OPENSEARCH_URL"]
    assert url.count("@rs-ragsweep-opensearch:9200") == 1
    extra = {**chart.extra_env, "RAGSWEEP_OPENSEARCH_URL": url.replace("@rs-ragsweep-opensearch:9200",
                                                                       "@" + proxy.url.removeprefix("https://"))}
    secrets = {d["metadata"]["name"]: {k: base64.b64decode(v).decode() for k, v in d["data"].items()}
               for d in proxy.docs if d["kind"] == "Secret"}
    ca_dir = tmp_path / "opensearch-ca"
    ca_dir.mkdir()
    assert chart.opensearch_ca is not None
    (ca_dir / "ca.crt").write_text(secrets[chart.opensearch_ca.secret][chart.opensearch_ca.key])
    arm = CATALOGUE.family("fusion").arm("rrf-60")

    def run(password: str, store: Path) -> subprocess.CompletedProcess[str]:
        settings = LauncherSettings.model_validate({
            **chart.model_dump(by_alias=True, exclude={"extra_env", "store", "state_path"}),
            "extraEnv": extra, "store": str(store), "statePath": str(stack_state), "credentials": None})
        job = serialize(build_arm_job(settings, arm, "fusion-proxy"))
        (container,) = job["spec"]["template"]["spec"]["containers"]
        auth = dict(secrets["rs-ragsweep-opensearch-auth"], password=password)
        env = _kubelet_env(job, {**secrets, "rs-ragsweep-opensearch-auth": auth},
                           {"/etc/ragsweep/opensearch-ca": ca_dir})
        env |= {"XDG_CACHE_HOME": str(tmp_path / "cache"), "MPLCONFIGDIR": str(tmp_path / "matplotlib")}  # the scratch
        assert env["RAGSWEEP_OPENSEARCH_URL"].startswith(f"https://{USER}:{password}@127.0.0.1:")
        assert env["SSL_CERT_FILE"] == str(ca_dir / "ca.crt")
        base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        return subprocess.run([sys.executable, *container["command"][1:]], cwd=tmp_path, capture_output=True,
                              env={**base, **env, "PYTHONPATH": str(ROOT)}, text=True, timeout=600)

    good = run(proxy.password, tmp_path / "store")
    assert good.returncode == 0, good.stderr[-2000:]
    assert f"{arm.name}: published" in good.stdout
    metrics = json.loads(LocalFolderStore(tmp_path / "store").get_text(f"sweeps/fusion-proxy/fusion/{arm.name}/"
                                                                        "metrics.json"))
    assert metrics["retrieval"]["backend"] == "stack"

    wrong = "x" + proxy.password[1:]
    refused = run(wrong, tmp_path / "refused")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "refused" in refused.stderr and "HTTP 401" in refused.stderr and wrong not in refused.stderr
    print(f"\n[arm without the password] exit {refused.returncode}: {refused.stderr.strip()}")
    failed = json.loads(LocalFolderStore(tmp_path / "refused").get_text(f"sweeps/fusion-proxy/fusion/{arm.name}/"
                                                                         "failed.json"))
    assert "HTTP 401" in failed["error"] and "\n" not in failed["error"]
