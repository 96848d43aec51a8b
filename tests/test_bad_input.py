"""Bad input tried as a new user would (issue 14): one line, the documented exit code, nothing half-written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import EXIT_INPUT, EXIT_INTEGRITY, EXIT_USAGE

REPO_ROOT = Path(__file__).resolve().parent.parent


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith("ragsweep: error: "), err
    return err


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


# --- a folder where a file is expected --------------------------------------------------------------

FOLDER_AS_FILE = {
    "score --run": ["score", "--qrels", "{file}", "--run", "{folder}"],
    "score --qrels": ["score", "--qrels", "{folder}", "--run", "{file}"],
    "corpus inspect --manifest": ["corpus", "inspect", "qmsum", "--dest", "{tmp}", "--manifest", "{folder}"],
    "sweep run --manifest": ["sweep", "run", "--state", "{tmp}", "--manifest", "{folder}", "--out", "{tmp}/out"],
    "agreement --manifest": ["agreement", "--manifest", "{folder}"],
    "agreement --catalogue": ["agreement", "--sweep", "{tmp}", "--sweep-id", "s", "--catalogue", "{folder}"],
}


@pytest.mark.parametrize("argv", FOLDER_AS_FILE.values(), ids=FOLDER_AS_FILE.keys())
def test_a_folder_where_a_file_is_expected(argv: list[str], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    file = tmp_path / "q.trec"
    file.write_text("q1 0 d1 1\n")
    before = _tree(tmp_path)
    args = [a.format(folder=folder, file=file, tmp=tmp_path) for a in argv]
    assert main(args) == EXIT_INPUT
    assert _one_line_error(capsys) == f"ragsweep: error: {folder}: is a folder; expected a file"
    assert _tree(tmp_path) == before


# --- an existing file as --dest ------------------------------------------------------------------------

@pytest.mark.parametrize("action", ["fetch", "verify", "inspect", "report"])
def test_an_existing_file_as_dest_is_a_usage_error(action: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "qmsum"
    dest.write_text("not a folder\n")
    assert main(["corpus", action, "qmsum", "--dest", str(dest)]) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""  # verify used to print a FAIL line per artefact first
    assert captured.err.count("\n") == 1 and f"ragsweep: error: --dest {dest}" in captured.err
    assert _tree(tmp_path) == ["qmsum"]
    assert dest.read_text() == "not a folder\n"


# --- synth select with a budget that keeps no query of a class --------------------------------------------

@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "seed3"
    assert main(["synth", "generate", "--seed", "3", "--meetings", "20", "--out", str(out)]) == 0
    return out


def test_select_keeping_no_multi_file_query_reports_r_at_1_as_na(generated: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 3, 20 meetings, budget 5 keeps no multi_file query: the pooled R@1 is None, not 0."""
    capsys.readouterr()
    assert main(["synth", "select", "--from", str(generated), "--budget", "5", "--out", str(tmp_path / "sel")]) == 0
    out = capsys.readouterr().out
    assert "multi_file 0;" in out
    assert "multi_file R@1 n/a (no queries)" in out


# --- corpus inspect synthetic: gold spans held to the QMSum reader's rules ----------------------------------

def _with_first_gold_span(source: Path, dest: Path, start: int, end: int) -> None:
    """A copy of a corpus whose first gold span is replaced, with corpus.json's checksum kept true."""
    shutil.copytree(source, dest)
    queries = json.loads((dest / "queries.json").read_text(encoding="utf-8"))
    span = next(q for q in queries["queries"] if q["gold"])["gold"][0]
    span["start_turn"], span["end_turn"] = start, end
    data = json.dumps(queries).encode()
    (dest / "queries.json").write_bytes(data)
    manifest = json.loads((dest / "corpus.json").read_text(encoding="utf-8"))
    manifest["files"]["queries.json"] = hashlib.sha256(data).hexdigest()
    (dest / "corpus.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.mark.parametrize(("start", "end", "problem"), [
    (5, 3, "reversed range: start turn 5 is after end turn 3"),
    (3, 100000, "end turn 100000 is past the last turn"),
    (-1, 3, "start turn -1 is negative"),
])
def test_a_bad_synthetic_gold_span_is_an_input_error(generated: Path, tmp_path: Path, start: int, end: int,
                                                     problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    _with_first_gold_span(generated, corpus, start, end)
    assert main(["corpus", "inspect", "synthetic", "--dest", str(corpus)]) == EXIT_INPUT
    err = _one_line_error(capsys)
    assert f"{corpus}/queries.json: queries[" in err
    assert problem in err


# --- sweep run against a missing state --------------------------------------------------------------------

@pytest.mark.parametrize("sweep_id", [[], ["--sweep-id", "X"]], ids=["default id", "--sweep-id"])
def test_sweep_run_over_a_missing_state_writes_nothing(sweep_id: list[str], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "no-state"
    assert main(["sweep", "run", "--state", str(state), *sweep_id, "--out", str(tmp_path / "out")]) == EXIT_INTEGRITY
    assert _one_line_error(capsys) == (f"ragsweep: error: {state}: not a state folder; "
                                       "run `ragsweep state build` first")
    assert _tree(tmp_path) == []


# --- agreement --manifest: run paths stay in the manifest's folder, errors name the file read ----------------

def _agreement_manifest(folder: Path, runs: dict[str, str]) -> Path:
    arms = [{"name": name, "axis": "control" if name == "ctl" else "knob", "run": run} for name, run in runs.items()]
    manifest = folder / "m.json"
    manifest.write_text(json.dumps({"schema": "ragsweep.catalogue/1",
                                    "families": [{"name": "f", "control": "ctl", "arms": arms}]}))
    return manifest


@pytest.mark.parametrize("run", ["/etc/hostname", "../outside/metrics.json", "runs/../../outside/metrics.json"])
def test_agreement_refuses_a_run_path_outside_the_manifest_folder(run: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    manifest = _agreement_manifest(folder, {"ctl": "ctl.json", "a": run})
    assert main(["agreement", "--manifest", str(manifest)]) == EXIT_INPUT
    assert _one_line_error(capsys) == (f"ragsweep: error: {manifest}: families[f].arms[a].run: {run!r} leaves the "
                                       "manifest's folder; give a path relative to it, without '..'")


def test_agreement_names_the_run_file_it_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "ctl.json").write_text('{"schema": "nope"}')
    manifest = _agreement_manifest(tmp_path, {"ctl": "runs/ctl.json", "a": "runs/a.json"})
    assert main(["agreement", "--manifest", str(manifest)]) == EXIT_INPUT
    assert _one_line_error(capsys) == (f"ragsweep: error: {tmp_path}/runs/ctl.json: field schema: "
                                       "expected 'ragsweep.metrics/1', got 'nope'")


def test_agreement_run_naming_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs" / "ctl").mkdir(parents=True)
    manifest = _agreement_manifest(tmp_path, {"ctl": "runs/ctl", "a": "runs/a.json"})
    assert main(["agreement", "--manifest", str(manifest)]) == EXIT_INPUT
    assert _one_line_error(capsys) == f"ragsweep: error: {tmp_path}/runs/ctl: is a folder; expected a file"


# --- numbers that parse but mean nothing ------------------------------------------------------------------

# A negative qrels grade: tests/test_cli.py::test_malformed_qrels_line, beside the other qrels lines.

@pytest.mark.parametrize(("key", "value"), [("size", True), ("size", -5), ("size", 0), ("candidate_pool", False),
                                            ("rank_constant", 0)])
@pytest.mark.parametrize("command", ["sweep run", "agreement"])
def test_a_catalogue_count_that_is_not_a_positive_integer(command: str, key: str, value: object, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "emit-manifest"]) == 0
    doc = json.loads(capsys.readouterr().out)
    family = doc["families"][0]
    arm = family["arms"][0]
    arm["config"][key] = value
    manifest = tmp_path / "arms.json"
    manifest.write_text(json.dumps(doc))
    argv = (["sweep", "run", "--state", str(tmp_path / "no-state"), "--manifest", str(manifest),
             "--out", str(tmp_path / "out")] if command == "sweep run" else ["agreement", "--manifest", str(manifest)])
    assert main(argv) == EXIT_INPUT
    assert _one_line_error(capsys) == (f"ragsweep: error: {manifest}: families[{family['name']}].arms[{arm['name']}]"
                                       f".config: {key} must be a positive integer, got {value!r}")
    assert _tree(tmp_path) == ["arms.json"]


# --- make sweep after fetching QMSum ---------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_sweep_builds_a_new_state_once_qmsum_is_fetched(tmp_path: Path) -> None:
    """A synthetic-only state is up to date; after var/corpora/qmsum/LICENSE appears it is not reused."""
    venv, var = tmp_path / "venv", tmp_path / "var"
    made = [venv / ".installed", var / "synthetic/full-archive-7/corpus.json",
            var / "synthetic/budget-5-archive-7/corpus.json", var / "states/default-5-archive-7/state.json"]
    for age, path in enumerate(reversed(made)):  # each prerequisite older than what it makes
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"schema": "ragsweep.state/2"}\n' if path.name == "state.json" else "")
        os.utime(path, (time.time() - 60 * age,) * 2)

    def dry_run() -> str:
        return subprocess.run(["make", "-n", "-C", str(REPO_ROOT), "sweep", f"VAR={var}", f"VENV={venv}",
                               "BUDGET=5", "SEED=7", "WORKERS=1", "EXECUTOR=local", "RERANKER="],
                              check=True, capture_output=True, text=True).stdout

    first = dry_run()
    assert "state build" not in first
    assert f"sweep run --state {var}/states/default-5-archive-7 " in first
    # a state built before states recorded what they hold is rebuilt, not left for the sweep to refuse
    state_json = var / "states/default-5-archive-7/state.json"
    stamp = state_json.stat().st_mtime
    state_json.write_text('{"schema": "ragsweep.state/1"}\n')
    os.utime(state_json, (stamp, stamp))
    assert (f"state build --corpus synthetic={var}/synthetic/budget-5-archive-7  "
            f"--out {var}/states/default-5-archive-7 --force") in dry_run()
    state_json.write_text('{"schema": "ragsweep.state/2"}\n')
    os.utime(state_json, (stamp, stamp))
    assert "state build" not in dry_run()
    (var / "corpora/qmsum").mkdir(parents=True)
    (var / "corpora/qmsum/LICENSE").touch()
    second = dry_run()
    assert (f"state build --corpus synthetic={var}/synthetic/budget-5-archive-7 --corpus qmsum={var}/corpora/qmsum "
            f"--out {var}/states/default-5-archive-7-qmsum --force") in second
    assert f"sweep run --state {var}/states/default-5-archive-7-qmsum " in second


# --- corpus fetch from a mirror holding a file that is not the pinned one -----------------------------------

QMSUM_FIXTURE = REPO_ROOT / "tests" / "fixtures" / "qmsum"


@pytest.mark.parametrize("dest_exists", [False, True], ids=["new dest", "existing dest"])
def test_a_tampered_mirror_file_is_refused_and_nothing_is_fetched(dest_exists: bool, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Every file before the tampered one is good; none of them reaches --dest (issue 13)."""
    manifest = QMSUM_FIXTURE / "SOURCES.tsv"
    mirror = tmp_path / "mirror"
    shutil.copytree(QMSUM_FIXTURE, mirror)
    tampered = "data/ALL/val/parks_3.json"  # the last meeting file of the manifest
    data = (mirror / tampered).read_bytes().replace(b"{", b"[", 1)
    (mirror / tampered).write_bytes(data)
    dest = tmp_path / "qmsum"
    if dest_exists:
        dest.mkdir()
        (dest / "LICENSE").write_bytes((QMSUM_FIXTURE / "LICENSE").read_bytes())
    before = {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")}
    pinned = next(line.split("\t")[2] for line in manifest.read_text().splitlines() if line.startswith(tampered))
    argv = ["corpus", "fetch", "qmsum", "--dest", str(dest), "--mirror", mirror.as_uri(), "--manifest", str(manifest)]
    assert main(argv) == EXIT_INTEGRITY
    assert _one_line_error(capsys) == (
        f"ragsweep: error: {tampered}: sha256 mismatch for {mirror.as_uri()}/{tampered}: expected {pinned}, "
        f"got {hashlib.sha256(data).hexdigest()}; nothing was written to {dest}")
    assert {p: p.read_bytes() if p.is_file() else None for p in tmp_path.rglob("*")} == before
    assert dest.exists() is dest_exists
