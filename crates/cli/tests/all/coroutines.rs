//! `--coroutines N` from the command line: a run with coroutines on the disk engine
//! reports them and its waits by kind; bad values get one error line and exit code 2;
//! `simulate` traces a run whose transactions are coroutines (valgrind sees the
//! coroutine stacks switch).

use crate::common;
use common::{assert_bad_input, oltpscope};

#[test]
fn run_with_coroutines_reports_them_and_waits_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--log",
        "sync",
        "--threads",
        "2",
        "--coroutines",
        "4",
        "--txns",
        "400",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("4 coroutines per thread"), "{out}");
    assert!(
        out.contains("waits: ") && out.contains("log_flush"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["checks"]["passed"], true);
    assert_eq!(v["coroutines"], 4);
    assert_eq!(v["config"]["coroutines"], 4);
    assert!(v["coroutine_switches"].as_u64().unwrap() > 0);
    let kinds: Vec<&str> = v["waits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "lock",
            "latch",
            "log_flush",
            "page_io",
            "epoch",
            "backoff",
            "other"
        ]
    );
    let flush = &v["waits"][2];
    assert!(flush["count"].as_u64().unwrap() > 0, "{flush}");
    assert!(flush["total_ms"].as_f64().unwrap() > 0.0, "{flush}");
}

#[test]
fn bad_coroutine_counts_give_one_line_and_exit_code_2() {
    let cases: &[&[&str]] = &[
        &["run", "micro", "--coroutines", "0"],
        &["run", "micro", "--coroutines", "many"],
        &["run", "micro", "--coroutines", "5000"],
        &["check", "tpcb", "--coroutines", "2"],
    ];
    for args in cases {
        assert_bad_input(args);
    }
}

#[test]
fn simulate_traces_transactions_run_as_coroutines() {
    if let Err(e) = tracer::prepare() {
        common::skip(&e.to_string());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let (code, out, err) = oltpscope(&[
        "simulate",
        "tpcb",
        // Commits wait for the log, the others for the one branch's lock: coroutines
        // switch in the middle of operations.
        "--engine",
        "disk",
        "--log",
        "sync",
        "--coroutines",
        "4",
        "--txns",
        "200",
        "--warmup-txns",
        "20",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sim = &v["simulation"];
    assert_eq!(sim["transactions"], 200, "transactions after warm-up");
    // Operation marks stay balanced across switches (the scheduler closes and reopens
    // them), so the tracer reports no unmatched ends.
    assert_eq!(
        sim["warnings"].as_array().map_or(0, |w| w.len()),
        0,
        "{}",
        sim["warnings"]
    );
    let ops: Vec<&str> = sim["by_operation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["operation"].as_str().unwrap())
        .collect();
    for op in ["update", "insert", "commit"] {
        assert!(ops.contains(&op), "operation {op} missing from {ops:?}");
    }
}
