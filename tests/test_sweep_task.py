"""The one task model (harness.sweep.task): what crosses the process boundary, whole, and its one-line refusals."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.errors import EXIT_INPUT, InputDataError
from harness.sweep.catalogue import CATALOGUE, Arm
from harness.sweep.task import Job, Task, build_task

POOL = CATALOGUE.family("pool")
FUSION = CATALOGUE.family("fusion")


def _rerank_task() -> Task:
    arms = (POOL.arm("pool-12"), POOL.arm("pool-24"))
    return build_task("arm", arms, state=Path("/s/state"), store="s3://bucket/prefix", sweep_id="pool-abc",
                      backend="stack", s3_endpoint="http://minio:9000", workers=2, embedding_backend="onnx",
                      onnx_cache=Path("/cache/onnx"), reranker=Path("/m/reranker"), rerank_device="cuda:1",
                      rerank_threads=3, rerank_cache=Path("/cache/rerank"), legs="sweeps/x/legs/g.json",
                      scores=("k1", "k2"), part=(1, 3), prescore=arms, processes=2)


def test_a_task_round_trips_through_its_json_whole() -> None:
    task = _rerank_task()
    text = task.to_json()
    assert "\n" not in text
    assert Task.from_json(text) == task
    doc = json.loads(text)
    # the part is written as the flag was (K/P from 1), the arms as their specs
    assert doc["part"] == "2/3" and doc["job"] == "arm"
    assert [a["name"] for a in doc["arms"]] == ["pool-12", "pool-24"]
    assert doc["reranker"] == "/m/reranker" and doc["rerank_device"] == "cuda:1"


def test_build_task_tells_a_process_without_a_reranker_nothing_of_the_cross_encoder() -> None:
    arm = FUSION.arm("rrf-60")
    task = build_task("arm", [arm], state="/s", store="/out", sweep_id="f", rerank_device="cuda",
                      rerank_cache="/c", processes=4)
    assert task.reranker is None and task.rerank_device == "cpu" and task.rerank_cache is None
    assert task.processes == 1  # one arm: nothing to spread
    assert json.loads(task.to_json()) == {"job": "arm", "state": "/s", "store": "/out", "sweep_id": "f",
                                          "part": "1/1", "arms": [arm.model_dump(exclude_none=True)]}


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d | {"workrs": 2}, "the task: workrs: Extra inputs are not permitted"),
    (lambda d: d | {"part": "3/2"}, "the task: part: '3/2': expected K/P with 1 <= K <= P, e.g. 2/3"),
    (lambda d: d | {"arms": []}, "the task: arms: Tuple should have at least 1 item after validation, not 0"),
    (lambda d: d | {"arms": [{"name": "x"}]}, "the task: arms.0.family: Field required (and 2 more)"),
    (lambda d: d | {"backend": "cloud"}, "the task: backend: Input should be 'embedded' or 'stack'"),
    (lambda d: {k: v for k, v in d.items() if k != "state"}, "the task: state: Field required"),
    (lambda d: d | {"job": "scores", "scores": ["a", "b"]},
     "the task: a scores task needs the reranker and one scores key, its part's"),
    (lambda d: d | {"job": "legs", "legs": None}, "the task: a legs task needs legs "
                                                  "(the store key of the group's legs.json)"),
])
def test_a_bad_task_is_one_line_naming_the_field_exit_4(mutate: Callable[[dict[str, Any]], Any], message: str) -> None:
    doc = json.loads(_rerank_task().to_json())
    with pytest.raises(InputDataError) as refused:
        Task.from_json(json.dumps(mutate(doc)))
    assert refused.value.exit_code == EXIT_INPUT
    assert str(refused.value) == message


def test_a_task_file_that_is_not_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "t.task.json"
    path.write_text('{"job": "arm",\n oops}')
    with pytest.raises(InputDataError, match=rf"^{path}: not JSON at line 2 column 2 "):
        Task.read(path)
    with pytest.raises(InputDataError, match=rf"^{tmp_path / 'missing.json'}: cannot read the task: "):
        Task.read(tmp_path / "missing.json")
    with pytest.raises(InputDataError, match=r"^RAGSWEEP_TASK: expected a JSON object \(a task\), got list$"):
        Task.from_json("[]", "RAGSWEEP_TASK")


def task_argv(folder: Path, job: Job, arms: Sequence[Arm], **fields: Any) -> list[str]:
    """``--task FILE`` for a task built as the executors build it (harness.sweep.task.build_task), written to a
    fresh file under ``folder``: how a test runs jobs.arm, jobs.legs or jobs.scores as the executors do."""
    task = build_task(job, tuple(arms), **fields)
    path = folder / f"{job}-{len(list(folder.glob('*.task.json')))}.task.json"
    path.write_text(task.to_json())
    return ["--task", str(path)]
