#!/usr/bin/env bash
# make run: `gpulog run` on the bundled 8-GPU demo trace (data/demo), with no
# GPU, Kafka or Elasticsearch. On a terminal it shows the live view; piped,
# it writes the NDJSON anomaly records. The injected faults are listed in
# data/demo/dgx-07.labels.json for comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
GPULOG=${1:-build/gpulog}
exec "$GPULOG" run --tz UTC --host dgx-07 data/demo/dgx-07.dmon.txt
