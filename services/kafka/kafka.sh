#!/usr/bin/env bash
# Real single-node Apache Kafka (KRaft, broker+controller in one JVM) for gpulog's tests,
# from Maven Central jars (pom.xml beside this file).
#   kafka.sh fetch    resolve the jars into target/dependency (no-op when already there)
#   kafka.sh start    start the broker, wait until it serves metadata; keeps run/data,
#                     so topics survive a stop/start (no-op when already running)
#   kafka.sh stop     stop it (SIGTERM, controlled shutdown); no-op when not running
#   kafka.sh status   exit 0 when running and answering metadata requests
#   kafka.sh wipe     delete run/ (data and logs); refuses while running
#   kafka.sh env      the SASL_SSL listener's settings as shell exports (nothing when
#                     the running broker was started without it)
# Env: KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (19093), KAFKA_SASL_PORT (19094),
# KAFKA_PARTITIONS (3, for auto-created topics), KAFKA_RUN_DIR (services/kafka/run),
# KAFKA_JVM_OPTS.
#
# Listeners: PLAINTEXT on KAFKA_PORT; SASL_SSL on KAFKA_SASL_PORT: TLS with a
# test CA and a broker certificate (127.0.0.1, localhost) made by the JDK's
# keytool into run/tls on first start (~2 s); user "gpulog" with a random password
# (run/tls/gpulog.password) for SASL PLAIN (listed in server.properties) and
# SCRAM-SHA-512 (created by the storage format's --add-scram or, for data
# formatted before, by kafka-configs). librdkafka before 2.6.1 (Debian 12: 2.0.2)
# cannot do SCRAM with Kafka 4.x (its client nonce, librdkafka PR 4895), so the
# client settings in run/tls/client.properties (kcat -F) use PLAIN.
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
PORT="${KAFKA_PORT:-19092}"; CPORT="${KAFKA_CONTROLLER_PORT:-19093}"; SPORT="${KAFKA_SASL_PORT:-19094}"
TLS="$RUN/tls"
SASL_USER=gpulog
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
# the SASL_SSL listener authenticates the user (PLAIN) and verifies (ready() stays the
# plaintext check: a broker started before this listener existed is still up)
sasl_answers() { timeout 10 kcat -F "$TLS/client.properties" -b "127.0.0.1:$SPORT" -L -m 5 2>/dev/null | grep -q "broker 1 at"; }
rand_hex() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; echo; }

# The test CA, the broker's key and CA-signed certificate (SAN 127.0.0.1 and
# localhost) in a PKCS12 keystore, the CA as PEM for clients, the SCRAM user's
# password and the client settings; all in run/tls, made once with keytool.
make_tls() {
  [ -f "$TLS/broker.p12" ] && [ -f "$TLS/ca.crt" ] && [ -f "$TLS/$SASL_USER.password" ] && return 0
  local kt="keytool -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC" sp san="SAN=dns:localhost,ip:127.0.0.1"
  rm -rf "$TLS"; mkdir -p "$TLS"; chmod 700 "$TLS"
  sp=$(rand_hex)
  (umask 077; rand_hex > "$TLS/$SASL_USER.password"; printf '%s\n' "$sp" > "$TLS/store.password")
  { $kt -genkeypair -alias ca -keyalg RSA -keysize 2048 -dname "CN=gpulog test Kafka CA" -ext bc:c \
        -validity 3650 -keystore "$TLS/ca.p12" -storetype PKCS12 -storepass "$sp" &&
    $kt -exportcert -rfc -alias ca -keystore "$TLS/ca.p12" -storepass "$sp" > "$TLS/ca.crt" &&
    $kt -genkeypair -alias broker -keyalg RSA -keysize 2048 -dname "CN=localhost" -ext "$san" \
        -validity 3650 -keystore "$TLS/broker.p12" -storetype PKCS12 -storepass "$sp" &&
    $kt -certreq -alias broker -keystore "$TLS/broker.p12" -storepass "$sp" |
      $kt -gencert -alias ca -keystore "$TLS/ca.p12" -storepass "$sp" -ext "$san" \
          -ext ku:c=digitalSignature,keyEncipherment -ext eku=serverAuth -rfc -validity 3650 > "$TLS/broker.crt" &&
    $kt -importcert -noprompt -alias ca -file "$TLS/ca.crt" -keystore "$TLS/broker.p12" -storepass "$sp" &&
    $kt -importcert -noprompt -alias broker -file "$TLS/broker.crt" -keystore "$TLS/broker.p12" -storepass "$sp"
  } > "$TLS/keytool.out" 2>&1 || { echo "kafka: keytool failed:" >&2; cat "$TLS/keytool.out" >&2; rm -rf "$TLS"; return 1; }
}

# librdkafka's settings for the SASL_SSL listener (kcat -F), written on every start
write_client_conf() {
  (umask 077; printf 'security.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\nsasl.username=%s\nsasl.password=%s\nssl.ca.location=%s\n' \
     "$SASL_USER" "$(cat "$TLS/$SASL_USER.password")" "$TLS/ca.crt" > "$TLS/client.properties")
}

# the SCRAM user, for data formatted without it (kafka-configs through the plaintext listener)
add_scram_user() {
  local cc
  cc=$(find_class kafka.admin.ConfigCommand org.apache.kafka.tools.ConfigCommand) || return 1
  java -Xmx128m -XX:TieredStopAtLevel=1 $LOGOPTS -cp "$LIB/*" "$cc" --bootstrap-server "127.0.0.1:$PORT" --alter \
      --add-config "SCRAM-SHA-512=[password=$(cat "$TLS/$SASL_USER.password")]" --entity-type users \
      --entity-name "$SASL_USER" > "$RUN/scram.out" 2>&1 || { echo "kafka: kafka-configs failed:" >&2; cat "$RUN/scram.out" >&2; return 1; }
  touch "$RUN/scram.done"
}

case "${1:-}" in
fetch)
  have_jars && exit 0
  svc_mvn -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime ;;
start)
  if svc_running_pid >/dev/null; then svc_already_up && echo "kafka already running at 127.0.0.1:$PORT"; exit $?; fi
  have_jars || { echo "kafka: jars missing, run $0 fetch" >&2; exit 1; }
  svc_ports_free "$PORT" "$CPORT" "$SPORT" || exit 1
  mkdir -p "$RUN/data" "$RUN/logs"
  make_tls || exit 1
  write_client_conf
  (umask 077; sed -e "s#@PORT@#$PORT#g" -e "s#@CPORT@#$CPORT#g" -e "s#@SPORT@#$SPORT#g" -e "s#@TLS@#$TLS#g" \
      -e "s#@KSPASS@#$(cat "$TLS/store.password")#g" -e "s#@USER@#$SASL_USER#g" \
      -e "s#@USERPASS@#$(cat "$TLS/$SASL_USER.password")#g" -e "s#@DATA@#$RUN/data#g" \
      -e "s#@PARTS@#$PARTS#g" "$HERE/server.properties.in" > "$RUN/server.properties")
  if [ ! -f "$RUN/data/meta.properties" ]; then   # first start: format the log dir
    STORAGE=$(find_class kafka.tools.StorageTool org.apache.kafka.tools.StorageTool)
    # a cluster id as Kafka's Uuid.randomUuid makes it: base64url of 16 random bytes, never
    # starting with '-' (kafka-storage's argument parser takes "-t -x..." for a missing value:
    # one format in 64 failed, seen in CI)
    CID=$(python3 -c 'import base64,uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"): print(s); break')
    java -Xmx128m -XX:TieredStopAtLevel=1 $LOGOPTS -cp "$LIB/*" "$STORAGE" format -t "$CID" \
        -c "$RUN/server.properties" -g \
        --add-scram "SCRAM-SHA-512=[name=$SASL_USER,password=$(cat "$TLS/$SASL_USER.password")]" \
        > "$RUN/format.out" 2>&1 || { cat "$RUN/format.out" >&2; exit 1; }
    touch "$RUN/scram.done"
  fi
  SERVER=$(find_class kafka.Kafka)
  # setsid: the broker must not die with the shell (or make) that started it
  setsid nohup java $JVM_OPTS $LOGOPTS -cp "$LIB/*" "$SERVER" "$RUN/server.properties" \
      > "$RUN/kafka.out" 2>&1 < /dev/null &
  echo $! > "$PIDF"
  svc_wait_up 180 "$RUN/kafka.out" || exit 1
  [ -f "$RUN/scram.done" ] || add_scram_user || exit 1
  SECONDS=0
  until sasl_answers; do
    [ "$SECONDS" -lt 30 ] || { echo "kafka: SASL_SSL listener 127.0.0.1:$SPORT does not authenticate $SASL_USER" >&2; tail -n 30 "$RUN/kafka.out" >&2; exit 1; }
    sleep 0.5
  done
  echo "kafka up at 127.0.0.1:$PORT (SASL_SSL 127.0.0.1:$SPORT)" ;;
env)
  grep -q '^listeners=.*SASL_SSL' "$RUN/server.properties" 2>/dev/null && [ -f "$TLS/client.properties" ] || exit 0
  printf 'export KAFKA_SASL_BROKERS=127.0.0.1:%s KAFKA_SASL_CA=%s KAFKA_SASL_USER=%s KAFKA_SASL_PASSWORD_FILE=%s KAFKA_SASL_CLIENT_CONF=%s\n' \
    "$SPORT" "$TLS/ca.crt" "$SASL_USER" "$TLS/$SASL_USER.password" "$TLS/client.properties" ;;
stop|status|wipe) "svc_$1" ;;   # services/lib.sh
*) echo "usage: $0 fetch|start|stop|status|wipe|env" >&2; exit 2 ;;
esac
