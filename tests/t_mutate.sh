#!/usr/bin/env bash
# needs: plain
# t_mutate.sh - the mutation pass (scripts/mutate.sh) as a test of make
# test's plain lane (not the sanitizer lane, not the fast lane: about 2
# minutes on 2 cores): every mutation of its table must turn one of its
# tests red. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
exec scripts/mutate.sh
