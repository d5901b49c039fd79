#!/usr/bin/env bash
# Source coverage of a fuzz target's corpus: builds the target's replay
# (tests/fuzz/replay.c, no libFuzzer) with clang -fprofile-instr-generate
# -fcoverage-mapping into build-cov/, replays the corpus (or the files and
# directories given) and prints llvm-cov's line, branch and function
# coverage of the sources named (default: the library's detect/*.c).
#   scripts/fuzz_cov.sh TARGET [--src 'detect/snapshot.c detect/window.c'] [CORPUS...]
# e.g. scripts/fuzz_cov.sh snapshot --src 'detect/snapshot.c detect/engine.c detect/window.c'
# Needs clang, llvm-profdata and llvm-cov (apt-get install clang llvm).
set -uo pipefail
cd "$(dirname "$0")/.."
t=${1:?usage: scripts/fuzz_cov.sh TARGET [--src FILES] [CORPUS...]}
shift
src="detect/*.c"
if [ "${1:-}" = --src ]; then src=$2; shift 2; fi
corpus=("$@")
[ ${#corpus[@]} = 0 ] && corpus=(tests/fuzz/corpus/"$t")
CC=${FUZZ_CC:-clang}
PROFDATA=${LLVM_PROFDATA:-llvm-profdata}
COV=${LLVM_COV:-llvm-cov}
for tool in "$CC" "$PROFDATA" "$COV"; do
  command -v "$tool" >/dev/null || { echo "fuzz_cov.sh: $tool not found" >&2; exit 1; }
done
OUT=build-cov
PKGS="rdkafka libpcre2-8 jansson libcurl yaml-0.1 libmicrohttpd zlib"
CFLAGS="-std=c11 -D_GNU_SOURCE -g -O0 -fprofile-instr-generate -fcoverage-mapping $(pkg-config --cflags $PKGS 2>/dev/null)"
LIBS="$(pkg-config --libs $PKGS 2>/dev/null) -lm -lpthread -ldl"
mkdir -p "$OUT/obj"
srcs=$(ls core/*.c parsers/*.c detect/*.c sinks/sink.c ingest/checkpoint.c ingest/kchunk.c)
newest_h=$(ls -t core/*.h parsers/*.h detect/*.h sinks/*.h ingest/*.h | head -n 1)
for s in $srcs; do
  o="$OUT/obj/$(echo "$s" | tr / _).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then echo "$s"; fi
done | xargs -r -P 2 -I{} sh -c '"$0" $1 -c {} -o "$2/obj/$(echo {} | tr / _).o"' "$CC" "$CFLAGS" "$OUT" || exit 1
bin=$OUT/replay_$t
$CC $CFLAGS tests/fuzz/fuzz_"$t".c tests/fuzz/replay.c $(for s in $srcs; do echo "$OUT/obj/$(echo "$s" | tr / _).o"; done) \
  $LIBS -o "$bin" || exit 1
rm -f "$OUT/$t".profraw
LLVM_PROFILE_FILE="$OUT/$t.profraw" "$bin" "${corpus[@]}" | tail -n 1
"$PROFDATA" merge -sparse "$OUT/$t.profraw" -o "$OUT/$t.profdata" || exit 1
# shellcheck disable=SC2086
"$COV" report "$bin" -instr-profile="$OUT/$t.profdata" $src
