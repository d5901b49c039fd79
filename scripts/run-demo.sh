#!/usr/bin/env bash
# make run: `gpulog run` on the bundled 8-GPU demo trace (data/demo), with no
# GPU, Kafka or Elasticsearch. On a terminal it shows the live view; piped,
# it writes the NDJSON anomaly records. It also writes the demo's HTML report
# (gpulog report's page) next to the binary and prints its path. The injected
# faults are listed in data/demo/dgx-07.labels.json for comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
GPULOG=${1:-build/gpulog}
REPORT=$(cd "$(dirname "$GPULOG")" && pwd)/demo-report.html
"$GPULOG" run --tz UTC --host dgx-07 --report "$REPORT" data/demo/dgx-07.dmon.txt
echo "the demo's report: $REPORT" >&2
