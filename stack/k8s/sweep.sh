#!/usr/bin/env bash
# One sweep on Kubernetes, end to end, in a release of its own: `ragsweep sweep run --executor k8s
# --corpus NAME=DIR ...` (harness/sweep/k8s/launch.py) makes an ephemeral namespace with
# stack/k8s/ci-namespace.sh, installs charts/ragsweep with the images' digests, uploads every corpus
# under its name, waits for the injector (inject + index + settle through the Celery workers, the
# embedding cache on its kept volume), runs one Job per arm and the collector Job, downloads
# comparison.md to var/sweeps/<sweep id>/ and every sweep file, the injector's state and the logs to
# var/k8s-sweeps/<namespace>/, then removes the release and the namespace (KEEP=1 keeps them).
#
#   stack/k8s/sweep.sh "NAME=DIR [NAME=DIR ...]" ARMS   (make sweep ARMS=fusion EXECUTOR=k8s calls it
#                                                        with synthetic=..., and qmsum=... once fetched)
#
# A bare DIR is synthetic=DIR. This script only fills the defaults of this checkout: KUBECONFIG
# (default var/cluster/kubeconfig, the single-node cluster), VALUES (extra values files, space-
# separated; default the chart's ci/single-node-values.yaml, stack/k8s/no-gpu-values.yaml and
# IMAGES_VALUES, default var/images/values.yaml), RERANKER (a reranker folder, for families with a
# rerank stage), KEEP=1, NAMESPACE, PIPELINE (the namespace's ragsweep.io/pipeline label; make
# sweep-k8s passes its own), BACKENDS ("stack embedded": both backends in the same release).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CORPORA=${1:?usage: stack/k8s/sweep.sh "NAME=DIR [NAME=DIR ...]" ARMS}
ARMS=${2:?usage: stack/k8s/sweep.sh "NAME=DIR [NAME=DIR ...]" ARMS}
export KUBECONFIG=${KUBECONFIG:-$ROOT/var/cluster/kubeconfig}
RAGSWEEP=${RAGSWEEP:-$ROOT/.venv/bin/ragsweep}
IMAGES_VALUES=${IMAGES_VALUES:-$ROOT/var/images/values.yaml}
VALUES=${VALUES:-charts/ragsweep/ci/single-node-values.yaml stack/k8s/no-gpu-values.yaml}
[[ -f $KUBECONFIG ]] || { echo "sweep-k8s: no kubeconfig at $KUBECONFIG (make k8s-up starts the single-node cluster)" >&2; exit 2; }
args=()
for item in $CORPORA; do args+=(--corpus "$item"); done
for v in $VALUES "$IMAGES_VALUES"; do args+=(--values "$v"); done
[[ ${KEEP:-0} == 1 ]] && args+=(--keep)
[[ -n ${NAMESPACE:-} ]] && args+=(--namespace "$NAMESPACE")
[[ -n ${PIPELINE:-} ]] && args+=(--pipeline "$PIPELINE")
[[ -n ${RERANKER:-} ]] && args+=(--reranker "$RERANKER")
[[ -n ${BACKENDS:-} ]] && args+=(--backends "${BACKENDS// /,}")
[[ -n ${PORT_FORWARD_PORT:-} ]] && args+=(--port-forward-port "$PORT_FORWARD_PORT")
exec "$RAGSWEEP" sweep run --executor k8s --arms "$ARMS" --out var "${args[@]}"
