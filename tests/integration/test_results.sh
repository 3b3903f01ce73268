#!/usr/bin/env bash
# Integration: no result is lost and no plan runs twice. A 1000-step plan through a 16 KiB
# outbox (back-pressure), three concurrent 300-step deployments, kill -9 of an agent at a random
# step ten times (a completed step never runs again), SIGTERM mid-plan (it resumes), two agents
# on one state directory, a write lock held by another process (sessions survive, reads do not
# wait, results are held and stored after), the controller's disk full (nothing acknowledged is
# lost), and its database deleted or truncated under it (it stops).
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
HB=(--heartbeat-interval 300ms --heartbeat-timeout 1500ms)

# gen_plan FILE NAME STEPS KIND [SLEEP]: file steps (KIND file) or command steps that append
# their index to var/tmp/runs-NAME in the sysroot (KIND count), each sleeping SLEEP seconds.
gen_plan() {
	local f=$1 name=$2 n=$3 kind=$4 sleep=${5:-0.05} i
	{
		printf 'name: %s\nversion: "1"\nsteps:\n' "$name"
		for ((i = 0; i < n; i++)); do
			case $kind in
			file) printf '  - name: s%d\n    type: file\n    params:\n      path: /etc/ry-%s/f%d\n      content: "step %d of a long plan\\n"\n' "$i" "$name" "$i" "$i" ;;
			count) printf '  - name: c%d\n    type: command\n    params:\n      argv: [/bin/sh, -c, "echo %d >>\\"$RAILYARD_SYSROOT/var/tmp/runs-%s\\"; sleep %s"]\n' "$i" "$i" "$name" "$sleep" ;;
			esac
		done
	} >"$f"
}
dep_field() { "$RY" deployments "$1" --json --state-dir "$T/ctl" | jq -r "$2"; }
deploy() { "$RY" deploy --state-dir "$T/ctl" --cluster it --canary 0 --pause 0s --max-fail 100% "$@"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
finished() { [[ "$(dep_field "$1" .state)" =~ ^(succeeded|partial|failed)$ ]]; }
steps_stored() { dep_field "$1" '[.nodes[].steps[]] | length'; }
runs_of() { cat "$T/root-$1/var/tmp/runs-$2" 2>/dev/null; }
# no_step_twice NODE PLAN: every index in the runs file at most once
no_step_twice() { [ -z "$(runs_of "$1" "$2" | sort | uniq -d)" ]; }

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller "${HB[@]}"
new_token 2
for spec in a:h200-ib b:h200-ib-2; do
	IFS=: read -r name fix <<<"$spec"
	"$PREP" "$FIXTURES/$fix" "$T/root-$name" >/dev/null || die "prepare $name"
	mkdir -p "$T/root-$name/var/tmp"
	enroll "$name" "$T/root-$name" --hostname "node-$name" || die "enroll $name"
	start_agent "$name" "$T/root-$name" --outbox-max 16K
done
check "2 agents online" wait_for 20 count_is online 2

# --- a 1000-step plan through a 16 KiB outbox --------------------------------------------------
gen_plan "$T/many.yaml" many 1000 file
deploy --playbook "$T/many.yaml" --check --timeout 300s >"$T/many.out" 2>&1
M=$(last_id "$T/many.out")
check "1000-step plan succeeded on both nodes" test "$(dep_field "$M" .state)" = succeeded
check "all 2000 step results stored" test "$(steps_stored "$M")" = 2000
check "every one of them says what it would change" \
	test "$(dep_field "$M" '[.nodes[].steps[] | select(.status == "changed" and (.diff | contains("+step")))] | length')" = 2000

# --- the controller gone mid-plan: the outbox fills, the plan waits, nothing is dropped ---------
gen_plan "$T/bp.yaml" bp 300 count 0
deploy --playbook "$T/bp.yaml" --no-wait >"$T/bp.out" 2>&1 || fail "deploy bp"
BP=$(last_id "$T/bp.out")
wait_for 30 bash -c "[ -s '$T/root-a/var/tmp/runs-bp' ]" || fail "bp: never started"
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
check "with nobody acknowledging, a's 16 KiB outbox fills" wait_for 30 log_has "$T/a.log" "outbox: full"
sleep 2 # a plan that did not wait would finish its 300 steps in about a second
check "and the plan waits for room instead of dropping results ($(runs_of a bp | wc -l) of 300 steps ran)" \
	test "$(runs_of a bp | wc -l)" -lt 300
start_controller "${HB[@]}"
check "once the controller is back, the plan finishes" wait_for 120 finished "$BP"
check "it succeeded with all 600 step results stored" bash -c \
	"[ \"\$('$RY' deployments $BP --json --state-dir '$T/ctl' | jq -r '.state + \" \" + ([.nodes[].steps[]] | length | tostring)')\" = 'succeeded 600' ]"
check "every step ran exactly once" test "$(runs_of a bp | sort -n | uniq | wc -l) $(runs_of a bp | wc -l)" = "300 300"

# --- three concurrent 300-step deployments -----------------------------------------------------
ids=()
for p in x y z; do
	gen_plan "$T/$p.yaml" "$p" 300 file
	deploy --playbook "$T/$p.yaml" --check --no-wait >"$T/$p.out" 2>&1 || fail "deploy $p"
	ids+=("$(last_id "$T/$p.out")")
done
for id in "${ids[@]}"; do
	check "concurrent deployment $id finished" wait_for 300 finished "$id"
	check "$id: succeeded" test "$(dep_field "$id" .state)" = succeeded
	check "$id: all 600 step results stored" test "$(steps_stored "$id")" = 600
done

# --- kill -9 of agent a at a random step, ten times ----------------------------------------------
interrupted=0 resumed=0
for i in $(seq 1 10); do
	gen_plan "$T/k$i.yaml" "k$i" 20 count
	deploy --playbook "$T/k$i.yaml" --no-wait >"$T/k$i.out" 2>&1 || fail "deploy k$i"
	K=$(last_id "$T/k$i.out")
	at=$((RANDOM % 18 + 1))
	# kill once `at` steps have run on a
	wait_for 30 bash -c "[ \$(cat '$T/root-a/var/tmp/runs-k$i' 2>/dev/null | wc -l) -ge $at ]" ||
		fail "k$i: $at steps never ran"
	kill -9 "${AGENT_PID[a]}"
	wait "${AGENT_PID[a]}" 2>/dev/null
	start_agent a "$T/root-a" --outbox-max 16K
	if ! wait_for 60 finished "$K"; then
		fail "k$i: deployment finished after the restart"
		continue
	fi
	check "k$i (killed after $at steps): no step ran twice on a" no_step_twice a "k$i"
	check "k$i: all 20 step results of a stored" \
		test "$(dep_field "$K" '[.nodes[] | select(.hostname=="node-a") | .steps[]] | length')" = 20
	st=$(dep_field "$K" '.nodes[] | select(.hostname=="node-a") | .state')
	if [ "$st" = failed ]; then
		interrupted=$((interrupted + 1))
		check "k$i: the interrupted step is named" bash -c \
			"'$RY' deployments $K --json --state-dir '$T/ctl' | jq -r '.nodes[] | select(.hostname==\"node-a\") | .steps[] | select(.status==\"failed\") | .message' | grep -q 'interrupted: the agent stopped while this step ran'"
		check "k$i: the steps after it are skipped, not run" bash -c \
			"[ \$(sort -n '$T/root-a/var/tmp/runs-k$i' | tail -1) -lt 20 ]"
	else
		resumed=$((resumed + 1))
		check "k$i: resumed between steps, every step ran once" \
			test "$(runs_of a "k$i" | sort -u | wc -l)" = 20
	fi
	check "k$i: node b unaffected (each step once)" test "$(runs_of b "k$i" | sort -u | wc -l)" = 20
done
echo "kill -9 at a random step: $interrupted times inside a step (reported), $resumed between steps (resumed)"

# --- SIGTERM mid-plan: the plan resumes where it stopped -----------------------------------------
gen_plan "$T/term.yaml" term 20 count 0.1
deploy --playbook "$T/term.yaml" --no-wait >"$T/term.out" 2>&1 || fail "deploy term"
TD=$(last_id "$T/term.out")
wait_for 30 bash -c "[ \$(cat '$T/root-a/var/tmp/runs-term' 2>/dev/null | wc -l) -ge 5 ]" || fail "term: never started"
kill -TERM "${AGENT_PID[a]}"
wait "${AGENT_PID[a]}"
check "agent exits 0 on SIGTERM mid-plan" test $? -eq 0
check "it says where the plan stopped" log_has "$T/a.log" "plan $TD: stopped before step"
start_agent a "$T/root-a" --outbox-max 16K
check "the plan resumes and succeeds" wait_for 60 bash -c "[ \"\$('$RY' deployments $TD --json --state-dir '$T/ctl' | jq -r .state)\" = succeeded ]"
check "it resumed after the last finished step" log_has "$T/a.log" "plan $TD: resuming at step"
check "every step ran exactly once" test "$(runs_of a term | sort -n | uniq | tr '\n' ' ')" = "$(seq 0 19 | tr '\n' ' ')"
check "no step ran twice" no_step_twice a term

# --- what the agent keeps in its state directory stays bounded ------------------------------------
check "no empty backup directories are left behind" \
	test "$(find "$T/a/backups" -mindepth 1 -maxdepth 1 -type d -empty 2>/dev/null | wc -l)" = 0
check "finished plan journals are kept for at most 256 plans" test "$(ls "$T/a/jobs" | wc -l)" -le 256
check "the outbox file is empty once everything is acknowledged" \
	wait_for 10 bash -c "[ ! -s '$T/a/outbox.log' ]"

# --- two agents on one state directory -------------------------------------------------------------
check "agent a back online" wait_for 20 node_state_is node-a online
out=$("$AGENT" run --state-dir "$T/a" --sysroot "$T/root-a" 2>&1); rc=$?
check "a second agent on a's state directory exits 4 ($rc)" test "$rc" -eq 4
check "it names the agent holding it" grep -q "in use by another railyard-agent (pid ${AGENT_PID[a]})" <<<"$out"
check "the first agent is unaffected" bash -c "sleep 1; kill -0 ${AGENT_PID[a]} && [ \"\$('$RY' nodes --json --state-dir '$T/ctl' | jq -r '.items[] | select(.hostname==\"node-a\") | .state')\" = online ]"
check "no session was superseded" bash -c "! grep -q 'superseded by a new session' '$T/controller.log'"

# --- a write lock held by another process for 4.5 s -------------------------------------------------
gen_plan "$T/lock.yaml" lock 20 count 0.1
deploy --playbook "$T/lock.yaml" --no-wait >"$T/lock.out" 2>&1 || fail "deploy lock"
LD=$(last_id "$T/lock.out")
wait_for 30 bash -c "[ \$(cat '$T/root-a/var/tmp/runs-lock' 2>/dev/null | wc -l) -ge 2 ]" || fail "lock: never started"
timeouts_before=$(grep -c "heartbeat timeout" "$T/controller.log")
# The locker waits (up to 5 s) for a write the controller has in progress, then holds the lock:
# without a busy timeout its BEGIN failed at once when it met one of the rollout's commits.
(echo "BEGIN IMMEDIATE;"; echo "INSERT INTO audit_log (at, actor, action, outcome) VALUES (0, 'test', 'lock', 'held');"; sleep 4.5; echo "COMMIT;") |
	sqlite3 -cmd ".timeout 5000" "$T/ctl/controller.db" &
LOCKER=$!
locked() { ! sqlite3 -cmd ".timeout 0" "$T/ctl/controller.db" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1; }
check "the lock is held" wait_for 5 locked
"$RY" nodes --state-dir "$T/ctl" >"$T/nodes-locked.out" 2>&1
nodes_rc=$?
check "a read-only 'nodes' completes while the lock is held (exit $nodes_rc)" bash -c "[ $nodes_rc -eq 0 ] && kill -0 $LOCKER"
check "... and lists both nodes" test "$(grep -c '^n-' "$T/nodes-locked.out")" = 2
wait "$LOCKER"
check "the deployment finishes after the lock" wait_for 60 finished "$LD"
check "it succeeded with every result stored" bash -c \
	"[ \"\$('$RY' deployments $LD --json --state-dir '$T/ctl' | jq -r '.state + \" \" + ([.nodes[].steps[]] | length | tostring)')\" = 'succeeded 40' ]"
check "no session ended on a heartbeat timeout meanwhile" test "$(grep -c "heartbeat timeout" "$T/controller.log")" = "$timeouts_before"
check "both nodes stayed online" count_is online 2
check "no step ran twice under the lock" no_step_twice a lock

# --- the controller's disk full for a few seconds --------------------------------------------------------
kill -TERM "$CTL_PID"
wait "$CTL_PID"
mkdir -p "$T/fs"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=24m tmpfs "$T/fs" 2>/dev/null; then
	cleanup_mount() { umount -l "$T/fs" 2>/dev/null; }
	trap 'cleanup_mount; cleanup' EXIT
	cp -a "$T/ctl" "$T/fs/ctl" || die "copy state"
	mv "$T/ctl" "$T/ctl.disk"
	ln -s "$T/fs/ctl" "$T/ctl"
	start_controller "${HB[@]}"
	check "agents reconnect to the controller on tmpfs" wait_for 30 count_is online 2
	gen_plan "$T/full.yaml" full 20 count 0.2
	deploy --playbook "$T/full.yaml" --no-wait >"$T/full.out" 2>&1 || fail "deploy full"
	FD=$(last_id "$T/full.out")
	wait_for 30 bash -c "[ -s '$T/root-a/var/tmp/runs-full' ]" || fail "full: never started"
	dd if=/dev/zero of="$T/fs/fill" bs=64K >/dev/null 2>&1
	check "the disk is full" bash -c "! dd if=/dev/zero of='$T/fs/more' bs=4K count=1 2>/dev/null"
	check "results wait while the disk is full" wait_for 20 log_has "$T/controller.log" "database or disk is full"
	sleep 2 # the disk stays full a while: the agents keep their results
	rm -f "$T/fs/fill" "$T/fs/more"
	check "the deployment finishes once there is room" wait_for 60 finished "$FD"
	check "it succeeded with every result stored" bash -c \
		"[ \"\$('$RY' deployments $FD --json --state-dir '$T/ctl' | jq -r '.state + \" \" + ([.nodes[].steps[]] | length | tostring)')\" = 'succeeded 40' ]"
	check "no step ran twice" no_step_twice a full
	check "no result was refused" bash -c "! grep -q 'refused' '$T/a.log' '$T/b.log'"
	check "the database is intact" test "$(sqlite3 "$T/ctl/controller.db" 'PRAGMA integrity_check')" = ok
	kill -TERM "$CTL_PID"
	wait "$CTL_PID"
	rm "$T/ctl"
	cp -a "$T/fs/ctl" "$T/ctl"
	cleanup_mount
else
	echo "SKIP: the full-disk case needs root to mount a tmpfs"
fi

# --- the database deleted or truncated under a serving controller -------------------------------------
start_controller "${HB[@]}"
check "agents back" wait_for 30 count_is online 2
rm -f "$T/ctl/controller.db"
check "a controller whose database was deleted stops" wait_for 10 exited "$CTL_PID"
wait "$CTL_PID"
check "... with exit status 1" test $? -eq 1
check "... saying why" log_has "$T/controller.log" "controller.db disappeared"
"$CTL" init --state-dir "$T/ctl3" >/dev/null 2>&1 || die "init ctl3"
rm -f "$T/ctl/controller.addr"
"$CTL" serve --state-dir "$T/ctl3" --listen 127.0.0.1:0 --http 127.0.0.1:0 >>"$T/ctl3.log" 2>&1 &
C3=$!
PIDS+=("$C3")
wait_for 20 test -s "$T/ctl3/controller.addr" || fail "ctl3 did not start"
truncate -s 0 "$T/ctl3/controller.db"
check "a controller whose database was truncated stops" wait_for 10 exited "$C3"
wait "$C3"
check "... with exit status 1" test $? -eq 1
check "... saying why" log_has "$T/ctl3.log" "was truncated while serving"

for name in a b; do kill -TERM "${AGENT_PID[$name]}"; done
for name in a b; do wait "${AGENT_PID[$name]}"; done
check_sanitizers
finish
