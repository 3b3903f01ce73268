#!/usr/bin/env bash
# Integration: a rolling maintenance handed off to a real Slurm cluster on this host
# (tests/integration/slurm.sh: slurmctld and one slurmd per node, auth/none, as root; skipped with
# the reason where it cannot start). Four agents named like the four Slurm nodes, node4 degraded:
#   - batches of 2 with min_in_service 0.5 and a job running on node2: the maintenance drains
#     the batch, waits for the job (node2 waiting_for_jobs naming its id, draining in Slurm),
#     goes on once it is cancelled, resumes the nodes that passed and leaves node4 drained with
#     its reason; sinfo is recorded at every observed step and never shows more than 2 nodes out;
#   - kill -9 of the controller while a maintenance waits for a job: restarted, it resumes from
#     the stored state; no node is left drained by us without a stored reason, and no node is
#     resumed twice by a maintenance (the ledger's rows).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm.sh"

NODES=(node1 node2 node3 node4)
slurm_start "${NODES[@]}"
SQ=$SLURM_BIN

"$CTL" init --state-dir "$T/ctl" >"$T/init.log" 2>&1 || die "init"
start_controller --heartbeat-interval 300ms
new_token 4
for n in a:h200-ib:node1 b:h200-ib:node2 c:h200-ib-2:node3 d:h200-degraded:node4; do
	IFS=: read -r name fix host <<<"$n"
	enroll "$name" "$FIXTURES/$fix" --hostname "$host" || die "enroll $name"
	start_agent "$name" "$FIXTURES/$fix"
done
check "four agents online" wait_for 30 count_is online 4
mt() { "$RY" --state-dir "$T/ctl" "$@"; }
mt wlm set --cluster it --slurm --slurm-conf "$SLURM_CONF" --slurm-bin-dir "$SQ" >"$T/bind.out" 2>&1 ||
	die "wlm set: $(cat "$T/bind.out")"

cat >"$T/maint.yaml" <<'EOF'
name: maint-test
version: "1"
steps:
  - name: hca ports active
    type: assert
    params:
      that:
        - {fact: "rdma.devices[*].ports[*].state", op: "==", value: ACTIVE, message: every HCA port must be ACTIVE}
validation:
  transport: tcp
  requires: []
  tests:
    - {name: pair-lat, kind: lat, pattern: pairs, size: 8, iters: 200}
  acceptance:
    - {metric: pair-lat.p50_us, relative: median, op: "<=", value: 1000}
EOF

show() { mt maintenance show "$1" --json; }
nstate() { show "$1" | jq -r --arg h "$2" '.nodes[] | select(.hostname == $h) | .state'; }
ended() { case "$(show "$1" | jq -r .state)" in succeeded | failed | cancelled) return 0 ;; esac; return 1; }
# Every observed step: sinfo into the log, and the number of nodes out of service (drained or
# draining) remembered at its largest.
MAX_OUT=0
observe() {
	local s out
	s=$("$SQ/sinfo" -h -N -o '%N %T %E' 2>&1)
	printf '%s --- %s\n%s\n' "$(date +%T.%N)" "${1:-}" "$s" >>"$T/sinfo.log"
	out=$(printf '%s\n' "$s" | awk '$2 ~ /^(drained|draining|drain)/' | wc -l)
	[ "$out" -gt "$MAX_OUT" ] && MAX_OUT=$out
	return 0
}
sstate_is() { [ "$(slurm_node_state "$1")" = "$2" ]; }
all_idle() { local n; for n in "$@"; do sstate_is "$n" idle || return 1; done; }
reason_has() { slurm_node_reason "$1" | grep -q -- "$2"; }

# ---- a job on node2, then the maintenance ----------------------------------------------------
JOB=$("$SQ/sbatch" --parsable -w node2 -o /dev/null --wrap "sleep 600" 2>"$T/sbatch.err") ||
	die "sbatch: $(cat "$T/sbatch.err")"
JOB=${JOB%%;*}
check "job $JOB runs on node2" wait_for 30 bash -c "'$SQ/squeue' -h -j $JOB -o %T | grep -qx RUNNING"
observe "before"
mt deploy --cluster it --playbook "$T/maint.yaml" --maintenance --batch 2 --min-in-service 0.5 \
	--job-timeout 5m --no-wait --json >"$T/m1.json" 2>"$T/m1.err"
M1=$(jq -r .id "$T/m1.json")
[ -n "$M1" ] && [ "$M1" != null ] || die "maintenance: $(cat "$T/m1.err")"
check "node2 waits for job $JOB (named)" wait_for 60 bash -c "
	'$RY' --state-dir '$T/ctl' maintenance show $M1 --json |
	jq -e --arg j '$JOB' '.nodes[] | select(.hostname == \"node2\") | .state == \"waiting_for_jobs\" and .jobs == [\$j]' >/dev/null"
observe "node2 waiting for job $JOB"
check "  ... node2 is draining in Slurm (the job still runs)" wait_for 20 sstate_is node2 draining
check "  ... node1 drained with our reason" wait_for 20 reason_has node1 "^railyard: maintenance $M1: batch 0"
check "  ... batch 1 not drained yet" all_idle node3 node4
"$SQ/scancel" "$JOB"
# Watch it to the end, sinfo at every look.
while ! ended "$M1"; do
	observe "$(show "$M1" | jq -c '[.state, .current_batch, [.nodes[] | .hostname + ":" + .state]]')"
	[ "$SECONDS" -gt 400 ] && break
	sleep 0.3
done
observe "end"
show "$M1" >"$T/m1.end.json"
check "the maintenance ends failed: node4 held out (batch 1)" jqt '.state == "failed"' "$T/m1.end.json"
check "sinfo never showed more than 2 nodes out of service (max $MAX_OUT)" test "$MAX_OUT" -le 2
check "  ... and did show 2 (a batch was drained at once)" test "$MAX_OUT" -ge 2
# The resumes are carried out by the WLM worker after they are stored: waited for.
check "node1, node2, node3 resumed: idle in Slurm" wait_for 30 all_idle node1 node2 node3
check "node4 drained" sstate_is node4 drained
check "  ... with its finding as the reason" reason_has node4 "^railyard: maintenance $M1: deployment d-[0-9a-f]* step 1: every HCA port"

# ---- kill -9 mid-maintenance ---------------------------------------------------------------------
# node4 stays out (held out above); the others again, a job on node1 holds batch 0.
JOB2=$("$SQ/sbatch" --parsable -w node1 -o /dev/null --wrap "sleep 600" 2>>"$T/sbatch.err")
JOB2=${JOB2%%;*}
check "job $JOB2 runs on node1" wait_for 30 bash -c "'$SQ/squeue' -h -j $JOB2 -o %T | grep -qx RUNNING"
mt deploy --cluster it --playbook "$T/maint.yaml" --maintenance --nodes '!node4' --batch 2 \
	--min-in-service 0 --job-timeout 5m --no-wait --json >"$T/m2.json" 2>"$T/m2.err"
M2=$(jq -r .id "$T/m2.json")
check "M2: node1 waits for job $JOB2" wait_for 60 bash -c "[ \"\$('$RY' --state-dir '$T/ctl' maintenance show $M2 --json | jq -r '.nodes[] | select(.hostname == \"node1\") | .state')\" = waiting_for_jobs ]"
observe "M2 waiting"
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
check "controller killed" exited "$CTL_PID"
start_controller --heartbeat-interval 300ms
check "restarted: M2 still waits for job $JOB2 (resumed from the stored state)" wait_for 30 bash -c "
	'$RY' --state-dir '$T/ctl' maintenance show $M2 --json | jq -e '.state == \"running\" and (.nodes[] | select(.hostname == \"node1\") | .state == \"waiting_for_jobs\")' >/dev/null"
"$SQ/scancel" "$JOB2"
# Again, as soon as batch 0 has gone past draining (its deployment or campaign just made, or
# being made): wherever the kill lands, what was stored decides what is made next.
check "M2 goes on past draining" wait_for 60 bash -c "
	'$RY' --state-dir '$T/ctl' maintenance show $M2 --json | jq -e '.batches[0].state != \"draining\"' >/dev/null"
kill -9 "$CTL_PID"
wait "$CTL_PID" 2>/dev/null
start_controller --heartbeat-interval 300ms
check "M2 ends succeeded after the restart" wait_for 300 bash -c "[ \"\$('$RY' --state-dir '$T/ctl' maintenance show $M2 --json | jq -r .state)\" = succeeded ]"
observe "M2 end"
M2_AT=$(jq -r .created_at_ms "$T/m2.json")
"$RY" deployments --json --state-dir "$T/ctl" >"$T/deps.json"
"$RY" campaigns --json --state-dir "$T/ctl" >"$T/camps.json"
show "$M2" >"$T/m2.end.json"
check "M2 made one deployment and one campaign per batch, the ones it stored (none twice)" bash -c "
	jq -e --argjson at $M2_AT --slurpfile m '$T/m2.end.json' '[.items[] | select(.created_at_ms >= \$at) | .id] | sort ==
		([\$m[0].batches[].deployment] | sort)' '$T/deps.json' >/dev/null &&
	jq -e --argjson at $M2_AT --slurpfile m '$T/m2.end.json' '[.items[] | select(.created_at_ms >= \$at) | .id] | sort ==
		([\$m[0].batches[].campaign] | sort)' '$T/camps.json' >/dev/null"
check "node1..node3 idle again" wait_for 30 all_idle node1 node2 node3
mt wlm actions --cluster it --json >"$T/actions.json" 2>&1
check "the ledger: each node drained once and resumed once by M2, all carried out" jqt --arg m "$M2" '
	[.items[] | select(.source == "maintenance" and .source_id == $m)] as $a |
	([$a[] | select(.action == "resume") | .hostname] | sort) == ["node1", "node2", "node3"] and
	([$a[] | select(.action == "drain") | .hostname] | sort) == ["node1", "node2", "node3"] and
	all($a[]; .state == "done")' "$T/actions.json"
check "no node is drained by us without a stored reason: every railyard drain is a held-out node" bash -c "
	'$SQ/sinfo' -h -N -o '%N|%E' | while IFS='|' read -r n r; do
		case \"\$r\" in railyard:*) ;; *) continue ;; esac
		'$RY' --state-dir '$T/ctl' maintenance show $M1 --json |
			jq -e --arg n \"\$n\" '.nodes[] | select(.hostname == \$n) | .state == \"held_out\" and (.reason | startswith(\"railyard:\"))' >/dev/null || exit 1
	done"

# ---- a job that outlasts --job-timeout: its node is held out, the others go on -------------------
# A playbook without validation: its configured nodes are resumed at once.
sed '/^validation:/,$d' "$T/maint.yaml" >"$T/noval.yaml"
JOB3=$("$SQ/sbatch" --parsable -w node3 -o /dev/null --wrap "sleep 600" 2>>"$T/sbatch.err")
JOB3=${JOB3%%;*}
check "job $JOB3 runs on node3" wait_for 30 bash -c "'$SQ/squeue' -h -j $JOB3 -o %T | grep -qx RUNNING"
mt deploy --cluster it --playbook "$T/noval.yaml" --maintenance --nodes 'node2,node3' --batch 2 \
	--min-in-service 0 --job-timeout 2s >"$T/m3.out" 2>&1
M3=$(awk '/^maintenance mt-/ {sub(":", "", $2); print $2; exit}' "$T/m3.out")
show "$M3" >"$T/m3.json"
check "job timeout: node3 held out naming job $JOB3, node2 configured and resumed" jqt --arg j "$JOB3" '
	(.nodes[] | select(.hostname == "node3") | .state == "held_out" and
		(.reason | test("job\\(s\\) " + $j + " still running after 2s"))) and
	(.nodes[] | select(.hostname == "node2") | .state == "resumed") and .state == "failed"' "$T/m3.json"
check "  ... node3 stays drained (its job still runs), with that reason" wait_for 20 reason_has node3 "^railyard: maintenance $M3: job(s) $JOB3 still running"
check "  ... node2 idle" wait_for 20 sstate_is node2 idle
"$SQ/scancel" "$JOB3"

check_sanitizers
finish
