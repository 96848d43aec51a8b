# shellcheck shell=bash
# Debian packages a script needs, installed when missing. Sourced by stack/lib.sh,
# stack/k8s/cluster.sh and images/build.sh: a fresh machine has none of buildah, containerd,
# runc, iptables or the CNI plugins, and every script that needs one installs it itself.

# apt_ensure COMMAND:PACKAGE...: install each PACKAGE whose COMMAND (a name on PATH, or an
# absolute path glob) is missing, in one apt-get run. As root it fetches the package lists
# first when apt does not know a package (a fresh machine has none); otherwise it names what
# to install. Returns 1, with one line on stderr, when something stays missing.
apt_ensure() {
  local pair cmd pkg
  local -a missing=()
  for pair in "$@"; do
    cmd=${pair%%:*} pkg=${pair#*:}
    if [[ $cmd == /* ]]; then compgen -G "$cmd" >/dev/null && continue; else command -v "$cmd" >/dev/null && continue; fi
    [[ " ${missing[*]} " == *" $pkg "* ]] || missing+=("$pkg")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ $EUID -ne 0 ]]; then
    printf 'missing Debian packages: %s (sudo apt-get install -y %s)\n' "${missing[*]}" "${missing[*]}" >&2
    return 1
  fi
  printf '[apt %s] installing Debian packages: %s\n' "$(date +%H:%M:%S)" "${missing[*]}" >&2
  apt-cache show "${missing[@]}" >/dev/null 2>&1 || apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
    || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; } \
    || { printf 'apt-get install %s failed\n' "${missing[*]}" >&2; return 1; }
}
