# A test-only Slurm cluster on this host (docs: /work/shared/notes/slurm-test.md): one slurmctld
# and one `slurmd -N NAME` per node, all on 127.0.0.1 with free ports, auth/none (no munge),
# in a temporary directory. Sourced by tests after lib.sh (uses $T, die, wait_for):
#   slurm_start NAME...       start and wait until sinfo shows every node idle; exits 77 with a
#                             reason when Slurm is missing or slurmctld cannot start (as root)
#   slurm_stop                stop every daemon by its pid file (also on EXIT)
#   slurm_node_state NAME     the node's state as sinfo's %T says it: idle, drained, draining,
#                             allocated, mixed, down... (one word, lower case)
#   slurm_node_reason NAME    the node's reason as Slurm stores it ("" when none)
# SLURM_CONF is exported: scontrol, sinfo, squeue and srun of the test find this cluster; the
# controller under test is given it explicitly (the binding's slurm.conf path, $SLURM_DIR/slurm.conf).

SLURM_DIR=
SLURM_BIN=${SLURM_BIN:-/usr/bin}
SLURM_SBIN=${SLURM_SBIN:-/usr/sbin}

# A TCP port nothing on 127.0.0.1 listens on now (and not handed out before in this test).
_slurm_ports=" "
slurm_free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		case "$_slurm_ports" in *" $p "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			_slurm_ports="$_slurm_ports$p "
			echo "$p"
			return 0
		fi
	done
	return 1
}

slurm_skip() {
	echo "skip: $*"
	exit 77
}

slurm_start() {
	[ "$#" -ge 1 ] || die "slurm_start: no node names"
	[ "$(id -u)" = 0 ] || slurm_skip "a test Slurm cluster runs its daemons as root (SlurmUser=root)"
	local b
	for b in "$SLURM_SBIN/slurmctld" "$SLURM_SBIN/slurmd" "$SLURM_BIN/scontrol" \
		"$SLURM_BIN/sinfo" "$SLURM_BIN/squeue"; do
		[ -x "$b" ] || slurm_skip "no $b (deploy/install-deps.sh installs slurm-wlm)"
	done
	SLURM_DIR=$T/slurm
	mkdir -p "$SLURM_DIR"/{state,spool,log,run} || die "slurm: mkdir"
	local ctlport n port
	ctlport=$(slurm_free_port) || die "slurm: no free port"
	{
		echo "ClusterName=rytest"
		echo "SlurmctldHost=localhost"
		echo "SlurmctldPort=$ctlport"
		echo "SlurmdPort=$(slurm_free_port)"
		echo "AuthType=auth/none"
		echo "CredType=cred/none"
		echo "SlurmUser=root"
		echo "SlurmdUser=root"
		echo "StateSaveLocation=$SLURM_DIR/state"
		echo "SlurmdSpoolDir=$SLURM_DIR/spool/%n"
		echo "SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid"
		echo "SlurmdPidFile=$SLURM_DIR/run/slurmd-%n.pid"
		echo "SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log"
		echo "SlurmdLogFile=$SLURM_DIR/log/slurmd-%n.log"
		echo "ProctrackType=proctrack/linuxproc"
		echo "TaskPlugin=task/none"
		echo "SelectType=select/cons_tres"
		echo "ReturnToService=2"
		echo "MpiDefault=none"
		echo "SlurmctldTimeout=30"
		echo "SlurmdTimeout=30"
		for n in "$@"; do
			port=$(slurm_free_port) || die "slurm: no free port"
			echo "NodeName=$n NodeHostname=localhost Port=$port CPUs=1 State=UNKNOWN"
			mkdir -p "$SLURM_DIR/spool/$n"
		done
		echo "PartitionName=gpu Nodes=ALL Default=YES State=UP"
	} >"$SLURM_DIR/slurm.conf"
	export SLURM_CONF=$SLURM_DIR/slurm.conf
	trap 'slurm_stop; cleanup' EXIT
	"$SLURM_SBIN/slurmctld" -c -f "$SLURM_CONF" >"$SLURM_DIR/log/slurmctld.out" 2>&1 ||
		slurm_skip "slurmctld did not start: $(tail -c 300 "$SLURM_DIR/log/slurmctld.out")"
	wait_for 20 "$SLURM_BIN/scontrol" ping >/dev/null ||
		slurm_skip "slurmctld does not answer: $(tail -n 3 "$SLURM_DIR/log/slurmctld.log" 2>/dev/null)"
	for n in "$@"; do
		"$SLURM_SBIN/slurmd" -f "$SLURM_CONF" -N "$n" >"$SLURM_DIR/log/slurmd-$n.out" 2>&1 ||
			die "slurmd $n did not start: $(tail -c 300 "$SLURM_DIR/log/slurmd-$n.out")"
	done
	for n in "$@"; do
		wait_for 30 _slurm_is "$n" idle ||
			die "slurm: node $n is not idle: $(slurm_node_state "$n") (see $SLURM_DIR/log)"
	done
}

_slurm_is() { [ "$(slurm_node_state "$1")" = "$2" ]; }

slurm_stop() {
	[ -n "$SLURM_DIR" ] && [ -d "$SLURM_DIR/run" ] || return 0
	local f p
	for f in "$SLURM_DIR"/run/slurmd-*.pid "$SLURM_DIR/run/slurmctld.pid"; do
		[ -s "$f" ] || continue
		p=$(cat "$f")
		kill "$p" 2>/dev/null
		wait_for 10 exited "$p" || kill -9 "$p" 2>/dev/null
		rm -f "$f"
	done
}

slurm_node_state() {
	"$SLURM_BIN/sinfo" -h -N -n "$1" -o '%T' 2>/dev/null | head -n 1 | tr -d ' *'
}

slurm_node_reason() {
	# %E is the reason as stored, without the user and time scontrol adds.
	local r
	r=$("$SLURM_BIN/sinfo" -h -N -n "$1" -o '%300E' 2>/dev/null | head -n 1)
	r=${r%"${r##*[! ]}"}
	[ "$r" = none ] && r=
	printf '%s\n' "$r"
}
