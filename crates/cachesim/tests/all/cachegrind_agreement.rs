//! Agreement with `valgrind --tool=cachegrind`: the same program is traced with lackey,
//! the trace simulated with cachegrind's geometry and counting rules
//! (`cachegrind_compat`, no L2, non-inclusive LL), and the I1 / D1 / LL miss counts are
//! compared with cachegrind's summary. The models are the same (LRU, write-allocate, LL
//! fed only L1 misses, a straddling access counted once), and valgrind lays the client
//! out identically in both runs, so the counts are equal. Without `cachegrind_compat`
//! every line of a straddling access is its own access, so cachesim's I1 misses exceed
//! cachegrind's by at most the number of straddling instruction fetches.

use crate::common;

use cachesim::{Config, Simulator};
use std::collections::HashMap;
use std::process::Command;

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
static char big[1 << 20];
static long conflict[8][4096];
__attribute__((noinline)) long stream(int reps) {
    long s = 0;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < (1 << 20); i += 64) { s += big[i]; big[i + 1] = (char)s; }
    return s;
}
__attribute__((noinline)) long thrash(int reps) {
    long s = 0;
    for (int r = 0; r < reps; r++)
        for (int w = 0; w < 8; w++) s += conflict[w][0]++;
    return s;
}
int main(void) {
    long s = stream(3) + thrash(2000);
    char *p = malloc(100000);
    for (int i = 0; i < 100000; i += 8) p[i] = (char)i;
    s += p[800];
    free(p);
    printf("%ld\n", s);
    return 0;
}
"#;

fn cachegrind_summary(stderr: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for line in stderr.lines() {
        let Some(rest) = line.split("== ").nth(1) else {
            continue;
        };
        let Some((key, val)) = rest.split_once(':') else {
            continue;
        };
        let num: String = val
            .split_whitespace()
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| *c != ',')
            .collect();
        if let Ok(n) = num.parse() {
            m.insert(key.trim().to_string(), n);
        }
    }
    m
}

#[test]
fn miss_counts_agree_with_cachegrind() {
    if !common::have_valgrind() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prog.c");
    let prog = dir.path().join("prog");
    std::fs::write(&src, PROGRAM).unwrap();
    common::run_ok(Command::new("gcc").args(["-O1", "-o"]).arg(&prog).arg(&src));

    let cg = common::run_ok(
        Command::new("valgrind")
            .args([
                "--tool=cachegrind",
                "--cache-sim=yes",
                "--cachegrind-out-file=/dev/null",
            ])
            .args(["--I1=32768,8,64", "--D1=32768,8,64", "--LL=262144,8,64"])
            .arg(&prog),
    );
    let cg = cachegrind_summary(&String::from_utf8_lossy(&cg.stderr));
    let get = |k: &str| {
        *cg.get(k)
            .unwrap_or_else(|| panic!("cachegrind summary lacks {k}: {cg:?}"))
    };

    let mut cfg = Config::preset("xeon-e5-2660").unwrap();
    cfg.set_level("l1i", "32K:8:64").unwrap();
    cfg.set_level("l1d", "32K:8:64").unwrap();
    cfg.set_level("l2", "none").unwrap();
    cfg.set_level("llc", "256K:8:64").unwrap();
    cfg.last_level_inclusive = false;
    cfg.cachegrind_compat = true;
    let mut sim = Simulator::new(cfg).unwrap();
    let log = common::lackey(dir.path(), &prog);
    common::lackey_records(&log, |r| sim.feed(r));
    let rep = sim.report();
    let lvl = |n: &str| rep.levels.iter().find(|l| l.name == n).unwrap().clone();
    let (l1i, l1d, llc) = (lvl("L1-I"), lvl("L1-D"), lvl("LLC"));

    let pairs = [
        ("I refs", rep.instructions, get("I   refs")),
        ("I1 misses", l1i.misses.i, get("I1  misses")),
        ("D refs", l1d.accesses.d, get("D   refs")),
        ("D1 misses", l1d.misses.d, get("D1  misses")),
        ("LLi misses", llc.misses.i, get("LLi misses")),
        ("LLd misses", llc.misses.d, get("LLd misses")),
    ];
    for (what, ours, theirs) in pairs {
        println!("{what:>10}: cachesim {ours:>9}  cachegrind {theirs:>9}");
    }
    for (what, ours, theirs) in pairs {
        assert_eq!(ours, theirs, "{what}: cachesim and cachegrind disagree");
    }
    assert!(
        get("D1  misses") > 40_000,
        "the program must exercise the data cache"
    );

    // Line-granular counting (the default): same cache states, more counted misses.
    let mut cfg = rep.config.clone();
    cfg.cachegrind_compat = false;
    let mut sim = Simulator::new(cfg).unwrap();
    let mut straddles = 0u64;
    common::lackey_records(&log, |r| {
        if let cachesim::trace::Record::IFetch { addr, len, .. } = *r {
            straddles += (addr >> 6 != (addr + len as u64 - 1) >> 6) as u64;
        }
        sim.feed(r)
    });
    let lines = sim.report();
    let i1 = lines.levels[0].misses.i;
    println!("line-granular I1 misses {i1}, straddling fetches {straddles}");
    assert!(i1 >= get("I1  misses") && i1 - get("I1  misses") <= straddles);
}
