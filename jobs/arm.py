"""Run one arm, or a group of arms that share legs: bench invocations from arm specs, each
published to the artefact store.

    python -m jobs.arm --state STATE --store DIR|s3://BUCKET/PREFIX --sweep-id ID --arm-json '{...}'
    python -m jobs.arm ... --arm-json '[{...}, {...}]'          # a group: one process, legs fetched once
    python -m jobs.arm ... --arm-json '{...}' --legs KEY         # legs another Job published (jobs.legs)
    python -m jobs.arm ... --arm-json '[...]' --legs KEY         # part of a group, over its published legs
    python -m jobs.arm ... --arm-json '[...]' --legs KEY --part 2/2  # ... the second of two: queries from the middle on
    python -m jobs.arm ... --arm-json '[...]' --processes 2      # a group's arms spread over 2 processes
    python -m jobs.arm ... --legs KEY --part 1/2 --prescore '[...]'  # the group's pairs scored first, this part's
    python -m jobs.arm ... --legs KEY --scores KEY1,KEY2         # the group's pairs, published by its scores Jobs

Every flag but the local executor's --rerank-threads, --part and --prescore has an environment twin
(RAGSWEEP_STATE, RAGSWEEP_STORE, RAGSWEEP_SWEEP_ID, RAGSWEEP_ARM, RAGSWEEP_RERANKER,
RAGSWEEP_S3_ENDPOINT, RAGSWEEP_WORKERS, RAGSWEEP_BACKEND, RAGSWEEP_LEGS, RAGSWEEP_EMBEDDING_BACKEND,
RAGSWEEP_PROCESSES, RAGSWEEP_RERANK_CACHE, RAGSWEEP_RERANK_DEVICE, RAGSWEEP_RERANK_BACKEND,
RAGSWEEP_SCORES), which
is how a Job spec passes them. An arm whose complete artefact set for the same config hash is
already in the store is skipped. A failure is
published as failed.json (so the collector names it); the other arms of a group still run, and
the process exits with the first failure's code (0 when every arm was published or skipped).

``--processes N``: once the group's context is open, its legs are fetched (and its answers block
built) in this process, which then forks N-1 children, and the N processes run every N-th arm
each from the inherited cache; no process fetches a leg again, so each arm writes the bytes it
writes alone. Only for stages that fetch nothing after the legs and never call the cross-encoder
(retrieve, diversify): torch is not used after a fork. A group with other arms is spread by the
local executor over processes that each read the legs one jobs.legs process published (``--legs``
with a list of arms), as the Kubernetes executor spreads it over Jobs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.commands.settings import settings
from harness.errors import EXIT_INTERNAL, HarnessError, one_line
from jobs import entrypoint
from jobs.entry import bench_config, group_flags, open_group, parse_arms, part, require, reranker_flags


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    env = settings()
    p = argparse.ArgumentParser(prog="python -m jobs.arm", description=__doc__.split("\n\n")[0])
    group_flags(p, env, "the arm spec {name, family, axis, config}, or a list of them that share legs",
                "store key of the group's published legs.json: legs are read from it, never fetched")
    reranker_flags(p, env)
    p.add_argument("--part", type=part, default=(0, 1), metavar="K/P",
                   help="this process is the K-th of P running a group's arms at once: its arms answer their "
                        "queries from the (K-1)/P-th on, so processes scoring the same pairs do not score "
                        "them at once (default 1/1; the local executor passes it)")
    p.add_argument("--prescore", type=_arm_list, default=[], metavar="JSON",
                   help="a list of arm specs, the group's rerank arms (this process's and the others'): before its "
                        "own arms run, the process scores every pair they ask the cross-encoder for into the score "
                        "cache, its part of the queries (--part) first, then the others' from the far end, a pair "
                        "found there read, not scored (the local executor passes it when the cache is shared)")
    p.add_argument("--scores", default=env.scores, metavar="KEY[,KEY...]",
                   help="store keys of the group's cross-encoder scores published by its scores Jobs (jobs.scores): "
                        "read into the score cache before the arms run, the first pair read scored again to check")
    p.add_argument("--rerank-cache", default=env.rerank_cache, metavar="DIR|none",
                   help="the cross-encoder score cache, shared by every process and sweep on the machine "
                        "(default var/cache/rerank; none: scores kept in this process only)")
    p.add_argument("--processes", type=int, default=env.processes,
                   help="processes a group's arms are spread over once its legs are fetched (default 1)")
    args = p.parse_args(argv)
    if args.processes < 1:
        p.error("--processes must be at least 1")
    require(p, args, ("state", "store", "sweep_id", "arm_json"))
    return args


def _arm_list(text: str) -> list[Any]:
    """``--prescore``: arm specs, as ``--arm-json`` takes them."""
    from pydantic import ValidationError

    try:
        return parse_arms(text)
    except ValidationError as e:  # the first field it names
        error = e.errors()[0]
        raise argparse.ArgumentTypeError(f"not arm specs: {'.'.join(map(str, error['loc']))}: {error['msg']}") from e
    except ValueError as e:  # json's
        raise argparse.ArgumentTypeError(f"not arm specs: {e}") from e


def run(args: argparse.Namespace) -> int:
    from harness.sweep.catalogue import config_hash
    from harness.sweep.executor import measurement_identity, open_store
    from harness.sweep.storage import is_complete

    arms = parse_arms(args.arm_json)
    store = open_store(args.store, args.s3_endpoint)
    pending: list[tuple[Any, str, Any]] = []
    failures: list[int] = []

    for arm in arms:
        digest = config_hash(arm, measurement_identity(args.state, arm, args.reranker, args.backend, _scorer(args)))
        if is_complete(store, args.sweep_id, arm, digest):
            print(f"{arm.name}: complete for config {digest[:12]}, skipped")
            continue
        try:
            config = bench_config(args, arm)
        except BaseException as e:
            failures.append(_failed(store, args.sweep_id, arm, digest, e))
            continue
        pending.append((arm, digest, config))
    if not pending:
        return failures[0] if failures else 0
    try:
        group = open_group(args, store, [config for _, _, config in pending], args.rerank_cache)
        group.part = args.part
        if args.scores and any(config.bench_stage.needs_reranker for _, _, config in pending):
            _read_scores(group, store, args)
        if args.prescore:
            _prescore(group, [bench_config(args, arm) for arm in args.prescore])
    except BaseException as e:
        failures += [_failed(store, args.sweep_id, arm, digest, e) for arm, digest, _ in pending]
        return failures[0]
    processes = min(args.processes, len(pending))
    if processes > 1 and all(config.bench_stage.fork_safe for _, _, config in pending):
        try:
            group.prefetch(pending[0][2])
        except BaseException as e:
            failures += [_failed(store, args.sweep_id, arm, digest, e) for arm, digest, _ in pending]
            return failures[0]
        failures += _run_forked(args, store, group, pending, processes)
    else:
        failures += _run_share(args, store, group, list(enumerate(pending)))
    return failures[0] if failures else 0


def _prescore(group: Any, configs: list[Any]) -> None:
    """Score the group's pairs for this process's part first (GroupRun.prescore), saying how far it got."""
    import time

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


def _read_scores(group: Any, store: Any, args: argparse.Namespace) -> None:
    """Read every part of the group's published scores (``--scores``) into the score cache. A part made
    by another scorer (another GPU's kernels, other library versions) is not read: its pairs are scored
    here, and the process says so, on stderr and in each arm's runinfo."""
    from harness.sweep.scores import read_scores

    scorer = group.context.reranker(args.reranker)
    ours = scorer.key()
    done: dict[str, Any] = {"parts": [], "pairs": 0, "other_scorer": []}
    for key in [k for k in args.scores.split(",") if k]:
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


def _run_share(args: argparse.Namespace, store: Any, group: Any, share: list[tuple[int, Any]]) -> list[int]:
    """Run and publish the arms of ``share`` ((position in the group, (arm, digest, config)) pairs);
    the exit codes of those that failed (each published as failed.json)."""
    failures: list[int] = []
    for position, (arm, digest, config) in share:
        try:
            _run_one(args, store, group, arm, digest, config, position)
        except BaseException as e:
            failures.append(_failed(store, args.sweep_id, arm, digest, e))
    return failures


def _run_forked(args: argparse.Namespace, store: Any, group: Any, pending: list[tuple[Any, str, Any]],
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
                failed = _run_share(args, open_store(args.store, args.s3_endpoint), group, share)
                code = failed[0] if failed else 0
            except BaseException as e:  # the store would not open: the parent reports the arms unpublished
                traceback.print_exception(e)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)
    failures = _run_share(args, store, group, shares[0])
    for pid in children:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:  # the child published its arms' failures itself; a signal left them unpublished
            failures.append(code if code > 0 else EXIT_INTERNAL)
    return failures


def _run_one(args: argparse.Namespace, store: Any, group: Any, arm: Any, digest: str, config: Any,
             position: int | None = None) -> None:
    from harness.sweep.executor import measurement_identity
    from harness.sweep.storage import ARM_EXTRA_FILES, ARM_FILES, publish_arm

    with tempfile.TemporaryDirectory(prefix=f"arm-{arm.name}-") as tmp:
        group.run(config, Path(tmp), position=position)
        files = {name: (Path(tmp) / name).read_text(encoding="utf-8") for name in (*ARM_FILES, *ARM_EXTRA_FILES)}
    identity = measurement_identity(args.state, arm, args.reranker, args.backend, _scorer(args))
    publish_arm(store, args.sweep_id, arm, digest, files, state_identity=identity)
    print(f"{arm.name}: published ({digest[:12]})")


def _scorer(args: argparse.Namespace) -> tuple[str, str]:
    from harness.retrieval.rerank import check_scorer

    return check_scorer(args.rerank_backend, args.rerank_device)


def _failed(store: Any, sweep_id: str, arm: Any, digest: str, e: BaseException) -> int:
    """Publish the arm's failure (failed.json) and say it; the exit code it stands for."""
    from harness.sweep.storage import publish_failure

    # one line, secrets masked, as the CLI prints it: a failure marker is read back into comparison.md
    message = one_line(str(e) if isinstance(e, HarnessError) else f"{type(e).__name__}: {e}")
    publish_failure(store, sweep_id, arm, digest, message)
    if not isinstance(e, HarnessError):
        traceback.print_exception(e)
    print(f"{arm.name}: failed: {message}", file=sys.stderr)
    return e.exit_code if isinstance(e, HarnessError) else EXIT_INTERNAL


def main(argv: Sequence[str] | None = None) -> int:
    return entrypoint("jobs.arm", _main, argv)


def _main(argv: Sequence[str] | None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main())
