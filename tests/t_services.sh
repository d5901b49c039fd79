#!/usr/bin/env bash
# needs: kafka opensearch elasticsearch elasticsearch-secure
# Integration check of the real services started by scripts/services.sh: Kafka
# (produce/consume 100 messages with kcat, idempotent producer, consumer group) and
# OpenSearch (index, _bulk, _count, _mapping, _search, data stream via an index
# template), and the two Elasticsearch nodes (version, not running as root, the
# secure one: HTTPS verified with its CA, anonymous refused, user and API key accepted).
# Fails (never skips) when a service is not running.
# Env: KAFKA_BROKERS, OPENSEARCH_URL, ELASTICSEARCH_URL, ELASTICSEARCH_SECURE_* (from
# services/env.sh; defaults are the usual ports).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
# shellcheck disable=SC1091
[ -z "${KAFKA_BROKERS:-}" ] && [ -f services/env.sh ] && . services/env.sh
B=${KAFKA_BROKERS:-127.0.0.1:19092}
U=${OPENSEARCH_URL:-http://127.0.0.1:19200}
TAG="t$$-$(date +%s%N)"
test_tmp t_services

# ---- Kafka
if [ "$(timeout 15 kcat -b "$B" -L -m 5 2>"$tmp/kerr" | grep -c "broker .* at")" -gt 0 ]; then   # -c: reads all (see kafka_setup)
  ok "kafka metadata from $B"
else
  bad "kafka metadata from $B" "$(head -c 300 "$tmp/kerr")"
fi

T="gpulog-svc-$TAG"
seq 1 100 | sed 's/^/message-/' > "$tmp/msgs"
if timeout 60 kcat -b "$B" -P -t "$T" -X enable.idempotence=true -X acks=all -z gzip \
     < "$tmp/msgs" 2>"$tmp/perr"; then
  ok "kafka produce 100 (idempotent, gzip)"
else
  bad "kafka produce 100 (idempotent, gzip)" "$(head -c 300 "$tmp/perr")"
fi
parts=$(timeout 15 kcat -b "$B" -L -t "$T" 2>/dev/null | grep -c '^ *partition ')
check_eq "kafka auto-created topic partitions" "$parts" "${KAFKA_PARTITIONS:-3}"
timeout 60 kcat -b "$B" -C -t "$T" -o beginning -e -q > "$tmp/got" 2>"$tmp/cerr"
check_eq "kafka consume count" "$(wc -l < "$tmp/got")" 100
check_eq "kafka consumed content" "$(sort "$tmp/got" | md5sum)" "$(sort "$tmp/msgs" | md5sum)"
# consumer group: first read gets all 100, a second read of the same group gets nothing new
G="grp-$TAG"
n1=$(timeout 60 kcat -b "$B" -G "$G" "$T" -X auto.offset.reset=earliest -e -q 2>/dev/null | wc -l)
check_eq "kafka group consume count" "$n1" 100
n2=$(timeout 60 kcat -b "$B" -G "$G" "$T" -X auto.offset.reset=earliest -e -q 2>/dev/null | wc -l)
check_eq "kafka group offsets committed (first/second read)" "$n1/$n2" "100/0"

# ---- OpenSearch
req() {  # method path [body]: prints the body, returns non-zero on HTTP errors
  if [ $# -ge 3 ]; then
    curl -sS -m 30 -f -X "$1" "$U$2" -H 'Content-Type: application/json' --data-binary "$3"
  else
    curl -sS -m 30 -f -X "$1" "$U$2"
  fi
}
jget() { python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d=d[int(k)] if isinstance(d,list) else d[k]
print(json.dumps(d) if isinstance(d,(dict,list,bool)) else d)' "$1" 2>/dev/null; }

st=$(req GET "/_cluster/health?wait_for_status=yellow&timeout=10s" 2>"$tmp/oerr" | jget status)
case "$st" in yellow|green) ok "opensearch health $st at $U" ;;
  *) bad "opensearch health at $U" "$(head -c 300 "$tmp/oerr")" ;; esac

I="gpulog-svc-$TAG"
r=$(req PUT "/$I" '{"settings":{"number_of_replicas":0},"mappings":{"properties":{"@timestamp":{"type":"date"},"gpu.index":{"type":"integer"},"host.name":{"type":"keyword"}}}}' | jget acknowledged)
check_eq "opensearch create index" "$r" true
: > "$tmp/bulk"
for i in $(seq 0 9); do
  printf '{"index":{"_id":"d%s"}}\n{"@timestamp":"2025-11-07T03:15:0%s.000Z","gpu.index":%s,"host.name":"n%s"}\n' \
    "$i" "$i" "$i" "$((i % 2))" >> "$tmp/bulk"
done
r=$(curl -sS -m 30 -f -X POST "$U/$I/_bulk?refresh=true" -H 'Content-Type: application/x-ndjson' \
      --data-binary "@$tmp/bulk" | jget errors)
check_eq "opensearch _bulk 10 without errors" "$r" false
check_eq "opensearch _count" "$(req GET "/$I/_count" | jget count)" 10
check_eq "opensearch _search term" "$(req POST "/$I/_search" '{"query":{"term":{"host.name":"n1"}}}' | jget hits.total.value)" 5
mt=$(req GET "/$I/_mapping" | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]]["mappings"]["properties"]["gpu"]["properties"]["index"]["type"])' "$I" 2>/dev/null)
check_eq "opensearch _mapping has gpu.index integer" "$mt" integer

# data stream through a composable index template
DS="gpulog-svc-ds-$TAG"
r=$(req PUT "/_index_template/$DS" "{\"index_patterns\":[\"$DS*\"],\"data_stream\":{},\"priority\":500,\"template\":{\"settings\":{\"number_of_replicas\":0},\"mappings\":{\"properties\":{\"host.name\":{\"type\":\"keyword\"}}}}}" | jget acknowledged)
check_eq "opensearch index template with data_stream" "$r" true
: > "$tmp/dsbulk"
for i in 1 2 3; do
  printf '{"create":{}}\n{"@timestamp":"2025-11-07T03:15:0%s.000Z","host.name":"n1","gpu.index":%s}\n' "$i" "$i" >> "$tmp/dsbulk"
done
r=$(curl -sS -m 30 -f -X POST "$U/$DS/_bulk?refresh=true" -H 'Content-Type: application/x-ndjson' \
      --data-binary "@$tmp/dsbulk" | jget errors)
check_eq "opensearch data stream _bulk create" "$r" false
check_eq "opensearch data stream exists" "$(req GET "/_data_stream/$DS" | jget data_streams.0.name)" "$DS"
check_eq "opensearch data stream _count" "$(req GET "/$DS/_count" | jget count)" 3
check_eq "opensearch data stream rollover" "$(req POST "/$DS/_rollover" | jget rolled_over)" true
check_eq "opensearch data stream generation" "$(req GET "/_data_stream/$DS" | jget data_streams.0.generation)" 2

# clean up what this test made (failures here do not matter)
req DELETE "/$I" >/dev/null 2>&1
req DELETE "/_data_stream/$DS" >/dev/null 2>&1
req DELETE "/_index_template/$DS" >/dev/null 2>&1

# ---- Elasticsearch (GET / answers 405 in its minimal distribution: _nodes/_local)
E=${ELASTICSEARCH_URL:-http://127.0.0.1:19400}
v=$(curl -sS -m 10 "$E/_nodes/_local?filter_path=nodes.*.version" | jget nodes)
[[ "$v" == *'"8.19.7"'* ]]; check "elasticsearch 8.19.7 at $E" $? "$v"
for sec in 0 1; do   # status says "running, pid N"
  pid=$(ELASTICSEARCH_SECURE=$sec services/elasticsearch/elasticsearch.sh status | sed -n 's/.*running, pid \([0-9]*\).*/\1/p')
  u=$(ps -o user= -p "${pid:-0}" 2>/dev/null | tr -d ' ')
  [ -n "$u" ] && [ "$u" != root ]; check "elasticsearch node (secure=$sec, pid $pid) runs as an unprivileged user ($u)" $?
done
S=${ELASTICSEARCH_SECURE_URL:-}; SC=${ELASTICSEARCH_SECURE_CREDS:-}; CA=${ELASTICSEARCH_SECURE_CA:-}
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 --cacert "$CA" "$S/_security/_authenticate")
check_eq "secure elasticsearch: HTTPS verified with its CA, anonymous request refused" "$code" 401
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 --cacert "$CA" -u "gpulog:$(cat "$SC/gpulog.password" 2>/dev/null)" "$S/_security/_authenticate")
check_eq "secure elasticsearch: user gpulog accepted" "$code" 200
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 --cacert "$CA" -H "Authorization: ApiKey $(cat "$SC/gpulog.apikey" 2>/dev/null)" "$S/_security/_authenticate")
check_eq "secure elasticsearch: gpulog's API key accepted" "$code" 200
curl -s -o /dev/null -m 10 "$S/" 2>/dev/null; [ $? = 60 ]
check "secure elasticsearch: without the CA the certificate is not trusted (curl exit 60)" $?

report
