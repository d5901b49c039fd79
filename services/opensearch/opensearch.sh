#!/usr/bin/env bash
# Real single-node OpenSearch 2.19 for gpulog's tests: an embedded node (Route B of
# shared/docs/real-services.md) built from Maven Central jars (pom.xml beside this file)
# and started by EmbeddedOpenSearch.java. It runs as root, needs no distribution zip.
#   opensearch.sh fetch    resolve jars into target/dependency and compile the main class
#                          (no-op when both are already there)
#   opensearch.sh start    start the node, wait for cluster health yellow; keeps run/data,
#                          so indices survive a stop/start (no-op when already running)
#   opensearch.sh stop     stop it (SIGTERM closes the node); no-op when not running
#   opensearch.sh status   exit 0 when running and the cluster is yellow or green
#   opensearch.sh wipe     delete run/ (data and logs); refuses while running
# Env: OPENSEARCH_PORT (19200), OPENSEARCH_TRANSPORT_PORT (19300),
#      OPENSEARCH_RUN_DIR (services/opensearch/run), OPENSEARCH_HEAP (512m),
#      OPENSEARCH_JVM_EXTRA (more JVM options, appended).
#
# Modules loaded: transport-netty4 (HTTP), analysis-common, lang-painless, mapper-extras,
# reindex, ingest-common. Everything the tests need (_bulk, _count, _search, _mapping,
# composable _index_template, data streams, _rollover, aggregations) is in the server.
# ISM (_plugins/_ism) is NOT available: on 2.19 classpath plugins get no extension
# loading, which job-scheduler/index-management need; use _rollover / delete directly.
# (Maven Central does serve org.opensearch.distribution.integ-test-zip:opensearch:2.19.6:zip,
# but it contains only the transport-netty4 module and refuses to run as root.)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
NAME=opensearch
LIB="$HERE/target/dependency"
CLS="$HERE/target/classes"
RUN="${OPENSEARCH_RUN_DIR:-$HERE/run}"
PORT="${OPENSEARCH_PORT:-19200}"; TPORT="${OPENSEARCH_TRANSPORT_PORT:-19300}"
HEAP="${OPENSEARCH_HEAP:-512m}"
URL="http://127.0.0.1:$PORT"
PIDF="$RUN/opensearch.pid"
MARK="EmbeddedOpenSearch $RUN "
WHERE="$URL"
# the 2.x launcher's fixed system options, minus AlwaysPreTouch
JVM_OPTS="-Xms$HEAP -Xmx$HEAP -XX:+UseG1GC -XX:MaxDirectMemorySize=256m -Xss1m
 -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djna.nosys=true
 -Djava.locale.providers=SPI,COMPAT
 -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true
 -Dio.netty.recycler.maxCapacityPerThread=0 -Dio.netty.allocator.numDirectArenas=0
 -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true ${OPENSEARCH_JVM_EXTRA:-}"

have_build() { compgen -G "$LIB/opensearch-2*.jar" >/dev/null && [ -f "$CLS/EmbeddedOpenSearch.class" ] \
  && [ "$CLS/EmbeddedOpenSearch.class" -nt "$HERE/EmbeddedOpenSearch.java" ]; }

ready() { curl -fsS -m 5 "$URL/_cluster/health?wait_for_status=yellow&timeout=2s" 2>/dev/null \
  | grep -qE '"status":"(yellow|green)"'; }

case "${1:-}" in
fetch)
  have_build && exit 0
  if ! compgen -G "$LIB/opensearch-2*.jar" >/dev/null; then
    svc_mvn -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime
  fi
  mkdir -p "$CLS"
  javac --release 17 -cp "$LIB/*" -d "$CLS" "$HERE/EmbeddedOpenSearch.java" ;;
start)
  if svc_running_pid >/dev/null; then svc_already_up && echo "opensearch already running at $URL"; exit $?; fi
  have_build || { echo "opensearch: jars or classes missing, run $0 fetch" >&2; exit 1; }
  svc_ports_free "$PORT" "$TPORT" || exit 1
  mkdir -p "$RUN/config"; cp "$HERE/log4j2.properties" "$RUN/config/"
  # setsid: the node must not die with the shell (or make) that started it
  # shellcheck disable=SC2086
  setsid nohup java $JVM_OPTS -cp "$CLS:$LIB/*" EmbeddedOpenSearch "$RUN" "$PORT" "$TPORT" \
      > "$RUN/opensearch.out" 2>&1 < /dev/null &
  echo $! > "$PIDF"
  svc_wait_up 180 "$RUN/opensearch.out" || exit 1
  echo "opensearch up at $URL" ;;
stop|status|wipe) "svc_$1" ;;   # services/lib.sh
*) echo "usage: $0 fetch|start|stop|status|wipe" >&2; exit 2 ;;
esac
