#!/usr/bin/env bash
# An ephemeral namespace the CI janitor may delete: manifests/ci-namespace.yaml (Pod Security
# "restricted", labelled to expire after TTL_HOURS) and, inside it, the janitor's RoleBinding
# (manifests/ci-janitor-binding.yaml), without which the janitor is refused its delete.
#
#   stack/k8s/ci-namespace.sh NAMESPACE PIPELINE TTL_HOURS
#
# The one rule for every caller (make ci-namespace, stack/k8s/sweep.sh, tests/test_k8s_cluster.py):
# the namespace is created (kubectl create, atomic), never applied, so a namespace that exists is
# never labelled for expiry nor given the janitor's binding. An existing one is accepted, as it is,
# only when this script made it for the same PIPELINE (a rerun).
# Exit 0: created, or a rerun's; 2: bad arguments (kubectl not run); 3: the namespace exists and was
# not made here for PIPELINE (nothing changed); 1: kubectl failed (a namespace this call created is
# deleted again). Environment: KUBECTL (default kubectl), KUBECONFIG as kubectl reads it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
read -r -a kubectl <<<"${KUBECTL:-kubectl}"  # a command and its options, e.g. "kubectl --context ci"
die() { printf 'ci-namespace: %s\n' "${1//$'\n'/; }" >&2; exit "$2"; }  # one line, kubectl's too

(($# == 3)) || die "usage: stack/k8s/ci-namespace.sh NAMESPACE PIPELINE TTL_HOURS" 2
namespace=$1 pipeline=$2 ttl_hours=$3
[[ $namespace =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] \
  || die "NAMESPACE '$namespace' is not a DNS-1123 label (a-z, 0-9 and '-', at most 63, alphanumeric at both ends)" 2
[[ $pipeline =~ ^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$ ]] \
  || die "PIPELINE '$pipeline' is not a label value (letters, digits, '-', '_', '.', at most 63, alphanumeric at both ends)" 2
[[ $ttl_hours =~ ^[1-9][0-9]{0,3}$ ]] || die "TTL_HOURS '$ttl_hours' is not a whole number of hours (1-9999)" 2

expires=$(($(date +%s) + ttl_hours * 3600))
created=0
if out=$(sed -e "s/\${NAMESPACE}/$namespace/" -e "s/\${EXPIRES_AT}/$expires/" -e "s/\${PIPELINE}/$pipeline/" \
    "$ROOT/manifests/ci-namespace.yaml" | "${kubectl[@]}" create -f - 2>&1); then
  created=1
  echo "namespace $namespace created for pipeline $pipeline; expires at $(date -d "@$expires" -u +%FT%TZ) unless deleted first"
elif [[ $out != *AlreadyExists* ]]; then
  die "kubectl create namespace $namespace: $out" 1
else
  owner=$("${kubectl[@]}" get namespace "$namespace" \
    -o 'jsonpath={.metadata.labels.app\.kubernetes\.io/managed-by}/{.metadata.labels.ragsweep\.io/pipeline}' 2>&1) \
    || die "kubectl get namespace $namespace: $owner" 1
  [[ $owner == "ragsweep-ci/$pipeline" ]] \
    || die "namespace $namespace exists and ci-namespace did not create it for pipeline $pipeline; refusing to label it for the janitor (choose another namespace)" 3
  echo "namespace $namespace was made by ci-namespace for pipeline $pipeline: kept as it is"
fi
if ! out=$(sed -e "s/\${NAMESPACE}/$namespace/" "$ROOT/manifests/ci-janitor-binding.yaml" \
    | "${kubectl[@]}" apply -f - 2>&1); then
  if ((created)); then  # nothing half-made: without its binding the janitor could never delete it
    if gone=$("${kubectl[@]}" delete namespace "$namespace" --wait=false 2>&1); then
      out+="; namespace $namespace, created by this call, deleted again"
    else
      out+="; namespace $namespace, created by this call, could not be deleted either: $gone"
    fi
  fi
  die "the janitor's RoleBinding in $namespace: $out (binding ClusterRole ragsweep-ci-janitor-delete needs it to exist, from make ci-janitor, or the right to bind it)" 1
fi
echo "namespace $namespace: the janitor may delete it (RoleBinding ragsweep-ci-janitor)"
