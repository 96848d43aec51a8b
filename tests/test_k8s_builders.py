"""The pure Job builders: placement by stage, the Job policy, labels, env and no credentials."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")

from harness.errors import UsageError
from harness.sweep.catalogue import CATALOGUE, Arm
from harness.sweep.k8s.builders import (
    DETERMINISTIC_EXIT_CODES,
    arm_job_name,
    build_arm_job,
    build_collector_job,
    build_legs_job,
    build_scores_job,
    job_name,
    label_value,
    serialize,
)
from harness.sweep.k8s.settings import LauncherSettings
from harness.sweep.task import Task

ROOT = Path(__file__).resolve().parent.parent
DIGEST = "sha256:" + "ab" * 32
SWEEP = "fusion-0123456789ab"
RERANKER = "rerankers/0011223344556677/reranker.tar.gz"


def settings(**overrides: Any) -> LauncherSettings:
    doc: dict[str, Any] = {
        "release": "rs",
        "images": {"cpu": f"registry.example.com/ragsweep/ragsweep-cpu@{DIGEST}",
                   "gpu": f"registry.example.com/ragsweep/ragsweep-gpu@{DIGEST}"},
        "serviceAccount": "rs-ragsweep-arm",
        "store": "s3://ragsweep/ci",
        "s3Endpoint": "http://rs-ragsweep-object-store:9000",
        "credentials": {"accessKeyId": {"name": "rs-ragsweep-object-store", "key": "access-key-id"},
                        "secretAccessKey": {"name": "rs-ragsweep-object-store", "key": "secret-access-key"}},
        "extraEnv": {"RAGSWEEP_OPENSEARCH_URL": "http://rs-ragsweep-opensearch:9200",
                     "RAGSWEEP_PG_DSN": "postgresql://ragsweep@rs-ragsweep-postgresql:5432/ragsweep"},
        "secretEnv": [{"name": "PGPASSWORD", "secret": "rs-ragsweep-postgresql", "key": "password"}],
        "arm": {"policy": {"backoffLimit": 2, "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 600},
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
                "placement": {"nodeSelector": {"ragsweep.io/pool": "cpu"}}},
        "gpu": {"resourceName": "nvidia.com/gpu", "count": 1,
                "policy": {"backoffLimit": 1, "activeDeadlineSeconds": 5400, "ttlSecondsAfterFinished": 900},
                "placement": {"nodeSelector": {"nvidia.com/gpu.present": "true"},
                              "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                               "effect": "NoSchedule"}]}},
    }
    doc.update(overrides)
    return LauncherSettings.model_validate(doc)


S = settings()
# What the chart's defaults give for release "rs" (charts/ragsweep/templates/launcher-configmap.yaml);
# manifests/arm-job-*.yaml are this, with placeholders where a Job differs.
CHART_DEFAULTS = settings(
    store="s3://ragsweep",
    extraEnv={"RAGSWEEP_OPENSEARCH_URL": "https://$(OPENSEARCH_USERNAME):$(OPENSEARCH_PASSWORD)@rs-ragsweep-opensearch:9200",
              "OPENSEARCH_USERNAME": "ragsweep",
              "RAGSWEEP_OPENSEARCH_KNN_ENGINE": "lucene",
              "RAGSWEEP_PG_DSN": "postgresql://ragsweep@rs-ragsweep-postgresql:5432/ragsweep"},
    secretEnv=[{"name": "PGPASSWORD", "secret": "rs-ragsweep-postgresql", "key": "password"},
               {"name": "OPENSEARCH_PASSWORD", "secret": "rs-ragsweep-opensearch-auth", "key": "password"}],
    opensearchCa={"secret": "rs-ragsweep-opensearch-ca", "key": "ca.crt"},
    collectorServiceAccount="rs-ragsweep-collector",
    arm={"policy": {"backoffLimit": 1, "activeDeadlineSeconds": 7200, "ttlSecondsAfterFinished": 86400},
         "resources": {"requests": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "2Gi"},
                       "limits": {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "8Gi"}}},
    collector={"policy": {"backoffLimit": 1, "activeDeadlineSeconds": 1800, "ttlSecondsAfterFinished": 86400},
               "resources": {"requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
                             "limits": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "4Gi"}}},
    gpu={"policy": {"backoffLimit": 1, "activeDeadlineSeconds": 7200, "ttlSecondsAfterFinished": 86400},
         "resources": {"requests": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "4Gi"},
                       "limits": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "16Gi"}},
         "placement": {"nodeSelector": {"nvidia.com/gpu.present": "true"},
                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}},
)
LONG = Arm(name="a" * 70 + ".x_y-", family="fusion", axis="rank_constant", config={"rank_constant": 90})

# (arm, expects a GPU): every stage of the catalogue, and a name no label could carry as is.
CASES = [
    (CATALOGUE.family("fusion").arm("rrf-30-default"), False),
    (CATALOGUE.family("fusion").arm("norm-minmax-arith-w70-30"), False),
    (CATALOGUE.family("budget").arm("budget-48-12-4"), True),
    (CATALOGUE.family("pool").arm("pool-96"), True),
    (CATALOGUE.family("diversity").arm("diversity-only"), False),
    (CATALOGUE.family("diversity").arm("rerank-48-12-4"), True),
    (CATALOGUE.family("embedding").arm("embed-body"), False),
    (LONG, False),
]
IDS = [arm.name[:24] for arm, _ in CASES]


def job_for(arm: Arm) -> dict[str, Any]:
    doc: dict[str, Any] = serialize(build_arm_job(S, arm, SWEEP, reranker_key=RERANKER if arm.needs_reranker else None))
    return doc


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container["env"]}


def task_of(container: dict[str, Any]) -> Task:
    """The container's one input, its task (RAGSWEEP_TASK), read as the Job reads it."""
    return Task.from_json(env_of(container)["RAGSWEEP_TASK"]["value"], "RAGSWEEP_TASK")


@pytest.mark.parametrize(("arm", "gpu"), CASES, ids=IDS)
def test_placement_follows_the_stage(arm: Arm, gpu: bool) -> None:
    assert arm.needs_reranker is gpu
    pod = job_for(arm)["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    resources = container["resources"]
    if gpu:
        assert resources["limits"]["nvidia.com/gpu"] == "1" and resources["requests"]["nvidia.com/gpu"] == "1"
        assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        assert container["image"] == f"registry.example.com/ragsweep/ragsweep-gpu@{DIGEST}"
        task = task_of(container)
        assert task.reranker == Path(S.reranker_path)
        # the score cache on the scratch volume: the root filesystem is read-only
        scratch = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["scratch"]
        assert str(task.rerank_cache).startswith(scratch + "/")
        assert task.rerank_device == "cuda"  # the GPU it asks for runs the model
        assert [c["name"] for c in pod["initContainers"]] == ["fetch-state", "fetch-reranker"]
    else:
        assert "nvidia.com/gpu" not in json.dumps(resources)
        assert pod["nodeSelector"] == {"ragsweep.io/pool": "cpu"}
        assert "tolerations" not in pod
        assert container["image"] == f"registry.example.com/ragsweep/ragsweep-cpu@{DIGEST}"
        task = task_of(container)
        assert task.reranker is None and task.rerank_cache is None and task.rerank_device == "cpu"
        assert [c["name"] for c in pod["initContainers"]] == ["fetch-state"]


def test_each_job_runs_under_its_own_account() -> None:
    """The collector Job runs as the collector's service account (the chart's <release>-collector); arm, legs and
    scores Jobs as the arms'. No token is mounted in either. A release that names no collector account
    (an older ConfigMap) keeps the arms' account for it."""
    rerank = CATALOGUE.family("budget").arm("budget-48-12-4")
    arms = [serialize(build_arm_job(CHART_DEFAULTS, CATALOGUE.family("fusion").arm("rrf-60"), SWEEP)),
            serialize(build_arm_job(CHART_DEFAULTS, rerank, SWEEP, reranker_key=RERANKER)),
            serialize(build_legs_job(CHART_DEFAULTS, [rerank], SWEEP, "legs-x", "k")),
            serialize(build_scores_job(CHART_DEFAULTS, [rerank], SWEEP, "scores-x", legs="k", scores="s",
                                       part=(0, 1), reranker_key=RERANKER))]
    for job in arms:
        assert job["spec"]["template"]["spec"]["serviceAccountName"] == "rs-ragsweep-arm", job["metadata"]["name"]
    collector = serialize(build_collector_job(CHART_DEFAULTS, SWEEP, "fusion"))["spec"]["template"]["spec"]
    assert collector["serviceAccountName"] == "rs-ragsweep-collector"
    assert collector["automountServiceAccountToken"] is False
    older = serialize(build_collector_job(S, SWEEP, "fusion"))["spec"]["template"]["spec"]
    assert older["serviceAccountName"] == "rs-ragsweep-arm"


def test_init_containers_share_their_pods_ephemeral_storage() -> None:
    """An init container that unpacks the state or the reranker gets its pod's ephemeral-storage request and
    limit: the kubelet holds the pod to the larger of its init limits and its main containers' sum, and the
    unpacked files stay on the pod's volume, so a smaller limit there would not bound anything more."""
    rerank = CATALOGUE.family("budget").arm("budget-48-12-4")
    for arm, want in ((CATALOGUE.family("fusion").arm("rrf-60"), ("2Gi", "8Gi")), (rerank, ("4Gi", "16Gi"))):
        pod = serialize(build_arm_job(CHART_DEFAULTS, arm, SWEEP, reranker_key=RERANKER))["spec"]["template"]["spec"]
        for c in pod["initContainers"] + pod["containers"]:
            got = (c["resources"]["requests"]["ephemeral-storage"], c["resources"]["limits"]["ephemeral-storage"])
            assert got == want, (arm.name, c["name"], got)
    # a release whose shape names no ephemeral-storage gets none on the init containers either
    pod = serialize(build_arm_job(S, CATALOGUE.family("fusion").arm("rrf-60"), SWEEP))["spec"]["template"]["spec"]
    assert "ephemeral-storage" not in json.dumps(pod)


@pytest.mark.parametrize(("arm", "gpu"), CASES, ids=IDS)
def test_every_job_has_the_policy_and_labels(arm: Arm, gpu: bool) -> None:
    job = job_for(arm)
    spec = job["spec"]
    expected = (1, 5400, 900) if gpu else (2, 3600, 600)
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"], spec["ttlSecondsAfterFinished"]) == expected
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["automountServiceAccountToken"] is False and pod["serviceAccountName"] == "rs-ragsweep-arm"
    labels = job["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "ragsweep"
    assert labels["app.kubernetes.io/instance"] == "rs"
    assert labels["app.kubernetes.io/component"] == "arm"
    assert labels["app.kubernetes.io/managed-by"] == "ragsweep-launcher"
    assert labels["ragsweep.io/sweep-id"] == SWEEP and labels["ragsweep.io/family"] == arm.family
    assert labels["ragsweep.io/arm"] == label_value(arm.name)
    assert spec["template"]["metadata"]["labels"] == labels
    assert job["metadata"]["annotations"]["ragsweep.io/arm"] == arm.name  # the exact value
    for value in labels.values():
        assert len(value) <= 63 and re.fullmatch(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", value), value
    name = job["metadata"]["name"]
    assert len(name) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
    for container in pod["initContainers"] + pod["containers"]:
        assert re.fullmatch(r"[^@]+@sha256:[0-9a-f]{64}", container["image"]), container["image"]
        assert container["securityContext"]["runAsNonRoot"] is True
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "FailJob", "onExitCodes": {"operator": "In",
                                                              "values": list(DETERMINISTIC_EXIT_CODES)}}


@pytest.mark.parametrize(("arm", "gpu"), CASES, ids=IDS)
def test_command_and_env_are_those_of_jobs_arm(arm: Arm, gpu: bool) -> None:
    (container,) = job_for(arm)["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "jobs.arm"] and "args" not in container
    env, task = env_of(container), task_of(container)
    assert task.job == "arm" and task.state == Path(S.state_path) and task.store == "s3://ragsweep/ci"
    assert task.sweep_id == SWEEP and task.arms == (arm,)
    assert task.s3_endpoint == "http://rs-ragsweep-object-store:9000"
    assert task.backend == "stack"  # arms in a release search its OpenSearch
    for name, key in (("AWS_ACCESS_KEY_ID", "access-key-id"), ("AWS_SECRET_ACCESS_KEY", "secret-access-key"),
                      ("PGPASSWORD", "password")):
        assert "value" not in env[name]
        assert env[name]["valueFrom"]["secretKeyRef"]["key"] == key
    assert env["HF_HUB_OFFLINE"]["value"] == "1"
    # The task is the one RAGSWEEP_* the Job sets besides the service settings; jobs.arm reads it.
    assert {n for n in env if n.startswith("RAGSWEEP_") and n not in S.extra_env} == {"RAGSWEEP_TASK"}
    assert 'task_main("arm"' in (ROOT / "jobs" / "arm.py").read_text()


# --- no credential in any spec ------------------------------------------------------------------

_SECRETISH_NAME = re.compile(r"PASS|SECRET|TOKEN|CREDENTIAL|ACCESS_KEY|PRIVATE", re.IGNORECASE)
_SECRETISH_VALUE = [
    re.compile(r"AKIA[0-9A-Z]{16}"),                          # an AWS access key id
    re.compile(r"://[^/\s:@]+:[^/\s@]+@"),                    # user:password@ in a URL
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"),  # a 40-char secret access key
]


def credential_findings(doc: Any) -> list[str]:
    """Env vars named like a secret that carry a literal value, and literal values that look like one."""
    findings: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if "name" in node and "value" in node and _SECRETISH_NAME.search(str(node["name"])):
                findings.append(f"{path}: {node['name']} has a literal value")
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")
        elif isinstance(node, str):
            findings.extend(f"{path}: looks like a credential" for p in _SECRETISH_VALUE if p.search(node))

    walk(doc, "")
    return findings


@pytest.mark.parametrize(("arm", "gpu"), CASES, ids=IDS)
def test_no_job_spec_carries_a_credential(arm: Arm, gpu: bool) -> None:
    assert credential_findings(job_for(arm)) == []


def test_no_collector_spec_carries_a_credential() -> None:
    assert credential_findings(serialize(build_collector_job(S, SWEEP, "fusion"))) == []


# Each container references only the Secrets it uses: the sync init containers and the collector
# the object store's key pair, the arm container that pair and PGPASSWORD (its answers read
# PostgreSQL); nothing gets Redis's. tests/test_chart.py checks the same against the chart's own pods.
_STORE_KEYS = {("rs-ragsweep-object-store", "access-key-id"), ("rs-ragsweep-object-store", "secret-access-key")}


@pytest.mark.parametrize(("arm", "gpu"), CASES, ids=IDS)
def test_each_container_gets_only_the_secrets_it_uses(arm: Arm, gpu: bool) -> None:
    spec = job_for(arm)["spec"]["template"]["spec"]
    refs = {c["name"]: {(e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
                        for e in c["env"] if "valueFrom" in e} for c in spec["initContainers"] + spec["containers"]}
    expected = {"fetch-state": _STORE_KEYS, "arm": _STORE_KEYS | {("rs-ragsweep-postgresql", "password")}}
    if gpu:
        expected["fetch-reranker"] = _STORE_KEYS
    assert refs == expected


def test_the_collector_gets_the_store_keys_and_no_database_password() -> None:
    (container,) = serialize(build_collector_job(S, SWEEP, "fusion"))["spec"]["template"]["spec"]["containers"]
    env = env_of(container)
    assert {(v["valueFrom"]["secretKeyRef"]["name"], v["valueFrom"]["secretKeyRef"]["key"])
            for v in env.values() if "valueFrom" in v} == _STORE_KEYS
    assert not {"PGPASSWORD", "REDIS_PASSWORD", "RAGSWEEP_PG_DSN", "RAGSWEEP_OPENSEARCH_URL"} & set(env)


def test_the_credential_scan_can_fail() -> None:
    leaky = settings(extraEnv={"DB_PASSWORD": "hunter2hunter2",
                               "RAGSWEEP_PG_DSN": "postgresql://ragsweep:hunter2@db:5432/ragsweep",
                               "SOME_SETTING": "AKIAABCDEFGHIJKLMNOP"})
    findings = credential_findings(serialize(build_arm_job(leaky, LONG, SWEEP)))
    assert len(findings) == 3, findings


# --- the collector, names, refusals -------------------------------------------------------------

def test_collector_job_runs_jobs_collect_on_cpu() -> None:
    job = serialize(build_collector_job(S, SWEEP, "fusion"))
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "jobs.collect"]
    env = env_of(container)
    assert env["RAGSWEEP_SWEEP_ID"]["value"] == SWEEP and env["RAGSWEEP_ARMS"]["value"] == "fusion"
    assert "nvidia.com/gpu" not in json.dumps(pod)
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "collector"
    assert pod["restartPolicy"] == "Never"


def test_job_names_are_stable_distinct_and_dns_safe() -> None:
    names = {arm_job_name(SWEEP, arm) for arm in CATALOGUE.arms}
    assert len(names) == len(CATALOGUE.arms)
    assert arm_job_name(SWEEP, LONG) == arm_job_name(SWEEP, LONG)
    assert arm_job_name(SWEEP, LONG) != arm_job_name("fusion-ffffffffffff", LONG)
    assert len(job_name("arm", SWEEP, "x" * 300)) <= 63


@pytest.mark.parametrize(("text", "expected"), [
    ("rrf-60", "rrf-60"),
    ("norm-minmax-arith-w70-30", "norm-minmax-arith-w70-30"),
    ("ends-with-dash-", None),
    ("a" * 64, None),
])
def test_label_values(text: str, expected: str | None) -> None:
    value = label_value(text)
    if expected is not None:
        assert value == expected
    else:
        assert value != text and len(value) <= 63 and value[-1].isalnum()
        assert label_value(text) == value  # deterministic


def test_a_rerank_arm_without_the_reranker_key_is_refused() -> None:
    with pytest.raises(UsageError, match="reranker"):
        build_arm_job(S, CATALOGUE.family("budget").arm("budget-48-12-4"), SWEEP)


def test_settings_refuse_an_image_without_digest() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        settings(images={"cpu": "reg.example/ragsweep-cpu:0.1.0", "gpu": f"reg.example/g@{DIGEST}"})


# --- the plain manifests match the builders -----------------------------------------------------

def _spec(arm: Arm) -> str:
    """The arm as its task writes it (harness.sweep.task.Task.to_json)."""
    return json.dumps(arm.model_dump(mode="json", exclude_none=True, exclude_defaults=True), sort_keys=True,
                      separators=(",", ":"))


def fill(template: str, job: dict[str, Any], arm: Arm | None) -> str:
    values = {"JOB_NAME": job["metadata"]["name"], "SWEEP_ID": SWEEP, "SWEEP_ID_LABEL": label_value(SWEEP),
              "IMAGE_DIGEST": DIGEST}
    if arm is not None:
        values |= {"FAMILY": arm.family, "FAMILY_LABEL": label_value(arm.family), "ARM": arm.name,
                   "ARM_LABEL": label_value(arm.name), "ARM_JSON": json.dumps(_spec(arm))[1:-1],
                   "RERANKER_KEY": RERANKER}
    else:
        values |= {"ARMS": "fusion"}
    for key, value in values.items():
        template = template.replace("${" + key + "}", value)
    assert "${" not in template, re.findall(r"\$\{[A-Z_]+\}", template)
    return template


@pytest.mark.parametrize("arm", [CATALOGUE.family("fusion").arm("rrf-60"),
                                 CATALOGUE.family("budget").arm("budget-48-12-4"),
                                 LONG], ids=["cpu", "gpu", "long-name"])
def test_manifest_arm_templates_are_what_the_builder_produces(arm: Arm) -> None:
    yaml = pytest.importorskip("yaml")
    job = serialize(build_arm_job(CHART_DEFAULTS, arm, SWEEP, reranker_key=RERANKER if arm.needs_reranker else None))
    kind = "gpu" if arm.needs_reranker else "cpu"
    filled = yaml.safe_load(fill((ROOT / "manifests" / f"arm-job-{kind}.yaml").read_text(), job, arm))
    assert filled == job


def test_manifest_collector_template_is_what_the_builder_produces() -> None:
    yaml = pytest.importorskip("yaml")
    job = serialize(build_collector_job(CHART_DEFAULTS, SWEEP, "fusion"))
    filled = yaml.safe_load(fill((ROOT / "manifests" / "collector-job.yaml").read_text(), job, None))
    assert filled == job


def test_ci_manifests_are_valid_in_strict_mode() -> None:
    yaml = pytest.importorskip("yaml")
    kv = pytest.importorskip("kubernetes_validate")
    namespace = (ROOT / "manifests" / "ci-namespace.yaml").read_text()
    namespace = namespace.replace("${NAMESPACE}", "ragsweep-ci-1234").replace("${EXPIRES_AT}", "1767225600")
    namespace = namespace.replace("${PIPELINE}", "1234")
    janitor = (ROOT / "manifests" / "ci-janitor.yaml").read_text()
    janitor = janitor.replace("${JANITOR_IMAGE}", f"reg.example/k8s@{DIGEST}")
    binding = (ROOT / "manifests" / "ci-janitor-binding.yaml").read_text().replace("${NAMESPACE}", "ragsweep-ci-1234")
    docs = [*yaml.safe_load_all(namespace), *yaml.safe_load_all(janitor), *yaml.safe_load_all(binding)]
    for doc in docs:
        kv.validate(doc, "1.33.0", strict=True)
    (cron,) = [d for d in docs if d["kind"] == "CronJob"]
    job = cron["spec"]["jobTemplate"]["spec"]
    assert {"backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"} <= set(job)
    assert "ragsweep.io/ephemeral=true" in job["template"]["spec"]["containers"][0]["command"][-1]


def test_the_janitor_may_delete_only_the_namespaces_ci_namespace_bound_it_into() -> None:
    """Cluster-wide the janitor lists namespaces and nothing else; its delete right is a ClusterRole that no
    ClusterRoleBinding grants, bound by a RoleBinding inside each namespace ci-namespace creates (a RoleBinding
    in namespace N covers a delete of N alone)."""
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((ROOT / "manifests" / "ci-janitor.yaml").read_text()))
    roles = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    cluster_bound = {d["roleRef"]["name"] for d in docs if d["kind"] == "ClusterRoleBinding"}
    assert cluster_bound == {"ragsweep-ci-janitor"}
    assert roles["ragsweep-ci-janitor"] == [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]
    assert roles["ragsweep-ci-janitor-delete"] == [{"apiGroups": [""], "resources": ["namespaces"],
                                                    "verbs": ["get", "delete"]}]
    (binding,) = yaml.safe_load_all((ROOT / "manifests" / "ci-janitor-binding.yaml").read_text())
    assert (binding["kind"], binding["metadata"]["namespace"]) == ("RoleBinding", "${NAMESPACE}")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": "ragsweep-ci-janitor-delete"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "ragsweep-ci-janitor", "namespace": "ci-system"}]
    script = (ROOT / "stack" / "k8s" / "ci-namespace.sh").read_text()
    assert '"$ROOT/manifests/ci-namespace.yaml" | "${kubectl[@]}" create -f -' in script
    assert script.count(" apply -f -") == 1 and "ci-janitor-binding.yaml" in script  # apply would adopt a namespace


def test_every_ci_namespace_is_made_by_the_one_script() -> None:
    """make ci-namespace, the launcher of a release of its own (so KEEP=1 namespaces expire too) and the
    cluster test all make their namespace with stack/k8s/ci-namespace.sh; none fills
    manifests/ci-namespace.yaml itself."""
    makefile = (ROOT / "Makefile.k8s").read_text()
    callers = {"make ci-namespace": makefile[makefile.index("\nci-namespace:"):makefile.index("\nci-janitor:")],
               "harness/sweep/k8s/launch.py": (ROOT / "harness" / "sweep" / "k8s" / "launch.py").read_text(),
               "tests/test_k8s_cluster.py": (ROOT / "tests" / "test_k8s_cluster.py").read_text()}
    for caller, text in callers.items():
        assert re.search(r"stack.{1,10}k8s.{1,10}ci-namespace\.sh", text), caller
        assert "ci-namespace.yaml" not in text, caller


@pytest.mark.parametrize(("argv", "complaint"), [
    (["Ragsweep-CI", "p1", "4"], "NAMESPACE 'Ragsweep-CI' is not a DNS-1123 label"),
    (["ns/../x", "p1", "4"], "NAMESPACE 'ns/../x' is not a DNS-1123 label"),
    (["ragsweep-ci-1", "p 1", "4"], "PIPELINE 'p 1' is not a label value"),
    (["ragsweep-ci-1", "p1", "4h"], "TTL_HOURS '4h' is not a whole number of hours"),
    (["ragsweep-ci-1", "p1"], "usage: stack/k8s/ci-namespace.sh NAMESPACE PIPELINE TTL_HOURS"),
])
def test_ci_namespace_refuses_bad_arguments_before_kubectl(argv: list[str], complaint: str, tmp_path: Path) -> None:
    import subprocess

    absent = tmp_path / "kubectl"  # never created: reaching kubectl would fail with exit 1, not 2
    done = subprocess.run(["bash", str(ROOT / "stack" / "k8s" / "ci-namespace.sh"), *argv],
                          env={"PATH": "/usr/bin:/bin", "KUBECTL": str(absent)}, capture_output=True, text=True,
                          timeout=30)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"ci-namespace: {complaint}") and done.stderr.count("\n") == 1, done.stderr


def test_the_janitor_runs_by_digest_only(tmp_path: Path) -> None:
    """The manifest names no image of its own (a tag can move); `make ci-janitor` fills it with
    JANITOR_IMAGE and refuses anything but REPO@sha256:<64 hex>, before kubectl is run."""
    import subprocess

    yaml = pytest.importorskip("yaml")
    (cron,) = [d for d in yaml.safe_load_all((ROOT / "manifests" / "ci-janitor.yaml").read_text())
               if d["kind"] == "CronJob"]
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "${JANITOR_IMAGE}"
    assert container["resources"]["limits"]["ephemeral-storage"]
    out = tmp_path / "applied.yaml"
    kubectl = f"cat >{out}; true"  # stands in for kubectl apply -f -: what it would be given
    for image in ("alpine/k8s:1.33.0", "alpine/k8s@sha256:abc", ""):
        made = subprocess.run(["make", "-s", "-f", "Makefile.k8s", "ci-janitor", f"JANITOR_IMAGE={image}",
                               f"KUBECTL={kubectl}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert made.returncode == 2 and "runs by digest only" in made.stderr, (image, made.stderr)
        assert not out.exists()
    image = f"reg.example/k8s@{DIGEST}"
    made = subprocess.run(["make", "-s", "-f", "Makefile.k8s", "ci-janitor", f"JANITOR_IMAGE={image}",
                           f"KUBECTL={kubectl}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    (applied,) = [d for d in yaml.safe_load_all(out.read_text()) if d["kind"] == "CronJob"]
    assert applied["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] == image


def test_pull_refuses_an_archive_member_outside_its_root(tmp_path: Path) -> None:
    """The images run Python 3.11.2, before extractall(filter=...): pull applies the data rules itself."""
    import io
    import tarfile

    from harness.errors import IntegrityError
    from harness.sweep.k8s.sync import _extract

    for name, kind in (("../escape.txt", tarfile.REGTYPE), ("link", tarfile.SYMTYPE), ("/abs.txt", tarfile.REGTYPE)):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
            tar.addfile(info, io.BytesIO(b"") if kind == tarfile.REGTYPE else None)
        buf.seek(0)
        with tarfile.open(fileobj=buf, mode="r:gz") as tar, pytest.raises(IntegrityError, match="refusing"):
            _extract(tar, tmp_path / "out", "test.tar.gz")
    assert not (tmp_path / "escape.txt").exists()


def test_an_unreachable_store_when_an_arm_finishes_is_a_failed_outcome_not_a_crash(tmp_path: Path) -> None:
    """The store's pod deleted while arms run: the launcher cannot check a finished Job's
    artefacts; that arm is failed (a rerun decides), the sweep goes on, nothing is written."""
    from harness.objectstore import StorageError
    from harness.sweep.k8s.executor import K8sExecutor, _Running
    from harness.sweep.k8s.watch import JobResult

    class DownStore:
        """Every call fails as S3Store fails once its retries are spent."""
        calls: ClassVar[list[str]] = []

        def __getattr__(self, name: str) -> Any:
            def down(*args: Any, **kwargs: Any) -> Any:
                self.calls.append(name)
                if name == "describe":
                    return "s3://ragsweep"
                raise StorageError(f"{name}: still failing after 9 attempts over 61.0s (deadline 60s)")
            return down

    arm = CATALOGUE.family("fusion").arm("rrf-60")
    executor = K8sExecutor(S, "ns", None, None, DownStore(), tmp_path, quiet=True)
    for result in (JobResult("arm-x", True), JobResult("arm-x", False, "BackoffLimitExceeded", "", 2, 1)):
        outcome = executor._outcome(SWEEP, _Running(arm, "d" * 64, 0.0), result)
        assert outcome.status == "failed"
        assert outcome.message.startswith("the object store could not be read to check job arm-x: ")
        assert "rerun the sweep" in outcome.message
    assert not {"put_bytes", "put_text", "put_file"} & set(DownStore.calls), DownStore.calls


# --- shared legs: one legs Job per group, its arms told where the legs are ---------------------

def test_a_legs_job_runs_jobs_legs_on_a_cpu_node_for_the_whole_group() -> None:
    from harness.sweep.k8s.builders import build_legs_job, legs_job_name

    group = CATALOGUE.family("budget").arms[:2]  # rerank arms: their legs still need no GPU
    key = f"sweeps/{SWEEP}/legs/0123456789abcdef/legs.json"
    name = legs_job_name(SWEEP, "0123456789abcdef")
    job = serialize(build_legs_job(S, group, SWEEP, name, key))
    # the Job is created under the very name the launcher then waits for (once it was named twice over,
    # legs-legs-...: the Job ran and published, and the launcher waited for a Job that never existed)
    assert job["metadata"]["name"] == name
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "jobs.legs"]
    assert container["image"] == S.images.cpu and pod["nodeSelector"] == {"ragsweep.io/pool": "cpu"}
    assert "nvidia.com/gpu" not in json.dumps(container["resources"])
    env, task = env_of(container), task_of(container)
    assert task.job == "legs" and task.arms == tuple(group)
    assert task.legs == key and task.reranker is None
    # the arm's component: the chart's NetworkPolicy lets it reach the object store as it lets an arm
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "arm"
    assert job["metadata"]["annotations"]["ragsweep.io/legs"] == key
    assert job["metadata"]["name"].startswith("legs-") and job["metadata"]["name"] != arm_job_name(SWEEP, group[0])
    assert job["spec"]["backoffLimit"] == S.arm.policy.backoff_limit and pod["restartPolicy"] == "Never"
    assert credential_findings(job) == []
    assert {n for n in env if n.startswith("RAGSWEEP_") and n not in S.extra_env} == {"RAGSWEEP_TASK"}
    assert 'task_main("legs"' in (ROOT / "jobs" / "legs.py").read_text()


def test_an_arm_job_of_a_shared_group_is_told_where_its_legs_are() -> None:
    arm = CATALOGUE.family("fusion").arm("rrf-60")
    key = f"sweeps/{SWEEP}/legs/0123456789abcdef/legs.json"
    (container,) = serialize(build_arm_job(S, arm, SWEEP, legs=key))["spec"]["template"]["spec"]["containers"]
    assert task_of(container).legs == key
    (alone,) = serialize(build_arm_job(S, arm, SWEEP))["spec"]["template"]["spec"]["containers"]
    assert task_of(alone).legs is None


def test_the_legs_plan_runs_a_legs_job_only_for_unpublished_shared_groups(tmp_path: Path) -> None:
    from harness.objectstore import LocalFolderStore
    from harness.sweep.k8s.plan import plan_legs

    store = LocalFolderStore(tmp_path)
    shallow = CATALOGUE.family("diversity").arm("retrieve-12")  # window 100: cuts the fusion arms' 192
    arms = [*CATALOGUE.family("fusion").arms, shallow, CATALOGUE.family("embedding").arm("embed-body")]
    plan = plan_legs(store, SWEEP, arms, "embedded", "state-identity")
    ((name, group, key),) = plan.jobs  # embed-body (other vectors) is a group of one: it fetches its own legs
    assert group.arms == (*CATALOGUE.family("fusion").arms, shallow) and name.startswith("legs-")
    assert group.key is not None and group.key["fusion_window"] == 192
    assert set(plan.legs_of) == {a.name for a in group.arms} and set(plan.legs_of.values()) == {key}
    from harness.sweep.k8s.builders import build_legs_job

    assert serialize(build_legs_job(S, group.arms, SWEEP, name, key))["metadata"]["name"] == name
    store.put_text(key, "{}")
    again = plan_legs(store, SWEEP, arms, "embedded", "state-identity")
    assert again.jobs == [] and again.legs_of == plan.legs_of
    assert plan_legs(store, SWEEP, arms, "embedded", "another-state").legs_of != plan.legs_of
    stack = plan_legs(store, SWEEP, arms, "stack", "state-identity")  # server-side fusion: nothing shared
    assert stack.jobs == [] and stack.legs_of == {}


def test_a_resumed_plan_reads_the_deeper_legs_of_the_sweeps_complete_arms(tmp_path: Path) -> None:
    """pool-96 (window 384) complete, pool-12 and pool-24 (100) pending: the window-384 legs.json serves
    them (cut at 100), so no legs Job; without it, or with another scope, one is planned at 100."""
    from harness.objectstore import LocalFolderStore
    from harness.sweep.k8s.plan import plan_legs
    from harness.sweep.legs import group_id, legs_store_key

    store = LocalFolderStore(tmp_path)
    pool = CATALOGUE.family("pool")
    everyone = [pool.arm("pool-12"), pool.arm("pool-24"), pool.arm("pool-96")]
    pending = everyone[:2]
    fresh = plan_legs(store, SWEEP, pending, "embedded", "state-identity", everyone)
    ((_, group, own),) = fresh.jobs
    assert group.key is not None and group.key["fusion_window"] == 100
    deep = legs_store_key(SWEEP, group_id("state-identity", {**group.key, "fusion_window": 384}))
    store.put_text(deep, "{}")
    resumed = plan_legs(store, SWEEP, pending, "embedded", "state-identity", everyone)
    assert resumed.jobs == [] and set(resumed.legs_of.values()) == {deep} != {own}
    assert plan_legs(store, SWEEP, pending, "embedded", "state-identity").jobs == fresh.jobs  # pool-96 not asked
    store.put_text(own, "{}")  # the group's own legs, when there, come first
    assert set(plan_legs(store, SWEEP, pending, "embedded", "state-identity", everyone).legs_of.values()) == {own}
