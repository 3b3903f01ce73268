#!/usr/bin/env bash
# Install the Debian packages that Railyard's build, demo and tests need.
# Idempotent: when everything is present it only runs dpkg-query and exits.
set -euo pipefail

PKGS=(
	build-essential cmake pkg-config git
	libgrpc-dev protobuf-c-compiler libprotobuf-c-dev protobuf-compiler
	libsqlite3-dev sqlite3 libssl-dev openssl libjansson-dev libcmocka-dev
	libfyaml-dev libmicrohttpd-dev libcurl4-openssl-dev
	libibverbs-dev librdmacm-dev ibverbs-utils perftest
	qemu-system-x86 cpio kmod busybox-static
	iproute2 procps psmisc valgrind clang-format jq
	sockperf iperf3
	# railyard-coll (nodeagent/coll/, built with mpicc when CMake finds MPI), the launch test's MPI
	# program and the collective runs: Open MPI 4.1 with UCX (docs/bench.md, "Collectives" and
	# "Launching collectives without SSH")
	openmpi-bin libopenmpi-dev libucx0
	python3-yaml # tests/integration/test_openapi.sh reads docs/openapi.yaml
	gpg gpg-agent # OpenPGP keys made at test time (tests/fixtures/gen-test-key.sh)
	clang libclang-rt-dev # make fuzz: libFuzzer targets (docs/fuzzing.md); the build needs gcc only
	# tests/integration/test_portal.sh and bench/portal-render.sh drive Debian's Chromium headless
	# (playwright-core from npm, never a downloaded browser); a font for legible screenshots.
	chromium fonts-dejavu-core
	# The Debian packages (make package; tests/package): dpkg-shlibdeps for their Depends,
	# lintian, debootstrap for the Debian 12 root they are installed into, curl to see whether
	# the archive answers.
	dpkg-dev lintian debootstrap curl
	# A real Slurm cluster on this host for the maintenance tests (docs/operations.md, "Maintenance
	# with Slurm"): slurmctld and one slurmd per test node, auth/none (tests/integration/slurm.sh).
	slurm-wlm
	# promtool (in Debian's prometheus package; no daemon is started) tests the shipped alert rules
	# (deploy/prometheus/, tests/prometheus/).
	prometheus
)
# npm (tests/integration/test_openapi.sh lints docs/openapi.yaml with @redocly/cli from npm):
# Debian's package, unless an npm is installed already (NodeSource's nodejs ships its own and
# conflicts with Debian's npm package).
command -v npm >/dev/null 2>&1 || PKGS+=(npm)

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = "installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		SUDO=sudo
	else
		echo "install-deps: missing packages (${missing[*]}) and not root; run as root or" \
			"install them with apt-get" >&2
		exit 1
	fi
else
	SUDO=
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: apt-get not found; install these packages by hand: ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get update -q >/tmp/railyard-apt-update.log 2>&1; then
	echo "install-deps: 'apt-get update' failed (see /tmp/railyard-apt-update.log)" >&2
	exit 1
fi
if ! $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"; then
	echo "install-deps: 'apt-get install' failed for: ${missing[*]}" >&2
	exit 1
fi
