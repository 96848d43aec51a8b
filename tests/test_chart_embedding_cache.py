"""The chart's embedding cache (values.yaml ``embeddingCache``, docs/kubernetes.md): one claim that the
injector's build-state and the embedding workers mount at one path, which the injector hands the tasks.

Rendered with the helm that `make k8s-tools` builds (skipped, saying so, without it), as tests/test_chart.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_chart import CHART, render

SINGLE_NODE = str(CHART / "ci" / "single-node-values.yaml")
PATH = "/cache/embeddings"


def _by_name(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def _mounts(spec: dict[str, Any], container: str) -> dict[str, str]:
    every = [*spec.get("initContainers", []), *spec["containers"]]
    chosen = next(c for c in every if c["name"] == container)
    return {m["name"]: m["mountPath"] for m in chosen.get("volumeMounts", [])}


def _injector(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (job,) = [d for d in docs if d["kind"] == "Job" and d["metadata"]["labels"].get(
        "app.kubernetes.io/component") == "injector"]
    return job


def test_on_the_single_node_the_injector_and_the_embedding_workers_share_one_claim() -> None:
    docs = render(SINGLE_NODE)
    (claim,) = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert claim["metadata"]["name"] == "rs-ragsweep-embedding-cache"
    assert claim["spec"]["storageClassName"] == "ragsweep-embedding-cache"   # stack/k8s/cluster-addons.yaml's
    injector = _injector(docs)["spec"]["template"]["spec"]
    build = next(c for c in injector["initContainers"] if c["name"] == "build-state")
    assert build["command"][build["command"].index("--embedding-cache") + 1] == PATH
    assert _mounts(injector, "build-state")["embedding-cache"] == PATH
    assert "embedding-cache" not in _mounts(injector, "fetch-corpora")      # only the container that encodes
    workers = {n: d["spec"]["template"]["spec"] for n, d in _by_name(docs, "Deployment").items() if "worker" in n}
    assert _mounts(workers["rs-ragsweep-worker-embedding"], "worker")["embedding-cache"] == PATH
    assert "embedding-cache" not in _mounts(workers["rs-ragsweep-worker-cpu"], "worker")
    for spec in (injector, workers["rs-ragsweep-worker-embedding"]):
        (volume,) = [v for v in spec["volumes"] if v["name"] == "embedding-cache"]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]


def test_off_by_default_nothing_mounts_and_the_injector_builds_uncached() -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"))
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    build = next(c for c in _injector(docs)["spec"]["template"]["spec"]["initContainers"] if c["name"] == "build-state")
    assert "--embedding-cache" not in build["command"]


def test_an_existing_claim_is_mounted_and_none_is_made() -> None:
    docs = render(SINGLE_NODE, sets=("embeddingCache.existingClaim=team-vectors",))
    assert not [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    volumes = _injector(docs)["spec"]["template"]["spec"]["volumes"]
    assert {"name": "embedding-cache", "persistentVolumeClaim": {"claimName": "team-vectors"}} in volumes


def test_turning_the_cache_on_makes_a_new_injector_job() -> None:
    """The cache changes which encoder the workers run (batch-independent), so the vectors: the injector's
    name carries it, and an upgrade that turns it on starts a new build instead of keeping the old state."""
    on = _injector(render(SINGLE_NODE))["metadata"]["name"]
    off = _injector(render(SINGLE_NODE, sets=("embeddingCache.enabled=false",)))["metadata"]["name"]
    assert on != off


@pytest.mark.parametrize("bad", ["embeddingCache.accessModes={ReadOnlyMany}", "embeddingCache.size=lots",
                                 "embeddingCache.existingClaim=Not_A_Name"])
def test_the_schema_refuses_bad_cache_values(bad: str) -> None:
    from tests.test_chart import helm

    result = helm("template", "rs", str(CHART), "--kube-version", "1.33.0", "-f", SINGLE_NODE, "--set", bad,
                  check=False)
    assert result.returncode != 0 and "embeddingCache" in result.stderr


# -- the team's embedding cache under it (embeddingCache.team, harness.index.teamcache) -------------------

def _env(spec: dict[str, Any], container: str) -> dict[str, str | None]:
    every = [*spec.get("initContainers", []), *spec["containers"]]
    chosen = next(c for c in every if c["name"] == container)
    return {e["name"]: e.get("value") for e in chosen.get("env", [])}


def _encoders(docs: list[dict[str, Any]]) -> dict[str, dict[str, str | None]]:
    """The env of every container that encodes: the injector's build-state and the embedding worker."""
    workers = _by_name(docs, "Deployment")
    return {"injector": _env(_injector(docs)["spec"]["template"]["spec"], "build-state"),
            "worker": _env(workers["rs-ragsweep-worker-embedding"]["spec"]["template"]["spec"], "worker")}


def test_by_default_the_team_cache_is_in_the_releases_own_object_store() -> None:
    docs = render(SINGLE_NODE)
    for where, env in _encoders(docs).items():
        store = env["RAGSWEEP_STORE"]
        assert store and env["RAGSWEEP_TEAM_CACHE"] == f"{store}/team-embeddings", where
        assert "RAGSWEEP_TEAM_CACHE_ENDPOINT" not in env, where      # the tier uses RAGSWEEP_S3_ENDPOINT's
        assert env["RAGSWEEP_S3_ENDPOINT"] and {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(env), where
    cpu = _by_name(docs, "Deployment")["rs-ragsweep-worker-cpu"]["spec"]["template"]["spec"]
    assert "RAGSWEEP_TEAM_CACHE" not in _env(cpu, "worker")           # it encodes nothing
    injector = _injector(docs)["spec"]["template"]["spec"]
    assert "RAGSWEEP_TEAM_CACHE" not in _env(injector, "fetch-corpora")


def test_the_team_cache_follows_the_object_store_prefix() -> None:
    docs = render(SINGLE_NODE, sets=("objectStore.prefix=teams/a",))
    assert {env["RAGSWEEP_TEAM_CACHE"] for env in _encoders(docs).values()} == {"s3://ragsweep/teams/a/team-embeddings"}


def test_a_team_named_bucket_elsewhere_gets_its_endpoint_and_egress() -> None:
    docs = render(SINGLE_NODE, sets=("embeddingCache.team.url=s3://team-vectors/minilm",
                                     "embeddingCache.team.endpoint=https://s3.team.example:8443",
                                     "networkPolicy.teamCacheCIDRs={203.0.113.0/24}"))
    for where, env in _encoders(docs).items():
        assert env["RAGSWEEP_TEAM_CACHE"] == "s3://team-vectors/minilm", where
        assert env["RAGSWEEP_TEAM_CACHE_ENDPOINT"] == "https://s3.team.example:8443", where
    policies = _by_name(docs, "NetworkPolicy")
    team_rule = {"to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}], "ports": [{"protocol": "TCP", "port": 8443}]}
    for workload in ("injector", "worker-embedding"):
        assert team_rule in policies[f"rs-ragsweep-{workload}-traffic"]["spec"]["egress"], workload
    for workload in ("worker-cpu", "arm", "collector"):
        assert team_rule not in policies[f"rs-ragsweep-{workload}-traffic"]["spec"]["egress"], workload


def test_a_team_named_bucket_in_the_releases_store_needs_no_endpoint() -> None:
    docs = render(SINGLE_NODE, sets=("embeddingCache.team.url=s3://team-vectors",))
    for where, env in _encoders(docs).items():
        assert env["RAGSWEEP_TEAM_CACHE"] == "s3://team-vectors" and "RAGSWEEP_TEAM_CACHE_ENDPOINT" not in env, where


@pytest.mark.parametrize("sets", [("embeddingCache.team.enabled=false",), ("embeddingCache.enabled=false",)],
                         ids=["team-off", "cache-off"])
def test_off_the_encoders_are_told_off(sets: tuple[str, ...]) -> None:
    docs = render(SINGLE_NODE, sets=(*sets, "embeddingCache.team.url=s3://team-vectors"))
    for where, env in _encoders(docs).items():
        assert env["RAGSWEEP_TEAM_CACHE"] == "off" and "RAGSWEEP_TEAM_CACHE_ENDPOINT" not in env, where


def test_the_default_release_has_no_team_cache() -> None:
    docs = render(str(CHART / "ci" / "default-values.yaml"))
    assert {env["RAGSWEEP_TEAM_CACHE"] for env in _encoders(docs).values()} == {"off"}


def test_the_team_cache_names_the_injector_job_only_when_on() -> None:
    """Where the vectors come from is an input of the build: on (or another bucket) makes a new Job; off leaves
    the name the release had before the team's cache existed (the cache alone in the inputs)."""
    names = {key: _injector(render(SINGLE_NODE, sets=sets))["metadata"]["name"] for key, sets in {
        "default": (), "other": ("embeddingCache.team.url=s3://team-vectors",),
        "off": ("embeddingCache.team.enabled=false",)}.items()}
    assert len(set(names.values())) == 3
    cache_off = {_injector(render(SINGLE_NODE, sets=("embeddingCache.enabled=false", *team)))["metadata"]["name"]
                 for team in [(), ("embeddingCache.team.enabled=false",), ("embeddingCache.team.url=s3://x-y",)]}
    assert len(cache_off) == 1


@pytest.mark.parametrize("bad", ["embeddingCache.team.bucket=team-vectors", "embeddingCache.team.url=/mnt/team",
                                 "embeddingCache.team.url=https://team-vectors", "embeddingCache.team.enabled=maybe",
                                 "embeddingCache.team.endpoint=s3.team.example"])
def test_the_schema_refuses_bad_team_values(bad: str) -> None:
    from tests.test_chart import helm

    result = helm("template", "rs", str(CHART), "--kube-version", "1.33.0", "-f", SINGLE_NODE, "--set", bad,
                  check=False)
    assert result.returncode != 0 and "embeddingCache" in result.stderr and "team" in result.stderr


@pytest.mark.parametrize("sets, problem", [
    (("embeddingCache.team.endpoint=https://s3.team.example",), "networkPolicy.teamCacheCIDRs: required"),
    (("networkPolicy.teamCacheCIDRs={203.0.113.0/24}",), "networkPolicy.teamCacheCIDRs: set only"),
    (("embeddingCache.team.enabled=false", "embeddingCache.team.endpoint=https://s3.team.example",
      "networkPolicy.teamCacheCIDRs={203.0.113.0/24}"), "networkPolicy.teamCacheCIDRs: set only"),
], ids=["endpoint-without-cidrs", "cidrs-without-endpoint", "cidrs-with-team-off"])
def test_a_team_endpoint_elsewhere_and_its_addresses_go_together(sets: tuple[str, ...], problem: str) -> None:
    from tests.test_chart import helm

    args = [a for s in sets for a in ("--set", s)]
    result = helm("template", "rs", str(CHART), "--kube-version", "1.33.0", "-f", SINGLE_NODE, *args, check=False)
    assert result.returncode != 0 and problem in result.stderr


def test_without_network_policies_a_team_endpoint_needs_no_addresses() -> None:
    docs = render(SINGLE_NODE, sets=("embeddingCache.team.endpoint=https://s3.team.example",
                                     "networkPolicy.enabled=false"))
    assert {env["RAGSWEEP_TEAM_CACHE_ENDPOINT"] for env in _encoders(docs).values()} == {"https://s3.team.example"}
