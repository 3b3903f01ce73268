#!/usr/bin/env bash
# The Debian packages in a fresh Debian 12 (bookworm): a minbase root made by debootstrap and
# cached in BUILD/package-cache (made once; each run works on an overlay of it, or a copy), the
# packages installed with apt (their dependencies from the Debian archive), the controller
# started by its postinst as the unit says (tests/package/systemctl-double stands in for
# systemd, which does not run in a chroot: it runs ExecStart as User=, with the unit's
# environment and conffile), an agent bootstrapped with deploy/bootstrap-agent.sh and seen
# online, the bootstrap run again (nothing to change), then everything purged: no file left
# but the documented ones. Skipped (77): not root, a sanitizer build, no debootstrap, or no
# cached root and the archive unreachable. Wall time: see docs/operations.md, "Packages".
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
skip() {
	echo "SKIP: package test: $*"
	exit 77
}
if grep -q '^RAILYARD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	skip "a sanitizer build: its programs are not what is shipped (no package target)"
fi
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mount)"
for t in debootstrap chroot unshare mount curl jq dpkg-scanpackages; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed (make deps)"
done
# A private mount namespace: whatever ends this test, its mounts go with it.
if [ -z "${RY_PKG_UNSHARED:-}" ]; then
	RY_PKG_UNSHARED=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/debian12-root.sh"

T0=$(date +%s)
VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
V=${VERSION}-1_$(dpkg --print-architecture) # a .deb's name after the package's

pkg_cleanup() {
	cp "$R"/run/systemd-double/*.log "$T/" 2>/dev/null
	root_cleanup
	cleanup
}
trap pkg_cleanup EXIT

# ---- the packages of this build -------------------------------------------------------------
phase "packages"
DEBS=()
for p in railyard-controller railyard-agent railyard-bench railyard-cli; do
	f=$BUILD/${p}_$V.deb
	[ -s "$f" ] || die "$f missing: the package_build test (cmake --build $BUILD --target package) makes it"
	DEBS+=("$f")
done

# ---- a Debian 12 root, cached ---------------------------------------------------------------
root_lock # held to the end: this test runs apt in the root throughout
root_cached
root_mount
# systemd does not run here: the double answers for systemctl (in /usr/bin, where systemd has
# it: apt runs the maintainer scripts with PATH=DPkg::Path, without /usr/local), and the
# maintainer scripts see a system booted with systemd (/run/systemd/system), so they enable and
# start the units.
install -D -m 0755 "$SRC/tests/package/systemctl-double" "$R/usr/bin/systemctl" ||
	die "installing the systemctl double"
mkdir -p "$R/run/systemd/system" "$R/srv/railyard"
cp "${DEBS[@]}" "$R/srv/railyard/"
(cd "$R/srv/railyard" && dpkg-scanpackages --multiversion . >Packages 2>/dev/null) ||
	die "dpkg-scanpackages"
root_apt_update

# What the root holds before: after the purge, the same paths but the documented ones.
snapshot() {
	in_root find / -xdev \( -path /proc -o -path /dev -o -path /run -o -path /tmp \
		-o -path /var/cache/apt -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/log \
		-o -path /var/cache/debconf -o -path /srv/railyard -o -path /etc/apt/sources.list.d \
		-o -path /etc/resolv.conf -o -path /etc/ld.so.cache \) -prune -o -print | sort
}
snapshot >"$T/before.list"

# ---- the controller, the CLI and the bench tool from their .debs ----------------------------
phase "apt-get install railyard-controller railyard-cli railyard-bench"
# The operator's edits, made before the install (kept: --force-confold): the controller on
# 127.0.0.1 and free ports, and serve options that systemd splits into words.
mkdir -p "$R/etc/railyard"
cat >"$R/etc/railyard/controller.env" <<'EOF'
RAILYARD_LISTEN=127.0.0.1:0
RAILYARD_HTTP=127.0.0.1:0
RAILYARD_SERVE_OPTS=--threads 2 --reconnect-grace 2s
EOF
in_root apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef \
	-o Dpkg::Options::=--force-confold "/srv/railyard/railyard-controller_$V.deb" \
	"/srv/railyard/railyard-cli_$V.deb" "/srv/railyard/railyard-bench_$V.deb" \
	>"$T/install.log" 2>&1 || {
	tail -30 "$T/install.log"
	die "apt-get install of the three packages failed"
}
ok "apt-get install of the three packages (dependencies from $MIRROR)"
grep -E '^(Get|Unpacking|Setting up)' -c "$T/install.log" | sed 's/^/  apt lines: /'
check "postinst initialised the state directory and printed the CA fingerprint" \
	grep -q "initialised /var/lib/railyard/controller (CA fingerprint sha256:[0-9a-f]\{64\})" \
	"$T/install.log"
pw=$(in_root getent passwd railyard)
check "system user railyard: uid below 1000, no login shell" \
	awk -F: '{exit !($3 < 1000 && $7 ~ /nologin$/)}' <<<"$pw"
ST=$R/var/lib/railyard/controller
# (stat in the root: the host has no user railyard)
check "state directory owned by railyard, mode 0700" \
	test "$(in_root stat -c '%U:%G %a' /var/lib/railyard/controller)" = "railyard:railyard 700"
check "  ca.key owned by railyard, mode 0600" \
	test "$(in_root stat -c '%U %a' /var/lib/railyard/controller/ca.key)" = "railyard 600"
check "the operator's conffile was kept" grep -q '^RAILYARD_LISTEN=127.0.0.1:0$' \
	"$R/etc/railyard/controller.env"
check "  the package's beside it" test -s "$R/etc/railyard/controller.env.dpkg-dist"
check "the unit is enabled (deb-systemd-helper)" \
	test -L "$R/etc/systemd/system/multi-user.target.wants/railyard-controller.service"
check "the controller was started by postinst" wait_for 30 test -s "$ST/controller.addr"
CTL_PID=$(cat "$R/run/systemd-double/railyard-controller.service.pid" 2>/dev/null)
check "  it runs as railyard" test "$(in_root stat -c %U "/proc/$CTL_PID" 2>/dev/null)" = railyard
check "  as ExecStart says, with the conffile's options split into words" bash -c \
	"tr '\\0' '\\n' </proc/$CTL_PID/cmdline | paste -sd' ' | grep -qx '/usr/bin/railyard-controller serve --state-dir /var/lib/railyard/controller --listen 127.0.0.1:0 --http 127.0.0.1:0 --threads 2 --reconnect-grace 2s'"
ADDR=$(cat "$ST/controller.addr")
check "  listening on 127.0.0.1 ($ADDR)" test "${ADDR%:*}" = 127.0.0.1
# From now on the port it got, as an operator would set one: enrolled agents keep the address.
sed -i "s/^RAILYARD_LISTEN=.*/RAILYARD_LISTEN=$ADDR/" "$R/etc/railyard/controller.env"
check "railyard-bench runs (its libraries resolved)" bash -c "chroot '$R' railyard-bench --help >/dev/null"
check "railyard (the CLI) runs" bash -c "chroot '$R' railyard --help | grep -q '^usage: railyard'"
check "the man pages are there" test -s "$R/usr/share/man/man1/railyard-controller.1.gz"

# ---- bootstrap an agent ---------------------------------------------------------------------
phase "bootstrap-agent.sh"
# railyard --local: the packaged controller's api.sock, as the host's admin (root).
in_root railyard --local enrollment-token create --cluster pkg --uses 1 --ttl 10m \
	>"$T/token.out" 2>&1 || { cat "$T/token.out"; die "enrollment-token create"; }
TOKEN=$(awk '/^token:/ {print $2}' "$T/token.out")
FP=$(awk '/^ca-fingerprint:/ {print $2}' "$T/token.out")
BOOT=/usr/share/railyard/bootstrap-agent.sh
AGENT_DEB=/srv/railyard/railyard-agent_$V.deb
boot() { # boot EXPECTED_RC GREP args...: run the bootstrap in the root; its rc and output
	local want=$1 pat=$2
	shift 2
	in_root "$BOOT" "$@" >"$T/boot.out" 2>&1
	local rc=$?
	[ "$rc" = "$want" ] && grep -q -- "$pat" "$T/boot.out" && return 0
	echo "  rc $rc (want $want), output:"
	sed 's/^/    /' "$T/boot.out"
	return 1
}
C=(--controller "$ADDR" --token "$TOKEN" --ca-fingerprint "$FP")
check "bad arguments: nothing given: exit 2" boot 2 "--controller HOST:PORT is required"
check "  a port out of range" boot 2 "not HOST:PORT with a port of 1-65535" \
	--controller 127.0.0.1:70000 --token x --ca-fingerprint "$FP" --deb "$AGENT_DEB"
check "  a short fingerprint" boot 2 "is not sha256: and 64 hex digits" \
	--controller "$ADDR" --token x --ca-fingerprint sha256:abcd --deb "$AGENT_DEB"
check "  no source" boot 2 "where from: --deb FILE or --apt" "${C[@]}"
check "  --deb and --apt" boot 2 "choose one" "${C[@]}" --deb "$AGENT_DEB" --apt
check "  a missing .deb" boot 2 "no such readable file" "${C[@]}" --deb /srv/nope.deb
check "  another package's .deb" boot 2 "is railyard-controller, not railyard-agent" "${C[@]}" \
	--deb "/srv/railyard/railyard-controller_$V.deb"
check "  an unknown option" boot 2 "unknown argument '--frobnicate'" "${C[@]}" --frobnicate
check "  ... and nothing was installed" refused in_root dpkg-query -W -f '${db:Status-Status}' railyard-agent 2>/dev/null
check "  ... or enrolled" test ! -e "$R/var/lib/railyard/agent/node.crt"

SOURCE="deb [trusted=yes] file:/srv/railyard ./"
# Every railyard-agent the bootstrap runs is recorded with its arguments (a diversion: the
# package's program goes to .real, a wrapper stands in): the token must be on none of their
# command lines, where any local user reads it in /proc/PID/cmdline.
in_root dpkg-divert --quiet --local --rename --divert /usr/bin/railyard-agent.real \
	--add /usr/bin/railyard-agent || die "dpkg-divert"
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>/var/tmp/agent-argv\nexec /usr/bin/railyard-agent.real "$@"\n' \
	>"$R/usr/bin/railyard-agent"
chmod 755 "$R/usr/bin/railyard-agent"
# The node's image brings its own agent.env (kept by the bootstrap's unattended install): a
# short reconnect, so that the agent is back soon after the controller restarts below.
echo "RAILYARD_AGENT_OPTS=--reconnect-max 1s" >"$R/etc/railyard/agent.env"
check "bootstrap from an apt repository (the token on stdin): installs, enrolls, starts" \
	boot 0 "started railyard-agent.service" --controller "$ADDR" --token - \
	--ca-fingerprint "$FP" --apt --apt-source "$SOURCE" <<<"$TOKEN"
cat "$T/boot.out"
check "  wrote the apt source" grep -qxF "$SOURCE" "$R/etc/apt/sources.list.d/railyard.list"
check "  warned that the source is [trusted=yes]" grep -q "warning: --apt-source has \[trusted=yes\]" "$T/boot.out"
check "  enrolled with the token on a pipe: on no command line" bash -c "
	grep -q -- '^enroll .*--token-file -' '$R/var/tmp/agent-argv' && ! grep -qF -- '$TOKEN' '$R/var/tmp/agent-argv'"
check "  apt's output in a file of its own, removed after the install" bash -c "
	[ ! -e '$R/tmp/railyard-bootstrap-apt.log' ] && ! ls '$R'/tmp/railyard-bootstrap-apt.* 2>/dev/null | grep -q ."
rm -f "$R/usr/bin/railyard-agent" "$R/var/tmp/agent-argv"
in_root dpkg-divert --quiet --local --rename --remove /usr/bin/railyard-agent || fail "dpkg-divert --remove"
NODE_PID=$(cat "$R/run/systemd-double/railyard-agent.service.pid")
check "  the agent runs as root" test "$(in_root stat -c %U "/proc/$NODE_PID" 2>/dev/null)" = root
check "  with the image's agent.env" bash -c "tr '\\0' ' ' </proc/$NODE_PID/cmdline | \
	grep -q -- '--state-dir /var/lib/railyard/agent --reconnect-max 1s'"
nodes_json() { in_root railyard --local nodes --json | jq .items; }
online() { [ "$(nodes_json | jq '[.[] | select(.state == "online")] | length')" = 1 ]; }
check "the node is online at the controller" wait_for 60 online
nodes_json | jq -r '.[] | "  \(.hostname) \(.state) \(.cluster // "")"'
check "bootstrap again: nothing to change (the used token is not sent)" \
	boot 0 "nothing to change" "${C[@]}" --apt --apt-source "$SOURCE"
cat "$T/boot.out"
check "  the same agent process" test "$(cat "$R/run/systemd-double/railyard-agent.service.pid")" = "$NODE_PID"
check "bootstrap with the .deb: nothing to change either" boot 0 "nothing to change" \
	"${C[@]}" --deb "$AGENT_DEB"
check "  still one node" test "$(nodes_json | jq length)" = 1
check "a token of another controller is refused on an enrolled node" boot 1 \
	"enrolled with another controller" --controller "$ADDR" --token x --deb "$AGENT_DEB" \
	--ca-fingerprint "sha256:$(printf '0%.0s' $(seq 64))"

# The CLI against the packaged controller's REST API.
API=$(cat "$ST/api.addr")
VIEWER=$(in_root railyard-controller api-token create --name pkg --role viewer 2>/dev/null |
	awk '/^token:/ {print $2}')
check "railyard nodes over the REST API lists the node" bash -c "chroot '$R' railyard nodes \
	--url '$API' --ca /var/lib/railyard/controller/ca.crt --token '$VIEWER' | grep -q online"

# ---- reinstall (the path of an upgrade), remove, install again ------------------------------
phase "reinstall, remove, install again"
ca_sum() { sha256sum "$ST/ca.crt" | cut -d' ' -f1; }
CA0=$(ca_sum)
ctl_pid() { cat "$R/run/systemd-double/railyard-controller.service.pid" 2>/dev/null; }
restarted() { [ -n "$(ctl_pid)" ] && [ "$(ctl_pid)" != "$1" ] && in_root systemctl --quiet is-active railyard-controller; }
apt_deb() { # apt_deb LOG apt-get-args...
	local log=$1
	shift
	in_root apt-get -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
		"$@" >"$T/$log" 2>&1 || { tail -20 "$T/$log"; return 1; }
}
check "apt-get install --reinstall railyard-controller" apt_deb reinstall.log install --reinstall \
	"/srv/railyard/railyard-controller_$V.deb"
check "  postinst restarted the controller (configure with the old version)" wait_for 30 restarted "$CTL_PID"
check "  nothing initialised again (the same CA)" test "$(ca_sum)" = "$CA0"
check "  the node is back online" wait_for 60 online
CTL_PID=$(ctl_pid)
check "apt-get remove railyard-controller" apt_deb remove.log remove railyard-controller
check "  prerm stopped it" wait_for 30 exited "$CTL_PID"
check "  the state directory and the conffile are kept" test -s "$ST/ca.key" -a \
	-s "$R/etc/railyard/controller.env"
check "installed again" apt_deb install2.log install "/srv/railyard/railyard-controller_$V.deb"
check "  serving again" wait_for 30 restarted "$CTL_PID"
check "  with the same CA" test "$(ca_sum)" = "$CA0"
check "  the node is back online" wait_for 60 online
CTL_PID=$(ctl_pid)

# ---- purge ----------------------------------------------------------------------------------
phase "apt-get purge --autoremove"
in_root apt-get purge -y -q --autoremove railyard-agent railyard-controller railyard-cli \
	railyard-bench >"$T/purge.log" 2>&1
check "apt-get purge succeeds" test $? -eq 0
check "prerm stopped the controller" wait_for 30 exited "$CTL_PID"
check "prerm stopped the agent" wait_for 100 exited "$NODE_PID"
check "purge removed /var/lib/railyard" test ! -e "$R/var/lib/railyard"
check "purge removed /etc/railyard (conffiles, the operator's too)" test ! -e "$R/etc/railyard"
check "the system user is kept (Debian's practice; docs/operations.md)" bash -c "chroot '$R' getent passwd railyard >/dev/null"
snapshot >"$T/after.list"
# Left behind, as documented: the user (its lines in /etc/passwd, /etc/group, ...) and the
# backups adduser made of those files.
comm -13 "$T/before.list" "$T/after.list" >"$T/new.list"
sed 's/^/  left (documented): /' "$T/new.list"
grep -Ev '^/etc/(passwd|group|shadow|gshadow)-$' "$T/new.list" >"$T/left.list"
sed 's/^/  left: /' "$T/left.list"
check "nothing else is left behind" test ! -s "$T/left.list"
comm -23 "$T/before.list" "$T/after.list" >"$T/gone.list"
sed 's/^/  gone: /' "$T/gone.list"
check "nothing that was there before is gone" test ! -s "$T/gone.list"
in_root find / -xdev \( -path /proc -o -path /dev -o -path /run -o -path /srv -o -path /var/cache/apt \
	-o -path /etc/apt/sources.list.d \) -prune -o -name '*railyard*' -print >"$T/named.list"
sed 's/^/  named: /' "$T/named.list"
check "  no file named railyard anywhere" test ! -s "$T/named.list"

phase "done: $(($(date +%s) - T0)) s in all"
finish
