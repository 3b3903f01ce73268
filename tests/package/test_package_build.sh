#!/usr/bin/env bash
# `cmake --build BUILD --target package`: the four .debs of this build, with the fields, files
# and maintainer scripts each must have. The fixture of package_lintian and package_chroot.
# Skipped (77) in a sanitizer build (no package target: its programs are not what is shipped).
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
if grep -q '^RAILYARD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	echo "SKIP: package build: a sanitizer build: its programs are not what is shipped"
	exit 77
fi
command -v dpkg-shlibdeps >/dev/null 2>&1 || {
	echo "SKIP: package build: dpkg-shlibdeps is not installed (dpkg-dev; make deps)"
	exit 77
}
. "$(dirname "$0")/../integration/lib.sh"

VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
ARCH=$(dpkg --print-architecture)
rm -f "$BUILD"/railyard-*_"$VERSION"-1_"$ARCH".deb
t=$(date +%s)
cmake --build "$BUILD" --target package >"$T/cpack.log" 2>&1
check "cmake --build --target package ($(($(date +%s) - t)) s)" test $? -eq 0
grep -q 'generated' "$T/cpack.log" || tail -20 "$T/cpack.log"

deb() { echo "$BUILD/railyard-$1_${VERSION}-1_$ARCH.deb"; }
depends_on() { # depends_on PKG DEP...
	local d p=$1
	shift
	for d in "$@"; do dpkg-deb -f "$(deb "$p")" Depends | grep -q "\(^\|, \)$d\( \|,\|$\)" || return 1; done
}
has_files() { # has_files PKG PATH...
	local f p=$1 list
	shift
	list=$(dpkg-deb -c "$(deb "$p")" | awk '{print $6}')
	for f in "$@"; do grep -qx -- "./$f" <<<"$list" || return 1; done
}
has_control() { # has_control PKG NAME...
	local f p=$1 list
	shift
	list=$(dpkg-deb --ctrl-tarfile "$(deb "$p")" | tar -t)
	for f in "$@"; do grep -qx -- "./$f" <<<"$list" || return 1; done
}
file_has() { dpkg-deb --fsys-tarfile "$(deb "$1")" | tar -xO "./$2" | grep -q -- "$3"; }
no_build_path() { ! dpkg-deb --fsys-tarfile "$(deb "$1")" | grep -aq "$BUILD"; }

for p in controller agent bench cli; do
	[ "$p" = cli ] && pkg=railyard-cli || pkg=railyard-$p
	check "$pkg: built" test -s "$(deb "$p")"
	[ -s "$(deb "$p")" ] || continue
	printf '  %s: %s bytes, Installed-Size %s KiB, Depends: %s\n' "$pkg" "$(stat -c %s "$(deb "$p")")" \
		"$(dpkg-deb -f "$(deb "$p")" Installed-Size)" "$(dpkg-deb -f "$(deb "$p")" Depends)"
	check "  Depends: libc6 (dpkg-shlibdeps)" depends_on "$p" libc6
	check "  copyright, changelog, lintian overrides" has_files "$p" \
		"usr/share/doc/$pkg/copyright" "usr/share/doc/$pkg/changelog.Debian.gz" \
		"usr/share/lintian/overrides/$pkg"
	check "  no path of the build tree inside" no_build_path "$p"
done
check "controller: Depends on its libraries, adduser, init-system-helpers" depends_on controller \
	libgrpc29 libsqlite3-0 libssl3 libmicrohttpd12 libfyaml0 adduser init-system-helpers
check "controller: program, unit, conffile, man page, playbooks, bootstrap script" has_files \
	controller usr/bin/railyard-controller lib/systemd/system/railyard-controller.service \
	etc/railyard/controller.env usr/share/man/man1/railyard-controller.1.gz \
	usr/share/railyard/playbooks/h200-ndr-ib.yaml usr/share/railyard/bootstrap-agent.sh
check "agent: Depends on libibverbs1, librdmacm1, libgrpc29" depends_on agent libibverbs1 librdmacm1 \
	libgrpc29
check "agent: program, unit, conffile, man page" has_files agent usr/bin/railyard-agent \
	lib/systemd/system/railyard-agent.service etc/railyard/agent.env \
	usr/share/man/man1/railyard-agent.1.gz
check "bench: program, man page" has_files bench usr/bin/railyard-bench \
	usr/share/man/man1/railyard-bench.1.gz
if [ -x "$BUILD/nodeagent/coll/railyard-coll" ]; then
	check "bench: railyard-coll beside it, its man page" has_files bench \
		usr/bin/railyard-coll usr/share/man/man1/railyard-coll.1.gz
	check "bench: Depends on openmpi-bin" depends_on bench openmpi-bin
fi
check "cli: program, man page, bash completion" has_files cli usr/bin/railyard \
	usr/share/man/man1/railyard.1.gz usr/share/bash-completion/completions/railyard
check "cli: the completion is the CLI's" file_has cli usr/share/bash-completion/completions/railyard \
	'complete -F'
for p in controller agent; do
	check "$p: conffiles, postinst, prerm, postrm" has_control "$p" conffiles postinst prerm postrm
	check "$p: its conffile is /etc/railyard/$p.env" bash -c \
		"dpkg-deb --info '$(deb "$p")' conffiles | grep -qx /etc/railyard/$p.env"
	check "$p: the unit starts /usr/bin/railyard-$p" file_has "$p" \
		"lib/systemd/system/railyard-$p.service" "^ExecStart=/usr/bin/railyard-$p "
	check "$p: the unit reads /etc/railyard/$p.env" file_has "$p" \
		"lib/systemd/system/railyard-$p.service" "^EnvironmentFile=-/etc/railyard/$p.env$"
done
check "controller: the unit runs as railyard" file_has controller \
	lib/systemd/system/railyard-controller.service '^User=railyard$'
check "agent: the unit waits for the enrollment" file_has agent \
	lib/systemd/system/railyard-agent.service '^ConditionPathExists=/var/lib/railyard/agent/node.crt$'
finish
