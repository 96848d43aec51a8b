"""`make qmsum` and `make sweep` (local executor): QMSum is fetched before the state is chosen (issue 13).

The make runs are real; what they call is either this checkout's real CLI (fetches from a mirror on this
machine) or a recording stand-in for `ragsweep` (to follow the order of the calls without building a
state, and to say "upstream unreachable" without asking the network).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_MIRROR = REPO_ROOT.parent / "shared" / "data" / "qmsum" / "mirror"

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

# Stands in for `ragsweep`: records each call, and does just enough for make to go on.
RECORDER = """#!{python}
import sys
from pathlib import Path

args = sys.argv[1:]
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(" ".join(args) + "\\n")
value = dict(zip(args, args[1:]))
if args[:2] == ["corpus", "fetch"]:
    Path(value["--dest"]).mkdir(parents=True, exist_ok=True)
    (Path(value["--dest"]) / "LICENSE").write_text("MIT")
    print(f"qmsum: 233 artefacts under {{value['--dest']}}: 233 fetched, 0 already present")
elif args[:2] == ["corpus", "verify"]:
    sys.exit(5)
elif args[:2] == ["corpus", "probe"]:
    print("qmsum: upstream unreachable: [Errno -2] Name or service not known at https://upstream.invalid/x")
    sys.exit(5)
elif args[:2] == ["state", "build"]:
    Path(value["--out"]).mkdir(parents=True, exist_ok=True)
    (Path(value["--out"]) / "state.json").write_text('{{"schema": "ragsweep.state/2"}}')  # not a state to rebuild
"""

# This checkout's CLI, as the venv's entry point would run it.
CHECKOUT_CLI = """#!/bin/sh
PYTHONPATH={root} exec {python} -m harness "$@"
"""


def _venv(tmp_path: Path, script: str) -> Path:
    """A VENV whose ragsweep is ``script``, and a var/ with the synthetic corpus made: all up to date."""
    venv, var = tmp_path / "venv", tmp_path / "var"
    (venv / "bin").mkdir(parents=True)
    ragsweep = venv / "bin" / "ragsweep"
    ragsweep.write_text(script.format(python=sys.executable, log=str(tmp_path / "calls.log"), root=REPO_ROOT))
    ragsweep.chmod(0o755)
    now = time.time()  # one mtime for every made file: none is older than what it is made from
    for path in (venv / ".installed", var / "synthetic/full-archive-7/corpus.json",
                 var / "synthetic/budget-5-archive-7/corpus.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        os.utime(path, (now, now))
    return venv


def _make(tmp_path: Path, target: str, *variables: str, dry_run: bool = False) -> subprocess.CompletedProcess[str]:
    argv = ["make", "-C", str(REPO_ROOT), "--no-print-directory", *(["-n"] if dry_run else []), target,
            f"VAR={tmp_path / 'var'}", f"VENV={tmp_path / 'venv'}", "BUDGET=5", "SEED=7", "WORKERS=1",
            "EXECUTOR=local", "RERANKER=", *variables]
    env = {k: v for k, v in os.environ.items() if k not in ("QMSUM_MIRROR", "MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_make_sweep_fetches_qmsum_first_and_builds_the_two_corpus_state(tmp_path: Path) -> None:
    _venv(tmp_path, RECORDER)
    var = tmp_path / "var"
    done = _make(tmp_path, "sweep", "QMSUM_MIRROR=/srv/qmsum-mirror")
    assert done.returncode == 0, done.stderr
    # each step before the arms says how long it took (the arms, latency and collector: `sweep run`'s last line)
    steps = [line.split(" ready in ")[0] for line in done.stdout.splitlines() if line.startswith("[sweep] ")]
    assert steps == ["[sweep] install", "[sweep] fetch", "[sweep] generate", "[sweep] state"], done.stdout
    assert _calls(tmp_path) == [
        f"corpus fetch qmsum --dest {var}/corpora/qmsum --mirror /srv/qmsum-mirror --quiet",
        f"state build --corpus synthetic={var}/synthetic/budget-5-archive-7 --corpus qmsum={var}/corpora/qmsum "
        f"--out {var}/states/default-5-archive-7-qmsum --force",
        f"sweep run --state {var}/states/default-5-archive-7-qmsum --arms fusion --executor local --workers 1 "
        f"--out {var}",
    ]


def test_make_sweep_offline_goes_on_single_corpus_and_says_why_once(tmp_path: Path) -> None:
    _venv(tmp_path, RECORDER)
    var = tmp_path / "var"
    done = _make(tmp_path, "sweep", f"QMSUM_SHARED_MIRROR={tmp_path / 'no-mirror'}")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("qmsum")] == [
        "qmsum: not fetched (no QMSUM_MIRROR, no ../shared/data/qmsum/mirror, upstream unreachable: [Errno -2] "
        "Name or service not known at https://upstream.invalid/x): this sweep is single-corpus"]
    assert _calls(tmp_path) == [
        f"corpus verify qmsum --dest {var}/corpora/qmsum",
        "corpus probe qmsum",
        f"state build --corpus synthetic={var}/synthetic/budget-5-archive-7 --out {var}/states/default-5-archive-7 "
        "--force",
        f"sweep run --state {var}/states/default-5-archive-7 --arms fusion --executor local --workers 1 --out {var}",
    ]
    assert not (var / "corpora").exists()


def test_make_sweep_k8s_fetches_qmsum_first_and_uploads_both_corpora(tmp_path: Path) -> None:
    """As the local executor: QMSum is fetched before anything else, and once it is there the cluster's
    injector is given both corpora (issue 35: a one-corpus sweep can give no verdict)."""
    _venv(tmp_path, RECORDER)
    var = tmp_path / "var"
    done = _make(tmp_path, "sweep", "EXECUTOR=k8s", "QMSUM_MIRROR=/srv/qmsum-mirror", dry_run=True)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    fetch = out.index(f"corpus fetch qmsum --dest {var}/corpora/qmsum --mirror /srv/qmsum-mirror")
    assert fetch < out.index("RAGSWEEP_K8S_BIN") < out.index("stack/k8s/sweep.sh")  # before the tools
    # a dry run fetches nothing, so this make sees no QMSum yet: the synthetic corpus alone
    assert f'stack/k8s/sweep.sh "synthetic={var}/synthetic/budget-5-archive-7" fusion' in out
    # the backend `make sweep` measures locally, unless BACKENDS says otherwise
    assert out.count('BACKENDS="embedded" \\\n  bash stack/k8s/sweep.sh') == 1
    done = _make(tmp_path, "sweep", "EXECUTOR=k8s", "BACKENDS=stack embedded", dry_run=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('BACKENDS="stack embedded" \\\n  bash stack/k8s/sweep.sh') == 1
    (var / "corpora" / "qmsum").mkdir(parents=True)
    (var / "corpora" / "qmsum" / "LICENSE").write_text("MIT")
    done = _make(tmp_path, "sweep-k8s", f"SYNTH_CORPUS={var}/synthetic/budget-5-archive-7", dry_run=True)
    assert done.returncode == 0, done.stderr
    assert (f'stack/k8s/sweep.sh "synthetic={var}/synthetic/budget-5-archive-7 qmsum={var}/corpora/qmsum" fusion'
            in done.stdout)


@pytest.mark.skipif(not SHARED_MIRROR.is_dir(), reason=f"no QMSum mirror at {SHARED_MIRROR}")
def test_make_qmsum_fetches_from_the_mirror_and_refuses_a_tampered_one(tmp_path: Path) -> None:
    _venv(tmp_path, CHECKOUT_CLI)
    dest = tmp_path / "var" / "corpora" / "qmsum"
    tampered = tmp_path / "tampered"
    shutil.copytree(SHARED_MIRROR, tampered)
    victim = sorted((tampered / "data/ALL/val").glob("*.json"))[-1]  # near the end: 200+ good files before it
    victim.write_bytes(victim.read_bytes()[:-1] + b" ")
    refused = _make(tmp_path, "qmsum", f"QMSUM_MIRROR={tampered}")
    assert refused.returncode != 0
    errors = [line for line in refused.stderr.splitlines() if line.startswith("ragsweep:")]
    assert len(errors) == 1 and f"{victim.relative_to(tampered)}: sha256 mismatch" in errors[0], refused.stderr
    assert errors[0].endswith(f"nothing was written to {dest}")
    assert not (tmp_path / "var" / "corpora").exists()

    fetched = _make(tmp_path, "qmsum", f"QMSUM_MIRROR=file://{SHARED_MIRROR}")
    assert fetched.returncode == 0, fetched.stderr
    assert f"qmsum: 233 artefacts under {dest}: 233 fetched, 0 already present" in fetched.stdout
    again = _make(tmp_path, "qmsum")  # the default: ../shared/data/qmsum/mirror beside the checkout
    assert f"qmsum: 233 artefacts under {dest}: 0 fetched, 233 already present" in again.stdout
