#!/usr/bin/env bash
# The controller at its open-file limit: gRPC 1.51 stops listening for good when accept4()
# fails (EMFILE); the controller must notice, listen again once descriptors are free, and keep
# the sessions it has. A controller with `ulimit -n 128` is flooded with plain TCP connections
# until gRPC logs "Failed accept4"; once they close, a new agent must still enroll and come
# online. Also: the start-up check against --expected-agents, and LimitNOFILE in the unit.
. "$(dirname "$0")/lib.sh"

"$CTL" init --state-dir "$T/ctl" >/dev/null || die "init"
(
	ulimit -n 128 || exit 1
	exec "$CTL" serve --state-dir "$T/ctl" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
		--expected-agents 1000 >>"$T/controller.log" 2>&1
) &
CTL_PID=$!
PIDS+=("$CTL_PID")
wait_for 20 test -s "$T/ctl/controller.addr" || die "controller did not start"
ADDR=$(cat "$T/ctl/controller.addr")
PORT=${ADDR##*:}
check "start-up warns that the limit is short of --expected-agents" \
	wait_for 10 log_has "$T/controller.log" "open-file limit 128 is short of the .* descriptors 1000 agents need"

new_token 2
enroll a "$FIXTURES/h200-ib" --hostname fd-a || die "enroll a"
start_agent a "$FIXTURES/h200-ib"
check "agent a online before the flood" wait_for 30 node_state_is fd-a online

# Hold more connections than the controller has descriptors: the kernel completes them into
# the listen backlog, gRPC accepts until accept4() fails.
flood=()
for ((i = 0; i < 200; i++)); do
	exec {fd}<>"/dev/tcp/127.0.0.1/$PORT" || break
	flood+=("$fd")
done
check "the flood reached the limit (gRPC logged Failed accept4)" \
	wait_for 30 log_has "$T/controller.log" "Failed accept4"
check "the controller is still running at its limit" kill -0 "$CTL_PID"
check "agent a's session survives the flood" node_state_is fd-a online
for fd in "${flood[@]}"; do exec {fd}>&-; done

check "the controller listens again once descriptors are free" \
	wait_for 30 log_has "$T/controller.log" "listening again on port $PORT"
check "a new agent enrolls after the flood" enroll b "$FIXTURES/h200-roce" --hostname fd-b
start_agent b "$FIXTURES/h200-roce"
check "the new agent comes online" wait_for 30 node_state_is fd-b online
check "agent a still online" node_state_is fd-a online

unit=$SRC/deploy/systemd/railyard-controller.service.in
check "the controller's unit raises LimitNOFILE" grep -q '^LimitNOFILE=1048576$' "$unit"
check_sanitizers
finish
