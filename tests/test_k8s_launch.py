"""`ragsweep sweep run --executor k8s --corpus NAME=DIR ...` (harness.sweep.k8s.launch): what it refuses,
in one line and with exit 2, before it makes a namespace or calls the cluster; and the corpora's key.

The launch itself (namespace, helm install, upload, injector, arms, collector, teardown) runs against the
single-node cluster: tests/test_k8s_cluster.py and `make sweep ARMS=fusion EXECUTOR=k8s` (docs/cluster.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_USAGE, UsageError
from harness.sweep.k8s import launch
from harness.sweep.k8s.launch import corpora_key, parse_corpora


def _corpus(root: Path, name: str, text: str = "x") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "corpus.json").write_text(text)
    return folder


def test_corpora_are_named_sorted_and_a_bare_folder_is_the_synthetic_one(tmp_path: Path) -> None:
    synth, qmsum = _corpus(tmp_path, "s"), _corpus(tmp_path, "q")
    assert parse_corpora([f"qmsum={qmsum}", str(synth)]) == (("qmsum", qmsum), ("synthetic", synth))


@pytest.mark.parametrize(("items", "complaint"), [
    (["Synthetic=DIR"], "is not lower-case letters"),
    (["synthetic=DIR", "synthetic=DIR"], "--corpus synthetic given twice"),
    (["synthetic=missing"], "missing is not a folder"),
    ([], "give each corpus"),
])
def test_bad_corpora_are_refused_in_one_line(items: list[str], complaint: str, tmp_path: Path) -> None:
    _corpus(tmp_path, "DIR")
    items = [i.replace("DIR", str(tmp_path / "DIR")).replace("missing", str(tmp_path / "missing")) for i in items]
    with pytest.raises(UsageError, match=complaint):
        parse_corpora(items)


def test_the_key_sees_names_file_names_and_bytes(tmp_path: Path) -> None:
    a = _corpus(tmp_path, "a", "one")
    key = corpora_key([("synthetic", a)])
    assert key == corpora_key([("synthetic", a)]) and len(key) == 10
    assert key != corpora_key([("qmsum", a)])
    (a / "corpus.json").write_text("two")
    assert key != corpora_key([("synthetic", a)])


@pytest.mark.parametrize(("extra", "complaint"), [
    (["--executor", "local"], "--executor k8s only"),
    (["--executor", "k8s", "--state", "STATE"], "not both"),
    (["--executor", "k8s", "--out", "s3://bucket"], "copied to a local folder"),
    (["--executor", "k8s", "--arms", "pool"], "need --reranker DIR"),
    (["--executor", "k8s", "--values", "nowhere.yaml"], "nowhere.yaml: no such file"),
    (["--executor", "k8s", "--backends", "stack,elastic"], "elastic is not one of"),
])
def test_the_cli_refuses_before_any_namespace_is_made(extra: list[str], complaint: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    made: list[object] = []
    monkeypatch.setattr(launch, "launch", lambda *a, **k: made.append(a) or 0)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: made.append(a))  # no ci-namespace.sh, no helm
    # no helm anywhere, whatever this machine has built: the request's own error must still be the one told
    monkeypatch.setattr(launch, "ROOT", tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    synth = _corpus(tmp_path, "synth")
    values = [] if "--values" in extra else ["--values", str(synth / "corpus.json")]  # any file: not reached
    argv = ["sweep", "run", "--corpus", f"synthetic={synth}", "--out", str(tmp_path / "var"), *values,
            *[str(tmp_path / "state") if x == "STATE" else x for x in extra]]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and complaint in err, err
    assert not made
    assert not (tmp_path / "var" / "k8s-sweeps").exists()


def test_without_state_or_corpus_the_run_says_what_to_give(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "run", "--out", str(tmp_path / "var")]) == EXIT_USAGE
    assert "give --state STATE (or --executor k8s --corpus NAME=DIR ...)" in capsys.readouterr().err


def test_a_valid_request_becomes_one_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    if not (launch.ROOT / "var/tools/bin/helm").is_file() and shutil.which("helm") is None:
        pytest.skip("no helm: make k8s-tools builds it into var/tools/bin")
    plans: list[launch.LaunchPlan] = []
    monkeypatch.setattr(launch, "launch", lambda plan, args, kube: plans.append(plan) or 0)
    synth, qmsum = _corpus(tmp_path, "synth"), _corpus(tmp_path, "qmsum")
    values = synth / "corpus.json"
    argv = ["sweep", "run", "--executor", "k8s", "--corpus", str(synth), "--corpus", f"qmsum={qmsum}",
            "--values", str(values), "--keep", "--backends", "stack,embedded", "--out", str(tmp_path / "var")]
    assert main(argv) == 0
    (plan,) = plans
    assert plan.corpora == (("qmsum", qmsum), ("synthetic", synth))
    assert (plan.values, plan.keep, plan.backends) == ((values,), True, ("stack", "embedded"))
    assert plan.out == tmp_path / "var" and Path(plan.helm).name == "helm"


def test_without_helm_a_valid_request_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    monkeypatch.setattr(launch, "ROOT", tmp_path)  # no var/tools/bin/helm there
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(launch, "launch", lambda *a, **k: pytest.fail("launched without helm"))
    synth = _corpus(tmp_path, "synth")
    argv = ["sweep", "run", "--executor", "k8s", "--corpus", f"synthetic={synth}", "--values",
            str(synth / "corpus.json"), "--backends", "embedded", "--out", str(tmp_path / "var")]
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == "ragsweep: error: no helm (make k8s-tools builds it into var/tools/bin)\n"
