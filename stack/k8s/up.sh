#!/usr/bin/env bash
# Start the Kubernetes test bed on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok with two fake nodes (ragsweep-cpu-0, and ragsweep-gpu-0 with one
# nvidia.com/gpu, the chart's GPU label and taint). Idempotent: what runs is left running.
# Writes var/k8s/kubeconfig and returns once both nodes are Ready and schedulable.
# Usage: stack/k8s/up.sh        (binaries: make k8s-apiserver-tools; stop: stack/k8s/down.sh)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "${1:-}" in
  -h | --help) sed -n '2,6s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") ;;
  *) k8s_die "unknown argument '$1' (see --help)" ;;
esac

started=$SECONDS
k8s_defaults
missing="$(k8s_missing_binaries)"
[[ -z $missing ]] || k8s_die "missing in $K8S_BIN: $missing(build them: make -f Makefile.k8s k8s-apiserver-tools, about 35 min cold)"
mkdir -p "$K8S_DIR" "$K8S_RUN" "$K8S_LOGS" "$K8S_DIR/etcd" "$K8S_DIR/apiserver" "$K8S_DIR/manifests"
[[ -e $K8S_MARKER ]] || printf 'ragsweep Kubernetes test bed; created %s\n' "$(date -u +%FT%TZ)" >"$K8S_MARKER"
exec 9>"$K8S_DIR/.lock"
flock -w 300 9 || k8s_die "another up/down holds $K8S_DIR/.lock"

k8s_pki
k8s_write_kubeconfig

k8s_start_etcd
# The kwok nodes have no pod network: the API server stays on 127.0.0.1 and keeps no endpoints.
k8s_start_apiserver 127.0.0.1 RBAC none
k8s_log "kube-apiserver: ready at $APISERVER_URL ($(k8s_api GET /version | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p'))"

# -- kwok's Logs CRD (from the kwok module the binary was built from): the process kubelet
# registers each container's log file there, and kwok serves it on the node's kubelet port.
crd="$(go env GOMODCACHE 2>/dev/null)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/crd/bases/kwok.x-k8s.io_logs.yaml"
if [[ ! -f $crd ]]; then
  command -v go >/dev/null || k8s_die "go is needed to find kwok's Logs CRD (module sigs.k8s.io/kwok@$KWOK_VERSION)"
  dir="$(cd "$K8S_DIR" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  crd="$dir/kustomize/crd/bases/kwok.x-k8s.io_logs.yaml"
  [[ -f $crd ]] || k8s_die "kwok's Logs CRD not found in sigs.k8s.io/kwok@$KWOK_VERSION"
fi
k8s_create /apis/apiextensions.k8s.io/v1/customresourcedefinitions "$crd"
k8s_wait kube-apiserver bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert '$K8S_PKI/ca.crt' \
  --cert '$K8S_PKI/admin.crt' --key '$K8S_PKI/admin.key' '$APISERVER_URL/apis/kwok.x-k8s.io/v1alpha1/logs') == 200 ]]"

# -- the fake nodes, one object per file for the API.
rm -f "$K8S_DIR/manifests"/node-*.yaml
awk -v dir="$K8S_DIR/manifests" '/^---$/ { n++; next } { print > (dir "/node-" n+0 ".yaml") }' "$K8S_SRC/nodes.yaml"
for f in "$K8S_DIR/manifests"/node-*.yaml; do k8s_create /api/v1/nodes "$f"; done

k8s_start_controllers

# -- kwok: keeps the nodes annotated kwok.x-k8s.io/node=fake Ready (stages in kwok.yaml, node
# leases) and serves their kubelet endpoint (pod logs) on 127.0.0.1:KWOK_PORT.
k8s_start kwok "$KWOK_PORT" --kubeconfig "$K8S_KUBECONFIG" --config "$K8S_SRC/kwok.yaml" \
  --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --node-ip 127.0.0.1 --node-port "$KWOK_PORT" --server-address "127.0.0.1:$KWOK_PORT" \
  --tls-cert-file "$K8S_PKI/kubelet.crt" --tls-private-key-file "$K8S_PKI/kubelet.key" \
  --enable-crds Logs

k8s_log "waiting for the nodes to be Ready and schedulable"
k8s_wait kwok k8s_nodes_ready
for c in kube-controller-manager kube-scheduler; do
  k8s_pid_running "$c" || { tail -n 30 "$K8S_LOGS/$c.log" >&2; k8s_die "$c exited (log $K8S_LOGS/$c.log)"; }
done
k8s_log "up in $((SECONDS - started))s; KUBECONFIG=$K8S_KUBECONFIG"
