"""Run one :class:`~harness.sweep.task.Task`: what a sweep process (a local child, a Job's container) does.

``arm``: the task's arms, each published to the artefact store. An arm whose complete artefact set for
the same config hash is already in the store is skipped. The rest open one group (harness.bench.group)
over the legs at ``task.legs`` when there are, read the group's published cross-encoder scores
(``task.scores``) and score its rerank arms' pairs first (``task.prescore``) into the shared score
cache, then run. A failure is published as failed.json (so the collector names it); the other arms
still run, and the process exits with the first failure's code (0 when every arm was published or
skipped). ``task.processes`` N > 1: once the group's legs are fetched (and its answers block built) in
this process, it forks N-1 children, and the N processes run every N-th arm each from the inherited
cache, so each arm writes the bytes it writes alone. Only for stages that fetch nothing after the legs
and never call the cross-encoder (retrieve, diversify): torch is not used after a fork.

``legs``: fetch the group's shared legs once, at the deepest of its arms' fusion windows, with the
query vectors, and publish them at ``task.legs`` (harness.sweep.legs).

``scores``: score every pair the task's rerank arms ask the cross-encoder for, over the ``task.part`` of
the judged queries, and publish them at the task's one scores key (harness.sweep.scores).
"""

from __future__ import annotations

import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import EXIT_INTERNAL, HarnessError, IntegrityError, UsageError, one_line
from harness.sweep.catalogue import Arm
from harness.sweep.task import Task


@dataclass(frozen=True)
class Services:
    """The stack's addresses a process reaches (secrets among them: never in a task; the entrypoint reads them)."""

    opensearch_url: str = ""
    pg_dsn: str = ""
    # the team's embedding cache (harness.index.teamcache: spec, endpoint) and the machine's cache it sits
    # under: when both are set, the queries' vectors are the team's too, so two machines' arms score the same
    # bits (docs/embedding-cache.md, "The team's cache")
    team_cache: tuple[str | None, str | None] = (None, None)
    embedding_cache: Path | None = None


def query_encoder(embedder: Any, services: Services) -> Any:
    """``embedder`` behind the team's cache when the process has one (harness.index.teamcache.team_encoder)."""
    from harness.index.teamcache import team_encoder

    return team_encoder(embedder, services.embedding_cache, services.team_cache)


def bench_config(task: Task, arm: Arm) -> Any:
    """The arm's config as bench's own configuration model: handed over as is, never turned back into argv."""
    from harness.bench.config import BenchConfig

    return BenchConfig(arm=arm.arm_config, control_name=arm.name, workers=task.workers, backend=task.backend,
                       reranker=task.reranker, rerank_device=task.rerank_device, rerank_backend=task.rerank_backend,
                       onnx_dir=task.onnx_cache, rerank_threads=task.rerank_threads)


def open_group(task: Task, store: Any, configs: list[Any], services: Services, *, cache: bool = True,
               encode: bool = True) -> Any:
    """The group of the arms still to run (``configs``, their run-level settings the same), opened once, over
    the legs published at ``task.legs`` when there are (checked to be this state's and encoder's); ``cache``:
    whether the score cache is the task's (else the scores are kept in this process's memory). A shard
    task's group encodes its shard's queries only; ``encode=False`` (a merge) encodes none."""
    from harness.bench.config import legs_key, shared_legs_key
    from harness.bench.group import GroupRun
    from harness.bench.shard import shard_vectors
    from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder, model_identity
    from harness.retrieval.legs import TableEncoder
    from harness.state import State
    from harness.sweep.executor import legs_identity
    from harness.sweep.legs import read_legs

    published = read_legs(store, task.legs) if task.legs else None
    state = State.open(task.state)
    embedder: Any
    if published is not None and published.vectors is not None and task.embedding_backend == "torch":
        # the table carries the query vectors: the model's identity (its weights' digest) is all this
        # process needs of it, to check the table and the index were made with it; nothing is loaded
        embedder = TableEncoder(identity=model_identity(DEFAULT_EMBEDDING_MODEL)[0], table=published)
    else:
        embedder = query_encoder(SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL, backend=task.embedding_backend,
                                                             onnx_dir=task.onnx_cache), services)
    if published is not None:
        ours = {"state": legs_identity(task.state, task.backend), "embedder": embedder.identity}
        theirs = {name: published.group.get(name) for name in ours}
        if theirs != ours:
            raise IntegrityError(f"the shared legs at {task.legs} were fetched for {theirs}, not this arm's {ours}; "
                                 "rerun the sweep so its legs Job fetches them again")
    # the group fetches the legs of the deepest fusion window among the arms still to run (they all cut them)
    key = shared_legs_key([legs_key(c.arm) for c in configs], task.backend)
    return GroupRun.open(state, configs[0], embedder, opensearch_url=services.opensearch_url,
                         pg_dsn=services.pg_dsn, published=published,
                         score_cache=task.rerank_cache if cache else None, key=key,
                         vectors=(lambda judged: None) if not encode else
                         shard_vectors(embedder, task.shard) if task.shard else None)


# --- arm ---------------------------------------------------------------------------------------------

def run_arms(task: Task, services: Services) -> int:
    """Run and publish the task's arms (see the module's docstring); the exit code."""
    from harness.sweep.catalogue import config_hash
    from harness.sweep.executor import measurement_identity, open_store
    from harness.sweep.storage import is_complete

    store = open_store(task.store, task.s3_endpoint)
    pending: list[tuple[Arm, str, Any]] = []
    failures: list[int] = []
    for arm in task.arms:
        digest = config_hash(arm, _identity(task, arm, measurement_identity))
        if is_complete(store, task.sweep_id, arm, digest):
            print(f"{arm.name}: complete for config {digest[:12]}, skipped")
            continue
        try:
            config = bench_config(task, arm)
        except BaseException as e:
            failures.append(failed(store, task.sweep_id, arm, digest, e))
            continue
        pending.append((arm, digest, config))
    if not pending:
        return failures[0] if failures else 0
    try:
        group = open_group(task, store, [config for _, _, config in pending], services)
        group.part = task.part
        if task.scores and any(config.bench_stage.needs_reranker for _, _, config in pending):
            _read_scores(group, store, task)
        if task.prescore:
            _prescore(group, [bench_config(task, arm) for arm in task.prescore])
    except BaseException as e:
        failures += [failed(store, task.sweep_id, arm, digest, e) for arm, digest, _ in pending]
        return failures[0]
    processes = min(task.processes, len(pending))
    if processes > 1 and all(config.bench_stage.fork_safe for _, _, config in pending):
        try:
            group.prefetch(pending[0][2])
        except BaseException as e:
            failures += [failed(store, task.sweep_id, arm, digest, e) for arm, digest, _ in pending]
            return failures[0]
        failures += _run_forked(task, store, group, pending, processes)
    else:
        failures += _run_share(task, store, group, list(enumerate(pending)))
    return failures[0] if failures else 0


def _identity(task: Task, arm: Arm, measurement_identity: Any) -> str:
    from harness.retrieval.rerank import check_scorer

    scorer = check_scorer(task.rerank_backend, task.rerank_device)
    return str(measurement_identity(task.state, arm, task.reranker, task.backend, scorer))


def _prescore(group: Any, configs: list[Any]) -> None:
    """Score the group's pairs for this process's part first (GroupRun.prescore), saying how far it got."""
    t0 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"prescore: {done}/{total} queries in {time.perf_counter() - t0:.1f}s", flush=True)

    done = group.prescore(configs, progress)
    if done.get("skipped"):
        print(f"prescore: {len(done['arms'])} rerank arms, not prescored: {done['skipped']} "
              f"({done['seconds']}s)", flush=True)
    elif done:
        print(f"prescore: {len(done['arms'])} rerank arms, {done['pairs']} pairs asked over {done['queries']} "
              f"queries: {done['scored']} scored, {done['from_cache']} read from the cache in {done['seconds']}s",
              flush=True)


def _read_scores(group: Any, store: Any, task: Task) -> None:
    """Read every part of the group's published scores (``task.scores``) into the score cache. A part made
    by another scorer (another GPU's kernels, other library versions) is not read: its pairs are scored
    here, and the process says so, on stderr and in each arm's runinfo."""
    from harness.sweep.scores import read_scores

    scorer = group.context.reranker(task.reranker)
    ours = scorer.key()
    done: dict[str, Any] = {"parts": [], "pairs": 0, "other_scorer": []}
    for key in task.scores:
        doc, scores = read_scores(store, key)
        if doc.scorer != ours:
            differ = sorted(n for n in {*doc.scorer, *ours} if doc.scorer.get(n) != ours.get(n))
            print(f"note: the scores at {key} were made by another scorer ({', '.join(differ)} differ): its "
                  f"{doc.pairs} pairs are scored here", file=sys.stderr, flush=True)
            done["other_scorer"].append(key)
            continue
        scorer.seed(scores, key)
        done["parts"].append(key)
        done["pairs"] += len(scores)
    print(f"published scores: {done['pairs']} pairs from {len(done['parts'])} parts read into the score cache",
          flush=True)
    group.published_scores = done


def _run_share(task: Task, store: Any, group: Any, share: list[tuple[int, Any]]) -> list[int]:
    """Run and publish the arms of ``share`` ((position in the group, (arm, digest, config)) pairs);
    the exit codes of those that failed (each published as failed.json)."""
    failures: list[int] = []
    for position, (arm, digest, config) in share:
        try:
            _run_one(task, store, group, arm, digest, config, position)
        except BaseException as e:
            failures.append(failed(store, task.sweep_id, arm, digest, e))
    return failures


def _run_forked(task: Task, store: Any, group: Any, pending: list[tuple[Arm, str, Any]],
                processes: int) -> list[int]:
    """Over a group whose legs are prefetched: fork ``processes - 1`` children, run every ``processes``-th
    arm in each (this process too), and wait for them: the failures' exit codes, a child that died
    counting as one."""
    import os

    from harness.sweep.executor import open_store
    from harness.sweep.procs import die_with_parent

    positioned = list(enumerate(pending))
    shares = [positioned[k::processes] for k in range(processes)]
    children: list[int] = []
    parent = os.getpid()
    for process, share in enumerate(shares[1:], start=1):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: its own store client (a client's connections are not shared over a fork)
            code = EXIT_INTERNAL
            group.process = process
            try:
                die_with_parent(parent)  # a sweep that stops (or is killed) stops this process too
                failures = _run_share(task, open_store(task.store, task.s3_endpoint), group, share)
                code = failures[0] if failures else 0
            except BaseException as e:  # the store would not open: the parent reports the arms unpublished
                traceback.print_exception(e)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    failures = _run_share(task, store, group, shares[0])
    for pid in children:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:  # the child published its arms' failures itself; a signal left them unpublished
            failures.append(code if code > 0 else EXIT_INTERNAL)
    return failures


def _run_one(task: Task, store: Any, group: Any, arm: Arm, digest: str, config: Any,
             position: int | None = None, write: Any = None) -> None:
    """Run the arm (or ``write(folder)`` its files: a merge) and publish its files, complete.json last."""
    from harness.state import verified_measurement
    from harness.sweep.executor import measurement_identity
    from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES, publish_arm

    with tempfile.TemporaryDirectory(prefix=f"arm-{arm.name}-") as tmp:
        if write is not None:
            write(Path(tmp))
        else:
            group.run(config, Path(tmp), position=position)
        files = {name: (Path(tmp) / name).read_text(encoding="utf-8") for name in (*ARM_FILES, *ARM_EXTRA_FILES)}
    publish_arm(store, task.sweep_id, arm, digest, files,
                state_identity=_identity(task, arm, measurement_identity),
                state_measured=verified_measurement(task.state))
    print(f"{arm.name}: published ({digest[:12]})")


def failed(store: Any, sweep_id: str, arm: Arm, digest: str, e: BaseException) -> int:
    """Publish the arm's failure (failed.json) and say it; the exit code it stands for."""
    from harness.sweep.storage import publish_failure

    # one line, secrets masked, as the CLI prints it: a failure marker is read back into comparison.md
    message = one_line(str(e) if isinstance(e, HarnessError) else f"{type(e).__name__}: {e}")
    publish_failure(store, sweep_id, arm, digest, message)
    if not isinstance(e, HarnessError):
        traceback.print_exception(e)
    print(f"{arm.name}: failed: {message}", file=sys.stderr)
    return e.exit_code if isinstance(e, HarnessError) else EXIT_INTERNAL


# --- legs and scores ---------------------------------------------------------------------------------

def run_legs(task: Task, services: Services) -> int:
    """Fetch the group's legs once and publish them at ``task.legs``; exits with the error's code when they
    cannot be fetched (the launcher then fails the group's arms, naming why)."""
    from harness.bench.config import BenchConfig, legs_key
    from harness.bench.group import GroupRun, fetch_legs
    from harness.bench.stages import STAGES
    from harness.index.embed import DEFAULT_EMBEDDING_MODEL, SentenceTransformerEmbedder
    from harness.state import State
    from harness.sweep.executor import legs_identity, open_store
    from harness.sweep.legs import arm_legs_key, group_legs_key, publish_legs

    arms, legs = task.arms, str(task.legs)
    if task.backend != "embedded":
        raise UsageError(f"jobs.legs: legs are shared on the embedded backend only, not {task.backend}")
    try:
        key = group_legs_key(list(arms), task.backend)
    except UsageError as e:
        raise UsageError(f"jobs.legs: the arms {', '.join(a.name for a in arms)} share no legs ({e})") from e
    # The legs depend on the key alone, not on an arm's fusion or reranker: fetch them as the default
    # fusion at the group's depth, the deepest of its arms' windows, which every arm cuts at its own
    # (a pooled stage without the cross-encoder where the arms are pooled).
    first = arms[0].arm_config
    neutral = first.model_copy(update={
        "fusion": None, "rank_constant": None, "normalization_technique": None, "combination_technique": None,
        "combination_weights": None, "stage": "diversify" if STAGES[first.stage].pooled else "retrieve"})
    config = BenchConfig(arm=neutral, control_name=f"legs-{arms[0].name}", backend=task.backend)
    assert legs_key(neutral) == arm_legs_key(arms[0])
    state = State.open(task.state)
    embedder = query_encoder(SentenceTransformerEmbedder(DEFAULT_EMBEDDING_MODEL, backend=task.embedding_backend,
                                                         onnx_dir=task.onnx_cache), services)
    group = GroupRun.open(state, config, embedder, key=key)
    identity = legs_identity(task.state, task.backend)
    table = fetch_legs(group.context, config, {"state": identity, "embedder": embedder.identity,
                                               "arms": [a.name for a in arms]}, key=key)
    # the query vectors too: an arm Job reading this table loads no model and encodes nothing
    table = table.with_vectors([q.text for q in group.context.judged], group.context.vectors)
    publish_legs(open_store(task.store, task.s3_endpoint), legs, table)
    print(f"legs of {', '.join(a.name for a in arms)}: {len(table.rows)} queries published to {legs}")
    return 0


def run_scores(task: Task, services: Services) -> int:
    """Score the task's part of its rerank arms' pairs, over the legs at ``task.legs``, and publish them at its
    one scores key, naming the scorer's key (every arm that reads them checks it)."""
    from harness.sweep.executor import open_store
    from harness.sweep.scores import publish_scores

    others = [a.name for a in task.arms if not a.needs_reranker]
    if others:
        raise UsageError(f"jobs.scores: {', '.join(others)} call no cross-encoder; pass the group's rerank arms")
    store = open_store(task.store, task.s3_endpoint)
    configs = [bench_config(task, arm) for arm in task.arms]
    # the scores are kept in this process's memory: its pod's scratch volume is gone when it ends
    group = open_group(task, store, configs, services, cache=False)
    group.part = task.part
    t0 = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            print(f"scores: {done}/{total} queries in {time.perf_counter() - t0:.1f}s", flush=True)

    done = group.prescore(configs, progress, own_part=True)
    scorer = group.context.reranker(task.reranker)
    (key,) = task.scores
    k, parts = task.part
    n = len(group.context.judged)
    doc = publish_scores(store, key, scorer=scorer.key(), legs=str(task.legs), arms=[a.name for a in task.arms],
                         part=task.part, queries=(k * n // parts, (k + 1) * n // parts), scores=scorer.pairs())
    print(f"scores of {', '.join(a.name for a in task.arms)}, part {doc.part} (queries {doc.queries[0]}-"
          f"{doc.queries[1] - 1} of {n}): {doc.pairs} pairs ({done['scored']} scored) in {done['seconds']}s, "
          f"published to {key}", flush=True)
    return 0
