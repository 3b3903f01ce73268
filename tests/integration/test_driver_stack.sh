#!/usr/bin/env bash
# Integration: the shipped playbooks' driver-stack steps with `railyard-agent apply` on fixture
# nodes (no controller): vendor repositories with their keys fetched and pinned, packages pinned
# and held, the RoCE MTU set and persisted, DSCP -> priority applied. Check mode changes nothing
# on disk; the first run changes, the second changes nothing and fetches nothing; the vendors'
# real pins refuse the stand-in keys without writing; a failed apt-get update rolls its repo
# step back; a node with the proprietary GPU modules takes nvidia-peermem instead of dma-buf.
. "$(dirname "$0")/lib.sh"

FIX=$SRC/tests/fixtures
"$FIX/vendor-keys.sh" "$T/keys" || die "stand-in vendor keys (gpg installed?)"
CUDA_FPR=$(cat "$T/keys/cuda.fpr")
for pb in h200-ndr-ib h200-roce; do
	"$FIX/pin-test-keys.sh" "$T/keys" "$SRC/playbooks/$pb.yaml" "$T/$pb.yaml" || die "pin $pb"
done
tree_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }
# apply ROOT PLAYBOOK [--check]: the JSON summary in $T/out.json
apply() { "$AGENT" apply --json --sysroot "$1" --playbook "$2" ${3:-} >"$T/out.json"; }
step() { jq -r --arg n "$1" ".summary.steps[] | select(.name == \$n) | .$2" "$T/out.json"; }
calls() { grep -c -- "$2" "$1/var/log/railyard-doubles.log" || true; }

# --- the RoCE node, one port at MTU 1500 ------------------------------------------------------
R=$T/roce
"$FIX/prepare-sysroot.sh" "$FIX/sysroots/h200-roce" "$R" "$T/keys" || die "prepare roce"
echo 1500 >"$R/sys/class/net/enp22s0np0/mtu"
before=$(tree_hash "$R")
apply "$R" "$T/h200-roce.yaml" --check
check "check mode: every step ran, none failed" jqt '.summary.failed == 0 and .summary.changed > 0' "$T/out.json"
check "check mode changed nothing on disk" test "$before" = "$(tree_hash "$R")"
check "  ... the diff adds the CUDA source" bash -c "jq -r '.summary.steps[] | select(.name == \"cuda repository\") | .diff' '$T/out.json' | grep -q '^+++ /etc/apt/sources.list.d/cuda-debian12.sources'"
check "  ... and its key, by fingerprint" bash -c "jq -r '.summary.steps[] | select(.name == \"cuda repository\") | .diff' '$T/out.json' | grep -q '^key /usr/share/keyrings/cuda-archive-keyring.gpg: (absent) -> fingerprint $CUDA_FPR'"
check "  ... the pinned driver" test "$(step "nvidia driver" diff)" = "package nvidia-driver: (not installed) -> 550.127.05-1
package nvidia-driver hold: not held -> held"
check "  ... the MTU" bash -c "jq -r '.summary.steps[] | select(.name == \"roce mtu\") | .diff' '$T/out.json' | grep -qx 'enp22s0np0 mtu: 1500 -> 9000'"
check "  ... the DSCP mapping" bash -c "jq -r '.summary.steps[] | select(.name == \"roce qos\") | .diff' '$T/out.json' | grep -q 'enp22s0np0 dscp2prio 26: (not shown in trust pcp) -> 3'"

apply "$R" "$T/h200-roce.yaml"
check "first run: nothing failed" jqt '.summary.failed == 0 and .summary.changed > 10' "$T/out.json"
check "  ... both sources written" test -s "$R/etc/apt/sources.list.d/cuda-debian12.sources" -a -s "$R/etc/apt/sources.list.d/doca.sources"
check "  ... apt-get update once per repository" test "$(calls "$R" "apt-get update")" = 2
check "  ... driver and fabric manager pinned and held" bash -c "grep -A4 -x 'Package: nvidia-fabricmanager-550' '$R/var/lib/dpkg/status' | grep -q 'Status: hold ok installed' && grep -A4 -x 'Package: nvidia-fabricmanager-550' '$R/var/lib/dpkg/status' | grep -qx 'Version: 550.127.05-1'"
check "  ... the MTU set with ip link" test "$(cat "$R/sys/class/net/enp22s0np0/mtu")" = 9000
check "  ... and persisted" grep -qx "MTUBytes=9000" "$R/etc/systemd/network/60-railyard-enp22s0np0.link"
check "  ... every port in dscp trust, DSCP 26 on priority 3 (already the default: not set)" test "$(grep -l '^cur_trust=dscp' "$R"/var/lib/railyard-test/mlnx_qos/* | wc -l)/$(calls "$R" "--dscp2prio")" = 8/0
check "  ... dma-buf chosen (open modules, kernel 6.1, driver 550)" test "$(step "nvidia-peermem" status)/$(step "nccl dma-buf" status)" = skipped/changed
after=$(tree_hash "$R")
n_curl=$(calls "$R" "^curl")
apply "$R" "$T/h200-roce.yaml"
check "second run: nothing left to change" jqt '.summary.changed == 0 and .summary.failed == 0' "$T/out.json"
check "  ... nothing written, fetched or updated" test "$after/$n_curl/$(calls "$R" "apt-get update")" = "$(tree_hash "$R")/$(calls "$R" "^curl")/2"

# --- the vendors' own pins refuse the stand-in keys, writing nothing ----------------------------
I=$T/ib
"$FIX/prepare-sysroot.sh" "$FIX/sysroots/h200-ib" "$I" "$T/keys" || die "prepare ib"
apply "$I" "$SRC/playbooks/h200-ndr-ib.yaml"
check "shipped pins: the CUDA repository step fails" test "$(step "cuda repository" status)" = failed
check "  ... naming both fingerprints" bash -c "jq -r '.summary.steps[] | select(.name == \"cuda repository\") | .message' '$T/out.json' | grep -q 'has fingerprint $CUDA_FPR, not the EB693B3035CD5710E231E123A4B469963BF863CC pinned: nothing written'"
check "  ... no key, no source" test ! -e "$I/usr/share/keyrings/cuda-archive-keyring.gpg" -a ! -e "$I/etc/apt/sources.list.d/cuda-debian12.sources"
check "  ... and nothing after it ran" test "$(step "nvidia driver" status)" = skipped

# --- a repository that does not answer: its step is rolled back ----------------------------------
echo https://linux.mellanox.com/public/repo/doca/2.9.1/debian12.5/x86_64/ >"$I/etc/railyard-test/apt-update-fail"
apply "$I" "$T/h200-ndr-ib.yaml"
check "failed update: the doca step failed, rolled back" test "$(step "doca repository" status)/$(step "doca repository" rolled_back)" = failed/true
check "  ... its source and key are gone" test ! -e "$I/etc/apt/sources.list.d/doca.sources" -a ! -e "$I/usr/share/keyrings/mellanox.gpg"
check "  ... the CUDA repository before it stays" test -s "$I/etc/apt/sources.list.d/cuda-debian12.sources"

# --- proprietary GPU modules: nvidia-peermem ------------------------------------------------------
P=$T/prop
"$FIX/prepare-sysroot.sh" "$FIX/sysroots/h200-ib-2" "$P" "$T/keys" || die "prepare prop"
sed -i 's/Open Kernel Module/Kernel Module/' "$P/proc/driver/nvidia/version"
check "facts: gpudirect.method peermem with the proprietary modules" bash -c "'$AGENT' facts --json --sysroot '$P' | jq -e '.gpudirect.method == \"peermem\" and (.gpudirect.reason | test(\"proprietary\"))' >/dev/null"
apply "$P" "$T/h200-ndr-ib.yaml"
check "  ... nvidia-peermem step run, dma-buf step skipped" test "$(step "nvidia-peermem" status)/$(step "nccl dma-buf" status)/$(step "gpudirect rdma loaded" status)" = changed/skipped/ok
finish
