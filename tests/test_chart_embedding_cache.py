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
