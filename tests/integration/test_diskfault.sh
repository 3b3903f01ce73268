#!/usr/bin/env bash
# Integration: the controller's state directory on a small ext4 filesystem (a loop device, 32 MiB)
# that fills up or turns read-only. Full while serving: results are held, API changes are
# refused with a clear error and store nothing, reads and an online backup still work, a
# controller killed and started on the full disk says why it cannot serve, and with room again
# everything resumes with nothing lost or run twice. Read-only while serving (ext4 aborts on an
# error and remounts itself read-only, as errors=remount-ro does on a failing disk): results are
# held, nothing acknowledged is lost, and after fsck and a remount the rollout completes.
# Read-only at start: serve refuses with the reason, reads work, and a writable mount serves.
# Needs root, a loop device and ext4 (skipped otherwise).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (loop mount)"; exit 77; }
command -v mkfs.ext4 >/dev/null && command -v losetup >/dev/null && command -v e2fsck >/dev/null ||
	{ echo "SKIP: needs mkfs.ext4, e2fsck and losetup"; exit 77; }

PREP=$SRC/tests/fixtures/prepare-sysroot.sh
HB=(--heartbeat-interval 300ms --heartbeat-timeout 1500ms)
IMG=$T/fs.img
FS=$T/fs
LOOP=""
unmount() {
	mountpoint -q "$FS" && umount "$FS" 2>/dev/null
	mountpoint -q "$FS" && umount -l "$FS"
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	LOOP=""
}
# mount_fs [ro]: the image on $FS through a loop device we own. dioread_lock: with ext4's default
# since Linux 5.6 (dioread_nolock) a new block is written as an unwritten extent that a kernel
# worker converts once the data is on disk. Twice in about twenty aborts here, and only in those
# two, that worker failed on the aborted journal ("comm kworker/...: Detected aborted journal")
# and the last commit the controller had acknowledged (SQLite's fdatasync() of the WAL returned
# 0) was gone after fsck: the best explanation is the conversion lost with the journal, reading
# the frames back as zeros. dioread_lock allocates written extents inside the journalled
# transaction that fdatasync() waits for, so the test checks the controller, not that window.
mount_fs() {
	LOOP=$(losetup --find --show "$IMG") || return 1
	mount -t ext4 -o "${1:-rw},errors=remount-ro,dioread_lock" "$LOOP" "$FS"
}

trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; unmount; cleanup' EXIT

truncate -s 32M "$IMG"
mkfs.ext4 -q -F -m 0 "$IMG" || { echo "SKIP: mkfs.ext4 failed"; exit 77; }
mkdir -p "$FS"
mount_fs || { echo "SKIP: cannot loop-mount an ext4 image here"; exit 77; }
SYSFS=/sys/fs/ext4/$(basename "$LOOP")
"$CTL" init --state-dir "$FS/ctl" >"$T/init.log" 2>&1 || die "init"
ln -s "$FS/ctl" "$T/ctl"

dep_field() { "$RY" deployments "$1" --json --state-dir "$T/ctl" | jq -r "$2"; }
deploy() { "$RY" deploy --state-dir "$T/ctl" --cluster it --canary 0 --pause 0s --max-fail 0 "$@"; }
last_id() { awk '/^deployment d-/ {sub(":", "", $2); print $2; exit}' "$1"; }
finished() { [[ "$(dep_field "$1" .state)" =~ ^(succeeded|partial|failed)$ ]]; }
ndeps() { "$RY" deployments --json --state-dir "$T/ctl" | jq ".items | length"; }
q() { sqlite3 -cmd ".timeout 5000" "$T/ctl/controller.db" "$1"; }
runs_of() { cat "$T/root-$1/var/tmp/runs-$2" 2>/dev/null; }
ran_once() { [ "$(runs_of "$1" "$2" | sort -n | uniq | wc -l) $(runs_of "$1" "$2" | wc -l)" = "$3 $3" ]; }
gen_plan() { # gen_plan NAME STEPS: command steps that append their index to var/tmp/runs-NAME
	{
		printf 'name: %s\nversion: "1"\nsteps:\n' "$1"
		for ((i = 0; i < $2; i++)); do
			printf '  - name: s%d\n    type: command\n    params:\n      argv: [/bin/sh, -c, "echo %d >>\\"$RAILYARD_SYSROOT/var/tmp/runs-%s\\"; sleep 0.1"]\n' "$i" "$i" "$1"
		done
	} >"$T/$1.yaml"
}
stored() { q "SELECT count(*) FROM step_results WHERE deployment_id = '$1'"; }

start_controller "${HB[@]}"
new_token 2
for spec in a:h200-ib b:h200-ib-2; do
	IFS=: read -r name fix <<<"$spec"
	"$PREP" "$FIXTURES/$fix" "$T/root-$name" >/dev/null || die "prepare $name"
	mkdir -p "$T/root-$name/var/tmp"
	enroll "$name" "$T/root-$name" --hostname "node-$name" || die "enroll $name"
	start_agent "$name" "$T/root-$name"
done
check "2 agents online, the controller's state on a 32 MiB ext4" wait_for 30 count_is online 2
# ready_is STATUS [PATTERN]: /readyz answers STATUS (and an error message matching PATTERN)
ready_is() {
	local code
	code=$(curl -s -o "$T/ready.json" -w '%{http_code}' --max-time 5 --cacert "$T/ctl/ca.crt" \
		"$(cat "$T/ctl/api.addr")/readyz") || return 1
	[ "$code" = "$1" ] && { [ -z "${2:-}" ] ||
		jq -e --arg p "$2" '.error.message | test($p)' "$T/ready.json" >/dev/null; }
}
check "/readyz: ready" wait_for 10 ready_is 200

# --- the disk full while serving ------------------------------------------------------------------
gen_plan full 30
deploy --playbook "$T/full.yaml" --no-wait >"$T/full.out" 2>&1 || fail "deploy full"
F=$(last_id "$T/full.out")
check "the rollout runs" wait_for 30 bash -c "[ -s '$T/root-a/var/tmp/runs-full' ]"
dd if=/dev/zero of="$FS/fill" bs=64K >/dev/null 2>&1
sync
check "the disk is full" bash -c "! dd if=/dev/zero of='$FS/more' bs=4K count=16 conv=fsync 2>/dev/null"
# Ready means able to store: reads still work, but what the controller is sent now is not kept.
check "/readyz: 503, the state directory cannot be written (No space left on device)" \
	wait_for 10 ready_is 503 "^not ready: the state directory cannot be written: No space left on device$"
check "results are held: the log says the disk is full" wait_for 30 log_has "$T/controller.log" "database or disk is full"
n0=$(ndeps)
gen_plan other 2
deploy --playbook "$T/other.yaml" --no-wait >"$T/other.out" 2>&1
rc=$?
# The API answers 503 (unavailable) for a store that cannot be written: railyard's exit 5.
check "a deployment asked for meanwhile is refused (exit $rc)" test "$rc" -eq 5
check "  ... saying the disk is full" grep -qi "full" "$T/other.out"
check "  ... and nothing is stored" test "$(ndeps)" = "$n0"
"$RY" enrollment-token create --state-dir "$T/ctl" --cluster it >"$T/token-full.out" 2>&1
rc=$?
check "an enrollment token is refused too (exit $rc), saying why" bash -c "[ $rc -eq 5 ] && grep -qi full '$T/token-full.out'"
check "reads still work: nodes lists both" test "$("$RY" nodes --json --state-dir "$T/ctl" | jq ".items | length")" = 2
"$CTL" backup --state-dir "$T/ctl" --to "$T/full-backup.db" >"$T/backup-full.out" 2>&1
check "an online backup to another disk works on the full one" grep -q "integrity ok" "$T/backup-full.out"
check "the sessions stay up (no heartbeat timeout)" bash -c "! grep -q 'heartbeat timeout' '$T/controller.log'"
held=$(stored "$F")
# Killed while full, then started on the full disk: it says why it cannot serve.
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
check "the database killed on a full disk passes integrity_check" test "$(q 'PRAGMA integrity_check')" = ok
rm -f "$T/ctl/controller.addr"
"$CTL" serve --state-dir "$T/ctl" --listen "127.0.0.1:$PORT" --http 127.0.0.1:0 "${HB[@]}" >"$T/serve-full.log" 2>&1 &
SP=$!
PIDS+=("$SP")
if wait_for 20 exited "$SP"; then
	wait "$SP"
	rc=$?
	check "serve on the full disk exits 1 ($rc)" test "$rc" -eq 1
	check "  ... saying the disk is full" grep -qi "no space left\|disk is full" "$T/serve-full.log"
else
	fail "serve on the full disk neither serves nor exits ($(tail -3 "$T/serve-full.log"))"
	kill -9 "$SP"
fi
rm -f "$FS/fill" "$FS/more"
start_controller "${HB[@]}" --apply-timeout 8s
check "with room again the controller serves, and the rollout finishes" wait_for 120 finished "$F"
check "  ... and is ready" wait_for 10 ready_is 200
check "  ... succeeded with all 60 results (held: $held before the kill)" \
	test "$(dep_field "$F" '.state + " " + ([.nodes[].steps[]] | length | tostring)')" = "succeeded 60"
check "  ... no step ran twice" bash -c "$(declare -f runs_of ran_once); T='$T'; ran_once a full 30 && ran_once b full 30"
check "  ... no report was refused" bash -c "! grep -q refused '$T/a.log' '$T/b.log'"
check "  ... the database is intact" test "$(q 'PRAGMA integrity_check')" = ok
deploy --playbook "$T/other.yaml" --timeout 60s >"$T/other2.out" 2>&1
check "  ... and a new deployment is taken and runs" grep -q "succeeded$" "$T/other2.out"

# --- a benchmark and a plan reported while the disk is full, past their deadlines: held, not lost ---
gen_plan late 40
deploy --playbook "$T/late.yaml" --no-wait >"$T/late.out" 2>&1 || fail "deploy late"
L=$(last_id "$T/late.out")
check "a plan runs (the controller gives it 8 s to report)" wait_for 30 bash -c "[ -s '$T/root-a/var/tmp/runs-late' ] && [ -s '$T/root-b/var/tmp/runs-late' ]"
"$RY" bench run --state-dir "$T/ctl" --from node-a --to node-b --kind bw --duration 4 --timeout 6s \
	--no-wait >"$T/bench.out" 2>&1 || fail "bench run: $(cat "$T/bench.out")"
B=$(grep -o 'b-[0-9a-f]*' "$T/bench.out" | head -1)
bench_is() { [[ "$(q "SELECT state FROM bench_runs WHERE id = '$B'")" =~ ^($1)$ ]]; }
check "a benchmark runs (4 s, its deadline 6 s)" wait_for 30 bench_is client_sent
held_before=$(grep -c "not stored yet" "$T/controller.log")
# SQLite reuses its WAL file's room after a checkpoint: truncate it (complete: "0|0|0"), so that
# the next commit needs new room on the full disk, whatever the WAL held before.
truncated() { [ "$(q 'PRAGMA wal_checkpoint(TRUNCATE)')" = "0|0|0" ]; }
check "the WAL is checkpointed and truncated" wait_for 10 truncated
dd if=/dev/zero of="$FS/fill" bs=64K >/dev/null 2>&1
sync
check "the disk fills while both still run" bash -c "$(declare -f q bench_is); T='$T' B='$B'; bench_is client_sent && [ \$(wc -l <'$T/root-a/var/tmp/runs-late') -lt 40 ]"
check "their results wait while the disk is full" wait_for 30 bash -c "[ \$(grep -c 'not stored yet' '$T/controller.log') -gt $held_before ]"
sleep 11 # full past the run's deadline (6 s) with the grace for its reports (5 s), and the plan's 8 s
rm -f "$FS/fill"
check "with room again the run ends" wait_for 30 bench_is "succeeded|failed|cancelled"
check "  ... succeeded, both sides' measurements stored ($(q "SELECT state || ': ' || coalesce(error, '') FROM bench_runs WHERE id = '$B'"))" \
	test "$(q "SELECT count(*) FROM bench_runs WHERE id = '$B' AND state = 'succeeded' AND result IS NOT NULL AND server_result IS NOT NULL")" = 1
check "the plan's deployment finishes" wait_for 60 finished "$L"
check "  ... succeeded with all 80 results, not failed for want of them" \
	test "$(dep_field "$L" '.state + " " + ([.nodes[].steps[]] | length | tostring) + " " + ([.nodes[].message // empty] | join(";"))')" = "succeeded 80 "

# --- read-only while serving: ext4 aborts and remounts itself read-only ---------------------------
gen_plan ro 20
deploy --playbook "$T/ro.yaml" --no-wait >"$T/ro.out" 2>&1 || fail "deploy ro"
R=$(last_id "$T/ro.out")
check "a rollout runs" wait_for 30 bash -c "[ \$(cat '$T/root-a/var/tmp/runs-ro' 2>/dev/null | wc -l) -ge 3 ]"
before=$(stored "$R")
echo 1 >"$SYSFS/trigger_fs_error"
check "the state directory's filesystem is read-only now" bash -c "! touch '$FS/probe' 2>/dev/null"
check "/readyz: 503, the state directory cannot be written (read-only)" \
	wait_for 10 ready_is 503 "^not ready: the state directory cannot be written: Read-only file system$"
check "results are held: the log says why" wait_for 30 bash -c \
	"grep 'not stored yet' '$T/controller.log' | grep -qi 'readonly\|read-only\|disk I/O\|full'"
n0=$(ndeps)
deploy --playbook "$T/other.yaml" --no-wait >"$T/other-ro.out" 2>&1
rc=$?
check "a deployment asked for meanwhile is refused (exit $rc), saying why: $(cat "$T/other-ro.out")" bash -c \
	"[ $rc -eq 5 ] && grep -q 'storing the deployment: \(Read-only file system\|Input/output error\)' '$T/other-ro.out'"
check "  ... and nothing is stored" test "$(ndeps)" = "$n0"
check "the controller keeps serving its sessions" bash -c "kill -0 $CTL_PID && ! grep -q 'heartbeat timeout' '$T/controller.log'"
kill -TERM "$CTL_PID"
wait "$CTL_PID"
rc=$?
check "SIGTERM stops it (exit $rc)" test "$rc" -le 1
unmount
e2fsck -fy "$IMG" >"$T/fsck.log" 2>&1
rc=$?
dmesg 2>/dev/null | tail -n 40 >"$T/kernel.log" # what ext4 said about the abort, with the logs
check "fsck repairs the filesystem (exit $rc)" test "$rc" -le 1
mount_fs || die "remount"
SYSFS=/sys/fs/ext4/$(basename "$LOOP")
check "the database is intact after the read-only episode" test "$(q 'PRAGMA integrity_check')" = ok
check "  ... with every result acknowledged before it ($before <= $(stored "$R"))" test "$(stored "$R")" -ge "$before"
start_controller "${HB[@]}"
check "restarted on the repaired filesystem, the rollout finishes" wait_for 120 finished "$R"
check "  ... succeeded with all 40 results" \
	test "$(dep_field "$R" '.state + " " + ([.nodes[].steps[]] | length | tostring)')" = "succeeded 40"
check "  ... no step ran twice" bash -c "$(declare -f runs_of ran_once); T='$T'; ran_once a ro 20 && ran_once b ro 20"
check "  ... no report was refused" bash -c "! grep -q refused '$T/a.log' '$T/b.log'"

# --- read-only at start -------------------------------------------------------------------------------
ndep=$(ndeps)
kill -TERM "$CTL_PID"
wait "$CTL_PID"
unmount
mount_fs ro || die "mount ro"
"$CTL" serve --state-dir "$T/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 >"$T/serve-ro.log" 2>&1 &
SP=$!
PIDS+=("$SP")
if wait_for 20 exited "$SP"; then
	wait "$SP"
	rc=$?
	check "serve on a read-only state directory exits 1 ($rc)" test "$rc" -eq 1
	check "  ... saying it is read-only" grep -qi "read-only" "$T/serve-ro.log"
else
	fail "serve on a read-only state directory neither fails nor exits ($(tail -3 "$T/serve-ro.log"))"
	kill -9 "$SP"
fi
# railyard reads through a serving controller, and none serves a read-only state directory:
# unreachable (exit 5), saying so on one line. What is stored is read by the backup below.
"$RY" nodes --json --state-dir "$T/ctl" >"$T/nodes-ro.json" 2>"$T/nodes-ro.err"
rc=$?
check "railyard nodes with no controller serving the read-only directory: exit 5 ($rc)" bash -c \
	"[ $rc -eq 5 ] && [ ! -s '$T/nodes-ro.json' ] && [ \"\$(wc -l <'$T/nodes-ro.err')\" = 1 ]"
"$CTL" backup --state-dir "$T/ctl" --to "$T/ro-backup.db" >"$T/backup-ro.out" 2>&1
check "a backup of the read-only state directory works ($(head -c 120 "$T/backup-ro.out"))" \
	grep -q "2 nodes, $ndep deployments, .*(integrity ok)" "$T/backup-ro.out"
unmount
mount_fs || die "remount rw"
start_controller "${HB[@]}"
check "mounted writable again, it serves both nodes" wait_for 30 count_is online 2

for n in a b; do kill -TERM "${AGENT_PID[$n]}"; done
for n in a b; do wait "${AGENT_PID[$n]}"; done
kill -TERM "$CTL_PID"
wait "$CTL_PID"
check "the controller stops cleanly on SIGTERM" test $? -eq 0
check_sanitizers
finish
