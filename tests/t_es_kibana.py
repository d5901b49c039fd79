#!/usr/bin/env python3
"""t_es_kibana.py - the shipped Elasticsearch templates and Kibana saved
objects, checked structurally (no Kibana or cluster needed):
  - schemas/es/*.json and schemas/kibana/*.ndjson are what the generators
    make from schemas/event.schema.json (nobody edited them by hand, and a
    schema change was carried into the templates)
  - every event.schema.json property is mapped, with a type that fits its
    JSON type; dynamic families have typed dynamic templates
  - every NDJSON line is a saved object (type, id, attributes, references)
    whose JSON-string attributes parse
  - every reference resolves to an object of the same file (each file
    imports on its own), every panel/index/control ref name has a reference
  - every field a visualization, control, saved search or query uses exists
    in the index template mappings, is aggregatable where it is aggregated
    and numeric where a numeric aggregation needs it
  - data view titles are exactly the index templates' patterns; the three
    dashboards exist and every visualization sits on one
  - the checker itself catches a broken reference and an unknown field
Ends with "N passed, N failed".
"""
import copy
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ES = os.path.join(ROOT, "schemas", "es")
KB = os.path.join(ROOT, "schemas", "kibana")
from lib import check, finish  # noqa: E402


def flatten(props, prefix=""):
    out = {}
    for k, v in props.items():
        if "properties" in v:
            out.update(flatten(v["properties"], prefix + k + "."))
        else:
            out[prefix + k] = v
    return out


NUMERIC = {"long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float"}
NUM_AGGS = {"avg", "max", "min", "sum", "median", "percentiles"}


def fields_of(o):
    """(field, how) pairs a saved object uses: how = agg type, 'control', 'column', 'query'"""
    a = o["attributes"]
    used = []
    if o["type"] == "visualization":
        st = json.loads(a["visState"])
        for ag in st.get("aggs", []):
            f = ag.get("params", {}).get("field")
            if f:
                used.append((f, ag["type"]))
        for c in st.get("params", {}).get("controls", []):
            used.append((c["fieldName"], "control"))
    if o["type"] == "search":
        used += [(c, "column") for c in a.get("columns", [])]
        used += [(s[0], "sort") for s in a.get("sort", [])]
    ss = a.get("kibanaSavedObjectMeta", {}).get("searchSourceJSON")
    if ss:
        q = json.loads(ss).get("query", {}).get("query", "")
        used += [(f, "query") for f in re.findall(r"([A-Za-z@][\w.@]*)\s*:", q)]
    return used


def problems(files, mapping, patterns):
    """every structural problem of a set of NDJSON files ({name: [objects]})"""
    errs = []
    for name, objs in files.items():
        have = {(o.get("type"), o.get("id")) for o in objs}
        if len(have) != len(objs):
            errs.append("%s: duplicate ids" % name)
        for o in objs:
            tag = "%s %s/%s" % (name, o.get("type"), o.get("id"))
            for k in ("type", "id", "attributes", "references"):
                if k not in o:
                    errs.append("%s: no %s" % (tag, k))
            if o.get("type") not in ("index-pattern", "visualization", "dashboard", "search"):
                errs.append("%s: unexpected type" % tag)
                continue
            a = o["attributes"]
            for k in ("visState", "panelsJSON", "uiStateJSON", "optionsJSON"):
                if k in a:
                    try:
                        json.loads(a[k])
                    except ValueError:
                        errs.append("%s: %s is not JSON" % (tag, k))
            ss = a.get("kibanaSavedObjectMeta", {}).get("searchSourceJSON")
            refnames = {r["name"] for r in o["references"]}
            for r in o["references"]:
                if (r["type"], r["id"]) not in have:
                    errs.append("%s: reference %s/%s not in %s" % (tag, r["type"], r["id"], name))
            needed = []
            if ss:
                s = json.loads(ss)
                if "indexRefName" in s:
                    needed.append(s["indexRefName"])
            if "panelsJSON" in a:
                needed += [p["panelRefName"] for p in json.loads(a["panelsJSON"])]
            if "visState" in a:
                for c in json.loads(a["visState"]).get("params", {}).get("controls", []):
                    needed.append(c["indexPatternRefName"])
            for n in needed:
                if n not in refnames:
                    errs.append("%s: ref name %s has no reference" % (tag, n))
            if o["type"] == "index-pattern":
                if a.get("title") not in patterns:
                    errs.append("%s: data view %s matches no index template" % (tag, a.get("title")))
                if a.get("timeFieldName") != "@timestamp":
                    errs.append("%s: time field is not @timestamp" % tag)
            for f, how in fields_of(o):
                m = mapping.get(f)
                if m is None:
                    errs.append("%s: field %s (%s) not in the mappings" % (tag, f, how))
                    continue
                t = m.get("type")
                if how not in ("column", "query") and (t == "text" or m.get("index") is False
                                                       or m.get("doc_values") is False):
                    errs.append("%s: field %s (%s) is not aggregatable (%s)" % (tag, f, how, t))
                if how in NUM_AGGS and t not in NUMERIC and t != "date":
                    errs.append("%s: %s of non-numeric %s (%s)" % (tag, how, f, t))
    return errs


def main():
    for gen in ("schemas/es/gen_templates.py", "schemas/kibana/gen_kibana.py"):
        r = subprocess.run([sys.executable, os.path.join(ROOT, gen), "--check"], capture_output=True, text=True)
        check(r.returncode == 0, "%s --check: files up to date %s" % (gen, r.stdout.strip()))

    schema = json.load(open(os.path.join(ROOT, "schemas", "event.schema.json")))
    comp = json.load(open(os.path.join(ES, "component_template.gpulog-mappings.json")))
    maps = comp["template"]["mappings"]
    mapping = flatten(maps["properties"])
    check(maps.get("dynamic") is False, "top-level mapping is dynamic: false")
    defs = schema["$defs"]
    bad = []
    for name, spec in schema["properties"].items():
        m = mapping.get(name)
        if "$ref" in spec:
            spec = dict(defs[spec["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in spec.items() if k != "$ref"})
        t = spec.get("type")
        if m is None:
            bad.append(name + " unmapped")
        elif "pattern" in spec and spec.get("pattern", "").startswith("^[0-9]{4}") and m["type"] != "date":
            bad.append(name + " is a time but mapped " + m["type"])
        elif t == "integer" and m["type"] not in ("long", "integer", "float", "keyword"):
            bad.append(name + " integer mapped " + m["type"])
        elif t == "number" and m["type"] not in ("float", "double", "scaled_float"):
            bad.append(name + " number mapped " + m["type"])
        elif t == "boolean" and m["type"] != "boolean":
            bad.append(name + " boolean mapped " + m["type"])
        elif (t == "string" or "enum" in spec or "const" in spec) and m["type"] not in ("keyword", "text", "date"):
            bad.append(name + " string mapped " + m["type"])
    check(not bad, "every schema property mapped with a fitting type %s" % bad[:5])
    dyn_paths = [next(iter(d.values()))["path_match"] for d in maps["dynamic_templates"]]
    fams = []
    for pat in schema.get("patternProperties", {}):
        lit = pat.strip("^$").replace("\\.", ".")
        lit = re.sub(r"\[[^\]]*\]\+", "*", lit)
        if not any(re.fullmatch(re.escape(p).replace("\\*", "[^.]+"), lit.replace("*", "x")) for p in dyn_paths):
            fams.append(pat)
    check(not fams, "every dynamic key family has a dynamic template %s" % fams)

    patterns = set()
    for f in glob.glob(os.path.join(ES, "index_template.*.json")):
        t = json.load(open(f))
        patterns.update(t["index_patterns"])
        check(t.get("data_stream") == {} and t["priority"] > 200 and "gpulog-mappings" in t["composed_of"],
              "%s: data stream template, priority %d, composed of the mappings" % (os.path.basename(f), t["priority"]))
    check(patterns == {"logs-gpu.xid-*", "logs-gpu.anomaly-*", "metrics-gpu.dmon-*"},
          "index templates cover the three data streams")

    files = {}
    for f in sorted(glob.glob(os.path.join(KB, "*.ndjson"))):
        objs, ok = [], True
        for i, line in enumerate(open(f, encoding="utf-8")):
            try:
                o = json.loads(line)
                ok = ok and isinstance(o, dict)
                objs.append(o)
            except ValueError:
                ok = False
        check(ok and objs, "%s: %d lines, each a JSON object" % (os.path.basename(f), len(objs)))
        files[os.path.basename(f)] = objs
    errs = problems(files, mapping, patterns)
    check(not errs, "saved objects: references resolve, fields exist and fit %s" % errs[:8])
    allobjs = [o for objs in files.values() for o in objs]
    dashes = {o["id"]: o for o in allobjs if o["type"] == "dashboard"}
    check({"gpulog-dashboard-fleet", "gpulog-dashboard-gpu", "gpulog-dashboard-anomalies",
           "gpulog-dashboard-fleet-incidents"} <= set(dashes),
          "fleet overview, per-GPU, anomaly and fleet incident dashboards are shipped")
    on_dash = {(r["type"], r["id"]) for d in dashes.values() for r in d["references"]}
    loose = [o["id"] for o in allobjs if o["type"] in ("visualization", "search") and (o["type"], o["id"]) not in on_dash]
    check(not loose, "every visualization and saved search is on a dashboard %s" % loose)
    nfields = len({f for o in allobjs for f, _ in fields_of(o)})
    check(nfields >= 20, "the dashboards use %d distinct fields" % nfields)

    # incidents (gpu.incident) first: on the fleet and anomaly dashboards the
    # top row holds an incident panel and an incident search comes before
    # any episode panel; every other panel of the anomaly data view counts
    # episodes only (an incident is not a second alarm)
    byid = {o["id"]: o for o in allobjs}

    def query_of(o):
        ss = o["attributes"].get("kibanaSavedObjectMeta", {}).get("searchSourceJSON")
        return json.loads(ss).get("query", {}).get("query", "") if ss else ""

    def panels(d):
        refs = {r["name"]: r["id"] for r in d["references"]}
        ps = sorted(json.loads(d["attributes"]["panelsJSON"]), key=lambda p: (p["gridData"]["y"], p["gridData"]["x"]))
        return [(p["gridData"]["y"], byid[refs[p["panelRefName"]]]) for p in ps]

    first_ok, mixed = [], []
    for did in ("gpulog-dashboard-fleet", "gpulog-dashboard-anomalies"):
        ps = panels(dashes[did])
        inc = [i for i, (_, o) in enumerate(ps) if '"gpu.incident"' in query_of(o)]
        eps = [i for i, (_, o) in enumerate(ps) if '"gpu.anomaly"' in query_of(o)]
        first_ok.append(bool(inc) and ps[inc[0]][0] == 0 and eps and
                        min(i for i in inc if ps[i][1]["type"] == "search") < min(eps))
    for o in allobjs:
        refs = [r["id"] for r in o["references"]]
        if o["type"] in ("visualization", "search") and "gpulog-dv-anomaly" in refs and "event.dataset" not in query_of(o):
            mixed.append(o["id"])
    check(all(first_ok), "fleet and anomaly dashboards show GPU incidents first %s" % first_ok)
    # the fleet incident view: fleet incidents on top (gpu.fleet_incident),
    # hosts by GPU incidents, the actions (anomaly.action) recommended
    ps = panels(dashes["gpulog-dashboard-fleet-incidents"])
    fields = {f for _, o in ps for f, _ in fields_of(o)}
    check(ps and '"gpu.fleet_incident"' in query_of(ps[0][1]) and ps[0][0] == 0
          and {"anomaly.signature", "anomaly.gpus", "anomaly.action", "host.name"} <= fields,
          "the fleet incident dashboard: fleet incidents first, their GPUs, hosts, actions")
    check(not mixed, "every anomaly panel picks episodes or incidents by event.dataset %s" % mixed)

    # the checker can fail: a dangling reference and an unknown field
    broken = copy.deepcopy(files)
    fl = broken["fleet.ndjson"]
    broken["fleet.ndjson"] = [o for o in fl if o["id"] != "gpulog-fleet-hottest"]
    e1 = problems(broken, mapping, patterns)
    broken = copy.deepcopy(files)
    v = next(o for o in broken["gpu.ndjson"] if o["id"] == "gpulog-gpu-temp")
    v["attributes"]["visState"] = v["attributes"]["visState"].replace("gpu.temperature.gpu", "gpu.temperature.gpuu")
    e2 = problems(broken, mapping, patterns)
    v["attributes"]["visState"] = v["attributes"]["visState"].replace("gpu.temperature.gpuu", "message")
    e3 = problems(broken, mapping, patterns)
    check(any("gpulog-fleet-hottest" in e for e in e1) and any("gpuu" in e for e in e2)
          and any("message" in e for e in e3),
          "the checker catches a dangling reference, an unknown field, a text field aggregated")
    finish()


if __name__ == "__main__":
    sys.exit(main())
