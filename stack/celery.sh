#!/usr/bin/env bash
# Celery workers for the local stack: one per queue (embedding: index_file; cpu: the
# reindex coordinator), solo pool, the project's venv python, broker and results at
# RAGSWEEP_REDIS_URL. Celery Beat is never started (docs/ingest.md).
# Usage: stack/celery.sh start|stop|restart|status
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

stack_defaults
CELERY_ROOT="$STACK_DIR/celery"
CELERY_APP=harness.index.ingest.tasks
# One worker per queue; RAGSWEEP_CELERY_QUEUES picks which of them run (default both).
CELERY_QUEUES="${RAGSWEEP_CELERY_QUEUES:-embedding,cpu}"

python_bin() {
  [[ -x $REPO_ROOT/.venv/bin/python ]] || stack_die "celery: no venv at $REPO_ROOT/.venv (make setup); workers must run the project's python"
  echo "$REPO_ROOT/.venv/bin/python"
}

queues() { tr ',' '\n' <<<"$CELERY_QUEUES" | sed '/^$/d'; }
pid_file() { echo "$CELERY_ROOT/$1.pid"; }

start_worker() {
  local queue=$1 py=$2 pidfile
  pidfile="$(pid_file "$queue")"
  if pid_running "$pidfile" celery; then
    echo "celery: $queue worker already running (pid $(cat "$pidfile"))"
    return 0
  fi
  rm -f "$pidfile"
  # --pool solo: one task at a time in the worker process itself, so the model and the
  # splitter a task uses are the ones this process loaded (and worker_identity reports).
  "$py" -m celery -A "$CELERY_APP" worker -Q "$queue" --pool solo --concurrency 1 \
    --hostname "$queue@%h" --loglevel INFO --without-gossip --without-mingle \
    --pidfile "$pidfile" --logfile "$CELERY_ROOT/$queue.log" --detach 9>&-
  local i
  for ((i = 0; i < 100; i++)); do pid_running "$pidfile" celery && break; sleep 0.1; done
  pid_running "$pidfile" celery || { tail -n 40 "$CELERY_ROOT/$queue.log" >&2 || true; stack_die "celery: $queue worker did not start"; }
  echo "celery: $queue worker started (pid $(cat "$pidfile"), log $CELERY_ROOT/$queue.log)"
}

# Wait until every worker answers a ping over the broker (a started process is not yet
# consuming its queue).
await_workers() {
  local py=$1 n
  n="$(queues | wc -l)"
  (cd "$REPO_ROOT" && "$py" -m celery -A "$CELERY_APP" inspect ping --timeout 2 >/dev/null 2>&1) || true
  for _ in $(seq 1 60); do
    if [[ $(cd "$REPO_ROOT" && "$py" -m celery -A "$CELERY_APP" inspect ping --timeout 2 2>/dev/null | grep -c 'pong') -ge $n ]]; then
      return 0
    fi
    sleep 0.5
  done
  stack_die "celery: workers started but did not answer a ping within 30s (logs in $CELERY_ROOT)"
}

start() {
  [[ -f $STACK_ENV_FILE ]] || stack_die "celery: the stack is not up ($STACK_ENV_FILE missing); run make stack-up first"
  local py queue
  py="$(python_bin)"
  "$py" -c 'import celery, redis' 2>/dev/null || stack_die "celery: celery[redis] is not installed for $py (pip install 'celery[redis]>=5.3,<6')"
  mkdir -p "$CELERY_ROOT"
  set -a
  # shellcheck disable=SC1090
  source "$STACK_ENV_FILE"
  set +a
  cd "$REPO_ROOT"
  for queue in $(queues); do start_worker "$queue" "$py"; done
  await_workers "$py"
}

stop() {
  local queue
  for queue in $(queues); do stop_pid "celery $queue" "$(pid_file "$queue")" celery 60; done
  # the single worker of earlier versions of this script
  stop_pid "celery (old single worker)" "$CELERY_ROOT/worker.pid" celery 60
}

status() {
  local queue rc=0 pidfile
  for queue in $(queues); do
    pidfile="$(pid_file "$queue")"
    if pid_running "$pidfile" celery; then
      printf 'celery      up    queue %-10s pid %s\n' "$queue" "$(cat "$pidfile")"
    else
      printf 'celery      down  queue %s\n' "$queue"
      rc=1
    fi
  done
  return "$rc"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) status ;;
  *)
    sed -n '2,5s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac
