//! Every option that changes a run is in its results directory's manifest, and a run
//! replayed from the manifest (`run --file DIR`) gets the same options: TPC-H's
//! `--queries`, `--streams`, `--no-refresh`; CH-benCHmark's `--analytic-streams`,
//! `--queries`; TPC-E's `--analytics` and `--queries` (`--alone`'s manifest:
//! `tpce_analytics`). (The typed child specifications' round trip is
//! `spec_roundtrip`'s.)

use crate::common::oltpscope;
use serde_json::Value;
use std::path::Path;

fn manifest(dir: &Path) -> Value {
    let p = dir.join("manifest.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Run `args` into a results directory, replay its manifest into another: both
/// manifests' configs, which must be equal.
fn run_and_replay(args: &[&str]) -> Value {
    let d = tempfile::tempdir().unwrap();
    let (r1, r2) = (d.path().join("r1"), d.path().join("r2"));
    let r1s = r1.to_str().unwrap();
    let (code, out, err) = oltpscope(&[args, &["--out", r1s]].concat());
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    let (code, out, err) = oltpscope(&["run", "--file", r1s, "--out", r2.to_str().unwrap()]);
    assert_eq!(code, 0, "replay of {args:?}: {out}{err}");
    let (m1, m2) = (manifest(&r1), manifest(&r2));
    assert_eq!(m1["config"], m2["config"], "{args:?}");
    assert_eq!(m1["config_hash"], m2["config_hash"], "{args:?}");
    m1["config"].clone()
}

const TIMED: [&str; 6] = [
    "--duration",
    "0.3",
    "--warmup",
    "0",
    "--report-interval",
    "0",
];

#[test]
fn tpce_analytics_are_in_the_manifest_and_replayed() {
    let c = run_and_replay(
        &[
            &["run", "tpce", "--analytics", "1", "--queries", "2,4"][..],
            &TIMED,
        ]
        .concat(),
    );
    let a = &c["run"]["workload"]["analytics"];
    assert_eq!(a["streams"], 1, "{c}");
    assert_eq!(a["queries"], serde_json::json!([2, 4]), "{c}");
}

#[test]
fn chbench_options_are_in_the_manifest_and_replayed() {
    let c = run_and_replay(
        &[
            &[
                "run",
                "chbench",
                "--analytic-streams",
                "2",
                "--queries",
                "6,1",
            ][..],
            &TIMED,
        ]
        .concat(),
    );
    let w = &c["run"]["workload"];
    assert_eq!(w["analytic_streams"], 2, "{c}");
    assert_eq!(w["queries"], serde_json::json!([1, 6]), "{c}");
    assert_eq!(w["tpcc_threads"], 1, "{c}");
}

#[test]
fn tpch_options_are_in_the_manifest_and_replayed() {
    let c = run_and_replay(&[
        "run",
        "tpch",
        "--scale-factor",
        "0.01",
        "--queries",
        "6,1",
        "--streams",
        "1",
        "--no-refresh",
        "--report-interval",
        "0",
    ]);
    let w = &c["run"]["workload"];
    assert_eq!(w["streams"], 1, "{c}");
    assert_eq!(w["refresh"], false, "{c}");
    // Stream 0's order (Appendix A) runs Q6 before Q1.
    assert_eq!(w["queries"], serde_json::json!([6, 1]), "{c}");
}
