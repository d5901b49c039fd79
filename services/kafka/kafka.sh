#!/usr/bin/env bash
# Real single-node Apache Kafka (KRaft, broker+controller in one JVM) for gpulog's tests,
# from Maven Central jars (pom.xml beside this file).
#   kafka.sh fetch    resolve the jars into target/dependency (no-op when already there)
#   kafka.sh start    start the broker, wait until it serves metadata; keeps run/data,
#                     so topics survive a stop/start (no-op when already running)
#   kafka.sh stop     stop it (SIGTERM, controlled shutdown); no-op when not running
#   kafka.sh status   exit 0 when running and answering metadata requests
#   kafka.sh wipe     delete run/ (data and logs); refuses while running
# Env: KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (19093), KAFKA_PARTITIONS (3, for
# auto-created topics), KAFKA_RUN_DIR (services/kafka/run), KAFKA_JVM_OPTS.
#
# Version: Kafka 4.1.2. Checked against Debian 12's librdkafka 2.0.2 / kcat 1.7.1:
# metadata (kcat -L), produce with enable.idempotence=true + acks=all, gzip, and a
# classic consumer group (kcat -G) all work, so the 3.9.x fallback was not needed.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
NAME=kafka
LIB="$HERE/target/dependency"
RUN="${KAFKA_RUN_DIR:-$HERE/run}"
PORT="${KAFKA_PORT:-19092}"; CPORT="${KAFKA_CONTROLLER_PORT:-19093}"
PARTS="${KAFKA_PARTITIONS:-3}"
JVM_OPTS="${KAFKA_JVM_OPTS:--Xms128m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent -XX:MaxDirectMemorySize=256m -Xss512k -Djava.awt.headless=true}"
LOGOPTS="-Dlog4j2.configurationFile=$HERE/log4j2.properties -Dkafka.logs.dir=$RUN/logs"
PIDF="$RUN/kafka.pid"
MARK="$RUN/server.properties"
WHERE="127.0.0.1:$PORT"

have_jars() { compgen -G "$LIB/kafka_2.13-*.jar" >/dev/null && compgen -G "$LIB/log4j-core-*.jar" >/dev/null; }

find_class() {  # prints the first candidate class present in the jars
  python3 - "$LIB" "$@" <<'PY'
import glob, sys, zipfile
lib, cands = sys.argv[1], sys.argv[2:]
names = set()
for j in glob.glob(lib + "/kafka*.jar"):
    with zipfile.ZipFile(j) as z:
        names.update(z.namelist())
for c in cands:
    if c.replace(".", "/") + ".class" in names:
        print(c); sys.exit(0)
sys.exit("none of %s found in %s" % (cands, lib))
PY
}

answers() { timeout 5 kcat -b "127.0.0.1:$PORT" -L -m 5 2>/dev/null | grep -q "broker 1 at"; }
ready() { grep -q "Kafka Server started" "$RUN/kafka.out" 2>/dev/null && answers; }

case "${1:-}" in
fetch)
  have_jars && exit 0
  svc_mvn -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime ;;
start)
  if svc_running_pid >/dev/null; then svc_already_up && echo "kafka already running at 127.0.0.1:$PORT"; exit $?; fi
  have_jars || { echo "kafka: jars missing, run $0 fetch" >&2; exit 1; }
  svc_ports_free "$PORT" "$CPORT" || exit 1
  mkdir -p "$RUN/data" "$RUN/logs"
  sed -e "s#@PORT@#$PORT#g" -e "s#@CPORT@#$CPORT#g" -e "s#@DATA@#$RUN/data#g" \
      -e "s#@PARTS@#$PARTS#g" "$HERE/server.properties.in" > "$RUN/server.properties"
  if [ ! -f "$RUN/data/meta.properties" ]; then   # first start: format the log dir
    STORAGE=$(find_class kafka.tools.StorageTool org.apache.kafka.tools.StorageTool)
    CID=$(python3 -c 'import base64,uuid;print(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))')
    java -Xmx128m -XX:TieredStopAtLevel=1 $LOGOPTS -cp "$LIB/*" "$STORAGE" format -t "$CID" \
        -c "$RUN/server.properties" -g > "$RUN/format.out" 2>&1 || { cat "$RUN/format.out" >&2; exit 1; }
  fi
  SERVER=$(find_class kafka.Kafka)
  # setsid: the broker must not die with the shell (or make) that started it
  setsid nohup java $JVM_OPTS $LOGOPTS -cp "$LIB/*" "$SERVER" "$RUN/server.properties" \
      > "$RUN/kafka.out" 2>&1 < /dev/null &
  echo $! > "$PIDF"
  svc_wait_up 180 "$RUN/kafka.out" || exit 1
  echo "kafka up at 127.0.0.1:$PORT" ;;
stop|status|wipe) "svc_$1" ;;   # services/lib.sh
*) echo "usage: $0 fetch|start|stop|status|wipe" >&2; exit 2 ;;
esac
