#!/usr/bin/env bash
# The machine's cache of the Kubernetes tools (issue 35): built once per machine for each set of pinned
# inputs, outside every clone, so a fresh clone (CI's) finds them instead of building them for 35 minutes.
#
#   stack/k8s/tools-cache.sh key    the key: sha256 of what the binaries are built from (stack/k8s/versions.env,
#                                   the wrapper modules under stack/k8s/testbed, build-tools.sh, HELM_VERSION,
#                                   `go version`, the machine's architecture)
#   stack/k8s/tools-cache.sh dir    this key's folder: $RAGSWEEP_TOOLS_CACHE/<key 16> (the binaries in bin/)
#   stack/k8s/tools-cache.sh link   make var/tools/bin a link to <dir>/bin (the folder made if missing)
#
# RAGSWEEP_TOOLS_CACHE: default $RAGSWEEP_MACHINE_CACHE/k8s-tools (stack/machine-cache.sh: /var/cache/ragsweep
# for root, else ~/.cache/ragsweep). A checkout whose var/tools/bin is a folder of its own (built
# before this cache) keeps it as var/tools/bin.local and links the cache's. HELM_VERSION comes from the
# environment (Makefile.k8s passes its own). Exit 2: no Go on PATH (it is part of the key).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_SRC=$ROOT/stack/k8s

# shellcheck source=../machine-cache.sh
source "$ROOT/stack/machine-cache.sh"
CACHE=${RAGSWEEP_TOOLS_CACHE:-$RAGSWEEP_MACHINE_CACHE/k8s-tools}

key() {
  command -v go >/dev/null || { echo "tools-cache: needs Go on PATH (its version is part of the key)" >&2; exit 2; }
  {
    (cd "$K8S_SRC" && find versions.env build-tools.sh testbed -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    printf 'helm %s\n' "${HELM_VERSION:?HELM_VERSION unset (Makefile.k8s sets it)}"
    go version
    uname -m
  } | sha256sum | cut -c1-64
}

case "${1:-}" in
  key) key ;;
  dir) printf '%s/%s\n' "$CACHE" "$(key | cut -c1-16)" ;;
  link)
    dir="$CACHE/$(key | cut -c1-16)"
    mkdir -p "$dir/bin" "$ROOT/var/tools"
    link=$ROOT/var/tools/bin
    if [[ -L $link ]]; then
      [[ $(readlink "$link") == "$dir/bin" ]] && exit 0
      rm -f "$link"
    elif [[ -e $link ]]; then
      rm -rf "$link.local"
      mv "$link" "$link.local"
      echo "tools-cache: var/tools/bin was this checkout's own folder; kept as var/tools/bin.local" >&2
    fi
    ln -s "$dir/bin" "$link"
    echo "tools-cache: var/tools/bin -> $dir/bin" >&2
    ;;
  *) sed -n '2,14s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
