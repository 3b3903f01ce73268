#!/usr/bin/env bash
# Installation: `cmake --install` lays out programs, systemd units, configuration files, man
# pages, playbooks and docs; the units name the install prefix's programs and configuration
# files and pass `systemd-analyze verify`, and say what an operator relies on (exit 3 of a
# revoked agent is not restarted; SIGHUP reloads facts; the controller runs as railyard). The
# Debian packages built from the same rules: tests/package.
. "$(dirname "$0")/lib.sh"

cmake --install "$BUILD" --prefix "$T/inst" >"$T/install.log" 2>&1
check "cmake --install succeeds" test $? -eq 0
for f in bin/railyard-controller bin/railyard-agent bin/railyard lib/systemd/system/railyard-controller.service \
	lib/systemd/system/railyard-agent.service etc/railyard/controller.env etc/railyard/agent.env \
	share/railyard/playbooks/h200-ndr-ib.yaml share/railyard/playbooks/h200-roce.yaml \
	share/railyard/playbooks/revalidate.yaml share/railyard/bootstrap-agent.sh \
	share/doc/railyard-controller/operations.md share/man/man1/railyard-controller.1.gz \
	share/man/man1/railyard.1.gz share/bash-completion/completions/railyard; do
	check "installed: $f" test -s "$T/inst/$f"
done
# bootstrap-agent.sh, up to its argument checks (exit 2 there: nothing is installed): the
# sources it warns about. Its enrollment (the token on a pipe) is checked in tests/package.
BOOT=$T/inst/share/railyard/bootstrap-agent.sh
FPX=sha256:$(printf 'ab%.0s' {1..32})
boot_args() { # boot_args SOURCE: the bootstrap's output for that --apt-source (and a bad --hostname)
	"$BOOT" --controller 127.0.0.1:7443 --token - --ca-fingerprint "$FPX" --apt --apt-source "$1" \
		--hostname -bad </dev/null 2>&1
	echo "exit $?"
}
out=$(boot_args 'deb [trusted=yes] http://deb.example.invalid/railyard bookworm main')
check "bootstrap: a [trusted=yes] source is warned about" grep -q "warning: --apt-source has \[trusted=yes\]: apt will not check" <<<"$out"
check "  an http:// one too" grep -q "warning: --apt-source fetches over http://" <<<"$out"
check "  and the arguments are still checked (exit 2)" grep -qx "exit 2" <<<"$out"
out=$(boot_args 'deb [signed-by=/etc/apt/keyrings/railyard.gpg] https://deb.example.invalid/railyard bookworm main')
check "  a signed https:// source is not" bash -c "! grep -q warning <<<\"\$1\" && grep -qx 'exit 2' <<<\"\$1\"" _ "$out"
check "  its apt log is a mktemp file, not a fixed /tmp path" bash -c "
	grep -q 'mktemp \"\${TMPDIR:-/tmp}/railyard-bootstrap-apt.XXXXXX\"' '$BOOT' && ! grep -q '/tmp/railyard-bootstrap-apt.log' '$BOOT'"
check "  the token goes to enroll on a pipe, never as --token" bash -c "
	grep -q -- '--token-file -' '$BOOT' && ! grep -q -- 'enroll .*--token \"' '$BOOT'"
check "installed controller runs" bash -c "'$T/inst/bin/railyard-controller' version | grep -q '^railyard-controller '"
unit=$T/inst/lib/systemd/system
check "agent unit: exit 3 (revoked) is not restarted" grep -qx "RestartPreventExitStatus=3" "$unit/railyard-agent.service"
check "agent unit: RDMA may pin memory" grep -qx "LimitMEMLOCK=infinity" "$unit/railyard-agent.service"
check "controller unit: reload is SIGHUP" grep -qx 'ExecReload=/bin/kill -HUP $MAINPID' "$unit/railyard-controller.service"
check "controller unit: runs as railyard" grep -qx "User=railyard" "$unit/railyard-controller.service"
for u in controller agent; do
	check "$u unit: starts the install prefix's program" \
		grep -q "^ExecStart=$T/inst/bin/railyard-$u " "$unit/railyard-$u.service"
	check "$u unit: reads the install prefix's configuration file" \
		grep -qx "EnvironmentFile=-$T/inst/etc/railyard/$u.env" "$unit/railyard-$u.service"
done
echo "RAILYARD_AGENT_OPTS=--reconnect-max 5s" >"$T/inst/etc/railyard/agent.env"
cmake --install "$BUILD" --prefix "$T/inst" >"$T/install2.log" 2>&1
check "installing again keeps an edited configuration file" \
	grep -qx "RAILYARD_AGENT_OPTS=--reconnect-max 5s" "$T/inst/etc/railyard/agent.env"

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
