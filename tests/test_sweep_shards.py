"""A legs group's queries split into shards (harness.sweep.shards, harness.bench.shard): the same bytes.

Real jobs.shard and jobs.merge processes, the real embedding model, a state built from the QMSum-format
fixture. Every deterministic file of every fusion arm, and the comparison, must be the bytes of the
unsharded run at 2 and 3 shards through the executor, and at 1, 2 and 3 shards through the bench
functions themselves; a query a shard leaves out fails the merge, and a shard process that fails
fails the group's arms, none published.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.bench.config import BenchConfig, legs_key, shared_legs_key
from harness.bench.group import GroupRun
from harness.bench.run import write_arm
from harness.bench.shard import answer_shard, merged_outcomes, outcomes_json, read_outcomes, shard_vectors
from harness.errors import InputDataError, IntegrityError
from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder
from harness.state import State
from harness.sweep.catalogue import CATALOGUE
from harness.sweep.executor import LocalExecutor, collect_sweep, open_store
from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES
from tests.fixture_state import qmsum_fixture_state

DETERMINISTIC = tuple(name for name in (*ARM_FILES, *ARM_EXTRA_FILES) if name != "runinfo.json")
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qmsum_fixture_state(tmp_path_factory, "shards")


def _files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in DETERMINISTIC}


def test_merged_shards_write_the_unsharded_bytes_at_one_two_and_three_shards(state: Path, tmp_path: Path) -> None:
    """In one process: each shard's group encodes its own queries only and answers them; the outcomes go
    through their JSON and back, and the merge writes what the unsharded group writes, file for file."""
    arms = list(CATALOGUE.family("fusion").arms)
    configs = [BenchConfig(arm=a.arm_config, control_name=a.name) for a in arms]
    key = shared_legs_key([legs_key(c.arm) for c in configs], "embedded")
    embedder = SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL)
    opened = State.open(state)
    whole = GroupRun.open(opened, configs[0], embedder, key=key)
    expected = {}
    for config in configs:
        whole.run(config, tmp_path / "whole" / config.control_name)
        expected[config.control_name] = _files(tmp_path / "whole" / config.control_name)
    judged = whole.context.judged
    assert len(judged) >= 3
    for w in (1, 2, 3):
        answered = []
        for k in range(w):
            group = GroupRun.open(opened, configs[0], embedder, key=key, vectors=shard_vectors(embedder, (k, w)))
            answered.append(answer_shard(group, configs, (k, w)))
        for config in configs:
            name = config.control_name
            shards = [read_outcomes(outcomes_json(name, "h", (k, w), answered[k][name]), "t", name, "h", (k, w))
                      for k in range(w)]
            out = tmp_path / f"{w}" / name
            write_arm(whole.context, config, out, merged_outcomes(judged, shards, name), started=0.0)
            assert _files(out) == expected[name], f"{name} at {w} shards"
    # a shard that left a query out: the merge refuses it, naming it, rather than scoring it zero
    name = configs[0].control_name
    shards = [dict(answered[k][name]) for k in range(3)]
    del shards[1][judged[1].id]
    with pytest.raises(IntegrityError, match=f"query {judged[1].id} .* missing from shard 2/3"):
        merged_outcomes(judged, shards, name)


def test_a_sharded_sweep_publishes_the_unsharded_bytes_and_comparison(state: Path, tmp_path: Path) -> None:
    """Through the executor: jobs.shard processes, one per worker, and a jobs.merge; every arm's deterministic
    files and the comparison are the unsharded sweep's bytes at 2 and 3 workers."""
    arms = list(CATALOGUE.family("fusion").arms)
    trees: dict[str, dict[str, bytes]] = {}
    for run, workers, sharded in (("whole", 2, False), ("two", 2, True), ("three", 3, True)):
        store_root = tmp_path / run
        report = LocalExecutor(state=state, store_spec=str(store_root), workers=workers, quiet=True,
                               shard_queries=sharded).run(arms, "fusion")
        assert [o.status for o in report.outcomes] == ["published"] * len(arms), report.outcomes
        collect_sweep(open_store(str(store_root)), "fusion", "fusion", None)
        sweep = store_root / "sweeps" / "fusion"
        tree = {f"{arm.name}/{name}": (sweep / "fusion" / arm.name / name).read_bytes()
                for arm in arms for name in DETERMINISTIC}
        tree.update({name: (sweep / name).read_bytes() for name in ("comparison.json", "comparison.md")})
        trees[run] = tree
        legs = [json.loads((sweep / "fusion" / a.name / "runinfo.json").read_text()).get("legs", {}) for a in arms]
        assert {leg.get("shards") for leg in legs} == ({workers} if sharded else {None})
    assert len(trees["whole"]) == len(arms) * len(DETERMINISTIC) + 2
    for run in ("two", "three"):
        differ = sorted(name for name in trees["whole"] if trees[run][name] != trees["whole"][name])
        assert differ == [], f"{run}: {differ}"


def test_a_failing_shard_process_fails_the_groups_arms_and_publishes_none(state: Path, tmp_path: Path) -> None:
    """A shard that cannot publish its outcomes (a file where the store's shards folder goes) exits with the
    store's error; the merge does not run, every arm of the group is failed in one line naming the shard."""
    arms = list(CATALOGUE.family("fusion").arms)
    store_root = tmp_path / "store"
    (store_root / "sweeps" / "fusion").mkdir(parents=True)
    (store_root / "sweeps" / "fusion" / "shards").write_text("not a folder\n")
    report = LocalExecutor(state=state, store_spec=str(store_root), workers=2, quiet=True,
                           shard_queries=True).run(arms, "fusion")
    assert [o.status for o in report.outcomes] == ["failed"] * len(arms)
    for outcome in report.outcomes:
        assert outcome.message.startswith("not run: its group's shard process failed: "), outcome.message
        assert " shard 1/2: exit " in outcome.message and "cannot write" in outcome.message, outcome.message
        assert "\n" not in outcome.message
        folder = store_root / "sweeps" / "fusion" / "fusion" / outcome.arm.name
        assert sorted(p.name for p in folder.iterdir()) == ["failed.json"]


def test_a_merge_whose_shard_lost_a_query_fails_the_arm_in_one_line(state: Path, tmp_path: Path) -> None:
    """jobs.merge over shard outcomes one of which lacks a query: the arm is published as failed (exit 5),
    naming the query and the shard; nothing else of it is published."""
    from harness.sweep.shards import shard_key
    from harness.sweep.task import build_task
    from jobs import merge as merge_job

    family = CATALOGUE.family("fusion")
    arm = family.arm("norm-minmax-harm")
    store_root = tmp_path / "store"
    report = LocalExecutor(state=state, store_spec=str(store_root), workers=2, quiet=True,
                           shard_queries=True).run([family.arms[0], arm], "s")  # a group of two: sharded
    assert [o.status for o in report.outcomes] == ["published"] * 2, report.outcomes
    store = open_store(str(store_root))
    for name in ("complete.json", "metrics.json"):  # the arm as if its merge had not run yet
        (store_root / "sweeps" / "s" / arm.family / arm.name / name).unlink()
    key = shard_key("s", arm, (1, 2))
    doc = json.loads(store.get_text(key))
    lost = sorted(doc["outcomes"])[0]
    del doc["outcomes"][lost]
    store.put_text(key, json.dumps(doc))
    task = build_task("merge", [arm], state=state.resolve(), store=str(store_root.resolve()), sweep_id="s", shards=2)
    (tmp_path / "task.json").write_text(task.to_json())
    assert merge_job.main(["--task", str(tmp_path / "task.json")]) == 5
    failure = json.loads((store_root / "sweeps" / "s" / arm.family / arm.name / "failed.json").read_text())
    assert f"query {lost} " in failure["error"] and "shard 2/2" in failure["error"], failure
    assert not (store_root / "sweeps" / "s" / arm.family / arm.name / "complete.json").exists()


def test_a_shard_task_round_trips_its_shard_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    from harness.sweep.task import Task, build_task

    arms = CATALOGUE.family("fusion").arms[:2]
    task = build_task("shard", arms, state=tmp_path, store=str(tmp_path), sweep_id="s", shard=(1, 3))
    assert '"shard":"2/3"' in task.to_json() and Task.from_json(task.to_json()) == task
    merge = build_task("merge", arms, state=tmp_path, store=str(tmp_path), sweep_id="s", shards=3)
    assert Task.from_json(merge.to_json()).shards == 3
    doc = json.loads(task.to_json())
    for change, message in (({"shard": "4/3"}, "shard: '4/3': expected K/P"),
                            ({"job": "arm"}, "a shard task, and only a shard task, names its shard"),
                            ({"job": "merge", "shard": None}, "a merge task needs its group's count of shards"),
                            ({"shards": 2}, "only a merge task names one")):
        bad = {k: v for k, v in {**doc, **change}.items() if v is not None}
        with pytest.raises(InputDataError, match=message) as caught:
            Task.from_json(json.dumps(bad), "t.json")
        assert caught.value.exit_code == 4 and "\n" not in str(caught.value)
