#!/usr/bin/env python3
"""t_gpucaptures.py - the real-GPU-capture part of `make eval`
(tools/gpucaptures.py): on the repo's public captures it counts GPUs,
samples and the GPU time the engine can judge (a capture without
timestamps is one sample time per GPU) and finds no episode; on a
generated 20-minute trace with a GPU hang every episode is counted and
listed with its rule; a header-less CSV takes its columns from the .args
file next to the golden files. Needs $BUILD/gpulog. Ends with "N passed,
N failed"."""
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True   # no __pycache__ in the tree
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from lib import check, finish  # noqa: E402

GPULOG = os.environ.get("GPULOG") or os.path.join(ROOT, os.environ.get("BUILD", "build"), "gpulog")
TOOL = os.path.join(ROOT, "tools", "gpucaptures.py")


def tool(*args):
    p = subprocess.run([sys.executable, TOOL, "--gpulog", GPULOG] + list(args), cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


if not check(os.access(GPULOG, os.X_OK), "gpulog built", GPULOG):
    finish()

# the 8-GPU dmon capture without timestamps: 16 lines, one sample time per GPU
rc, out, err = tool("tests/corpus/dmon/xuesongtap-s-m-8x-a100.txt", "tests/corpus/dmon/idonly-cn-notes-s-pucet-o-DT-2021.txt")
last = out.strip().splitlines()[-1] if out.strip() else ""
check(rc == 0, "runs on the corpus", err)
check("2 captures (2 multi-sample), 9 GPUs, 19 samples" in last, "GPUs and samples counted", last)
# 8 GPUs x 1 s + 3 sample times 2 s apart (dmon -d 2) x 2 s = 14 GPU-seconds
check("%.4f GPU-hours" % (14 / 3600) in last, "GPU time the engine can judge", last)
check("; 0 episodes" in last, "no episode on the corpus captures", last)

with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "dmon"))
    trace = os.path.join(tmp, "dmon", "hang.txt")
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gentrace.py"), "--seed", "5", "--hours", "0.34",
                    "--faults", "hang", "--host", "h", "-o", trace, "-l", os.path.join(tmp, "labels.json")], check=True)
    rc, out, err = tool("--args-dir", tmp, trace)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    check(rc == 0, "runs on a generated trace", err)
    eps = [l for l in out.splitlines() if l.startswith("  episode: ")]
    check(any("gpu.hang" in l for l in eps), "the hang's episode listed with its rule", out[-600:])
    check("; %d episodes" % len(eps) in last, "every episode counted", last)
    check("1 captures (1 multi-sample), 8 GPUs" in last, "8 GPUs of the trace", last)
    # a header-less query CSV with its columns in <args-dir>/<format>/<file>.args
    os.makedirs(os.path.join(tmp, "query-csv"))
    csv = os.path.join(tmp, "query-csv", "q.txt")
    with open(csv, "w") as f:
        f.write("2024/01/16 14:44:16.977, 0, 97, 391.42, 71\n2024/01/16 14:44:17.977, 0, 96, 390.10, 71\n")
    with open(csv + ".args", "w") as f:
        f.write("--format query-csv --columns timestamp,index,utilization.gpu,power.draw,temperature.gpu\n")
    rc, out, err = tool("--args-dir", tmp, csv)
    last = out.strip().splitlines()[-1] if out.strip() else ""
    check(rc == 0 and "1 GPUs, 2 samples, %.4f GPU-hours" % (2 / 3600) in last, "columns from the .args file", out + err)

finish()
