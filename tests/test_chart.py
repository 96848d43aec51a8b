"""The Helm chart, rendered and checked with the real tools: helm lint/template for every
ci/*-values.yaml scenario and strict Kubernetes schema validation (kubernetes-validate,
offline) of every rendered object; validateValues failing once with every problem; the
launcher ConfigMap the chart renders is what harness.sweep.k8s builds its Jobs from.

helm is built by `make k8s-tools` (Go module proxy, about 4 minutes cold); without it
these tests skip and say so.
"""

from __future__ import annotations

import base64
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

from harness.sweep.catalogue import CATALOGUE  # noqa: E402
from harness.sweep.k8s.builders import build_arm_job, build_collector_job, serialize  # noqa: E402
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
    collector = roles["rs-ragsweep-collector"]
    assert all(set(rule["verbs"]) <= {"get", "list", "watch"} for rule in collector["rules"])


def test_network_policy_admits_only_this_namespace() -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"))
    (policy,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert policy["spec"]["podSelector"] == {}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]


def test_gpu_scenario_places_the_embedding_worker_on_gpu_nodes() -> None:
    docs = render(str(CHART / "ci" / "gpu-rerank-values.yaml"))
    workers = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"}
    gpu, cpu = workers["rs-ragsweep-worker-embedding"], workers["rs-ragsweep-worker-cpu"]
    assert gpu["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert gpu["nodeSelector"]["nvidia.com/gpu.present"] == "true"
    assert "nvidia.com/gpu" not in cpu["containers"][0]["resources"]["limits"]
    assert "tolerations" not in cpu and cpu["nodeSelector"] == {"ragsweep.io/pool": "cpu"}


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


def test_validate_values_fails_once_listing_every_problem() -> None:
    result = helm("template", "rs", str(CHART), "--kube-version", KUBE_VERSION,
                  "--set", "objectStore.mode=external",
                  "--set-string", "arm.nodeSelector.nvidia\\.com/gpu\\.present=true",
                  "--set", "corpus.names={a,a}", check=False)
    assert result.returncode != 0
    message = result.stderr
    assert message.count("problem(s) with the values") == 1
    assert "7 problem(s)" in message
    for expected in ("images.cpu.digest", "images.worker.digest", "images.gpu.digest", "objectStore.endpoint: required",
                     "objectStore.existingSecret: required", "corpus.names: a corpus is named twice",
                     "CPU arms would land on GPU nodes"):
        assert expected in message, expected


@pytest.mark.parametrize(("setting", "complaint"), [
    ("objectStore.mode=bogus", "/objectStore/mode"),
    ("jobs.backoffLimit=99", "/jobs/backoffLimit"),
    ("opensearch.knnEngine=annoy", "/opensearch/knnEngine"),
    ("opensearch.colour=blue", "colour"),
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
_REFERENCE_KEYS = {"existingSecret", "passwordKey", "accessKeyIdKey", "secretAccessKeyKey"}
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
    assert set(a) == {"rs-ragsweep-postgresql/password", "rs-ragsweep-redis/password",
                      "rs-ragsweep-object-store/access-key-id", "rs-ragsweep-object-store/secret-access-key"}
    for key, value in a.items():
        assert re.fullmatch(r"[A-Za-z0-9]{32}", value), key
        assert value != b[key] and value not in values_text, key


def test_existing_secrets_scenario_generates_no_secret() -> None:
    docs = render(str(CHART / "ci" / "existing-secrets-values.yaml"))
    assert [d for d in docs if d["kind"] == "Secret"] == []
    text = yaml.safe_dump_all(docs)
    for name in ("ragsweep-pg", "ragsweep-redis", "ragsweep-s3"):
        assert f"name: {name}" in text
