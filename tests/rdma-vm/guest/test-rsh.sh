#!/bin/sh
# TEST-ONLY stand-in for ssh in the rdma-vm guests (there is no SSH in them): Open MPI's
# `--mca plm_rsh_agent /ry/test-rsh` calls it as `test-rsh HOST orted ARGS...` to start its
# daemon on HOST; this client sends the argv to HOST's server over a plain TCP port on the test
# wire (no authentication: the guests' wire is a UDP hub on the host's loopback). The server
# starts /usr/bin/orted only, its arguments passed as argv (no shell), once per request id.
# The product's relay (the controller asking the node's agent, with a one-time job token)
# replaces this; nothing outside tests/rdma-vm uses it.
#   test-rsh [-x ...] HOST orted ARGS...   client (plm_rsh_agent); exit 0 once HOST started orted
#   test-rsh --serve                       server: forks `nc -ll` on RY_RSH_PORT, prints its pid
#   test-rsh --handle                      one connection (run by nc -e): read, check, start
# Requests: "RY-RSH1 ID", one argument per line, "RY-RSH-END"; reply "RY-RSH-OK ID PID" or
# "RY-RSH-ERR reason". The daemon's output goes to /tmp/test-rsh/ID.log on HOST.
RY_RSH_PORT=${RY_RSH_PORT:-8097}
RY_RSH_DIR=/tmp/test-rsh
RY_RSH_ORTED=/usr/bin/orted

case "$1" in
--serve)
	mkdir -p "$RY_RSH_DIR"
	nc -ll -p "$RY_RSH_PORT" -e /ry/test-rsh --handle >>"$RY_RSH_DIR/server.log" 2>&1 &
	echo $!
	exit 0
	;;
--handle)
	read -r magic id || exit 1
	[ "$magic" = RY-RSH1 ] || { echo "RY-RSH-ERR bad request"; exit 1; }
	case "$id" in '' | *[!0-9a-f-]*) echo "RY-RSH-ERR bad id"; exit 1 ;; esac
	set --
	ended=0
	while read -r a; do
		[ "$a" != RY-RSH-END ] || { ended=1; break; }
		# plm_rsh quotes values for a remote shell ("..."): there is none here.
		case "$a" in \"*\") a=${a#\"} a=${a%\"} ;; esac
		set -- "$@" "$a"
	done
	[ $ended = 1 ] || { echo "RY-RSH-ERR truncated request"; exit 1; }
	echo "request $id: $*" >&2
	# For a Bourne remote shell plm_rsh wraps the daemon in
	# "( test ! -r ./.profile || . ./.profile; orted ... )": drop the wrapper.
	if [ "$1 $2 $3 $4 $5 $6 $7 $8" = "( test ! -r ./.profile || . ./.profile;" ]; then
		shift 8
		n=$#
		[ "$(eval echo "\${$n}")" = ")" ] || { echo "RY-RSH-ERR unbalanced wrapper"; exit 1; }
		i=0
		for a; do
			i=$((i + 1))
			[ $i = 1 ] && set --
			[ $i = "$n" ] || set -- "$@" "$a"
		done
	fi
	[ "$1" = orted ] || [ "$1" = "$RY_RSH_ORTED" ] ||
		{ echo "RY-RSH-ERR refused: only $RY_RSH_ORTED is started, not '$1'"; exit 1; }
	shift
	# A request repeated (its reply lost) must not start a second daemon.
	if ! mkdir "$RY_RSH_DIR/$id" 2>/dev/null; then
		echo "RY-RSH-OK $id $(cat "$RY_RSH_DIR/$id/pid" 2>/dev/null)"
		exit 0
	fi
	setsid "$RY_RSH_ORTED" "$@" </dev/null >"$RY_RSH_DIR/$id.log" 2>&1 &
	echo $! >"$RY_RSH_DIR/$id/pid"
	echo "RY-RSH-OK $id $!"
	exit 0
	;;
esac

# Client. ssh-style options first (plm_rsh may pass some); then HOST and the command.
while [ $# -gt 0 ]; do
	case "$1" in -*) shift ;; *) break ;; esac
done
[ $# -ge 2 ] || { echo "test-rsh: usage: test-rsh HOST COMMAND..." >&2; exit 2; }
host=$1
shift
case "$host" in
rdma-g[0-9]) addr=192.168.77.$((10 + ${host#rdma-g})) ;;
*) addr=$host ;;
esac
id=$(cat /proc/sys/kernel/random/uuid)
end=$(($(cut -d. -f1 /proc/uptime) + 30))
while :; do
	reply=$({
		echo "RY-RSH1 $id"
		for a in "$@"; do
			a=${a# } # plm_rsh puts a space before the daemon's name (" orted")
			printf '%s\n' "$a"
		done
		echo RY-RSH-END
	} | timeout 10 nc "$addr" "$RY_RSH_PORT" 2>&1)
	case "$reply" in
	"RY-RSH-OK $id "*) exit 0 ;;
	RY-RSH-ERR*)
		echo "test-rsh: $host: $reply" >&2
		exit 1
		;;
	esac
	# Nothing (yet) or a lost reply: ask again with the same id, which the server runs once.
	[ "$(cut -d. -f1 /proc/uptime)" -lt "$end" ] || {
		echo "test-rsh: $host ($addr:$RY_RSH_PORT): no answer in 30 s (last: '$reply')" >&2
		exit 1
	}
	sleep 0.5
done
