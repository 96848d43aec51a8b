"""Job entrypoints: what a Kubernetes Job runs, and what the local executor runs as subprocesses.

Each reads its input (``arm``, ``legs``, ``scores``, ``shard``, ``merge``: one task, harness.sweep.task,
from ``--task FILE`` or the RAGSWEEP_TASK variable a Job spec sets; the others: flags, or their RAGSWEEP_*
twins read through the one settings model, harness.settings), configures logging once as the CLI does
(harness.cli.logging_to_stderr, under its own name), calls the harness, and exits with a documented
code (harness.errors): ``arm`` (one arm, or a group's), ``legs`` (a group's shared legs), ``scores`` (a
group's cross-encoder scores, one part of its queries), ``shard`` (every arm of a group over one shard
of its queries), ``merge`` (a sharded group's arms, written from its shards), ``collect`` (the
comparison), ``sync`` (a folder in or out of the object store, the init containers' step),
``baselines`` (re-derive the committed baselines). Each one's ``main`` is :func:`entrypoint` around
its own body.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from harness.cli import logging_to_stderr
from harness.errors import HarnessError, UsageError, one_line


def entrypoint(prog: str, body: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """Run a job's ``body`` with logging configured once, as the CLI does (a library warning reads
    ``PROG: warning: ...``); a HarnessError is one ``PROG: error: ...`` line (secrets masked) and its exit code."""
    with logging_to_stderr(prog=prog):
        try:
            return body(argv)
        except HarnessError as e:
            print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
            return e.exit_code


def task_main(job: str, argv: Sequence[str] | None) -> int:
    """The main of ``python -m jobs.<job>``: read its one task (``--task FILE``, else RAGSWEEP_TASK), which must
    be a ``job`` task, and run it (harness.sweep.runtask), the stack's addresses read from the settings."""
    return entrypoint(f"jobs.{job}", lambda args: _run_task(job, args), argv)


def _run_task(job: str, argv: Sequence[str] | None) -> int:
    import argparse
    from pathlib import Path

    from harness.settings import settings
    from harness.sweep.dispatch import run_task
    from harness.sweep.runtask import Services
    from harness.sweep.task import Task

    p = argparse.ArgumentParser(prog=f"python -m jobs.{job}",
                                description=f"Run one {job} task (harness.sweep.task, harness.sweep.runtask).")
    p.add_argument("--task", type=Path, metavar="FILE",
                   help="the task, a JSON file (default: the RAGSWEEP_TASK variable, the task itself)")
    args = p.parse_args(argv)
    env = settings()
    if args.task is not None:
        task = Task.read(args.task)
    elif env.task:
        task = Task.from_json(env.task, "RAGSWEEP_TASK")
    else:
        p.error("missing --task FILE (or the RAGSWEEP_TASK variable)")
    if task.job != job:
        raise UsageError(f"{args.task or 'RAGSWEEP_TASK'}: a {task.job} task is run by python -m jobs.{task.job}, "
                         f"not jobs.{job}")
    from harness.retrieval.scorecache import cache_root

    team = (env.team_cache, env.team_cache_endpoint or env.s3_endpoint or None)
    return run_task(task, Services(opensearch_url=env.opensearch_url, pg_dsn=env.pg_dsn or "", team_cache=team,
                                   embedding_cache=cache_root(env.embedding_cache)))
