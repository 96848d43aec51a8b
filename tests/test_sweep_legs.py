"""The fusion family through the local executor, legs shared and not: the same bytes for every arm.

Real jobs.arm processes, the real embedding model, a state built from the QMSum-format fixture.
With sharing the ten arms are one group (one process: the queries encoded and both legs fetched
once, then the arms spread over two forked processes, one per worker); without, ten processes.
Every file an arm publishes except runinfo.json (durations, and what was shared) must have the
same sha256 both ways, and complete.json must record them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.sweep.catalogue import CATALOGUE
from harness.sweep.executor import LocalExecutor, open_store
from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES
from tests.fixture_state import qmsum_fixture_state
from tests.test_sweep_task import task_argv

DETERMINISTIC = tuple(name for name in (*ARM_FILES, *ARM_EXTRA_FILES) if name != "runinfo.json")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qmsum_fixture_state(tmp_path_factory, "legs")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_fusion_family_writes_the_same_bytes_with_legs_shared_and_alone(state: Path, tmp_path: Path) -> None:
    arms = list(CATALOGUE.family("fusion").arms)
    reports = {}
    for share in (True, False):
        executor = LocalExecutor(state=state, store_spec=str(tmp_path / str(share)), workers=2, quiet=True,
                                 share_legs=share)
        reports[share] = executor.run(arms, "fusion")
        assert [o.status for o in reports[share].outcomes] == ["published"] * len(arms), reports[share].outcomes
    assert {o.group_size for o in reports[True].outcomes} == {len(arms)}
    assert {o.group_size for o in reports[False].outcomes} == {1}
    positions: list[int] = []
    processes: set[int] = set()
    for arm in arms:
        shared, alone = (tmp_path / str(s) / "sweeps" / "fusion" / "fusion" / arm.name for s in (True, False))
        for name in DETERMINISTIC:
            assert _sha(shared / name) == _sha(alone / name), f"{arm.name}/{name}"
        markers = [json.loads((folder / "complete.json").read_text()) for folder in (shared, alone)]
        assert markers[0] == {**markers[1], "files": {**markers[1]["files"],
                                                      "runinfo.json": markers[0]["files"]["runinfo.json"]}}
        legs = json.loads((shared / "runinfo.json").read_text())["legs"]
        assert legs["group"] == {"embedding_text": "header", "fusion_window": 192, "scope": "corpus"}
        assert legs["fetched"] == 0 and legs["prefetched"] > 0, legs  # every leg fetched before the fork
        positions.append(legs["position"])
        processes.add(legs["process"])
    assert sorted(positions) == list(range(len(arms))) and processes == {0, 1}


def test_legs_published_by_jobs_legs_serve_the_arm_jobs_byte_for_byte(state: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The Kubernetes path without a cluster: jobs.legs publishes the group's legs and query vectors, jobs.arm
    --legs reads them (never fetching legs nor encoding queries) and writes what the arm writes alone; a
    table for another state is refused."""
    from harness.sweep.executor import legs_identity
    from harness.sweep.legs import arm_legs_key, group_id, legs_store_key
    from jobs import arm as arm_job
    from jobs import legs as legs_job

    family = CATALOGUE.family("fusion")
    arm = family.arm("norm-minmax-harm")
    key = legs_store_key("s", group_id(legs_identity(state), arm_legs_key(arm)))
    k8s, alone_store = str(tmp_path / "k8s"), str(tmp_path / "alone")
    assert legs_job.main(task_argv(tmp_path, "legs", family.arms, state=state, store=k8s, sweep_id="s",
                                   legs=key)) == 0
    table = json.loads((tmp_path / "k8s" / key).read_text())
    assert table["group"]["state"] == legs_identity(state) and table["rows"]
    assert len(table["vectors"]) == len(table["rows"])  # the query vectors travel with the legs
    assert arm_job.main(task_argv(tmp_path, "arm", [arm], state=state, store=k8s, sweep_id="s", legs=key)) == 0
    assert arm_job.main(task_argv(tmp_path, "arm", [arm], state=state, store=alone_store, sweep_id="s")) == 0
    read, alone = (tmp_path / s / "sweeps" / "s" / "fusion" / arm.name for s in ("k8s", "alone"))
    for name in DETERMINISTIC:
        assert _sha(read / name) == _sha(alone / name), name
    legs = json.loads((read / "runinfo.json").read_text())["legs"]
    assert legs["fetched"] == 0 and legs["published"] == len(table["rows"]) and legs["query_vectors"] == "published"

    table["group"]["state"] = "0" * 64  # legs of another state: refused, the arm failed, nothing fetched
    (tmp_path / "k8s" / key).write_text(json.dumps(table))
    other = family.arm("rrf-60")
    code = arm_job.main(task_argv(tmp_path, "arm", [other], state=state, store=k8s, sweep_id="s", legs=key))
    assert code == 5 and "were fetched for" in capsys.readouterr().err
    assert (tmp_path / "k8s" / "sweeps" / "s" / "fusion" / other.name / "failed.json").is_file()


def test_rerank_groups_running_at_once_share_the_machines_score_cache(state: Path, tmp_path: Path) -> None:
    """pool-12 and pool-24 (fusion window 100) and pool-96 (window 384): one group, whose legs a jobs.legs
    process fetches over 384 and publishes once, and whose arms two jobs.arm processes run at once from
    them, over one cross-encoder score cache (a reranker trained for two steps: real weights, real
    forward passes). Run again into a new store, the cache is warm: nothing is prescored, every pair is
    read, none scored but one check per process; and with no cache and no sharing at all, one process
    an arm. Every arm's files are the same bytes all three ways."""
    from harness.retrieval.train import train_reranker
    from harness.state import State
    reranker = tmp_path / "reranker"
    train_reranker(State.open(state).corpora[0], reranker, seed=1, steps=2, batch_size=4)
    pool = CATALOGUE.family("pool")
    arms = [pool.arm(name) for name in ("pool-12", "pool-24", "pool-96")]
    cache = tmp_path / "rerank-cache"
    from harness.sweep.legs import group_arms
    (group,) = group_arms(arms, "embedded")
    group_order = group.arms
    for run in ("cold", "warm", "none"):
        executor = LocalExecutor(state=state, store_spec=str(tmp_path / run), workers=2, quiet=True,
                                 reranker=reranker, rerank_cache=None if run == "none" else cache,
                                 share_legs=run != "none")
        report = executor.run(arms, "pool")
        assert [o.status for o in report.outcomes] == ["published"] * len(arms), report.outcomes
        assert {o.group_size for o in report.outcomes} == ({1} if run == "none" else {1, 2})
        assert (report.legs_seconds > 0) == (run != "none")
        published = sorted((tmp_path / run / "sweeps" / "pool" / "legs").glob("*/legs.json"))
        assert len(published) == (0 if run == "none" else 1)
    checked = warm_read = 0
    prescored: dict[str, dict[str, dict[str, Any]]] = {"cold": {}, "warm": {}}
    for arm in arms:
        folders = {run: tmp_path / run / "sweeps" / "pool" / arm.family / arm.name for run in ("cold", "warm", "none")}
        for name in DETERMINISTIC:
            assert len({_sha(folder / name) for folder in folders.values()}) == 1, f"{arm.name}/{name}"
        info = {run: json.loads((folder / "runinfo.json").read_text())["rerank"] for run, folder in folders.items()}
        legs = json.loads((folders["cold"] / "runinfo.json").read_text())["legs"]
        assert legs["group"]["fusion_window"] == 384 and legs["window"] in (100, 384), legs
        assert legs["fetched"] == 0 and legs["published"] > 0 and legs["query_vectors"] == "published", legs
        # the two processes answer their arms' queries from the first and from the middle on (jobs.arm --part)
        assert legs["part"] in ("1/2", "2/2") and (legs["first_query"] == 0) == (legs["part"] == "1/2"), legs
        # cold, each process scored the group's pairs from its part on before its arms ran (jobs.arm
        # --prescore), and its arms find every pair in its memory; warm, every pair of the queries it
        # sampled was in the cache, so it prescored nothing and its arms read the pairs, scoring none
        assert info["cold"]["scored"] == info["cold"]["from_cache"] == 0 and info["cold"]["reused"] > 0, info
        assert info["warm"]["scored"] == 0, info
        warm_read += info["warm"]["from_cache"]
        for run in ("cold", "warm"):
            block = json.loads((folders[run] / "runinfo.json").read_text())["legs"]["prescored"]
            assert block["arms"] == [a.name for a in group_order] and block["part"] == legs["part"], block
            assert block["first_query"] == legs["first_query"], block
            assert (block["queries"] > 0) == (run == "cold") == ("skipped" not in block), block
            prescored[run][block["part"]] = block
        assert info["none"]["cache"] is None and info["none"]["from_cache"] == 0, info
        assert "prescored" not in json.loads((folders["none"] / "runinfo.json").read_text())["legs"]
        checked += info["warm"]["checked"]
    assert sorted(prescored["cold"]) == ["1/2", "2/2"]
    rows = _cache_rows(cache)
    # cold, the two split the pairs (a query both reached at once is scored by both); warm, they read them
    assert rows <= sum(p["scored"] for p in prescored["cold"].values()) < 2 * rows
    assert all(p["scored"] == p["from_cache"] == p["checked"] == 0 for p in prescored["warm"].values())
    assert warm_read >= rows  # the two processes' arms read every pair (a pair both ask for, each)
    assert checked == 2  # the first pair each process read, scored again

    # a resumed sweep whose deepest pending arm is the same finds the group's legs.json: no legs process
    shas = {arm.name: _sha(tmp_path / "warm" / "sweeps" / "pool" / "pool" / arm.name / "run.trec") for arm in arms}
    _resume(state, tmp_path / "warm", reranker, cache, arms, ("pool-12", "pool-96"))
    for name in ("pool-12", "pool-96"):
        folder = tmp_path / "warm" / "sweeps" / "pool" / "pool" / name
        assert _sha(folder / "run.trec") == shas[name]
        assert json.loads((folder / "runinfo.json").read_text())["legs"]["query_vectors"] == "published"

    # resumed with only window-100 arms pending (pool-96 complete): the window-384 legs.json serves them,
    # cut at 100; no legs process, the same bytes
    _resume(state, tmp_path / "warm", reranker, cache, arms, ("pool-12", "pool-24"))
    assert len(list((tmp_path / "warm" / "sweeps" / "pool" / "legs").glob("*/legs.json"))) == 1
    for name in ("pool-12", "pool-24"):
        folder = tmp_path / "warm" / "sweeps" / "pool" / "pool" / name
        for file in DETERMINISTIC:
            assert _sha(folder / file) == _sha(tmp_path / "cold" / "sweeps" / "pool" / "pool" / name / file), file
        legs = json.loads((folder / "runinfo.json").read_text())["legs"]
        assert legs["group"]["fusion_window"] == 384 and legs["window"] == 100, legs


def _cache_rows(cache: Path) -> int:
    """The pairs in the score cache (one reranker's folder under ``cache``)."""
    import sqlite3

    (db,) = cache.glob("*/scores.sqlite3")
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT count(*) FROM scores").fetchone()[0])


def _resume(state: Path, store: Path, reranker: Path, cache: Path, arms: list, again: tuple[str, ...]) -> None:
    """Unmark the arms ``again`` (of family pool) complete and run the sweep on: they, and only they, run,
    with no legs process (their group's legs, or deeper ones, are in the store)."""
    for name in again:
        (store / "sweeps" / "pool" / "pool" / name / "complete.json").unlink()
    report = LocalExecutor(state=state, store_spec=str(store), workers=2, quiet=True, reranker=reranker,
                           rerank_cache=cache).run(arms, "pool")
    assert [o.status for o in report.outcomes] == ["skipped", "published", "published"], report.outcomes
    assert sorted(o.arm.name for o in report.outcomes if o.status == "published") == sorted(again)
    assert report.legs_seconds == 0


def test_a_group_whose_legs_process_fails_fails_its_arms_naming_it(state: Path, tmp_path: Path) -> None:
    """The legs cannot be published (a file stands where the sweep's legs folder goes): jobs.legs exits
    non-zero, and the group's arms are not run but failed, in the report and in the store, naming it."""
    from harness.sweep.storage import read_failure

    pool = CATALOGUE.family("pool")
    arms = [pool.arm(name) for name in ("pool-12", "pool-96")]
    store = tmp_path / "store"
    (store / "sweeps" / "pool").mkdir(parents=True)
    (store / "sweeps" / "pool" / "legs").write_text("not a folder\n")
    reranker = tmp_path / "reranker"  # never loaded: the arms do not run (its provenance hashes the weights file)
    reranker.mkdir()
    (reranker / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    (reranker / "model.safetensors").write_bytes(b"weights")
    executor = LocalExecutor(state=state, store_spec=str(store), workers=2, quiet=True, reranker=reranker,
                             rerank_cache=None)
    report = executor.run(arms, "pool")
    assert report.legs_seconds > 0 and [o.status for o in report.outcomes] == ["failed", "failed"]
    for outcome in report.outcomes:
        assert outcome.message.startswith("not run: its group's legs process failed: pool-12+1 legs: exit "), outcome
        failure = read_failure(open_store(str(store)), "pool", outcome.arm)
        assert failure is not None and failure["error"] == outcome.message
        assert not (store / "sweeps" / "pool" / "pool" / outcome.arm.name / "complete.json").exists()


def test_an_onnx_rerank_sweep_is_a_measurement_of_its_own(state: Path, tmp_path: Path) -> None:
    """pool-12 and pool-24 scored by onnxruntime (--rerank-backend onnx, a tiny seeded cross-encoder) on two
    workers: a legs process, then two arm processes reading its legs, the graph exported once, into
    the onnx cache every task names. The results name the backend; asked again, the arms are complete; the same
    arms scored by torch (one process) into the same store are not taken for them (another config
    hash: run again, not skipped)."""
    from tests.tiny_models import tiny_cross_encoder

    pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install 'ragsweep[onnx]')")
    reranker = tiny_cross_encoder(tmp_path / "reranker")
    pool = CATALOGUE.family("pool")
    arms = [pool.arm("pool-12"), pool.arm("pool-24")]
    hashes = []
    for backend, status, workers in (("onnx", "published", 2), ("onnx", "skipped", 2), ("torch", "published", 1)):
        report = LocalExecutor(state=state, store_spec=str(tmp_path / "store"), workers=workers, quiet=True,
                               reranker=reranker, rerank_cache=tmp_path / "cache", rerank_backend=backend,
                               onnx_cache=tmp_path / "onnx").run(arms, "pool")  # the processes' export
        assert [o.status for o in report.outcomes] == [status] * 2, report.outcomes
        folder = tmp_path / "store" / "sweeps" / "pool" / "pool" / "pool-12"
        hashes.append(json.loads((folder / "complete.json").read_text())["config_hash"])
        provenance = json.loads((folder / "metrics.json").read_text())["retrieval"]["reranker"]
        assert ("backend" in provenance) == (backend == "onnx"), provenance
        if backend == "onnx" and status == "published":
            assert report.legs_seconds > 0  # the arms read a legs process's table (no query encoder loaded)
    assert hashes[0] == hashes[1] != hashes[2]
    assert len(list((tmp_path / "onnx").glob("cross-encoder_sha256_*/model.onnx"))) == 1


def test_each_process_reading_a_groups_legs_is_told_its_part_and_a_bad_part_is_refused(
        state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.sweep.legs import group_arms
    from jobs import arm as arm_job

    pool = CATALOGUE.family("pool")
    arms = [pool.arm(name) for name in ("pool-12", "pool-24", "pool-96")]
    (group,) = group_arms(arms, "embedded")
    executor = LocalExecutor(state=state, store_spec=str(tmp_path), workers=2, reranker=tmp_path)
    tasks = executor._tasks(group, "s", 1, open_store(str(tmp_path)), arms)
    assert [t.task.job for t in tasks] == ["legs", "arm", "arm"]
    assert [t.task.part for t in tasks] == [(0, 1), (0, 2), (1, 2)]
    assert executor._task("arm", arms, "s").part == (0, 1)  # one process: no part
    # with no score cache the processes share, none scores the others' pairs; with one, each is given the
    # group's rerank arms to score first (its task's prescore), its own and the other's
    assert all(not t.task.prescore for t in tasks)
    cached = LocalExecutor(state=state, store_spec=str(tmp_path), workers=2, reranker=tmp_path,
                           rerank_cache=tmp_path / "cache")
    tasks = cached._tasks(group, "s", 1, open_store(str(tmp_path)), arms)
    assert [t.task.prescore for t in tasks] == [(), group.arms, group.arms]
    # each child is handed its task, whole, as one file: nothing else on its command line
    assert tasks[1].command(tmp_path / "t.task.json")[1:] == ["-m", "jobs.arm", "--task", str(tmp_path / "t.task.json")]
    assert tasks[0].command(tmp_path / "t.task.json")[1:3] == ["-m", "jobs.legs"]
    # a task file with a bad part or prescore: one line naming the file and the field, exit 4 (bad input)
    path = tmp_path / "bad.task.json"
    for field, bad, said in [*[("part", bad, f"part: '{bad}': expected K/P") for bad in ("0/2", "3/2", "2", "a/b",
                                                                                         "1/0")],
                             ("prescore", [{"name": "x"}], "prescore.0.family: Field required")]:
        path.write_text(json.dumps(json.loads(tasks[1].task.to_json()) | {field: bad}))
        assert arm_job.main(["--task", str(path)]) == 4
        assert f"jobs.arm: error: {path}: {said}" in capsys.readouterr().err
    # a legs task handed to jobs.arm: a usage error naming the entrypoint it is for
    path.write_text(tasks[0].task.to_json())
    assert arm_job.main(["--task", str(path)]) == 2
    assert f"jobs.arm: error: {path}: a legs task is run by python -m jobs.legs, not jobs.arm" in \
        capsys.readouterr().err
