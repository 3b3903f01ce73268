#!/usr/bin/env bash
# Compare the GPU facts of `railyard-agent facts --json` with `nvidia-smi -q -x` of the same
# machine, GPU by GPU and field by field (name, UUID, serial, PCI bus id, memory, driver and CUDA
# driver version, VBIOS, ECC mode and uncorrectable counts, remapped rows, PCIe generation and
# width, persistence mode), printing each comparison. nvidia-smi's "N/A" must be an absent fact.
# Exit 0 when all agree, 1 on a mismatch, 2 on usage or unreadable input. Needs python3 only
# (stdlib), so it runs on a GPU machine where nothing can be installed.
#   facts-vs-smi.sh FACTS_JSON NVIDIA_SMI_XML
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 FACTS_JSON NVIDIA_SMI_XML" >&2
	exit 2
fi
exec python3 - "$1" "$2" <<'PY'
import json
import re
import sys
import xml.etree.ElementTree as ET

facts_path, xml_path = sys.argv[1], sys.argv[2]
try:
    with open(facts_path) as f:
        facts = json.load(f)
    smi = ET.parse(xml_path).getroot()
except (OSError, ValueError, ET.ParseError) as e:
    print("facts-vs-smi: %s" % e, file=sys.stderr)
    sys.exit(2)

NA = object()  # nvidia-smi's "N/A": the fact must be absent
results = {"ok": 0, "fail": 0}


def text(node, path):
    """The text at path below node; NA for N/A or a missing element."""
    e = node.find(path)
    if e is None or e.text is None:
        return NA
    t = e.text.strip()
    return NA if t in ("N/A", "") else t


def bus_id(s):
    """00000000:17:00.0 -> 0000:17:00.0, lower case."""
    m = re.fullmatch(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])", s)
    if not m:
        return s
    return "%04x:%s:%s.%s" % (int(m.group(1), 16), m.group(2).lower(), m.group(3).lower(),
                              m.group(4))


def get(obj, path):
    for k in path.split("."):
        if not isinstance(obj, dict) or k not in obj:
            return None
        obj = obj[k]
    return obj


def compare(gpu, what, fact, want):
    """want: the value nvidia-smi implies (NA: absent); fact: the facts' value (None: absent)."""
    if want is NA:
        ok = fact is None
        shown = "absent" if ok else repr(fact)
        detail = "%s (nvidia-smi N/A)" % shown
    else:
        ok = fact == want
        detail = "%r" % (want,) if ok else "facts %r != nvidia-smi %r" % (fact, want)
    results["ok" if ok else "fail"] += 1
    print("%-4s %s %s: %s" % ("ok" if ok else "FAIL", gpu, what, detail))


def enabled(s):
    return NA if s is NA else s == "Enabled"


def yes(s):
    return NA if s is NA else s == "Yes"


def number(s, suffix=""):
    if s is NA:
        return NA
    s = s[: -len(suffix)].strip() if suffix and s.endswith(suffix) else s
    try:
        return int(s)
    except ValueError:
        return "unparsable %r" % s


def uncorrected(gpu_xml, kind):
    """Uncorrectable ECC errors of one counter kind: the DRAM and SRAM uncorrectable counts
    (driver R560+ schema), else the older double-bit total."""
    base = gpu_xml.find("ecc_errors/" + kind)
    if base is None:
        return NA
    parts = [text(base, p) for p in ("dram_uncorrectable", "sram_uncorrectable_parity",
                                     "sram_uncorrectable_secded", "sram_uncorrectable")]
    parts = [p for p in parts if p is not NA]
    if not parts:
        total = text(base, "double_bit/total")
        return number(total)
    vals = [number(p) for p in parts]
    return sum(vals) if all(isinstance(v, int) for v in vals) else "unparsable %r" % parts


gpus = {g.get("bus"): g for g in facts.get("gpus", []) if isinstance(g, dict)}
seen = set()
for g in smi.findall("gpu"):
    bus = bus_id(g.get("id", ""))
    seen.add(bus)
    fg = gpus.get(bus)
    if fg is None:
        compare(bus, "present in facts", None, True)
        continue
    compare(bus, "bus id", bus_id(fg.get("bus", "")), bus_id(text(g, "pci/pci_bus_id")))
    compare(bus, "name", fg.get("name", fg.get("model")), text(g, "product_name"))
    compare(bus, "uuid", fg.get("uuid"), text(g, "uuid"))
    compare(bus, "serial", fg.get("serial"), text(g, "serial"))
    mib = number(text(g, "fb_memory_usage/total"), "MiB")
    mem = fg.get("memory_total_bytes")
    compare(bus, "memory MiB", mem // (1024 * 1024) if isinstance(mem, int) else None, mib)
    compare(bus, "driver", fg.get("driver_version", get(facts, "nvidia_driver.version")),
            text(smi, "driver_version"))
    compare(bus, "cuda driver", fg.get("cuda_driver_version"), text(smi, "cuda_version"))
    vbios = fg.get("vbios")
    if vbios is None and isinstance(fg.get("video_bios"), str):
        vbios = fg["video_bios"].upper()  # /proc writes it in lower case
    compare(bus, "vbios", vbios, text(g, "vbios_version"))
    compare(bus, "ecc current", get(fg, "ecc.enabled"), enabled(text(g, "ecc_mode/current_ecc")))
    compare(bus, "ecc pending", get(fg, "ecc.pending_enabled"),
            enabled(text(g, "ecc_mode/pending_ecc")))
    compare(bus, "ecc volatile uncorrectable", get(fg, "ecc.volatile_uncorrected"),
            uncorrected(g, "volatile"))
    compare(bus, "ecc aggregate uncorrectable", get(fg, "ecc.aggregate_uncorrected"),
            uncorrected(g, "aggregate"))
    rr = "remapped_rows/"
    compare(bus, "remapped rows correctable", get(fg, "remapped_rows.correctable"),
            number(text(g, rr + "remapped_row_corr")))
    compare(bus, "remapped rows uncorrectable", get(fg, "remapped_rows.uncorrectable"),
            number(text(g, rr + "remapped_row_unc")))
    compare(bus, "remapped rows pending", get(fg, "remapped_rows.pending"),
            yes(text(g, rr + "remapped_row_pending")))
    compare(bus, "remapped rows failure", get(fg, "remapped_rows.failure"),
            yes(text(g, rr + "remapped_row_failure")))
    link = "pci/pci_gpu_link_info/"
    compare(bus, "pcie gen", get(fg, "pcie.gen"), number(text(g, link + "pcie_gen/current_link_gen")))
    compare(bus, "pcie gen max", get(fg, "pcie.gen_max"),
            number(text(g, link + "pcie_gen/max_link_gen")))
    compare(bus, "pcie width", get(fg, "pcie.width"),
            number(text(g, link + "link_widths/current_link_width"), "x"))
    compare(bus, "pcie width max", get(fg, "pcie.width_max"),
            number(text(g, link + "link_widths/max_link_width"), "x"))
    compare(bus, "persistence", fg.get("persistence_mode"), enabled(text(g, "persistence_mode")))
# nvidia-smi does not list GPUs the driver excluded
for bus, fg in gpus.items():
    if bus not in seen and fg.get("excluded") is not True:
        compare(bus, "present in nvidia-smi", None, True)
print("facts-vs-smi: %d comparisons, %d mismatches" % (results["ok"] + results["fail"],
                                                        results["fail"]))
sys.exit(1 if results["fail"] else 0)
PY
