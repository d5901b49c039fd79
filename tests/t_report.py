#!/usr/bin/env python3
"""`gpulog report` in a real browser: Debian's chromium, headless, opens the
report of the demo trace (data/demo), of an empty input and of a log whose
host name is a <script> element. For each page: no console errors (the
page's one state line aside), a screenshot that is not blank (pixel
statistics with Pillow), and on the demo every GPU's panel drawn (chart-blue
and non-background pixels inside its rectangle) plus the heat strip
coloured. The hostile page must show the host as text and hold only its own
three <script> elements. Also: `run --report` writes the same page next to
its NDJSON; SIGTERM during a report leaves a whole page marked partial and a
non-zero status. (Page size on a day of 1 s samples, 2,000 GPUs, the most
severe kept: tests/test_report.c, bench/.)
REPORT_SCREENSHOT=FILE keeps the demo's screenshot (docs/report-demo.png is
one, cropped to its top 1500 pixels).
Ends with "N passed, N failed".
"""
import calendar
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import lib
from lib import check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
GPULOG = os.environ.get("GPULOG") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog")
TMP = tempfile.mkdtemp(prefix="t-report.", dir=os.environ.get("GPULOG_TEST_TMP") or None)
EVIL = "</script><script>alert(1)</script>"


def finish():
    shutil.rmtree(TMP, ignore_errors=True)
    lib.finish()


def report(args, out, stdin=None):
    p = subprocess.run([GPULOG, "report", "-o", out] + args, input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stderr.decode(errors="replace")


def browse(html, png, height, hash=""):
    """Opens html in headless chromium, screenshots it; returns (state, errors)."""
    p = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--no-first-run", "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(TMP, "profile"),
                        "--window-size=1280,%d" % height, "--screenshot=" + png,
                        "--enable-logging=stderr", "--v=0", "file://" + os.path.abspath(html) + hash],
                       capture_output=True, timeout=120)
    state, errors = None, []
    for line in p.stderr.decode(errors="replace").splitlines():
        m = re.search(r':CONSOLE[^\]]*\] "(.*)", source: ', line)
        if not m:
            continue
        msg = m.group(1)
        if msg.startswith("gpulog report: ") and state is None:
            try:
                state = json.loads(msg[len("gpulog report: "):])
                continue
            except ValueError:
                pass
        errors.append(msg)
    if p.returncode != 0:
        errors.append("chromium exit %d" % p.returncode)
    return state, errors


def is_bg(px):
    r, g, b = px
    return r > 240 and g > 240 and b > 240


def ink(img, box=None):
    """Fraction of non-background pixels and count of chart-blue ones in box."""
    im = img.crop(box) if box else img
    cols = im.getcolors(maxcolors=1 << 20) or []
    total = im.width * im.height
    fg = sum(n for n, c in cols if not is_bg(c))
    blue = sum(n for n, c in cols if c[2] > 120 and c[2] > c[0] + 50)
    return fg / max(1, total), blue, len(cols)


# the pages
demo, empty, evil = (os.path.join(TMP, n + ".html") for n in ("demo", "empty", "evil"))
t0 = time.time()
rc, err = report(["--tz", "UTC", "--host", "dgx-07", "data/demo/dgx-07.dmon.txt"], demo)
check(rc == 0, "report of the demo exits 0", err)
check("report written to " + demo in err, "report says where it wrote the page", err)
rc, err = report([os.devnull], empty)
check(rc == 0, "report of an empty input exits 0", err)
head = open("data/demo/dgx-07.dmon.txt", "rb").read().split(b"\n")[:200]
rc, err = report(["--tz", "UTC", "--host", EVIL, "-"], evil, stdin=b"\n".join(head) + b"\n")
check(rc == 0, "report of a hostile host name exits 0", err)
bad_out = os.path.join(TMP, "no-such-dir", "x.html")
rc, err = report([os.devnull], bad_out)
check(rc == 1 and bad_out + ": No such file or directory" in err, "an unwritable page is an I/O error (exit 1)", err)
# SIGTERM during a report: the page is replaced whole (a temporary file
# renamed), says it is partial, and the exit status is not 0
sig = os.path.join(TMP, "sig.html")
with open(sig, "w") as f:
    f.write("the previous complete page")
sp = subprocess.Popen([GPULOG, "report", "--tz", "UTC", "--host", "dgx-07", "-o", sig, "-"], stdin=subprocess.PIPE,
                      stderr=subprocess.PIPE)
sp.stdin.write(b"\n".join(open("data/demo/dgx-07.dmon.txt", "rb").read().split(b"\n")[:2000]) + b"\n")
sp.stdin.flush()
time.sleep(1.5)
sp.terminate()
try:
    serr = sp.communicate(timeout=30)[1].decode(errors="replace")
except subprocess.TimeoutExpired:
    sp.kill()
    serr = sp.communicate()[1].decode(errors="replace")
spage = open(sig, encoding="utf-8", errors="replace").read()
check(sp.returncode != 0, "SIGTERM during a report: exit status not 0 (%s)" % sp.returncode, serr[-600:])
check("<title>(partial) GPU report" in spage and "Partial report:</b> stopped by a signal" in spage,
      "SIGTERM during a report: the page says it is partial", spage[:300])
check("</html>" in spage and not [n for n in os.listdir(TMP) if ".tmp-" in n],
      "SIGTERM during a report: the page is whole, no temporary file left", os.listdir(TMP))
if not all(os.path.exists(f) for f in (demo, empty, evil)):
    finish()
size = os.path.getsize(demo)
check(10000 < size < 3 * 1024 * 1024, "demo page is one file under 3 MB", size)
page = open(demo, encoding="utf-8").read()
check(not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page) and "@import" not in page and "url(" not in page,
      "no network: nothing fetched from elsewhere")
# incidents (gpu.incident records: a GPU's overlapping episodes) first and apart,
# then the episodes by rule, most severe first, with no incident among them
inc_at, eps_at = page.find('<section id="gpu-incidents">'), page.find('<section id="incidents">')
eps_sec = page[eps_at:page.find("</section>", eps_at)]
inc_sec = page[inc_at:eps_at]
p = subprocess.run([GPULOG, "run", "--tz", "UTC", "--host", "dgx-07", "data/demo/dgx-07.dmon.txt"], capture_output=True,
                   timeout=120)
n_inc = p.stdout.count(b'"event.type":"start","rule.id":"gpu.incident"')
check(0 <= inc_at < eps_at and n_inc > 0 and inc_sec.count('<tr class="sev') == n_inc,
      "incidents listed first, one row per incident (%d)" % n_inc, (inc_at, eps_at, inc_sec.count('<tr class="sev')))
check("gpu.incident" not in eps_sec and "GPU incident" not in eps_sec, "no incident among the episodes by rule")
check(eps_sec.find("gpu.hang") < eps_sec.find("gpu.peer.clock") > 0, "episodes listed most severe first")
check('data-ep="' in inc_sec and "over after" in inc_sec, "an incident row zooms to its worst episode and says what it was")

# run --report: the same page next to the NDJSON records
rr = os.path.join(TMP, "run.html")
p = subprocess.run([GPULOG, "run", "--tz", "UTC", "--host", "dgx-07", "--report", rr, "data/demo/dgx-07.dmon.txt"],
                   capture_output=True, timeout=120)
check(p.returncode == 0 and p.stdout.count(b"\n") > 10 and os.path.exists(rr),
      "run --report writes NDJSON and the page", p.stderr[-500:])
if os.path.exists(rr):
    strip = lambda s: re.sub(r"Source</dt><dd>[^<]*", "", s)
    check(strip(open(rr).read()) == strip(page), "run --report writes the same page as report")

# the browser (scripts/deps.sh installs both)
try:
    from PIL import Image
except ImportError:
    Image = None
if not (check(shutil.which("chromium") is not None, "chromium is installed")
        & check(Image is not None, "python3-pil is installed")):
    finish()
tb = time.time()
pngs = {}
for name, html in (("demo", demo), ("empty", empty), ("evil", evil)):
    png = os.path.join(TMP, name + ".png")
    state, errors = browse(html, png, 2600 if name == "demo" else 900)
    pngs[name] = (png, state)
    check(not errors, name + ": no console errors", errors)
    check(state is not None, name + ": the script ran and reported")
    ok = os.path.exists(png)
    check(ok, name + ": screenshot taken")
    if not ok:
        continue
    img = Image.open(png).convert("RGB")
    fg, blue, ncol = ink(img)
    check(fg > 0.01 and ncol > 20, name + ": screenshot not blank", "ink %.4f, %d colours" % (fg, ncol))
# an incident's address zooms to it (the code path of a click on its row)
st, errors = browse(demo, os.path.join(TMP, "zoom.png"), 900, "#incident-0")
browser_s = time.time() - tb
check(not errors and st is not None, "demo#incident-0: no console errors", errors)
# the start of the row that zooms to episode 0 (the page's markup: when it
# changes, this check fails and says so, it does not go away)
m = re.search(r'data-ep="0"[^>]*>.*?<td class="nw">([0-9: -]+)</td>', page)
start = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) if m else None
view = st.get("view") if isinstance(st, dict) else None
a, b = (view[0] / 1000, view[1] / 1000) if isinstance(view, list) and len(view) == 2 else (None, None)
check(start is not None and a is not None and a < start < b and b - a < 900,
      "demo#incident-0: the view zooms to the worst incident",
      "no row with data-ep=\"0\" and a start cell <td class=\"nw\"> in the page (did the markup change?)" if m is None
      else "the page reported no view (%r)" % (st,) if a is None
      else "view %s, incident start %s" % (view, start))

png, st = pngs["demo"]
if st and os.path.exists(png):
    img = Image.open(png).convert("RGB")
    check(st["rendered"] == 8 and len(st["panels"]) == 8, "demo: 8 GPU panels", st)
    for pn in st["panels"]:
        x, y, w, h = pn["rect"]
        if not check(y + h <= img.height and w > 300, "demo: %s inside the screenshot" % pn["name"], pn):
            continue
        fg, blue, _ = ink(img, (x, y, x + w, y + h))
        check(pn["drawn"] >= 5 and fg > 0.08 and blue > 2000, "demo: %s charts drawn" % pn["name"],
              "drawn %d, ink %.3f, blue px %d" % (pn["drawn"], fg, blue))
    if check(st["heat"] is not None, "demo: heat strip present", st):
        x, y, w, h = st["heat"]
        hs = img.crop((x + 130, y, x + w, y + h)).getcolors(maxcolors=1 << 20) or []
        coloured = sum(n for n, c in hs if not is_bg(c))
        check(len(hs) > 30 and coloured > 0.7 * (w - 130) * h, "demo: heat strip coloured",
              "%d colours, %d coloured px" % (len(hs), coloured))
    keep = os.environ.get("REPORT_SCREENSHOT")
    if keep:
        img.crop((0, 0, img.width, min(img.height, 1500))).save(keep, optimize=True)
png, st = pngs["empty"]
if st:
    check(st["rendered"] == 0 and st["panels"] == [], "empty: no GPU panels, a page all the same", st)
png, st = pngs["evil"]
if st:
    check(st["node"] == EVIL, "hostile host shown as text", st.get("node"))
    check(st["scripts"] == 3, "hostile host adds no script", st.get("scripts"))

print("browser: %.1f s for 4 page loads; whole test %.1f s" % (browser_s, time.time() - t0))
finish()
