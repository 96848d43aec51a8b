"""A legs group's judged queries split into shards, one process each, and one merge (issue 37).

With ``LocalExecutor(shard_queries=True)`` (``ragsweep sweep run --shard-queries``) a group whose arms all
run without the cross-encoder (retrieve, diversify: the fusion family) and that has W >= 2 workers to
itself runs as W ``jobs.shard`` processes and one ``jobs.merge`` process. Shard k (from 0) of W takes
judged query i (the judged queries sorted by id) when i mod W == k, encodes those queries, fetches the
group's legs for them once and answers them for every arm of the group, then publishes each arm's
per-query outcomes at :func:`shard_key` (harness.bench.shard). Once every shard has succeeded, the
merge reads the W files of each arm, puts each judged query's outcome back in judged order and writes
the arm's files from them as the unsharded run does (means, answers and the run's order recomputed
from the per-query values), then publishes the arm: the deterministic files are byte-identical to the
unsharded run at any shard count. A shard that fails fails the group's arms (failed.json, one line
naming the shard's log); the merge publishes an arm whole (complete.json last) or not at all.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.sweep.catalogue import Arm, config_hash
from harness.sweep.runtask import Services, _identity, _run_one, bench_config, failed, open_group
from harness.sweep.storage import is_complete, sweep_prefix
from harness.sweep.task import Task


def shard_key(sweep_id: str, arm: Arm, shard: tuple[int, int]) -> str:
    """Where shard (k, W) publishes ``arm``'s per-query outcomes."""
    return f"{sweep_prefix(sweep_id)}/shards/{arm.family}/{arm.name}/{shard[0] + 1}-of-{shard[1]}.json"


def run_shard(task: Task, services: Services) -> int:
    """Answer the task's arms over its shard of the judged queries, the group's legs fetched once for them,
    and publish each arm's per-query outcomes (harness.bench.shard) for the group's merge."""
    from harness.bench.shard import answer_shard, outcomes_json
    from harness.sweep.executor import measurement_identity, open_store

    assert task.shard is not None  # a shard task names its shard (Task)
    store = open_store(task.store, task.s3_endpoint)
    configs = [bench_config(task, arm) for arm in task.arms]
    t0 = time.perf_counter()
    answered = answer_shard(open_group(task, store, configs, services), configs, task.shard)
    for arm, config in zip(task.arms, configs, strict=True):
        digest = config_hash(arm, _identity(task, arm, measurement_identity))
        outcomes = answered[config.control_name]
        key, doc = shard_key(task.sweep_id, arm, task.shard), outcomes_json(arm.name, digest, task.shard, outcomes)
        store.put_text(key, doc)
    n = len(next(iter(answered.values()), {}))
    print(f"shard {task.shard[0] + 1}/{task.shard[1]}: {n} queries answered for {len(task.arms)} arms in "
          f"{time.perf_counter() - t0:.1f}s", flush=True)
    return 0


def run_merge(task: Task, services: Services) -> int:
    """Write and publish each arm's files from its ``task.shards`` shards' outcomes (harness.sweep.shards):
    the bytes the unsharded run writes. An arm whose shards' outcomes are missing or not its own fails."""
    from harness.bench.run import write_arm
    from harness.bench.shard import merged_outcomes, read_outcomes
    from harness.sweep.executor import measurement_identity, open_store

    assert task.shards is not None  # a merge task names its count of shards (Task)
    count = task.shards
    store = open_store(task.store, task.s3_endpoint)
    pending = [(arm, config_hash(arm, _identity(task, arm, measurement_identity))) for arm in task.arms]
    pending = [(arm, digest) for arm, digest in pending if not is_complete(store, task.sweep_id, arm, digest)]
    if not pending:
        return 0
    try:
        configs = [bench_config(task, arm) for arm, _ in pending]
        group = open_group(task, store, configs, services, encode=False)
    except BaseException as e:
        return next(failed(store, task.sweep_id, arm, digest, e) for arm, digest in pending)
    failures: list[int] = []
    for (arm, digest), config in zip(pending, configs, strict=True):

        def write(out: Path, arm: Arm = arm, digest: str = digest, config: Any = config,
                  started: float = time.time()) -> None:
            shards = []
            for k in range(count):
                key = shard_key(task.sweep_id, arm, (k, count))
                shards.append(read_outcomes(store.get_text(key), f"{store.describe()}: {key}", arm.name, digest,
                                            (k, count)))
            outcomes = merged_outcomes(group.context.judged, shards, arm.name)
            write_arm(group.context, config, out, outcomes, started=started,
                      legs_info=lambda: {"group": dict(group.key), "shards": count})

        try:
            _run_one(task, store, group, arm, digest, config, write=write)
        except BaseException as e:
            failures.append(failed(store, task.sweep_id, arm, digest, e))
    return failures[0] if failures else 0
