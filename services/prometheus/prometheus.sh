#!/usr/bin/env bash
# Real Prometheus for gpulog's tests: Debian's prometheus package (scripts/deps.sh
# installs it; it brings promtool), run on loopback with its own configuration, not
# the package's systemd service.
#   prometheus.sh start    write the configuration, start with an empty TSDB, wait until
#                          /-/ready answers (no-op when running)
#   prometheus.sh stop     stop it (SIGTERM); no-op when not running
#   prometheus.sh status   exit 0 when running and ready
#   prometheus.sh wipe     delete the run dir; refuses while running
#   prometheus.sh env      print the export line for services/env.sh
# What it scrapes: job "gpulog", every 1 s, the targets tests put as file_sd JSON files
# into $PROMETHEUS_TARGETS (run/targets/*.json, picked up within a second). Rules: the
# shipped deploy/prometheus/gpulog-rules.yml, evaluated every 1 s.
# Env: PROMETHEUS_PORT (19490), PROMETHEUS_RUN_DIR (services/prometheus/run),
#      PROMETHEUS_BIN (prometheus on PATH, else /usr/bin/prometheus).
# Measured (2 cores): start until ready 0.6-1.5 s; RSS ~60 MB.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
NAME=prometheus
PORT="${PROMETHEUS_PORT:-19490}"
RUN="${PROMETHEUS_RUN_DIR:-$HERE/run}"
URL="http://127.0.0.1:$PORT"
PIDF="$RUN/prometheus.pid"
WHERE="$URL"
MARK="--storage.tsdb.path=$RUN/data"
BIN="${PROMETHEUS_BIN:-$(command -v prometheus || echo /usr/bin/prometheus)}"

ready() { curl -sf -m 2 "$URL/-/ready" >/dev/null 2>&1; }

write_config() {
  mkdir -p "$RUN/targets"
  cat > "$RUN/prometheus.yml" <<CONF
# written by services/prometheus/prometheus.sh
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/prometheus/gpulog-rules.yml
scrape_configs:
  - job_name: gpulog
    file_sd_configs:
      - files: ['$RUN/targets/*.json']
        refresh_interval: 1s
CONF
}

case "${1:-}" in
start)
  if svc_running_pid >/dev/null; then svc_already_up || exit 1; echo "$NAME already running at $URL"; exit 0; fi
  [ -x "$BIN" ] || { echo "$NAME: $BIN missing (scripts/deps.sh installs the prometheus package)" >&2; exit 1; }
  svc_ports_free "$PORT" || exit 1
  rm -rf "$RUN/data" "$RUN/targets"; mkdir -p "$RUN"
  write_config
  "$BIN" --version > /dev/null 2>&1 || { echo "$NAME: $BIN does not run" >&2; exit 1; }
  setsid "$BIN" --config.file="$RUN/prometheus.yml" "$MARK" \
    --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle \
    --storage.tsdb.retention.time=1d > "$RUN/prometheus.log" 2>&1 < /dev/null &
  echo $! > "$PIDF"
  svc_wait_up 60 "$RUN/prometheus.log" || exit 1
  echo "$NAME up at $URL" ;;
stop|status|wipe) "svc_$1" ;;   # services/lib.sh
env) printf 'export PROMETHEUS_URL=%s PROMETHEUS_TARGETS=%s\n' "$URL" "$RUN/targets" ;;
*) echo "usage: $0 start|stop|status|wipe|env" >&2; exit 2 ;;
esac
