#!/usr/bin/env bash
# The portal's browser test with a fresh Debian 12's own nodejs and chromium, not this machine's:
# in an overlay of the cached Debian 12 minbase root (tests/package/debian12-root.sh) apt
# installs nodejs, chromium and fonts-dejavu-core from the archive, as deploy/install-deps.sh
# would on a new machine; then tests/integration/test_portal.sh runs against this build's
# controller and agents (here, on 127.0.0.1, which the chroot shares) with its node and chromium
# run in the root (RAILYARD_BROWSER_ROOT; /tmp, the sources and the build mounted there at their
# paths). A pinned tool that works only with the newer Node.js or Chromium of a CI machine fails
# here (issue 29: playwright-core 1.64.1 needs Node.js 20, Debian 12 ships 18). npm is this
# machine's: playwright-core has no dependencies and no install script, so npm only unpacks it.
# Skipped (77): not root, a sanitizer build (the same test runs in the plain build), no
# debootstrap, no cached root or packages and the archive unreachable, or the npm registry
# unreachable. Wall time: see docs/operations.md, "Packages".
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
skip() {
	echo "SKIP: portal with Debian 12's nodejs and chromium: $*"
	exit 77
}
if grep -q '^RAILYARD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	skip "a sanitizer build: the tools are what this test is about, and the plain build runs it"
fi
[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mount)"
for t in debootstrap chroot unshare mount curl; do
	command -v "$t" >/dev/null 2>&1 || skip "$t is not installed (make deps)"
done
if [ -z "${RY_PKG_UNSHARED:-}" ]; then
	RY_PKG_UNSHARED=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/debian12-root.sh"
BUILD=$(cd "$BUILD" && pwd)
T0=$(date +%s)
PKGS=(nodejs chromium fonts-dejavu-core) # deploy/install-deps.sh's, for the browser tests
ROOT_KEEP_CHANGES=0 # the root's changes are the packages installed (800 MB): not worth keeping

deb_cleanup() {
	root_cleanup
	cleanup
}
trap deb_cleanup EXIT

root_lock
root_cached
root_mount
root_apt_update
phase "apt-get install ${PKGS[*]}"
if ! in_root apt-get install -y -q --no-install-recommends "${PKGS[@]}" >"$T/install.log" 2>&1; then
	if ! archive_reachable; then
		skip "the Debian archive ($MIRROR) is unreachable and ${PKGS[*]} are not all cached"
	fi
	tail -20 "$T/install.log"
	die "apt-get install ${PKGS[*]} in the Debian 12 root"
fi
root_unlock # apt is done: the cache is free for package_chroot
ver() { in_root dpkg-query -W -f '${Version}' "$1"; }
ok "Debian's nodejs $(ver nodejs) and chromium $(ver chromium) installed"
check "  /usr/bin/node runs: $(in_root node --version 2>&1)" in_root node -e 0
# The browser's mounts: a /dev/shm of its own, /sys to read, and the paths test_portal.sh
# hands to node (the test script, the pinned playwright-core in the build, its /tmp directory).
mnt "$R/dev/shm" -t tmpfs tmpfs -o mode=1777 || die "tmpfs on /dev/shm"
mnt "$R/sys" --bind /sys -o ro || die "bind /sys"
mnt "$R/tmp" --bind /tmp || die "bind /tmp"
mkdir -p "$R$SRC" "$R$BUILD"
mnt "$R$SRC" --bind "$SRC" -o ro || die "bind $SRC"
mnt "$R$BUILD" --bind "$BUILD" || die "bind $BUILD"

phase "tests/integration/test_portal.sh, node and chromium from the root"
RAILYARD_BROWSER_ROOT=$R RAILYARD_PORTAL_ARTIFACTS=$BUILD/portal-debian-artifacts \
	"$SRC/tests/integration/test_portal.sh" "$BUILD" 2>&1 | tee "$T/portal.log"
rc=${PIPESTATUS[0]}
# Its only skip left here: the npm registry (the root has node and chromium, checked above).
if [ "$rc" = 77 ] && grep -q '^SKIP: portal browser tests: the npm registry' "$T/portal.log"; then
	skip "$(sed -n 's/^SKIP: portal browser tests: //p' "$T/portal.log")"
fi
check "test_portal.sh passed with the root's node and chromium (exit $rc)" test "$rc" = 0
check "  the browser part ran with them" grep -q "^browser: node .*(node and chromium of $R)" "$T/portal.log"
phase "done: $(($(date +%s) - T0)) s in all"
finish
