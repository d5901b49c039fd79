#!/usr/bin/env python3
"""The man pages tools/genman.py makes from the binary (issue 17):
  - one page per command listed by `gpulog --help`, plus gpulog(1) and
    gpulog.yaml(5); nothing else;
  - each formats without a warning (`man --warnings -l`) and has the NAME
    line lexgrog reads, with the summary `gpulog --help` gives the command;
  - nothing is lost: every line of `gpulog [CMD] --help` (its words, in
    order, case and a heading's colon aside) is in the formatted page, and
    every key and environment variable of `gpulog config docs` is in
    gpulog.yaml(5).
Needs man-db (scripts/deps.sh). Ends with "N passed, N failed"."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import finish  # noqa: E402
import lib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPULOG = os.environ.get("GPULOG") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog")


def check(name, cond, detail=""):
    """lib.check with the name first, as the checks below read best."""
    lib.check(bool(cond), name, detail)


def run(*args, env=None):
    return subprocess.run(list(args), capture_output=True, text=True, env=env)


def norm(text):
    """Words, lower-cased, without a trailing colon (headings change case and drop it)."""
    return [w.lower().rstrip(":") for w in text.split()]


def render(page):
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "MANWIDTH": "100"}
    r = run("man", "--warnings", "-E", "ascii", "-l", page, env=env)
    return r.returncode, r.stdout, r.stderr.strip()


def lost_lines(help_text, page_text):
    """Lines of a --help text whose words do not appear, in order, in the page."""
    hay = " " + " ".join(norm(page_text)) + " "
    lost = []
    for ln in help_text.split("\n"):
        w = norm(ln)
        if not w or ln.startswith("usage:"):
            continue
        if w[0] == "-" and ln.lstrip().startswith("- "):
            w = w[1:]                          # a bullet's dash becomes the bullet
        if ln.startswith(("Exit status:", "Signals:")):
            w = w[2:] if ln.startswith("Exit") else w[1:]    # the label becomes a section
        if w and " " + " ".join(w) + " " not in hay:
            lost.append(ln.strip())
    return lost


def main():
    tmp = tempfile.mkdtemp(prefix="t_man.", dir=os.environ.get("GPULOG_TEST_TMP"))
    r = run(sys.executable, os.path.join(ROOT, "tools/genman.py"), GPULOG, tmp)
    check("genman.py runs", r.returncode == 0, r.stderr)
    top = run(GPULOG, "--help").stdout
    cmds = dict(re.findall(r"^  ([a-z]+)\s{2,}(.*)$", top, re.M))
    check("gpulog --help lists commands (%s)" % " ".join(cmds), len(cmds) >= 5)
    want = {"gpulog.1", "gpulog.yaml.5"} | {"gpulog-%s.1" % c for c in cmds}
    have = set(os.listdir(tmp))
    check("pages: one per command, gpulog(1), gpulog.yaml(5)", have == want,
          "missing %s, extra %s" % (sorted(want - have), sorted(have - want)))

    for c in [None] + sorted(cmds):
        name = "gpulog-" + c if c else "gpulog"
        page = os.path.join(tmp, name + ".1")
        if not os.path.exists(page):
            continue
        rc, text, err = render(page)
        check(name + "(1): man --warnings -l, no warning", rc == 0 and not err and text, err)
        lg = run("lexgrog", page).stdout
        summary = cmds[c] if c else top.split("\n")[0].split(" - ", 1)[1]
        check(name + "(1): lexgrog NAME line", '"%s - %s"' % (name, summary) in lg, lg.strip())
        h = run(GPULOG, *([c] if c else []), "--help").stdout
        if not c:
            h = "\n".join(h.split("\n")[1:])       # the title line is the NAME line
        lost = lost_lines(h, text)
        check(name + "(1): every --help line is in the page", not lost, "; ".join(lost[:5]))
        block = h[h.index("usage: "):].split("\n\n")[0].split("\n")
        usage = [l[7:].split() for l in block]
        syn = text.split("DESCRIPTION")[0].split()
        check(name + "(1): SYNOPSIS has the usage lines", all(
            any(syn[i:i + len(u)] == u for i in range(len(syn))) for u in usage if u))

    page = os.path.join(tmp, "gpulog.yaml.5")
    if os.path.exists(page):
        rc, text, err = render(page)
        check("gpulog.yaml(5): man --warnings -l, no warning", rc == 0 and not err and text, err)
        lg = run("lexgrog", page).stdout
        check("gpulog.yaml(5): lexgrog NAME line", '"gpulog.yaml - ' in lg, lg.strip())
        docs = run(GPULOG, "config", "docs").stdout
        keys = re.findall(r"^\| `([^`]+)` \|", docs, re.M)
        envs = re.findall(r"`(GPULOG_[A-Z_]+)`", docs)
        words = {w.rstrip(".") for w in re.findall(r"[\w.\[\]]+", text)}
        missing = [k for k in keys + envs if k not in words]
        check("gpulog.yaml(5): all %d keys and %d variables of config docs" % (len(keys), len(set(envs))),
              len(keys) > 20 and not missing, " ".join(missing[:8]))
        heads = re.findall(r"^## (.*)$", docs, re.M)
        check("gpulog.yaml(5): a section per heading of config docs",
              all(re.search(r"^" + re.escape(hd.upper()) + r"$", text, re.M) for hd in heads))

    subprocess.run(["rm", "-rf", tmp])
    finish()


if __name__ == "__main__":
    main()
