#!/usr/bin/env bash
# Installs the Debian packages gpulog needs when they are missing (as root),
# or prints the exact install line (as another user). Safe to repeat.
set -euo pipefail
# lintian, man-db, systemd (systemd-analyze), adduser, zsh: tests/t_install.sh and make deb
# chromium (headless), python3-pil: tests/t_report.py (the report page in a browser)
PKGS="build-essential pkg-config librdkafka-dev libpcre2-dev libjansson-dev libcurl4-openssl-dev libyaml-dev libmicrohttpd-dev zlib1g-dev clang libclang-rt-14-dev kcat python3 python3-jsonschema python3-yaml curl unzip maven default-jdk-headless lintian man-db systemd adduser zsh chromium python3-pil"
# prometheus (Debian's, brings promtool): services/prometheus, tests/t_prometheus.py, t_promtool.sh
PKGS="$PKGS prometheus"
missing=()
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# java/mvn may come from elsewhere (e.g. a preinstalled JDK): accept the commands
if [ ${#missing[@]} -gt 0 ]; then
  keep=()
  for p in "${missing[@]}"; do
    case "$p" in
      maven) command -v mvn >/dev/null 2>&1 && continue ;;
      default-jdk-headless) command -v javac >/dev/null 2>&1 && continue ;;
    esac
    keep+=("$p")
  done
  missing=("${keep[@]+"${keep[@]}"}")
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "deps: missing packages; run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
