#!/usr/bin/env bash
# Stop every service of the local stack. Data stays unless --purge, which also deletes
# the stack folder (RAGSWEEP_STACK_DIR, default var/stack). The download cache stays.
# Usage: stack/down.sh [--purge]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

purge=0
for arg in "$@"; do
  case "$arg" in
    --purge) purge=1 ;;
    -h | --help) sed -n '2,4s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) stack_die "unknown argument '$arg' (usage: stack/down.sh [--purge])" ;;
  esac
done

stack_defaults
if [[ ! -f $STACK_MARKER ]]; then
  stack_log "no stack folder at $STACK_DIR (no $(basename "$STACK_MARKER") marker): nothing to stop"
  exit 0
fi
stack_lock
rm -f "$STACK_ENV_FILE"

"$STACK_SRC/celery.sh" stop || true
os_stop
s3_stop
redis_stop
if pg_bindir >/dev/null; then pg_stop; fi

if ((purge)); then
  stack_log "purging $STACK_DIR"
  rm -rf -- "$STACK_DIR"
fi
stack_log "down"
