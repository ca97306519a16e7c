#!/usr/bin/env python3
"""How often is a stripped binary's static code where its exported neighbours say?
(`components::extents` gives code without a symbol the component of the sized symbols on
both sides when they agree.) Needs a library whose debug file names every static: by
default libc with Debian's libc6-dbg. A function's "component" here is the top-level
source directory of its first line (DWARF, through addr2line).

    python3 crates/components/tools/check_symbol_gaps.py [LIBRARY] [-v]

Prints the share of static code (bytes) whose two exported neighbours agree, and of
that the share in the neighbours' directory; `-v` lists the largest disagreements."""
import subprocess, sys, bisect, os, re
lib = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-v" else "/lib/x86_64-linux-gnu/libc.so.6"
bid = subprocess.run(["readelf", "-n", lib], capture_output=True, text=True).stdout
m = re.search(r"Build ID: ([0-9a-f]+)", bid); h = m.group(1)
dbg = f"/usr/lib/debug/.build-id/{h[:2]}/{h[2:]}.debug"
def funcs(path, dyn):
    out = subprocess.run(["readelf", "-W", "--dyn-syms" if dyn else "--syms", path], capture_output=True, text=True).stdout
    r = []
    for l in out.splitlines():
        f = l.split()
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            size = int(f[2], 0) if f[2].startswith("0x") else int(f[2])
            if size > 0:
                r.append((int(f[1], 16), size, f[7].split("@")[0]))
    return sorted(set(r))
exp = funcs(lib, True)
allf = funcs(dbg, False)
ext = sorted((a, a + s) for a, s, _ in exp)
starts = [a for a, _ in ext]
def covered(p):
    i = bisect.bisect_right(starts, p) - 1
    return i >= 0 and p < ext[i][1]
statics = [(a, s, n) for a, s, n in allf if not covered(a)]
addrs = sorted({a for a, _, _ in exp} | {a for a, _, _ in statics})
a2l = subprocess.run(["addr2line", "-e", dbg] + [hex(a) for a in addrs], capture_output=True, text=True).stdout.split("\n")
src = {a: os.path.normpath(os.path.dirname(l.split(":")[0])).split("/")[0] for a, l in zip(addrs, a2l)}
expa = [a for a, _, _ in exp]
tot = agree = right = 0
for a, s, n in statics:
    i = bisect.bisect_right(expa, a)
    if i == 0 or i >= len(exp): continue
    tot += s
    before, after = src[exp[i-1][0]], src[exp[i][0]]
    if before == after and "??" not in before and before:
        agree += s
        right += s * (src[a] == before)
print(f"{lib}: {len(exp)} exported functions, {len(statics)} static functions ({sum(s for _,s,_ in statics)} bytes)")
print(f"static bytes whose neighbours' source directories agree: {100*agree/tot:.1f}%")
print(f"of those, in the same directory as the neighbours: {100*right/max(agree,1):.1f}%")
if "-v" in sys.argv:
    bad = []
    for a, s, n in statics:
        i = bisect.bisect_right(expa, a)
        if i == 0 or i >= len(exp): continue
        before, after = src[exp[i-1][0]], src[exp[i][0]]
        if before == after and before and src[a] != before:
            bad.append((s, n, hex(a), src[a][-30:], before[-30:], exp[i-1][2], exp[i][2]))
    for b in sorted(bad, reverse=True)[:25]: print(b)
