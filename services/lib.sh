# services/lib.sh - the start/stop skeleton the service scripts share (sourced, not run).
# The caller sets NAME (for messages), RUN (run dir: data, logs), PIDF (pid file), WHERE
# (address, for messages) and MARK (a string the service process's command line
# contains, so a recycled pid is never taken for ours) and defines ready() (exit 0
# when the service answers).

# pid of our running service, or fail (checks the pid really is this service)
svc_running_pid() {
  local pid
  [ -f "$PIDF" ] || return 1
  pid=$(cat "$PIDF" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$MARK" || return 1
  echo "$pid"
}

svc_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# fail when any of the ports is taken by another process
svc_ports_free() {
  local p
  for p in "$@"; do
    svc_port_busy "$p" && { echo "$NAME: port $p already in use by another process" >&2; return 1; }
  done
  return 0
}

# already running: wait up to 60 s until it answers; fails when it does not
svc_already_up() {
  SECONDS=0
  while [ "$SECONDS" -lt 60 ]; do
    ready && return 0
    svc_running_pid >/dev/null || break; sleep 0.5
  done
  echo "$NAME: running (pid $(cat "$PIDF")) but not answering; stop it first" >&2; return 1
}

# after the launch: wait up to $1 s until ready(); $2 is the log to show on failure.
# Uses kill -0, not svc_running_pid: until a child has exec'd java its command line
# is still the launching shell's, and a loaded machine shows that window.
svc_wait_up() {
  SECONDS=0
  while [ "$SECONDS" -lt "$1" ]; do
    ready && return 0
    kill -0 "$(cat "$PIDF" 2>/dev/null)" 2>/dev/null || { echo "$NAME: exited" >&2; tail -n 60 "$2" >&2; return 1; }
    sleep 0.5
  done
  echo "$NAME: not ready after $1 s" >&2; tail -n 60 "$2" >&2; return 1
}

# SIGTERM, wait up to 30 s, then SIGKILL; a no-op when not running
svc_stop() {
  local pid
  pid=$(svc_running_pid) || { rm -f "$PIDF"; return 0; }
  kill "$pid" 2>/dev/null || true
  SECONDS=0
  while [ "$SECONDS" -lt 30 ]; do kill -0 "$pid" 2>/dev/null || { rm -f "$PIDF"; return 0; }; sleep 0.5; done
  echo "$NAME: no exit after 30 s, killing" >&2
  kill -9 "$pid" 2>/dev/null || true; rm -f "$PIDF"
}

# mvn with one retry: a registry hiccup should not fail a CI run
svc_mvn() {
  command -v mvn >/dev/null || { echo "$NAME: mvn not found (scripts/deps.sh installs maven)" >&2; return 1; }
  mvn -B -q -Dstyle.color=never "$@" || { sleep 5; mvn -B -q -Dstyle.color=never "$@"; }
}

# status verb: exit 0 when running and ready(); $WHERE says where it listens
svc_status() {
  local pid
  pid=$(svc_running_pid) || { echo "$NAME: not running"; return 1; }
  ready || { echo "$NAME: pid $pid not answering at $WHERE"; return 1; }
  echo "$NAME: running, pid $pid, $WHERE"
}

# wipe verb: delete the run dir $RUN (data and logs); refuses while running
svc_wipe() {
  svc_running_pid >/dev/null && { echo "$NAME: running, stop it first" >&2; return 1; }
  rm -rf "$RUN"
}
