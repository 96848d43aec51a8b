#!/usr/bin/env bash
# `make test` (and so .ci/run): every test, with the services and the clusters it needs, within CI's time.
#
#   1. tools    the Kubernetes test bed's and node's binaries from the machine's cache (make k8s-apiserver-tools
#               builds only what is missing there: about 35 min on a machine that never built them)
#   2. suite    pytest against the local stack (stack/up.sh, stopped after), the test bed's tests
#               (tests/test_k8s_live.py) among them; the single-node cluster's tests are step 4
#   3. baseline jobs.baselines check --ci
#   4. cluster  make images (unchanged images: nothing rebuilt), make k8s-up, tests/test_k8s_cluster.py, then
#               make k8s-down unless the cluster was already up. Its scope follows the time left of
#               RAGSWEEP_TEST_BUDGET_S (default 5100 s, CI's 90 minutes less a margin) measured from this
#               script's start: every test when the time left covers RAGSWEEP_CLUSTER_FULL_S (default 1800),
#               else the smaller scope CLUSTER_SMALL (pods from pinned digests in containers, an arm pod
#               and OpenSearch's credentials, the collector's account), never none.
#
# RAGSWEEP_TEST_STEPS: the steps to run (default "tools suite baseline cluster"; e.g. "cluster" alone).
# RAGSWEEP_REQUIRE_K8S=1 in both pytest runs: a Kubernetes test that finds its binaries or images missing fails
# instead of skipping. Each step prints its time; the last line is the whole run's. Not root: step 4 cannot start containerd and
# says so (the suite still runs). Exit: the first failing step's code.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PY:-.venv/bin/python}
MAKE_CMD=${MAKE:-make}
BUDGET=${RAGSWEEP_TEST_BUDGET_S:-5100}
FULL_S=${RAGSWEEP_CLUSTER_FULL_S:-1800}
CLUSTER_SMALL="pinned_digest or opensearch_answers or collector_runs"
started=$SECONDS

say() { printf '[test %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
step() {  # step NAME COMMAND...: run it, print its time, stop at its failure
  local name=$1 t0=$SECONDS rc=0
  shift
  say "$name: $*"
  "$@" || rc=$?
  say "$name: $( ((rc == 0)) && echo ok || echo "FAILED (exit $rc)") in $((SECONDS - t0))s"
  ((rc == 0)) || { say "total $((SECONDS - started))s"; exit "$rc"; }
}

stack_up=0
cluster_ours=0
cleanup() {  # whatever this run started is stopped, however it ends
  if ((stack_up)); then bash stack/down.sh || true; fi
  if ((cluster_ours)); then "$MAKE_CMD" --no-print-directory k8s-down || true; fi
}
trap cleanup EXIT

suite() {
  stack_up=1
  bash stack/up.sh || return $?
  local rc=0
  RAGSWEEP_REQUIRE_STACK=1 RAGSWEEP_REQUIRE_K8S=1 "$PY" -m pytest -q -m "not cluster" || rc=$?
  bash stack/down.sh || true
  stack_up=0
  return "$rc"
}

cluster() {
  "$MAKE_CMD" --no-print-directory images || return $?
  local left scope=()
  bash stack/k8s/cluster.sh status >/dev/null 2>&1 || cluster_ours=1
  "$MAKE_CMD" --no-print-directory k8s-up || return $?
  left=$((BUDGET - (SECONDS - started)))
  if ((left >= FULL_S)); then
    say "cluster: every test (${left}s left of ${BUDGET}s; the file takes about ${FULL_S}s)"
  else
    say "cluster: the smaller scope ($CLUSTER_SMALL): ${left}s left of ${BUDGET}s, under the ${FULL_S}s every test takes"
    scope=(-k "$CLUSTER_SMALL")
  fi
  RAGSWEEP_K8S_CLUSTER=1 RAGSWEEP_REQUIRE_K8S=1 "$PY" -m pytest -q -rP -p no:cacheprovider --durations=0 tests/test_k8s_cluster.py \
    "${scope[@]}"
}

STEPS=" ${RAGSWEEP_TEST_STEPS:-tools suite baseline cluster} "
[[ $STEPS == *" tools "* ]] && step tools "$MAKE_CMD" --no-print-directory k8s-tools k8s-apiserver-tools
[[ $STEPS == *" suite "* ]] && step suite suite
[[ $STEPS == *" baseline "* ]] && step baseline "$PY" -m jobs.baselines check --ci
if [[ $STEPS == *" cluster "* && $(id -u) != 0 ]]; then
  say "cluster: not run: the single-node cluster needs root (containerd, runc, iptables); run make test as root"
elif [[ $STEPS == *" cluster "* ]]; then
  step cluster cluster
fi
say "total $((SECONDS - started))s"
