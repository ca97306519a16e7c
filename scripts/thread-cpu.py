#!/usr/bin/env python3
"""CPU time and task switches per thread of a command and its descendants.

Usage: WINDOW=5 scripts/thread-cpu.py COMMAND [ARGS...]

Samples /proc/PID/task/TID/{stat,status,schedstat} of every thread of COMMAND and of its
child processes every 0.1 s, then prints to stderr, per thread that used CPU, its user and
kernel time, run time and voluntary/involuntary switches over the last WINDOW seconds of
its life (the measured phase of `native-bench`'s loops and of `oltpscope run`: CPU per
transaction is these times over the run's rate times the window; docs/PERFORMANCE.md,
session 59). COMMAND's own output and exit code pass through."""
import os, sys, time, subprocess
W = float(os.environ.get("WINDOW", "5"))
HZ = os.sysconf("SC_CLK_TCK")
def kids(pid):
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out
def sample(pid, tid):
    b = f"/proc/{pid}/task/{tid}"
    with open(b + "/stat") as f:
        s = f.read()
    comm = s[s.index("(") + 1:s.rindex(")")]
    fl = s[s.rindex(")") + 2:].split()
    ut, st = int(fl[11]), int(fl[12])
    v = n = 0
    with open(b + "/status") as f:
        for l in f:
            if l.startswith("voluntary_ctxt_switches"): v = int(l.split()[1])
            elif l.startswith("nonvoluntary_ctxt_switches"): n = int(l.split()[1])
    with open(b + "/schedstat") as f:
        run_ns = int(f.read().split()[0])
    return comm, ut, st, v, n, run_ns
T0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:])
series = {}
while p.poll() is None:
    now = time.monotonic()
    todo = [p.pid]
    seen = set()
    while todo:
        q = todo.pop()
        if q in seen: continue
        seen.add(q)
        todo += kids(q)
        try:
            tids = os.listdir(f"/proc/{q}/task")
        except OSError:
            continue
        for t in tids:
            try:
                series.setdefault((q, int(t)), []).append((now,) + sample(q, t))
            except (OSError, ValueError, IndexError):
                pass
    time.sleep(0.1)
print(f"# per thread, last {W:.1f} s of its life: comm pid tid life_s user_ms sys_ms run_ms vcsw ivcsw", file=sys.stderr)
for (pid, tid), ss in sorted(series.items()):
    last = ss[-1]
    first = next((x for x in ss if x[0] >= last[0] - W), ss[0])
    d = [last[i] - first[i] for i in (2, 3, 4, 5, 6)]
    if d[0] + d[1] < 5: continue
    print(f"T {last[1]:<16} {pid} {tid} start={ss[0][0]-T0:.1f} life={last[0]-ss[0][0]:.1f} win={last[0]-first[0]:.2f} user_ms={d[0]*1000/HZ:.0f} sys_ms={d[1]*1000/HZ:.0f} run_ms={d[4]/1e6:.0f} vcsw={d[2]} ivcsw={d[3]}", file=sys.stderr)
sys.exit(p.returncode)
