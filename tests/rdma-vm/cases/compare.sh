# Guest side of compare-perftest.sh (mode single): each round runs every test with perftest and
# with railyard-bench (when it is in the image), alternating which goes first, and prints
# "RY-CMP TOOL TEST ROUND VALUE UNIT". Parameters: RY_CMP_ROUNDS RY_CMP_TESTS RY_CMP_ITERS
# RY_CMP_SIZE (from the runner's --env).
set -e
rounds=${RY_CMP_ROUNDS:-3}
iters=${RY_CMP_ITERS:-1000}
have_bench=0
command -v railyard-bench >/dev/null 2>&1 && have_bench=1
[ $have_bench = 1 ] || echo "RY-NOTE railyard-bench is not in the image: perftest only"
port=19100
# Pinning (RY_CMP_PIN, default 1): every server on vCPU 0, every client on vCPU 1, for both
# tools. Unpinned, where the scheduler put the client relative to rxe's packet processing made
# read latency bimodal (~32 vs ~50-80 usec under TCG) and the mode stuck to the run order.
pin_srv="" pin_cli=""
if [ "${RY_CMP_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ]; then
	pin_srv="taskset -c 0" pin_cli="taskset -c 1"
fi

# Message size: RY_CMP_SIZE, else 2 B for latency and 64 KiB for bandwidth tests.
size_of() {
	case "$1" in
	*_bw) echo "${RY_CMP_SIZE:-65536}" ;;
	*) echo "${RY_CMP_SIZE:-2}" ;;
	esac
}

run_perftest() { # TEST ROUND
	kind=lat
	case "$1" in *_bw) kind=bw ;; esac
	size=$(size_of "$1")
	port=$((port + 1))
	# shellcheck disable=SC2086 # pin_* split on purpose
	ry_perf_server_start "cmp_$1" $pin_srv "ib_$1" -p $port -n "$iters" -s "$size"
	# shellcheck disable=SC2086
	m=$(ry_perf_client "$kind" "cmp_$1" "$RY_IP" $pin_cli "ib_$1" -p $port -n "$iters" -s "$size") ||
		{ echo "$m"; ry_perf_server_wait "cmp_$1"; echo "RY-CMP perftest $1 $2 failed -"; return 0; }
	ry_perf_server_wait "cmp_$1"
	set -- $m
	echo "RY-CMP perftest ${2#cmp_} $round $3 $4"
}

run_bench() { # TEST ROUND: railyard-bench, same device, GID, size and iterations as perftest.
	size=$(size_of "$1")
	port=$((port + 1))
	gid=$(ry_gid_index "$RY_DEV" "$RY_IP")
	kind=${1##*_} op=${1%_*}
	# shellcheck disable=SC2086 # pin_* split on purpose
	timeout 60 $pin_srv railyard-bench "$kind" --transport verbs --op "$op" -d "$RY_DEV" \
		-x "$gid" -p $port -n "$iters" -s "$size" --timeout 30000 >/tmp/bench_srv.log 2>&1 &
	srv=$!
	# The client retries its connect until the server listens (--timeout bounds it).
	# shellcheck disable=SC2086
	if m=$(timeout 60 $pin_cli railyard-bench "$kind" --transport verbs --op "$op" -d "$RY_DEV" \
		-x "$gid" -p $port -n "$iters" -s "$size" --timeout 30000 --metrics "$RY_IP" \
		2>/tmp/bench_cli.err | grep "^RY-METRIC $1 "); then
		set -- $m
		echo "RY-CMP railyard-bench $2 $round $3 $4"
	else
		cat /tmp/bench_cli.err
		echo "RY-CMP railyard-bench $1 $round failed -"
	fi
	wait $srv || cat /tmp/bench_srv.log
}

round=1
while [ $round -le "$rounds" ]; do
	for t in $RY_CMP_TESTS; do
		if [ $have_bench = 0 ]; then
			run_perftest "$t" $round
		elif [ $((round % 2)) = 1 ]; then
			run_perftest "$t" $round
			run_bench "$t" $round
		else
			run_bench "$t" $round
			run_perftest "$t" $round
		fi
	done
	round=$((round + 1))
done
