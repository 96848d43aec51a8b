#!/usr/bin/env bash
# Stop the Kubernetes test bed (by its pid files, in reverse start order).
# Usage: stack/k8s/down.sh [--purge]   (--purge also deletes var/k8s: etcd data, certificates)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

purge=0
case "${1:-}" in
  -h | --help) sed -n '2,3s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  --purge) purge=1 ;;
  "") ;;
  *) k8s_die "unknown argument '$1' (see --help)" ;;
esac

k8s_defaults
[[ -d $K8S_DIR ]] || { k8s_log "no test bed in $K8S_DIR"; exit 0; }
mkdir -p "$K8S_RUN"
exec 9>"$K8S_DIR/.lock"
flock -w 300 9 || k8s_die "another up/down holds $K8S_DIR/.lock"

for ((i = ${#K8S_COMPONENTS[@]} - 1; i >= 0; i--)); do
  k8s_stop "${K8S_COMPONENTS[i]}" 30
done
if ((purge)); then
  # Only a folder up.sh marked as its own is ever deleted.
  [[ -e $K8S_MARKER ]] || k8s_die "$K8S_DIR has no $(basename "$K8S_MARKER") marker; not deleting it"
  k8s_log "purging $K8S_DIR"
  rm -rf "$K8S_DIR"
fi
