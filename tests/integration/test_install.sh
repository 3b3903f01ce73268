#!/usr/bin/env bash
# Installation: `cmake --install` lays out programs, systemd units, playbooks and docs; the units
# pass `systemd-analyze verify` (with ExecStart pointed at this build's programs) and say what
# an operator relies on (exit 3 of a revoked agent is not restarted; SIGHUP reloads facts).
. "$(dirname "$0")/lib.sh"

cmake --install "$BUILD" --prefix "$T/inst" >"$T/install.log" 2>&1
check "cmake --install succeeds" test $? -eq 0
for f in bin/railyard-controller bin/railyard-agent lib/systemd/system/railyard-controller.service \
	lib/systemd/system/railyard-agent.service share/railyard/playbooks/h200-ndr-ib.yaml \
	share/railyard/playbooks/h200-roce.yaml share/railyard/playbooks/revalidate.yaml \
	share/doc/railyard/operations.md; do
	check "installed: $f" test -s "$T/inst/$f"
done
check "installed controller runs" bash -c "'$T/inst/bin/railyard-controller' version | grep -q '^railyard-controller '"
unit=$T/inst/lib/systemd/system
check "agent unit: exit 3 (revoked) is not restarted" grep -qx "RestartPreventExitStatus=3" "$unit/railyard-agent.service"
check "agent unit: RDMA may pin memory" grep -qx "LimitMEMLOCK=infinity" "$unit/railyard-agent.service"
check "controller unit: reload is SIGHUP" grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit/railyard-controller.service"
check "units start the configured prefix's programs" grep -q "^ExecStart=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")/bin/railyard-agent run " "$unit/railyard-agent.service"

if command -v systemd-analyze >/dev/null 2>&1; then
	mkdir -p "$T/units"
	for u in railyard-controller railyard-agent; do
		sed "s|^ExecStart=[^ ]*/$u |ExecStart=$T/inst/bin/$u |" "$unit/$u.service" >"$T/units/$u.service"
		systemd-analyze verify --man=no "$T/units/$u.service" >"$T/verify-$u.log" 2>&1
		check "systemd-analyze verify $u.service" test $? -eq 0
		check "  ... without warnings" test ! -s "$T/verify-$u.log"
		cat "$T/verify-$u.log"
	done
else
	echo "SKIP-PART: systemd-analyze not installed: units checked by content only"
fi
finish
