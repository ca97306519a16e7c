//! End-to-end validation of `oltpscope simulate`'s pipeline (oltptrace → FIFO → cachesim)
//! on real oltpscope runs:
//! - the simulator, configured like cachegrind, agrees with `valgrind --tool=cachegrind`
//!   on the instructions and the I1 / D1 / LL misses of a whole short run;
//! - `oltpscope simulate` charges B-tree work to the `btree` component and hash-index work
//!   to `index`.
//!
//! Each test prints `SKIPPED: <reason>` and passes only when valgrind is absent.

use crate::common;

use common::{cachegrind_summary, run_ok, tracer_or_skip, OLTPSCOPE};
use std::path::Path;
use std::sync::Mutex;

/// One valgrind run at a time: the tests share a 2-core machine with other work.
static VALGRIND: Mutex<()> = Mutex::new(());

/// A short run that loads a 20 000-key table and runs 2 000 transactions on one worker.
const SHORT_RUN: &[&str] = &[
    "run",
    "micro",
    "--engine",
    "memory",
    "--keys",
    "20000",
    "--txns",
    "2000",
    "--warmup",
    "0",
    "--no-check",
    "--threads",
    "1",
];

/// Cachegrind's geometry, given explicitly to both: I1 = D1 = 32 KiB 8-way, LL 1 MiB
/// 16-way (small enough that the run has LL capacity misses, not only cold ones).
const I1: (&str, &str) = ("--I1=32768,8,64", "32K:8:64");
const D1: (&str, &str) = ("--D1=32768,8,64", "32K:8:64");
const LL: (&str, &str) = ("--LL=1048576,16,64", "1M:16:64");

/// Relative difference |a - b| / max(a, b).
fn rel(a: u64, b: u64) -> f64 {
    a.abs_diff(b) as f64 / a.max(b).max(1) as f64
}

// Tolerances. The two runs are different processes under different valgrind tools: the
// epoch-advancer thread runs for a wall-clock time that differs between the tools, the
// allocator and the Rust runtime see different /proc/self/maps, and heap addresses (so
// set indices and conflicts) differ a little. Measured on the development machine (see
// docs/design/simulate-validation.md): instructions and data refs differ by < 0.5 %,
// I1 misses by < 1.3 % (cachesim always a little higher: the traced run executes a
// little more), D1 by < 0.7 %, LL by < 0.2 %. 1 % and 3 % leave room for a noisier
// machine while catching real modelling errors: counting an IFETCH run that crosses a
// line as one access (the bug this test found) moved I1 misses by -3.4 % and LLi misses
// by -5.4 % (the LLi check catches it); a wrong line size, associativity or replacement
// policy, a lost record kind or double counting move a count by far more.
const INSTR_TOL: f64 = 0.01;
const MISS_TOL: f64 = 0.03;

#[test]
fn whole_run_miss_counts_agree_with_cachegrind() {
    let _one = VALGRIND.lock().unwrap_or_else(|e| e.into_inner());
    let Some(setup) = tracer_or_skip() else {
        return;
    };
    // cachegrind first (VALGRIND_LIB of the prepared setup, so both runs see the same
    // library directory, hence the same maps).
    let t = std::time::Instant::now();
    let cg = run_ok(
        setup
            .valgrind_command("cachegrind")
            .args([
                "--cache-sim=yes",
                "--cachegrind-out-file=/dev/null",
                "--fair-sched=yes",
            ])
            .args([I1.0, D1.0, LL.0])
            .arg(OLTPSCOPE)
            .args(SHORT_RUN),
    );
    let cg_secs = t.elapsed().as_secs_f64();
    let cg = cachegrind_summary(&String::from_utf8_lossy(&cg.stderr));
    let get = |k: &str| {
        *cg.get(k)
            .unwrap_or_else(|| panic!("cachegrind summary lacks {k}: {cg:?}"))
    };

    let mut cfg = cachesim::Config::preset("xeon-e5-2660").unwrap();
    cfg.set_level("l1i", I1.1).unwrap();
    cfg.set_level("l1d", D1.1).unwrap();
    cfg.set_level("l2", "none").unwrap();
    cfg.set_level("llc", LL.1).unwrap();
    cfg.last_level_inclusive = false;
    cfg.cachegrind_compat = true;
    cfg.three_c = false;
    cfg.warmup_txns = 0;
    // cachegrind counts every thread on one hierarchy.
    cfg.ignore_roles = true;
    let mut sim = cachesim::Simulator::new(cfg).unwrap();
    let opts = tracer::TraceOptions {
        trace_start: true,
        quiet: true,
        valgrind_args: vec!["--fair-sched=yes".into()],
    };
    let t = std::time::Instant::now();
    common::trace_into(&setup, &opts, Path::new(OLTPSCOPE), SHORT_RUN, &mut sim);
    let sim_secs = t.elapsed().as_secs_f64();
    let rep = sim.report();
    let lvl = |n: &str| {
        rep.levels
            .iter()
            .find(|l| l.name == n)
            .unwrap_or_else(|| panic!("no level {n} in the report"))
            .clone()
    };
    let (l1i, l1d, llc) = (lvl("L1-I"), lvl("L1-D"), lvl("LLC"));
    assert_eq!(
        rep.tracer_instructions,
        Some(rep.instructions),
        "END's total must equal the IFETCH instructions (no warm-up): {:?}",
        rep.warnings
    );
    println!("cachegrind {cg_secs:.1} s, oltptrace + cachesim {sim_secs:.1} s");

    let rows = [
        ("I refs", rep.instructions, get("I   refs"), INSTR_TOL),
        ("D refs", l1d.accesses.d, get("D   refs"), INSTR_TOL),
        ("I1 misses", l1i.misses.i, get("I1  misses"), MISS_TOL),
        ("D1 misses", l1d.misses.d, get("D1  misses"), MISS_TOL),
        ("LLi misses", llc.misses.i, get("LLi misses"), MISS_TOL),
        ("LLd misses", llc.misses.d, get("LLd misses"), MISS_TOL),
        ("LL misses", llc.misses.total, get("LL misses"), MISS_TOL),
    ];
    for (what, ours, theirs, _) in rows {
        println!(
            "{what:>10}: cachesim {ours:>12}  cachegrind {theirs:>12}  diff {:.3} %",
            100.0 * rel(ours, theirs)
        );
    }
    // The run must exercise every level, or agreement would mean little.
    assert!(get("I   refs") > 10_000_000, "run too short: {cg:?}");
    assert!(get("D1  misses") > 100_000, "too few D1 misses: {cg:?}");
    assert!(get("LLd misses") > 10_000, "too few LL misses: {cg:?}");
    for (what, ours, theirs, tol) in rows {
        assert!(
            rel(ours, theirs) <= tol,
            "{what}: cachesim {ours} vs cachegrind {theirs} differ by more than {} %",
            100.0 * tol
        );
    }
}

/// `oltpscope simulate ARGS --json F`'s `simulation` object.
fn simulation(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let mut all = vec!["simulate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", json.to_str().unwrap()]);
    run_ok(std::process::Command::new(OLTPSCOPE).args(&all));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    v["simulation"].clone()
}

/// `oltpscope simulate micro --index INDEX --keys 100000 --txns 2000`'s JSON report.
fn simulate_micro(index: &str) -> serde_json::Value {
    simulation(&[
        "micro",
        "--engine",
        "memory",
        "--index",
        index,
        "--keys",
        "100000",
        "--txns",
        "2000",
        "--no-3c",
        // The attribution mechanics, not the defaults: a fixed warm-up, no log
        // flusher, `other` code kept as `other`.
        "--warmup-txns",
        "1000",
        "--log",
        "off",
        "--no-caller-attribution",
    ])
}

/// Instructions and L1-D misses of `index_probe`, by component.
fn index_probe_by_component(sim: &serde_json::Value) -> Vec<(String, u64, u64)> {
    let rows = sim["by_operation_component"].as_array().expect("rows");
    rows.iter()
        .filter(|r| r["operation"] == "index_probe")
        .map(|r| {
            let l1d = r["levels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| l["level"] == "L1-D")
                .expect("an L1-D level");
            (
                r["component"].as_str().unwrap().to_string(),
                r["instructions"].as_u64().unwrap(),
                l1d["misses"]["d"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// (instruction share, L1-D miss share) of `comp` in `rows`.
fn share(rows: &[(String, u64, u64)], comp: &str) -> (f64, f64) {
    let (ti, td) = rows.iter().fold((0, 0), |(a, b), r| (a + r.1, b + r.2));
    assert!(
        ti > 0 && td > 0,
        "index_probe has no instructions or misses: {rows:?}"
    );
    let (i, d) = rows
        .iter()
        .find(|r| r.0 == comp)
        .map_or((0, 0), |r| (r.1, r.2));
    (i as f64 / ti as f64, d as f64 / td as f64)
}

// What is not charged to the index component is mostly `other`: libc's memcmp (key
// comparison) and small helpers (`Key::as_bytes`, atomic loads) that the test profile
// (opt-level 1) does not inline. Without a call stack in the trace such code cannot be
// charged to its caller (docs/design/cachesim.md, Attribution). Measured shares of
// `index_probe` (see docs/design/simulate-validation.md): B-tree run, btree 76 % of
// instructions and 87 % of L1-D misses; hash run, index 29 % / 21 %, btree 0. The
// thresholds are well below those and well above what a broken attribution (all
// `other`, or the wrong index charged) gives.
#[test]
fn btree_work_is_charged_to_btree_and_hash_work_to_index() {
    let _one = VALGRIND.lock().unwrap_or_else(|e| e.into_inner());
    if tracer_or_skip().is_none() {
        return;
    }
    let bt = index_probe_by_component(&simulate_micro("btree"));
    println!("btree index, index_probe: {bt:?}");
    let (bi, bd) = share(&bt, "btree");
    let (hi, hd) = share(&bt, "index");
    println!("  btree share: {bi:.3} instr, {bd:.3} L1-D misses; index {hi:.3} / {hd:.3}");
    assert!(
        bi > 0.5 && bd > 0.5,
        "B-tree probes not charged to btree: {bt:?}"
    );
    assert!(
        hi < 0.01 && hd < 0.01,
        "a B-tree run charged the hash index: {bt:?}"
    );

    let h = index_probe_by_component(&simulate_micro("hash"));
    println!("hash index, index_probe: {h:?}");
    let (bi, bd) = share(&h, "btree");
    let (hi, hd) = share(&h, "index");
    println!("  btree share: {bi:.3} instr, {bd:.3} L1-D misses; index {hi:.3} / {hd:.3}");
    assert!(
        bi < 0.01 && bd < 0.01,
        "a hash run charged the B-tree: {h:?}"
    );
    assert!(
        hi > 0.1 && hd > 0.1,
        "hash probes not charged to index: {h:?}"
    );
    // Among the storage-manager components, the index does the most probing. The hash
    // index keeps its keys in the records (`record`'s key area), so comparing a key is
    // `record` work: the index and the record together come first.
    let idx = h.iter().find(|r| r.0 == "index").unwrap();
    let rec = h
        .iter()
        .find(|r| r.0 == "record")
        .map_or((0, 0), |r| (r.1, r.2));
    for (comp, i, d) in h
        .iter()
        .filter(|r| r.0 != "index" && r.0 != "record" && r.0 != "other")
    {
        assert!(
            idx.1 + rec.0 >= *i && idx.2 + rec.1 >= *d,
            "{comp} ({i} instr, {d} misses) outweighs the hash index and its keys in index_probe: {h:?}"
        );
    }
}

/// `simulate` with its defaults on the disk engine: the tables count the worker only,
/// background threads (page cleaner, log flusher, the driver's main thread) have rows
/// of their own, warm-up is automatic and says how it ended, the simulation stops after
/// the measured transactions, and the index lookup inside an update is an index probe.
#[test]
fn simulate_counts_workers_apart_from_background_threads() {
    let _one = VALGRIND.lock().unwrap_or_else(|e| e.into_inner());
    if tracer_or_skip().is_none() {
        return;
    }
    let v = simulation(&[
        "micro",
        "--engine",
        "disk",
        "--mode",
        "update",
        "--keys",
        "2000",
        "--txns",
        "300",
        "--warmup-cap",
        "1500",
        "--no-3c",
    ]);
    let sim = &v;
    assert_eq!(sim["transactions"], 300);
    let w = &sim["warmup"];
    assert_eq!(w["mode"], "auto");
    let decided = w["decided"].as_str().unwrap();
    assert!(decided.starts_with("auto: "), "{decided}");
    assert!(w["txns"].as_u64().unwrap() <= 1500);
    assert!(w["windows"].as_array().unwrap().len() >= 2);
    let threads = sim["threads"].as_array().unwrap();
    let roles: Vec<&str> = threads
        .iter()
        .map(|t| t["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles[0], "workers", "{roles:?}");
    assert_eq!(threads[0]["threads"], 1);
    assert_eq!(threads[0]["instructions"], sim["instructions"]);
    // The driver's main thread wakes only to keep time: whether it ran while tracing
    // depends on valgrind's scheduling, so its row is not required.
    for r in ["page cleaner", "log flusher"] {
        assert!(roles.contains(&r), "no {r} row: {roles:?}");
    }
    let known = [
        "workers",
        "main",
        "page cleaner",
        "log flusher",
        "checkpointer",
        "epoch",
        "io",
    ];
    assert!(roles.iter().all(|r| known.contains(r)), "{roles:?}");
    let ops = sim["by_operation"].as_array().unwrap();
    let instr = |name: &str| {
        ops.iter()
            .find(|b| b["operation"] == name)
            .map_or(0, |b| b["instructions"].as_u64().unwrap())
    };
    assert!(instr("index_probe") > 0, "no nested index probe: {ops:?}");
    assert!(instr("update") > 0);
    // No warning that a thread ran without declaring a role.
    let warnings = sim["warnings"].as_array().unwrap();
    assert!(
        !warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("declared no role")),
        "{warnings:?}"
    );
}

/// `simulate tpch`: the power test's chosen queries traced once each (no warm-up by
/// default), a row per query in the per-type table, and the query operators among the
/// components. Bad combinations are refused in one line before valgrind starts.
#[test]
fn simulate_tpch_traces_each_query_with_its_operators() {
    for bad in [
        &["--txns", "5"][..],
        &["--warmup-txns", "auto"],
        &["--threads", "2"],
    ] {
        let mut args = vec!["simulate", "tpch", "--scale-factor", "0.01"];
        args.extend_from_slice(bad);
        let (code, out, err) = common::oltpscope(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(out.is_empty());
    }
    let _one = VALGRIND.lock().unwrap_or_else(|e| e.into_inner());
    if tracer_or_skip().is_none() {
        return;
    }
    let v = simulation(&[
        "tpch",
        "--scale-factor",
        "0.01",
        "--queries",
        "11",
        "--no-refresh",
        "--no-3c",
    ]);
    let sim = &v;
    assert_eq!(sim["transactions"], 1, "one query traced");
    assert_eq!(sim["warmup_txns"], 0);
    let types = sim["by_txn_type"].as_array().unwrap();
    let q11 = types
        .iter()
        .find(|t| t["name"] == "Q11")
        .unwrap_or_else(|| panic!("no Q11 row: {types:?}"));
    assert_eq!(q11["transactions"], 1);
    let instr = q11["instructions"].as_u64().unwrap();
    assert!(instr > 1_000_000, "{q11}");
    let sum: u64 = types
        .iter()
        .map(|t| t["instructions"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, sim["instructions"].as_u64().unwrap(), "types add up");
    // Q11 scans PARTSUPP and aggregates by part: both operators ran.
    let comps: Vec<&str> = q11["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_str().unwrap())
        .collect();
    for op in ["q-scan", "hash-agg"] {
        assert!(comps.contains(&op), "{op}: {comps:?}");
    }
}
