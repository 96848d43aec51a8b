# shellcheck shell=bash
# Sourced: RAGSWEEP_MACHINE_CACHE, where what is built once per machine lives, outside every clone (issue 35):
# the Kubernetes tools (stack/k8s/tools-cache.sh), the image registry's storage (stack/registry.sh) and
# the wheels the images install (images/build.sh). Default /var/cache/ragsweep for root, else
# ${XDG_CACHE_HOME:-~/.cache}/ragsweep. Each is keyed by its pinned inputs, so clones of different
# commits share it safely.
if [[ -z ${RAGSWEEP_MACHINE_CACHE:-} ]]; then
  if [[ $(id -u) == 0 ]]; then
    RAGSWEEP_MACHINE_CACHE=/var/cache/ragsweep
  else
    RAGSWEEP_MACHINE_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/ragsweep
  fi
fi
export RAGSWEEP_MACHINE_CACHE
