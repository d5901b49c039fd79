#!/usr/bin/env python3
"""Writes the Kibana saved objects gpulog ships (schemas/kibana/*.ndjson):

  data-views.ndjson   data views metrics-gpu.dmon-*, logs-gpu.xid-*, logs-gpu.anomaly-*
  fleet.ndjson        "gpulog: fleet overview" (GPU incidents first, hosts, hottest GPUs,
                      Xid events, alerts)
  gpu.ndjson          "gpulog: per GPU" (host / GPU controls, one chart per metric)
  anomalies.ndjson    "gpulog: anomalies" (GPU incidents first, then episodes over time, by
                      rule, by series, list)
  fleet-incidents.ndjson  "gpulog: fleet incidents" (gpulog fleet's incidents across hosts,
                      hosts by GPU incidents started and ended, actions recommended)

Objects are aggregation-based visualizations, saved searches and dashboards
in the Kibana 7.10 saved-object format (migrationVersion set), which every
later Kibana migrates on import; ids are stable so `_import?overwrite=true`
(gpulog setup --kibana) is idempotent. Data views are in every file that
uses them, so each file imports on its own.

    python3 schemas/kibana/gen_kibana.py          # rewrite the files
    python3 schemas/kibana/gen_kibana.py --check  # exit 1 if a file is stale
tests/t_es_kibana.py checks them structurally against the index templates.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIG = {"index-pattern": "7.6.0", "visualization": "7.10.0", "dashboard": "7.9.3", "search": "7.9.3"}
DV = {"metrics": ("gpulog-dv-metrics", "metrics-gpu.dmon-*", "gpulog metrics"),
      "xid": ("gpulog-dv-xid", "logs-gpu.xid-*", "gpulog Xid events"),
      "anomaly": ("gpulog-dv-anomaly", "logs-gpu.anomaly-*", "gpulog anomalies")}
SRC_REF = "kibanaSavedObjectMeta.searchSourceJSON.index"
# the anomaly data stream holds the rules' episodes (gpu.anomaly) and the
# incidents that group them (gpu.incident): query prefixes for each
EPISODES = 'event.dataset : "gpu.anomaly"'
INCIDENTS = 'event.dataset : "gpu.incident"'
FLEET = 'event.dataset : "gpu.fleet_incident"'


def obj(type_, id_, attrs, refs):
    return {"type": type_, "id": id_, "attributes": attrs, "references": refs,
            "migrationVersion": {type_: MIG[type_]}, "managed": False}


def data_view(key):
    id_, title, name = DV[key]
    return obj("index-pattern", id_, {"title": title, "timeFieldName": "@timestamp", "name": name}, [])


def search_source(query="", with_index=True):
    s = {"query": {"query": query, "language": "kuery"}, "filter": []}
    if with_index:
        s["indexRefName"] = SRC_REF
    return json.dumps(s, sort_keys=True)


def vis(id_, title, dv, vis_type, aggs, params, query="", desc=""):
    state = {"title": title, "type": vis_type, "aggs": aggs, "params": params}
    return obj("visualization", id_, {
        "title": title, "description": desc, "version": 1, "uiStateJSON": "{}",
        "visState": json.dumps(state, sort_keys=True),
        "kibanaSavedObjectMeta": {"searchSourceJSON": search_source(query)}},
        [{"name": SRC_REF, "type": "index-pattern", "id": DV[dv][0]}])


def agg(i, type_, schema, **params):
    return {"id": str(i), "enabled": True, "type": type_, "schema": schema, "params": params}


def date_hist(i=2):
    return agg(i, "date_histogram", "segment", field="@timestamp", interval="auto",
               min_doc_count=1, extended_bounds={})


def xy(kind, label, unit):
    return {"type": kind, "grid": {"categoryLines": False},
            "categoryAxes": [{"id": "CategoryAxis-1", "type": "category", "position": "bottom", "show": True,
                              "scale": {"type": "linear"},
                              "labels": {"show": True, "filter": True, "truncate": 100}, "title": {}}],
            "valueAxes": [{"id": "ValueAxis-1", "name": "LeftAxis-1", "type": "value", "position": "left",
                           "show": True, "scale": {"type": "linear", "mode": "normal"},
                           "labels": {"show": True, "rotate": 0, "filter": False, "truncate": 100},
                           "title": {"text": unit}}],
            "seriesParams": [{"show": True, "type": kind, "mode": "stacked" if kind == "histogram" else "normal",
                              "data": {"label": label, "id": "1"}, "valueAxis": "ValueAxis-1",
                              "drawLinesBetweenPoints": True, "lineWidth": 2, "showCircles": False,
                              "interpolate": "linear"}],
            "addTooltip": True, "addLegend": True, "legendPosition": "right", "times": [],
            "addTimeMarker": False, "labels": {},
            "thresholdLine": {"show": False, "value": 10, "width": 1, "style": "full", "color": "#E7664C"}}


def line_by_gpu(id_, title, field, fn, unit):
    """one chart per host, one line per GPU, of fn(field) over time"""
    return vis(id_, title, "metrics", "line", [
        agg(1, fn, "metric", field=field), date_hist(),
        agg(3, "terms", "split", field="host.name", size=10, order="desc", orderBy="1", row=True),
        agg(4, "terms", "group", field="gpu.index", size=16, order="asc", orderBy="_key")],
        xy("line", "%s %s" % (fn, field), unit))


def table(id_, title, dv, metrics, rows, query=""):
    aggs = [agg(i + 1, fn, "metric", **({"field": f} if f else {})) for i, (fn, f) in enumerate(metrics)]
    base = len(aggs)
    for j, (f, size) in enumerate(rows):
        aggs.append(agg(base + j + 1, "terms", "bucket", field=f, size=size, order="desc", orderBy="1"))
    return vis(id_, title, dv, "table", aggs,
               {"perPage": 20, "showPartialRows": False, "showMetricsAtAllLevels": False,
                "showTotal": False, "totalFunc": "sum", "percentageCol": ""}, query)


def metric(id_, title, dv, fn, field=None, query=""):
    return vis(id_, title, dv, "metric", [agg(1, fn, "metric", **({"field": field} if field else {}))],
               {"addTooltip": True, "addLegend": False, "type": "metric",
                "metric": {"percentageMode": False, "useRanges": False, "colorSchema": "Green to Red",
                           "metricColorMode": "None", "colorsRange": [{"from": 0, "to": 10000}],
                           "labels": {"show": True}, "invertColors": False,
                           "style": {"bgFill": "#000", "bgColor": False, "labelColor": False,
                                     "subText": "", "fontSize": 48}}}, query)


def over_time(id_, title, dv, split, query=""):
    return vis(id_, title, dv, "histogram", [
        agg(1, "count", "metric"), date_hist(),
        agg(3, "terms", "group", field=split, size=10, order="desc", orderBy="1")],
        xy("histogram", "Count", "events"), query)


def controls(id_, title, dv, fields):
    ctl, refs = [], []
    for i, (f, label) in enumerate(fields):
        ref = "control_%d_index_pattern" % i
        ctl.append({"id": str(i + 1), "fieldName": f, "label": label, "type": "list", "parent": "",
                    "indexPatternRefName": ref,
                    "options": {"type": "terms", "multiselect": True, "dynamicOptions": True,
                                "size": 20, "order": "desc"}})
        refs.append({"name": ref, "type": "index-pattern", "id": DV[dv][0]})
    state = {"title": title, "type": "input_control_vis", "aggs": [],
             "params": {"controls": ctl, "updateFiltersOnChange": True, "useTimeFilter": False,
                        "pinFilters": False}}
    return obj("visualization", id_, {
        "title": title, "description": "", "version": 1, "uiStateJSON": "{}",
        "visState": json.dumps(state, sort_keys=True),
        "kibanaSavedObjectMeta": {"searchSourceJSON": search_source(with_index=False)}}, refs)


def search(id_, title, dv, columns, query=""):
    return obj("search", id_, {
        "title": title, "description": "", "columns": columns, "sort": [["@timestamp", "desc"]],
        "version": 1, "kibanaSavedObjectMeta": {"searchSourceJSON": search_source(query)}},
        [{"name": SRC_REF, "type": "index-pattern", "id": DV[dv][0]}])


def dashboard(id_, title, desc, panels):
    """panels: (object, w, h) laid out left to right on a 48-column grid"""
    pj, refs, x, y, rowh = [], [], 0, 0, 0
    for i, (o, w, h) in enumerate(panels):
        if x + w > 48:
            x, y, rowh = 0, y + rowh, 0
        pj.append({"panelIndex": str(i + 1), "gridData": {"x": x, "y": y, "w": w, "h": h, "i": str(i + 1)},
                   "version": "7.10.0", "panelRefName": "panel_%d" % i, "embeddableConfig": {}})
        refs.append({"name": "panel_%d" % i, "type": o["type"], "id": o["id"]})
        x, rowh = x + w, max(rowh, h)
    return obj("dashboard", id_, {
        "title": title, "description": desc, "hits": 0, "version": 1, "timeRestore": False,
        "panelsJSON": json.dumps(pj, sort_keys=True),
        "optionsJSON": json.dumps({"useMargins": True, "hidePanelTitles": False}),
        "kibanaSavedObjectMeta": {"searchSourceJSON": search_source(with_index=False)}}, refs)


def files():
    dv = {k: data_view(k) for k in DV}
    out = {"data-views.ndjson": [dv["metrics"], dv["xid"], dv["anomaly"]]}

    hosts = metric("gpulog-fleet-hosts", "Hosts reporting", "metrics", "cardinality", "host.name")
    xids = metric("gpulog-fleet-xid-critical", "Critical Xid/SXid events", "xid", "count",
                  query='gpu.xid.severity : "critical" or gpu.sxid.severity : "critical"')
    alerts = metric("gpulog-fleet-alerts", "Anomaly episodes opened", "anomaly", "count",
                    query=EPISODES + ' and event.type : "start"')
    # incidents (gpu.incident: a GPU's overlapping episodes as one) come first
    incidents = metric("gpulog-fleet-incidents", "GPU incidents opened", "anomaly", "count",
                       query=INCIDENTS + ' and event.type : "start"')
    inc_list = search("gpulog-search-incidents", "gpulog: GPU incidents", "anomaly",
                      ["host.name", "gpu.index", "event.type", "event.severity", "event.risk_score", "anomaly.rules",
                       "anomaly.rule_count", "anomaly.duration_s", "event.reason"], query=INCIDENTS)
    hot = table("gpulog-fleet-hottest", "Hottest GPUs", "metrics",
                [("max", "gpu.temperature.gpu"), ("max", "gpu.power.usage"),
                 ("avg", "gpu.utilization.gpu.pct"), ("max", "gpu.memory.framebuffer.used_size")],
                [("host.name", 50), ("gpu.index", 16)])
    xid_time = over_time("gpulog-fleet-xid-time", "Xid events by severity", "xid", "gpu.xid.severity")
    xid_hosts = table("gpulog-fleet-xid-hosts", "Xid events by host and code", "xid",
                      [("count", None), ("max", "event.severity")],
                      [("host.name", 50), ("gpu.xid.code", 20), ("gpu.xid.name", 1)])
    alert_hosts = table("gpulog-fleet-alert-hosts", "Anomalies by host", "anomaly",
                        [("count", None), ("max", "event.risk_score")], [("host.name", 50), ("rule.name", 10)],
                        query=EPISODES)
    xid_list = search("gpulog-search-xid", "gpulog: Xid events", "xid",
                      ["host.name", "gpu.pci.bus_id", "gpu.xid.code", "gpu.xid.name", "gpu.xid.severity",
                       "gpu.xid.action", "gpu.sxid.code", "gpu.sxid.name", "gpu.sxid.severity", "message"])
    fleet = dashboard("gpulog-dashboard-fleet", "gpulog: fleet overview",
                      "Every host and GPU: reporting hosts, hottest GPUs, Xid events and anomaly alerts.",
                      [(incidents, 12, 12), (inc_list, 36, 12), (hosts, 16, 8), (xids, 16, 8), (alerts, 16, 8),
                       (hot, 24, 15), (xid_time, 24, 15), (xid_hosts, 24, 15), (alert_hosts, 24, 15),
                       (xid_list, 48, 15)])
    out["fleet.ndjson"] = [dv["metrics"], dv["xid"], dv["anomaly"], incidents, hosts, xids, alerts, inc_list, hot,
                           xid_time, xid_hosts, alert_hosts, xid_list, fleet]

    ctl = controls("gpulog-gpu-controls", "Host and GPU", "metrics",
                   [("host.name", "Host"), ("gpu.index", "GPU"), ("gpu.uuid", "GPU UUID")])
    charts = [
        line_by_gpu("gpulog-gpu-temp", "GPU temperature", "gpu.temperature.gpu", "max", "°C"),
        line_by_gpu("gpulog-gpu-memtemp", "Memory temperature", "gpu.temperature.memory", "max", "°C"),
        line_by_gpu("gpulog-gpu-power", "Power draw", "gpu.power.usage", "avg", "W"),
        line_by_gpu("gpulog-gpu-util", "SM utilization", "gpu.utilization.gpu.pct", "avg", "%"),
        line_by_gpu("gpulog-gpu-memutil", "Memory utilization", "gpu.utilization.memory_copy.pct", "avg", "%"),
        line_by_gpu("gpulog-gpu-fb", "Framebuffer used", "gpu.memory.framebuffer.used_size", "max", "MiB"),
        line_by_gpu("gpulog-gpu-smclk", "SM clock", "gpu.clock.streaming_multiprocessor_frequency", "avg", "MHz"),
        line_by_gpu("gpulog-gpu-pviol", "Power throttling", "gpu.throttling.power.pct", "max", "%"),
        line_by_gpu("gpulog-gpu-ecc", "ECC double-bit errors", "gpu.ecc.double_bit.count", "max", "count"),
        line_by_gpu("gpulog-gpu-replay", "PCIe replays", "gpu.pcie.replay", "max", "count"),
    ]
    gpu_alerts = table("gpulog-gpu-alerts", "Anomalies of the selected GPUs", "anomaly",
                       [("count", None), ("max", "event.risk_score")],
                       [("gpu.index", 16), ("anomaly.metric", 10), ("rule.name", 10)], query=EPISODES)
    gpu = dashboard("gpulog-dashboard-gpu", "gpulog: per GPU",
                    "Pick a host and GPU with the controls; one line per GPU for each metric.",
                    [(ctl, 48, 6)] + [(c, 24, 12) for c in charts] + [(gpu_alerts, 48, 12)])
    out["gpu.ndjson"] = [dv["metrics"], dv["anomaly"], ctl] + charts + [gpu_alerts, gpu]

    a_time = over_time("gpulog-anom-time", "Anomalies over time by rule", "anomaly", "rule.id",
                       query=EPISODES + ' and event.type : "start"')
    a_sev = over_time("gpulog-anom-metric", "Anomalies by metric", "anomaly", "anomaly.metric",
                      query=EPISODES + ' and event.type : "start"')
    a_series = table("gpulog-anom-series", "Anomalous series", "anomaly",
                     [("count", None), ("max", "event.risk_score"), ("max", "anomaly.value")],
                     [("host.name", 50), ("gpu.index", 16), ("anomaly.metric", 20), ("rule.name", 10)],
                     query=EPISODES + ' and (event.type : "start" or event.type : "change")')
    a_open = metric("gpulog-anom-open", "Episodes opened", "anomaly", "count", query=EPISODES + ' and event.type : "start"')
    i_table = table("gpulog-anom-incidents", "GPU incidents: rules, peak risk, length", "anomaly",
                    [("max", "event.risk_score"), ("max", "anomaly.rule_count"), ("max", "anomaly.duration_s")],
                    [("host.name", 50), ("gpu.index", 16), ("anomaly.rules", 10)], query=INCIDENTS + ' and event.type : "end"')
    a_risk = metric("gpulog-anom-risk", "Highest incident risk score", "anomaly", "max", "event.risk_score",
                    query=INCIDENTS)
    a_list = search("gpulog-search-anomalies", "gpulog: anomalies", "anomaly",
                    ["host.name", "gpu.index", "rule.name", "event.type", "anomaly.metric", "anomaly.value",
                     "anomaly.expected_low", "anomaly.expected_high", "event.risk_score", "event.reason"],
                    query=EPISODES)
    anom = dashboard("gpulog-dashboard-anomalies", "gpulog: anomalies",
                     "GPU incidents first (a GPU's overlapping episodes as one), then the detector's episodes by "
                     "rule and metric, the series they concern, the reasons.",
                     [(incidents, 24, 8), (a_risk, 24, 8), (inc_list, 48, 14), (i_table, 48, 12), (a_open, 48, 8),
                      (a_time, 24, 15), (a_sev, 24, 15), (a_series, 48, 15), (a_list, 48, 18)])
    out["anomalies.ndjson"] = [dv["anomaly"], incidents, inc_list, i_table, a_time, a_sev, a_series, a_open, a_risk,
                               a_list, anom]

    # gpulog fleet: one fault on many GPUs of many hosts (gpu.fleet_incident),
    # then what the GPU incidents say per host and which actions they ask for
    f_open = metric("gpulog-fleet-inc-opened", "Fleet incidents opened", "anomaly", "count",
                    query=FLEET + ' and event.type : "start"')
    f_gpus = metric("gpulog-fleet-inc-gpus", "Most GPUs in one fleet incident", "anomaly", "max", "anomaly.gpu_count",
                    query=FLEET)
    f_list = search("gpulog-search-fleet-incidents", "gpulog: fleet incidents", "anomaly",
                    ["event.type", "anomaly.signature", "anomaly.group_by", "anomaly.group", "anomaly.host_count",
                     "anomaly.gpu_count", "anomaly.open_count", "anomaly.action", "event.reason", "anomaly.hosts",
                     "anomaly.gpus"], query=FLEET)
    f_table = table("gpulog-fleet-inc-table", "Fleet incidents by signature and group", "anomaly",
                    [("max", "anomaly.gpu_count"), ("max", "anomaly.host_count"), ("max", "anomaly.span_s")],
                    [("anomaly.signature", 20), ("anomaly.group", 20), ("anomaly.incident_id", 50)], query=FLEET)
    f_time = over_time("gpulog-fleet-inc-time", "Fleet incidents over time by signature", "anomaly",
                       "anomaly.signature", query=FLEET + ' and event.type : "start"')
    # a GPU incident is open between its start and end record: per host the
    # two counts side by side, the difference is what is open
    h_open = table("gpulog-fleet-hosts-open", "Hosts by GPU incidents started and ended (the difference is open)",
                   "anomaly", [("count", None)], [("host.name", 50), ("event.type", 2)], query=INCIDENTS)
    actions = table("gpulog-fleet-actions", "Actions recommended by GPU incidents opened (anomaly.action)", "anomaly",
                    [("count", None), ("cardinality", "host.name")], [("anomaly.action", 10), ("host.name", 50)],
                    query=INCIDENTS + ' and event.type : "start" and anomaly.action : *')
    fleet_inc = dashboard("gpulog-dashboard-fleet-incidents", "gpulog: fleet incidents",
                          "Faults that started on many GPUs of many hosts within a short time (gpulog fleet), "
                          "then the hosts' GPU incidents and the actions they recommend.",
                          [(f_open, 16, 8), (f_gpus, 16, 8), (f_time, 16, 8), (f_list, 48, 15), (f_table, 48, 12),
                           (h_open, 24, 15), (actions, 24, 15)])
    out["fleet-incidents.ndjson"] = [dv["anomaly"], f_open, f_gpus, f_list, f_table, f_time, h_open, actions, fleet_inc]
    return out


def main():
    check = "--check" in sys.argv
    stale = []
    for name, objs in sorted(files().items()):
        text = "".join(json.dumps(o, sort_keys=True, ensure_ascii=False) + "\n" for o in objs)
        path = os.path.join(HERE, name)
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old != text:
            stale.append(name)
            if not check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    if check and stale:
        print("stale (run schemas/kibana/gen_kibana.py): " + " ".join(stale))
        sys.exit(1)
    if not check:
        print("wrote " + (" ".join(stale) if stale else "nothing (up to date)"))


if __name__ == "__main__":
    main()
