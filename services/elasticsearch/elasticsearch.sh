#!/usr/bin/env bash
# Real single-node Elasticsearch 8.19 for gpulog's tests: Elastic's own minimal
# distribution from Maven Central (org.elasticsearch.distribution.integ-test-zip:
# elasticsearch, zip; server + transport-netty4, x-pack-core, x-pack-security, apm;
# no JDK, no ILM, no ingest, no _data_stream REST API, no data stream lifecycle).
# 8.x because it runs on Debian 12's Java 17; 9.x needs Java 21+, which Debian 12 does
# not package. Elasticsearch refuses to run as root: started by root, this script runs
# the node as the system user gpulog-es (created here when missing).
#   elasticsearch.sh fetch    resolve the zip with mvn and unpack it into target/
#                             (no-op when already unpacked)
#   elasticsearch.sh start    start the node, wait for cluster health yellow; keeps the
#                             run dir, so indices survive a stop/start (no-op when running)
#   elasticsearch.sh stop     stop it (SIGTERM); no-op when not running
#   elasticsearch.sh status   exit 0 when running and the cluster is yellow or green
#   elasticsearch.sh wipe     delete the run dir; refuses while running
#   elasticsearch.sh env      print the export line for services/env.sh
# Two instances, chosen with ELASTICSEARCH_SECURE:
#   0 (default): security disabled, http://127.0.0.1:19400 (transport 19401), run/
#   1: x-pack security on: HTTPS with a certificate of a CA this script makes with
#      openssl (run-secure/config/certs/ca.crt), the built-in user elastic (bootstrap password),
#      a user gpulog (role gpulog_writer: its data streams and templates only) and an
#      API key of gpulog, both created through the security API after the first start;
#      https://127.0.0.1:19410 (transport 19411), run-secure/. The secrets are files
#      in run-secure/creds/ (mode 600): elastic.password, gpulog.password, gpulog.apikey
#      (the base64 "encoded" form that goes after "Authorization: ApiKey").
# Env: ELASTICSEARCH_VERSION (8.19.7; 9.x needs ELASTICSEARCH_JAVA_HOME at a Java 21+), ELASTICSEARCH_PORT, ELASTICSEARCH_TRANSPORT_PORT,
#      ELASTICSEARCH_RUN_DIR (secure: ELASTICSEARCH_SECURE_PORT, _SECURE_TRANSPORT_PORT,
#      _SECURE_RUN_DIR), ELASTICSEARCH_HEAP (512m), ELASTICSEARCH_USER (gpulog-es).
# The distribution on Maven Central lacks analysis-common, which the .security index
# (users, API keys) needs: fetch also builds SecurityIndexAnalysis.java into a plugin.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
VER="${ELASTICSEARCH_VERSION:-8.19.7}"
DIST="$HERE/target/elasticsearch-$VER"
SECURE="${ELASTICSEARCH_SECURE:-0}"
if [ "$SECURE" = 1 ]; then
  NAME=elasticsearch-secure; SCHEME=https; RUNNAME=run-secure
  PORT="${ELASTICSEARCH_SECURE_PORT:-19410}"; TPORT="${ELASTICSEARCH_SECURE_TRANSPORT_PORT:-$((PORT + 1))}"
  RUN="${ELASTICSEARCH_SECURE_RUN_DIR:-}"
else
  NAME=elasticsearch; SCHEME=http; RUNNAME=run
  PORT="${ELASTICSEARCH_PORT:-19400}"; TPORT="${ELASTICSEARCH_TRANSPORT_PORT:-$((PORT + 1))}"
  RUN="${ELASTICSEARCH_RUN_DIR:-}"
fi
HEAP="${ELASTICSEARCH_HEAP:-512m}"
ESUSER="${ELASTICSEARCH_USER:-gpulog-es}"
# As root the node runs as $ESUSER, who must reach the distribution and the run dir.
# Where this clone is not searchable by others (under /root, say), both live in
# /var/tmp/gpulog-es.<hash of this folder> instead (start copies the distribution).
NODEDIST="$DIST"
if [ "$(id -u)" = 0 ]; then
  id "$ESUSER" >/dev/null 2>&1 || useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$ESUSER"
  if ! runuser -u "$ESUSER" -- test -x "$HERE" 2>/dev/null; then
    ALT="/var/tmp/gpulog-es.$(printf '%s' "$HERE" | md5sum | cut -c1-8)"
    NODEDIST="$ALT/elasticsearch-$VER"
    RUN="${RUN:-$ALT/$RUNNAME}"
  fi
fi
RUN="${RUN:-$HERE/$RUNNAME}"
URL="$SCHEME://127.0.0.1:$PORT"
PIDF="$RUN/es.pid"
WHERE="$URL"
MARK="-Dgpulog.service=$RUN "   # on the node's command line (ES_JAVA_OPTS)
CREDS="$RUN/creds"
CERTS="$RUN/config/certs"   # ES reads TLS files only under its config dir

# curl against the node (the secure one: with the CA and the elastic user)
es_curl() {
  if [ "$SECURE" = 1 ]; then
    curl -sS -m 10 --cacert "$CERTS/ca.crt" -u "elastic:$(cat "$CREDS/elastic.password")" "$@"
  else
    curl -sS -m 10 "$@"
  fi
}

ready() { es_curl -f "$URL/_cluster/health?wait_for_status=yellow&timeout=2s" 2>/dev/null \
  | grep -qE '"status":"(yellow|green)"'; }

java_home() {   # ELASTICSEARCH_JAVA_HOME, else the JDK of the java on PATH (ES wants ES_JAVA_HOME)
  local j
  [ -n "${ELASTICSEARCH_JAVA_HOME:-}" ] && { echo "$ELASTICSEARCH_JAVA_HOME"; return 0; }
  j=$(readlink -f "$(command -v java)") || return 1
  dirname "$(dirname "$j")"
}



# a CA (its key in creds/) and a node certificate for 127.0.0.1/localhost, 10 years
make_certs() {
  local d="$CERTS"
  mkdir -p "$d" "$CREDS"; chmod 700 "$CREDS"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=gpulog test CA" \
    -keyout "$CREDS/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$d/node.key" -out "$d/node.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$d/ext"
  openssl x509 -req -in "$d/node.csr" -CA "$d/ca.crt" -CAkey "$CREDS/ca.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 3650 -extfile "$d/ext" -out "$d/node.crt" 2>/dev/null
  rm -f "$d/node.csr" "$d/ext"
}

write_config() {
  mkdir -p "$RUN/config" "$RUN/data" "$RUN/logs" "$RUN/tmp"
  cp "$NODEDIST/config/log4j2.properties" "$RUN/config/"
  # the distribution's options minus gc logging and heap dumps (CI disk, CPU)
  grep -vE '^-Xlog:gc|HeapDump' "$NODEDIST/config/jvm.options" > "$RUN/config/jvm.options"
  cat > "$RUN/config/elasticsearch.yml" <<EOF
cluster.name: gpulog-test
node.name: node-1
path.data: $RUN/data
path.logs: $RUN/logs
network.host: 127.0.0.1
http.port: $PORT
transport.port: $TPORT
discovery.type: single-node
cluster.routing.allocation.disk.threshold_enabled: false
indices.breaker.total.use_real_memory: false
# tests cannot delete their data streams here (no _data_stream API) and each leaves an
# index with an unassigned replica: room for a long-lived node's many runs (default 1000)
cluster.max_shards_per_node: 5000
EOF
  if [ "$SECURE" = 1 ]; then
    cat >> "$RUN/config/elasticsearch.yml" <<EOF
xpack.security.enabled: true
xpack.security.authc.api_key.enabled: true
xpack.security.http.ssl.enabled: true
xpack.security.http.ssl.key: certs/node.key
xpack.security.http.ssl.certificate: certs/node.crt
xpack.security.http.ssl.certificate_authorities: [ "certs/ca.crt" ]
xpack.security.transport.ssl.enabled: false
EOF
  else
    echo "xpack.security.enabled: false" >> "$RUN/config/elasticsearch.yml"
  fi
}

# runs "$@" with the environment of the ES launcher and tools; as root: as $ESUSER
es_env() {
  local as=()
  [ "$(id -u)" = 0 ] && as=(runuser -u "$ESUSER" --)
  "${as[@]}" env ES_PATH_CONF="$RUN/config" ES_JAVA_HOME="$JH" ES_TMPDIR="$RUN/tmp" \
      ES_JAVA_OPTS="$MARK-Xms$HEAP -Xmx$HEAP -XX:-AlwaysPreTouch -XX:MaxDirectMemorySize=256m" "$@"
}

# first start of the secure node: bootstrap password of elastic into the keystore
bootstrap_secure() {
  mkdir -p "$CREDS"; chmod 700 "$CREDS"
  [ -f "$CREDS/elastic.password" ] || (umask 077; openssl rand -hex 16 > "$CREDS/elastic.password")
  if [ ! -f "$RUN/config/elasticsearch.keystore" ]; then
    # -f creates the keystore too: one JVM start instead of two
    es_env "$NODEDIST/bin/elasticsearch-keystore" add -x -f bootstrap.password < "$CREDS/elastic.password" >/dev/null
  fi
}

# after the secure node is up: role, user gpulog and its API key (once)
provision_secure() {
  [ -f "$CREDS/gpulog.apikey" ] && return 0
  local pw key
  [ -f "$CREDS/gpulog.password" ] || (umask 077; openssl rand -hex 16 > "$CREDS/gpulog.password")
  pw=$(cat "$CREDS/gpulog.password")
  es_curl -f -X PUT "$URL/_security/role/gpulog_writer" -H 'Content-Type: application/json' -d '{
    "cluster": ["monitor", "manage_index_templates", "manage_ilm", "manage_own_api_key"],
    "indices": [{"names": ["logs-gpu.*", "metrics-gpu.*"], "privileges": ["all"]}]}' >/dev/null \
    || { echo "$NAME: creating role gpulog_writer failed" >&2; return 1; }
  es_curl -f -X PUT "$URL/_security/user/gpulog" -H 'Content-Type: application/json' \
    -d "{\"password\": \"$pw\", \"roles\": [\"gpulog_writer\"]}" >/dev/null \
    || { echo "$NAME: creating user gpulog failed" >&2; return 1; }
  key=$(curl -sS -f -m 10 --cacert "$CERTS/ca.crt" -u "gpulog:$pw" -X POST "$URL/_security/api_key" \
        -H 'Content-Type: application/json' -d '{"name": "gpulog-test"}' \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["encoded"])') \
    || { echo "$NAME: creating the API key of gpulog failed" >&2; return 1; }
  (umask 077; echo "$key" > "$CREDS/gpulog.apikey")
}

# the plugin with the analysis components the .security index needs
# (SecurityIndexAnalysis.java says why); compiled against the distribution's jars
PLUGIN="$DIST/plugins/gpulog-security-analysis"
build_plugin() {
  [ -f "$PLUGIN/security-index-analysis.jar" ] && [ "$PLUGIN/security-index-analysis.jar" -nt "$HERE/SecurityIndexAnalysis.java" ] && return 0
  local cls="$HERE/target/plugin-classes" jh rel=17
  [ "${VER%%.*}" -ge 9 ] && rel=21
  jh=$(java_home) || { echo "$NAME: no java on PATH" >&2; return 1; }
  rm -rf "$cls" "$PLUGIN"; mkdir -p "$cls"
  "$jh/bin/javac" --release "$rel" -cp "$DIST/lib/*" -d "$cls" "$HERE/SecurityIndexAnalysis.java" || return 1
  mkdir -p "$PLUGIN.tmp"   # complete or absent: a half-made plugin dir stops the node
  "$jh/bin/jar" cf "$PLUGIN.tmp/security-index-analysis.jar" -C "$cls" .
  printf '%s\n' "description=analysis components of the .security index (gpulog tests)" "version=1.0" \
    "name=gpulog-security-analysis" "classname=SecurityIndexAnalysis" "java.version=$rel" \
    "elasticsearch.version=$VER" > "$PLUGIN.tmp/plugin-descriptor.properties"
  mv "$PLUGIN.tmp" "$PLUGIN"
}

case "${1:-}" in
fetch)
  if [ -x "$DIST/bin/elasticsearch" ]; then build_plugin; exit 0; fi
  svc_mvn dependency:copy -Dartifact="org.elasticsearch.distribution.integ-test-zip:elasticsearch:$VER:zip" \
    -DoutputDirectory="$HERE/target" -Dmdep.overWriteReleases=true
  rm -rf "$DIST.tmp"; mkdir -p "$DIST.tmp"
  unzip -q "$HERE/target/elasticsearch-$VER.zip" -d "$DIST.tmp"
  mv "$DIST.tmp/elasticsearch-$VER" "$DIST"; rm -rf "$DIST.tmp" "$HERE/target/elasticsearch-$VER.zip"
  build_plugin ;;
start)
  if svc_running_pid >/dev/null; then
    svc_already_up || exit 1
    if [ "$SECURE" = 1 ]; then provision_secure || exit 1; fi
    echo "$NAME already running at $URL"; exit 0
  fi
  [ -x "$DIST/bin/elasticsearch" ] || { echo "$NAME: distribution missing, run $0 fetch" >&2; exit 1; }
  JH=$(java_home) || { echo "$NAME: no java on PATH" >&2; exit 1; }
  svc_ports_free "$PORT" "$TPORT" || exit 1
  if [ "$NODEDIST" != "$DIST" ]; then   # one copy, also when both nodes start at once
    mkdir -p "$ALT"; chmod 755 "$ALT"
    (
      flock 8
      if ! [ "$NODEDIST/.copied" -nt "$PLUGIN/security-index-analysis.jar" ]; then
        rm -rf "$NODEDIST"; cp -a "$DIST" "$NODEDIST"; touch "$NODEDIST/.copied"
      fi
    ) 8>"$ALT/.copy.lock"
  fi
  write_config
  if [ "$(id -u)" = 0 ]; then   # every parent directory must let the node's user through
    for d in "$NODEDIST/bin" "$RUN"; do
      runuser -u "$ESUSER" -- test -x "$d" || {
        echo "$NAME: user $ESUSER cannot reach $d (a parent directory is not searchable by others):" \
             "put the clone or ELASTICSEARCH_RUN_DIR elsewhere, or chmod o+x the parents" >&2; exit 1; }
    done
  fi
  if [ "$SECURE" = 1 ]; then [ -f "$CERTS/node.crt" ] || make_certs; fi
  if [ "$(id -u)" = 0 ]; then   # the node writes its dirs and the pid file; creds/ stays root's
    chown "$ESUSER" "$RUN"; chown -R "$ESUSER" "$RUN/config" "$RUN/data" "$RUN/logs" "$RUN/tmp"
  fi
  if [ "$SECURE" = 1 ]; then bootstrap_secure; fi
  rm -f "$PIDF"
  # -d: the launcher returns once the node has started (or failed); setsid: the node
  # must not die with the shell (or make) that started it
  if ! es_env setsid -w "$NODEDIST/bin/elasticsearch" -d -p "$PIDF" \
        > "$RUN/es.out" 2>&1 < /dev/null; then
    echo "$NAME: node did not start" >&2; tail -n 40 "$RUN/es.out" >&2
    tail -n 40 "$RUN/logs/gpulog-test.log" >&2 2>/dev/null; exit 1
  fi
  svc_wait_up 120 "$RUN/logs/gpulog-test.log" || exit 1
  if [ "$SECURE" = 1 ]; then provision_secure || exit 1; fi
  echo "$NAME up at $URL" ;;
stop|status|wipe) "svc_$1" ;;   # services/lib.sh
env)
  if [ "$SECURE" = 1 ]; then
    printf 'export ELASTICSEARCH_SECURE_URL=%s ELASTICSEARCH_SECURE_CA=%s ELASTICSEARCH_SECURE_CREDS=%s\n' \
      "$URL" "$CERTS/ca.crt" "$CREDS"
  else
    printf 'export ELASTICSEARCH_URL=%s\n' "$URL"
  fi ;;
*) echo "usage: $0 fetch|start|stop|status|wipe|env" >&2; exit 2 ;;
esac
