#!/usr/bin/env bash
# `make test` (and so .ci/run) and `make test-all`: the tests, with the services and clusters they need.
#
#   1. tools    the Kubernetes binaries: helm (make k8s-tools) for the chart's tests, the test bed's and the
#               node's (make k8s-apiserver-tools), built when missing, once per machine, into the machine's
#               tools cache keyed by their pinned versions (docs/cluster.md, "Built once per machine"): 10-35
#               minutes on 2 cores the first time, nothing after. A failed build stops the run with its code.
#               With RAGSWEEP_TEST_BUILD=0 it builds only helm and uses the others only if the cache holds
#               them (make k8s-tools-cached); when it does not, it says so, the test bed's tests skip saying
#               why, and the cluster step is not run.
#   2. suite    pytest against the local stack (stack/up.sh, stopped after; nginx installed as root for the
#               chart's OpenSearch proxy tests), the test bed's tests
#               (tests/test_k8s_live.py) among them: required (RAGSWEEP_REQUIRE_K8S=1, a missing binary
#               fails) when step 1 found or built the tools
#   3. baseline jobs.baselines check --ci
#   4. cluster  the single-node cluster's tests in containers (tests/test_k8s_cluster.py): make images (builds
#               only what changed: 6-14 minutes once per machine, seconds after), make k8s-up, the tests, then
#               make k8s-down unless the cluster was already up. Needs root (containerd, runc, iptables); as
#               another user it says so and is not run. make test runs the smoke scope (the tests marked
#               cluster_smoke: the chart installed and a corpus injected, every pod from a pinned digest, the
#               release's OpenSearch password, a two-arm sweep and its collector as Jobs); make test-all runs
#               every test (RAGSWEEP_CLUSTER_SCOPE=all, about 30 minutes on 2 cores).
#
# Time, measured on 2-core machines from fresh clones (.ci/run): on one that had built nothing, 76.5 minutes
# (2026-12-07: the tools 21 of them, the images 13), within CI's 90; after that 21 minutes on the machine of
# 2026-12-06 and 40 on the slower one of 2026-12-07 (the suite alone 28 there).
#
# RAGSWEEP_TEST_STEPS: the steps to run (default "tools suite baseline cluster").
# Each step prints its time; the last line is the whole run's. Exit: the first failing step's code.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PY:-.venv/bin/python}
MAKE_CMD=${MAKE:-make}
BUILD=${RAGSWEEP_TEST_BUILD:-1}
[[ $BUILD == 0 || $BUILD == 1 ]] || { echo "test: RAGSWEEP_TEST_BUILD must be 0 or 1, not '$BUILD'" >&2; exit 2; }
SCOPE=${RAGSWEEP_CLUSTER_SCOPE:-smoke}
[[ $SCOPE == smoke || $SCOPE == all ]] || { echo "test: RAGSWEEP_CLUSTER_SCOPE must be smoke or all, not '$SCOPE'" >&2; exit 2; }
k8s_ready=0
tools_checked=0  # the tools step ran: k8s_ready is its answer
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
  # nginx: the chart's OpenSearch proxy run for real (tests/test_opensearch_proxy.py), Debian 12's as in the image
  if [[ $(id -u) == 0 ]]; then (source stack/apt.sh && apt_ensure /usr/sbin/nginx:nginx) || return $?; fi
  stack_up=1
  bash stack/up.sh || return $?
  local rc=0
  RAGSWEEP_REQUIRE_STACK=1 RAGSWEEP_REQUIRE_K8S=$k8s_ready "$PY" -m pytest -q -rs -m "not cluster" || rc=$?
  bash stack/down.sh || true
  stack_up=0
  return "$rc"
}

tools() {
  tools_checked=1
  if ((BUILD)); then
    "$MAKE_CMD" --no-print-directory k8s-tools k8s-apiserver-tools || return $?
    if ! "$MAKE_CMD" --no-print-directory k8s-tools-cached; then
      say "tools: built, but make k8s-tools-cached does not find them in this machine's cache"
      return 1
    fi
  else
    "$MAKE_CMD" --no-print-directory k8s-tools || return $?  # helm only: the chart's tests
    if ! "$MAKE_CMD" --no-print-directory k8s-tools-cached; then
      say "tools: not in this machine's cache, and not built (RAGSWEEP_TEST_BUILD=0): the Kubernetes tests skip;" \
        "make test without it (or make k8s-apiserver-tools k8s-tools, once per machine) builds them (10-35 minutes on 2 cores)"
      return 0
    fi
  fi
  k8s_ready=1
}

cluster() {
  local select=()
  [[ $SCOPE == smoke ]] && select=(-m cluster_smoke)
  "$MAKE_CMD" --no-print-directory images || return $?
  "$MAKE_CMD" --no-print-directory k8s-status >/dev/null 2>&1 || cluster_ours=1
  "$MAKE_CMD" --no-print-directory k8s-up || return $?
  RAGSWEEP_K8S_CLUSTER=1 RAGSWEEP_REQUIRE_K8S=1 "$PY" -m pytest -q -rP -p no:cacheprovider --durations=0 \
    "${select[@]}" tests/test_k8s_cluster.py
}

STEPS=" ${RAGSWEEP_TEST_STEPS:-tools suite baseline cluster} "
[[ $STEPS == *" tools "* ]] && step tools tools
[[ $STEPS == *" suite "* ]] && step suite suite
[[ $STEPS == *" baseline "* ]] && step baseline "$PY" -m jobs.baselines check --ci
if [[ $STEPS == *" cluster "* ]]; then
  if [[ $(id -u) != 0 ]]; then
    say "cluster: not run: the single-node cluster needs root (containerd, runc, iptables); run it as root"
  elif ((k8s_ready == 0 && BUILD == 0)) \
      && { ((tools_checked)) || ! "$MAKE_CMD" --no-print-directory k8s-tools-cached >/dev/null 2>&1; }; then
    say "cluster: not run: the node's binaries are not in this machine's cache (RAGSWEEP_TEST_BUILD=0; make test without it builds them, once per machine)"
  else
    step cluster cluster
  fi
fi
say "total $((SECONDS - started))s"
