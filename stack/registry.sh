#!/usr/bin/env bash
# The image registry on loopback: the CNCF distribution registry (built from its Go module by
# stack/k8s/build-tools.sh), plain HTTP on 127.0.0.1:5000 (RAGSWEEP_REGISTRY_PORT), storage in the
# machine's cache ($RAGSWEEP_MACHINE_CACHE/registry, stack/machine-cache.sh; RAGSWEEP_REGISTRY_DIR), one
# registry for every clone on the machine: images are tagged by their inputs' sha256, so a fresh clone
# finds every image whose inputs it shares. `make images` pushes there; the cluster's containerd pulls from it.
# Usage: stack/registry.sh up|down|status     (idempotent; data stays on down)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=proc.sh
source "$ROOT/stack/proc.sh"
reg_log() { printf '[registry %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
PROC_LOG=reg_log
# shellcheck source=machine-cache.sh
source "$ROOT/stack/machine-cache.sh"
REG_DIR="${RAGSWEEP_REGISTRY_DIR:-$RAGSWEEP_MACHINE_CACHE/registry}"
REG_BIN="${RAGSWEEP_K8S_BIN:-$ROOT/var/tools/bin}/registry"
# What names our registry process: its config in the machine's cache, the same for every clone (the
# binary's path differs by clone: each one's var/tools/bin link), so one clone finds the registry another
# clone started instead of calling it "something else".
REG_MARK="serve $REG_DIR/config.yml"
REG_PORT="${RAGSWEEP_REGISTRY_PORT:-5000}"
REG_PID="$REG_DIR/registry.pid"
REG_LOG="$REG_DIR/registry.log"

answers() { curl -sf --max-time 2 "http://127.0.0.1:$REG_PORT/v2/" >/dev/null; }

case "${1:-}" in
  up)
    if pid_running "$REG_PID" "$REG_MARK"; then answers && exit 0; fi
    [[ -x $REG_BIN ]] || { reg_log "error: $REG_BIN missing (make k8s-apiserver-tools builds it from the Go module proxy)"; exit 2; }
    if answers; then reg_log "error: something else answers on 127.0.0.1:$REG_PORT; set RAGSWEEP_REGISTRY_PORT"; exit 2; fi
    mkdir -p "$REG_DIR/data"
    cat >"$REG_DIR/config.yml" <<EOF
# written by stack/registry.sh at every start
version: 0.1
log: {level: warn, formatter: text}
storage:
  filesystem: {rootdirectory: $REG_DIR/data}
  delete: {enabled: true}
http:
  addr: 127.0.0.1:$REG_PORT
EOF
    start_detached "$REG_PID" "$REG_LOG" "$REG_BIN" serve "$REG_DIR/config.yml" \
      || { reg_log "error: the registry did not start (log $REG_LOG)"; exit 1; }
    for _ in $(seq 1 100); do answers && break; sleep 0.1; done
    answers || { tail -n 20 "$REG_LOG" >&2; reg_log "error: the registry did not answer on 127.0.0.1:$REG_PORT within 10s (log $REG_LOG)"; exit 1; }
    reg_log "up on 127.0.0.1:$REG_PORT (data $REG_DIR/data)"
    ;;
  down) stop_pid registry "$REG_PID" "$REG_MARK" 10 ;;
  status)
    if pid_running "$REG_PID" "$REG_MARK" && answers; then
      printf 'registry    up    127.0.0.1:%s  %s\n' "$REG_PORT" "$REG_DIR/data"
    else
      printf 'registry    down  127.0.0.1:%s\n' "$REG_PORT"; exit 1
    fi
    ;;
  *) sed -n '2,5s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2 ;;
esac
