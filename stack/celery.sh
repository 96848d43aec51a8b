#!/usr/bin/env bash
# Celery worker hook for the local stack: consumes the embedding and cpu queues over the
# stack's Redis. It needs the harness's task module (harness.store.tasks); until that
# module exists, start says so and does nothing.
# Usage: stack/celery.sh start|stop|status
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

stack_defaults
CELERY_ROOT="$STACK_DIR/celery"
CELERY_PID="$CELERY_ROOT/worker.pid"
CELERY_APP=harness.store.tasks
CELERY_QUEUES="${RAGSWEEP_CELERY_QUEUES:-embedding,cpu}"

python_bin() {
  if [[ -x $REPO_ROOT/.venv/bin/python ]]; then echo "$REPO_ROOT/.venv/bin/python"; else command -v python3; fi
}

task_module_present() {
  [[ -f $REPO_ROOT/harness/store/tasks.py || -f $REPO_ROOT/harness/store/tasks/__init__.py ]]
}

case "${1:-}" in
  start)
    if ! task_module_present; then
      echo "celery: $CELERY_APP is not built yet (no harness/store/tasks.py); no worker started"
      exit 0
    fi
    [[ -f $STACK_ENV_FILE ]] || stack_die "celery: the stack is not up ($STACK_ENV_FILE missing); run make stack-up first"
    if pid_running "$CELERY_PID" celery; then
      echo "celery: worker already running (pid $(cat "$CELERY_PID"))"
      exit 0
    fi
    py="$(python_bin)"
    "$py" -c 'import celery' 2>/dev/null || stack_die "celery: the package is not installed for $py"
    mkdir -p "$CELERY_ROOT"
    set -a
    # shellcheck disable=SC1090
    source "$STACK_ENV_FILE"
    set +a
    cd "$REPO_ROOT"
    "$py" -m celery -A "$CELERY_APP" worker -Q "$CELERY_QUEUES" \
      --hostname "ragsweep@%h" --loglevel INFO \
      ${RAGSWEEP_CELERY_CONCURRENCY:+--concurrency "$RAGSWEEP_CELERY_CONCURRENCY"} \
      --pidfile "$CELERY_PID" --logfile "$CELERY_ROOT/worker.log" --detach 9>&-
    for _ in $(seq 1 50); do pid_running "$CELERY_PID" celery && break; sleep 0.2; done
    pid_running "$CELERY_PID" celery || { tail -n 40 "$CELERY_ROOT/worker.log" >&2 || true; stack_die "celery: worker did not start"; }
    echo "celery: worker started (pid $(cat "$CELERY_PID"), queues $CELERY_QUEUES, log $CELERY_ROOT/worker.log)"
    ;;
  stop)
    stop_pid celery "$CELERY_PID" celery 60
    ;;
  status)
    if pid_running "$CELERY_PID" celery; then
      echo "celery      up    pid $(cat "$CELERY_PID")  queues $CELERY_QUEUES"
    else
      echo "celery      down"
      exit 1
    fi
    ;;
  *)
    sed -n '2,5s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac
