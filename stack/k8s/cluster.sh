#!/usr/bin/env bash
# A single-node Kubernetes cluster on this machine, for real: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler (as the kwok test bed), plus a real node:
# containerd + runc (Debian), the bridge/host-local/portmap CNI plugins (Debian), kubelet and
# kube-proxy (built from k8s.io/kubernetes by stack/k8s/build-tools.sh), CoreDNS, local
# PersistentVolumes and NetworkPolicy enforcement (kube-network-policies' controller on an
# iptables NFQUEUE hook; see start_netpol). Images come from the loopback registry (make images).
#
#   stack/k8s/cluster.sh up       start what is not running; returns once the node is Ready
#                                 and cluster DNS answers (idempotent)
#   stack/k8s/cluster.sh down     stop every pod's containers, the node and the control plane
#   stack/k8s/cluster.sh status   one line per component
#   stack/k8s/cluster.sh purge    down, then delete var/cluster (etcd, images, volumes)
#   stack/k8s/cluster.sh recycle  wipe released local volumes and offer them again
#
# KUBECONFIG=var/cluster/kubeconfig. The API server and the kubelet listen on the node address
# 10.243.0.1 (RAGSWEEP_CLUSTER_ADDRESS, on an interface of its own on this host) so that pods reach the
# API server through the kubernetes Service; pods get 10.244.0.0/24, Services 10.96.0.0/16.
# RAGSWEEP_CLUSTER_NETWORK_POLICY=off starts the node without the enforcer (policies are then
# admitted but not enforced, as with the bridge CNI alone; `up` and `status` say so).
# Exit codes: 0 ok, 1 a component failed (the message names it and its log), 2 a missing tool.
set -euo pipefail
export RAGSWEEP_K8S_DIR="${RAGSWEEP_CLUSTER_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/var/cluster}"
export K8S_ADDRESS="${RAGSWEEP_CLUSTER_ADDRESS:-10.243.0.1}"
# Ports apart from the kwok test bed's, so both can exist (not run at once: one etcd each).
export RAGSWEEP_K8S_ETCD_PORT="${RAGSWEEP_CLUSTER_ETCD_PORT:-13379}"
export RAGSWEEP_K8S_ETCD_PEER_PORT="${RAGSWEEP_CLUSTER_ETCD_PEER_PORT:-13380}"
export RAGSWEEP_K8S_APISERVER_PORT="${RAGSWEEP_CLUSTER_APISERVER_PORT:-17443}"
export RAGSWEEP_K8S_KCM_PORT="${RAGSWEEP_CLUSTER_KCM_PORT:-11357}"
export RAGSWEEP_K8S_SCHEDULER_PORT="${RAGSWEEP_CLUSTER_SCHEDULER_PORT:-11359}"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=../apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/../apt.sh"
# shellcheck source=../machine-cache.sh
source "$(dirname "${BASH_SOURCE[0]}")/../machine-cache.sh"

NODE_NAME=${RAGSWEEP_CLUSTER_NODE:-ragsweep-node-0}
POD_CIDR=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
CLUSTER_DNS=10.96.0.10
DUMMY_IF=ragsweep0
CNI_BIN=${RAGSWEEP_CNI_BIN:-/usr/lib/cni}
NODE_TIMEOUT=${RAGSWEEP_CLUSTER_TIMEOUT:-180}
NETWORK_POLICY=${RAGSWEEP_CLUSTER_NETWORK_POLICY:-on}
[[ $NETWORK_POLICY == on || $NETWORK_POLICY == off ]] \
  || { echo "cluster: RAGSWEEP_CLUSTER_NETWORK_POLICY must be on or off, not '$NETWORK_POLICY'" >&2; exit 2; }
NETPOL_QUEUE=${RAGSWEEP_CLUSTER_NETPOL_QUEUE:-100}
NETPOL_METRICS_PORT=${RAGSWEEP_CLUSTER_NETPOL_METRICS_PORT:-9080}
NETPOL_CHAIN=RAGSWEEP-NETPOL
# The embedding cache's volume: the machine's own cache (harness.machinecache, docs/embedding-cache.md),
# so every clone's cluster, and every local build of the same model and encoder, encodes a text once.
EMBEDDINGS=${RAGSWEEP_CLUSTER_EMBEDDINGS:-$RAGSWEEP_MACHINE_CACHE/embeddings}

k8s_defaults
K8S_TIMEOUT=$NODE_TIMEOUT
CTRD_DIR=$K8S_DIR/containerd
CTRD_SOCK=$CTRD_DIR/containerd.sock
CTRD_PID=$K8S_RUN/containerd.pid
KUBECTL=(kubectl --kubeconfig "$K8S_KUBECONFIG")

die_component() {  # die_component NAME LOG WHY: the one line that says what failed and where to look
  tail -n 20 "$2" >&2 2>/dev/null || true
  printf 'cluster: %s: %s (log %s)\n' "$1" "$3" "$2" >&2
  exit 1
}

node_kubeconfig() {  # node_kubeconfig NAME CERT: a kubeconfig for one component identity
  local file=$K8S_DIR/$1.kubeconfig
  cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: ragsweep, cluster: {server: "$APISERVER_URL", certificate-authority: "$K8S_PKI/ca.crt"}}]
users: [{name: $1, user: {client-certificate: "$K8S_PKI/$2.crt", client-key: "$K8S_PKI/$2.key"}}]
contexts: [{name: $1, context: {cluster: ragsweep, user: $1}}]
current-context: $1
EOF
  chmod 0600 "$file.tmp"; mv "$file.tmp" "$file"
}

node_pki() {
  k8s_cert "node-$NODE_NAME" "/O=system:nodes/CN=system:node:$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  k8s_cert kube-proxy "/CN=system:kube-proxy" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  k8s_cert kubelet-serving "/O=system:nodes/CN=system:node:$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$K8S_ADDRESS,DNS:$NODE_NAME"
  chmod 0600 "$K8S_PKI"/*.key
  k8s_cert kube-network-policies "/CN=system:kube-network-policies" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  chmod 0600 "$K8S_PKI"/*.key
  node_kubeconfig kubelet "node-$NODE_NAME"
  node_kubeconfig kube-proxy kube-proxy
  node_kubeconfig kube-network-policies kube-network-policies
}

host_network() {
  modprobe br_netfilter 2>/dev/null || true
  sysctl -qw net.ipv4.ip_forward=1
  [[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] \
    || k8s_die "net.bridge.bridge-nf-call-iptables is missing (the br_netfilter module): Services cannot work"
  sysctl -qw net.bridge.bridge-nf-call-iptables=1
  if ! ip link show "$DUMMY_IF" >/dev/null 2>&1; then
    # A bridge with no ports: an interface of its own for the address (this kernel has no dummy module).
    ip link add "$DUMMY_IF" type bridge
  fi
  # not `ip addr show | grep -q`: grep's early exit gives ip SIGPIPE, which pipefail turns into a
  # failure, and a second `up` then tried to add the address again ("Address already assigned")
  [[ $(ip -4 addr show dev "$DUMMY_IF") == *"inet $K8S_ADDRESS/"* ]] || ip addr add "$K8S_ADDRESS/32" dev "$DUMMY_IF"
  ip link set "$DUMMY_IF" up
  # Nothing addressed to the cluster's ranges ever leaves this machine: without kube-proxy's
  # rules (a Service not yet programmed, kube-proxy restarting) such a packet would follow the
  # default route out; blackholed, it fails at once instead. More specific routes (cni0's
  # pod subnet, the node address) still win.
  ip route replace blackhole "$SERVICE_CIDR"
  ip route replace blackhole "$CLUSTER_CIDR"
}

containerd_running() { pid_running "$CTRD_PID" "containerd --config $CTRD_DIR/config.toml"; }

start_containerd() {
  # shellcheck disable=SC1090
  source "${RAGSWEEP_IMAGES_DIR:-$REPO_ROOT/var/images}/images.env" 2>/dev/null && [[ -n ${IMAGE_PAUSE:-} && -n ${IMAGE_COREDNS:-} ]] \
    || k8s_die "no pause or CoreDNS image in ${RAGSWEEP_IMAGES_DIR:-var/images}/images.env: build and push the images first (make images)"
  mkdir -p "$CTRD_DIR/certs.d/$IMAGE_REGISTRY" "$K8S_DIR/cni/net.d"
  cat >"$CTRD_DIR/certs.d/$IMAGE_REGISTRY/hosts.toml" <<EOF
# the loopback registry (stack/registry.sh): plain HTTP
server = "http://$IMAGE_REGISTRY"
[host."http://$IMAGE_REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
  cat >"$K8S_DIR/cni/net.d/10-ragsweep.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ragsweep",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$K8S_DIR/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
  cat >"$CTRD_DIR/config.toml" <<EOF
# written by stack/k8s/cluster.sh at every start
version = 2
root = "$CTRD_DIR/root"
state = "$CTRD_DIR/state"
[grpc]
  address = "$CTRD_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE_PAUSE"
  enable_unprivileged_ports = false
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower a process's oom_score_adj (the pause
  # container asks for -998), so adjustments are clamped to containerd's own value.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$K8S_DIR/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$CTRD_DIR/certs.d"
EOF
  if containerd_running; then k8s_log "containerd: already running"; return 0; fi
  k8s_log "containerd: starting (log $K8S_LOGS/containerd.log)"
  start_detached "$CTRD_PID" "$K8S_LOGS/containerd.log" containerd --config "$CTRD_DIR/config.toml" \
    || die_component containerd "$K8S_LOGS/containerd.log" "did not start"
  local i
  # Serving, not just a socket file: the previous run's socket stays on disk after a kill, and a
  # kubelet started against it exits ("validate CRI v1 runtime API").
  for ((i = 0; i < 100; i++)); do
    ctr --address "$CTRD_SOCK" version >/dev/null 2>&1 && return 0
    containerd_running || break
    sleep 0.2
  done
  die_component containerd "$K8S_LOGS/containerd.log" "not serving on $CTRD_SOCK within 20s"
}

start_kubelet() {
  mkdir -p "$K8S_DIR/kubelet" "$K8S_DIR/pods-logs"
  write_if_changed "$K8S_DIR/kubelet-config.yaml" <<EOF
# written by stack/k8s/cluster.sh at every start
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has the hybrid cgroup v1 layout; kubelet 1.37 refuses it unless told not to.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTRD_SOCK
address: $K8S_ADDRESS
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $K8S_PKI/kubelet-serving.crt
tlsPrivateKeyFile: $K8S_PKI/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $K8S_PKI/ca.crt}
authorization: {mode: Webhook}
clusterDNS: [$CLUSTER_DNS]
clusterDomain: cluster.local
resolvConf: $K8S_DIR/resolv.conf
failSwapOn: false
podLogsDir: $K8S_DIR/pods-logs
# This machine's disk is thin: its size says 252G, its free space is tens of GiB. Evict only
# below absolute floors (a percentage of the nominal size evicted everything at 5 GiB free),
# and recover quickly once space is back.
evictionHard: {memory.available: 200Mi, nodefs.available: 1Gi, imagefs.available: 1Gi}
evictionPressureTransitionPeriod: 30s
imageGCHighThresholdPercent: 98
imageGCLowThresholdPercent: 95
serializeImagePulls: false
maxPods: 60
EOF
  # Pods resolve only cluster names: nothing outside this machine is reachable anyway.
  printf 'nameserver 127.0.0.1\n' >"$K8S_DIR/resolv.conf"
  k8s_pid_running kubelet || KUBELET_SINCE=$(date -u +%FT%TZ)
  k8s_start kubelet 10250 --config "$K8S_DIR/kubelet-config.yaml" --kubeconfig "$K8S_DIR/kubelet.kubeconfig" \
    --root-dir "$K8S_DIR/kubelet" --hostname-override "$NODE_NAME" --node-ip "$K8S_ADDRESS" \
    --node-labels "ragsweep.io/cluster=true" --v=1
}

# write_if_changed FILE: stdin into FILE only when it differs (kube-proxy exits when its
# configuration file is rewritten, even with the same content).
write_if_changed() {
  cat >"$1.new"
  if cmp -s "$1.new" "$1"; then rm -f "$1.new"; else mv "$1.new" "$1"; fi
}

start_kube_proxy() {
  write_if_changed "$K8S_DIR/kube-proxy-config.yaml" <<EOF
# written by stack/k8s/cluster.sh at every start
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: $K8S_DIR/kube-proxy.kubeconfig}
clusterCIDR: $CLUSTER_CIDR
hostnameOverride: $NODE_NAME
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
EOF
  k8s_start kube-proxy 10256 --config "$K8S_DIR/kube-proxy-config.yaml" --v=1
}

# ---------------------------------------------------------------- NetworkPolicy enforcement
# The bridge CNI plugin ignores NetworkPolicy objects. kube-network-policies' controller judges
# the first packet of every new pod flow in user space against the policies of both ends. Its
# own nftables rules need the `queue` expression, which this kernel lacks (CONFIG_NFT_QUEUE is
# not set, no loadable modules), so the packets reach it through an iptables NFQUEUE rule
# instead (xt_NFQUEUE is built in): chain RAGSWEEP-NETPOL in mangle POSTROUTING, after kube-proxy's
# DNAT (the controller sees the backend pod, not the ClusterIP) and before MASQUERADE (it sees
# the source pod). Skipped: established flows, and sockets of the host's root (kubelet probes,
# port-forward), as upstream skips skuid 0. Not policed, as upstream: traffic to the node's own
# addresses (the API server). Fail-closed: while the controller is down, new pod flows are
# dropped (no --queue-bypass), so a dead enforcer is an outage that `status` names, never a
# silent hole. Denied flows are dropped, not refused: clients see a timeout.
netpol_queue_bound() {  # the controller listens on our queue (it binds once its caches synced)
  awk -v q="$NETPOL_QUEUE" '$1 == q { found = 1 } END { exit !found }' /proc/net/netfilter/nfnetlink_queue
}

netpol_hook_present() { iptables -w -t mangle -C POSTROUTING -j "$NETPOL_CHAIN" 2>/dev/null; }

netpol_hook_install() {
  # One restore: the chain is (re)declared, so flushed, and filled in a single commit.
  iptables-restore -w --noflush <<EOF
*mangle
:$NETPOL_CHAIN - [0:0]
-A $NETPOL_CHAIN -m owner --uid-owner 0 -j RETURN
-A $NETPOL_CHAIN -m conntrack ! --ctstate NEW -j RETURN
-A $NETPOL_CHAIN -s $CLUSTER_CIDR -j NFQUEUE --queue-num $NETPOL_QUEUE
-A $NETPOL_CHAIN -d $CLUSTER_CIDR -j NFQUEUE --queue-num $NETPOL_QUEUE
COMMIT
EOF
  netpol_hook_present || iptables -w -t mangle -A POSTROUTING -j "$NETPOL_CHAIN"
}

netpol_hook_remove() {
  while netpol_hook_present; do iptables -w -t mangle -D POSTROUTING -j "$NETPOL_CHAIN"; done
  iptables -w -t mangle -F "$NETPOL_CHAIN" 2>/dev/null || true
  iptables -w -t mangle -X "$NETPOL_CHAIN" 2>/dev/null || true
}

start_netpol() {
  if [[ $NETWORK_POLICY == off ]]; then
    netpol_hook_remove
    k8s_log "kube-network-policies: off (RAGSWEEP_CLUSTER_NETWORK_POLICY=off): NetworkPolicies are NOT enforced"
    return 0
  fi
  k8s_start kube-network-policies "$NETPOL_METRICS_PORT" --kubeconfig "$K8S_DIR/kube-network-policies.kubeconfig" \
    --hostname-override "$NODE_NAME" --nfqueue-id "$NETPOL_QUEUE" \
    --metrics-bind-address "127.0.0.1:$NETPOL_METRICS_PORT" --v=1
  wait_for kube-network-policies "$K8S_LOGS/kube-network-policies.log" netpol_queue_bound
  netpol_hook_install
  k8s_log "kube-network-policies: enforcing on NFQUEUE $NETPOL_QUEUE (iptables mangle $NETPOL_CHAIN)"
}

# Ready, as posted by this kubelet: the Node object (and its last Ready) outlives a kubelet that
# exited, so a heartbeat older than this start does not count.
KUBELET_SINCE=""
node_ready() {
  local ready beat
  read -r ready beat < <("${KUBECTL[@]}" get node "$NODE_NAME" -o \
    jsonpath='{.status.conditions[?(@.type=="Ready")].status}{" "}{.status.conditions[?(@.type=="Ready")].lastHeartbeatTime}{"\n"}' 2>/dev/null)
  [[ $ready == True && ! $beat < $KUBELET_SINCE ]]
}

wait_for() {  # wait_for NAME LOG CHECK...: CHECK within NODE_TIMEOUT; a component NAME that exits fails at once
  local name=$1 logf=$2 deadline=$((SECONDS + NODE_TIMEOUT))
  shift 2
  while ((SECONDS < deadline)); do
    "$@" >/dev/null 2>&1 && return 0
    if [[ -f $K8S_RUN/$name.pid ]] && ! k8s_pid_running "$name"; then
      die_component "$name" "$logf" "exited before the node was Ready"
    fi
    sleep 1
  done
  die_component "$name" "$logf" "not ready within ${NODE_TIMEOUT}s (RAGSWEEP_CLUSTER_TIMEOUT)"
}

addons() {
  # shellcheck disable=SC1090
  source "${RAGSWEEP_IMAGES_DIR:-$REPO_ROOT/var/images}/images.env"
  mkdir -p "$K8S_DIR/volumes"
  local i
  for i in $(seq -w 0 9); do mkdir -p "$K8S_DIR/volumes/pv-$i"; done
  mkdir -p "$EMBEDDINGS"
  # A volume's path cannot change: a cluster whose embedding-cache volume is a folder of its own (made
  # before it was the machine's cache) gets the volume again, if no claim holds it (else apply says so).
  local had
  had=$("${KUBECTL[@]}" get pv ragsweep-embedding-cache -o jsonpath='{.spec.local.path}' 2>/dev/null || true)
  if [[ -n $had && $had != "$EMBEDDINGS" && -z $("${KUBECTL[@]}" get pv ragsweep-embedding-cache \
      -o jsonpath='{.spec.claimRef.name}' 2>/dev/null || true) ]]; then
    k8s_log "embedding-cache volume: $had replaced by the machine's cache $EMBEDDINGS"
    "${KUBECTL[@]}" delete pv ragsweep-embedding-cache --wait=true --timeout=60s >/dev/null
  fi
  sed -e "s|\${IMAGE_COREDNS}|$IMAGE_COREDNS|" -e "s|\${CLUSTER_DNS}|$CLUSTER_DNS|" \
    -e "s|\${NODE_NAME}|$NODE_NAME|g" -e "s|\${VOLUMES}|$K8S_DIR/volumes|g" -e "s|\${EMBEDDINGS}|$EMBEDDINGS|g" \
    "$K8S_SRC/cluster-addons.yaml" | "${KUBECTL[@]}" apply -f - >"$K8S_LOGS/addons.log" 2>&1 \
    || die_component addons "$K8S_LOGS/addons.log" "kubectl apply of stack/k8s/cluster-addons.yaml failed"
}

# Released local volumes (their claim's namespace is gone): wiped and offered again. The embedding
# cache's volume is offered again as it is: its vectors are what the next release should find.
recycle_volumes() {
  local pv path
  for pv in $("${KUBECTL[@]}" get pv -l ragsweep.io/embedding-cache=true \
      -o jsonpath='{range .items[?(@.status.phase=="Released")]}{.metadata.name}{"\n"}{end}'); do
    "${KUBECTL[@]}" patch pv "$pv" --type json -p '[{"op":"remove","path":"/spec/claimRef"}]' >/dev/null
    k8s_log "volume $pv offered again, kept"
  done
  for pv in $("${KUBECTL[@]}" get pv -l ragsweep.io/local-volume=true \
      -o jsonpath='{range .items[?(@.status.phase=="Released")]}{.metadata.name}{"\n"}{end}'); do
    path=$("${KUBECTL[@]}" get pv "$pv" -o jsonpath='{.spec.local.path}')
    [[ $path == "$K8S_DIR/volumes/"* ]] || continue
    find "$path" -mindepth 1 -delete
    "${KUBECTL[@]}" patch pv "$pv" --type json -p '[{"op":"remove","path":"/spec/claimRef"}]' >/dev/null
    k8s_log "volume $pv recycled"
  done
}

dns_ready() {
  [[ $("${KUBECTL[@]}" -n kube-system get deploy coredns -o jsonpath='{.status.readyReplicas}' 2>/dev/null) == 1 ]]
}

stop_pods() {
  containerd_running || return 0
  local ctr=(ctr --address "$CTRD_SOCK" -n k8s.io) t
  for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
  sleep 2
  for t in $("${ctr[@]}" tasks ls -q 2>/dev/null); do "${ctr[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true; done
}

case "${1:-}" in
  up)
    started=$SECONDS
    for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy \
        $([[ $NETWORK_POLICY == on ]] && echo kube-network-policies); do
      [[ -x $K8S_BIN/$b ]] || { echo "cluster: $K8S_BIN/$b missing (make k8s-apiserver-tools)" >&2; exit 2; }
    done
    apt_ensure containerd:containerd runc:runc ctr:containerd iptables:iptables iptables-restore:iptables \
        conntrack:conntrack ip:iproute2 "$CNI_BIN/bridge:containernetworking-plugins" \
      || { echo "cluster: needs containerd, runc, iptables, conntrack, iproute2 and the CNI plugins in $CNI_BIN (Debian packages)" >&2; exit 2; }
    command -v kubectl >/dev/null || { echo "cluster: needs kubectl on PATH" >&2; exit 2; }
    mkdir -p "$K8S_DIR" "$K8S_RUN" "$K8S_LOGS" "$K8S_DIR/etcd" "$K8S_DIR/apiserver"
    [[ -e $K8S_MARKER ]] || printf 'ragsweep single-node cluster; created %s\n' "$(date -u +%FT%TZ)" >"$K8S_MARKER"
    exec 9>"$K8S_DIR/.lock"
    flock -w 300 9 || k8s_die "another cluster up/down holds $K8S_DIR/.lock"
    bash "$REPO_ROOT/stack/registry.sh" up
    host_network
    k8s_pki
    node_pki
    k8s_write_kubeconfig
    k8s_start_etcd
    k8s_start_apiserver "$K8S_ADDRESS" Node,RBAC lease
    k8s_start_controllers
    start_containerd
    start_kubelet
    start_kube_proxy
    wait_for kubelet "$K8S_LOGS/kubelet.log" node_ready
    addons
    start_netpol
    recycle_volumes
    wait_for coredns "$K8S_LOGS/kubelet.log" dns_ready
    k8s_log "cluster up in $((SECONDS - started))s: node $NODE_NAME Ready; KUBECONFIG=$K8S_KUBECONFIG"
    ;;
  down | purge)
    [[ -d $K8S_DIR ]] || { k8s_log "no cluster in $K8S_DIR"; exit 0; }
    mkdir -p "$K8S_RUN"
    exec 9>"$K8S_DIR/.lock"
    flock -w 300 9 || k8s_die "another cluster up/down holds $K8S_DIR/.lock"
    # The hook first: fail-closed, it would drop every new pod flow once the controller is gone.
    netpol_hook_remove
    k8s_stop kube-network-policies 10
    k8s_stop kube-proxy 10
    k8s_stop kubelet 30
    stop_pods
    PROC_LOG=k8s_log stop_pid containerd "$CTRD_PID" "containerd --config $CTRD_DIR/config.toml" 30
    for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do k8s_stop "$c" 30; done
    # What the node left in the host's network: the pods' bridge and kube-proxy's rules.
    ip link del cni0 2>/dev/null || true
    ip route del blackhole "$SERVICE_CIDR" 2>/dev/null || true
    ip route del blackhole "$CLUSTER_CIDR" 2>/dev/null || true
    "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
    if [[ $1 == purge ]]; then
      [[ -e $K8S_MARKER ]] || k8s_die "$K8S_DIR has no $(basename "$K8S_MARKER") marker; not deleting it"
      findmnt -rn -o TARGET | grep "^$K8S_DIR/" | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
      ip link del "$DUMMY_IF" 2>/dev/null || true
      k8s_log "purging $K8S_DIR"
      rm -rf "$K8S_DIR"
    fi
    ;;
  recycle) recycle_volumes ;;
  status)
    rc=0
    for c in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
      if k8s_pid_running "$c"; then printf '%-24s up\n' "$c"; else printf '%-24s down\n' "$c"; rc=1; fi
    done
    if containerd_running; then printf '%-24s up\n' containerd; else printf '%-24s down\n' containerd; rc=1; fi
    if node_ready; then printf '%-24s Ready\n' "node $NODE_NAME"; else printf '%-24s not Ready\n' "node $NODE_NAME"; rc=1; fi
    if [[ $NETWORK_POLICY == off ]]; then
      printf '%-24s off: NetworkPolicies not enforced\n' kube-network-policies
    elif k8s_pid_running kube-network-policies && netpol_queue_bound && netpol_hook_present; then
      printf '%-24s up, enforcing (NFQUEUE %s)\n' kube-network-policies "$NETPOL_QUEUE"
    else
      # fail-closed: the hook without its listener drops every new pod flow
      printf '%-24s down%s\n' kube-network-policies "$(netpol_hook_present && echo ': new pod flows are dropped until up')"
      rc=1
    fi
    exit $rc
    ;;
  *) sed -n '2,21s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2 ;;
esac
