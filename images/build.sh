#!/usr/bin/env bash
# Build the ragsweep images and print the digests the chart pins.
#
#   images/build.sh                      build cpu+gpu, targets worker and scoring (local tags)
#   REGISTRY=registry.example.com/ragsweep images/build.sh --push
#                                        build, push, print `--set images.*.digest=` lines
#   images/build.sh --only cpu           one Dockerfile
#   images/build.sh --check-pins         only re-resolve the base images and compare the pins
#
# Needs a container engine: docker (with a reachable daemon), podman or buildah. None is
# installed on the project's dev machines, so there this script stops with exit 3 and says so.
# Exit codes: 0 ok, 2 usage, 3 no usable engine, 4 a base image pin does not match its tag.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REGISTRY=${REGISTRY:-localhost/ragsweep}
TAG=${TAG:-$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml")}
PUSH=0
ONLY="cpu gpu"
CHECK_ONLY=0

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --push) PUSH=1 ;;
    --only) shift; ONLY=${1:?--only needs cpu or gpu} ;;
    --check-pins) CHECK_ONLY=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

engine=""
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  engine=docker
elif command -v podman >/dev/null 2>&1 && podman info >/dev/null 2>&1; then
  engine=podman
elif command -v buildah >/dev/null 2>&1; then
  engine=buildah
fi
if [[ -z "$engine" ]]; then
  why=""
  if command -v docker >/dev/null 2>&1; then
    why=" (a docker client is installed, but no daemon answers: $( (docker info 2>&1 || true) | grep -m1 -iE 'cannot connect|error' || echo 'docker info failed'))"
  fi
  cat >&2 <<MSG
build.sh: no usable container engine: need docker with a running daemon, podman or buildah${why}.
  The images cannot be built on this machine. Build them where an engine runs (CI with
  docker, a workstation), push them, and install the chart with the digests this script
  prints there:  --set images.cpu.digest=sha256:... --set images.worker.digest=sha256:... --set images.gpu.digest=sha256:...
MSG
  exit 3
fi

# The base image pins, read from the Dockerfiles' ARG lines.
pin_of() { sed -n "s/^ARG $2=//p" "$ROOT/images/$1"; }
check_pin() {
  local ref=$1 tag=${1%@*} want=${1#*@} got=""
  case "$engine" in
    docker) got=$(docker buildx imagetools inspect "$tag" --format '{{json .Manifest.Digest}}' 2>/dev/null | tr -d '"') ;;
    podman|buildah) got=$(skopeo inspect --format '{{.Digest}}' "docker://$tag" 2>/dev/null || true) ;;
  esac
  if [[ -z "$got" ]]; then
    echo "build.sh: could not resolve $tag to check its pin; building with the pinned digest as written" >&2
  elif [[ "$got" != "$want" ]]; then
    echo "build.sh: $tag now resolves to $got, the Dockerfile pins $want." >&2
    echo "  The tag moved. Review the new base, then update the ARG line (or build with the old digest, which still pulls)." >&2
    [[ "${ALLOW_MOVED_TAG:-0}" == 1 ]] || exit 4
  else
    echo "pin ok: $ref"
  fi
}
check_pin "$(pin_of Dockerfile.cpu PYTHON_BASE)"
[[ " $ONLY " == *" gpu "* ]] && check_pin "$(pin_of Dockerfile.gpu CUDA_BASE)"
[[ $CHECK_ONLY == 1 ]] && exit 0

build() {  # build <dockerfile> <target> <image>
  case "$engine" in
    docker) docker build -f "$ROOT/images/$1" --target "$2" -t "$3" "$ROOT" ;;
    podman) podman build -f "$ROOT/images/$1" --target "$2" -t "$3" "$ROOT" ;;
    buildah) buildah bud -f "$ROOT/images/$1" --target "$2" -t "$3" "$ROOT" ;;
  esac
}
digest_of() {  # the registry digest after a push
  case "$engine" in
    docker) docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$1" | sed -n 's/.*@//p' | head -1 ;;
    podman|buildah) "$engine" inspect --format '{{.Digest}}' "$1" ;;
  esac
}

declare -A values=( [cpu:scoring]=images.cpu [cpu:worker]=images.worker [gpu:scoring]=images.gpu )
sets=()
for kind in $ONLY; do
  for target in worker scoring; do
    key="$kind:$target"
    [[ -n "${values[$key]:-}" ]] || continue
    image="$REGISTRY/ragsweep-$kind-$target:$TAG"
    echo "== building $image ($kind, target $target) with $engine"
    build "Dockerfile.$kind" "$target" "$image"
    if [[ $PUSH == 1 ]]; then
      "$engine" push "$image"
      sets+=("--set ${values[$key]}.repository=${image%:*} --set ${values[$key]}.digest=$(digest_of "$image")")
    fi
  done
done
if [[ $PUSH == 1 ]]; then
  echo "# pin these in the chart (helm install ... or a values file):"
  printf '%s \\\n' "${sets[@]}"
else
  echo "built locally; run again with --push (and REGISTRY=...) to get the digests the chart pins"
fi
