#!/usr/bin/env bash
# fetch_gpu_recordings.sh: the real GPU recordings of `make eval`'s
# gpu-recordings part (tools/gpu_recordings.json: what each one is, its
# pin, licence and hand labels), each pinned by GitHub repository, commit,
# path and the sha256 of the file at that commit. Only the pinned files are
# extracted, into .cache/gpu-recordings/<name>/<file> (gitignored; nothing
# fetched is ever committed). A recording pinned with a "section" is one
# section of a capture file (nvidia_gpu_exporter's internal/captures: the
# lines between the "# <section>" header block and the next "####" rule),
# checked again by the sha256 of the extracted text. Idempotent: a recording
# whose stamp file holds the pinned hash and whose file is there is not
# fetched again.
#
# Where a repository comes from, first match wins:
#   GPU_REC_GIT_<OWNER_NAME>=DIR  a clone or bare mirror of that repository
#                                 (OWNER_NAME: "owner/name" upper-cased, every
#                                 other character than A-Z 0-9 as "_", e.g.
#                                 GPU_REC_GIT_XYPP3_GPU_GLASSES)
#   GPU_REC_MIRRORS=DIR           a folder of mirrors named owner+name, each a
#                                 bare repository or holding one in repo/ or
#                                 repo/.git
#   else GitHub: a shallow fetch of the pinned commit only (blobs fetched
#   lazily), nothing else of the repository.
# Nothing is fetched when a local directory is given. The commit is verified
# to be there (git checks content by its hash), the file by its sha256.
#
# usage: scripts/fetch_gpu_recordings.sh [CACHE_DIR]   (default .cache/gpu-recordings)
#        GPU_REC_LIST=FILE picks another recordings list (tests)
# One line per recording fetched now ("fetched"), and one line
# "<name>: skipped (why)" per recording that could not be had.
# Exit: 0 every recording is there; 5 some were skipped (the others are
# there); 4 a hash mismatch (that recording refused; the others fetched);
# 2 usage or an unreadable list.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -le 1 ] || { echo "usage: $0 [CACHE_DIR]" >&2; exit 2; }
CACHE=${1:-.cache/gpu-recordings}
LIST=${GPU_REC_LIST:-tools/gpu_recordings.json}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
mkdir -p "$CACHE" || exit 2

# name|repo|commit|path|sha256|section|file|file_sha256, one line a recording
PINS=$("$PY" - "$LIST" <<'EOF'
import json, re, sys
try:
    recs = json.load(open(sys.argv[1]))["recordings"]
except (OSError, ValueError, KeyError) as e:
    sys.exit("fetch_gpu_recordings: %s: %s" % (sys.argv[1], e))
for r in recs:
    f = [r["name"], r["repo"], r["commit"], r["path"], r["sha256"], r.get("section") or "",
         r["file"], r.get("file_sha256") or r["sha256"]]
    if any("|" in x or "\n" in x for x in f) or not re.fullmatch(r"[0-9a-f]{40}", r["commit"]) \
            or not re.fullmatch(r"[0-9a-f]{64}", f[4]) or not re.fullmatch(r"[0-9a-f]{64}", f[7]) \
            or not re.fullmatch(r"[A-Za-z0-9._-]+", r["name"]) or not re.fullmatch(r"[A-Za-z0-9._-]+", r["file"]):
        sys.exit("fetch_gpu_recordings: %s: recording %r: bad pin" % (sys.argv[1], r.get("name")))
    print("|".join(f))
EOF
) || exit 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-gpurec.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

sum_of() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }

gitdir_of() {   # repo commit -> prints a git dir holding the commit, or "skip:why"
  local repo=$1 commit=$2 var dir c m
  var=GPU_REC_GIT_$(printf '%s' "$repo" | tr 'a-z' 'A-Z' | sed 's/[^A-Z0-9]/_/g')
  if [ -n "${!var:-}" ]; then
    dir=${!var}
    git --git-dir="$dir/.git" rev-parse --git-dir >/dev/null 2>&1 && dir=$dir/.git
    git --git-dir="$dir" cat-file -e "$commit^{commit}" 2>/dev/null ||
      { echo "skip:$var=${!var} holds no commit $commit"; return; }
    echo "$dir"; return
  fi
  if [ -n "${GPU_REC_MIRRORS:-}" ]; then
    m=$GPU_REC_MIRRORS/${repo/\//+}
    for c in "$m/repo/.git" "$m/repo" "$m"; do
      if git --git-dir="$c" rev-parse --git-dir >/dev/null 2>&1; then
        git --git-dir="$c" cat-file -e "$commit^{commit}" 2>/dev/null ||
          { echo "skip:the mirror $c holds no commit $commit"; return; }
        echo "$c"; return
      fi
    done
    echo "skip:no mirror of $repo under GPU_REC_MIRRORS=$GPU_REC_MIRRORS"; return
  fi
  dir=$tmp/${repo/\//+}.git
  if [ ! -d "$dir" ]; then
    git init --quiet --bare "$dir" >/dev/null 2>&1 || { echo "skip:git init failed"; return; }
    if ! GIT_TERMINAL_PROMPT=0 timeout 300 git --git-dir="$dir" fetch --quiet --depth 1 --filter=blob:none \
        "https://github.com/$repo" "$commit" >"$tmp/log" 2>&1; then
      rm -rf "$dir"
      echo "skip:could not fetch $commit from https://github.com/$repo, and no GPU_REC_GIT_* or GPU_REC_MIRRORS given: $(grep -v '^ *$' "$tmp/log" | tail -1)"
      return
    fi
  fi
  echo "$dir"
}

extract_section() {   # section file -> the lines between "# section"'s header block and the next rule
  awk -v s="# $1" '$0 == s { f = 1; next } f == 1 && /^#####/ { f = 2; next }
                   f == 2 && /^#####/ { exit } f == 2 { print }' "$2"
}

total=0 there=0 fetched=0 skipped=0 bad=0
while IFS='|' read -r name repo commit path sum section file fsum; do
  [ -n "$name" ] || continue
  total=$((total + 1))
  dest=$CACHE/$name
  if [ -f "$dest/.sha256" ] && [ "$(cat "$dest/.sha256")" = "$fsum" ] && [ "$(sum_of "$dest/$file")" = "$fsum" ]; then
    there=$((there + 1)); continue
  fi
  git=$(gitdir_of "$repo" "$commit")
  case $git in skip:*) echo "$name: skipped (${git#skip:})" >&2; skipped=$((skipped + 1)); continue;; esac
  if ! GIT_TERMINAL_PROMPT=0 timeout 300 git --git-dir="$git" cat-file blob "$commit:$path" >"$tmp/raw" 2>"$tmp/log"; then
    echo "$name: skipped ($repo at ${commit:0:12} gives no $path: $(grep -v '^ *$' "$tmp/log" | tail -1))" >&2
    skipped=$((skipped + 1)); continue
  fi
  got=$(sum_of "$tmp/raw")
  if [ "$got" != "$sum" ]; then
    echo "$name: $repo ${commit:0:12}:$path has sha256 $got, pinned $sum: refusing it" >&2
    bad=$((bad + 1)); continue
  fi
  if [ -n "$section" ]; then
    extract_section "$section" "$tmp/raw" >"$tmp/out"
    got=$(sum_of "$tmp/out")
    if [ "$got" != "$fsum" ]; then
      echo "$name: section \"$section\" of $path has sha256 $got, pinned $fsum: refusing it" >&2
      bad=$((bad + 1)); continue
    fi
  else
    mv "$tmp/raw" "$tmp/out"
  fi
  rm -rf "$dest" && mkdir -p "$dest" && mv "$tmp/out" "$dest/$file" && echo "$fsum" >"$dest/.sha256" ||
    { echo "$name: could not write $dest" >&2; exit 2; }
  fetched=$((fetched + 1)); there=$((there + 1))
  echo "fetch_gpu_recordings: $name ($repo ${commit:0:12}:$path${section:+ [$section]}, sha256 ok) -> $dest/$file"
done <<<"$PINS"
echo "fetch_gpu_recordings: $there of $total recordings in $CACHE ($fetched fetched now, $skipped skipped, $bad refused)"
[ $bad = 0 ] || exit 4
[ $skipped = 0 ] || exit 5
exit 0
