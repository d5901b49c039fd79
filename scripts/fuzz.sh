#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang and
# -fsanitize=fuzzer,address,undefined into build-fuzz/, then runs each for
# SECONDS (default 60) on a working copy of its corpus, with -max_len the
# size of its largest committed input (at least 4096: a real 3-GPU state
# snapshot is 21 KB, and a fuzzer capped below it never reaches the series
# decoder; tests/test_snapshot_seeds.c keeps those seeds current).
# New inputs that add coverage are merged back into tests/fuzz/corpus/<name>/
# when small (<= 1 KiB each, or a quarter of -max_len where that is larger;
# at most FUZZ_MAX_NEW=15 per run, <= 200 files per target); review and
# commit them.
# Crashing inputs are kept in build-fuzz/artifacts/ and make the script fail.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 30 dmon kmsg
set -uo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
OUT=build-fuzz
CC=${FUZZ_CC:-clang}
PKGS="rdkafka libpcre2-8 jansson libcurl yaml-0.1 libmicrohttpd zlib"
command -v "$CC" > /dev/null || { echo "fuzz.sh: $CC not found (apt-get install clang)" >&2; exit 1; }
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O1 $SAN $(pkg-config --cflags $PKGS 2>/dev/null)"
LIBS="$(pkg-config --libs $PKGS 2>/dev/null) -lm -lpthread"
mkdir -p "$OUT/obj" "$OUT/artifacts" "$OUT/scratch"

# the library: core (without main), parsers (without subcommands), the
# detectors (fuzz_detectors, fuzz_snapshot), the file sink, the state-topic
# chunk reader (fuzz_kchunk)
srcs=$(ls core/*.c parsers/*.c detect/*.c sinks/sink.c ingest/checkpoint.c ingest/kchunk.c)
newest_h=$(ls -t core/*.h parsers/*.h detect/*.h sinks/*.h ingest/*.h | head -n 1)
build_one() {   # compiles $1 into $OUT/obj unless up to date
  local o="$OUT/obj/$(echo "$1" | tr / _).o"
  if [ ! -f "$o" ] || [ "$1" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then
    $CC $CFLAGS -fsanitize=fuzzer-no-link -c "$1" -o "$o" || return 1
  fi
}
export -f build_one; export CC CFLAGS OUT newest_h
echo "$srcs" | xargs -P 2 -I{} bash -c 'build_one {}' || { echo "fuzz.sh: build failed" >&2; exit 1; }
rm -f "$OUT/libgpulog-fuzz.a"
ar rcs "$OUT/libgpulog-fuzz.a" $(for s in $srcs; do echo "$OUT/obj/$(echo "$s" | tr / _).o"; done)

targets=("$@")
if [ ${#targets[@]} = 0 ]; then
  for f in tests/fuzz/fuzz_*.c; do n=${f##*/fuzz_}; targets+=("${n%.c}"); done
fi
crashed=(); summary=()
for t in "${targets[@]}"; do
  src=tests/fuzz/fuzz_$t.c
  [ -f "$src" ] || { echo "fuzz.sh: no target $t" >&2; crashed+=("$t(missing)"); continue; }
  bin=$OUT/fuzz_$t
  $CC $CFLAGS -fsanitize=fuzzer "$src" "$OUT/libgpulog-fuzz.a" $LIBS -o "$bin" || { crashed+=("$t(build)"); continue; }
  seeds=tests/fuzz/corpus/$t
  work=$OUT/scratch/$t
  mkdir -p "$seeds" "$work"
  log=$OUT/fuzz_$t.log
  # inputs as long as the longest real one (seeds), at least 4096 bytes
  maxlen=$(find "$seeds" -type f -printf '%s\n' | sort -n | tail -n 1)
  [ "${maxlen:-0}" -gt 4096 ] || maxlen=4096
  keep=$(( maxlen / 4 > 1024 ? maxlen / 4 : 1024 ))
  echo "== $t: ${SECS}s, -max_len=$maxlen"
  rc=0
  "$bin" -max_len="$maxlen" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/artifacts/$t-" "$work" "$seeds" > "$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | awk '{print $2}')
  if [ "$rc" != 0 ]; then
    crashed+=("$t")
    echo "   CRASH (status $rc): $(grep -m1 -E 'ERROR|abort|fuzz:|runtime error' "$log")"
    ls "$OUT/artifacts/$t-"* 2>/dev/null | sed 's/^/   input: /'
  fi
  # merge small new inputs that add coverage back into the committed corpus
  merged=0
  if [ "$rc" = 0 ]; then
    tmpc=$(mktemp -d "$OUT/merge.XXXXXX")
    cp "$seeds"/* "$tmpc"/ 2>/dev/null
    "$bin" -merge=1 -max_len="$maxlen" "$tmpc" "$work" > "$OUT/merge_$t.log" 2>&1
    have=$(ls "$seeds" | wc -l)
    for f in "$tmpc"/*; do
      b=${f##*/}
      [ -f "$seeds/$b" ] && continue
      [ "$(stat -c %s "$f")" -le "$keep" ] || continue
      [ "$have" -lt 200 ] && [ "$merged" -lt "${FUZZ_MAX_NEW:-15}" ] || break
      cp "$f" "$seeds/fuzz-$b"; have=$((have + 1)); merged=$((merged + 1))
    done
    rm -rf "$tmpc"
  fi
  line=$(printf '%-11s %6ss %10s execs %6s edges  max_len %-6s status %-3s +%d corpus files' "$t" "$SECS" "${execs:-?}" "${cov:-?}" "$maxlen" "$rc" "$merged")
  summary+=("$line"); echo "   $line"
done
echo
echo "target      time        executions  coverage        result"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
if [ ${#crashed[@]} -gt 0 ]; then echo "crashed: ${crashed[*]} (inputs in $OUT/artifacts/)"; exit 1; fi
