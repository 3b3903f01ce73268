#!/usr/bin/env bash
# Build the soft-RoCE guest image: a Debian kernel plus a compressed initramfs holding busybox,
# rdma-core user space and providers, perftest, iproute2 and the project's own binaries.
# Usage: build-image.sh [OUTDIR]   (default $RAILYARD_BUILD_DIR/rdma-vm)
# Exit: 0 built (or up to date), 77 cannot build here (no tool, no archive, package missing),
# 1 build error (e.g. a shared library missing from the image, named on stderr).
set -euo pipefail

SRC_DIR=${RAILYARD_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD_DIR=${RAILYARD_BUILD_DIR:-}
if [ -z "$BUILD_DIR" ]; then
	echo "build-image: RAILYARD_BUILD_DIR is not set" >&2
	exit 1
fi
OUT=${1:-$BUILD_DIR/rdma-vm}
CACHE=${RAILYARD_RDMA_VM_CACHE:-$OUT/cache}
IMG=$OUT/image
HERE=$SRC_DIR/tests/rdma-vm
# Bump when the way the base image is assembled changes, so cached bases are rebuilt.
BASE_FORMAT=6
ARCH_LIBDIR=usr/lib/x86_64-linux-gnu

skip() {
	echo "SKIP rdma-vm image: $*" >&2
	exit 77
}
die() {
	echo "build-image: error: $*" >&2
	exit 1
}
say() {
	echo "build-image: $*" >&2
}

for t in apt-get apt-cache dpkg-deb tar cpio gzip depmod modprobe readelf ldd flock sha256sum; do
	command -v "$t" >/dev/null 2>&1 || skip "host tool '$t' not found (install deploy/install-deps.sh packages)"
done

mkdir -p "$OUT" "$CACHE" "$IMG"
exec 9>"$OUT/.build.lock"
flock -w 600 9 || die "timed out waiting for another image build ($OUT/.build.lock)"

# --- package list -------------------------------------------------------------------------------
# linux-image-amd64 depends on the current linux-image-6.1.0-N-amd64: resolve N at build time.
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$KPKG" ] || skip "cannot resolve linux-image-amd64 to a kernel package (apt lists missing? run apt-get update)"
PKGS=("$KPKG" busybox-static libc6 libgcc-s1 libibverbs1 ibverbs-providers librdmacm1 libibumad3
	ibverbs-utils rdmacm-utils perftest iproute2 libnl-3-200 libnl-route-3-200 libpci3 libudev1
	libbpf1 libbsd0 libmd0 libcap2 libdb5.3 libelf1 zlib1g libzstd1 libmnl0 libselinux1
	libpcre2-8-0 libxtables12
	# Open MPI 4.1 and UCX 1.13 (mpirun/orted, ucx_info, ucx_perftest) and the libraries their
	# ELF files need; libhwloc-plugins, libfabric1 and the PSM libraries are left out (the Open
	# MPI components that need them are pruned below).
	openmpi-bin openmpi-common libopenmpi3 libucx0 ucx-utils libpmix2 libhwloc15
	libevent-core-2.1-7 libevent-pthreads-2.1-7 libmunge2 libnuma1 libstdc++6 libgomp1)

pkglist=$CACHE/pkglist.new
# One apt-cache call for all candidates (one call per package costs ~0.4 s each).
apt-cache policy "${PKGS[@]}" 2>/dev/null | awk '
	/^[^ ].*:$/ { name = substr($0, 1, length($0) - 1); next }
	/^  Candidate:/ { print name "=" $2 }' >"$pkglist"
for p in "${PKGS[@]}"; do
	v=$(awk -F= -v p="$p" '$1 == p { print $2 }' "$pkglist")
	if [ -z "$v" ] || [ "$v" = "(none)" ]; then
		skip "package '$p' is not available from the configured archive"
	fi
done
key=$( (echo "format=$BASE_FORMAT"; cat "$pkglist") | sha256sum | cut -c1-16)
BASE=$CACHE/base-$key

# --- base: downloaded once per package list, kernel unpacked, base initramfs packed ---------------
build_base() {
	local debs=$CACHE/debs t0 root kroot kver m f
	t0=$(date +%s)
	mkdir -p "$debs"
	# Drop debs that are no longer in the list (refresh when the list changes).
	for f in "$debs"/*.deb; do
		[ -e "$f" ] || continue
		local keep=0 pv
		while IFS= read -r pv; do
			local name=${pv%%=*} ver=${pv#*=}
			case "$(basename "$f")" in "${name}_${ver//:/%3a}_"*) keep=1 ;; esac
		done <"$pkglist"
		[ $keep = 1 ] || rm -f "$f"
	done
	local want=()
	while IFS= read -r pv; do
		local name=${pv%%=*} ver=${pv#*=}
		compgen -G "$debs/${name}_${ver//:/%3a}_*.deb" >/dev/null || want+=("$pv")
	done <"$pkglist"
	if [ ${#want[@]} -gt 0 ]; then
		say "downloading ${#want[@]} packages into $debs"
		if ! (cd "$debs" && apt-get download -q "${want[@]}") >"$CACHE/download.log" 2>&1; then
			tail -5 "$CACHE/download.log" >&2
			skip "apt-get download failed (no network to the Debian archive?); see $CACHE/download.log"
		fi
	fi

	rm -rf "$BASE.tmp"
	root=$BASE.tmp/root
	kroot=$BASE.tmp/kernel
	mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{etc,proc,sys,dev,tmp,run,root,var} "$kroot"
	ln -s usr/bin "$root/bin"
	ln -s usr/sbin "$root/sbin"
	ln -s usr/lib "$root/lib"
	ln -s usr/lib64 "$root/lib64"
	while IFS= read -r pv; do
		local name=${pv%%=*} ver=${pv#*=} deb
		deb=$(compgen -G "$debs/${name}_${ver//:/%3a}_*.deb" | head -1)
		[ -n "$deb" ] || skip "package '$name' was not downloaded"
		if [ "$name" = "$KPKG" ]; then
			dpkg-deb -x "$deb" "$kroot"
		else
			dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$root" ||
				die "cannot unpack $deb"
		fi
	done <"$pkglist"

	kver=$(ls "$kroot/lib/modules" | head -1)
	[ -n "$kver" ] && [ -f "$kroot/boot/vmlinuz-$kver" ] || die "kernel package $KPKG has no vmlinuz/modules"
	depmod -b "$kroot" "$kver" || die "depmod failed for $kver"
	cp "$kroot/boot/vmlinuz-$kver" "$BASE.tmp/vmlinuz"
	# Modules in load order (see notes/softroce-vm.md); dependencies resolved by modprobe.
	# sch_netem: `tc qdisc ... netem delay` makes a guest slow on purpose (campaign-verbs).
	# virtio_blk and ext4 (crc32c first: ext4 asks the crypto API for it by name): the
	# persistent disk of a guest that reboots (reboot-vm.sh).
	local mods=(crc32_generic crc32-pclmul udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe
		configfs ib_cm iw_cm rdma_cm rdma_ucm ib_umad dummy virtio_ring virtio
		virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net
		sch_netem crc32c_generic virtio_blk ext4)
	mkdir -p "$root/usr/lib/ry-modules"
	: >"$root/usr/lib/ry-modules/order"
	local n=0
	for m in "${mods[@]}"; do
		local deps
		deps=$(modprobe -C /dev/null -d "$kroot" -S "$kver" --show-depends "$m" 2>&1) ||
			die "kernel $kver has no module $m: $deps"
		while read -r kind path _; do
			[ "$kind" = insmod ] || continue
			local b
			b=$(basename "$path")
			grep -qx "$b" "$root/usr/lib/ry-modules/order" && continue
			cp "$path" "$root/usr/lib/ry-modules/$b"
			echo "$b" >>"$root/usr/lib/ry-modules/order"
			n=$((n + 1))
		done <<<"$deps"
	done
	rm -rf "$kroot"

	# busybox applets for everything the packages do not provide (iproute2's ip wins).
	local bb=$root/usr/bin/busybox
	[ -x "$bb" ] || die "busybox-static did not provide /bin/busybox"
	local a
	for a in $("$bb" --list); do
		[ -e "$root/usr/bin/$a" ] || [ -e "$root/usr/sbin/$a" ] || [ -L "$root/usr/bin/$a" ] ||
			ln -s busybox "$root/usr/bin/$a"
	done
	rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bug,bash-completion} "$root"/usr/lib/udev
	# Not needed in a test guest, and their libraries are not in the package list: glibc's
	# charset converters, tc's ATM plugin, and ss (libtirpc).
	rm -rf "$root/$ARCH_LIBDIR/gconv" "$root/$ARCH_LIBDIR/tc/q_atm.so" "$root/usr/bin/ss"
	# Open MPI's Fortran and Java bindings (libgfortran, a JVM), its libfabric/PSM components
	# (libfabric1, libpsm*; not used over UCX or TCP), OpenSHMEM, and its compiler wrappers' data.
	local ompi=$root/$ARCH_LIBDIR/openmpi/lib/openmpi3
	rm -rf "$root/$ARCH_LIBDIR"/libmpi_mpifh* "$root/$ARCH_LIBDIR"/libmpi_usempi* \
		"$root/$ARCH_LIBDIR"/libmpi_java* "$root/$ARCH_LIBDIR"/libmca_common_ofi* \
		"$ompi"/mca_{btl_ofi,mtl_ofi,mtl_psm,mtl_psm2}.so \
		"$root/$ARCH_LIBDIR"/liboshmem* "$ompi"/mca_{spml,sshmem,scoll,memheap,atomic}_*.so \
		"$root/usr/bin/oshmem_info" "$root"/usr/share/openmpi/*-wrapper-data.txt \
		"$root/usr/share/java"
	# mpirun/mpiexec are Debian alternatives (made by maintainer scripts, which never run here).
	for a in mpirun mpiexec; do
		[ -e "$root/usr/bin/$a" ] || ln -s orterun "$root/usr/bin/$a"
	done
	[ -f "$root/etc/ld.so.conf" ] || echo "include /etc/ld.so.conf.d/*.conf" >"$root/etc/ld.so.conf"
	echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
	echo "root:x:0:" >"$root/etc/group"
	echo "127.0.0.1 localhost" >"$root/etc/hosts"
	check_libs "$root" /dev/null || exit 1
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -1 >"$BASE.tmp/base.cpio.gz"
	echo "$kver" >"$BASE.tmp/kver"
	cp "$pkglist" "$BASE.tmp/pkglist"
	rm -rf "$root"
	rm -rf "$BASE"
	mv "$BASE.tmp" "$BASE"
	# Only the current base is kept.
	for f in "$CACHE"/base-*; do
		[ "$f" = "$BASE" ] || rm -rf "$f"
	done
	say "base image for kernel $kver built with $n modules in $(($(date +%s) - t0)) s"
}

# elf_needed DIR: "library<TAB>file<TAB>runpath" for every DT_NEEDED entry of every ELF file
# under DIR (runpath: the file's DT_RUNPATH or DT_RPATH, colon-separated, "-" when none).
elf_needed() {
	find "$1" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
		xargs -0 -r sh -c 'for f; do head -c4 "$f" | grep -q ELF && printf "%s\0" "$f"; done' sh |
		{ xargs -0 -r readelf -d 2>/dev/null || true; } | awk '
		function flush() { for (i = 0; i < n; i++) print libs[i] "\t" f "\t" (rp == "" ? "-" : rp) }
		/^File: / { flush(); f = $2; n = 0; rp = ""; next }
		/\(NEEDED\)/ { lib = $NF; gsub(/[\[\]]/, "", lib); libs[n++] = lib }
		/\((RUNPATH|RPATH)\)/ { p = $NF; gsub(/[\[\]]/, "", p); rp = p }
		END { flush() }' | sort -u
}

# in_runpath ROOT LIBLIST FILE RUNPATH LIB: LIB is in one of FILE's DT_RUNPATH/DT_RPATH folders
# (absolute guest paths or $ORIGIN), in the image under ROOT or in LIBLIST (Open MPI's and UCX's
# plugins find their libraries this way).
in_runpath() {
	local root=$1 liblist=$2 f=$3 rp=$4 lib=$5 d origin
	[ "$rp" != - ] || return 1
	origin=$(dirname "${f#"$root"}")
	local IFS=:
	for d in $rp; do
		d=${d//\$ORIGIN/$origin}
		d=${d//\$\{ORIGIN\}/$origin}
		d=${d#/}
		[ -n "$d" ] || continue
		{ [ -e "$root/$d/$lib" ] || grep -qxF "$d/$lib" "$liblist"; } && return 0
	done
	return 1
}

# check_libs ROOT LIBLIST: every ELF file under ROOT must find each DT_NEEDED library either in
# LIBLIST (paths relative to the guest root) or under ROOT; the missing ones are named with the
# file that needs them and the build fails.
check_libs() {
	local root=$1 liblist=$2 missing
	missing=$(elf_needed "$root" | while IFS=$'\t' read -r lib f rp; do
		grep -qxF -e "$ARCH_LIBDIR/$lib" -e "usr/lib64/$lib" -e "usr/lib/$lib" "$liblist" ||
			[ -e "$root/$ARCH_LIBDIR/$lib" ] || [ -e "$root/usr/lib64/$lib" ] ||
			[ -e "$root/usr/lib/$lib" ] || in_runpath "$root" "$liblist" "$f" "$rp" "$lib" ||
			printf '  %s (needed by %s)\n' "$lib" "${f#"$root"/}"
	done)
	if [ -n "$missing" ]; then
		echo "build-image: error: shared libraries missing from the guest image:" >&2
		echo "$missing" >&2
		return 1
	fi
}

if [ ! -f "$BASE/base.cpio.gz" ]; then
	build_base
fi

# --- overlay: /init, guest helpers, the project's binaries and their libraries (every build) ----
t0=$(date +%s)
ovl=$OUT/overlay.tmp
rm -rf "$ovl"
mkdir -p "$ovl/ry" "$ovl/opt/railyard/bin" "$ovl/$ARCH_LIBDIR" "$ovl/usr/lib64"
install -m 0755 "$HERE/guest/init.sh" "$ovl/init"
install -m 0644 "$HERE/guest/lib.sh" "$ovl/ry/lib.sh"
# Test-only ssh stand-in for Open MPI's plm_rsh_agent (cases/mpi-cluster.sh).
install -m 0755 "$HERE/guest/test-rsh.sh" "$ovl/ry/test-rsh"
bins=$(find "$BUILD_DIR" -path "$OUT" -prune -o -type f -perm -u+x \
	\( -name 'railyard-*' -o -name 'verbs-smoke' -o -name 'libcuda-double.so' \
	-o -name 'mpi-allreduce' \) -print | sort)
# Unpack the base's library list once so host libraries already in the guest are not copied.
baselibs=$OUT/baselibs.txt
if [ ! -f "$baselibs" ] || [ "$baselibs" -ot "$BASE/base.cpio.gz" ]; then
	gzip -dc "$BASE/base.cpio.gz" | cpio -it --quiet 2>/dev/null | sed 's|^\./||' >"$baselibs"
fi
for b in $bins; do
	head -c4 "$b" | grep -q ELF || continue
	install -m 0755 "$b" "$ovl/opt/railyard/bin/"
	ldd_out=$(ldd "$b" 2>&1) || die "ldd failed on $b: $ldd_out"
	if grep -q "not found" <<<"$ldd_out"; then
		die "$(basename "$b"): shared library not found on the host: $(grep 'not found' <<<"$ldd_out" | awk '{print $1}' | xargs)"
	fi
	for lib in $(awk '/=> \// {print $3} /^\t\/[^ ]+ \(0x/ {print $1}' <<<"$ldd_out"); do
		case "$lib" in
		/lib64/* | /usr/lib64/*) gp=usr/lib64/$(basename "$lib") ;;
		*) gp=$ARCH_LIBDIR/$(basename "$lib") ;;
		esac
		grep -qxF "$gp" "$baselibs" && continue
		[ -e "$ovl/$gp" ] || cp -L "$lib" "$ovl/$gp"
	done
done
check_libs "$ovl" "$baselibs" || exit 1
(cd "$ovl" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
	gzip -1 >"$IMG/overlay.cpio.gz.tmp"
mv "$IMG/overlay.cpio.gz.tmp" "$IMG/overlay.cpio.gz"
rm -rf "$ovl"
cp "$BASE/vmlinuz" "$IMG/vmlinuz.tmp" && mv "$IMG/vmlinuz.tmp" "$IMG/vmlinuz"
ln -sf "$BASE/base.cpio.gz" "$IMG/base.cpio.gz.tmp" && mv -T "$IMG/base.cpio.gz.tmp" "$IMG/base.cpio.gz"
cp "$BASE/kver" "$IMG/kver"
echo "$bins" | sed "s|^$BUILD_DIR/||" >"$IMG/binaries"
say "image ready in $IMG (kernel $(cat "$IMG/kver"), $(echo "$bins" | grep -c . || true) project binaries, overlay $(($(date +%s) - t0)) s)"
