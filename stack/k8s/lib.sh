# shellcheck shell=bash
# Helpers for the Kubernetes test bed: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (fake nodes), all on 127.0.0.1, all state under one folder
# (var/k8s). Sourced by stack/k8s/up.sh, down.sh and status.sh.
#
# What is real: the API server (authn by client certificates, RBAC, admission), etcd, the
# controllers (Job, garbage collector, TTL-after-finished, node lifecycle, service accounts)
# and the scheduler. What is simulated: the nodes (kwok keeps them Ready and serves their
# kubelet endpoint for pod logs) and the kubelet itself (tests/k8s_process_kubelet.py runs
# each pod's containers as local processes).

K8S_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$K8S_SRC/../.." && pwd)"

# shellcheck source=versions.env
source "$K8S_SRC/versions.env"
# shellcheck source=../proc.sh
source "$K8S_SRC/../proc.sh"

K8S_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

k8s_log() { printf '[k8s %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
k8s_die() { printf '[k8s] error: %s\n' "$*" >&2; exit 1; }

k8s_defaults() {
  K8S_DIR="${RAGSWEEP_K8S_DIR:-$REPO_ROOT/var/k8s}"
  case "$K8S_DIR" in /*) ;; *) K8S_DIR="$(pwd)/$K8S_DIR" ;; esac
  K8S_BIN="${RAGSWEEP_K8S_BIN:-$REPO_ROOT/var/tools/bin}"
  K8S_PKI="$K8S_DIR/pki"
  K8S_RUN="$K8S_DIR/run"
  K8S_LOGS="$K8S_DIR/logs"
  K8S_KUBECONFIG="$K8S_DIR/kubeconfig"
  # shellcheck disable=SC2034 # used by up.sh and down.sh
  K8S_MARKER="$K8S_DIR/.ragsweep-k8s"
  ETCD_PORT="${RAGSWEEP_K8S_ETCD_PORT:-12379}"
  ETCD_PEER_PORT="${RAGSWEEP_K8S_ETCD_PEER_PORT:-12380}"
  APISERVER_PORT="${RAGSWEEP_K8S_APISERVER_PORT:-16443}"
  KCM_PORT="${RAGSWEEP_K8S_KCM_PORT:-10357}"
  SCHEDULER_PORT="${RAGSWEEP_K8S_SCHEDULER_PORT:-10359}"
  KWOK_PORT="${RAGSWEEP_K8S_KWOK_PORT:-10347}"
  K8S_TIMEOUT="${RAGSWEEP_K8S_TIMEOUT:-90}"
  # shellcheck disable=SC2034 # used by up.sh
  SERVICE_CIDR=10.96.0.0/16
  # The address the API server binds and advertises: loopback for the kwok test bed; the
  # cluster (stack/k8s/cluster.sh) sets a host address its pods can reach.
  K8S_ADDRESS="${K8S_ADDRESS:-127.0.0.1}"
  APISERVER_URL="https://$K8S_ADDRESS:$APISERVER_PORT"
  K8S_PYTHON="$(command -v python3 || echo "$REPO_ROOT/.venv/bin/python")"
  local p
  for p in "$ETCD_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" "$KCM_PORT" "$SCHEDULER_PORT" "$KWOK_PORT"; do
    if ! [[ $p =~ ^[0-9]+$ ]] || ((p < 1 || p > 65535)); then
      k8s_die "port '$p' is not a number in 1-65535"
    fi
  done
}

# The binaries up.sh needs; prints the missing ones (nothing when all are there).
k8s_missing_binaries() {
  local b
  for b in "${K8S_COMPONENTS[@]}"; do [[ -x $K8S_BIN/$b ]] || printf '%s ' "$b"; done
}

k8s_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# k8s_pid_running NAME: the pid in run/NAME.pid is alive and runs K8S_BIN/NAME.
k8s_pid_running() { pid_running "$K8S_RUN/$1.pid" "$K8S_BIN/$1 "; }

# k8s_start NAME PORT ARGS...: start K8S_BIN/NAME in its own session unless it already runs.
k8s_start() {
  local name=$1 port=$2
  shift 2
  if k8s_pid_running "$name"; then
    k8s_log "$name: already running (pid $(cat "$K8S_RUN/$name.pid"))"
    return 0
  fi
  if k8s_port_open "$port"; then
    k8s_die "$name: 127.0.0.1:$port is in use by another process; stop it or set its RAGSWEEP_K8S_*_PORT"
  fi
  k8s_log "$name: starting on 127.0.0.1:$port (log $K8S_LOGS/$name.log)"
  # setsid: the component outlives the shell that started it (a test fixture, make) and
  # down.sh stops it by its pid file. The lock's descriptor is not inherited.
  start_detached "$K8S_RUN/$name.pid" "$K8S_LOGS/$name.log" "$K8S_BIN/$name" "$@" \
    || k8s_die "$name: did not start (log $K8S_LOGS/$name.log)"
}

# k8s_stop NAME [TIMEOUT]: TERM, wait, then KILL.
k8s_stop() { PROC_LOG=k8s_log stop_pid "$1" "$K8S_RUN/$1.pid" "$K8S_BIN/$1 " "${2:-30}"; }

# k8s_wait NAME CHECK...: run CHECK until it succeeds; the component must stay alive meanwhile.
k8s_wait() {
  local name=$1 deadline=$((SECONDS + K8S_TIMEOUT))
  shift
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if ! k8s_pid_running "$name"; then
      tail -n 30 "$K8S_LOGS/$name.log" >&2 || true
      k8s_die "$name: exited during start-up (log above: $K8S_LOGS/$name.log)"
    fi
    sleep 0.5
  done
  tail -n 30 "$K8S_LOGS/$name.log" >&2 || true
  k8s_die "$name: not ready within ${K8S_TIMEOUT}s (RAGSWEEP_K8S_TIMEOUT; log $K8S_LOGS/$name.log)"
}

# ------------------------------------------------------------------------ certificates

# k8s_cert NAME SUBJECT EXTENSIONS: a key and a certificate signed by the test bed's CA.
k8s_cert() {
  local name=$1 subject=$2 ext=$3
  [[ -s $K8S_PKI/$name.crt && -s $K8S_PKI/$name.key ]] && return 0
  openssl req -new -nodes -newkey rsa:2048 -keyout "$K8S_PKI/$name.key" -out "$K8S_PKI/$name.csr" \
    -subj "$subject" 2>/dev/null
  printf '%s\n' "$ext" >"$K8S_PKI/$name.ext"
  openssl x509 -req -in "$K8S_PKI/$name.csr" -CA "$K8S_PKI/ca.crt" -CAkey "$K8S_PKI/ca.key" \
    -CAcreateserial -out "$K8S_PKI/$name.crt" -days 3650 -sha256 -extfile "$K8S_PKI/$name.ext" 2>/dev/null
  rm -f "$K8S_PKI/$name.csr"
}

k8s_pki() {
  command -v openssl >/dev/null || k8s_die "openssl not found (Debian package openssl)"
  mkdir -p "$K8S_PKI"
  chmod 0700 "$K8S_PKI"
  if [[ ! -s $K8S_PKI/ca.crt ]]; then
    k8s_log "pki: a self-signed CA and certificates in $K8S_PKI"
    openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$K8S_PKI/ca.key" -out "$K8S_PKI/ca.crt" \
      -days 3650 -sha256 -subj "/CN=ragsweep-k8s-testbed-ca" 2>/dev/null
  fi
  k8s_cert apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$K8S_ADDRESS,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # The one client identity: in system:masters (the test bed's admin, used by every component).
  k8s_cert admin "/O=system:masters/CN=ragsweep-k8s-admin" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  # kwok's kubelet endpoint (pod logs go API server -> kwok -> the log file).
  k8s_cert kubelet "/CN=ragsweep-kwok-kubelet" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:ragsweep-cpu-0,DNS:ragsweep-gpu-0"
  if [[ ! -s $K8S_PKI/sa.key ]]; then
    openssl genrsa -out "$K8S_PKI/sa.key" 2048 2>/dev/null
    openssl rsa -in "$K8S_PKI/sa.key" -pubout -out "$K8S_PKI/sa.pub" 2>/dev/null
  fi
  chmod 0600 "$K8S_PKI"/*.key
}

k8s_write_kubeconfig() {
  local tmp="$K8S_KUBECONFIG.tmp"
  cat >"$tmp" <<EOF
# ragsweep Kubernetes test bed (written by stack/k8s/up.sh); export KUBECONFIG=$K8S_KUBECONFIG
apiVersion: v1
kind: Config
clusters:
  - name: ragsweep-testbed
    cluster:
      server: $APISERVER_URL
      certificate-authority: $K8S_PKI/ca.crt
users:
  - name: ragsweep-admin
    user:
      client-certificate: $K8S_PKI/admin.crt
      client-key: $K8S_PKI/admin.key
contexts:
  - name: ragsweep-testbed
    context:
      cluster: ragsweep-testbed
      user: ragsweep-admin
      namespace: default
current-context: ragsweep-testbed
EOF
  chmod 0600 "$tmp"
  mv "$tmp" "$K8S_KUBECONFIG"
}

# ------------------------------------------------------------------------ API calls (curl)

# k8s_api METHOD PATH [CURL ARGS...]: one call as the admin; prints the body.
k8s_api() {
  local method=$1 path=$2
  shift 2
  curl -sS --max-time 20 --cacert "$K8S_PKI/ca.crt" --cert "$K8S_PKI/admin.crt" --key "$K8S_PKI/admin.key" \
    -X "$method" "$APISERVER_URL$path" "$@"
}

k8s_apiserver_ready() { [[ $(k8s_api GET /readyz 2>/dev/null) == ok ]]; }

# k8s_create COLLECTION_PATH YAML_FILE: create the object; one that exists already is kept.
k8s_create() {
  local path=$1 file=$2 code
  code="$(k8s_api POST "$path" -o "$K8S_RUN/create.out" -w '%{http_code}' \
    -H 'Content-Type: application/yaml' --data-binary "@$file")"
  case "$code" in
    201 | 200) return 0 ;;
    409) return 0 ;;
    *) cat "$K8S_RUN/create.out" >&2; k8s_die "POST $path ($file): HTTP $code" ;;
  esac
}

# k8s_nodes_ready: every test-bed node is Ready and carries no node.kubernetes.io/* NoSchedule
# taint (the node lifecycle controller lifts not-ready once kwok reports Ready).
k8s_nodes_ready() {
  local body
  body="$(k8s_api GET '/api/v1/nodes?labelSelector=ragsweep.io%2Ftestbed%3Dtrue')" || return 1
  "$K8S_PYTHON" - "$body" <<'PY'
import json, sys
nodes = json.loads(sys.argv[1]).get("items", [])
ok = len(nodes) >= 2
for node in nodes:
    ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
    taints = [t for t in node.get("spec", {}).get("taints", []) or []
              if t["key"].startswith("node.kubernetes.io/")]
    ok = ok and bool(ready) and ready[0]["status"] == "True" and not taints
sys.exit(0 if ok else 1)
PY
}

# ------------------------------------------------------------------------ the control plane

# k8s_start_etcd: one member, loopback, plain HTTP (nothing but the API server talks to it).
k8s_start_etcd() {
  k8s_start etcd "$ETCD_PORT" --name testbed --data-dir "$K8S_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "testbed=http://127.0.0.1:$ETCD_PEER_PORT" \
    --quota-backend-bytes $((1024 * 1024 * 1024)) --log-level warn
  k8s_wait etcd bash -c "curl -sf --max-time 2 http://127.0.0.1:$ETCD_PORT/health | grep -q '\"health\":\"true\"'"
}

# k8s_start_apiserver ADDRESS AUTHORIZATION RECONCILER: client certificates, the default
# admission plugins (none needs anything outside the API server), service-account tokens
# signed by sa.key; bound to and advertised on ADDRESS.
k8s_start_apiserver() {
  local address=$1 authz=$2 reconciler=$3
  k8s_start kube-apiserver "$APISERVER_PORT" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address "$address" --advertise-address "$address" \
    --secure-port "$APISERVER_PORT" --cert-dir "$K8S_DIR/apiserver" \
    --tls-cert-file "$K8S_PKI/apiserver.crt" --tls-private-key-file "$K8S_PKI/apiserver.key" \
    --client-ca-file "$K8S_PKI/ca.crt" --authorization-mode "$authz" --anonymous-auth=false \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$K8S_PKI/sa.pub" \
    --service-account-signing-key-file "$K8S_PKI/sa.key" --service-cluster-ip-range "$SERVICE_CIDR" \
    --kubelet-preferred-address-types InternalIP --kubelet-certificate-authority "$K8S_PKI/ca.crt" \
    --kubelet-client-certificate "$K8S_PKI/admin.crt" --kubelet-client-key "$K8S_PKI/admin.key" \
    --endpoint-reconciler-type "$reconciler" --allow-privileged=false --profiling=false --v=1
  k8s_wait kube-apiserver k8s_apiserver_ready
}

# k8s_start_controllers: the controllers (Job, garbage collector, TTL-after-finished, node
# lifecycle, service accounts and their tokens, namespaces, ...) and the scheduler, as the admin.
k8s_start_controllers() {
  k8s_start kube-controller-manager "$KCM_PORT" --kubeconfig "$K8S_KUBECONFIG" \
    --authentication-kubeconfig "$K8S_KUBECONFIG" --authorization-kubeconfig "$K8S_KUBECONFIG" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
    --controllers '*' --use-service-account-credentials=false \
    --service-account-private-key-file "$K8S_PKI/sa.key" --root-ca-file "$K8S_PKI/ca.crt" \
    --cluster-signing-cert-file "$K8S_PKI/ca.crt" --cluster-signing-key-file "$K8S_PKI/ca.key" \
    --node-monitor-grace-period 40s --profiling=false --v=1
  k8s_start kube-scheduler "$SCHEDULER_PORT" --kubeconfig "$K8S_KUBECONFIG" \
    --authentication-kubeconfig "$K8S_KUBECONFIG" --authorization-kubeconfig "$K8S_KUBECONFIG" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --leader-elect=false --profiling=false --v=1
}
