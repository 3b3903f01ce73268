#!/bin/sh
# Host-side check of the guest's perftest result parser (guest/lib.sh ry_perf_check): real
# numbers pass, and perftest's inf / -nan / 0.000000 outputs are failed measurements.
set -u
. "$(dirname "$0")/guest/lib.sh"
export RY_ID=t
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
hdr_lat=" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
hdr_bw=" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
expect() { # expect pass|fail KIND TEXT [METRIC]
	printf '%s\n' "$3" >"$d/out"
	got=$(ry_perf_check "$2" x "$d/out")
	rc=$?
	case "$1:$rc" in
	pass:0) [ -z "${4:-}" ] || [ "$got" = "$4" ] || { echo "FAIL: got '$got', want '$4'"; fail=1; } ;;
	fail:0) echo "FAIL: accepted: $3"; fail=1 ;;
	pass:*) echo "FAIL: rejected: $3 ($got)"; fail=1 ;;
	esac
}
expect pass lat "$hdr_lat
 2       1000          17.44          52.05        18.28             18.87             2.08              28.91                   52.05" "RY-METRIC x 18.28 usec"
expect pass bw "$hdr_bw
 65536      5000             39.09              37.58  		   0.000601" "RY-METRIC x 37.58 MB/sec"
expect pass bw " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      1000             0.33               0.31   0.000634" "RY-METRIC x 0.31 Gb/sec"
expect fail lat "$hdr_lat
 2       1000          inf          inf        inf             inf             -nan              inf                   inf"
expect fail lat "$hdr_lat
 2       1000          17.44          52.05        -nan             18.87             2.08              28.91                   52.05"
expect fail bw "$hdr_bw
 65536      5000             0.000000              0.000000  		   0.000000"
expect fail bw "$hdr_bw
 65536      5000             inf              inf  		   inf"
expect fail bw "Couldn't connect to 192.168.77.1:18515"
expect fail lat ""
[ $fail = 0 ] && echo "perf-parse: all cases as expected"
exit $fail
