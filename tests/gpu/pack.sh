#!/usr/bin/env bash
# Pack what tests/gpu/run.sh needs on a machine with an NVIDIA GPU and no package registry
# (/work/shared/notes/gpu-machine.md): railyard-agent and railyard-bench with every library ldd
# lists except the C/C++ runtime the machine has newer copies of (libc, libm, libgcc_s,
# libstdc++, libz, the loader), the GPU scripts, into one folder (ignored by git) and a tarball
# of it. Usage: tests/gpu/pack.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  a built tree (default $RAILYARD_BUILD_DIR, else ./build)
#   OUT_DIR    default BUILD_DIR/gpu-bundle; OUT_DIR.tar.gz is written beside it
# On the GPU machine: tar xzf gpu-bundle.tar.gz && gpu-bundle/run.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=${1:-${RAILYARD_BUILD_DIR:-$SRC/build}}
OUT=${2:-$BUILD/gpu-bundle}
die() {
	echo "pack: $*" >&2
	exit 1
}
[ -d "$BUILD" ] || die "no build tree at $BUILD (cmake --build build first)"
bins=()
for b in nodeagent/railyard-agent nodeagent/bench/railyard-bench; do
	[ -x "$BUILD/$b" ] || die "$BUILD/$b is not built"
	bins+=("$BUILD/$b")
done
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for b in "${bins[@]}"; do
	cp "$b" "$OUT/bin/"
	# "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)": the resolved path
	ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
		case "$(basename "$lib")" in
		libc.so.* | libm.so.* | libgcc_s.so.* | libstdc++.so.* | libz.so.* | ld-linux*.so.* | \
			libdl.so.* | libpthread.so.* | librt.so.*) continue ;;
		esac
		cp -L "$lib" "$OUT/lib/"
	done
done
# The GPU tests and what they call; facts-vs-smi.sh comes with the gpu-facts work.
cp "$HERE/run.sh" "$OUT/"
[ ! -f "$HERE/facts-vs-smi.sh" ] || cp "$HERE/facts-vs-smi.sh" "$OUT/"
# The verbs providers libibverbs loads by path are the machine's own (none here is needed
# without an RDMA device); say which rdma-core the bundle carries.
ls "$OUT/lib" >"$OUT/LIBS"
git -C "$SRC" rev-parse --short HEAD >"$OUT/COMMIT" 2>/dev/null || echo unknown >"$OUT/COMMIT"
tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")"
echo "pack: $OUT ($(du -sh "$OUT" | cut -f1), $(wc -l <"$OUT/LIBS") libraries) and $OUT.tar.gz"
