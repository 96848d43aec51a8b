"""The one settings model: RAGSWEEP_* variables, read by the CLI and jobs/ only."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UsageError
from harness.settings import settings


def test_settings_read_the_ragsweep_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSWEEP_OPENSEARCH_URL", "http://127.0.0.1:9200")
    monkeypatch.setenv("RAGSWEEP_SYNC_WAIT", "3")
    monkeypatch.setenv("RAGSWEEP_SYNC_OUT", "/tmp/s")
    monkeypatch.setenv("RAGSWEEP_EMBEDDING_BACKEND", "onnx")
    got = settings()
    assert (got.opensearch_url, got.sync_wait, got.sync_out, got.embedding_backend) == (
        "http://127.0.0.1:9200", 3.0, Path("/tmp/s"), "onnx")


def test_unset_variables_are_the_entrypoints_old_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENSEARCH_URL", "S3_ENDPOINT", "SYNC_WAIT", "EMBEDDING_BACKEND", "ARMS", "STORE"):
        monkeypatch.delenv(f"RAGSWEEP_{name}", raising=False)
    got = settings()
    assert (got.opensearch_url, got.s3_endpoint, got.sync_wait, got.embedding_backend, got.arms, got.store) == (
        "", None, 0.0, "torch", "all", None)


def test_a_jobs_task_fields_live_in_the_task_not_in_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """jobs.arm, jobs.legs and jobs.scores are told their task whole (RAGSWEEP_TASK, harness.sweep.task): no
    field only a task has is a setting, so a stray RAGSWEEP_WORKERS or RAGSWEEP_ARM is not read at all."""
    from harness.settings import Settings
    from harness.sweep.task import Task

    # what both have: the collector's and sync's store and sweep (and ``arms``, the collector's selector,
    # ``--arms fusion``), and the machine's defaults the CLI reads (the encoder's and the cross-encoder's
    # runtime and caches), which the executors then write into each task
    shared = {"store", "sweep_id", "s3_endpoint", "arms", "embedding_backend", "onnx_cache", "rerank_device",
              "rerank_backend", "rerank_cache"}
    assert set(Settings.model_fields) & set(Task.model_fields) == shared
    monkeypatch.setenv("RAGSWEEP_WORKERS", "abc")  # once a job field; now nothing reads it
    monkeypatch.setenv("RAGSWEEP_ARM", "{")
    assert settings().task is None


def test_a_backend_outside_the_one_type_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """One line naming the variable (a usage error, exit 2), not pydantic's multi-line dump."""
    monkeypatch.setenv("RAGSWEEP_EMBEDDING_BACKEND", "cloud")
    with pytest.raises(UsageError) as refused:
        settings()
    assert str(refused.value) == ("RAGSWEEP_EMBEDDING_BACKEND='cloud': Input should be 'torch' or 'onnx'; "
                                  "set it to what is expected, or unset it")


def test_no_stage_reads_the_settings_model() -> None:
    root = Path(__file__).resolve().parents[1] / "harness"
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if "harness.settings" in p.read_text(encoding="utf-8") and "commands" not in p.parts)
    assert readers == []


def test_the_embedding_cache_is_the_flag_else_the_setting_and_none_is_off(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from harness.commands.state import embedding_cache_root

    monkeypatch.delenv("RAGSWEEP_EMBEDDING_CACHE", raising=False)
    monkeypatch.setenv("RAGSWEEP_MACHINE_CACHE", "/srv/machine")
    assert settings().embedding_cache == "/srv/machine/embeddings"  # the machine's, outside the clone
    monkeypatch.setenv("RAGSWEEP_EMBEDDING_CACHE", "/srv/cache")
    setting = settings().embedding_cache
    assert embedding_cache_root(None, setting, in_process=True) == Path("/srv/cache")
    assert embedding_cache_root("/mine", setting, in_process=True) == Path("/mine")
    assert embedding_cache_root("none", setting, in_process=True) is None
    assert embedding_cache_root(None, "None", in_process=True) is None
    # through the ingest tasks (--dispatch/--store) only the flag turns it on: the folder must be where the
    # workers see it too, which the setting cannot know (harness.state.ingest.warm_cache)
    assert embedding_cache_root(None, setting, in_process=False) is None
    assert embedding_cache_root("/mine", setting, in_process=False) == Path("/mine")
    assert embedding_cache_root("none", setting, in_process=False) is None
    assert capsys.readouterr().err == ""


def test_the_k8s_launcher_gets_its_release_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.commands.sweep import _release
    from harness.sweep.k8s.executor import DEFAULT_TIMEOUT_S, Release

    for name in ("NAMESPACE", "LAUNCHER_CONFIG", "S3_ENDPOINT", "CONTEXT", "TIMEOUT"):
        monkeypatch.delenv(f"RAGSWEEP_K8S_{name}", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert _release() == Release() == Release(None, "ragsweep-launcher", None, None, DEFAULT_TIMEOUT_S, False)
    monkeypatch.setenv("RAGSWEEP_K8S_NAMESPACE", "ragsweep-abc")
    monkeypatch.setenv("RAGSWEEP_K8S_LAUNCHER_CONFIG", "rs-launcher")
    monkeypatch.setenv("RAGSWEEP_K8S_S3_ENDPOINT", "http://127.0.0.1:19000")
    monkeypatch.setenv("RAGSWEEP_K8S_CONTEXT", "kind")
    monkeypatch.setenv("RAGSWEEP_K8S_TIMEOUT", "90")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    assert _release() == Release("ragsweep-abc", "rs-launcher", "http://127.0.0.1:19000", "kind", 90.0, True)


def test_a_k8s_sweep_without_a_namespace_is_a_usage_error_before_any_cluster_call() -> None:
    import argparse

    from harness.errors import UsageError
    from harness.sweep.k8s.executor import Release, run_from_args

    with pytest.raises(UsageError, match="needs RAGSWEEP_K8S_NAMESPACE"):
        run_from_args(argparse.Namespace(), Release())


def test_the_machine_cache_is_roots_or_the_users_and_never_raises_without_a_home(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Job's process runs as a user its image does not list, with no HOME: its settings must still load."""
    from harness import machinecache

    for name in ("RAGSWEEP_MACHINE_CACHE", "RAGSWEEP_EMBEDDING_CACHE", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(machinecache.os, "geteuid", lambda: 0)
    assert machinecache.machine_cache() == Path("/var/cache/ragsweep")
    assert machinecache.machine_cache("/srv/m") == Path("/srv/m")
    monkeypatch.setattr(machinecache.os, "geteuid", lambda: 10001)
    monkeypatch.setattr(machinecache.os.path, "expanduser", lambda path: path)  # no passwd entry, no HOME
    assert machinecache.machine_cache() == Path("var/cache")
    assert settings().embedding_cache == "var/cache/embeddings"
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")  # read by the settings, passed down
    assert settings().embedding_cache == "/xdg/ragsweep/embeddings"
    monkeypatch.setattr(machinecache.os.path, "expanduser", lambda path: "/home/u")
    assert machinecache.machine_cache() == Path("/home/u/.cache/ragsweep")
