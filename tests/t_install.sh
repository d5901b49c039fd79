#!/usr/bin/env bash
# needs: root apt (installs and purges the package on this machine)
# gpulog installed like a system tool (issue 17), checked as installed:
#  1. `make deb` builds the Debian package; lintian finds nothing but the
#     justified overrides; Depends has the dlopen()ed libraries too.
#  2. The package is installed for real (apt-get install ./x.deb, so root; CI
#     runs as root): the installed gpulog --version, `config check` of
#     /etc/gpulog/gpulog.yaml, the gpulog user and /var/lib/gpulog, units
#     installed but not enabled, `systemd-analyze verify` on them (ExecStart
#     must resolve), `man --warnings -l` and lexgrog on every page, man finds
#     them by name, setup finds the schemas, bash and zsh completion.
#  3. `apt-get purge` leaves no gpulog path in /etc /usr /lib /var /opt that
#     was not there before; the gpulog user stays (Debian keeps system users).
#  4. `make install DESTDIR=` (PREFIX=/usr/local) puts every file where the
#     units and setup expect it; `make uninstall` leaves no file behind and
#     keeps an edited gpulog.yaml.
#  5. The Dockerfile: its runtime packages are exactly the package's
#     dpkg-shlibdeps result (+ ca-certificates, tzdata); its user, paths,
#     port, entrypoint and image tag match deploy/kubernetes/.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
test_tmp t_install
installed=0
on_exit() {   # lib.sh's exit trap, also when killed: never leave the package installed
  if [ "$installed" = 1 ]; then
    apt-get purge -y -qq -o DPkg::Lock::Timeout=120 gpulog >/dev/null 2>&1; installed=0
  fi
}
trap 'exit 1' INT TERM
t0=$SECONDS

if [ "$(id -u)" != 0 ]; then
  fail "installing the package needs root (CI runs as root)"
fi
if dpkg-query -W -f='${Status}' gpulog 2>/dev/null | grep -q installed; then
  fail "a gpulog package is already installed: refusing to replace it"
fi

# ---- 1. the package
deb=$(env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -s BUILD="$BUILD" deb 2>"$tmp/deb.err" | tail -n 1)
if [ -z "$deb" ] || [ ! -f "$deb" ]; then
  fail "make deb" "$(tail -n 20 "$tmp/deb.err")"
fi
ok "make deb: $deb ($((SECONDS - t0)) s)"
version=$(dpkg-deb -f "$deb" Version)
check_cmd "lintian: clean but for the justified overrides" \
  lintian --fail-on error,warning,info,pedantic -E --pedantic --display-info "$deb"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libc6 librdkafka1 libcurl4 libmicrohttpd12 adduser; do
  check_cmd "Depends has $p" grep -qE "(^|, )$p( |,|$)" <<<"$depends"
done
shlibs=$(sed -n 's/^shlibs:Depends=//p' "$BUILD/deb/debian/substvars" | tr ',' '\n' | sed 's/(.*//; s/ //g' | sort -u)

# ---- 2. installed
before=$(find /etc /usr /lib /var /opt -xdev -path '*gpulog*' 2>/dev/null | sort)
apt-get install -y -qq -o DPkg::Lock::Timeout=120 "$PWD/$deb" > "$tmp/apt" 2>&1
rc=$?; installed=1
check "apt-get install ./$(basename "$deb")" $rc "$(cat "$tmp/apt")"
check_cmd "installed gpulog --version is $version" test "$(/usr/bin/gpulog --version | head -n 1)" = "gpulog ${version%-*}"
check_cmd "installed gpulog --version names the librdkafka it loads" grep -qE '^librdkafka [0-9]+\.[0-9]+\.[0-9]+ \(/' <<<"$(/usr/bin/gpulog --version)"
out=$(/usr/bin/gpulog config check /etc/gpulog/gpulog.yaml 2>&1)
check_cmd "gpulog config check /etc/gpulog/gpulog.yaml: $out" test "$out" = "/etc/gpulog/gpulog.yaml: ok"
check_cmd "conffile /etc/gpulog/gpulog.yaml" grep -qx /etc/gpulog/gpulog.yaml /var/lib/dpkg/info/gpulog.conffiles
check_cmd "system user gpulog" test "$(getent passwd gpulog | cut -d: -f7)" = /usr/sbin/nologin
check_cmd "/var/lib/gpulog owned by gpulog, mode 700" test "$(stat -c '%U:%G %a' /var/lib/gpulog 2>&1)" = "gpulog:gpulog 700"
units=$(dpkg -L gpulog | grep -E '^/lib/systemd/system/.*\.service$')
check_cmd "two units installed" test "$(wc -w <<<"$units")" = 2
for u in $units; do
  check_cmd "$(basename "$u") not enabled" test "$(systemctl is-enabled "$(basename "$u")" 2>&1)" = disabled
  check_cmd "$(basename "$u") runs /usr/bin/gpulog" grep -q '^ExecStart=/usr/bin/gpulog ' "$u"
  verr=$(systemd-analyze verify "$u" 2>&1); vrc=$?
  check_cmd "systemd-analyze verify $(basename "$u") ${verr:+($verr)}" test "$vrc:$verr" = "0:"
done
pages=$(dpkg -L gpulog | grep -E '^/usr/share/man/man[15]/.*\.gz$')
ncmd=$(/usr/bin/gpulog --help | grep -cE '^  [a-z]+  ')
npages=$((ncmd + 2))    # gpulog(1), one per command, gpulog.yaml(5)
check_cmd "$npages man pages installed" test "$(wc -w <<<"$pages")" = $npages
for p in $pages; do
  name=$(basename "$p" .gz); name=${name%.[15]}
  merr=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >"$tmp/page"); mrc=$?
  check_cmd "man --warnings -l $name ${merr:+($merr)}" test "$mrc:$merr" = "0:" -a -s "$tmp/page"
  check_cmd "lexgrog $name" sh -c 'lexgrog "$1" >/dev/null' lexgrog "$p"
  check_cmd "man -w $name finds the installed page" test "$(man -w "$name" 2>&1)" = "$p"
done
check_cmd "Prometheus rules and Grafana dashboard in /usr/share/gpulog" \
  test -s /usr/share/gpulog/prometheus/gpulog-rules.yml -a -s /usr/share/gpulog/grafana/gpulog-dashboard.json
serr=$(cd / && env -u GPULOG_SCHEMAS /usr/bin/gpulog setup --es http://127.0.0.1:1 2>&1); src=$?
check_cmd "installed setup finds its schemas (fails only on the connection: $serr)" test "$src" = 1
comp=$(bash -c '. /usr/share/bash-completion/completions/gpulog; COMP_WORDS=(gpulog co); COMP_CWORD=1; _gpulog; echo "${COMPREPLY[*]}"
  COMP_WORDS=(gpulog parse --k); COMP_CWORD=2; _gpulog; echo "${COMPREPLY[*]}"')
check_cmd "bash completion: gpulog co<TAB>, gpulog parse --k<TAB> = $(echo $comp)" test "$(echo $comp)" = "collect config --keep-original"
# zsh: the completion system mocked, printing what the file offers
comp=$(zsh -f -c '_call_program() { shift; eval "$*" }; _describe() { print -rl -- ${(P)${@[-1]}} }
  compadd() { if [[ $1 == -a ]]; then print -rl -- ${(P)2}; else print -rl -- "$@"; fi }; _files() { print FILES }
  f=/usr/share/zsh/vendor-completions/_gpulog
  words=(gpulog co); CURRENT=2; PREFIX=co; source $f | cut -d: -f1 | grep "^co"
  words=(gpulog parse --k); CURRENT=3; PREFIX=--k; source $f | grep -- "^--k"
  words=(gpulog config ""); CURRENT=3; PREFIX=; source $f
  words=(gpulog parse x); CURRENT=3; PREFIX=x; source $f' 2>&1)
check_cmd "zsh completion: commands, options, config subcommands, files = $(echo $comp)" \
  test "$(echo $comp)" = "collect config --keep-original check print FILES"

# ---- 3. purged
files=$(dpkg -L gpulog | sort)
apt-get purge -y -qq -o DPkg::Lock::Timeout=120 gpulog > "$tmp/apt" 2>&1
check "apt-get purge gpulog" $? "$(cat "$tmp/apt")"
installed=0
left=$(for f in $files; do [ -f "$f" ] && echo "$f"; done)
check_cmd "no file of the package left ${left:+($left)}" test -z "$left"
after=$(find /etc /usr /lib /var /opt -xdev -path '*gpulog*' 2>/dev/null | sort)
new=$(comm -13 <(echo "$before") <(echo "$after") | grep . | tr '\n' ' ')
check_cmd "no new gpulog path in /etc /usr /lib /var /opt ${new:+($new)}" test -z "$new"
check "the gpulog user stays (Debian policy for system users)" "$(getent passwd gpulog >/dev/null; echo $?)"

# ---- 4. make install / uninstall from source
root=$tmp/root
obj=$BUILD/deb/obj
env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -s BUILD="$obj" SANITIZE= DESTDIR="$root" install > "$tmp/mi" 2>&1
check "make install DESTDIR= (PREFIX=/usr/local)" $? "$(cat "$tmp/mi")"
nfiles=$(find "$root" -type f | wc -l)
nshare=$(ls schemas/event.schema.json schemas/es/*.json schemas/kibana/*.ndjson deploy/prometheus/gpulog-rules.yml \
           deploy/prometheus/prometheus.yml deploy/grafana/gpulog-dashboard.json | wc -l)
check_cmd "$nfiles files: binary, $npages man pages, gpulog.yaml, 2 units, 2 completions, $nshare share files" \
  test "$nfiles" = $((1 + npages + 1 + 2 + 2 + nshare))
check_cmd "the units run /usr/local/bin/gpulog with /usr/local/etc/gpulog" \
  test "$(grep -h -e '^ExecStart=' -e '^Environment=GPULOG_CONFIG' "$root"/usr/local/lib/systemd/system/*.service | sort | tr '\n' '|')" \
     = 'Environment=GPULOG_CONFIG=/usr/local/etc/gpulog/gpulog.yaml|Environment=GPULOG_CONFIG=/usr/local/etc/gpulog/gpulog.yaml|ExecStart=/usr/local/bin/gpulog collect --exec "nvidia-smi dmon -o DT -s pucvmet" --kmsg|ExecStart=/usr/local/bin/gpulog detect|'
check_cmd "gpulog(1) and the example name /usr/local/etc/gpulog/gpulog.yaml" \
  sh -c 'for f; do grep -q /usr/local/etc/gpulog/gpulog.yaml "$f" || exit 1; done' - \
     "$root/usr/local/share/man/man1/gpulog.1" "$root/usr/local/etc/gpulog/gpulog.yaml"
out=$("$root/usr/local/bin/gpulog" config check "$root/usr/local/etc/gpulog/gpulog.yaml" 2>&1)
check_cmd "installed example passes config check" test "$out" = "$root/usr/local/etc/gpulog/gpulog.yaml: ok"
serr=$(cd / && env -u GPULOG_SCHEMAS "$root/usr/local/bin/gpulog" setup --es http://127.0.0.1:1 2>&1); src=$?
check_cmd "setup finds <bindir>/../share/gpulog/schemas" test "$src" = 1
echo "# edited" >> "$root/usr/local/etc/gpulog/gpulog.yaml"
env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -s BUILD="$obj" SANITIZE= DESTDIR="$root" uninstall > "$tmp/mu" 2>&1
check "make uninstall" $? "$(cat "$tmp/mu")"
check_cmd "uninstall keeps the edited gpulog.yaml" test -f "$root/usr/local/etc/gpulog/gpulog.yaml"
rm -f "$root/usr/local/etc/gpulog/gpulog.yaml"
env -u MAKEFLAGS -u MAKELEVEL make --no-print-directory -s BUILD="$obj" SANITIZE= DESTDIR="$root" install uninstall > "$tmp/mu" 2>&1
left=$(find "$root" ! -type d | tr '\n' ' ')
check_cmd "install + uninstall leave no file ${left:+($left)}" test -z "$left"

# ---- 5. the Dockerfile against the package and the manifests
cmds=$("$obj/gpulog" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | tr '\n' ' ')
if GPULOG_SHLIBS="$shlibs" GPULOG_VERSION="${version%-*}" GPULOG_CMDS="$cmds" python3 - > "$tmp/docker" 2>&1 <<'EOF'
import os, re, sys, yaml
fails = []
def check(name, cond):
    print(("ok   " if cond else "FAIL ") + name)
    if not cond: fails.append(name)
df = open("Dockerfile").read().replace("\\\n", " ")
stages = re.split(r"^FROM ", df, flags=re.M)[1:]
stage = {s.split()[2] if len(s.split()) > 2 and s.split()[1].upper() == "AS" else "?": s for s in stages}
def apt_pkgs(text):
    pk = set()
    for m in re.finditer(r"apt-get install ([^&]*)", text):
        pk |= {w for w in m.group(1).split() if not w.startswith("-")}
    return pk
runtime = apt_pkgs(stage["runtime"])
shlibs = set(os.environ["GPULOG_SHLIBS"].split())
extra = {"ca-certificates", "tzdata"}
check("runtime packages %s = dpkg-shlibdeps %s + %s" % (sorted(runtime - extra), sorted(shlibs), sorted(extra)),
      runtime == shlibs | extra)
bd = open("deploy/debian/control").read().split("\n\n")[0].replace("\n ", " ")
devs = {p.strip().split()[0] for p in re.search(r"^Build-Depends:(.*)$", bd, re.M).group(1).split(",")}
devs = {p for p in devs if p.endswith("-dev") and p != "dpkg-dev"}
check("build stage installs the package's -dev Build-Depends %s" % sorted(devs - apt_pkgs(stage["build"])),
      devs <= apt_pkgs(stage["build"]))
user = re.search(r"^USER (\d+):(\d+)", stage["runtime"], re.M).groups()
check("useradd uid %s" % user[0], "--uid %s" % user[0] in stage["runtime"] and "--gid %s" % user[1] in stage["runtime"])
ep = re.search(r"^ENTRYPOINT (.*)$", stage["runtime"], re.M).group(1)
check("ENTRYPOINT is the binary the COPY puts there", ep == '["/usr/bin/gpulog"]' and "/usr/bin/gpulog\n" in stage["runtime"])
env = dict(re.findall(r"^ENV (\w+)=(\S+)", stage["runtime"], re.M))
port = re.search(r"^EXPOSE (\d+)", stage["runtime"], re.M).group(1)
check("docker build -t gpulog:%s in the Dockerfile" % os.environ["GPULOG_VERSION"],
      "docker build -t gpulog:%s ." % os.environ["GPULOG_VERSION"] in df)
cmds = set(os.environ["GPULOG_CMDS"].split())
cm = None
docs = []
for f in sorted(os.listdir("deploy/kubernetes")):
    for d in yaml.safe_load_all(open("deploy/kubernetes/" + f)):
        if d: docs.append((f, d))
for f, d in docs:
    if d["kind"] == "ConfigMap": cm = d
n = 0
for f, d in docs:
    spec = d["spec"]["template"]["spec"] if "template" in d.get("spec", {}) else d.get("spec", {})
    for c in spec.get("containers", []):
        if not c["image"].startswith("gpulog"): continue
        n += 1
        w = "%s/%s" % (f, c["name"])
        check(w + ": image gpulog:" + os.environ["GPULOG_VERSION"], c["image"] == "gpulog:" + os.environ["GPULOG_VERSION"])
        check(w + ": no command (the ENTRYPOINT runs), args start with a gpulog command",
              "command" not in c and c["args"][0] in cmds)
        sc = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
        if sc.get("runAsUser", 0) != 0:
            check(w + ": runAsUser %s = USER" % sc["runAsUser"], str(sc["runAsUser"]) == user[0])
        if "runAsGroup" in sc:
            check(w + ": runAsGroup = USER's group", str(sc["runAsGroup"]) == user[1])
        mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
        cenv = {e["name"]: e.get("value") for e in c.get("env", [])}
        conf = cenv.get("GPULOG_CONFIG")
        check(w + ": GPULOG_CONFIG %s is on the gpulog-config ConfigMap mount" % conf,
              conf and os.path.dirname(conf) in mounts and
              any(v["name"] == mounts[os.path.dirname(conf)]["name"] and v.get("configMap", {}).get("name") == cm["metadata"]["name"]
                  for v in spec["volumes"]) and os.path.basename(conf) in cm["data"])
        args = c["args"]
        state = args[args.index("--state-dir") + 1] if "--state-dir" in args else env["GPULOG_STATE_DIR"]
        if c["args"][0] == "collect" or "state" in [v["name"] for v in spec["volumes"]]:
            check(w + ": state dir %s is on a writable volume" % state,
                  any(state == p or state.startswith(p + "/") for p, m in mounts.items() if not m.get("readOnly")))
        check(w + ": containerPort = EXPOSE %s" % port, [p["containerPort"] for p in c["ports"]] == [int(port)])
check("configmap metrics_addr port = EXPOSE", yaml.safe_load(cm["data"]["gpulog.yaml"])["metrics_addr"].endswith(":" + port))
check("%d gpulog containers in deploy/kubernetes" % n, n >= 3)
sys.exit(1 if fails else 0)
EOF
then :; fi
while read -r line; do
  case $line in ok*) ok "Dockerfile: ${line#ok   }" ;; FAIL*) bad "Dockerfile: ${line#FAIL }" ;; *) bad "Dockerfile check: $line" ;; esac
done < "$tmp/docker"
echo "# $((SECONDS - t0)) s"
finish
