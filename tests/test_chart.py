"""The Helm chart, rendered and checked with the real tools: helm lint/template for every
ci/*-values.yaml scenario and strict Kubernetes schema validation (kubernetes-validate,
offline) of every rendered object; validateValues failing once with every problem; the
launcher ConfigMap the chart renders is what harness.sweep.k8s builds its Jobs from.

helm is built by `make k8s-tools` (Go module proxy, about 4 minutes cold); without it
these tests skip and say so.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")
kv = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed (pip install "
                                                       "kubernetes-validate)")
pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")

from harness.errors import InputDataError  # noqa: E402
from harness.sweep.catalogue import CATALOGUE  # noqa: E402
from harness.sweep.k8s.builders import (  # noqa: E402
    build_arm_job,
    build_collector_job,
    build_legs_job,
    build_scores_job,
    serialize,
)
from harness.sweep.k8s.settings import parse_settings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "ragsweep"
SCENARIOS = sorted((CHART / "ci").glob("*-values.yaml"))
KUBE_VERSION = "1.33.0"
ZERO = "sha256:" + "0" * 64


def _helm() -> str:
    for candidate in (os.environ.get("RAGSWEEP_HELM"), str(ROOT / "var" / "tools" / "bin" / "helm"),
                      shutil.which("helm")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("helm is not built: run `make k8s-tools` (builds helm into var/tools/bin from the Go module "
                "proxy, about 4 minutes cold)")


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([_helm(), *args], capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def render(*values: str, sets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    args = ["template", "rs", str(CHART), "--namespace", "ragsweep-test", "--kube-version", KUBE_VERSION]
    for f in values:
        args += ["-f", f]
    for s in sets:
        args += ["--set", s]
    return [d for d in yaml.safe_load_all(helm(*args).stdout) if d]


@pytest.fixture(scope="module", params=SCENARIOS, ids=[p.name for p in SCENARIOS])
def scenario(request: pytest.FixtureRequest) -> tuple[Path, list[dict[str, Any]]]:
    return request.param, render(str(request.param))


def test_there_are_the_four_named_scenarios() -> None:
    names = {p.name for p in SCENARIOS}
    assert {"default-values.yaml", "gpu-rerank-values.yaml", "existing-secrets-values.yaml",
            "minimal-values.yaml"} <= names


@pytest.mark.parametrize("values", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_helm_lint_is_clean(values: Path) -> None:
    result = helm("lint", str(CHART), "--strict", "--kube-version", KUBE_VERSION, "-f", str(values))
    assert "0 chart(s) failed" in result.stdout


def test_every_rendered_object_is_valid_in_strict_mode(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = scenario
    assert len(docs) > 15
    problems = []
    for doc in docs:
        try:
            kv.validate(doc, KUBE_VERSION, strict=True)
        except Exception as e:  # kubernetes_validate raises its own ValidationError
            problems.append(f"{doc['kind']}/{doc['metadata']['name']}: {getattr(e, 'message', e)}")
    assert not problems, "\n".join(problems)


def _pod_specs(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
            out.append((f"{doc['kind']}/{doc['metadata']['name']}", doc["spec"]["template"]["spec"]))
        elif doc["kind"] == "Pod":
            out.append((f"Pod/{doc['metadata']['name']}", doc["spec"]))
    return out


def test_every_container_has_resources_and_runs_as_non_root(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = scenario
    for where, spec in _pod_specs(docs):
        assert spec.get("securityContext", {}).get("runAsNonRoot") is True, where
        for c in spec.get("initContainers", []) + spec["containers"]:
            assert c["resources"].get("requests") and c["resources"].get("limits"), f"{where}/{c['name']}"
            assert c["securityContext"]["allowPrivilegeEscalation"] is False, f"{where}/{c['name']}"


def test_long_running_services_have_probes(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = scenario
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet"):
            for c in doc["spec"]["template"]["spec"]["containers"]:
                assert "readinessProbe" in c and "livenessProbe" in c, doc["metadata"]["name"]


def test_jobs_carry_deadline_ttl_backoff_and_never_restart(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = scenario
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert jobs, "the injector Job is missing"
    for job in jobs:
        spec = job["spec"]
        assert {"backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"} <= set(spec)
        assert spec["template"]["spec"]["restartPolicy"] == "Never"


def test_rbac_is_namespaced_and_least_privilege(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    _, docs = scenario
    kinds = {d["kind"] for d in docs}
    assert "ClusterRole" not in kinds and "ClusterRoleBinding" not in kinds
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Role"}
    launcher = roles["rs-ragsweep-launcher"]
    verbs = {(g, r): set(rule["verbs"]) for rule in launcher["rules"] for g in rule["apiGroups"]
             for r in rule["resources"]}
    assert verbs[("batch", "jobs")] == {"create", "get", "list", "watch", "delete"}
    assert verbs[("", "pods/log")] == {"get"}
    assert ("", "secrets") not in verbs
    # the collector and arm accounts never call the API (no token mounted): no Role at all
    assert set(roles) == {"rs-ragsweep-launcher"}
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert [s["name"] for b in bindings for s in b["subjects"] if s["kind"] == "ServiceAccount"] \
        == ["rs-ragsweep-launcher"]


# --- pod security: NetworkPolicies, credentials per container, security contexts ----------------

RELEASE = "rs"
SWEEP_ID = "fusion-0123456789ab"
# Who talks to whom (harness.index.tasks, the injector's containers, jobs/arm.py, jobs/collect.py,
# the helm test pods): service -> (port, its clients). Egress is the same table read the other way.
SERVICES: dict[str, tuple[int, frozenset[str]]] = {
    "opensearch": (9200, frozenset({"worker-embedding", "worker-cpu", "injector", "arm", "test"})),
    "postgresql": (5432, frozenset({"worker-embedding", "worker-cpu", "injector", "arm", "test"})),
    "redis": (6379, frozenset({"worker-embedding", "worker-cpu", "injector", "test"})),
    # the workers keep each file's ingest shard there (the injector's state folder is in its own pod)
    "object-store": (9000, frozenset({"worker-embedding", "worker-cpu", "injector", "arm", "collector", "test"})),
}
EXPECTED_EGRESS: dict[str, frozenset[str]] = {
    "opensearch": frozenset(), "postgresql": frozenset(), "redis": frozenset(), "object-store": frozenset(),
    "worker-embedding": frozenset({"object-store", "redis", "opensearch", "postgresql"}),
    "worker-cpu": frozenset({"object-store", "redis", "opensearch", "postgresql"}),
    "injector": frozenset({"object-store", "redis", "opensearch", "postgresql"}),
    "arm": frozenset({"object-store", "opensearch", "postgresql"}),
    "collector": frozenset({"object-store"}),
    "test": frozenset({"opensearch", "postgresql", "redis", "object-store"}),
}
# (component, container) -> the credentials it may reference (secretKeyRef, or a Secret's key in a volume it
# mounts), by role; anything more or less fails. The os-* roles are OpenSearch's (opensearch.tls.enabled): its
# password, the CA its clients trust, and what only its nginx sees (certificate, key, htpasswd line).
_OS_CLIENT = frozenset({"os-password", "os-ca"})
EXPECTED_CREDENTIALS: dict[tuple[str, str], frozenset[str]] = {
    ("opensearch", "opensearch"): frozenset(),
    ("opensearch", "proxy"): frozenset({"os-cert", "os-key", "os-htpasswd"}),
    ("postgresql", "postgresql"): frozenset({"pg"}),
    ("redis", "redis"): frozenset({"redis"}),
    ("object-store", "bucket"): frozenset(),
    ("object-store", "s3"): frozenset({"s3-id", "s3-secret"}),
    ("worker-embedding", "worker"): frozenset({"s3-id", "s3-secret", "pg", "redis"}) | _OS_CLIENT,
    ("worker-cpu", "worker"): frozenset({"s3-id", "s3-secret", "pg", "redis"}) | _OS_CLIENT,
    ("injector", "fetch-corpora"): frozenset({"s3-id", "s3-secret"}),
    ("injector", "build-state"): frozenset({"s3-id", "s3-secret", "pg", "redis"}) | _OS_CLIENT,
    ("injector", "publish-state"): frozenset({"s3-id", "s3-secret"}),
    ("arm", "fetch-state"): frozenset({"s3-id", "s3-secret"}),
    ("arm", "fetch-reranker"): frozenset({"s3-id", "s3-secret"}),
    ("arm", "arm"): frozenset({"s3-id", "s3-secret", "pg"}) | _OS_CLIENT,
    ("arm", "legs"): frozenset({"s3-id", "s3-secret", "pg"}) | _OS_CLIENT,  # a legs Job: the arm's environment
    ("arm", "scores"): frozenset({"s3-id", "s3-secret", "pg"}) | _OS_CLIENT,  # a scores Job: the arm's env
    ("collector", "collector"): frozenset({"s3-id", "s3-secret"}),
    ("test", "opensearch"): _OS_CLIENT,
    ("test", "postgresql"): frozenset(),
    ("test", "redis"): frozenset({"redis"}),
    ("test", "object-store"): frozenset({"s3-id", "s3-secret"}),
}


def _values(path: Path) -> dict[str, Any]:
    """The chart's values.yaml with the scenario's file over it (the keys these tests read)."""
    def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in over.items():
            out[key] = merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
                else value
        return out
    return merge(yaml.safe_load((CHART / "values.yaml").read_text()), yaml.safe_load(path.read_text()) or {})


def _release_pods(docs: list[dict[str, Any]], path: Path) -> list[tuple[str, dict[str, str], dict[str, Any]]]:
    """(where, labels, pod spec) of every pod the release runs: the chart's, and the launcher's Jobs
    (a CPU arm, a rerank arm, a legs and a scores Job, and the collector) built from the chart's own
    launcher ConfigMap."""
    pods = []
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet", "Job"):
            template = doc["spec"]["template"]
            pods.append((f"{doc['kind']}/{doc['metadata']['name']}", template["metadata"]["labels"], template["spec"]))
        elif doc["kind"] == "Pod":
            pods.append((f"Pod/{doc['metadata']['name']}", doc["metadata"]["labels"], doc["spec"]))
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    settings = parse_settings(configmap["data"]["settings.json"], path.name)
    cpu_arm = next(a for a in CATALOGUE.arms if not a.needs_reranker)
    gpu_arm = next(a for a in CATALOGUE.arms if a.needs_reranker)
    jobs = [build_arm_job(settings, cpu_arm, SWEEP_ID), build_collector_job(settings, SWEEP_ID, "fusion"),
            build_arm_job(settings, gpu_arm, SWEEP_ID, reranker_key="rerankers/r/reranker.tar.gz"),
            *_sharing_jobs(settings, SWEEP_ID)]
    for job in map(serialize, jobs):
        template = job["spec"]["template"]
        pods.append((f"launcher Job/{job['metadata']['name']}", template["metadata"]["labels"], template["spec"]))
    return pods


def _sharing_jobs(settings: Any, sweep_id: str) -> list[Any]:
    """The Jobs that publish what a group's arms share: its legs (CPU) and a part of its scores (GPU)."""
    rerank = [a for a in CATALOGUE.arms if a.needs_reranker]
    legs = f"sweeps/{sweep_id}/legs/0123456789abcdef/legs.json"
    return [build_legs_job(settings, rerank, sweep_id, "legs-x", legs),
            build_scores_job(settings, rerank, sweep_id, "scores-x", legs=legs, part=(0, 2),
                             scores=f"sweeps/{sweep_id}/scores/x.json", reranker_key="rerankers/r/reranker.tar.gz")]


def _policies(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == "NetworkPolicy"]


def _selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    selector = policy["spec"]["podSelector"]
    assert set(selector) <= {"matchLabels"}, policy["metadata"]["name"]
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _peer(peer: dict[str, Any]) -> str:
    """A policy peer as one readable word: pod:<component>, dns, namespace:<name>, cidr:<block>."""
    if "ipBlock" in peer:
        assert set(peer) == {"ipBlock"} and "except" not in peer["ipBlock"], peer
        return f"cidr:{peer['ipBlock']['cidr']}"
    if "namespaceSelector" in peer:
        namespace = peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        if "podSelector" in peer:
            assert (namespace, peer["podSelector"]) == ("kube-system", {"matchLabels": {"k8s-app": "kube-dns"}}), peer
            return "dns"
        return f"namespace:{namespace}"
    labels = peer["podSelector"]["matchLabels"]
    assert set(labels) == {"app.kubernetes.io/instance", "app.kubernetes.io/component"}, peer
    assert labels["app.kubernetes.io/instance"] == RELEASE, peer
    return f"pod:{labels['app.kubernetes.io/component']}"


def _allowed(policies: list[dict[str, Any]], labels: dict[str, str], direction: str) -> set[tuple[str, str, int]]:
    """Every (peer, protocol, port) the policies that select a pod with ``labels`` allow in ``direction``."""
    key, side = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    allowed = set()
    for policy in policies:
        if not _selects(policy, labels) or direction not in policy["spec"]["policyTypes"]:
            continue
        for rule in policy["spec"].get(key) or []:
            assert rule.get(side) and rule.get("ports"), f"{policy['metadata']['name']}: a rule open to all"
            allowed |= {(_peer(p), port.get("protocol", "TCP"), port["port"]) for p in rule[side]
                        for port in rule["ports"]}
    return allowed


def _expected_traffic(path: Path, component: str) -> tuple[set[tuple[str, str, int]], set[tuple[str, str, int]]]:
    """(ingress, egress) a component should have under the scenario's values, from the tables above."""
    values = _values(path)
    policy = values["networkPolicy"]
    tests = values["tests"]["enabled"]
    external = values["objectStore"]["mode"] == "external"
    ingress: set[tuple[str, str, int]] = set()
    if component in SERVICES and not (component == "object-store" and external):
        port, clients = SERVICES[component]
        ingress = {(f"pod:{c}", "TCP", port) for c in clients if tests or c != "test"}
        ingress |= {(f"namespace:{n}", "TCP", port) for n in policy["allowNamespaces"]}
    egress = {("dns", proto, port) for port in policy["dnsPorts"] for proto in ("UDP", "TCP")}
    for service in EXPECTED_EGRESS[component]:
        if service == "object-store" and external:
            endpoint_port = 443 if values["objectStore"]["endpoint"].startswith("https://") else 80
            egress |= {(f"cidr:{c}", "TCP", endpoint_port) for c in policy["externalObjectStoreCIDRs"]}
        else:
            egress.add((f"pod:{service}", "TCP", SERVICES[service][0]))
    return ingress, egress


def test_every_pod_of_the_release_is_under_default_deny_both_ways(
        scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    path, docs = scenario
    policies = _policies(docs)
    for policy in policies:
        assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/instance"] == RELEASE
    deny = [p for p in policies if not p["spec"].get("ingress") and not p["spec"].get("egress")
            and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}]
    pods = _release_pods(docs, path)
    components = {labels["app.kubernetes.io/component"] for _, labels, _ in pods}
    assert components >= {"opensearch", "postgresql", "redis", "worker-embedding", "worker-cpu", "injector", "arm",
                          "collector"}, components
    for where, labels, _ in pods:
        assert any(_selects(p, labels) for p in deny), f"{where}: no default-deny selects it"
        own = [p for p in policies if _selects(p, labels)
               and p["spec"]["podSelector"]["matchLabels"].get("app.kubernetes.io/component")]
        assert [set(p["spec"]["policyTypes"]) for p in own] == [{"Ingress", "Egress"}], \
            f"{where}: wants exactly one policy of its own, with both policyTypes"
    assert not any(_selects(p, {"app.kubernetes.io/instance": "another-release", "app.kubernetes.io/component": c})
                   for p in policies for c in components)


def test_each_component_has_exactly_the_traffic_it_needs(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    path, docs = scenario
    policies = _policies(docs)
    seen = set()
    for where, labels, _ in _release_pods(docs, path):
        component = labels["app.kubernetes.io/component"]
        seen.add(component)
        ingress, egress = _expected_traffic(path, component)
        assert _allowed(policies, labels, "Ingress") == ingress, f"{where} ({component}) ingress"
        assert _allowed(policies, labels, "Egress") == egress, f"{where} ({component}) egress"
    assert ("test" in seen) == _values(path)["tests"]["enabled"]
    assert ("object-store" in seen) == (_values(path)["objectStore"]["mode"] == "internal")


@functools.lru_cache(maxsize=1)
def _rendered_external() -> list[dict[str, Any]]:
    return render(str(CHART / "ci" / "existing-secrets-values.yaml"))


@pytest.mark.parametrize(("component", "ingress", "egress"), [
    ("opensearch", {("pod:worker-embedding", "TCP", 9200), ("pod:worker-cpu", "TCP", 9200),
                    ("pod:injector", "TCP", 9200), ("pod:arm", "TCP", 9200), ("pod:test", "TCP", 9200),
                    ("namespace:monitoring", "TCP", 9200)}, set()),
    ("redis", {("pod:worker-embedding", "TCP", 6379), ("pod:worker-cpu", "TCP", 6379), ("pod:injector", "TCP", 6379),
               ("pod:test", "TCP", 6379), ("namespace:monitoring", "TCP", 6379)}, set()),
    ("arm", set(), {("cidr:203.0.113.0/24", "TCP", 443), ("pod:opensearch", "TCP", 9200),
                    ("pod:postgresql", "TCP", 5432)}),
    ("collector", set(), {("cidr:203.0.113.0/24", "TCP", 443)}),
    ("injector", set(), {("cidr:203.0.113.0/24", "TCP", 443), ("pod:opensearch", "TCP", 9200),
                         ("pod:postgresql", "TCP", 5432), ("pod:redis", "TCP", 6379)}),
])
def test_external_store_scenario_spelled_out(component: str, ingress: set[Any], egress: set[Any]) -> None:
    """The table above, written out by hand for the external-store scenario (no derivation to trust)."""
    docs = _rendered_external()
    dns = {("dns", "UDP", 53), ("dns", "TCP", 53)}
    labels = {"app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/component": component}
    assert _allowed(_policies(docs), labels, "Ingress") == ingress
    assert _allowed(_policies(docs), labels, "Egress") == egress | dns


@pytest.mark.parametrize("extra", [(), ("objectStore.mode=external", "objectStore.endpoint=http://10.1.2.3:9000",
                                        "objectStore.existingSecret=s3")], ids=["internal", "external"])
def test_network_policy_disabled_renders_none(extra: tuple[str, ...]) -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"), sets=("networkPolicy.enabled=false", *extra))
    assert _policies(docs) == []


def test_external_store_port_comes_from_the_endpoint() -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"),
                  sets=("objectStore.mode=external", "objectStore.endpoint=http://10.1.2.3:9100",
                        "objectStore.existingSecret=s3", "networkPolicy.externalObjectStoreCIDRs={10.1.2.3/32}"))
    labels = {"app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/component": "collector"}
    assert _allowed(_policies(docs), labels, "Egress") == {("cidr:10.1.2.3/32", "TCP", 9100),
                                                           ("dns", "UDP", 53), ("dns", "TCP", 53)}


def test_external_cidrs_are_refused_for_the_internal_store() -> None:
    result = helm("template", "rs", str(CHART), "--kube-version", KUBE_VERSION,
                  "-f", str(CHART / "ci" / "default-values.yaml"),
                  "--set", "networkPolicy.externalObjectStoreCIDRs={10.0.0.0/8}", check=False)
    assert result.returncode != 0 and "externalObjectStoreCIDRs: set only for objectStore.mode external" \
        in result.stderr, result.stderr


def _tls(path: Path) -> bool:
    return bool(_values(path)["opensearch"]["tls"]["enabled"])


def _secret_roles(path: Path) -> dict[tuple[str, str], str]:
    values = _values(path)
    pg, redis, store, search = values["postgresql"], values["redis"], values["objectStore"], values["opensearch"]
    s3 = store["existingSecret"] or "rs-ragsweep-object-store"
    tls = search["tls"]["existingSecret"] or "rs-ragsweep-opensearch-tls"
    auth = search["auth"]["existingSecret"] or "rs-ragsweep-opensearch-auth"
    ca = search["tls"]["existingSecret"] or "rs-ragsweep-opensearch-ca"
    return {(pg["existingSecret"] or "rs-ragsweep-postgresql", pg["passwordKey"]): "pg",
            (redis["existingSecret"] or "rs-ragsweep-redis", redis["passwordKey"]): "redis",
            (s3, store["accessKeyIdKey"]): "s3-id", (s3, store["secretAccessKeyKey"]): "s3-secret",
            (auth, search["auth"]["passwordKey"]): "os-password", (auth, search["auth"]["htpasswdKey"]): "os-htpasswd",
            (tls, "tls.crt"): "os-cert", (tls, "tls.key"): "os-key", (ca, "ca.crt"): "os-ca"}


def _expected_credentials(path: Path, key: tuple[str, str]) -> frozenset[str]:
    expected = EXPECTED_CREDENTIALS[key]
    return expected if _tls(path) else frozenset(r for r in expected if not r.startswith("os-"))


def _mounted_secret_keys(where: str, spec: dict[str, Any], container: dict[str, Any]) -> list[tuple[str, str]]:
    """(Secret, key) of every Secret key in a volume the container mounts; a volume must name its keys (items):
    a whole Secret mounted would hand over keys added to it later."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    sources = []
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"], {})  # absent: a StatefulSet's volumeClaimTemplate
        if "secret" in volume:
            sources.append({"name": volume["secret"]["secretName"], "items": volume["secret"].get("items")})
        sources += [source["secret"] for source in volume.get("projected", {}).get("sources", []) if "secret" in source]
    for source in sources:
        assert source.get("items"), f"{where}/{container['name']}: mounts all of Secret {source['name']}"
    return [(source["name"], item["key"]) for source in sources for item in source["items"]]


def test_each_container_references_only_the_credentials_it_uses(
        scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    path, docs = scenario
    roles = _secret_roles(path)
    seen = set()
    for where, labels, spec in _release_pods(docs, path):
        for c in spec.get("initContainers", []) + spec["containers"]:
            key = (labels["app.kubernetes.io/component"], c["name"])
            seen.add(key)
            assert "envFrom" not in c, f"{where}/{c['name']}: envFrom hands over a whole Secret"
            refs = [(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
                    for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
            refs += _mounted_secret_keys(where, spec, c)
            assert all(ref in roles for ref in refs), f"{where}/{c['name']}: unknown Secret in {refs}"
            assert {roles[ref] for ref in refs} == _expected_credentials(path, key), f"{where}/{c['name']}"
    expected = {k for k in EXPECTED_CREDENTIALS if k[0] not in ("test", "object-store")}
    assert expected - {("opensearch", "proxy")} <= seen
    assert (("opensearch", "proxy") in seen) == _tls(path)


def test_every_container_has_an_ephemeral_storage_request_and_limit(
        scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    """Scratch volumes, logs and a container's writable layer all count against a node's disk: without a
    limit, one arm unpacking a large state can fill it and have the kubelet evict its neighbours."""
    path, docs = scenario
    missing = [f"{where}/{c['name']}" for where, _, spec in _release_pods(docs, path)
               for c in spec.get("initContainers", []) + spec["containers"]
               if not ({"requests", "limits"} <= set(c.get("resources", {}))
                       and "ephemeral-storage" in c["resources"]["requests"]
                       and "ephemeral-storage" in c["resources"]["limits"])]
    assert not missing, missing


def test_no_secret_reaches_a_command_line(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    """A container's command and args are in every process listing on the node (/proc/<pid>/cmdline) and in
    the pod spec: no secretKeyRef variable is expanded into them ($(VAR)), and no generated value is in them."""
    path, docs = scenario
    secret_values = {base64.b64decode(v).decode() for d in docs if d["kind"] == "Secret" for v in d["data"].values()}
    offending = []
    for where, _, spec in _release_pods(docs, path):
        for c in spec.get("initContainers", []) + spec["containers"]:
            secret_vars = {e["name"] for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
            words = [*c.get("command", []), *c.get("args", [])]
            for word in words:
                expanded = set(re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", word)) & secret_vars
                if expanded or any(v in word for v in secret_values):
                    offending.append(f"{where}/{c['name']}: {word!r}")
    assert not offending, offending


def test_the_collector_job_runs_as_the_collector_account(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    """The launcher ConfigMap names the collector's account; the collector Job runs as it, and the arm Jobs as
    the arms' (both accounts are the release's own, with no Role and no token)."""
    path, docs = scenario
    accounts = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    settings = parse_settings(configmap["data"]["settings.json"], path.name)
    collector = serialize(build_collector_job(settings, SWEEP_ID, "fusion"))["spec"]["template"]["spec"]
    assert collector["serviceAccountName"] == "rs-ragsweep-collector" and "rs-ragsweep-collector" in accounts
    arm = serialize(build_arm_job(settings, next(a for a in CATALOGUE.arms if not a.needs_reranker), SWEEP_ID))
    assert arm["spec"]["template"]["spec"]["serviceAccountName"] == "rs-ragsweep-arm" and "rs-ragsweep-arm" in accounts


def test_every_workload_runs_as_its_own_account(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    """One ServiceAccount per component, named after it, with no token: a Role later bound to one account
    (or to the namespace's `default`) reaches that component alone. The only other account is the
    launcher's, and no account is left unused."""
    path, docs = scenario
    accounts = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ServiceAccount"}
    wrong = [f"{where} ({labels['app.kubernetes.io/component']}): {spec.get('serviceAccountName', 'default')}"
             for where, labels, spec in _release_pods(docs, path)
             if spec.get("serviceAccountName") != f"rs-ragsweep-{labels['app.kubernetes.io/component']}"
             or spec.get("automountServiceAccountToken") is not False]
    assert not wrong, wrong
    used = {spec["serviceAccountName"] for _, _, spec in _release_pods(docs, path)}
    assert set(accounts) == used | {"rs-ragsweep-launcher"}
    assert all(a["automountServiceAccountToken"] is False for a in accounts.values())


def test_every_container_is_non_root_on_a_read_only_root(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    path, docs = scenario
    for where, _, spec in _release_pods(docs, path):
        for c in spec.get("initContainers", []) + spec["containers"]:
            context = c.get("securityContext", {})
            assert context.get("readOnlyRootFilesystem") is True, f"{where}/{c['name']}"
            assert context.get("runAsNonRoot") is True, f"{where}/{c['name']}"
            assert context.get("allowPrivilegeEscalation") is False, f"{where}/{c['name']}"


def test_gpu_scenario_places_the_embedding_worker_on_gpu_nodes() -> None:
    docs = render(str(CHART / "ci" / "gpu-rerank-values.yaml"))
    workers = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    gpu, cpu = workers["rs-ragsweep-worker-embedding"], workers["rs-ragsweep-worker-cpu"]
    assert gpu["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert gpu["nodeSelector"]["nvidia.com/gpu.present"] == "true"
    assert "nvidia.com/gpu" not in cpu["containers"][0]["resources"]["limits"]
    assert "tolerations" not in cpu and cpu["nodeSelector"] == {"ragsweep.io/pool": "cpu"}


def test_without_gpus_the_cross_encoder_pods_are_cpu_pods() -> None:
    """gpu.enabled false: a rerank arm's Job and a scores Job run the CPU image on the arms' nodes, ask for no
    GPU, score on the CPU with the whole cores of the pod's request, and the sweep's identity says so; no GPU
    image needed."""
    from harness.sweep.k8s.settings import rerank_scorer
    from harness.sweep.task import Task

    docs = render(str(CHART / "ci" / "no-gpu-values.yaml"))
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    settings = parse_settings(configmap["data"]["settings.json"], "no-gpu-values.yaml")
    assert not settings.gpu.enabled and settings.images.gpu is None
    assert rerank_scorer(settings) == ("torch", "cpu")
    rerank = next(a for a in CATALOGUE.arms if a.needs_reranker)
    arm = serialize(build_arm_job(settings, rerank, SWEEP_ID, reranker_key="rerankers/r/reranker.tar.gz"))
    scores = serialize(_sharing_jobs(settings, SWEEP_ID)[1])
    for job in (arm, scores):
        spec = job["spec"]["template"]["spec"]
        (main,) = spec["containers"]
        assert main["image"] == settings.images.cpu and all(c["image"] == settings.images.cpu
                                                            for c in spec["initContainers"])
        assert main["resources"]["limits"] == {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "8Gi"}, \
            main["resources"]
        assert "nodeSelector" not in spec and "tolerations" not in spec
        env = {e["name"]: e.get("value") for e in main["env"]}
        task = Task.from_json(env["RAGSWEEP_TASK"])
        assert (task.rerank_device, task.rerank_threads) == ("cpu", 2)
        assert [c["name"] for c in spec["initContainers"]] == ["fetch-state", "fetch-reranker"]
    # with GPUs (the defaults): the GPU image and resource, and no thread count (the GPU scores)
    gpu = parse_settings(json.dumps({**json.loads(configmap["data"]["settings.json"]),
                                     "images": {"cpu": settings.images.cpu, "gpu": settings.images.cpu},
                                     "gpu": {}}), "gpu")
    (main,) = serialize(build_arm_job(gpu, rerank, SWEEP_ID, reranker_key="k"))["spec"]["template"]["spec"][
        "containers"]
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "1" and rerank_scorer(gpu) == ("torch", "cuda")
    task = Task.from_json(next(e["value"] for e in main["env"] if e["name"] == "RAGSWEEP_TASK"))
    assert (task.rerank_device, task.rerank_threads) == ("cuda", 0)
    # a launcher config that enables GPUs but names no GPU image is refused, on one line
    with pytest.raises(InputDataError, match=r"^gpu: [^\n]*images.gpu is required when gpu.enabled"):
        parse_settings(json.dumps({**json.loads(configmap["data"]["settings.json"]), "gpu": {"enabled": True}}),
                       "gpu")
    # the embedding worker on a GPU needs GPU nodes
    result = helm("template", "rs", str(CHART), "--kube-version", KUBE_VERSION, "-f",
                  str(CHART / "ci" / "no-gpu-values.yaml"), "--set", "workers.embedding.gpu=true", check=False)
    assert result.returncode != 0 and "workers.embedding.gpu: needs gpu.enabled" in result.stderr, result.stderr


def test_the_launcher_configmap_is_what_the_builders_read(scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    path, docs = scenario
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    settings = parse_settings(configmap["data"]["settings.json"], path.name)
    assert settings.images.cpu.endswith("@" + ZERO)
    secrets = {d["metadata"]["name"] for d in docs if d["kind"] == "Secret"}
    if settings.credentials is not None and "existing" not in path.name:
        assert settings.credentials.access_key_id.name in secrets
    for arm in CATALOGUE.arms:
        job = serialize(build_arm_job(settings, arm, "fusion-0123456789ab", reranker_key="rerankers/r/reranker.tar.gz"))
        kv.validate(job, KUBE_VERSION, strict=True)
    kv.validate(serialize(build_collector_job(settings, "fusion-0123456789ab", "fusion")), KUBE_VERSION, strict=True)
    for job in _sharing_jobs(settings, "fusion-0123456789ab"):
        kv.validate(serialize(job), KUBE_VERSION, strict=True)


def test_validate_values_fails_once_listing_every_problem() -> None:
    result = helm("template", "rs", str(CHART), "--kube-version", KUBE_VERSION,
                  "--set", "objectStore.mode=external",
                  "--set-string", "arm.nodeSelector.nvidia\\.com/gpu\\.present=true",
                  "--set", "corpus.names={a,a}", check=False)
    assert result.returncode != 0
    message = result.stderr
    assert message.count("problem(s) with the values") == 1
    assert "11 problem(s)" in message
    for expected in ("images.cpu.digest", "images.worker.digest", "images.gpu.digest", "opensearch.image.digest",
                     "postgresql.image.digest", "redis.image.digest", "objectStore.endpoint: required",
                     "objectStore.existingSecret: required", "corpus.names: a corpus is named twice",
                     "CPU arms would land on GPU nodes", "networkPolicy.externalObjectStoreCIDRs: required"):
        assert expected in message, expected


@pytest.mark.parametrize(("setting", "complaint"), [
    ("objectStore.mode=bogus", "/objectStore/mode"),
    ("jobs.backoffLimit=99", "/jobs/backoffLimit"),
    ("opensearch.knnEngine=annoy", "/opensearch/knnEngine"),
    ("opensearch.colour=blue", "colour"),
    ("opensearch.auth.scheme=md5", "/opensearch/auth/scheme"),
    ("opensearch.auth.username=a:b", "/opensearch/auth/username"),
])
def test_the_schema_refuses_bad_and_unknown_values(setting: str, complaint: str) -> None:
    result = helm("template", "rs", str(CHART), "--kube-version", KUBE_VERSION,
                  "-f", str(CHART / "ci" / "default-values.yaml"), "--set", setting, check=False)
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


def test_every_value_is_documented_with_a_doc_comment() -> None:
    """Each key is preceded by a `# --` comment, or sits under a key that is (documented whole)."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    key_line = re.compile(r"^( *)(- )?([A-Za-z0-9_.\\/-]+):( .*)?$")
    documented_at: list[tuple[int, bool]] = []  # (indent, documented) of the enclosing keys
    undocumented = []
    for i, line in enumerate(lines):
        match = key_line.match(line)
        if not match or match.group(2):
            continue
        indent = len(match.group(1))
        while documented_at and documented_at[-1][0] >= indent:
            documented_at.pop()
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        documented = previous.startswith("# --")
        covered = documented or any(d for _, d in documented_at)
        value = (match.group(4) or "").strip()
        is_block = value == "" and i + 1 < len(lines) and lines[i + 1].startswith(" " * (indent + 2))
        if not covered and not is_block:
            undocumented.append(f"line {i + 1}: {line.strip()}")
        documented_at.append((indent, covered))
    assert not undocumented, undocumented


def _leaves(node: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _leaves(value, f"{path}.{key}" if path else key)]
    if isinstance(node, list):
        return [leaf for i, value in enumerate(node) for leaf in _leaves(value, f"{path}[{i}]")]
    return [(path, node)]


# Keys that name a Secret or a key inside one: references, not credentials.
_REFERENCE_KEYS = {"existingSecret", "passwordKey", "accessKeyIdKey", "secretAccessKeyKey", "htpasswdKey"}
_CREDENTIAL_KEY = re.compile(r"pass(word)?|secret|token|credential|access.?key|private", re.IGNORECASE)


@pytest.mark.parametrize("values", [CHART / "values.yaml", *SCENARIOS], ids=lambda p: p.name)
def test_no_secret_data_in_values_files(values: Path) -> None:
    doc = yaml.safe_load(values.read_text())
    offending = [(path, value) for path, value in _leaves(doc)
                 if _CREDENTIAL_KEY.search(path.rsplit(".", 1)[-1]) and path.rsplit(".", 1)[-1] not in _REFERENCE_KEYS
                 and value not in (None, "", [], {})]
    assert not offending, offending


def test_generated_secrets_are_random_and_in_no_values_file() -> None:
    values_text = "".join(p.read_text() for p in [CHART / "values.yaml", *SCENARIOS])
    first = render(str(CHART / "ci" / "default-values.yaml"))
    second = render(str(CHART / "ci" / "default-values.yaml"))

    def secret_values(docs: list[dict[str, Any]]) -> dict[str, str]:
        return {f"{d['metadata']['name']}/{k}": base64.b64decode(v).decode()
                for d in docs if d["kind"] == "Secret" for k, v in d["data"].items()}

    a, b = secret_values(first), secret_values(second)
    passwords = {"rs-ragsweep-postgresql/password", "rs-ragsweep-redis/password",
                 "rs-ragsweep-object-store/access-key-id", "rs-ragsweep-object-store/secret-access-key",
                 "rs-ragsweep-opensearch-auth/password"}
    assert set(a) == passwords | {"rs-ragsweep-opensearch-auth/htpasswd", "rs-ragsweep-opensearch-tls/tls.crt",
                                  "rs-ragsweep-opensearch-tls/tls.key", "rs-ragsweep-opensearch-tls/ca.crt",
                                  "rs-ragsweep-opensearch-ca/ca.crt"}
    for key in passwords:
        assert re.fullmatch(r"[A-Za-z0-9]{32}", a[key]), key
    for key, value in a.items():
        assert value != b[key] and value not in values_text, key
    # nginx's line is the clients' password ({PLAIN}, the default scheme); the clients' CA is the proxy's
    password = a["rs-ragsweep-opensearch-auth/password"]
    assert a["rs-ragsweep-opensearch-auth/htpasswd"] == f"ragsweep:{{PLAIN}}{password}\n"
    assert a["rs-ragsweep-opensearch-ca/ca.crt"] == a["rs-ragsweep-opensearch-tls/ca.crt"]


def test_existing_secrets_scenario_generates_no_secret() -> None:
    docs = render(str(CHART / "ci" / "existing-secrets-values.yaml"))
    assert [d for d in docs if d["kind"] == "Secret"] == []
    text = yaml.safe_dump_all(docs)
    for name in ("ragsweep-pg", "ragsweep-redis", "ragsweep-s3", "ragsweep-opensearch-tls", "ragsweep-opensearch"):
        assert f"name: {name}" in text


# --- OpenSearch behind its TLS proxy (opensearch.tls.enabled) ----------------------------------------------------

def _by_kind(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def test_opensearchs_transport_is_on_its_pods_loopback_and_its_service_serves_9200_only(
        scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    """One node talks to no other: its transport (9300) is bound to the pod's loopback, declared by no container
    and served by no Service (it was both); HTTP or nginx's TLS on 9200 is the one port, in every scenario."""
    path, docs = scenario
    service = _by_kind(docs, "Service", "rs-ragsweep-opensearch")["spec"]["ports"]
    assert [p["port"] for p in service] == [9200]
    pod = _by_kind(docs, "StatefulSet", "rs-ragsweep-opensearch")["spec"]["template"]["spec"]
    declared = [p["containerPort"] for c in pod["containers"] for p in c.get("ports", [])]
    assert declared == [9200]
    (search,) = [c for c in pod["containers"] if c["name"] == "opensearch"]
    assert "-Etransport.host=127.0.0.1" in search["args"]
    assert ("-Ehttp.host=127.0.0.1" in search["args"]) == _tls(path)  # HTTP stays on 0.0.0.0 unless nginx fronts it


def test_opensearch_listens_on_its_pods_loopback_and_nginx_serves_9200_with_tls_and_basic_auth() -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"))
    pod = _by_kind(docs, "StatefulSet", "rs-ragsweep-opensearch")["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in pod["containers"]}
    assert set(containers) == {"opensearch", "proxy"}
    search, proxy = containers["opensearch"], containers["proxy"]
    assert {"-Ehttp.host=127.0.0.1", "-Ehttp.port=9201"} <= set(search["args"])
    assert "ports" not in search  # neither HTTP nor the transport is on the pod's IP
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):  # the kubelet cannot reach the loopback
        command = search[probe]["exec"]["command"]
        assert command[:2] == ["bash", "-c"] and "/dev/tcp/127.0.0.1/9201" in command[2], probe
    assert proxy["image"] == search["image"]  # the same image's Debian nginx
    assert proxy["command"] == ["nginx", "-p", "/tmp/", "-e", "stderr", "-c",
                                "/etc/ragsweep/opensearch-proxy/nginx.conf"]
    assert proxy["ports"] == [{"name": "https", "containerPort": 9200}]
    service = _by_kind(docs, "Service", "rs-ragsweep-opensearch")["spec"]["ports"]
    assert {"name": "https", "port": 9200, "targetPort": "https"} in service
    (volume,) = [v for v in pod["volumes"] if v["name"] == "proxy"]
    sources = {next(iter(src)): src[next(iter(src))] for src in volume["projected"]["sources"] if "configMap" in src}
    assert sources["configMap"]["name"] == "rs-ragsweep-opensearch-proxy"
    conf = _by_kind(docs, "ConfigMap", "rs-ragsweep-opensearch-proxy")["data"]["nginx.conf"]
    for line in ("listen 9200 ssl;", "server 127.0.0.1:9201;", "ssl_certificate tls.crt;",
                 "ssl_certificate_key tls.key;", 'auth_basic "opensearch";', "auth_basic_user_file htpasswd;",
                 'proxy_set_header Authorization "";'):
        assert conf.count(line) == 1, line
    password = base64.b64decode(_by_kind(docs, "Secret", "rs-ragsweep-opensearch-auth")["data"]["password"]).decode()
    assert not [d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap" and password in json.dumps(d)]


def test_every_opensearch_client_gets_an_https_url_assembled_from_its_secret_and_the_ca(
        scenario: tuple[Path, list[dict[str, Any]]]) -> None:
    """Every container that has RAGSWEEP_OPENSEARCH_URL (the chart's and the launcher's Jobs'): with TLS, the URL is
    https with $(OPENSEARCH_USERNAME) and $(OPENSEARCH_PASSWORD), both listed before it (Kubernetes expands only
    those), the password by secretKeyRef, and SSL_CERT_FILE a file of a mounted volume holding a Secret's ca.crt;
    without TLS, plain http and none of it."""
    path, docs = scenario
    tls = _tls(path)
    clients = set()
    for where, labels, spec in _release_pods(docs, path):
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec.get("initContainers", []) + spec["containers"]:
            env = c.get("env", [])
            names = [e["name"] for e in env]
            if "RAGSWEEP_OPENSEARCH_URL" not in names:
                assert not {"OPENSEARCH_PASSWORD", "SSL_CERT_FILE"} & set(names), f"{where}/{c['name']}"
                continue
            clients.add(labels["app.kubernetes.io/component"])
            url = env[names.index("RAGSWEEP_OPENSEARCH_URL")]["value"]
            if not tls:
                assert url == "http://rs-ragsweep-opensearch:9200", where
                assert not {"OPENSEARCH_PASSWORD", "SSL_CERT_FILE"} & set(names), f"{where}/{c['name']}"
                continue
            assert url == "https://$(OPENSEARCH_USERNAME):$(OPENSEARCH_PASSWORD)@rs-ragsweep-opensearch:9200", where
            assert names.index("OPENSEARCH_USERNAME") < names.index("RAGSWEEP_OPENSEARCH_URL"), f"{where}/{c['name']}"
            assert names.index("OPENSEARCH_PASSWORD") < names.index("RAGSWEEP_OPENSEARCH_URL"), f"{where}/{c['name']}"
            assert "secretKeyRef" in env[names.index("OPENSEARCH_PASSWORD")]["valueFrom"], where
            ca_file = env[names.index("SSL_CERT_FILE")]["value"]
            assert ca_file == "/etc/ragsweep/opensearch-ca/ca.crt", where
            (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == str(Path(ca_file).parent)]
            assert mount.get("readOnly") is True, where
            items = volumes[mount["name"]]["secret"]["items"]
            assert items == [{"key": "ca.crt", "path": "ca.crt"}], where
    expected = {"worker-embedding", "worker-cpu", "injector", "arm"}
    assert clients == expected | ({"test"} if _values(path)["tests"]["enabled"] else set())


def _openssl(*args: str, cwd: Path) -> str:
    openssl = shutil.which("openssl") or pytest.skip("no openssl to read the certificate")
    return subprocess.run([openssl, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_the_generated_certificate_names_the_service_and_is_signed_by_the_ca_the_clients_get(tmp_path: Path) -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"))
    tls = _by_kind(docs, "Secret", "rs-ragsweep-opensearch-tls")
    assert tls["type"] == "kubernetes.io/tls"
    for key in ("tls.crt", "tls.key", "ca.crt"):
        (tmp_path / key).write_bytes(base64.b64decode(tls["data"][key]))
    clients_ca = base64.b64decode(_by_kind(docs, "Secret", "rs-ragsweep-opensearch-ca")["data"]["ca.crt"])
    assert clients_ca == (tmp_path / "ca.crt").read_bytes()
    assert _openssl("verify", "-CAfile", "ca.crt", "-purpose", "sslserver", "tls.crt", cwd=tmp_path).strip() \
        == "tls.crt: OK"
    names = _openssl("x509", "-in", "tls.crt", "-noout", "-ext", "subjectAltName", cwd=tmp_path)
    for name in ("DNS:rs-ragsweep-opensearch", "DNS:rs-ragsweep-opensearch.ragsweep-test",
                 "DNS:rs-ragsweep-opensearch.ragsweep-test.svc",
                 "DNS:rs-ragsweep-opensearch.ragsweep-test.svc.cluster.local", "DNS:localhost", "IP Address:127.0.0.1"):
        assert name in names, names
    assert _openssl("x509", "-in", "tls.crt", "-noout", "-pubkey", cwd=tmp_path) \
        == _openssl("pkey", "-in", "tls.key", "-pubout", cwd=tmp_path)  # the key is the certificate's


def test_bcrypt_scheme_writes_helms_bcrypt_line_for_the_same_password() -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"), sets=("opensearch.auth.scheme=bcrypt",))
    data = _by_kind(docs, "Secret", "rs-ragsweep-opensearch-auth")["data"]
    line = base64.b64decode(data["htpasswd"]).decode()
    assert re.fullmatch(r"ragsweep:\$2a\$10\$[./A-Za-z0-9]{53}\n", line), line


def test_plain_opensearch_renders_no_proxy_no_secret_and_refuses_its_tls_values() -> None:
    docs = render(str(CHART / "ci" / "plain-opensearch-values.yaml"))
    pod = _by_kind(docs, "StatefulSet", "rs-ragsweep-opensearch")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["opensearch"]
    assert not [d for d in docs if d["kind"] == "Secret" and "opensearch" in d["metadata"]["name"]]
    assert not [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-opensearch-proxy")]
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    assert parse_settings(configmap["data"]["settings.json"], "plain").opensearch_ca is None
    result = helm("template", "rs", str(CHART), "--kube-version", KUBE_VERSION,
                  "-f", str(CHART / "ci" / "plain-opensearch-values.yaml"),
                  "--set", "opensearch.auth.existingSecret=mine", "--set", "opensearch.tls.existingSecret=mine",
                  check=False)
    assert result.returncode != 0 and "2 problem(s)" in result.stderr, result.stderr
    assert "opensearch.auth.existingSecret: set only when opensearch.tls.enabled" in result.stderr
    assert "opensearch.tls.existingSecret: set only when opensearch.tls.enabled" in result.stderr


def test_the_builders_tests_chart_defaults_are_the_charts() -> None:
    """tests/test_k8s_builders.py's CHART_DEFAULTS (from which manifests/arm-job-*.yaml are checked) is what the
    chart's launcher ConfigMap says for its defaults, but for the images (placeholders in both)."""
    from test_k8s_builders import CHART_DEFAULTS

    docs = render(str(CHART / "ci" / "default-values.yaml"))
    (configmap,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-launcher")]
    chart = parse_settings(configmap["data"]["settings.json"], "default-values.yaml")
    assert chart.model_dump(exclude={"images"}) == CHART_DEFAULTS.model_dump(exclude={"images"})
