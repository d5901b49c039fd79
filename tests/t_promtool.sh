#!/usr/bin/env bash
# t_promtool.sh - the shipped Prometheus files under deploy/prometheus/ pass
# promtool (Debian's prometheus package, installed by scripts/deps.sh):
#   check rules   gpulog-rules.yml
#   test rules    gpulog-rules.test.yml (each alert fires for the faulty GPU or
#                 process and no other, `for` durations, clearing)
#   check config  prometheus.yml (Debian's promtool lacks Kubernetes discovery:
#                 kubernetes_sd_configs is swapped for a static target, so the
#                 relabelling and the rest are still checked)
# plus: the ServiceMonitor and the Grafana dashboard parse, and the dashboard's
# panels all use the datasource variable. No service needed; about 1 s.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp promtool
if ! command -v promtool >/dev/null; then
  bad "promtool installed (scripts/deps.sh installs the prometheus package)"; finish
fi
check_cmd "promtool check rules gpulog-rules.yml" promtool check rules deploy/prometheus/gpulog-rules.yml
check_cmd "promtool test rules gpulog-rules.test.yml" sh -c 'cd deploy/prometheus && promtool test rules gpulog-rules.test.yml'
"$PY" - deploy/prometheus/prometheus.yml "$tmp/prometheus.yml" <<'PYEOF'
import os, sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
for sc in c["scrape_configs"]:
    if sc.pop("kubernetes_sd_configs", None) is not None:
        sc["static_configs"] = [{"targets": ["127.0.0.1:9477"]}]
c["rule_files"] = [os.path.join(os.path.abspath(os.path.dirname(sys.argv[1])), f) for f in c["rule_files"]]
yaml.safe_dump(c, open(sys.argv[2], "w"))
PYEOF
check_cmd "promtool check config prometheus.yml (Kubernetes discovery swapped for a static target)" \
  promtool check config "$tmp/prometheus.yml"
# an alert rule with a syntax error must fail: promtool is really checking
printf 'groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: DCGM_FI_DEV_GPU_TEMP >\n' > "$tmp/broken.yml"
promtool check rules "$tmp/broken.yml" >/dev/null 2>&1
check "promtool rejects a broken rule file" $(( $? == 0 ))
check_cmd "ServiceMonitor and dashboard parse; dashboard panels use \${datasource}" "$PY" - <<'PYEOF'
import json, yaml, sys
docs = list(yaml.safe_load_all(open("deploy/prometheus/servicemonitor.yaml")))
kinds = [d["kind"] for d in docs]
assert kinds == ["Service", "ServiceMonitor"], kinds
sm = docs[1]
assert sm["spec"]["endpoints"][0]["port"] == docs[0]["spec"]["ports"][0]["name"] == "metrics"
assert sm["spec"]["selector"]["matchLabels"].items() <= docs[0]["metadata"]["labels"].items()
d = json.load(open("deploy/grafana/gpulog-dashboard.json"))
assert d["templating"]["list"][0] == {**d["templating"]["list"][0], "type": "datasource", "query": "prometheus"}
bad = [p["title"] for p in d["panels"] if p["type"] != "row" and p["datasource"]["uid"] != "${datasource}"]
bad += [p["title"] for p in d["panels"] for t in p.get("targets", []) if t["datasource"]["uid"] != "${datasource}"]
assert not bad, bad
print(len(d["panels"]), "panels")
PYEOF
finish
