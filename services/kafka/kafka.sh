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
LIB="$HERE/target/dependency"
RUN="${KAFKA_RUN_DIR:-$HERE/run}"
PORT="${KAFKA_PORT:-19092}"; CPORT="${KAFKA_CONTROLLER_PORT:-19093}"
PARTS="${KAFKA_PARTITIONS:-3}"
JVM_OPTS="${KAFKA_JVM_OPTS:--Xms128m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExplicitGCInvokesConcurrent -XX:MaxDirectMemorySize=256m -Xss512k -Djava.awt.headless=true}"
LOGOPTS="-Dlog4j2.configurationFile=$HERE/log4j2.properties -Dkafka.logs.dir=$RUN/logs"
PIDF="$RUN/kafka.pid"

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

# pid of our running broker, or nothing (checks the pid really is this broker)
running_pid() {
  local pid
  [ -f "$PIDF" ] || return 1
  pid=$(cat "$PIDF" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$RUN/server.properties" || return 1
  echo "$pid"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

answers() { timeout 5 kcat -b "127.0.0.1:$PORT" -L -m 5 2>/dev/null | grep -q "broker 1 at"; }

case "${1:-}" in
fetch)
  have_jars && exit 0
  command -v mvn >/dev/null || { echo "kafka: mvn not found (scripts/deps.sh installs maven)" >&2; exit 1; }
  # one retry: a registry hiccup should not fail a CI run
  mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    || { sleep 5; mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime; } ;;
start)
  if running_pid >/dev/null; then   # already running: only wait until it answers
    SECONDS=0
    while [ "$SECONDS" -lt 60 ]; do
      answers && { echo "kafka already running at 127.0.0.1:$PORT"; exit 0; }
      running_pid >/dev/null || break; sleep 0.5
    done
    echo "kafka: running (pid $(cat "$PIDF")) but not answering; stop it first" >&2; exit 1
  fi
  have_jars || { echo "kafka: jars missing, run $0 fetch" >&2; exit 1; }
  for p in "$PORT" "$CPORT"; do
    port_busy "$p" && { echo "kafka: port $p already in use by another process" >&2; exit 1; }
  done
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
  SECONDS=0
  while [ "$SECONDS" -lt 180 ]; do
    if grep -q "Kafka Server started" "$RUN/kafka.out" && answers; then
      echo "kafka up at 127.0.0.1:$PORT"; exit 0
    fi
    # kill -0, not running_pid: until the child has exec'd java its
    # cmdline is still this script's, and a loaded machine shows that window
    kill -0 "$(cat "$PIDF")" 2>/dev/null || { echo "kafka: broker exited" >&2; tail -n 60 "$RUN/kafka.out" >&2; exit 1; }
    sleep 0.5
  done
  echo "kafka: not ready after 180 s" >&2; tail -n 60 "$RUN/kafka.out" >&2; exit 1 ;;
stop)
  pid=$(running_pid) || { rm -f "$PIDF"; exit 0; }
  kill "$pid" 2>/dev/null || true
  SECONDS=0
  while [ "$SECONDS" -lt 30 ]; do kill -0 "$pid" 2>/dev/null || { rm -f "$PIDF"; exit 0; }; sleep 0.5; done
  echo "kafka: no exit after 30 s, killing" >&2
  kill -9 "$pid" 2>/dev/null || true; rm -f "$PIDF" ;;
status)
  pid=$(running_pid) || { echo "kafka: not running"; exit 1; }
  answers || { echo "kafka: pid $pid not answering on 127.0.0.1:$PORT"; exit 1; }
  echo "kafka: running, pid $pid, 127.0.0.1:$PORT" ;;
wipe)
  running_pid >/dev/null && { echo "kafka: running, stop it first" >&2; exit 1; }
  rm -rf "$RUN" ;;
*) echo "usage: $0 fetch|start|stop|status|wipe" >&2; exit 2 ;;
esac
