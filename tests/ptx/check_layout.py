#!/usr/bin/env python3
"""ctest ptx.layout: the device layout of fusor's kernel objects (read from
layout.ptx) must equal the host layout (printed by layout_host).

    check_layout.py LAYOUT_PTX LAYOUT_HOST_EXECUTABLE

layout.cu's probe kernels store sizeof(K) and member offsets as constants
(`mov.u64 %rdN, C` then `st.global.u64 [%rdB+8*i], %rdN`, or the constant
stored directly); this script rebuilds o[] per probe from those stores and
compares it with the host's line "probe <Id>: <values>". Exit 0 when every
probe agrees, 1 otherwise (with both lists printed)."""
import re
import subprocess
import sys


def device_layouts(ptx_text):
    out = {}
    for m in re.finditer(r"\.entry\s+(\S*layout_probe_kernelILi(\d+)E\S*)\((.*?)\n\}", ptx_text, re.S):
        probe, body = int(m.group(2)), m.group(3)
        regs, stores = {}, {}
        for line in body.splitlines():
            line = line.strip()
            mv = re.match(r"mov\.[ub]64\s+(%rd\d+),\s*(-?\d+);", line)
            if mv:
                regs[mv.group(1)] = int(mv.group(2))
                continue
            st = re.match(r"st\.global\.[ub]64\s+\[%rd\d+(?:\+(\d+))?\],\s*(%rd\d+|-?\d+);", line)
            if st:
                off = int(st.group(1) or 0)
                val = st.group(2)
                if val.startswith("%"):
                    if val not in regs:
                        raise SystemExit(f"check_layout: probe {probe}: store of {val}, not a folded constant: {line}")
                    val = regs[val]
                stores[off // 8] = int(val)
        if sorted(stores) != list(range(len(stores))):
            raise SystemExit(f"check_layout: probe {probe}: stores are not o[0..n): {sorted(stores)}")
        out[probe] = [stores[i] for i in range(len(stores))]
    return out


def host_layouts(exe):
    text = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    out = {}
    for line in text.splitlines():
        m = re.match(r"probe (\d+): (.*)$", line)
        if m:
            out[int(m.group(1))] = [int(v) for v in m.group(2).split()]
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    device = device_layouts(open(sys.argv[1]).read())
    host = host_layouts(sys.argv[2])
    if not host or sorted(device) != sorted(host):
        print(f"check_layout: probes differ: device {sorted(device)}, host {sorted(host)}")
        return 1
    bad = 0
    for probe in sorted(host):
        same = device[probe] == host[probe]
        print(f"probe {probe}: {'same' if same else 'DIFFERENT'}: sizeof {host[probe][0]}, "
              f"{len(host[probe]) - 1} member offsets")
        if not same:
            bad += 1
            print(f"  host   {host[probe]}\n  device {device[probe]}")
    print(f"check_layout: {len(host) - bad} of {len(host)} kernel layouts agree between host and device")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
