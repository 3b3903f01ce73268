#!/usr/bin/env bash
# Integration: online backup and offline restore of the controller's database. Backups taken
# while a rollout writes its results (and while another process holds the write lock) are
# whole, consistent snapshots; restore refuses a served state directory, a damaged or foreign
# file, a directory without the CA and, without --force, an existing database; a mid-rollout
# backup restored into a fresh state directory serves its data; and after the controller's
# state directory is lost, the last backup restored there brings the fleet back: the agents
# reconnect with their certificates and a new deployment runs.
. "$(dirname "$0")/lib.sh"

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
HB=(--heartbeat-interval 300ms --heartbeat-timeout 1500ms)
STEPS=150
dep_field() { "$RY" deployments "$1" --json --state-dir "${3:-$T/ctl}" | jq -r "$2"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
finished() { [[ "$(dep_field "$1" .state)" =~ ^(succeeded|partial|failed)$ ]]; }
q() { sqlite3 -cmd ".timeout 5000" "$1" "$2"; }
keys() { mkdir -m 0700 -p "$2" && cp -p "$1"/ca.crt "$1"/ca.key "$1"/server.crt "$1"/server.key "$2"/; }

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller "${HB[@]}"
new_token 2
for spec in a:h200-ib b:h200-ib-2; do
	IFS=: read -r name fix <<<"$spec"
	"$PREP" "$FIXTURES/$fix" "$T/root-$name" >/dev/null || die "prepare $name"
	mkdir -p "$T/root-$name/var/tmp"
	enroll "$name" "$T/root-$name" --hostname "node-$name" || die "enroll $name"
	start_agent "$name" "$T/root-$name"
done
check "2 agents online" wait_for 30 count_is online 2

# --- backups while a rollout writes ------------------------------------------------------------
{
	printf 'name: bk\nversion: "1"\nsteps:\n'
	for ((i = 0; i < STEPS; i++)); do
		printf '  - name: s%d\n    type: command\n    params:\n      argv: [/bin/sh, -c, "sleep 0.02"]\n' "$i"
	done
} >"$T/bk.yaml"
"$RY" deploy --state-dir "$T/ctl" --cluster it --playbook "$T/bk.yaml" --canary 0 --pause 0s \
	--no-wait >"$T/bk.out" 2>&1 || fail "deploy"
D=$(last_id "$T/bk.out")
live() { q "$T/ctl/controller.db" "SELECT count(*) FROM step_results WHERE deployment_id = '$D'"; }
check "results are coming in" wait_for 30 bash -c "[ \$(sqlite3 -cmd '.timeout 5000' '$T/ctl/controller.db' \"SELECT count(*) FROM step_results WHERE deployment_id = '$D'\") -gt 20 ]"
snapshots=0 bad=0 counts=""
for i in 1 2 3; do
	before=$(live)
	"$CTL" backup --state-dir "$T/ctl" --to "$T/b$i.db" >"$T/b$i.out" 2>&1 || { fail "backup $i: $(cat "$T/b$i.out")"; continue; }
	after=$(live)
	n=$(q "$T/b$i.db" "SELECT count(*) FROM step_results WHERE deployment_id = '$D'")
	counts+=" $before<=$n<=$after"
	# A snapshot: its count lies between the live counts before and after it, and its rows
	# agree with each other (every stored step belongs to a node the plan was sent to).
	[ "$n" -ge "$before" ] && [ "$n" -le "$after" ] && snapshots=$((snapshots + 1))
	[ "$(q "$T/b$i.db" 'PRAGMA integrity_check')" = ok ] || bad=$((bad + 1))
	[ "$(q "$T/b$i.db" "SELECT count(*) FROM step_results r LEFT JOIN deployment_nodes n USING (deployment_id, node_id) WHERE n.sent_at IS NULL")" = 0 ] || bad=$((bad + 1))
done
echo "step results live before <= in the backup <= live after:$counts"
check "3 backups while the rollout wrote, each a consistent snapshot" test "$snapshots" = 3
check "  ... each passes integrity_check and its rows agree" test "$bad" = 0
check "  ... a backup says what it holds" grep -q "^backup of $T/ctl/controller.db written to $T/b1.db: schema v[0-9]*, 2 nodes, 1 deployments, [0-9]* step results, .* (integrity ok)$" "$T/b1.out"
check "  ... one self-contained file (no -wal), mode 0600" bash -c \
	"[ \"\$(sqlite3 '$T/b1.db' 'PRAGMA journal_mode')\" = delete ] && [ ! -e '$T/b1.db-wal' ] && [ \"\$(stat -c %a '$T/b1.db')\" = 600 ]"
check "  ... no temporary left beside it" test -z "$(find "$T" -maxdepth 1 -name '*.ry-tmp*')"
mid=$(q "$T/b2.db" "SELECT count(*) FROM step_results WHERE deployment_id = '$D'")

# A write lock held by another process: a backup is a read, it does not wait for the writer.
(echo "BEGIN IMMEDIATE;"; echo "INSERT INTO audit_log (at, actor, action, outcome) VALUES (0, 'test', 'lock', 'held');"; sleep 4; echo "COMMIT;") |
	sqlite3 "$T/ctl/controller.db" &
LOCKER=$!
locked() { ! sqlite3 -cmd ".timeout 0" "$T/ctl/controller.db" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1; }
check "another process holds the write lock" wait_for 5 locked
"$CTL" backup --state-dir "$T/ctl" --to "$T/locked.db" >"$T/locked.out" 2>&1
rc=$?
check "a backup completes while the lock is held (exit $rc)" bash -c "[ $rc -eq 0 ] && kill -0 $LOCKER"
wait "$LOCKER"
check "the rollout finishes, undisturbed by the backups" wait_for 120 finished "$D"
check "  ... succeeded with all $((2 * STEPS)) results" test "$(dep_field "$D" '.state + " " + ([.nodes[].steps[]] | length | tostring)')" = "succeeded $((2 * STEPS))"
check "no store error in the controller's log" bash -c "! grep -qi 'database is locked\|disk I/O\|SQLITE' '$T/controller.log'"
"$CTL" backup --state-dir "$T/ctl" --to "$T/final.db" >"$T/final.out" 2>&1
check "a backup after the rollout holds all $((2 * STEPS)) results" test \
	"$(q "$T/final.db" "SELECT count(*) FROM step_results WHERE deployment_id = '$D'")" = $((2 * STEPS))
refused "$CTL" backup --state-dir "$T/ctl" --to "$T/ctl/controller.db-wal" >"$T/self.out" 2>&1
check "a backup onto the database itself is refused" grep -q "is the database itself" "$T/self.out"

# --- restore: what it refuses -------------------------------------------------------------------
sum_live=$(q "$T/ctl/controller.db" "SELECT count(*) FROM step_results")
"$CTL" restore --state-dir "$T/ctl" --from "$T/b1.db" --force >"$T/r-served.out" 2>&1
rc=$?
check "restore into the served state directory is refused: busy (exit $rc = 6)" test "$rc" -eq 6
check "  ... naming the controller that serves it" grep -q "is served by railyard-controller (pid $CTL_PID); stop it first" "$T/r-served.out"
check "  ... and the live database is untouched" test "$(q "$T/ctl/controller.db" "SELECT count(*) FROM step_results")" = "$sum_live"
cp "$T/final.db" "$T/damaged.db"
# The header of step_results' root page, overwritten.
root=$(q "$T/final.db" "SELECT rootpage FROM sqlite_master WHERE name = 'step_results'")
psize=$(q "$T/final.db" "PRAGMA page_size")
printf 'garbage over a b-tree page header' | dd of="$T/damaged.db" bs=1 seek=$(((root - 1) * psize)) conv=notrunc 2>/dev/null
keys "$T/ctl" "$T/x"
refused "$CTL" restore --state-dir "$T/x" --from "$T/damaged.db" >"$T/r-damaged.out" 2>&1
check "a damaged backup is refused, saying why" grep -q "restore: .*damaged.db" "$T/r-damaged.out"
check "  ... and nothing is created" test ! -e "$T/x/controller.db"
refused "$CTL" restore --state-dir "$T/x" --from "$T/init.log" >"$T/r-foreign.out" 2>&1
check "a file that is no database is refused" grep -q "not a database" "$T/r-foreign.out"
mkdir -m 0700 "$T/nokeys"
refused "$CTL" restore --state-dir "$T/nokeys" --from "$T/b2.db" >"$T/r-nokeys.out" 2>&1
check "a directory without the CA is refused" grep -q "holds no CA" "$T/r-nokeys.out"

# --- a mid-rollout backup restored into a fresh state directory, served -------------------------
"$CTL" restore --state-dir "$T/x" --from "$T/b2.db" >"$T/r-x.out" 2>&1
check "the mid-rollout backup restores into a fresh state directory" grep -q "^restored $T/x/controller.db from $T/b2.db: .* $mid step results, .*(integrity ok)$" "$T/r-x.out"
refused "$CTL" restore --state-dir "$T/x" --from "$T/final.db" >"$T/r-again.out" 2>&1
check "restoring over it again needs --force" grep -q "exists; --force replaces it" "$T/r-again.out"
"$CTL" serve --state-dir "$T/x" --listen 127.0.0.1:0 --http 127.0.0.1:0 >>"$T/x.log" 2>&1 &
XP=$!
PIDS+=("$XP")
check "a controller serves the restored directory" wait_for 20 test -s "$T/x/controller.addr"
check "  ... with the nodes" test "$("$RY" nodes --json --state-dir "$T/x" | jq -r '[.items[].hostname] | sort | join(",")')" = node-a,node-b
check "  ... and the deployment as it was when backed up ($mid results)" \
	test "$(dep_field "$D" '[.nodes[].steps[]] | length' "$T/x")" = "$mid"
kill -TERM "$XP"
wait "$XP"
check "  ... and stops cleanly" test $? -eq 0
"$CTL" restore --state-dir "$T/x" --from "$T/final.db" --force >"$T/r-force.out" 2>&1
# Nothing serves $T/x now: what the restore stored is read with sqlite3.
check "restore --force replaces it with the final backup" \
	test "$(q "$T/x/controller.db" "SELECT count(*) FROM step_results WHERE deployment_id = '$D'")" = $((2 * STEPS))
check "  ... which passes integrity_check" test "$(q "$T/x/controller.db" 'PRAGMA integrity_check')" = ok

if command -v valgrind >/dev/null && ! ldd "$CTL" | grep -q libasan; then
	vg() { valgrind -q --leak-check=full --error-exitcode=99 "$CTL" "$@" >/dev/null 2>>"$T/valgrind.log"; }
	check "no leak or error under valgrind: backup while serving, restore" bash -c \
		"$(declare -f vg); CTL='$CTL' T='$T'; vg backup --state-dir '$T/ctl' --to '$T/vg.db' &&
		vg restore --state-dir '$T/x' --from '$T/vg.db' --force && [ ! -s '$T/valgrind.log' ]"
fi

# --- the state directory lost: the last backup brings the fleet back ------------------------------
kill -TERM "$CTL_PID"
wait "$CTL_PID"
mv "$T/ctl" "$T/ctl.lost"
keys "$T/ctl.lost" "$T/ctl"
"$CTL" restore --state-dir "$T/ctl" --from "$T/final.db" >"$T/r-dr.out" 2>&1 || fail "restore: $(cat "$T/r-dr.out")"
start_controller "${HB[@]}"
check "the agents reconnect to the restored controller" wait_for 30 count_is online 2
check "  ... which has every result of the rollout" test "$(dep_field "$D" '[.nodes[].steps[]] | length')" = $((2 * STEPS))
"$RY" deploy --timeout 60s --state-dir "$T/ctl" --cluster it --playbook "$SRC/tests/fixtures/playbooks/good/slow.yaml" \
	--canary 0 --pause 0s >"$T/after.out" 2>&1
check "  ... and runs a new deployment" grep -q "succeeded$" "$T/after.out"

for n in a b; do kill -TERM "${AGENT_PID[$n]}"; done
for n in a b; do wait "${AGENT_PID[$n]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "the controller stops cleanly on SIGTERM" test $? -eq 0
check_sanitizers
finish
