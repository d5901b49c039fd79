#!/usr/bin/env python3
"""Builds the Elasticsearch/OpenSearch templates in schemas/es/ from
schemas/event.schema.json, so the mappings follow the event schema.

    python3 schemas/es/gen_templates.py          # rewrite the JSON files
    python3 schemas/es/gen_templates.py --check  # exit 1 if a file is stale

Mapping rules (documented in schemas/es/README.md):
  - dimensions (ids, names, enums, gpu.index, MIG ids, Xid codes) -> keyword
  - gauges (percent, degrees, MHz, W, MB/s) -> float; counters and sizes -> long
  - times -> date; message / event.reason -> text; event.original -> keyword,
    not indexed (kept in _source only)
  - "dynamic": false at the top and on every schema object, so an unknown key
    is kept in _source but never creates a mapping; the schema's families of
    dynamic keys (gpu.dmon.*, gpu.dcgm.*, metrics.*, labels.*, anomaly.* ...)
    are objects with "dynamic": true and typed dynamic templates.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "event.schema.json")
VERSION = 1

KEYWORD = {"type": "keyword", "ignore_above": 1024}
DIMENSION_INTS = {"gpu.index", "gpu.mig.gpu_instance", "gpu.mig.compute_instance",
                  "gpu.xid.code", "gpu.sxid.code"}
TEXT = {"message", "event.reason"}
COUNTER_DEFS = {"count", "mib"}
COUNTER_INTS = {"log.offset", "process.pid", "event.severity", "event.duration",
                "gpu.throttling.reasons"}


def mapping_for(name, spec, defs):
    ref = spec.get("$ref", "").rsplit("/", 1)[-1]
    if ref:
        base = dict(defs[ref])
        base.update({k: v for k, v in spec.items() if k != "$ref"})
        spec = base
    if name == "event.original":
        return {"type": "keyword", "index": False, "doc_values": False}
    if ref == "ts":
        return {"type": "date"}
    if name in TEXT:
        return {"type": "text"}
    if name in DIMENSION_INTS:
        return dict(KEYWORD)
    t = spec.get("type")
    if "enum" in spec or "const" in spec or t == "string":
        return dict(KEYWORD)
    if t == "boolean":
        return {"type": "boolean"}
    if t == "integer":
        if ref in COUNTER_DEFS or name in COUNTER_INTS:
            return {"type": "long"}
        # gauges (percent, degrees, MHz, MB/s) are "number" in the schema
        # since issue 27: an integer that is neither is a schema mistake
        raise SystemExit("gen_templates: integer %s is neither a counter nor a dimension" % name)
    if t == "number":
        return {"type": "float"}
    raise SystemExit("gen_templates: no mapping rule for %s %r" % (name, spec))


# families of dynamic keys: schema pattern prefix -> (object path, the
# path_match of its leaves, kind). A path_match never matches an object
# of the family (gpu.gpm.sm is an object, gpu.gpm.sm.pct a leaf).
FAMILIES = [
    (r"^gpu\.dmon\.[a-z0-9_]+$", "gpu.dmon", "gpu.dmon.*", "scalar"),
    (r"^gpu\.pmon\.[a-z0-9_]+$", "gpu.pmon", "gpu.pmon.*", "scalar"),
    (r"^gpu\.nvsmi\.[a-z0-9_]+$", "gpu.nvsmi", "gpu.nvsmi.*", "scalar"),
    (r"^gpu\.dcgm\.[a-z0-9_]+$", "gpu.dcgm", "gpu.dcgm.*", "scalar"),
    (r"^gpu\.gpm\.[a-z0-9_]+\.pct$", "gpu.gpm", "gpu.gpm.*.pct", "float"),
    (r"^gpu\.gpm\.[a-z0-9_]+\.throughput$", None, "gpu.gpm.*.throughput", "float"),
    (r"^metrics\.[a-z0-9_]+$", "metrics", "metrics.*", "double"),
    (r"^labels\.[a-z0-9_]+$", "labels", "labels.*", "keyword"),
    (r"^gpu\.throttling\.reason\.[a-z0-9_]+$", "gpu.throttling.reason", "gpu.throttling.reason.*", "boolean"),
    (r"^gpu\.process\.utilization\.[a-z0-9_]+\.pct$", "gpu.process.utilization",
     "gpu.process.utilization.*.pct", "float"),
    (r"^anomaly\.[a-z0-9_.]+$", "anomaly", "anomaly.*", "scalar"),
]


# anomaly.* keys the detectors write and the dashboards use: typed here as
# the anomaly.* dynamic templates would type them (strings keyword, numbers
# double), so the data views know them before the first alert arrives.
ANOMALY_KNOWN = {
    "anomaly.metric": dict(KEYWORD), "anomaly.detector": dict(KEYWORD),
    "anomaly.value": {"type": "double"}, "anomaly.expected_low": {"type": "double"},
    "anomaly.expected_high": {"type": "double"}, "anomaly.score": {"type": "double"},
    # incidents (event.dataset gpu.incident) and the ids of episodes and incidents
    "anomaly.incident_id": dict(KEYWORD), "anomaly.episode_id": dict(KEYWORD), "anomaly.rules": dict(KEYWORD),
    "anomaly.rule_count": {"type": "long"}, "anomaly.duration_s": {"type": "double"},
    "anomaly.peak_risk_score": {"type": "double"},
    # fleet incidents (event.dataset gpu.fleet_incident, gpulog fleet) and the
    # recommended action of an incident
    "anomaly.signature": dict(KEYWORD), "anomaly.group_by": dict(KEYWORD), "anomaly.group": dict(KEYWORD),
    "anomaly.hosts": {"type": "keyword", "ignore_above": 8191}, "anomaly.gpus": {"type": "keyword", "ignore_above": 8191},
    "anomaly.host_count": {"type": "long"}, "anomaly.gpu_count": {"type": "long"}, "anomaly.open_count": {"type": "long"},
    "anomaly.last_start": {"type": "date"}, "anomaly.span_s": {"type": "double"},
    "anomaly.action": dict(KEYWORD), "anomaly.action_reason": dict(KEYWORD), "anomaly.processes": dict(KEYWORD),
    "anomaly.process_count": {"type": "long"},
}


def put(tree, dotted, leaf):
    parts = dotted.split(".")
    node = tree
    for p in parts[:-1]:
        child = node.setdefault(p, {"dynamic": False, "properties": {}})
        if "properties" not in child:
            raise SystemExit("gen_templates: %s is both a field and an object" % dotted)
        node = child["properties"]
    if parts[-1] in node:
        raise SystemExit("gen_templates: %s defined twice" % dotted)
    node[parts[-1]] = leaf


def build(schema):
    defs = schema["$defs"]
    props = {}
    for name in sorted(schema["properties"]):
        put(props, name, mapping_for(name, schema["properties"][name], defs))
    dyn = []
    covered = set()
    for pat, path, match, kind in FAMILIES:
        covered.add(pat)
        if path:
            put(props, path, {"type": "object", "dynamic": True, "properties": {}})
        key = match.replace(".*", "").replace(".", "_")
        if kind == "scalar":
            dyn.append({key + "_strings": {"path_match": match, "match_mapping_type": "string",
                                           "mapping": dict(KEYWORD)}})
            for mt in ("long", "double"):      # typed, so objects (anomaly.x.y) never match
                dyn.append({key + "_" + mt: {"path_match": match, "match_mapping_type": mt,
                                             "mapping": {"type": "double"}}})
        elif kind == "keyword":
            dyn.append({key: {"path_match": match, "mapping": dict(KEYWORD)}})
        else:
            dyn.append({key: {"path_match": match, "mapping": {"type": kind}}})
    for name, leaf in sorted(ANOMALY_KNOWN.items()):
        put(props, name, leaf)
    for pat in schema.get("patternProperties", {}):
        if pat not in covered:
            raise SystemExit("gen_templates: schema family %s has no mapping rule" % pat)
    return {"dynamic": False, "date_detection": False, "numeric_detection": False,
            "dynamic_templates": dyn, "properties": props}


def meta(desc):
    return {"description": desc, "managed_by": "gpulog setup",
            "source": "schemas/event.schema.json via schemas/es/gen_templates.py"}


def files(schema):
    out = {}
    out["component_template.gpulog-mappings.json"] = {
        "version": VERSION, "_meta": meta("gpulog event fields (schema v1)"),
        "template": {"mappings": build(schema)}}
    out["component_template.gpulog-settings.json"] = {
        "version": VERSION, "_meta": meta("gpulog index settings"),
        "template": {"settings": {"index.mapping.total_fields.limit": 2000,
                                  "index.refresh_interval": "5s"}}}
    for name, pattern, life in [
            ("gpulog-logs-xid", "logs-gpu.xid-*", "gpulog-logs"),
            ("gpulog-logs-anomaly", "logs-gpu.anomaly-*", "gpulog-logs"),
            ("gpulog-metrics-dmon", "metrics-gpu.dmon-*", "gpulog-metrics")]:
        m = meta("gpulog data streams " + pattern)
        m["lifecycle"] = life
        out["index_template.%s.json" % name] = {
            "index_patterns": [pattern], "data_stream": {}, "priority": 500,
            "composed_of": ["gpulog-settings", "gpulog-mappings"],
            "version": VERSION, "_meta": m}
        if life == "gpulog-logs":
            # anomalies and Xids are few and wanted at once: searchable within 1 s of
            # indexing (the 5 s of the metrics streams made the line-to-searchable p99
            # 5.4 s in bench/latency_bench.py; target 2 s)
            out["index_template.%s.json" % name]["template"] = {"settings": {"index.refresh_interval": "1s"}}
    for life, days, pats in [("gpulog-logs", 90, ["logs-gpu.xid-*", "logs-gpu.anomaly-*"]),
                             ("gpulog-metrics", 30, ["metrics-gpu.dmon-*"])]:
        out["ilm.%s.json" % life] = {"policy": {
            "_meta": meta("retention %d days" % days),
            "phases": {
                "hot": {"min_age": "0ms", "actions": {"rollover": {
                    "max_age": "1d", "max_primary_shard_size": "50gb"}}},
                "delete": {"min_age": "%dd" % days, "actions": {"delete": {}}}}}}
        out["ism.%s.json" % life] = {"policy": {
            "description": "gpulog retention %d days (managed by gpulog setup)" % days,
            "default_state": "hot",
            "states": [
                {"name": "hot", "actions": [{"rollover": {"min_index_age": "1d", "min_size": "50gb"}}],
                 "transitions": [{"state_name": "delete", "conditions": {"min_index_age": "%dd" % days}}]},
                {"name": "delete", "actions": [{"delete": {}}], "transitions": []}],
            "ism_template": [{"index_patterns": pats + [".ds-" + p for p in pats], "priority": 100}]}}
    return out


def main():
    with open(SCHEMA) as f:
        schema = json.load(f)
    check = "--check" in sys.argv
    stale = []
    for name, obj in sorted(files(schema).items()):
        text = json.dumps(obj, indent=2, sort_keys=True) + "\n"
        path = os.path.join(HERE, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(name)
            if not check:
                with open(path, "w") as f:
                    f.write(text)
    if check and stale:
        print("stale (run schemas/es/gen_templates.py): " + " ".join(stale))
        sys.exit(1)
    if not check:
        print("wrote " + (" ".join(stale) if stale else "nothing (up to date)"))


if __name__ == "__main__":
    main()
