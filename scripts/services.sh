#!/usr/bin/env bash
# Starts and stops the real services gpulog's integration tests use:
#   Apache Kafka 4.1.2 (KRaft, one JVM)   127.0.0.1:19092  services/kafka/kafka.sh
#     and its SASL_SSL listener            127.0.0.1:19094  (TLS, keytool-made CA; SASL
#     PLAIN and SCRAM-SHA-512 user gpulog; settings in env.sh: KAFKA_SASL_*)
#   OpenSearch 2.19.6 (embedded node)     127.0.0.1:19200  services/opensearch/opensearch.sh
#   Elasticsearch 8.19.7 (security off)   127.0.0.1:19400  services/elasticsearch/elasticsearch.sh
#   Prometheus (Debian package)           127.0.0.1:19490  services/prometheus/prometheus.sh
#     (started first, on its own: ~1 s; scrapes the targets tests drop into $PROMETHEUS_TARGETS)
#   Elasticsearch 8.19.7 (security on:    127.0.0.1:19410  the same, ELASTICSEARCH_SECURE=1
#     TLS, users, API key)
# all from Maven Central (jars; Elasticsearch: its integ-test-zip); no Docker.
#
#   services.sh up       fetch if needed, wipe the data of a service that is not running,
#                        start both in parallel, wait until ready, write services/env.sh.
#                        A no-op success when both are already up.
#   services.sh down     stop both (no-op when down); removes services/env.sh
#   services.sh status   exit 0 when both run and answer
#   services.sh stop-kafka | start-kafka | stop-opensearch | start-opensearch
#               | stop-elasticsearch | start-elasticsearch (both Elasticsearch nodes)
#               | stop-prometheus | start-prometheus
#                        for fault tests: stop/restart one service; data is kept, so
#                        topics and indices survive the restart
# Env: KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (19093), KAFKA_SASL_PORT (19094),
#      KAFKA_PARTITIONS (3),
#      OPENSEARCH_PORT (19200), OPENSEARCH_TRANSPORT_PORT (19300), OPENSEARCH_HEAP (512m),
#      ELASTICSEARCH_PORT (19400), ELASTICSEARCH_TRANSPORT_PORT (19401), ELASTICSEARCH_RUN_DIR,
#      ELASTICSEARCH_SECURE_PORT (19410), ELASTICSEARCH_SECURE_TRANSPORT_PORT (19411),
#      ELASTICSEARCH_SECURE_RUN_DIR, PROMETHEUS_PORT (19490), PROMETHEUS_RUN_DIR (a private
#      set needs its own, or its down stops the shared Prometheus),
#      KAFKA_RUN_DIR, OPENSEARCH_RUN_DIR (services/*/run), SERVICES_ENV (services/env.sh),
#      SERVICES_KEEP_DATA=1 (up keeps old data). With other ports, run dirs and env file a
#      second, private pair can run beside the shared one.
# Ready means: Kafka logged "Kafka Server started" and `kcat -L` lists broker 1;
#              OpenSearch cluster health is yellow or green.
#
# Measured on the 2-core / 24 GiB machine (Debian 12, OpenJDK 17.0.15, jars fetched):
#   cold start, `up` of both in parallel until ready: 7.5-10.7 s on an idle machine,
#     28-46 s while other jobs kept the load average at ~10; alone: Kafka 5-5.7 s
#     (incl. the storage-format JVM on first start), OpenSearch 8.6-9.8 s; restart after
#     stop-kafka ~4 s, after stop-opensearch ~6.6 s; `up` when already up 0.06 s.
#   RSS: Kafka JVM 190-225 MB after tests/t_services.sh, ~240 MB after 200k messages
#     (-Xms128m -Xmx512m); OpenSearch JVM 305-400 MB after tests/t_services.sh,
#     470-585 MB after bulk-indexing 40k docs (-Xms512m -Xmx512m, heap not pre-touched).
#   Kafka's SASL_SSL listener: the first start also makes its CA, certificate and
#     keystore with keytool (~2 s of CPU) and formats with the SCRAM user; a private
#     broker's cold start measured 11.3 s at load average ~5, a restart 2.8 s, a
#     restart on data formatted before the listener existed 7.6 s (kafka-configs).
#   first fetch with an empty ~/.m2: Kafka 37-43 s (43 MB of jars), OpenSearch ~69 s
#     (51 MB); later fetches are no-ops (jars present in services/*/target).
#   With the two Elasticsearch nodes: `up` of all four 53-56 s at load average 8-12
#     (Kafka and OpenSearch alone at the same load: 18 s); alone, the plain node 12-14 s
#     (~14 s of CPU), the secure one's first start 23-35 s (~21 s of CPU: certificates,
#     keystore, security index, user, API key); RSS 530-570 MB each (-Xmx512m, heap not
#     pre-touched); first fetch with an empty ~/.m2 25 s (104 MB zip, unpacked once).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# the lock's fd 9 must not leak into the service JVMs, or the lock outlives this script
K() { "$ROOT/services/kafka/kafka.sh" "$@" 9>&-; }
O() { "$ROOT/services/opensearch/opensearch.sh" "$@" 9>&-; }
E() { "$ROOT/services/elasticsearch/elasticsearch.sh" "$@" 9>&-; }
P() { "$ROOT/services/prometheus/prometheus.sh" "$@" 9>&-; }
S() { ELASTICSEARCH_SECURE=1 "$ROOT/services/elasticsearch/elasticsearch.sh" "$@" 9>&-; }
ENVF="${SERVICES_ENV:-$ROOT/services/env.sh}"
export KAFKA_PORT="${KAFKA_PORT:-19092}" OPENSEARCH_PORT="${OPENSEARCH_PORT:-19200}"
export ELASTICSEARCH_PORT="${ELASTICSEARCH_PORT:-19400}"

# one services.sh at a time per port pair (several checkouts may share this machine)
LOCK="${TMPDIR:-/tmp}/gpulog-services.$KAFKA_PORT.$OPENSEARCH_PORT.$ELASTICSEARCH_PORT.${PROMETHEUS_PORT:-19490}.lock"
exec 9>"$LOCK"
flock -w 300 9 || { echo "services: could not take $LOCK" >&2; exit 1; }

write_env() {
  printf 'export KAFKA_BROKERS=127.0.0.1:%s OPENSEARCH_URL=http://127.0.0.1:%s\n' \
    "$KAFKA_PORT" "$OPENSEARCH_PORT" > "$ENVF"
  K env >> "$ENVF"; P env >> "$ENVF"; E env >> "$ENVF"; S env >> "$ENVF"
}

fetch() {
  K fetch || { echo "services: kafka fetch failed" >&2; return 1; }
  O fetch || { echo "services: opensearch fetch failed" >&2; return 1; }
  E fetch || { echo "services: elasticsearch fetch failed" >&2; return 1; }
}

# run "$@" for every service script in parallel; print each one's output; fail if any fails
both() {
  local tmp rc=0 kp op ep sp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-svc.XXXXXX")
  K "$@" > "$tmp/k" 2>&1 & kp=$!
  O "$@" > "$tmp/o" 2>&1 & op=$!
  E "$@" > "$tmp/e" 2>&1 & ep=$!
  S "$@" > "$tmp/s" 2>&1 & sp=$!
  wait "$kp" || rc=1
  wait "$op" || rc=1
  wait "$ep" || rc=1
  wait "$sp" || rc=1
  cat "$tmp/k" "$tmp/o" "$tmp/e" "$tmp/s"
  rm -rf "$tmp"
  return $rc
}

case "${1:-}" in
up)
  P start >/dev/null || exit 1   # Prometheus: no JVM, quick; a no-op when running
  if K status >/dev/null 2>&1 && O status >/dev/null 2>&1 && E status >/dev/null 2>&1 \
     && S status >/dev/null 2>&1; then
    write_env; echo "services: already up"; exit 0
  fi
  fetch || exit 1
  if [ "${SERVICES_KEEP_DATA:-0}" != 1 ]; then   # fresh data for what is not running
    K status >/dev/null 2>&1 || K wipe
    O status >/dev/null 2>&1 || O wipe
    E status >/dev/null 2>&1 || E wipe
    S status >/dev/null 2>&1 || S wipe
  fi
  if both start; then write_env; echo "services: up"; exit 0; fi
  echo "services: start failed, stopping what started" >&2
  both stop >/dev/null 2>&1; rm -f "$ENVF"; exit 1 ;;
down)
  both stop; rc=$?; P stop || rc=1; rm -f "$ENVF"; exit $rc ;;
status)
  rc=0; P status || rc=1; K status || rc=1; O status || rc=1; E status || rc=1; S status || rc=1; exit $rc ;;
start-kafka)      fetch && K start && write_env ;;
stop-kafka)       K stop ;;
start-prometheus) P start && write_env ;;
stop-prometheus)  P stop ;;
start-opensearch) fetch && O start && write_env ;;
stop-opensearch)  O stop ;;
start-elasticsearch) fetch && E start && S start && write_env ;;
stop-elasticsearch)  E stop; S stop ;;
*) echo "usage: $0 up|down|status|stop-kafka|start-kafka|stop-opensearch|start-opensearch|stop-elasticsearch|start-elasticsearch|stop-prometheus|start-prometheus" >&2; exit 2 ;;
esac
