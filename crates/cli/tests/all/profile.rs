//! `oltpscope profile`: tiny runs on every engine and workload give a profile whose
//! shares add up, whose call chains are deep (the build keeps frame pointers) and whose
//! slices agree with each other; bad input is one line and exit code 2.

use crate::common;
use common::oltpscope;

fn profile_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["profile"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--warmup", "0", "--frequency", "4000", "--json", "-"]);
    let (code, out, err) = oltpscope(&all);
    assert_eq!(code, 0, "{all:?}: {err}");
    assert!(err.contains("time by component"), "{err}");
    serde_json::from_str(&out).expect("the JSON report parses")
}

fn sum(v: &serde_json::Value, field: &str) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_u64().unwrap())
        .sum()
}

fn share(p: &serde_json::Value, component: &str) -> f64 {
    p["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == component)
        .unwrap_or_else(|| panic!("no component {component}"))["share"]
        .as_f64()
        .unwrap()
}

#[test]
fn every_engine_profiles_tpcb_with_deep_chains() {
    for engine in ["memory", "disk", "serial"] {
        let v = profile_json(&["tpcb", "--engine", engine, "--duration", "0.6"]);
        let p = &v["profile"];
        let n = p["samples"].as_u64().unwrap();
        assert!(n > 50, "{engine}: only {n} samples in 0.6 s at 4000 Hz");
        assert_eq!(sum(&p["components"], "samples"), n, "{engine}");
        assert_eq!(sum(&p["operations"], "samples"), n, "{engine}");
        assert_eq!(sum(&p["txn_types"], "samples"), n, "{engine}");
        // Cut chains (no frame pointers) would leave library time in `other` and the
        // operations unknown.
        let frames = p["mean_frames"].as_f64().unwrap();
        assert!(frames > 4.0, "{engine}: {frames} frames per sample");
        assert!(share(p, "other") < 0.2, "{engine}: {}", share(p, "other"));
        let in_ops = 1.0
            - p["operations"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["name"] == "(between operations)")
                .map_or(0.0, |o| o["share"].as_f64().unwrap());
        assert!(
            in_ops > 0.5,
            "{engine}: {in_ops} of the time inside operations"
        );
        assert!(v["committed"].as_u64().unwrap() > 0, "{engine}");
    }
    let v = profile_json(&["tpcb", "--engine", "disk", "--duration", "0.6"]);
    let p = &v["profile"];
    let engine_side = share(p, "btree") + share(p, "bpool") + share(p, "lock");
    assert!(
        engine_side > 0.3,
        "disk TPC-B: B-tree, pool and locks {engine_side}"
    );
    assert_eq!(share(p, "occ"), 0.0, "the disk engine has no OCC");
}

#[test]
fn tpcc_and_micro_time_is_split_by_transaction_type() {
    let v = profile_json(&["tpcc", "--engine", "disk", "--duration", "1"]);
    let p = &v["profile"];
    let types: Vec<&str> = p["txn_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in [
        "new-order",
        "payment",
        "order-status",
        "delivery",
        "stock-level",
    ] {
        assert!(types.contains(&t), "{types:?}");
    }
    let new_order = &p["txn_types"][0];
    assert!(new_order["samples"].as_u64().unwrap() > 0);
    let within: f64 = new_order["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["share"].as_f64().unwrap())
        .sum();
    assert!(
        (within - 1.0).abs() < 1e-9,
        "a type's components add to 1: {within}"
    );
    let v = profile_json(&[
        "micro",
        "--keys",
        "10000",
        "--duration",
        "0.5",
        "--mode",
        "update",
    ]);
    let p = &v["profile"];
    assert!(share(p, "index") + share(p, "btree") > 0.0, "{p}");
}

#[test]
fn bad_profile_input_is_one_line_and_exit_code_2() {
    for args in [
        &["profile"][..],
        &["profile", "tpcb", "--frequency", "0"],
        &["profile", "tpcb", "--frequency", "100000"],
        &["profile", "tpcb", "--engine", "nosuch"],
    ] {
        let (code, out, err) = oltpscope(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.is_empty(), "{out}");
    }
}

#[test]
fn counters_say_in_one_line_whether_the_machine_has_them_and_profile_anyway() {
    let (code, out, err) = oltpscope(&[
        "profile",
        "tpcb",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--counters",
    ]);
    assert_eq!(code, 0, "{err}");
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("hardware counters"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(out.contains("time by component"), "{out}");
}

/// A query's time by operator: the `exec` operators are components (`q-scan`,
/// `hash-join`, `hash-agg`, `sort`), per query. Q1 is a scan folded into a hash
/// aggregation; Q3 joins three tables.
#[test]
fn tpch_time_is_split_by_query_operator() {
    let (code, out, err) = oltpscope(&[
        "profile",
        "tpch",
        "--scale-factor",
        "0.01",
        "--queries",
        "1,3",
        "--no-refresh",
        "--frequency",
        "4000",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    // The table lists the components that have samples (Q3's join and both sorts
    // are a few percent of a 30 ms run, so may have none).
    for op in ["q-scan", "hash-agg"] {
        assert!(err.contains(&format!("\n  {op} ")), "{op}: {err}");
    }
    let v: serde_json::Value = serde_json::from_str(&out).expect("the JSON report parses");
    let p = &v["profile"];
    assert!(share(p, "q-scan") > 0.02, "{p}");
    let query = |name: &str| {
        p["txn_types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    let q1 = query("Q1");
    assert!(q1["samples"].as_u64().unwrap() > 20, "{q1}");
    assert!(share(&q1, "hash-agg") > 0.0, "{q1}");
    assert!(share(&q1, "q-scan") > 0.0, "{q1}");
    // Q3's scans are charged to the operator and to the engine's reads under it (its
    // own `q-scan` share is about 4% of some 40 samples, so often none: not asked).
    let q3 = query("Q3");
    assert!(q3["samples"].as_u64().unwrap() > 20, "{q3}");
    let scans = share(&q3, "q-scan") + share(&q3, "record") + share(&q3, "btree");
    assert!(scans > 0.4, "{q3}");
}
