# shellcheck shell=bash
# Process helpers shared by the local stack (stack/lib.sh) and the Kubernetes test bed
# (stack/k8s/lib.sh): a service is a pid file plus a pattern its command line must hold, so
# a recycled pid is never mistaken for it. PROC_LOG names the logging function (default
# stack_log).

# pid_running PIDFILE PATTERN: the pid in PIDFILE is alive and its command line has PATTERN.
pid_running() {
  local pidfile=$1 pattern=$2 pid
  [[ -s $pidfile ]] || return 1
  pid="$(tr -dc '0-9' <"$pidfile")"
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$pattern"
}

# stop_pid NAME PIDFILE PATTERN [TIMEOUT]: TERM, wait, then KILL.
stop_pid() {
  local name=$1 pidfile=$2 pattern=$3 timeout=${4:-60} log=${PROC_LOG:-stack_log} pid i
  if ! pid_running "$pidfile" "$pattern"; then
    rm -f "$pidfile"
    "$log" "$name: not running"
    return 0
  fi
  pid="$(tr -dc '0-9' <"$pidfile")"
  "$log" "$name: stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 5; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    "$log" "$name: still alive after ${timeout}s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# start_detached PIDFILE LOG CMD...: run CMD in its own session, appending to LOG, and write
# its pid to PIDFILE. setsid forks when its caller leads a process group (a shell with job
# control), which would make `$!` the pid of a process that has already exited; so the pid is
# written from inside the new session, by the shell that then execs CMD. Returns once the pid
# file exists (or 1 after 10 s). The caller's descriptors 8 and 9 (the locks images/build.sh and
# the stack scripts hold) are not inherited: a daemon must not keep a build locked.
start_detached() {
  local pidfile=$1 log=$2 i
  shift 2
  rm -f "$pidfile"
  # shellcheck disable=SC2016  # $$ and $@ belong to the inner shell
  setsid sh -c 'printf "%s\n" "$$" >"$0.tmp" && mv -f "$0.tmp" "$0" && exec "$@"' "$pidfile" "$@" \
    >>"$log" 2>&1 </dev/null 8>&- 9>&- &
  for ((i = 0; i < 100; i++)); do
    [[ -s $pidfile ]] && return 0
    sleep 0.1
  done
  return 1
}
