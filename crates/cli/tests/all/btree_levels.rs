//! `simulate --btree-levels`: the traced run marks each node a B+tree descent reaches,
//! and the report gives the B+tree's own figures per level. Each lookup of a one-thread
//! read-only run descends once (root to leaf) or goes straight to the leaf its hint
//! names, so the root's visits and the hinted leaves' add up to the transactions; the
//! rows add up to the B+tree component's figures. Engines without such a B+tree refuse
//! the option.

use crate::common;
use common::{assert_bad_input, oltpscope, tracer_or_skip};

/// (JSON report, text output) of a traced one-thread read-only micro run.
fn traced(extra: &[&str]) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let mut a = vec!["simulate", "micro", "--index", "btree", "--keys", "20000"];
    a.extend(["--mode", "read", "--txns", "300", "--warmup-txns", "20"]);
    a.extend(extra);
    a.extend(["--json", json.to_str().unwrap()]);
    let (code, out, err) = oltpscope(&a);
    assert_eq!(code, 0, "{a:?}\nstdout: {out}\nstderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, out)
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap()
}

#[test]
fn simulate_gives_the_btree_by_level() {
    if tracer_or_skip().is_none() {
        return;
    }
    for engine in ["memory", "mvcc", "disk"] {
        let (v, out) = traced(&["--engine", engine, "--btree-levels"]);
        let args = v["child_args"].to_string();
        assert!(args.contains("--btree-levels"), "{engine}: {args}");
        let sim = &v["simulation"];
        let txns = u(&sim["transactions"]);
        assert_eq!(txns, 300, "{engine}");
        let rows = sim["btree_levels"].as_array().unwrap();
        let height = rows
            .iter()
            .filter_map(|r| r["height"].as_u64())
            .max()
            .unwrap_or_else(|| panic!("{engine}: no level rows: {rows:?}"));
        assert!(height >= 2, "{engine}: 20,000 keys in one leaf? {rows:?}");
        let at = |level: u64| {
            rows.iter()
                .find(|r| r["height"] == height && r["level"] == level)
                .unwrap_or_else(|| panic!("{engine}: level {level} missing: {rows:?}"))
        };
        let hinted: u64 = rows
            .iter()
            .filter(|r| r["hint"] == true)
            .map(|r| u(&r["visits"]))
            .sum();
        // One descent per lookup that its hint did not serve, through every level.
        let root = u(&at(1)["visits"]);
        assert_eq!(root + hinted, txns, "{engine}: {rows:?}");
        for level in 2..=height {
            assert_eq!(u(&at(level)["visits"]), root, "{engine}: level {level}");
        }
        // The leaves are where a random read misses most.
        let llc_d = |r: &serde_json::Value| {
            r["misses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| u(&m[1]["d"]))
                .next_back()
                .unwrap()
        };
        assert!(llc_d(at(height)) >= llc_d(at(1)), "{engine}: {rows:?}");
        // The rows are the B+tree component, split.
        let btree = sim["by_component"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["component"] == "btree")
            .unwrap();
        let sum: u64 = rows.iter().map(|r| u(&r["instructions"])).sum();
        assert_eq!(sum, u(&btree["instructions"]), "{engine}");
        // Every level row names its tree: the micro-benchmark's one table's primary index.
        let named: Vec<&str> = rows
            .iter()
            .filter(|r| r["height"].is_u64() || r["hint"] == true)
            .map(|r| r["tree"].as_str().unwrap_or("(none)"))
            .collect();
        assert!(named.iter().all(|&n| n == "micro"), "{engine}: {named:?}");
        assert!(out.contains("B+tree by level"), "{engine}: {out}");
        assert!(out.contains("micro "), "{engine}: {out}");
    }
    // Without the option: no markers, no table.
    let (v, out) = traced(&[]);
    assert!(!v["child_args"].to_string().contains("--btree-levels"));
    assert_eq!(v["simulation"]["btree_levels"].as_array().unwrap().len(), 0);
    assert!(!out.contains("B+tree by level"));
}

#[test]
fn engines_without_a_marked_btree_refuse_btree_levels() {
    for engine in ["partitioned", "serial", "sqlite", "postgres"] {
        assert_bad_input(&["simulate", "micro", "--engine", engine, "--btree-levels"]);
    }
}
