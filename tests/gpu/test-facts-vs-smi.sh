#!/usr/bin/env bash
# CTest facts_vs_smi: the agent's facts with the NVML test double fed the real H200 readings
# (tests/fixtures/nvml/h200-vm.txt) on that machine's sysroot agree field by field with the same
# GPU's nvidia-smi -q -x (tests/fixtures/nvml/h200-vm-smi.xml); and facts-vs-smi.sh catches a
# difference, the /proc-only facts (NVML absent) and bad input.
#   test-facts-vs-smi.sh BUILD_DIR LIBNVML_DOUBLE
. "$(dirname "$0")/../integration/lib.sh"
DOUBLE=${2:?usage: $0 BUILD_DIR LIBNVML_DOUBLE}
CMP=$SRC/tests/gpu/facts-vs-smi.sh
XML=$SRC/tests/fixtures/nvml/h200-vm-smi.xml
ROOT=$FIXTURES/h200-vm

RAILYARD_NVML_LIBRARY=$DOUBLE RAILYARD_NVML_DOUBLE_DATA=$SRC/tests/fixtures/nvml/h200-vm.txt \
	"$AGENT" facts --json --sysroot "$ROOT" >"$T/facts.json" || die "railyard-agent facts"
check "facts from NVML" jqt '.gpus[0].source == "nvml"' "$T/facts.json"
"$CMP" "$T/facts.json" "$XML" >"$T/cmp.out" 2>&1
rc=$?
cat "$T/cmp.out"
check "facts agree with nvidia-smi -q -x (exit $rc)" test "$rc" -eq 0
check "  every field compared, none differs" grep -qx "facts-vs-smi: 21 comparisons, 0 mismatches" "$T/cmp.out"
for field in "name: 'NVIDIA H200'" "serial: '1654024199045'" "memory MiB: 143771" \
	"vbios: '96.00.A5.00.1A'" "cuda driver: '13.0'" "ecc current: True" \
	"remapped rows pending: False" "pcie width max: 16" "persistence: True"; do
	check "  $field" grep -qxF "ok   0000:00:06.0 $field" "$T/cmp.out"
done

# a GPU whose serial differs from what the agent read
sed 's|<serial>1654024199045</serial>|<serial>1654024199046</serial>|' "$XML" >"$T/other.xml"
"$CMP" "$T/facts.json" "$T/other.xml" >"$T/other.out" 2>&1
rc=$?
check "a different serial is a mismatch (exit $rc)" test "$rc" -eq 1
check "  named" grep -qxF "FAIL 0000:00:06.0 serial: facts '1654024199045' != nvidia-smi '1654024199046'" "$T/other.out"
check "  alone" grep -qx "facts-vs-smi: 21 comparisons, 1 mismatches" "$T/other.out"

# without NVML the driver's /proc view lacks most of what nvidia-smi shows
RAILYARD_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 \
	"$AGENT" facts --json --sysroot "$ROOT" >"$T/proc.json" || die "railyard-agent facts (proc)"
"$CMP" "$T/proc.json" "$XML" >"$T/proc.out" 2>&1
rc=$?
check "proc-only facts do not pass for NVML's (exit $rc)" test "$rc" -eq 1
check "  the serial is missing" grep -qxF "FAIL 0000:00:06.0 serial: facts None != nvidia-smi '1654024199045'" "$T/proc.out"
check "  what /proc has agrees (uuid)" grep -qxF "ok   0000:00:06.0 uuid: 'GPU-47077678-012a-d25f-0a23-6b66c4586766'" "$T/proc.out"

# nvidia-smi lists a GPU the facts lack
sed 's|<gpu id="00000000:00:06.0">|<gpu id="00000000:00:07.0">|' "$XML" >"$T/moved.xml"
"$CMP" "$T/facts.json" "$T/moved.xml" >"$T/moved.out" 2>&1
check "a GPU missing from the facts is named" grep -qF "FAIL 0000:00:07.0 present in facts" "$T/moved.out"
check "  and the one missing from nvidia-smi" grep -qF "FAIL 0000:00:06.0 present in nvidia-smi" "$T/moved.out"

echo "not xml" >"$T/bad.xml"
"$CMP" "$T/facts.json" "$T/bad.xml" >"$T/bad.out" 2>&1
rc=$?
check "unreadable input exits 2 ($rc)" test "$rc" -eq 2
"$CMP" "$T/facts.json" >/dev/null 2>&1
rc=$?
check "usage exits 2 ($rc)" test "$rc" -eq 2
finish
