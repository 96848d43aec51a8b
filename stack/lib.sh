# shellcheck shell=bash
# Helpers for the local production-shaped stack: OpenSearch, PostgreSQL, Redis and an
# S3-compatible server (S3Proxy), all on 127.0.0.1, all state under one folder.
# Sourced by stack/up.sh, stack/down.sh, stack/status.sh and stack/celery.sh.

STACK_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$STACK_SRC/.." && pwd)"

# shellcheck source=versions.env
source "$STACK_SRC/versions.env"
# shellcheck source=proc.sh
source "$STACK_SRC/proc.sh"
# shellcheck source=apt.sh
source "$STACK_SRC/apt.sh"

# shellcheck disable=SC2034 # used by up.sh
STACK_ALL_SERVICES=(postgres redis s3 opensearch)

# --------------------------------------------------------------------------- basics

stack_log() { printf '[stack %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
stack_die() { printf '[stack] error: %s\n' "$*" >&2; exit 1; }

is_root() { [[ $EUID -eq 0 ]]; }

# Absolute path without requiring it to exist.
abspath() {
  case "$1" in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$(pwd)" "$1" ;;
  esac
}

stack_defaults() {
  STACK_DIR="$(abspath "${RAGSWEEP_STACK_DIR:-$REPO_ROOT/var/stack}")"
  STACK_CACHE="$(abspath "${RAGSWEEP_STACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragsweep-stack}")"
  STACK_ENV_FILE="$STACK_DIR/stack.env"
  STACK_MARKER="$STACK_DIR/.ragsweep-stack"

  OS_PORT="${RAGSWEEP_OPENSEARCH_PORT:-9200}"
  OS_TRANSPORT_PORT="${RAGSWEEP_OPENSEARCH_TRANSPORT_PORT:-9300}"
  OS_HEAP="${RAGSWEEP_OPENSEARCH_HEAP:-1g}"
  OS_TIMEOUT="${RAGSWEEP_OPENSEARCH_TIMEOUT:-240}"
  PG_PORT="${RAGSWEEP_PG_PORT:-5433}"
  PG_USER="${RAGSWEEP_PG_USER:-ragsweep}"
  PG_PASSWORD="${RAGSWEEP_PG_PASSWORD:-ragsweep}"
  PG_DB="${RAGSWEEP_PG_DB:-ragsweep}"
  REDIS_PORT="${RAGSWEEP_REDIS_PORT:-6380}"
  S3_PORT="${RAGSWEEP_S3_PORT:-9000}"
  S3_BUCKET="${RAGSWEEP_S3_BUCKET:-ragsweep}"
  # Credentials of the local S3Proxy only; never real cloud credentials.
  S3_ACCESS_KEY="${RAGSWEEP_S3_ACCESS_KEY:-ragsweep-local}"
  S3_SECRET_KEY="${RAGSWEEP_S3_SECRET_KEY:-ragsweep-local-secret}"
  S3_REGION="${RAGSWEEP_S3_REGION:-us-east-1}"

  # OpenSearch refuses to run as root, so as root it runs as a system user of its own.
  if is_root; then
    OS_USER="${RAGSWEEP_STACK_USER:-ragsweep-stack}"
    PG_OS_USER=postgres
  else
    OS_USER="$(id -un)"
    PG_OS_USER="$(id -un)"
  fi

  local p
  for p in "$OS_PORT" "$OS_TRANSPORT_PORT" "$PG_PORT" "$REDIS_PORT" "$S3_PORT"; do
    if ! [[ $p =~ ^[0-9]+$ ]] || ((p < 1 || p > 65535)); then
      stack_die "port '$p' is not a number in 1-65535"
    fi
  done
  [[ $S3_BUCKET =~ ^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$ ]] \
    || stack_die "RAGSWEEP_S3_BUCKET='$S3_BUCKET' is not a valid S3 bucket name"
  [[ $PG_USER =~ ^[a-z_][a-z0-9_]*$ && $PG_DB =~ ^[a-z_][a-z0-9_]*$ ]] \
    || stack_die "RAGSWEEP_PG_USER and RAGSWEEP_PG_DB must be lower-case SQL identifiers"
  # These go into a DSN URL and a KEY=VALUE file unquoted: URL-safe characters only.
  local v
  for v in PG_PASSWORD S3_ACCESS_KEY S3_SECRET_KEY S3_REGION; do
    [[ ${!v} =~ ^[A-Za-z0-9._~-]+$ ]] || stack_die "RAGSWEEP_$v may hold only letters, digits and . _ ~ -"
  done
}

# Mark STACK_DIR as a stack folder (only a marked folder is ever purged).
stack_mark() {
  mkdir -p "$STACK_DIR"
  [[ -e $STACK_MARKER ]] || printf 'ragsweep local stack; created %s\n' "$(date -u +%FT%TZ)" >"$STACK_MARKER"
}

# Take the stack lock (one up/down at a time per stack folder).
stack_lock() {
  exec 9>"$STACK_DIR/.lock"
  flock -w 900 9 || stack_die "another stack command holds $STACK_DIR/.lock"
}

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Refuse to start a service whose port is taken by something that is not ours.
require_free_port() {
  local name=$1 port=$2 var=$3
  if port_open "$port"; then
    stack_die "$name: 127.0.0.1:$port is already in use by another process; stop it or set $var"
  fi
}

# run_as USER CMD...: run CMD as USER (plain exec when USER is the caller).
run_as() {
  local user=$1
  shift
  if [[ $user == "$(id -un)" ]]; then
    "$@"
  else
    runuser -u "$user" -- "$@"
  fi
}

# The service user must reach PATH (every parent folder traversable).
require_reachable() {
  local user=$1 path=$2
  run_as "$user" test -r "$path" \
    || stack_die "user '$user' cannot read $path; put RAGSWEEP_STACK_DIR under a folder every user can traverse (not under /root)"
}

ensure_os_user() {
  is_root || return 0
  id "$OS_USER" >/dev/null 2>&1 && return 0
  stack_log "creating system user $OS_USER for OpenSearch (it refuses to run as root)"
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin "$OS_USER"
}

# ensure_debian_pkg COMMAND PACKAGE: install PACKAGE from Debian when COMMAND is missing (stack/apt.sh).
ensure_debian_pkg() { apt_ensure "$1:$2" || stack_die "$1 not found and Debian package '$2' not installed"; }

# java_major JAVA_HOME: the feature release number of that JDK/JRE, or nothing.
java_major() {
  local home=$1 v
  [[ -x $home/bin/java ]] || return 0
  if [[ -r $home/release ]]; then
    v="$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$home/release")"
  fi
  if [[ -z ${v:-} ]]; then
    v="$("$home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p')"
  fi
  printf '%s' "$v"
}

# find_java_home MIN_MAJOR PREFERRED...: first JDK whose major version is >= MIN_MAJOR.
find_java_home() {
  local min=$1 cand major
  shift
  local -a cands=("$@")
  if command -v java >/dev/null; then
    cands+=("$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")")
  fi
  for cand in /usr/lib/jvm/*; do cands+=("$cand"); done
  for cand in "${cands[@]}"; do
    [[ -n $cand ]] || continue
    major="$(java_major "$cand")"
    if [[ -n $major ]] && ((major >= min)); then
      printf '%s\n' "$cand"
      return 0
    fi
  done
  return 1
}

# ------------------------------------------------------------------ Maven artefacts

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# maven_fetch COORD VERSION SHA256: print the path of the verified artefact in the cache.
# COORD is group:artifact:extension[:classifier]. Maven (the registry's own client)
# downloads it with --strict-checksums, so the registry's .sha1 is checked where one
# is published; where the registry publishes none, Maven's refusal is logged and the
# pinned sha256 is the only check. The pinned sha256 is always checked.
maven_fetch() {
  local coord=$1 version=$2 want=$3
  local group artifact ext classifier file path repo="$STACK_CACHE/m2" out got
  IFS=: read -r group artifact ext classifier <<<"$coord"
  file="$artifact-$version${classifier:+-$classifier}.$ext"
  path="$repo/${group//.//}/$artifact/$version/$file"
  if [[ -f $path ]]; then
    got="$(sha256_of "$path")"
    if [[ $got == "$want" ]]; then
      printf '%s\n' "$path"
      return 0
    fi
    stack_log "cached $file has sha256 $got, pinned $want: fetching again"
    rm -f "$path"
  fi
  command -v mvn >/dev/null || ensure_debian_pkg mvn maven
  local -a mvn_cmd=(mvn -B -q -Dstyle.color=never "-Dmaven.repo.local=$repo"
    "org.apache.maven.plugins:maven-dependency-plugin:$MAVEN_DEPENDENCY_PLUGIN_VERSION:get"
    "-Dartifact=$group:$artifact:$version:$ext${classifier:+:$classifier}" -Dtransitive=false)
  mkdir -p "$repo"
  stack_log "fetching $group:$artifact:$version ($ext${classifier:+, $classifier}) from Maven Central"
  if ! out="$(cd "$repo" && "${mvn_cmd[0]}" --strict-checksums "${mvn_cmd[@]:1}" 2>&1)"; then
    if grep -q 'no checksums available' <<<"$out"; then
      stack_log "$file: the registry publishes no checksum file (Maven: 'Checksum validation failed, no checksums available'); relying on the pinned sha256"
      out="$(cd "$repo" && "${mvn_cmd[@]}" 2>&1)" || { printf '%s\n' "$out" >&2; stack_die "could not fetch $coord:$version"; }
    else
      printf '%s\n' "$out" >&2
      stack_die "could not fetch $coord:$version"
    fi
  fi
  [[ -f $path ]] || stack_die "Maven reported success but $path is missing"
  got="$(sha256_of "$path")"
  if [[ $got != "$want" ]]; then
    rm -f "$path"
    stack_die "$file: sha256 $got does not match the pin $want in stack/versions.env"
  fi
  printf '%s\n' "$path"
}

# ----------------------------------------------------------------------- PostgreSQL

pg_bindir() {
  local d
  d="$(compgen -G '/usr/lib/postgresql/*/bin' | sort -V | tail -n 1 || true)"
  [[ -n $d && -x $d/pg_ctl ]] || return 1
  printf '%s\n' "$d"
}

pg_paths() {
  PG_ROOT="$STACK_DIR/postgres"
  PG_DATA="$PG_ROOT/data"
  PG_SOCK="$PG_ROOT/run"
  PG_LOG="$PG_ROOT/postgres.log"
}

pg_ensure_installed() {
  pg_bindir >/dev/null || { ensure_debian_pkg '/usr/lib/postgresql/*/bin/pg_ctl' postgresql; pg_bindir >/dev/null; } \
    || stack_die "PostgreSQL server binaries not found under /usr/lib/postgresql"
}

pg_is_running() {
  pg_paths
  local bin
  bin="$(pg_bindir)" || return 1
  [[ -f $PG_DATA/postmaster.pid ]] || return 1
  run_as "$PG_OS_USER" "$bin/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1
}

pg_psql() {
  local bin
  bin="$(pg_bindir)"
  run_as "$PG_OS_USER" "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres -Atc "$1"
}

pg_start() {
  pg_ensure_installed
  pg_paths
  local bin
  bin="$(pg_bindir)"
  mkdir -p "$PG_ROOT"
  if is_root; then chown "$PG_OS_USER": "$PG_ROOT"; fi
  chmod 0700 "$PG_ROOT"
  require_reachable "$PG_OS_USER" "$PG_ROOT"
  if [[ ! -s $PG_DATA/PG_VERSION ]]; then
    stack_log "postgres: initdb in $PG_DATA"
    run_as "$PG_OS_USER" mkdir -p "$PG_DATA" "$PG_SOCK"
    run_as "$PG_OS_USER" "$bin/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
      --auth-local=trust --auth-host=scram-sha-256 >"$PG_ROOT/initdb.log" 2>&1 \
      || { cat "$PG_ROOT/initdb.log" >&2; stack_die "postgres: initdb failed"; }
  fi
  run_as "$PG_OS_USER" mkdir -p "$PG_SOCK"
  if pg_is_running; then
    stack_log "postgres: already running (data $PG_DATA)"
  else
    require_free_port postgres "$PG_PORT" RAGSWEEP_PG_PORT
    stack_log "postgres: starting on 127.0.0.1:$PG_PORT"
    run_as "$PG_OS_USER" "$bin/pg_ctl" start -D "$PG_DATA" -w -t 60 -l "$PG_LOG" \
      -o "-c listen_addresses=127.0.0.1 -c port=$PG_PORT -c unix_socket_directories=$PG_SOCK" >/dev/null 9>&- \
      || { tail -n 40 "$PG_LOG" >&2; stack_die "postgres: failed to start (log above: $PG_LOG)"; }
  fi
  # Role and database: created once, password kept in step with the environment.
  if [[ -z $(pg_psql "SELECT 1 FROM pg_roles WHERE rolname = '$PG_USER'") ]]; then
    pg_psql "CREATE ROLE $PG_USER LOGIN PASSWORD '$PG_PASSWORD'"
  else
    pg_psql "ALTER ROLE $PG_USER LOGIN PASSWORD '$PG_PASSWORD'"
  fi
  if [[ -z $(pg_psql "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'") ]]; then
    pg_psql "CREATE DATABASE $PG_DB OWNER $PG_USER"
  fi
}

pg_stop() {
  pg_paths
  if pg_is_running; then
    stack_log "postgres: stopping"
    run_as "$PG_OS_USER" "$(pg_bindir)/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60 >/dev/null
  else
    stack_log "postgres: not running"
  fi
}

pg_status() {
  pg_paths
  if pg_is_running && pg_isready -q -h 127.0.0.1 -p "$PG_PORT"; then
    printf 'postgres    up    127.0.0.1:%s  db=%s  %s\n' "$PG_PORT" "$PG_DB" \
      "$(pg_psql 'SHOW server_version' 2>/dev/null || echo '?')"
  else
    printf 'postgres    down  127.0.0.1:%s\n' "$PG_PORT"
    return 1
  fi
}

pg_version() { "$(pg_bindir)/postgres" --version | awk '{print $3}'; }

# ---------------------------------------------------------------------------- Redis

redis_paths() {
  REDIS_ROOT="$STACK_DIR/redis"
  REDIS_PID="$REDIS_ROOT/redis.pid"
}

redis_start() {
  ensure_debian_pkg redis-server redis-server
  redis_paths
  mkdir -p "$REDIS_ROOT"
  if pid_running "$REDIS_PID" redis-server; then
    stack_log "redis: already running"
    return 0
  fi
  require_free_port redis "$REDIS_PORT" RAGSWEEP_REDIS_PORT
  stack_log "redis: starting on 127.0.0.1:$REDIS_PORT"
  # A cache and a Celery broker for one sweep: no snapshots, no append-only file.
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --protected-mode yes \
    --daemonize yes --pidfile "$REDIS_PID" --logfile "$REDIS_ROOT/redis.log" \
    --dir "$REDIS_ROOT" --save '' --appendonly no 9>&- \
    || stack_die "redis: failed to start (log: $REDIS_ROOT/redis.log)"
  local i
  for ((i = 0; i < 100; i++)); do
    [[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]] && return 0
    sleep 0.1
  done
  tail -n 30 "$REDIS_ROOT/redis.log" >&2
  stack_die "redis: no PONG on 127.0.0.1:$REDIS_PORT after 10s"
}

redis_stop() {
  redis_paths
  stop_pid redis "$REDIS_PID" redis-server 30
}

redis_status() {
  redis_paths
  if pid_running "$REDIS_PID" redis-server \
    && [[ $(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]; then
    printf 'redis       up    127.0.0.1:%s  %s\n' "$REDIS_PORT" \
      "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info server | sed -n 's/^redis_version:\(.*\)\r$/redis \1/p')"
  else
    printf 'redis       down  127.0.0.1:%s\n' "$REDIS_PORT"
    return 1
  fi
}

redis_version() { redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p'; }

# ------------------------------------------------------------------- S3 (S3Proxy)

s3_paths() {
  S3_ROOT="$STACK_DIR/s3"
  S3_PID="$S3_ROOT/s3proxy.pid"
  S3_CONF="$S3_ROOT/s3proxy.conf"
}

s3_java() {
  local j
  j="$(find_java_home 17 "${RAGSWEEP_S3PROXY_JAVA_HOME:-}")" \
    || stack_die "S3Proxy $S3PROXY_VERSION needs Java 17 or newer; none found (apt-get install openjdk-17-jre-headless)"
  printf '%s\n' "$j"
}

# s3_curl METHOD PATH: a SigV4-signed request with an empty body to the local S3 server;
# prints the HTTP code. The payload hash is given explicitly: the header curl 7.88
# computes by itself is refused (XAmzContentSHA256Mismatch).
S3_EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_curl() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X "$1" \
    --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
    -H "x-amz-content-sha256: $S3_EMPTY_SHA256" \
    "http://127.0.0.1:$S3_PORT/$2" || true
}

s3_start() {
  s3_paths
  mkdir -p "$S3_ROOT/data"
  local jar java_home
  if pid_running "$S3_PID" s3proxy; then
    stack_log "s3: S3Proxy already running"
    return 0
  fi
  require_free_port s3 "$S3_PORT" RAGSWEEP_S3_PORT
  jar="$(maven_fetch "$S3PROXY_COORD" "$S3PROXY_VERSION" "$SHA256_S3PROXY")"
  java_home="$(s3_java)"
  cat >"$S3_CONF" <<EOF
# written by stack/lib.sh at every start
s3proxy.endpoint=http://127.0.0.1:$S3_PORT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$S3_ACCESS_KEY
s3proxy.credential=$S3_SECRET_KEY
jclouds.provider=filesystem
jclouds.filesystem.basedir=$S3_ROOT/data
EOF
  chmod 0600 "$S3_CONF"
  stack_log "s3: starting S3Proxy $S3PROXY_VERSION (filesystem backend) on 127.0.0.1:$S3_PORT with $java_home"
  : >"$S3_ROOT/s3proxy.log"
  (cd "$S3_ROOT" && start_detached "$S3_PID" "$S3_ROOT/s3proxy.log" \
    "$java_home/bin/java" -Xmx256m -jar "$jar" --properties "$S3_CONF") \
    || stack_die "s3: S3Proxy did not start (log $S3_ROOT/s3proxy.log)"
}

s3_wait() {
  s3_paths
  local i code
  for ((i = 0; i < 300; i++)); do
    pid_running "$S3_PID" s3proxy || { tail -n 40 "$S3_ROOT/s3proxy.log" >&2; stack_die "s3: S3Proxy exited during start-up"; }
    port_open "$S3_PORT" && break
    sleep 0.2
  done
  port_open "$S3_PORT" || { tail -n 40 "$S3_ROOT/s3proxy.log" >&2; stack_die "s3: nothing listens on 127.0.0.1:$S3_PORT after 60s"; }
  code="$(s3_curl HEAD "$S3_BUCKET")"
  if [[ $code != 200 ]]; then
    code="$(s3_curl PUT "$S3_BUCKET")"
    [[ $code == 200 || $code == 409 ]] || stack_die "s3: creating bucket $S3_BUCKET answered HTTP $code"
    stack_log "s3: bucket $S3_BUCKET created"
  fi
  code="$(s3_curl HEAD "$S3_BUCKET")"
  [[ $code == 200 ]] || stack_die "s3: bucket $S3_BUCKET answers HTTP $code to HEAD"
}

s3_stop() {
  s3_paths
  stop_pid s3 "$S3_PID" s3proxy 30
}

s3_status() {
  s3_paths
  if pid_running "$S3_PID" s3proxy && [[ $(s3_curl HEAD "$S3_BUCKET") == 200 ]]; then
    printf 's3          up    127.0.0.1:%s  bucket=%s  S3Proxy %s\n' "$S3_PORT" "$S3_BUCKET" "$S3PROXY_VERSION"
  else
    printf 's3          down  127.0.0.1:%s\n' "$S3_PORT"
    return 1
  fi
}

# ----------------------------------------------------------------------- OpenSearch

os_paths() {
  OS_ROOT="$STACK_DIR/opensearch"
  OS_HOME="$OS_ROOT/home"
  OS_CONF="$OS_ROOT/config"
  OS_DATA="$OS_ROOT/data"
  OS_LOGS="$OS_ROOT/logs"
  OS_TMP="$OS_ROOT/tmp"
  OS_RUN="$OS_ROOT/run"
  OS_PID="$OS_RUN/opensearch.pid"
  OS_URL="http://127.0.0.1:$OS_PORT"
}

os_java() {
  local j
  j="$(find_java_home 21 "${RAGSWEEP_OPENSEARCH_JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64)" \
    || stack_die "OpenSearch $OPENSEARCH_VERSION needs Java 21 or newer and none was found under /usr/lib/jvm (Debian 12 has no openjdk-21); set RAGSWEEP_OPENSEARCH_JAVA_HOME"
  printf '%s\n' "$j"
}

# The four plugins, in install order (ML Commons extends job-scheduler; neural-search extends k-NN).
os_plugin_keys() { printf '%s\n' JOB_SCHEDULER KNN ML NEURAL; }

os_install_stamp() {
  local k
  printf 'opensearch=%s dist=%s' "$OPENSEARCH_VERSION" "$SHA256_OPENSEARCH_DIST"
  for k in $(os_plugin_keys); do
    local v="SHA256_OPENSEARCH_$k"
    printf ' %s=%s' "$k" "${!v}"
  done
  printf '\n'
}

# Unpack the distribution and install the plugins into $OS_HOME, once per pinned set.
os_install() {
  os_paths
  local stamp java_home dist k coord_var sha_var tmp
  stamp="$(os_install_stamp)"
  if [[ -f $OS_HOME/.ragsweep-install && $(cat "$OS_HOME/.ragsweep-install") == "$stamp" ]]; then
    return 0
  fi
  ensure_debian_pkg unzip unzip
  java_home="$(os_java)"
  dist="$(maven_fetch "$OPENSEARCH_DIST_COORD" "$OPENSEARCH_VERSION" "$SHA256_OPENSEARCH_DIST")"
  local -a plugin_urls=()
  for k in $(os_plugin_keys); do
    coord_var="OPENSEARCH_${k}_COORD"
    sha_var="SHA256_OPENSEARCH_$k"
    plugin_urls+=("file://$(maven_fetch "${!coord_var}" "$OPENSEARCH_PLUGIN_VERSION" "${!sha_var}")")
  done
  stack_log "opensearch: installing $OPENSEARCH_VERSION with k-NN, ML Commons, job-scheduler and neural-search into $OS_HOME"
  rm -rf "$OS_HOME" "$OS_ROOT/home.tmp"
  tmp="$OS_ROOT/home.tmp"
  mkdir -p "$tmp"
  unzip -q "$dist" -d "$tmp"
  mv "$tmp/opensearch-$OPENSEARCH_VERSION" "$OS_HOME"
  rmdir "$tmp"
  OPENSEARCH_JAVA_HOME="$java_home" "$OS_HOME/bin/opensearch-plugin" install --batch "${plugin_urls[@]}" \
    >"$OS_ROOT/plugin-install.log" 2>&1 \
    || { tail -n 40 "$OS_ROOT/plugin-install.log" >&2; stack_die "opensearch: plugin install failed (log: $OS_ROOT/plugin-install.log)"; }
  chmod -R a+rX "$OS_HOME"
  printf '%s\n' "$stamp" >"$OS_HOME/.ragsweep-install"
}

os_write_config() {
  os_paths
  mkdir -p "$OS_CONF" "$OS_DATA" "$OS_LOGS" "$OS_TMP" "$OS_RUN"
  # log4j2.properties, fips_java.security and any plugin config come from the install.
  cp -a "$OS_HOME/config/." "$OS_CONF/"
  cat >"$OS_CONF/opensearch.yml" <<EOF
# written by stack/lib.sh at every start; edit stack/lib.sh, not this file
cluster.name: ragsweep-stack
node.name: ragsweep-0
path.data: $OS_DATA
path.logs: $OS_LOGS
network.host: 127.0.0.1
http.port: $OS_PORT
transport.port: $OS_TRANSPORT_PORT
discovery.type: single-node
# a disposable test node: a full disk must not turn indices read-only under a sweep
cluster.routing.allocation.disk.threshold_enabled: false
# single node: ML Commons may run models on the data node
plugins.ml_commons.only_run_on_ml_node: false
EOF
  # The shipped jvm.options with our heap and absolute paths for its relative ones.
  sed -e "s|^-Xms.*|-Xms$OS_HEAP|" -e "s|^-Xmx.*|-Xmx$OS_HEAP|" \
    -e "s|HeapDumpPath=data|HeapDumpPath=$OS_DATA|" -e "s|logs/|$OS_LOGS/|g" \
    "$OS_HOME/config/jvm.options" >"$OS_CONF/jvm.options"
  if is_root; then chown -R "$OS_USER": "$OS_CONF" "$OS_DATA" "$OS_LOGS" "$OS_TMP" "$OS_RUN"; fi
}

os_start() {
  os_paths
  if pid_running "$OS_PID" org.opensearch.bootstrap.OpenSearch; then
    stack_log "opensearch: already running"
    return 0
  fi
  require_free_port opensearch "$OS_PORT" RAGSWEEP_OPENSEARCH_PORT
  require_free_port "opensearch transport" "$OS_TRANSPORT_PORT" RAGSWEEP_OPENSEARCH_TRANSPORT_PORT
  ensure_os_user
  os_install
  os_write_config
  require_reachable "$OS_USER" "$OS_HOME/bin/opensearch"
  local java_home
  java_home="$(os_java)"
  rm -f "$OS_PID"
  stack_log "opensearch: starting $OPENSEARCH_VERSION on 127.0.0.1:$OS_PORT as $OS_USER (Java $(java_major "$java_home"), heap $OS_HEAP)"
  run_as "$OS_USER" env OPENSEARCH_JAVA_HOME="$java_home" OPENSEARCH_PATH_CONF="$OS_CONF" \
    OPENSEARCH_TMPDIR="$OS_TMP" "$OS_HOME/bin/opensearch" -d -p "$OS_PID" \
    >"$OS_LOGS/startup.log" 2>&1 9>&- \
    || { tail -n 40 "$OS_LOGS/startup.log" >&2; stack_die "opensearch: failed to start"; }
}

os_log_tail() {
  os_paths
  local f
  for f in "$OS_LOGS/startup.log" "$OS_LOGS/ragsweep-stack.log"; do
    [[ -f $f ]] || continue
    printf -- '--- last lines of %s\n' "$f" >&2
    tail -n 60 "$f" >&2
  done
}

os_wait() {
  os_paths
  local started=$SECONDS deadline=$((SECONDS + OS_TIMEOUT)) status seen_pid=0
  while ((SECONDS < deadline)); do
    # `opensearch -d` returns before the node writes its pid file; once written, the
    # pid must stay alive (the node removes the file when it exits).
    if pid_running "$OS_PID" org.opensearch.bootstrap.OpenSearch; then
      seen_pid=1
    elif ((seen_pid)); then
      os_log_tail
      stack_die "opensearch: the process exited during start-up"
    elif ((SECONDS - started > 60)); then
      os_log_tail
      stack_die "opensearch: no running node after 60s (pid file $OS_PID)"
    else
      sleep 1
      continue
    fi
    status="$(curl -s --max-time 10 "$OS_URL/_cluster/health?wait_for_status=yellow&timeout=5s" \
      | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p' || true)"
    if [[ $status == green || $status == yellow ]]; then
      stack_log "opensearch: cluster health $status"
      return 0
    fi
    sleep 2
  done
  os_log_tail
  stack_die "opensearch: no green/yellow health on $OS_URL within ${OS_TIMEOUT}s (RAGSWEEP_OPENSEARCH_TIMEOUT)"
}

os_stop() {
  os_paths
  stop_pid opensearch "$OS_PID" org.opensearch.bootstrap.OpenSearch 90
}

os_status() {
  os_paths
  local health
  if pid_running "$OS_PID" org.opensearch.bootstrap.OpenSearch \
    && health="$(curl -sf --max-time 5 "$OS_URL/_cluster/health" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')" \
    && [[ -n $health ]]; then
    printf 'opensearch  up    127.0.0.1:%s  health=%s  OpenSearch %s; plugins: %s\n' "$OS_PORT" "$health" \
      "$OPENSEARCH_VERSION" "$(curl -sf --max-time 5 "$OS_URL/_cat/plugins?h=component" | sort | tr '\n' ' ')"
  else
    printf 'opensearch  down  127.0.0.1:%s\n' "$OS_PORT"
    return 1
  fi
}

# ------------------------------------------------------------------- the env file

# Connection settings the harness reads, as KEY=VALUE lines (no quoting needed: no
# value holds a space or a quote). Written only once every service answered.
write_env_file() {
  local tmp="$STACK_ENV_FILE.tmp"
  cat >"$tmp" <<EOF
# ragsweep local stack: connection settings (written by stack/up.sh $(date -u +%FT%TZ))
# Load with: eval "\$(stack/env.sh)"   or   source stack/env.sh
RAGSWEEP_STACK_DIR=$STACK_DIR
RAGSWEEP_OPENSEARCH_URL=http://127.0.0.1:$OS_PORT
RAGSWEEP_PG_DSN=postgresql://$PG_USER:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB
RAGSWEEP_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
RAGSWEEP_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
RAGSWEEP_S3_BUCKET=$S3_BUCKET
AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
AWS_DEFAULT_REGION=$S3_REGION
RAGSWEEP_OPENSEARCH_KNN_ENGINE=lucene
RAGSWEEP_STACK_OPENSEARCH_VERSION=$OPENSEARCH_VERSION
RAGSWEEP_STACK_POSTGRES_VERSION=$(pg_version 2>/dev/null || echo unknown)
RAGSWEEP_STACK_REDIS_VERSION=$(redis_version 2>/dev/null || echo unknown)
RAGSWEEP_STACK_S3=s3proxy-$S3PROXY_VERSION
EOF
  chmod 0644 "$tmp"
  mv "$tmp" "$STACK_ENV_FILE"
}
