"""Which parts of a running process's executable are resident: /proc/PID/pagemap's present bit for each
page of the executable's mappings, summed per ELF section (readelf -S), and the pages of .text shared out
among Swift modules by the symbols on them (nm). Used by smaps.py --sections.

Why per section: fault-around maps file pages 64 KiB around each page fault, so a section is resident
wherever code near it ran, and the Swift module rows show whose code lies in the resident windows (the
Swift standard library's generic code, specialised into each module, counts as the stdlib's when it is not
specialised). "(anon)" marks pages written since mapping (relocations, data): copies, not the file's pages.

    sudo python3 Benchmarks/e2e/binpages.py PID EXE
"""
from __future__ import annotations

import bisect
import collections
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

def sections(exe: str) -> list[tuple[int, int, str, int]]:
    """(file offset, size, name, address) of each section with bytes in the file."""
    out = []
    for line in subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True).stdout.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m.group(2) != "NOBITS" and int(m.group(3), 16):
            out.append((int(m.group(4), 16), int(m.group(5), 16), m.group(1), int(m.group(3), 16)))
    return sorted(out)

def module(sym: str) -> str:
    """The Swift module a mangled symbol belongs to, or what else it is."""
    if sym.startswith("$s"):
        m = re.match(r"\$ss", sym)
        if m: return "swift stdlib"
        m = re.match(r"\$s(\d+)([A-Za-z_]\w*)", sym)
        if m: return m.group(2)[:int(m.group(1))]
        return "swift other"
    if sym.startswith("swift_") or sym.startswith("_swift") or "swift" in sym.lower(): return "swift runtime"
    if sym.startswith("_Z"): return "c++ (runtime/libstdc++)"
    return "c"

def resident(pid: int, exe: str) -> list[tuple[int, str, bool]]:
    """(file offset, permissions, written) of each resident page of the executable's mappings."""
    maps = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        f = line.split()
        if len(f) > 5 and os.path.realpath(f[5]) == os.path.realpath(exe):
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            maps.append((lo, hi, int(f[2], 16), f[1]))
    pages = []  # (file offset, perms)
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        for lo, hi, off, perms in maps:
            pm.seek(lo // 4096 * 8)
            data = pm.read((hi - lo) // 4096 * 8)
            for i in range((hi - lo) // 4096):
                e, = struct.unpack_from("<Q", data, i * 8)
                if e >> 63:
                    pages.append((off + i * 4096, perms, not e >> 61 & 1))  # bit 61: a file page
    return pages

def breakdown(pid: int, exe: str) -> tuple[collections.Counter, list]:
    """KiB per section, and the resident pieces of .text for text_modules."""
    secs = sections(exe)
    starts = [s[0] for s in secs]
    by_sec = collections.Counter()
    text_pages = []
    for off, perms, anon in resident(pid, exe):
        # A page may span sections: each gets its bytes.
        for j in range(max(0, bisect.bisect_right(starts, off) - 1), len(secs)):
            s_off, size, name, addr = secs[j]
            if s_off >= off + 4096: break
            lo, hi = max(off, s_off), min(off + 4096, s_off + size)
            if hi > lo:
                by_sec[name + (" (anon)" if anon else "")] += (hi - lo) / 1024
                if name == ".text": text_pages.append((off, lo, hi, addr - s_off))
    return by_sec, text_pages

def text_modules(exe: str, text_pages: list) -> collections.Counter:
    """KiB of resident .text per Swift module (or runtime, C, C++), by the symbols' bytes on it."""
    syms = []
    for line in subprocess.run(["nm", "-n", "-S", "--defined-only", exe], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":  # code symbols with a size
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    syms.sort()
    addrs = [s[0] for s in syms]
    mods = collections.Counter()
    for off, lo, hi, delta in text_pages:
        a, b = lo + delta, hi + delta
        i = max(0, bisect.bisect_right(addrs, a) - 1)
        covered = 0
        while i < len(syms) and syms[i][0] < b:
            s, size, name = syms[i]
            x, y = max(a, s), min(b, s + size)
            if y > x:
                mods[module(name)] += (y - x) / 1024; covered += y - x
            i += 1
        mods["(padding/unknown)"] += (b - a - covered) / 1024
    return mods

def report(pid: int, exe: str, rows: int = 30) -> str:
    by_sec, text = breakdown(pid, exe)
    lines = [f"resident KiB of {exe} (pid {pid}), per section:"]
    lines += [f"{v:8.0f}  {k}" for k, v in by_sec.most_common() if v >= 1]
    lines.append(".text per module:")
    lines += [f"{v:8.0f}  {k}" for k, v in text_modules(exe, text).most_common(rows) if v >= 1]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(int(sys.argv[1]), sys.argv[2]))
