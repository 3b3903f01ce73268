# A fresh Debian 12 (bookworm) root for the tests in tests/package: a minbase root made once by
# debootstrap and cached in BUILD/package-cache (with apt's lists and the packages downloaded),
# and an overlay of it per run, at $R, in which apt installs from the archive. Sourced by a test
# after tests/integration/lib.sh, in a private mount namespace (unshare --mount: whatever ends
# the test, its mounts go with it), with skip() defined (print the reason, exit 77).
#   root_lock        one test at a time on the cache (apt's caches are shared); root_unlock
#   root_cached      the cached root: made when missing; skip() when it cannot be
#   root_mount       $R: the overlay (or a copy), /proc, /dev, apt's caches bound in
#   root_apt_update  apt-get update in $R; skip() when the archive is down and nothing is cached
#   in_root CMD...   CMD in $R with a clean environment
#   root_cleanup     the processes whose root is $R killed, the mounts undone, $R removed
MIRROR=${RAILYARD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${RAILYARD_PACKAGE_CACHE:-$BUILD/package-cache}
ROOTFS=$CACHE/bookworm-minbase
R=$T/root
MOUNTS=()

phase() { echo "---- $* ($(($(date +%s) - T0)) s)"; }
# A command in the root, with a clean environment (nothing of the test's leaks in).
in_root() {
	chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
mnt() { # mnt TARGET mount-args...: mount and remember it for the cleanup
	local target=$1
	shift
	mount "$@" "$target" && MOUNTS+=("$target")
}
archive_reachable() { curl -fs --max-time 20 -o /dev/null "$MIRROR/dists/bookworm/Release"; }

root_lock() {
	mkdir -p "$CACHE/apt-archives/partial" "$CACHE/apt-lists/partial"
	exec 9>"$CACHE/lock"
	flock 9
}
root_unlock() { exec 9>&-; }

root_cached() {
	if [ ! -e "$ROOTFS/.complete" ]; then
		archive_reachable || skip "the Debian archive ($MIRROR) is unreachable and no Debian 12 root" \
			"is cached in $ROOTFS (set RAILYARD_DEBIAN_MIRROR for another mirror)"
		phase "debootstrap --variant=minbase bookworm (cold cache)"
		rm -rf --one-file-system "$ROOTFS.partial"
		local t
		t=$(date +%s)
		if ! debootstrap --variant=minbase bookworm "$ROOTFS.partial" "$MIRROR" \
			>"$CACHE/debootstrap.log" 2>&1; then
			tail -20 "$CACHE/debootstrap.log"
			die "debootstrap failed (see $CACHE/debootstrap.log)"
		fi
		rm -f "$ROOTFS.partial"/var/cache/apt/archives/*.deb
		echo "$(($(date +%s) - t))" >"$ROOTFS.partial/.debootstrap-seconds"
		touch "$ROOTFS.partial/.complete"
		rm -rf --one-file-system "$ROOTFS"
		mv "$ROOTFS.partial" "$ROOTFS"
	fi
	echo "cached root: $ROOTFS (debootstrap took $(cat "$ROOTFS/.debootstrap-seconds") s)"
}

root_mount() {
	phase "a fresh root over the cached one"
	mkdir -p "$R" "$T/ovl/upper" "$T/ovl/work"
	if ! mnt "$R" -t overlay overlay \
		-o "lowerdir=$ROOTFS,upperdir=$T/ovl/upper,workdir=$T/ovl/work" 2>/dev/null; then
		echo "no overlayfs here: copying the root"
		cp -a "$ROOTFS/." "$R/" || die "copying $ROOTFS"
	fi
	mnt "$R/proc" -t proc proc || die "mount proc"
	mnt "$R/dev" --bind /dev || die "bind /dev"
	# apt's terminal log wants a pty: a devpts of the root's own
	mnt "$R/dev/pts" -t devpts devpts -o newinstance,ptmxmode=0666 || echo "no devpts: apt warns"
	mnt "$R/var/cache/apt/archives" --bind "$CACHE/apt-archives" || die "bind apt archives"
	mnt "$R/var/lib/apt/lists" --bind "$CACHE/apt-lists" || die "bind apt lists"
	cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null
	# apt's lists smaller and quicker to fetch: no translations, kept compressed
	printf 'Acquire::Languages "none";\nAcquire::GzipIndexes "true";\n' \
		>"$R/etc/apt/apt.conf.d/90lean-lists"
}

root_apt_update() {
	if ! in_root apt-get update -q >"$T/apt-update.log" 2>&1; then
		if ! archive_reachable && ! ls "$CACHE/apt-lists/"*_Packages* >/dev/null 2>&1; then
			skip "the Debian archive ($MIRROR) is unreachable and no package lists are cached"
		fi
		echo "apt-get update failed (cached lists used):"
		tail -3 "$T/apt-update.log"
	fi
}

# Every process whose root is the chroot, then the mounts, innermost first; the root itself only
# when nothing is mounted in it any more. After a failure the overlay's upper directory stays
# (what the test changed in the root, to look at) unless ROOT_KEEP_CHANGES=0.
ROOT_KEEP_CHANGES=1
root_cleanup() {
	local p i busy=0
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || busy=1
	done
	MOUNTS=()
	if [ "$busy" = 0 ] && [ -d "$R" ]; then
		rm -rf --one-file-system "$R"
		if [ "$FAILS" -ne 0 ] && [ "$ROOT_KEEP_CHANGES" = 1 ]; then
			echo "the root's changes: $T/ovl/upper"
		else
			rm -rf --one-file-system "$T/ovl"
		fi
	fi
}
