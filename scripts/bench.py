#!/usr/bin/env python3
"""Run a named set of oltpscope benchmarks and print a Markdown table of the results.

Usage: scripts/bench.py SET [--duration S] [--out DIR]
Sets: foundation, tpcc, silo, disk, all. `silo`: issue 15's comparison (full TPC-C mix,
run with --duration 20), printed with the ratio to Silo's figures on this machine kind. Each run's JSON report is kept in DIR (default
bench-results/) so figures can be traced back to their full configuration.

Usage: scripts/bench.py ab --run NAME=BINARY[:EXTRA ARGS] ... [--rounds N] -- ARGS
Back-to-back comparison (this VM varies 15-25% run to run, so two set-ups are compared
only as ratios of runs made one right after the other): each round runs every NAME in
turn, `BINARY ARGS EXTRA ARGS`, and the table gives each run's throughput and its ratio
to the round's first run. Example, log async against log off on one binary:
  scripts/bench.py ab --rounds 4 --run off=target/figures/oltpscope \
    --run async=target/figures/oltpscope:"--log async --db /tmp/abdb" -- \
    run tpcc --engine memory --warehouses 1 --threads 1 --duration 20 --mem-reserve 6GB
A `--db` directory in a run's arguments is removed before the run (a fresh load).

Usage: scripts/bench.py pair --run A=BINARY[:ARGS] --run B=BINARY[:ARGS] [--rounds N] -- ARGS
Two one-thread set-ups run at the same time, one per core (`taskset`, `--no-pin`), then
again with the cores swapped; the table gives B/A for each pair. Runs made at once share
the VM's moment, and the swap evens out a faster core; a process's own luck (where its
memory lies) remains, so a difference of a few percent needs about a dozen pairs (the
same binary against itself gave 0.92-1.10). Each process is confined to its core with
all its threads, so set-ups whose background threads differ (a log writer: `--log async`
against `--log off`) are not compared fairly here; use `ab` for them. Example:
  scripts/bench.py pair --rounds 6 --run old=/tmp/old --run new=target/figures/oltpscope -- \
    run tpcc --engine memory --warehouses 1 --threads 1 --duration 10 --mem-reserve 4GB
"""
import argparse, json, os, shutil, statistics, subprocess, sys, datetime

# The figures' build: `cargo build --profile figures` (fat LTO, one unit; Cargo.toml).
BIN = os.path.join(os.path.dirname(__file__), "..", "target", "figures", "oltpscope")

SETS = {
    "foundation": [
        (f"micro read 1 row {size} {t}T log {log}",
         f"run micro --engine memory --mode read --rows 1 --size {size} --threads {t} --log {log}")
        for log in ("off", "async") for size in ("10MB", "1GB") for t in (1, 2)
    ] + [
        (f"micro read 1 row 1M keys 100B rows {t}T log off",
         f"run micro --engine memory --mode read --rows 1 --keys 1000000 --columns string --threads {t}")
        for t in (1, 2)
    ] + [
        (f"micro update 1 row 10MB {t}T log {log}",
         f"run micro --engine memory --mode update --rows 1 --size 10MB --threads {t} --log {log}")
        for log in ("off", "async") for t in (1, 2)
    ] + [
        (f"tpcb scale 2 {t}T affinity log {log}",
         f"run tpcb --engine memory --scale 2 --affinity --threads {t} --log {log}")
        for log in ("off", "async") for t in (1, 2)
    ] + [
        ("tpcb scale 2 2T no affinity log off", "run tpcb --engine memory --scale 2 --threads 2"),
    ],
    "tpcc": [
        (f"tpcc W=1 1T log {log}", f"run tpcc --engine memory --warehouses 1 --threads 1 --log {log}")
        for log in ("off", "async")
    ] + [
        (f"tpcc W=2 2T affinity log {log}",
         f"run tpcc --engine memory --warehouses 2 --threads 2 --affinity --log {log}")
        for log in ("off", "async")
    ] + [
        (f"tpcc W=4 2T log {log}", f"run tpcc --engine memory --warehouses 4 --threads 2 --log {log}")
        for log in ("off", "async")
    ],
    "disk": [
        (f"disk micro {mode} 1 row {size} 1T log async",
         f"run micro --engine disk --mode {mode} --rows 1 --size {size} --threads 1 --log async")
        # 1 GB (67 M rows, ~3 minutes to load): `--only 1GB`; the update run reopens the
        # database the read run loaded (kept in bench-db-1GB/, removed afterwards).
        for mode in ("read", "update") for size in ("10MB",)
    ] + [
        ("disk micro read 1 row 1GB 1T log async",
         "run micro --engine disk --mode read --rows 1 --size 1GB --threads 1 --log async --db bench-db-1GB"),
        ("disk micro update 1 row 1GB 1T log async",
         "run micro --engine disk --mode update --rows 1 --size 1GB --threads 1 --log async --db bench-db-1GB --no-load --warmup 20"),
    ] + [
        (f"disk tpcb scale 2 {t}T affinity log async",
         f"run tpcb --engine disk --scale 2 --affinity --threads {t} --log async")
        for t in (1, 2)
    ] + [
        # TPC-B scale 2 loads a 27 MB data file; a quarter of it in the pool.
        (f"disk tpcb scale 2 {t}T affinity log async bpool 7MB",
         f"run tpcb --engine disk --scale 2 --affinity --threads {t} --log async --bpool-size 7MB")
        for t in (1, 2)
    ] + [
        (f"memory {name}", cmd.replace("--engine disk", "--engine memory"))
        for name, cmd in [
            ("micro read 1 row 10MB 1T log async", "run micro --engine disk --mode read --rows 1 --size 10MB --threads 1 --log async"),
            ("micro update 1 row 10MB 1T log async", "run micro --engine disk --mode update --rows 1 --size 10MB --threads 1 --log async"),
            ("micro read 1 row 1GB 1T log async", "run micro --engine disk --mode read --rows 1 --size 1GB --threads 1 --log async"),
            ("micro update 1 row 1GB 1T log async", "run micro --engine disk --mode update --rows 1 --size 1GB --threads 1 --log async"),
            ("tpcb scale 2 1T affinity log async", "run tpcb --engine disk --scale 2 --affinity --threads 1 --log async"),
            ("tpcb scale 2 2T affinity log async", "run tpcb --engine disk --scale 2 --affinity --threads 2 --log async"),
        ]
    ],
}
# Issue 15: the memory engine against Silo's own `dbtest` figures on this machine kind
# (full mix, 20 s: W=1/1T 70-73 k, W=2/2T 100-105 k log off, 69-70 k with its log).
# --mem-reserve faults the memory a 20 s run grows into before it is measured, as Silo's
# benchmark does with --numa-memory.
SILO = {"W=1 1T log off": (70_000, 73_000), "W=2 2T log off": (100_000, 105_000),
        "W=2 2T log async": (69_000, 70_000)}
SETS["silo"] = [
    (f"W=1 1T log {log}",
     f"run tpcc --engine memory --warehouses 1 --threads 1 --log {log} --mem-reserve 4GB")
    for log in ("off", "async")
] + [
    (f"W=2 2T log {log}",
     f"run tpcc --engine memory --warehouses 2 --threads 2 --affinity --log {log} --mem-reserve 6GB")
    for log in ("off", "async")
]
SETS["all"] = SETS["foundation"] + SETS["tpcc"] + SETS["disk"]


def die(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def opt(args, name):
    """The value of option `name` in an argument list, or None."""
    return args[args.index(name) + 1] if name in args[:-1] else None


def fresh_db(args):
    """Remove the run's `--db` directory, if it names one (a fresh load)."""
    if opt(args, "--db") is not None:
        shutil.rmtree(opt(args, "--db"), ignore_errors=True)


def parse_runs(mode, argv):
    """The options, runs (name, binary, extra args) and common arguments of `ab` and
    `pair`."""
    if "--" not in argv:
        die(f"bench.py {mode} needs `-- ARGS` (the oltpscope command to run)")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(prog=f"bench.py {mode}")
    ap.add_argument("--run", action="append", required=True, metavar="NAME=BINARY[:ARGS]")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="bench-results")
    a = ap.parse_args(argv[:cut])
    runs = []
    for spec in a.run:
        name, eq, rest = spec.partition("=")
        binary, _, extra = rest.partition(":")
        if not eq or not name or not binary:
            die(f"--run {spec!r}: expected NAME=BINARY[:EXTRA ARGS]")
        if not os.access(binary, os.X_OK):
            die(f"--run {spec!r}: {binary} is not an executable file")
        runs.append((name, binary, extra.split()))
    os.makedirs(a.out, exist_ok=True)
    return a, runs, argv[cut + 1:]


def ab(argv):
    """`ab` mode (see the module's docstring)."""
    a, runs, common = parse_runs("ab", argv)
    print("| round | run | started (UTC) | txn/s | workers on CPU | / first | checks |")
    print("|---:|---|---|---:|---:|---:|---|")
    for r in range(1, a.rounds + 1):
        first = None
        for name, binary, extra in runs:
            args = common + extra
            fresh_db(args)
            path = os.path.join(a.out, f"ab-{r}-{name}.json")
            start = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")
            p = subprocess.run([binary] + args + ["--json", path], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                err = (p.stderr.strip().splitlines() or ["failed"])[-1]
                print(f"| {r} | {name} | {start} | failed: {err} | | | |", flush=True)
                continue
            rep = json.load(open(path))
            t = rep["throughput_tps"]
            first = first or t
            busy = rep.get("worker_cpu_busy")
            cpu = f"{100 * busy:.0f}%" if busy is not None else "n/a"
            ok = "pass" if rep["checks"]["passed"] else "FAIL"
            print(f"| {r} | {name} | {start} | {t:,.0f} | {cpu} | {t / first:.2f} | {ok} |",
                  flush=True)


def pair(argv):
    """`pair` mode (see the module's docstring)."""
    a, runs, common = parse_runs("pair", argv)
    if len(runs) != 2 or runs[0][0] == runs[1][0]:
        die("bench.py pair needs two --run set-ups with different names")
    if (os.cpu_count() or 1) < 2 or shutil.which("taskset") is None:
        die("bench.py pair needs two cores and taskset")
    dbs = []
    for name, _, extra in runs:
        args = common + extra
        if opt(args, "--threads") not in (None, "1"):
            die("bench.py pair runs one worker thread per set-up (--threads 1)")
        if opt(args, "--db") is not None:
            dbs.append(opt(args, "--db"))
    if len(dbs) == 2 and os.path.abspath(dbs[0]) == os.path.abspath(dbs[1]):
        die("bench.py pair: the two set-ups need different --db directories")
    (na, _, _), (nb, _, _) = runs
    print(f"| round | {na} on core | {na} txn/s | {nb} on core | {nb} txn/s | {nb} / {na} | checks |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    ratios = []
    for r in range(1, a.rounds + 1):
        for swap in (False, True):
            procs = []
            for i, (name, binary, extra) in enumerate(runs):
                args = common + extra
                fresh_db(args)
                core = str(i ^ swap)
                path = os.path.join(a.out, f"pair-{r}{'s' if swap else ''}-{name}.json")
                if os.path.exists(path):
                    os.remove(path)
                p = subprocess.Popen(["taskset", "-c", core, binary] + args
                                     + ["--no-pin", "--json", path],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
                procs.append((name, core, p, path))
            got = []
            for name, core, p, path in procs:
                _, err = p.communicate()
                if p.returncode != 0:
                    msg = (err.strip().splitlines() or ["failed"])[-1]
                    got.append((core, None, f"{name} failed: {msg}"))
                    continue
                rep = json.load(open(path))
                got.append((core, rep["throughput_tps"],
                            "pass" if rep["checks"]["passed"] else "FAIL"))
            (ca, ta, oka), (cb, tb, okb) = got
            if ta is None or tb is None:
                print(f"| {r} | {ca} | | {cb} | | | {oka if ta is None else okb} |", flush=True)
                continue
            ratios.append(tb / ta)
            ok = "pass" if oka == okb == "pass" else "FAIL"
            print(f"| {r} | {ca} | {ta:,.0f} | {cb} | {tb:,.0f} | {tb / ta:.3f} | {ok} |",
                  flush=True)
    if ratios:
        print(f"\n{nb} / {na} over {len(ratios)} pairs: mean {statistics.mean(ratios):.3f}, "
              f"median {statistics.median(ratios):.3f}, {sum(x > 1 for x in ratios)} above 1")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "ab":
        return ab(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "pair":
        return pair(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("set", choices=sorted(SETS))
    ap.add_argument("--duration", default="10")
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--only", default=None, help="substring filter on run names")
    a = ap.parse_args()
    if not os.path.exists(BIN):
        die(f"{BIN} is missing: build it with `cargo build --profile figures`")
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for name, cmd in SETS[a.set]:
        if a.only and a.only not in name:
            continue
        path = os.path.join(a.out, name.replace(" ", "_").replace("/", "-") + ".json")
        full = [BIN] + cmd.split() + ["--duration", a.duration, "--json", path]
        print("$ oltpscope " + cmd + f" --duration {a.duration}", file=sys.stderr, flush=True)
        r = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            rows.append((name, cmd, None, r.stderr.strip().splitlines()[-1:] or ["failed"]))
            continue
        rep = json.load(open(path))
        rows.append((name, cmd, rep, None))
    if os.path.isdir("bench-db-1GB"):
        shutil.rmtree("bench-db-1GB")
    print(f"\nMeasured {datetime.date.today()} with --duration {a.duration}\n")
    print("| run | command | txn/s | abort % | p50 us | p99 us | workers on CPU | checks |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name, cmd, rep, err in rows:
        if rep is None:
            print(f"| {name} | `oltpscope {cmd}` | failed: {err[0]} | | | | | |")
            continue
        busy = rep.get("worker_cpu_busy")
        cpu = f"{100 * busy:.0f}%" if busy is not None else "n/a"
        print(f"| {name} | `oltpscope {cmd}` | {rep['throughput_tps']:,.0f} | {100*rep['abort_rate']:.2f} | "
              f"{rep['latency_us']['p50']:.1f} | {rep['latency_us']['p99']:.1f} | "
              f"{cpu} | "
              f"{'pass' if rep['checks']['passed'] else 'FAIL'} |")
    if a.set == "silo":
        print("\n| run | txn/s | Silo (dbtest) | ratio |")
        print("|---|---:|---:|---:|")
        for name, cmd, rep, err in rows:
            if rep is None or name not in SILO:
                continue
            lo, hi = SILO[name]
            t = rep["throughput_tps"]
            print(f"| {name} | {t:,.0f} | {lo:,}-{hi:,} | {t / hi:.2f}-{t / lo:.2f} |")
        # The other goal: log async within 10% of log off (same binary, back to back).
        tps = {name: rep["throughput_tps"] for name, _, rep, _ in rows if rep is not None}
        print("\n| configuration | log async / log off |")
        print("|---|---:|")
        for w in ("W=1 1T", "W=2 2T"):
            on, off = tps.get(f"{w} log async"), tps.get(f"{w} log off")
            if on and off:
                print(f"| {w} | {on / off:.2f} |")


if __name__ == "__main__":
    main()
