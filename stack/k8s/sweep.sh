#!/usr/bin/env bash
# One sweep on Kubernetes, end to end: an ephemeral namespace made by stack/k8s/ci-namespace.sh
# (restricted Pod Security, an expiry label and the janitor's RoleBinding; an existing namespace is
# refused, exit 3, unless that script made it for the same PIPELINE), `helm install` of
# charts/ragsweep with the images' digests, the corpora uploaded to the release's object store,
# the injector Job (inject + index + settle through the Celery workers), one Job per arm, the
# collector Job, comparison.md downloaded to var/sweeps/<sweep id>/, then the release and the
# namespace removed (KEEP=1 keeps them; the janitor deletes them once they expire).
#
#   stack/k8s/sweep.sh "NAME=DIR [NAME=DIR ...]" ARMS   (make sweep ARMS=fusion EXECUTOR=k8s calls it
#                                                        with synthetic=..., and qmsum=... once fetched)
#
# CORPORA names each corpus and its folder, as `ragsweep state build --corpus NAME=DIR` does (a bare
# DIR is synthetic=DIR): each folder is uploaded under its name and the injector builds one state
# of them all, so a sweep of two corpora gives verdicts.
#
# Environment: KUBECONFIG (default var/cluster/kubeconfig, the single-node cluster), VALUES
# (extra values files, space-separated; default the chart's ci/single-node-values.yaml and
# stack/k8s/no-gpu-values.yaml: the single node has no GPU), RERANKER (a reranker folder, for
# families with a rerank stage: pushed to the object store, fetched by their pods),
# IMAGES_VALUES (default var/images/values.yaml, written by make images), KEEP=1, NAMESPACE (default ragsweep-<hash of the corpora>-<time>), PIPELINE
# (the namespace's ragsweep.io/pipeline label; default sweep-<hash of the corpora>; make sweep-k8s
# passes its PIPELINE, so a namespace from make ci-namespace for the same pipeline is used as it is),
# BACKENDS (default "stack": the arms search the release's OpenSearch; "stack embedded" runs the
# arms a second time on the state's own index, in the same release: `helm upgrade` of
# jobs.backend, one injector for both). The state the injector built is downloaded to
# var/k8s-sweeps/<ns>/state, so a local sweep can measure the same state.
# While it runs, `kubectl get pods -o wide` is appended every 20 s to var/k8s-sweeps/<ns>/pods.log,
# and each pod's containers with the image digest they run to .../pod-images.log.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CORPORA=${1:?usage: stack/k8s/sweep.sh "NAME=DIR [NAME=DIR ...]" ARMS}
ARMS=${2:?usage: stack/k8s/sweep.sh "NAME=DIR [NAME=DIR ...]" ARMS}
export KUBECONFIG=${KUBECONFIG:-$ROOT/var/cluster/kubeconfig}
HELM=${HELM:-$ROOT/var/tools/bin/helm}
PY=${PY:-$ROOT/.venv/bin/python}
RAGSWEEP=${RAGSWEEP:-$ROOT/.venv/bin/ragsweep}
RELEASE=${RELEASE:-ragsweep}
VALUES=${VALUES:-charts/ragsweep/ci/single-node-values.yaml stack/k8s/no-gpu-values.yaml}
RERANKER=${RERANKER:-}
IMAGES_VALUES=${IMAGES_VALUES:-$ROOT/var/images/values.yaml}
BACKENDS=${BACKENDS:-stack}
PORT=${PORT_FORWARD_PORT:-19000}
TTL_HOURS=${CI_TTL_HOURS:-4}
say() { printf '[sweep-k8s %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'sweep-k8s: %s\n' "$*" >&2; exit "${2:-2}"; }

declare -A corpus_dirs=()
for item in $CORPORA; do
  [[ $item == *=* ]] || item=synthetic=$item
  name=${item%%=*} dir=${item#*=}
  [[ $name =~ ^[a-z0-9][a-z0-9._-]{0,99}$ ]] || die "CORPORA: corpus name '$name' (in '$item'): expected lower-case letters, digits, . _ -"
  [[ -z ${corpus_dirs[$name]:-} ]] || die "CORPORA: corpus $name given twice"
  [[ -d $dir ]] || die "CORPORA: $name=$dir is not a folder (make synth; make qmsum)"
  corpus_dirs[$name]=$(cd "$dir" && pwd)
done
((${#corpus_dirs[@]})) || die "CORPORA is empty: give NAME=DIR for each corpus"
CORPUS_NAMES=$(printf '%s\n' "${!corpus_dirs[@]}" | LC_ALL=C sort | tr '\n' ' ')
[[ -f $KUBECONFIG ]] || die "no kubeconfig at $KUBECONFIG (make k8s-up starts the single-node cluster)"
[[ -x $HELM ]] || die "no helm at $HELM (make k8s-tools)"
[[ -f $IMAGES_VALUES ]] || die "no $IMAGES_VALUES (make images builds the images and writes it)"
[[ -z $RERANKER || -f $RERANKER/config.json ]] || die "RERANKER=$RERANKER is not a reranker folder (no config.json)"
if [[ -z $RERANKER ]]; then  # refused here, before a release is installed and a corpus injected for it
  rerank=$("$PY" -c 'import sys
from harness.errors import UsageError
from harness.sweep.catalogue import CATALOGUE, select_arms
try:
    print(", ".join(a.name for a in select_arms(CATALOGUE, sys.argv[1]) if a.needs_reranker))
except UsageError as e:
    sys.exit(f"sweep-k8s: ARMS={sys.argv[1]}: {e}")' "$ARMS") || exit 2
  [[ -z $rerank ]] || die "arms $rerank run the rerank stage and need RERANKER=DIR (a reranker folder; ragsweep reranker train --out DIR)"
fi
state_key=$(for name in $CORPUS_NAMES; do
  echo "$name"; (cd "${corpus_dirs[$name]}" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
done | sha256sum | cut -c1-10)
NAMESPACE=${NAMESPACE:-ragsweep-$state_key-$(date +%s | tail -c 7)}
LOGDIR=$ROOT/var/k8s-sweeps/$NAMESPACE
values_args=()
for v in $VALUES "$IMAGES_VALUES"; do values_args+=(-f "$v"); done

pf=""; watcher=""; ours=0
cleanup() {
  local rc=$?
  if [[ -n $pf ]]; then
    local kids; kids=$(pgrep -P "$pf" || true)
    kill "$pf" 2>/dev/null || true; [[ -n $kids ]] && kill $kids 2>/dev/null || true
  fi
  [[ -n $watcher ]] && kill "$watcher" 2>/dev/null || true
  if [[ $ours != 1 ]]; then
    :  # refused or never made: not this sweep's namespace, nothing to tear down
  elif [[ ${KEEP:-0} == 1 ]]; then
    say "KEEP=1: namespace $NAMESPACE kept (helm uninstall $RELEASE -n $NAMESPACE; kubectl delete namespace $NAMESPACE)"
  else
    say "tearing down: helm uninstall, namespace $NAMESPACE deleted"
    "$HELM" uninstall "$RELEASE" -n "$NAMESPACE" --wait --timeout 5m >/dev/null 2>&1 || true
    kubectl delete namespace "$NAMESPACE" --wait=true --timeout=5m >/dev/null 2>&1 || true
    bash stack/k8s/cluster.sh recycle >/dev/null 2>&1 || true
  fi
  exit "$rc"
}
trap cleanup EXIT

started=$SECONDS
# As make ci-namespace: created, never applied (an existing namespace not made for this PIPELINE is
# refused, exit 3, and left alone), labelled to expire, with the janitor's RoleBinding inside, so
# one kept with KEEP=1 still goes once it expires.
bash stack/k8s/ci-namespace.sh "$NAMESPACE" "${PIPELINE:-sweep-$state_key}" "$TTL_HOURS" >&2 || exit
ours=1
mkdir -p "$LOGDIR"
say "namespace $NAMESPACE (restricted Pod Security); logs in $LOGDIR"
images_columns='POD:.metadata.name,PHASE:.status.phase,CONTAINERS:.status.containerStatuses[*].name,IMAGE_IDS:.status.containerStatuses[*].imageID'
(while sleep 20; do
  { date -u +%FT%TZ; kubectl -n "$NAMESPACE" get pods -o wide 2>&1; echo; } >>"$LOGDIR/pods.log"
  { date -u +%FT%TZ; kubectl -n "$NAMESPACE" get pods -o "custom-columns=$images_columns" 2>&1; echo; } >>"$LOGDIR/pod-images.log"
done) &
watcher=$!

names=$(printf '"%s",' $CORPUS_NAMES)
say "helm install $RELEASE (every service pod Ready, up to 15 min)"
"$HELM" install "$RELEASE" charts/ragsweep -n "$NAMESPACE" "${values_args[@]}" \
  --set-json "corpus.names=[${names%,}]" --wait --timeout 15m >"$LOGDIR/helm-install.log" 2>&1 \
  || { tail -n 20 "$LOGDIR/helm-install.log" >&2; kubectl -n "$NAMESPACE" get pods -o wide >&2 || true; die "helm install failed (log $LOGDIR/helm-install.log)" 1; }
say "release installed in $((SECONDS - started))s"
kubectl -n "$NAMESPACE" get pods -o wide | tee "$LOGDIR/pods-installed.txt" >&2

# The launcher (outside the cluster) reaches the store through a port-forward, which ends when
# the object store's pod does (deleted, rescheduled): it is restarted until the sweep is over.
(while :; do
  kubectl -n "$NAMESPACE" port-forward "svc/$RELEASE-object-store" "$PORT:9000" >>"$LOGDIR/port-forward.log" 2>&1
  echo "[$(date -u +%FT%TZ)] port-forward exited ($?); restarting" >>"$LOGDIR/port-forward.log"; sleep 1
done) &
pf=$!
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
secret=$RELEASE-object-store
AWS_ACCESS_KEY_ID=$(kubectl -n "$NAMESPACE" get secret "$secret" -o jsonpath='{.data.access-key-id}' | base64 -d)
AWS_SECRET_ACCESS_KEY=$(kubectl -n "$NAMESPACE" get secret "$secret" -o jsonpath='{.data.secret-access-key}' | base64 -d)
export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_DEFAULT_REGION=us-east-1 RAGSWEEP_S3_ENDPOINT=http://127.0.0.1:$PORT
staging=$(mktemp -d); for name in $CORPUS_NAMES; do cp -r "${corpus_dirs[$name]}" "$staging/$name"; done
say "corpora uploaded: $CORPUS_NAMES"
"$PY" -m jobs.sync push --store s3://ragsweep --from "$staging" --key corpora/corpora.tar.gz
rm -rf "$staging"

say "waiting for the injector Job (inject, index through the Celery workers, settle)"
injector_started=$SECONDS
selector="app.kubernetes.io/instance=$RELEASE,app.kubernetes.io/component=injector"
while :; do
  state=$(kubectl -n "$NAMESPACE" get job -l "$selector" \
    -o jsonpath='{range .items[*].status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>/dev/null || true)
  case " $state " in
    *" Complete "*) break ;;
    *" Failed "*)
      kubectl -n "$NAMESPACE" logs -l "$selector" --all-containers --tail 20 >&2 || true
      die "the injector Job failed (kubectl -n $NAMESPACE describe job -l $selector)" 1 ;;
  esac
  ((SECONDS - injector_started < 7200)) || die "the injector Job did not finish within 2 h" 1
  if (((SECONDS - injector_started) % 60 < 10)); then
    # build-state (an init container) does the work; progress bars redraw with \r
    last=$(kubectl -n "$NAMESPACE" logs -l "$selector" -c build-state --tail 5 2>/dev/null \
      | tr '\r' '\n' | grep -v '^[[:space:]]*$' | tail -n 1 | cut -c1-160 || true)
    say "  injector: ${last:-no output from build-state yet}"
  fi
  sleep 10
done
say "injector complete in $((SECONDS - injector_started))s"

"$PY" -m jobs.sync pull --store s3://ragsweep --key state/state.tar.gz --out "$LOGDIR/state" >&2
say "the injector's state: $LOGDIR/state"

rc=0
for backend in $BACKENDS; do
  if [[ $backend != "$(kubectl -n "$NAMESPACE" get configmap "$RELEASE-launcher" -o jsonpath='{.data.settings\.json}' \
      | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["backend"])')" ]]; then
    say "helm upgrade: the arms measure the $backend backend"
    "$HELM" upgrade "$RELEASE" charts/ragsweep -n "$NAMESPACE" --reuse-values --set "jobs.backend=$backend" \
      --wait --timeout 10m >>"$LOGDIR/helm-install.log" 2>&1 || die "helm upgrade to jobs.backend=$backend failed" 1
  fi
  arms_started=$SECONDS
  RAGSWEEP_K8S_NAMESPACE=$NAMESPACE RAGSWEEP_K8S_LAUNCHER_CONFIG=$RELEASE-launcher RAGSWEEP_K8S_S3_ENDPOINT=$RAGSWEEP_S3_ENDPOINT \
    "$RAGSWEEP" sweep run --executor k8s --state "$LOGDIR/state" --arms "$ARMS" --out var \
    ${RERANKER:+--reranker "$RERANKER"} 2>&1 \
    | tee "$LOGDIR/sweep-$backend.log" || rc=$?
  say "arms on the $backend backend: $((SECONDS - arms_started))s"
done
# Every sweep's files (per arm: metrics.json, per_query.json, run.trec, ...) beside the logs, to
# compare with a local sweep of $LOGDIR/state.
"$PY" - "$LOGDIR/store" <<'PY' >&2
import os, sys
from harness.objectstore import LocalFolderStore, open_store
remote, local = open_store("s3://ragsweep", os.environ["RAGSWEEP_S3_ENDPOINT"]), LocalFolderStore(sys.argv[1])
keys = remote.list("sweeps/")
for key in keys:
    local.put_bytes(key, remote.get_bytes(key))
print(f"[sweep-k8s] {len(keys)} sweep files copied to {sys.argv[1]}")
PY
say "sweep on Kubernetes done in $((SECONDS - started))s"
exit "$rc"
