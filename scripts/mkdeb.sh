#!/usr/bin/env bash
# Builds the Debian package gpulog_VERSION_ARCH.deb in $BUILD/ with dpkg's own
# tools (make deb):
#   1. a release build with Debian's hardening flags (dpkg-buildflags) in
#      $BUILD/deb/obj, warnings as errors;
#   2. `make install DESTDIR=` of it into $BUILD/deb/root with the Debian paths,
#      stripped, man pages and changelog gzipped, copyright, maintainer scripts
#      and conffiles from deploy/debian/;
#   3. Depends from dpkg-shlibdeps over the binary and over a stub linked
#      with the libraries core/dynlib.c opens with dlopen() (libcurl,
#      libmicrohttpd, librdkafka), which no ELF dependency shows; DEBIAN/control by
#      dpkg-gencontrol from deploy/debian/control and changelog;
#   4. dpkg-deb --root-owner-group --build.
# Prints the path of the package. Needs dpkg-dev and python3 (the man pages).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
work=$BUILD/deb
pkg=gpulog
rm -rf "$work"
mkdir -p "$work/debian" "$work/root/DEBIAN"
cp deploy/debian/control deploy/debian/changelog "$work/debian/"

version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
export SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l deploy/debian/changelog -S Timestamp)
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
flags=(CFLAGS="$(dpkg-buildflags --get CFLAGS)" CPPFLAGS="$(dpkg-buildflags --get CPPFLAGS)"
       LDFLAGS="$(dpkg-buildflags --get LDFLAGS)")
paths=(PREFIX=/usr SYSCONFDIR=/etc SYSTEMDUNITDIR=/lib/systemd/system)
# this script may run under `make SANITIZE=1 test`: the package never is a sanitizer build
unset MAKEFLAGS MAKELEVEL
make --no-print-directory -s -j2 BUILD="$work/obj" SANITIZE= WERROR=1 "${flags[@]}" "$work/obj/gpulog" >&2
built=$("$work/obj/gpulog" --version | awk 'NR == 1 {print $2}')   # line 2: the librdkafka it loads
if [ "${version%-*}" != "$built" ]; then
  echo "mkdeb: deploy/debian/changelog is at $version, the binary says $built" >&2
  exit 1
fi
make --no-print-directory -s BUILD="$work/obj" SANITIZE= "${paths[@]}" DESTDIR="$PWD/$work/root" install >&2

root=$work/root
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$root/usr/bin/gpulog"
gzip -9n "$root"/usr/share/man/man1/*.1 "$root"/usr/share/man/man5/*.5
install -d "$root/usr/share/doc/$pkg"
install -m 0644 deploy/debian/copyright "$root/usr/share/doc/$pkg/copyright"
gzip -9nc deploy/debian/changelog > "$root/usr/share/doc/$pkg/changelog.Debian.gz"
chmod 0644 "$root/usr/share/doc/$pkg/changelog.Debian.gz"
install -d "$root/usr/share/lintian/overrides"
install -m 0644 deploy/debian/lintian-overrides "$root/usr/share/lintian/overrides/$pkg"
install -m 0755 deploy/debian/postinst deploy/debian/postrm "$root/DEBIAN/"
(cd "$root" && find etc -type f -printf '/%p\n' | sort) > "$root/DEBIAN/conffiles"
chmod 0644 "$root/DEBIAN/conffiles"

# the dlopen()ed libraries, as a linked stub only dpkg-shlibdeps sees
mkdir -p "$work/stub/DEBIAN"
cat > "$work/stub/dlopen-stub.c" <<'EOF'
#include <curl/curl.h>
#include <microhttpd.h>
#include <librdkafka/rdkafka.h>
/* rd_kafka_incremental_assign: the newest librdkafka symbol gpulog calls (1.6.0, cooperative
 * rebalancing), for the version bound */
rd_kafka_error_t *(*volatile keep)(rd_kafka_t *, const rd_kafka_topic_partition_list_t *) = rd_kafka_incremental_assign;
int main(void) { return curl_version() && MHD_get_version() && rd_kafka_version() && keep ? 0 : 1; }
EOF
# shellcheck disable=SC2046
cc -o "$work/stub/dlopen-stub" "$work/stub/dlopen-stub.c" -Wl,--no-as-needed \
   $(pkg-config --cflags --libs libcurl libmicrohttpd rdkafka)
(cd "$work" && dpkg-shlibdeps -Tdebian/substvars root/usr/bin/gpulog stub/dlopen-stub)
(cd "$work" && find root -type f ! -path 'root/DEBIAN/*' -printf '%P\0' | sort -z \
   | (cd root && xargs -0 md5sum) > root/DEBIAN/md5sums)
chmod 0644 "$root/DEBIAN/md5sums"
(cd "$work" && dpkg-gencontrol -p$pkg -ldebian/changelog -cdebian/control \
   -Tdebian/substvars -fdebian/files -Proot)
out=$BUILD/${pkg}_${version}_$(dpkg --print-architecture).deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >&2
echo "$out"
