#!/usr/bin/env bash
# Benchmark, not a test: render a sign-off of a synthetic campaign (default 1024 nodes x 8
# rails, a per-rail pairs latency test and a bandwidth test: 8,380,416 result rows), the way
# `signoff create` and `signoff export` do: the results fed through the report's summariser,
# then the canonical JSON bytes, their SHA-256, the detached CMS signature, its verification and
# the HTML page, each timed, RUNS times. Side by side, the anchor: stock `openssl cms -sign` and
# `openssl cms -verify` on the same bytes with the same key (process start included). Prints
# sizes and the median render time against the target (<= 2000 ms: bytes + hash + sign + HTML).
# Usage: bench/signoff-render.sh [--build DIR] [--nodes 1024] [--rails 8] [--runs 3]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build nodes=1024 rails=8 runs=3
while [ $# -gt 0 ]; do
	case "$1" in
	--build) BUILD=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--rails) rails=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: $0 [--build DIR] [--nodes 1024] [--rails 8] [--runs 3]" >&2; exit 2 ;;
	esac
done
target_ms=2000
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null
cmake --build "$BUILD" --target railyard-signoff-bench -j"$(nproc)" >/dev/null
OUT=$(mktemp -d /tmp/railyard-signoff-bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms_of() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }

render=() ossl_sign=() ossl_verify=() ours_sign=() ours_verify=()
echo "sign-off of a synthetic campaign: $nodes nodes x $rails rails, $runs runs, on $(nproc) CPUs"
for ((i = 1; i <= runs; i++)); do
	out=$("$BUILD/bench/railyard-signoff-bench" --nodes "$nodes" --rails "$rails" --out "$OUT")
	get() { awk -F= -v k="$1" '$1 == k { print $2 }' <<<"$out"; }
	render+=("$(get render_ms)")
	ours_sign+=("$(get sign_ms)")
	ours_verify+=("$(get verify_ms)")
	ossl_sign+=("$(ms_of openssl cms -sign -binary -md sha256 -signer "$OUT/signer.crt" \
		-inkey "$OUT/signer.key" -in "$OUT/signoff.json" -outform PEM -out "$OUT/anchor.p7s")")
	# The anchor times the signature step alone; its result is checked below, whole.
	ossl_verify+=("$(ms_of openssl cms -verify -binary -content "$OUT/signoff.json" \
		-in "$OUT/signoff.p7s" -inform PEM -CAfile "$OUT/ca.pem" -purpose any -out /dev/null)")
	printf 'run %d: %s rows (%s listed), results fed in %s ms; JSON %s bytes in %s ms, SHA-256 %s ms, sign %s ms, verify %s ms, HTML %s bytes in %s ms: render %s ms, peak RSS %s MiB\n' \
		"$i" "$(get rows)" "$(get rows_listed)" "$(get results_ms)" "$(get json_bytes)" \
		"$(get bytes_ms)" "$(get hash_ms)" "$(get sign_ms)" "$(get verify_ms)" \
		"$(get html_bytes)" "$(get html_ms)" "$(get render_ms)" "$(get peak_rss_mib)"
done
# Stock OpenSSL verifies it as docs/signoff.md shows (SO_VERIFY_OPENSSL: the signature, then
# that the signer is the sign-off key).
cat >"$OUT/verify-openssl.sh" <<'RECIPE'
openssl cms -verify -binary -content signoff.json -in signoff.p7s -inform PEM \
    -CAfile ca.pem -purpose any -signer signer.pem -out /dev/null &&
openssl x509 -in signer.pem -noout -ext extendedKeyUsage |
    grep -Eqx ' *(1\.3\.6\.1\.5\.5\.7\.3\.36|Document Signing)' &&
echo 'sign-off verified: signed by the sign-off key'
RECIPE
(cd "$OUT" && sh verify-openssl.sh >/dev/null 2>&1) ||
	{ echo "$0: stock openssl does not verify our signature (see docs/signoff.md)" >&2; exit 1; }
m() { printf '%s\n' "$@" | median; }
printf 'sign:   railyard %s ms | openssl cms -sign %s ms (ratio %.2f)\n' "$(m "${ours_sign[@]}")" \
	"$(m "${ossl_sign[@]}")" "$(awk -v a="$(m "${ours_sign[@]}")" -v b="$(m "${ossl_sign[@]}")" 'BEGIN { print b ? a / b : 0 }')"
printf 'verify: railyard %s ms | openssl cms -verify %s ms (ratio %.2f)\n' "$(m "${ours_verify[@]}")" \
	"$(m "${ossl_verify[@]}")" "$(awk -v a="$(m "${ours_verify[@]}")" -v b="$(m "${ossl_verify[@]}")" 'BEGIN { print b ? a / b : 0 }')"
printf 'render (JSON + SHA-256 + signature + HTML): median %s ms (target <= %d ms)%s\n' \
	"$(m "${render[@]}")" "$target_ms" \
	"$(awk -v m="$(m "${render[@]}")" -v t="$target_ms" 'BEGIN { if (m > t) print ": MISSED" }')"
