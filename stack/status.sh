#!/usr/bin/env bash
# One line per service of the local stack. Exit 0 when every service answers, 1 otherwise.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

stack_defaults
rc=0
pg_status || rc=1
redis_status || rc=1
s3_status || rc=1
os_status || rc=1
bash "$(dirname "${BASH_SOURCE[0]}")/celery.sh" status || rc=1
if [[ -f $STACK_ENV_FILE ]]; then
  echo "settings: $STACK_ENV_FILE"
else
  echo "settings: none (stack not up; run make stack-up)"
fi
exit "$rc"
