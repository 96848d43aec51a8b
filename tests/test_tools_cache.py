"""The machine's cache of the Kubernetes tools (stack/k8s/tools-cache.sh, issue 35): keyed by what the
binaries are built from, outside the clone, and var/tools/bin a link to it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("go") is None, reason="needs Go on PATH (its version is in the key)")


def _checkout(tmp_path: Path) -> Path:
    """A copy of the files the script reads, laid out as in a checkout."""
    root = tmp_path / "clone"
    (root / "stack").mkdir(parents=True)
    shutil.copy(ROOT / "stack" / "machine-cache.sh", root / "stack")
    shutil.copytree(ROOT / "stack" / "k8s", root / "stack" / "k8s",
                    ignore=shutil.ignore_patterns("*.log", "__pycache__"))
    return root


def _run(root: Path, tmp_path: Path, *args: str, helm: str = "v3.22.0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELM_VERSION": helm, "RAGSWEEP_MACHINE_CACHE": str(tmp_path / "machine")}
    env.pop("RAGSWEEP_TOOLS_CACHE", None)
    return subprocess.run(["bash", str(root / "stack" / "k8s" / "tools-cache.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_key_follows_the_pinned_inputs_and_nothing_else(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    key = _run(root, tmp_path, "key").stdout.strip()
    assert len(key) == 64 and _run(root, tmp_path, "key").stdout.strip() == key      # the same inputs: the same key
    assert _run(ROOT, tmp_path, "key").stdout.strip() == key                          # wherever the clone is
    assert _run(root, tmp_path, "key", helm="v3.21.0").stdout.strip() != key          # another helm
    versions = root / "stack" / "k8s" / "versions.env"
    versions.write_text(versions.read_text().replace("ETCD_VERSION=", "ETCD_VERSION=v0.0.0-"))
    assert _run(root, tmp_path, "key").stdout.strip() != key                          # another pinned version
    assert _run(root, tmp_path, "dir").stdout.strip().startswith(str(tmp_path / "machine" / "k8s-tools") + "/")


def test_link_points_var_tools_bin_at_the_cache_and_keeps_a_folder_of_the_checkouts_own(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    own = root / "var" / "tools" / "bin"
    own.mkdir(parents=True)
    (own / "helm").write_text("built before the cache")
    done = _run(root, tmp_path, "link")
    assert done.returncode == 0, done.stderr
    cached = Path(_run(root, tmp_path, "dir").stdout.strip()) / "bin"
    assert own.is_symlink() and own.resolve() == cached.resolve() and cached.is_dir()
    assert (root / "var" / "tools" / "bin.local" / "helm").read_text() == "built before the cache"
    assert "kept as var/tools/bin.local" in done.stderr
    again = _run(root, tmp_path, "link")                                              # idempotent
    assert again.returncode == 0 and own.resolve() == cached.resolve() and again.stderr == ""
    assert _run(root, tmp_path, "nonsense").returncode == 2
