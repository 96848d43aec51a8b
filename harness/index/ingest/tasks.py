"""The Celery app: ``index_file`` on the ``embedding`` queue, the reindex coordinator on ``cpu``.

Workers run from the project's venv, started by ``stack/celery.sh start`` (one worker per
queue, solo pool), with broker and result backend at RAGSWEEP_REDIS_URL. Celery Beat is
never started and no schedule is defined: a maintenance-dispatched reindex overlapping a
measurement changes what is measured (docs/ingest.md).

Tasks are thin: they decode the message, call the function of the same name in
:mod:`harness.index.ingest.coordinator` (the functions ``--dispatch eager`` calls in-process)
with a :class:`RedisLedger`, and return plain JSON. This module imports the coordinator,
never the reverse: ``--dispatch celery`` reaches it from the state build
(:mod:`harness.state.ingest`).

* ``ragsweep.reindex`` (cpu): lock, snapshot, then a chord of ``index_file`` (embedding)
  whose callback is ``finish_reindex`` (cpu). It returns at once with the run and the
  callback's task id; it never waits on its own subtasks.
* ``ragsweep.finish_reindex`` (cpu): the tally and the fail-closed orphan sweep.
* ``ragsweep.worker_identity`` (any queue): the splitter and code a worker loaded.

Messages are acknowledged on receipt (``task_acks_late`` off): a worker killed mid-file
loses that file's message rather than redelivering it into a later run, so its outcome is
never recorded and the sweep declines.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from celery import Celery, chord
from celery.exceptions import TimeoutError as CeleryTimeoutError
from celery.result import AsyncResult

from harness.errors import IntegrityError, UsageError
from harness.index.ingest import coordinator
from harness.index.ingest.ledger import STATE_TTL_S, RedisLedger
from harness.index.ingest.messages import (
    DEFAULT_QUEUES,
    PG_DSN_ENV,
    S3_ENDPOINT_ENV,
    Endpoints,
    IndexFileJob,
    ReindexReport,
    ReindexRequest,
    ReindexRun,
    file_jobs,
)
from harness.index.opensearch.client import URL_ENV as OPENSEARCH_URL_ENV

REDIS_URL_ENV: Final = "RAGSWEEP_REDIS_URL"
# The stack's default (stack/lib.sh): what a worker uses if started without the env file.
DEFAULT_REDIS_URL: Final = "redis://127.0.0.1:6380/0"
# How long the host waits for the coordinator's first answer, and for any new outcome.
START_TIMEOUT_S: Final = 120.0
STALL_TIMEOUT_S: Final = 600.0

_broker = os.environ.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL
app = Celery("ragsweep", broker=_broker, backend=_broker)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_default_queue=DEFAULT_QUEUES["cpu"],
    task_routes={
        "ragsweep.index_file": {"queue": DEFAULT_QUEUES["embedding"]},
        "ragsweep.reindex": {"queue": DEFAULT_QUEUES["cpu"]},
        "ragsweep.finish_reindex": {"queue": DEFAULT_QUEUES["cpu"]},
    },
    task_acks_late=False,
    worker_prefetch_multiplier=1,
    result_expires=STATE_TTL_S,
    broker_connection_retry_on_startup=True,
    # no periodic tasks, ever: see the module docstring
    beat_schedule={},
)


def _ledger() -> RedisLedger:
    return RedisLedger.from_url(os.environ.get(REDIS_URL_ENV) or DEFAULT_REDIS_URL)


def _endpoints() -> Endpoints:
    """The worker's own addresses of the stack, from the environment it was started with.

    This module is the worker's entrypoint (``celery -A``), so it reads the environment as the
    CLI and jobs/ do; it cannot use their Settings model (harness.commands), which no stage
    imports (docs/architecture.md).
    """
    return Endpoints(pg_dsn=os.environ.get(PG_DSN_ENV) or None,
                     opensearch_url=os.environ.get(OPENSEARCH_URL_ENV) or None,
                     s3_endpoint=os.environ.get(S3_ENDPOINT_ENV) or None)


@app.task(name="ragsweep.index_file")
def index_file(job: dict[str, Any]) -> dict[str, Any]:
    return coordinator.index_file(IndexFileJob.from_dict(job), _ledger(), endpoints=_endpoints())


@app.task(name="ragsweep.finish_reindex")
def finish_reindex(results: list[dict[str, Any]], run: dict[str, Any]) -> dict[str, Any]:
    # the chord's results are not trusted for the tally: the ledger is (a lost completion
    # is exactly an outcome the ledger does not have)
    return coordinator.finish_reindex(ReindexRun.from_dict(run), _ledger(), endpoints=_endpoints()).to_dict()


@app.task(name="ragsweep.reindex")
def reindex(request: dict[str, Any]) -> dict[str, Any]:
    req = ReindexRequest.from_dict(request)
    run = coordinator.start_reindex(req, _ledger(), endpoints=_endpoints())
    header = [index_file.s(job.to_dict()).set(queue=req.queues["embedding"]) for job in file_jobs(run)]
    body = finish_reindex.s(run.to_dict()).set(queue=req.queues["cpu"])
    result = chord(header)(body) if header else body.apply_async(([],))
    return {"run": run.to_dict(), "finish_id": result.id}


@app.task(name="ragsweep.worker_identity")
def worker_identity() -> dict[str, Any]:
    return coordinator.worker_identity()


def redis_url() -> str:
    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        raise UsageError(f"--dispatch celery needs {REDIS_URL_ENV}: start the stack (make stack-up) and "
                         "load its settings (eval \"$(stack/env.sh)\")")
    return url


def probe_queues(queues: Mapping[str, str], *, timeout_s: float = 30.0) -> dict[str, dict[str, Any]]:
    """worker_identity from a worker of each queue (what each one would chunk with)."""
    sent = {name: worker_identity.apply_async(queue=queue) for name, queue in sorted(queues.items())}
    try:
        return {name: result.get(timeout=timeout_s) for name, result in sent.items()}
    except CeleryTimeoutError as e:
        raise UsageError(f"no worker answered on queues {dict(queues)} within {timeout_s:.0f} s; "
                         "start them: stack/celery.sh start") from e


def dispatch_reindex(request: ReindexRequest, *, progress: Callable[[str, int, int], None] | None = None,
                     start_timeout_s: float = START_TIMEOUT_S, stall_timeout_s: float = STALL_TIMEOUT_S,
                     poll_s: float = 0.5) -> ReindexReport:
    """Send a reindex to the workers and wait for its report.

    If the report does not come (no new outcome for ``stall_timeout_s``: a worker died,
    a completion was lost), the host finishes the run itself from the ledger, and the
    fail-closed sweep declines on the incomplete tally.
    """
    ledger = RedisLedger.from_url(redis_url())
    started = reindex.apply_async((request.to_dict(),), queue=request.queues["cpu"])
    try:
        handle = started.get(timeout=start_timeout_s)
    except CeleryTimeoutError as e:
        raise IntegrityError(f"the reindex coordinator did not answer within {start_timeout_s:.0f} s on queue "
                             f"{request.queues['cpu']!r}; is a worker up? (stack/celery.sh status)") from e
    run = ReindexRun.from_dict(handle["run"])
    finish = AsyncResult(handle["finish_id"], app=app)
    total = len(run.snapshot)
    seen, last_change = -1, time.monotonic()
    while not finish.ready():
        done = len(ledger.outcomes(run.run_id))
        if done != seen:
            seen, last_change = done, time.monotonic()
            if progress:
                progress("indexing (celery)", done, max(total, 1))
        elif time.monotonic() - last_change > stall_timeout_s:
            return coordinator.finish_reindex(run, ledger, endpoints=_endpoints())
        time.sleep(poll_s)
    try:
        return ReindexReport.from_dict(finish.get(timeout=start_timeout_s))
    except Exception as e:
        raise IntegrityError(f"reindex {run.run_id}: the finishing task failed: {type(e).__name__}: {e}") from e
