"""Kubernetes' shared cross-encoder scores without a cluster: the Jobs' own entrypoints over a folder store.

jobs.legs publishes a rerank group's legs; two jobs.scores processes (the launcher's plan: two parts)
score its pairs, one part of the judged queries each, and publish them; each rerank arm then runs in a
jobs.arm process of its own with an empty score cache of its own (a pod's scratch volume), reading the
parts (--scores). Real processes, the real embedding model, a reranker trained for two steps (real
weights, real forward passes), a state built from the QMSum-format fixture. Every arm writes the bytes it
writes alone, scoring nothing but the one pair it checks.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from harness.sweep.catalogue import CATALOGUE
from tests.fixture_state import qmsum_fixture_state
from tests.test_sweep_legs import DETERMINISTIC, _sha
from tests.test_sweep_task import task_argv

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qmsum_fixture_state(tmp_path_factory, "scores")


def test_scores_published_in_two_parts_serve_every_rerank_arm_byte_for_byte(
        state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("kubernetes", reason="the kubernetes client is not installed")  # the launcher's plan
    from harness.objectstore import LocalFolderStore
    from harness.retrieval.scorecache import unpack_scores
    from harness.retrieval.train import train_reranker
    from harness.state import State
    from harness.sweep.executor import legs_identity
    from harness.sweep.k8s.plan import plan_legs, plan_scores
    from jobs import arm as arm_job
    from jobs import legs as legs_job
    from jobs import scores as scores_job

    reranker = tmp_path / "reranker"
    train_reranker(State.open(state).corpora[0], reranker, seed=1, steps=2, batch_size=4)
    pool = CATALOGUE.family("pool")
    arms = [pool.arm(name) for name in ("pool-12", "pool-24", "pool-96")]
    store = LocalFolderStore(tmp_path / "k8s")
    legs = plan_legs(store, "s", arms, "embedded", legs_identity(state))
    ((_, group, legs_key),) = legs.jobs
    plan = plan_scores(store, "s", arms, "embedded", legs.legs_of, "rerankers/test/reranker.tar.gz", 2)
    assert [job.part for job in plan.jobs] == [(0, 2), (1, 2)]
    common: dict[str, Any] = {"state": state, "sweep_id": "s", "store": str(tmp_path / "k8s")}
    assert legs_job.main(task_argv(tmp_path, "legs", group.arms, legs=legs_key, **common)) == 0
    for job in plan.jobs:
        assert scores_job.main(task_argv(tmp_path, "scores", job.arms, legs=job.legs, reranker=reranker,
                                         scores=(job.key,), part=job.part, **common)) == 0
    parts = [json.loads((tmp_path / "k8s" / job.key).read_text()) for job in plan.jobs]
    n = len(json.loads((tmp_path / "k8s" / legs_key).read_text())["vectors"])
    # the two parts are the judged queries, split in two; each scored its own pairs, the same scorer's
    assert [p["part"] for p in parts] == ["1/2", "2/2"] and parts[0]["queries"] == [0, n // 2]
    assert parts[1]["queries"] == [n // 2, n] and parts[0]["scorer"] == parts[1]["scorer"]
    assert all(p["pairs"] > 0 and p["legs"] == legs_key for p in parts)
    # each scored its own queries' pairs and no other's (the fixture's query texts are all different)
    held = [set(unpack_scores(base64.b64decode(p["records"]), "part")) for p in parts]
    assert len(held[0]) == parts[0]["pairs"] and not held[0] & held[1]
    assert parts[0]["arms"] == [a.name for a in arms]
    printed = capsys.readouterr().out
    assert f"part 2/2 (queries {n // 2}-{n - 1} of {n}): {parts[1]['pairs']} pairs" in printed

    keys = tuple(job.key for job in plan.jobs)
    for arm in arms:
        cache = tmp_path / f"cache-{arm.name}"  # each arm's pod: a score cache of its own, empty
        assert arm_job.main(task_argv(tmp_path, "arm", [arm], legs=legs_key, reranker=reranker, scores=keys,
                                      rerank_cache=cache, **common)) == 0
        assert arm_job.main(task_argv(tmp_path, "arm", [arm], state=state, sweep_id="s",
                                      store=str(tmp_path / "alone"), reranker=reranker)) == 0
        read, alone = (tmp_path / s / "sweeps" / "s" / "pool" / arm.name for s in ("k8s", "alone"))
        for name in DETERMINISTIC:
            assert _sha(read / name) == _sha(alone / name), f"{arm.name}/{name}"
        runinfo = json.loads((read / "runinfo.json").read_text())
        # every pair the arm asked for was in the parts: none scored, the first one read scored again
        assert runinfo["rerank"]["scored"] == 0 and runinfo["rerank"]["checked"] == 1, runinfo["rerank"]
        assert runinfo["rerank"]["from_cache"] > 0
        published = runinfo["legs"]["published_scores"]
        assert published == {"parts": list(keys), "pairs": parts[0]["pairs"] + parts[1]["pairs"],
                             "other_scorer": []}
        assert json.loads((alone / "runinfo.json").read_text())["rerank"]["scored"] > 0

    # a part made by another scorer (here: its key says another torch): not read; its pairs scored here,
    # said on stderr and in runinfo; the bytes are the same
    first = tmp_path / "k8s" / plan.jobs[0].key
    doc = json.loads(first.read_text())
    first.write_text(json.dumps({**doc, "scorer": {**doc["scorer"], "torch": "0.0"}}))
    arm = arms[2]
    (tmp_path / "k8s" / "sweeps" / "s" / "pool" / arm.name / "complete.json").unlink()
    capsys.readouterr()
    assert arm_job.main(task_argv(tmp_path, "arm", [arm], legs=legs_key, reranker=reranker, scores=keys,
                                  rerank_cache=tmp_path / "cache-other", **common)) == 0
    note = f"note: the scores at {plan.jobs[0].key} were made by another scorer (torch differ)"
    assert note in capsys.readouterr().err
    folder = tmp_path / "k8s" / "sweeps" / "s" / "pool" / arm.name
    runinfo = json.loads((folder / "runinfo.json").read_text())
    assert runinfo["legs"]["published_scores"]["other_scorer"] == [plan.jobs[0].key]
    assert runinfo["rerank"]["scored"] > 0 and runinfo["rerank"]["from_cache"] > 0
    assert _sha(folder / "run.trec") == _sha(tmp_path / "alone" / "sweeps" / "s" / "pool" / arm.name / "run.trec")

    # damaged records: refused (exit 5) naming the key, the arm failed, nothing of its published
    records = bytearray(base64.b64decode(doc["records"]))
    records[-1] ^= 1
    first.write_text(json.dumps({**doc, "records": base64.b64encode(bytes(records)).decode("ascii")}))
    (folder / "complete.json").unlink()
    assert arm_job.main(task_argv(tmp_path, "arm", [arm], legs=legs_key, reranker=reranker, scores=keys,
                                  rerank_cache=tmp_path / "cache-damaged", **common)) == 5
    err = capsys.readouterr().err
    assert f"{plan.jobs[0].key}: its score records do not match their sha256" in err
    assert (folder / "failed.json").is_file() and not (folder / "complete.json").exists()


def test_a_scores_job_is_given_rerank_arms_and_one_key(state: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from jobs import scores as scores_job

    fusion = [CATALOGUE.family("fusion").arm("rrf-60")]
    common: dict[str, Any] = {"state": state, "sweep_id": "s", "store": str(tmp_path), "legs": "k",
                              "reranker": tmp_path}
    assert scores_job.main(task_argv(tmp_path, "scores", fusion, scores=("a",), **common)) == 2
    assert "rrf-60 call no cross-encoder" in capsys.readouterr().err
    # a task that is not a scores task's: refused before anything runs, one line naming the file (exit 4)
    argv = task_argv(tmp_path, "scores", fusion, scores=("a",), **common)
    for field, bad in (("scores", ["a", "b"]), ("part", "3/2"), ("reranker", None)):
        doc = {k: v for k, v in json.loads(Path(argv[1]).read_text()).items() if k != field}
        Path(argv[1]).write_text(json.dumps(doc if bad is None else doc | {field: bad}))
        assert scores_job.main(argv) == 4
        err = capsys.readouterr().err
        assert err.startswith(f"jobs.scores: error: {argv[1]}: ") and err.count("\n") == 1, err
