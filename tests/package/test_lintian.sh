#!/usr/bin/env bash
# lintian on the four .debs of this build (made by package_build): no error and no warning; the
# tags the packages override carry their reasons, the informational ones are printed
# (docs/operations.md, "Packages", justifies each). Skipped (77) without lintian or the .debs
# of a sanitizer build.
set -u
BUILD=${1:?usage: $0 BUILD_DIR}
if grep -q '^RAILYARD_SANITIZE:BOOL=ON' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	echo "SKIP: lintian: a sanitizer build: its programs are not what is shipped"
	exit 77
fi
command -v lintian >/dev/null 2>&1 || {
	echo "SKIP: lintian: not installed (make deps)"
	exit 77
}
. "$(dirname "$0")/../integration/lib.sh"

VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
DEBS=("$BUILD"/railyard-{controller,agent,bench,cli}_"$VERSION"-1_"$(dpkg --print-architecture)".deb)
for d in "${DEBS[@]}"; do
	[ -s "$d" ] || die "$d missing: the package_build test makes it"
done
t=$(date +%s)
lintian --display-info --show-overrides "${DEBS[@]}" 2>&1 | grep -v '^running with root privileges' \
	>"$T/lintian.log"
echo "lintian: $(($(date +%s) - t)) s"
cat "$T/lintian.log"
check "no lintian error or warning" bash -c "! grep -q '^[EW]: ' '$T/lintian.log'"
check "lintian ran (it names the packages)" grep -q 'railyard-' "$T/lintian.log"
finish
