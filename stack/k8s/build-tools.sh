#!/usr/bin/env bash
# Build the Kubernetes test bed's binaries into var/tools/bin from the Go module proxy:
# kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy (k8s.io/kubernetes),
# etcd, kwok, the distribution registry, CoreDNS and the NetworkPolicy enforcer (kube-network-policies).
# Only missing binaries are built (about 35 minutes cold on 2 cores; the module cache keeps
# the sources). FORCE=1 rebuilds all. Versions: stack/k8s/versions.env.
# --check: build nothing; name the missing binaries on stderr and exit 1 when any is missing, else exit 0.
set -euo pipefail
K8S_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$K8S_SRC/../.." && pwd)"
# shellcheck source=versions.env
source "$K8S_SRC/versions.env"
BIN="${RAGSWEEP_K8S_TOOLS:-$REPO_ROOT/var/tools}/bin"
WORK="${RAGSWEEP_K8S_TOOLS:-$REPO_ROOT/var/tools}/src"

log() { printf '[k8s-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
ALL="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd kwok registry coredns kube-network-policies"
if [[ ${1:-} == --check ]]; then
  missing=()
  for b in $ALL; do [[ -x $BIN/$b ]] || missing+=("$b"); done
  ((${#missing[@]} == 0)) || { log "not built in $BIN: ${missing[*]}"; exit 1; }
  exit 0
fi
command -v go >/dev/null || { log "needs Go (the module proxy serves every source); none on PATH"; exit 2; }
mkdir -p "$BIN" "$WORK"
export GOFLAGS=-buildvcs=false
# var/tools/bin is the machine's tools cache (stack/k8s/tools-cache.sh): one build at a time into it
exec 9>"$BIN/.build.lock"
flock -w 7200 9 || { log "another build into $BIN holds $BIN/.build.lock"; exit 2; }

want() { [[ ${FORCE:-0} == 1 || ! -x $BIN/$1 ]]; }

# The version the binaries report (k8s.io/component-base/version), instead of v0.0.0-master.
minor="${KUBERNETES_VERSION#v}"; major="${minor%%.*}"; minor="${minor#*.}"; minor="${minor%%.*}"
kube_ldflags="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION"
kube_ldflags+=" -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"

build_wrapper() {  # build_wrapper MODULE_DIR PACKAGE OUT [LDFLAGS]
  local module=$1 package=$2 out=$3 ldflags=${4:-} started=$SECONDS
  rm -rf "${WORK:?}/$module"
  cp -r "$K8S_SRC/testbed/$module" "$WORK/$module"
  log "building $out (go build in $WORK/$module)"
  (cd "$WORK/$module" && go build -ldflags "$ldflags" -o "$BIN/$out" "./$package")
  log "$out built in $((SECONDS - started))s"
}

grep -q "k8s.io/kubernetes $KUBERNETES_VERSION" "$K8S_SRC/testbed/kube/go.mod" \
  || { log "stack/k8s/testbed/kube/go.mod does not require k8s.io/kubernetes $KUBERNETES_VERSION; update it (go get + go mod tidy)"; exit 2; }
grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "$K8S_SRC/testbed/etcd/go.mod" \
  || { log "stack/k8s/testbed/etcd/go.mod does not require etcd $ETCD_VERSION; update it"; exit 2; }
grep -q "sigs.k8s.io/kube-network-policies $KUBE_NETWORK_POLICIES_VERSION" "$K8S_SRC/testbed/netpol/go.mod" \
  || { log "stack/k8s/testbed/netpol/go.mod does not require kube-network-policies $KUBE_NETWORK_POLICIES_VERSION; update it"; exit 2; }

for t in apiserver controller-manager scheduler; do
  if want "kube-$t"; then build_wrapper kube "$t" "kube-$t" "$kube_ldflags"; fi
done
# The node: a real kubelet and kube-proxy (same module, so the second build reuses the cache).
if want kubelet; then build_wrapper kube kubelet kubelet "$kube_ldflags"; fi
if want kube-proxy; then build_wrapper kube proxy kube-proxy "$kube_ldflags"; fi
if want etcd; then build_wrapper etcd . etcd; fi
# NetworkPolicy enforcement on the node (cluster.sh): kube-network-policies' controller run as a host
# process (testbed/netpol/main.go adds --kubeconfig); static, like upstream's own build.
if want kube-network-policies; then CGO_ENABLED=0 build_wrapper netpol . kube-network-policies; fi
# The node's image registry (stack/registry.sh) and cluster DNS (stack/k8s/cluster-addons.yaml):
# plain go install of pinned module versions; CoreDNS static, it runs FROM scratch.
if want registry; then
  log "building registry $DISTRIBUTION_VERSION (go install)"
  GOBIN="$BIN" go install "github.com/distribution/distribution/v3/cmd/registry@$DISTRIBUTION_VERSION"
fi
if want coredns; then
  log "building coredns $COREDNS_VERSION (go install, static)"
  CGO_ENABLED=0 GOBIN="$BIN" go install "github.com/coredns/coredns@$COREDNS_VERSION"
fi
if want kwok; then
  log "building kwok $KWOK_VERSION (go install)"
  GOBIN="$BIN" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
fi
for b in $ALL; do
  [[ -x $BIN/$b ]] || { log "$BIN/$b missing after the build"; exit 1; }
done
log "all in $BIN: $("$BIN/kube-apiserver" --version), etcd $("$BIN/etcd" --version | sed -n 's/^etcd Version: //p'), $("$BIN/kwok" --version | cut -d' ' -f1-3)"
