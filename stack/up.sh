#!/usr/bin/env bash
# Start the local stack on 127.0.0.1: PostgreSQL, Redis, S3Proxy and OpenSearch.
# Idempotent: a service that is already running is left running.
# Usage: stack/up.sh [SERVICE...]   (services: postgres redis s3 opensearch; default all)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,4s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

services=()
for arg in "$@"; do
  case "$arg" in
    -h | --help) usage; exit 0 ;;
    postgres | redis | s3 | opensearch) services+=("$arg") ;;
    *) usage >&2; stack_die "unknown service '$arg'" ;;
  esac
done
((${#services[@]})) || services=("${STACK_ALL_SERVICES[@]}")
want() { [[ " ${services[*]} " == *" $1 "* ]]; }

started=$SECONDS
stack_defaults
stack_mark
stack_lock
stack_log "stack folder $STACK_DIR, cache $STACK_CACHE"

# OpenSearch takes the longest to boot: launch it first and wait for it last.
if want opensearch; then os_start; fi
if want postgres; then pg_start; fi
if want redis; then redis_start; fi
if want s3; then s3_start; s3_wait; fi
if want opensearch; then os_wait; fi

write_env_file

# -- Celery workers (stack/celery.sh): one per queue, once Redis and the env file exist.
# Celery Beat is never started: a maintenance reindex must not overlap a measurement.
if want redis; then
  "$STACK_SRC/celery.sh" start || stack_log "celery: workers not started (see above); the stack is up without them"
fi

stack_log "up in $((SECONDS - started))s; settings in $STACK_ENV_FILE (eval \"\$(stack/env.sh)\")"
"$STACK_SRC/status.sh" || true
