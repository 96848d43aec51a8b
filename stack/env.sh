#!/usr/bin/env bash
# Connection settings of the running local stack (written by stack/up.sh).
#   eval "$(stack/env.sh)"    prints export lines to evaluate
#   source stack/env.sh       exports them into the current shell
# Fails when the stack is not up. RAGSWEEP_STACK_DIR selects another stack folder.
_ragsweep_env_file="${RAGSWEEP_STACK_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/var/stack}/stack.env"
if [[ ! -f $_ragsweep_env_file ]]; then
  echo "stack/env.sh: $_ragsweep_env_file not found: the stack is not up (make stack-up)" >&2
  unset _ragsweep_env_file
  # shellcheck disable=SC2317 # exit is reached when the file is executed, not sourced
  return 1 2>/dev/null || exit 1
fi
if [[ ${BASH_SOURCE[0]} != "$0" ]]; then
  while IFS='=' read -r _ragsweep_key _ragsweep_value; do
    export "$_ragsweep_key=$_ragsweep_value"
  done < <(grep -E '^[A-Z_][A-Z0-9_]*=' "$_ragsweep_env_file")
  unset _ragsweep_env_file _ragsweep_key _ragsweep_value
else
  grep -E '^[A-Z_][A-Z0-9_]*=' "$_ragsweep_env_file" | while IFS='=' read -r key value; do
    printf 'export %s=%q\n' "$key" "$value"
  done
fi
