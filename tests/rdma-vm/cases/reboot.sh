# Guest test (mode single --host-net --disk --reboot, driven by reboot-vm.sh on the host): the
# `reboot` step on a real kernel. Runs at every boot of the guest. The agent's state directory
# and what the plan counts live on /dev/vda (ext4, made on the host), the only thing that
# survives the reboot: the initramfs is unpacked afresh at each boot.
# The guests have busybox /init, not systemd: this script plays the agent's unit (it starts
# `railyard-agent run` at each boot), and the agent's reboot_command is /persist/reboot-now
# (sync, then `reboot -f`: the kernel reboots, qemu starts the guest again) in place of
# `systemctl reboot`.
# The guest passes when the plan's journal ends "succeeded" and the host revoked the node
# (the agent exits 3). Environment from the runner: RY_CTL (HOST:PORT), RY_TOKEN, RY_FP.
set -e
[ -n "${RY_CTL:-}" ] && [ -n "${RY_TOKEN:-}" ] && [ -n "${RY_FP:-}" ] ||
	ry_die "RY_CTL, RY_TOKEN and RY_FP must come from reboot-vm.sh"
P=/persist
S=$P/agent
mkdir -p $P
mount -t ext4 /dev/vda $P || ry_die "cannot mount /dev/vda (ext4) on $P"
echo "$(cat /proc/sys/kernel/random/boot_id) $(cut -d' ' -f1 /proc/uptime)" >>$P/boots
sync
boots=$(wc -l <$P/boots)
ry_log "boot $boots: boot id $(cat /proc/sys/kernel/random/boot_id), kernel $(uname -r)"
[ "$boots" -le 2 ] || ry_die "booted $boots times: the plan was to reboot once"

if [ ! -f $S/agent.conf ]; then
	ry_retry 30 timeout 60 railyard-agent enroll --controller "$RY_CTL" --token "$RY_TOKEN" \
		--ca-fingerprint "$RY_FP" --state-dir $S --hostname rb-g0 \
		>/tmp/enroll.log 2>&1 || { cat /tmp/enroll.log; ry_die "enrollment failed"; }
	cat >$P/reboot-now <<'SH'
#!/bin/sh
# This guest's `systemctl reboot`: write the disk back, then reboot the kernel.
echo "$(cut -d' ' -f1 /proc/uptime) $*" >>/persist/reboot-commands
sync
exec reboot -f
SH
	chmod 755 $P/reboot-now
	echo "reboot_command = $P/reboot-now" >>$S/agent.conf
	sync
	ry_log "enrolled as rb-g0"
fi

# What the agent's systemd unit does at boot.
rc=0
timeout $((RY_TIMEOUT - 10)) railyard-agent run --state-dir $S --reconnect-max 1s \
	>>$P/agent.log 2>&1 || rc=$?
# Reached only when the agent ends (revoked by the host at the end), not across the reboot.
sed "s/^/[g0 agent] /" $P/agent.log | grep -v "heartbeat" | tail -40
! grep -q "Sanitizer\|runtime error:" $P/agent.log || ry_die "sanitizer report"
for f in before after; do
	echo "RY-METRIC reboot count_$f $(cat $P/count-$f 2>/dev/null | wc -l)"
done
echo "RY-METRIC reboot boots $boots"
echo "RY-METRIC reboot commands $(wc -l <$P/reboot-commands)"
grep -q '"done":"succeeded"' $S/jobs/*.log || ry_die "the plan's journal does not end succeeded"
[ $rc = 3 ] || ry_die "agent exited $rc, not 3 (revoked by the host at the end)"
ry_log "plan done across the reboot; agent revoked by the host"
