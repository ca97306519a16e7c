//! The command line's bad-input cases: each returns exit code 2 with one message line and
//! no backtrace; a good short run succeeds and writes its JSON report.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use crate::common;
use common::{flip, last_segment, oltpscope};

use std::process::Command;

#[test]
fn bad_input_gives_one_line_and_exit_code_2() {
    let cases: &[&[&str]] = &[
        &["run", "nosuchworkload"],
        &["run", "micro", "--engine", "nosuchengine"],
        &["run", "micro", "--nosuchoption"],
        &["run", "micro", "--threads", "0"],
        &["run", "micro", "--threads", "-1"],
        &["run", "micro", "--duration", "0"],
        &["run", "micro", "--duration", "-5"],
        &["run", "micro", "--duration", "1e20"],
        &["run", "micro", "--warmup", "1e20"],
        &["run", "micro", "--duration", "18446744073709551616"],
        &["run", "micro", "--duration", "inf"],
        &["run", "micro", "--duration", "NaN"],
        &["run", "micro", "--size", "0MB"],
        &["run", "micro", "--size", "12XB"],
        &["run", "micro", "--keys", "0"],
        &["run", "micro", "--size", "1000TB"],
        &["run", "micro", "--rows", "0"],
        &["run", "micro", "--distribution", "zipf", "--theta", "2"],
        &["run", "tpcb", "--scale", "0"],
        &[
            "run",
            "tpcb",
            "--scale",
            "1",
            "--threads",
            "2",
            "--affinity",
        ],
        &["run", "tpcb", "--bpool-size", "0"],
        // The memory engine's reserve: another engine's run, more than memory, no size.
        &["run", "tpcb", "--engine", "disk", "--mem-reserve", "1GB"],
        &["run", "tpcb", "--mem-reserve", "1000TB"],
        &["run", "tpcb", "--mem-reserve", "lots"],
        &["run", "tpcc", "--engine", "mvcc", "--no-prefetch-hints"],
        &["nosuchcommand"],
        // A missing workload: one line, not the help.
        &["run"],
        &["check"],
        &["load"],
        &["simulate"],
        // Numbers out of range, unknown units, malformed lists, huge values.
        &["run", "micro", "--threads", "2000"],
        &["run", "micro", "--txns", "0"],
        &["run", "micro", "--txns", "1e300"],
        &["run", "micro", "--txns", "99999999999999999999999"],
        &["run", "micro", "--seed", "-1"],
        &["run", "micro", "--rows", "1001"],
        &["run", "micro", "--size", "1.5Q"],
        &["run", "micro", "--txns", "10", "--duration", "1"],
        &["run", "tpcb", "--scale", "100001"],
        &["run", "tpcc", "--warehouses", "0"],
        &["run", "tpcc", "--mix", "new-order=50,payment"],
        &["run", "tpcc", "--mix", "new-order=50,payment=40"],
        &["run", "tpcc", "--mix", "new-order=50,bogus=50"],
        &["run", "tpce", "--customers", "1500"],
        &["run", "tpce", "--customers", "0"],
        &["run", "tpce", "--trade-days", "0"],
        &["run", "tpce", "--trade-days", "301"],
        &["run", "tpce", "--mix", "trade-order=50"],
        &["run", "tpce", "--mix", "trade-result=100"],
        &[
            "load",
            "tpch",
            "--scale-factor",
            "0",
            "--db",
            "/nonexistent",
        ],
        &[
            "load",
            "tpch",
            "--scale-factor",
            "-1",
            "--db",
            "/nonexistent",
        ],
        &[
            "load",
            "tpch",
            "--scale-factor",
            "0.001",
            "--db",
            "/nonexistent",
        ],
        &[
            "load",
            "tpch",
            "--scale-factor",
            "nan",
            "--db",
            "/nonexistent",
        ],
        &[
            "check",
            "tpch",
            "--scale-factor",
            "20000",
            "--db",
            "/nonexistent",
        ],
        // A query out of range (alone and in a list), one named twice, a list for
        // --query, threads given (the streams set them), a count of transactions (each
        // stream counts its steps), more throughput streams than Appendix A orders, a
        // stream count that is no number.
        &["run", "tpch", "--query", "23"],
        &["run", "tpch", "--query", "0"],
        &["run", "tpch", "--queries", "1,23"],
        &["run", "tpch", "--queries", "6,6"],
        &["run", "tpch", "--query", "1,6"],
        &["run", "tpch", "--threads", "2"],
        &["run", "tpch", "--txns", "5"],
        &["run", "tpch", "--streams", "41"],
        &["run", "tpch", "--streams", "two"],
        // Query threads: none, no number, more than 64, on a SQL system, traced.
        &["run", "tpch", "--query-threads", "0"],
        &["run", "tpch", "--query-threads", "two"],
        &["run", "tpch", "--query-threads", "65"],
        &["run", "chbench", "--query-threads", "0"],
        &["run", "tpch", "--engine", "sqlite", "--query-threads", "2"],
        &["simulate", "tpch", "--query-threads", "2"],
        &["simulate", "tpch", "--scale-factor", "0.01", "--txns", "5"],
        &["simulate", "chbench", "--alone"],
        &["simulate", "chbench", "--analytics-only"],
        &["simulate", "chbench", "--engine", "postgres"],
        &[
            "check",
            "tpce",
            "--customers",
            "1500",
            "--db",
            "/nonexistent",
        ],
        &["run", "tpcb", "--engine", "disk", "--bpool-size", "12XB"],
        &["crashtest", "--engine", "sqlite", "--trials", "1"],
        &["run", "tpcb", "--engine", "disk", "--bpool-size", "1KB"],
        &["run", "tpcb", "--engine", "disk", "--checkpoint-ms", "1e12"],
        &[
            "run",
            "tpcb",
            "--engine",
            "disk",
            "--checkpoint-ms",
            "999999999999",
        ],
        &["run", "tpcb", "--engine", "disk", "--escalation", "0"],
        // Options of another engine, or of another command.
        // The memory engine keeps nothing in --db with its log off.
        &[
            "run",
            "tpcb",
            "--db",
            "/tmp/oltpscope-never-made",
            "--log",
            "off",
        ],
        &["run", "tpcb", "--bpool-size", "64MB"],
        &["run", "tpcb", "--escalation", "100"],
        &["run", "tpcb", "--checkpoint-ms", "100"],
        &[
            "run",
            "tpcb",
            "--engine",
            "serial",
            "--db",
            "/tmp/oltpscope-never-made",
        ],
        &["run", "tpcb", "--engine", "serial", "--log", "sync"],
        &["run", "micro", "--cpu", "zen3"],
        &["run", "micro", "--no-3c"],
        &["check", "tpcb", "--threads", "2"],
        &["check", "tpcb", "--duration", "1"],
        &["check", "tpcb", "--mix", "new-order=100"],
        &["check", "tpcb", "--reload"],
        &["check", "tpcb"],
        &["simulate", "micro", "--duration", "3"],
        &["simulate", "micro", "--warmup", "1"],
        &["simulate", "micro", "--db", "/tmp/oltpscope-never-made"],
        &["simulate", "micro", "--bpool-size", "64MB"],
        &["load", "tpcb"],
        &["load", "tpcb", "--txns", "10"],
        &[
            "load",
            "tpcb",
            "--engine",
            "serial",
            "--db",
            "/tmp/oltpscope-never-made",
        ],
        &["drop"],
        &["drop", "--db", "/nonexistent/oltpscope-db"],
        &["crashtest", "--trials", "0"],
        &["crashtest", "--max-kill-ms", "0"],
        &["crashtest", "--threads", "65"],
        &["crashtest", "--workload", "micro"],
        &["crashtest", "--engine", "serial"],
        &["run", "tpcc", "--terminal-times", "--rate", "5"],
        &["run", "tpcb", "--terminal-times"],
        &["run", "micro", "--rate", "0"],
        &["run", "micro", "--rate", "-5"],
        &["run", "micro", "--rate", "1e12"],
        &["run", "micro", "--rate", "NaN"],
        &["run", "micro", "--arrivals", "poisson"],
        &["run", "micro", "--rate", "100", "--arrivals", "bursty"],
    ];
    for args in cases {
        let (code, _out, err) = oltpscope(args);
        assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line expected, got: {err}"
        );
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_short_run_reports_json_with_the_documented_fields() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "serial",
        "--threads",
        "2",
        "--duration",
        "1.2",
        "--warmup",
        "0.1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("consistency checks: all passed"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for field in [
        "workload",
        "engine",
        "threads",
        "duration_s",
        "seed",
        "committed",
        "aborted",
        "throughput_tps",
        "latency_us",
        "per_txn",
        "checks",
        "config",
        "machine",
    ] {
        assert!(v.get(field).is_some(), "missing field {field}");
    }
    for p in ["p50", "p95", "p99", "p999", "max"] {
        assert!(v["latency_us"][p].as_f64().unwrap() > 0.0, "latency {p}");
    }
    assert_eq!(v["checks"]["passed"], true);
    assert!(v["committed"].as_u64().unwrap() > 0);
    // The workers ran during the measured interval: a CPU share, at most ~1 per thread.
    let busy = v["worker_cpu_busy"].as_f64().expect("worker_cpu_busy");
    assert!(busy > 0.0 && busy <= 1.05, "worker_cpu_busy {busy}");
    assert!(out.contains("workers on CPU"), "{out}");
    // Non-terminal output: no progress bar and no per-second lines, but plain lines
    // every 10 s (--report-interval): what starts, and here the warm-up's first second
    // and the rest of the run.
    assert!(!err.contains('\r'), "{err}");
    assert!(
        err.contains("running tpcb: 0.1 s warm-up, then 1.2 s measured"),
        "{err}"
    );
    let lines = err.lines().filter(|l| l.contains("txn/s")).count();
    assert!((1..=2).contains(&lines), "{err}");
}

#[test]
fn simulate_bad_input_gives_one_line_and_exit_code_2() {
    let cases: &[&[&str]] = &[
        &["simulate", "micro", "--cpu", "nosuchcpu"],
        &["simulate", "micro", "--l1i", "32Q:8:64"],
        &["simulate", "micro", "--l1d", "48K:8:64"],
        &["simulate", "micro", "--l2", "256K:8:48"],
        &["simulate", "micro", "--sweep", "l1i=8K,oops"],
        &["simulate", "micro", "--warmup-txns", "lots"],
        &[
            "simulate",
            "micro",
            "--warmup-txns",
            "5",
            "--warmup-cap",
            "10",
        ],
        &[
            "simulate",
            "micro",
            "--steps-team",
            "1",
            "--warmup-txns",
            "auto",
        ],
        &["simulate", "micro", "--warmup-cap", "0"],
        &["simulate", "micro", "--until-settled", "0"],
        &["simulate", "micro", "--until-settled", "60%"],
        &["simulate", "micro", "--until-settled", "two"],
        &["simulate", "micro", "--until-settled", "--steps-team", "1"],
        &["simulate", "tpch", "--until-settled", "5"],
        &["run", "micro", "--cpu", "zen3"],
    ];
    for args in cases {
        let (code, _out, err) = oltpscope(args);
        assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line expected, got: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // valgrind missing: point the tracer at a launcher that does not exist.
    let out = Command::new(env!("CARGO_BIN_EXE_oltpscope"))
        .args(["simulate", "micro", "--keys", "100"])
        .env("OLTPSCOPE_VALGRIND", "/nonexistent/valgrind")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("valgrind"), "{err}");
}

#[test]
fn simulate_reports_misses_by_level_operation_and_component() {
    if tracer::prepare().is_err() {
        common::skip(&tracer::prepare().unwrap_err().to_string());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sim.json");
    let (code, out, err) = oltpscope(&[
        "simulate",
        "tpcb",
        "--engine",
        "serial",
        "--txns",
        "300",
        "--warmup-txns",
        "50",
        "--sweep",
        "l1i=16K,64K",
        "--json",
        json.to_str().unwrap(),
        "--out",
        dir.path().join("results").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The results directory holds the same report and a manifest of the simulation.
    let results = dir.path().join("results");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(r, v);
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m["kind"], "simulate");
    assert_eq!(m["config"]["child_args"], v["child_args"]);
    let sim = &v["simulation"];
    assert_eq!(sim["transactions"], 300, "transactions after warm-up");
    assert!(sim["instructions_per_txn"].as_f64().unwrap() > 100.0);
    assert_eq!(sim["levels"].as_array().unwrap().len(), 4);
    let ops: Vec<&str> = sim["by_operation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["operation"].as_str().unwrap())
        .collect();
    for op in ["update", "insert", "commit"] {
        assert!(ops.contains(&op), "operation {op} missing from {ops:?}");
    }
    assert_eq!(sim["sweep"].as_array().unwrap().len(), 2);
}

#[test]
fn killed_tpcb_runs_recover_every_acknowledged_commit() {
    // A smoke run of the harness (`crashtest_engines.rs` covers each engine and kit);
    // the soak is the command itself with `--trials 1000` (README, "Soaks").
    let (code, out, err) = oltpscope(&[
        "crashtest",
        "--engine",
        "disk",
        "--trials",
        "6",
        "--max-kill-ms",
        "300",
        "--seed",
        "7",
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("all 6 crash trials passed"), "{out}");
    assert_eq!(out.matches(": ok").count(), 6, "{out}");
}

#[test]
fn crashtest_refuses_an_engine_without_recovery() {
    // Only the durable engines are offered: the parser refuses the others, one line.
    let (code, _, err) = oltpscope(&["crashtest", "--engine", "serial"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("possible values: disk, memory, mvcc, partitioned"),
        "{err}"
    );
}

#[test]
fn disk_database_reopens_with_no_load_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let base = ["--engine", "disk", "--db", db, "--scale", "1"];
    let mut run = vec![
        "run",
        "tpcb",
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--log",
        "async",
    ];
    run.extend(base);
    let (code, out, err) = oltpscope(&run);
    assert_eq!(code, 0, "{out}{err}");
    // Loading again into a database that has data is refused; --no-load runs on it.
    let (code, _, err) = oltpscope(&run);
    assert_eq!(code, 2, "{err}");
    run.push("--no-load");
    let (code, out, err) = oltpscope(&run);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("history rows counted"), "{out}");
    let mut check = vec!["check", "tpcb"];
    check.extend(base);
    let (code, out, err) = oltpscope(&check);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("all passed"), "{out}");
    // Checked as a bigger database: refused as another scale (issue 43), not a failed check.
    let (code, _, err) = oltpscope(&[
        "check", "tpcb", "--engine", "disk", "--db", db, "--scale", "2",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--scale 2"), "{err}");
    // A different schema (padded rows) is refused with one line.
    let (code, _, err) = oltpscope(&["check", "tpcb", "--engine", "disk", "--db", db, "--pad"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn damaged_disk_files_are_detected_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbs = db.to_str().unwrap();
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--db",
        dbs,
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--log",
        "async",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // A torn write at the log's end (garbage after the last record) is cut off safely.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(last_segment(&db))
            .unwrap();
        f.write_all(&(0..100u8).map(|i| i.wrapping_mul(37)).collect::<Vec<_>>())
            .unwrap();
    }
    let (code, out, err) = oltpscope(&["check", "tpcb", "--engine", "disk", "--db", dbs]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("all passed"), "{out}");
    // A flipped byte in a data page is reported with one line and exit code 2.
    flip(&db.join("data.db"), 8192 * 7 + 300);
    let (code, _, err) = oltpscope(&["check", "tpcb", "--engine", "disk", "--db", dbs]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("damaged"), "{err}");
}

#[test]
fn clap_errors_keep_their_hints_on_one_line() {
    let (code, _, err) = oltpscope(&["run", "tpcc", "--thread", "2"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("'--threads'"),
        "the similar argument is lost: {err}"
    );
    let (code, _, err) = oltpscope(&["run", "tpcc", "--engine", "mem"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("memory, disk, serial"),
        "possible values lost: {err}"
    );
    let (_, _, err) = oltpscope(&["run"]);
    assert!(
        err.contains("micro, tpcb, tpcc, tpce, tpch or chbench"),
        "{err}"
    );
    let (_, _, err) = oltpscope(&["simulate"]);
    assert!(
        err.contains("micro, tpcb, tpcc, tpce, tpch or chbench"),
        "{err}"
    );
    let (_, _, err) = oltpscope(&["steps", "place"]);
    assert!(err.contains("micro, tpcb, tpcc or tpce"), "{err}");
}

#[test]
fn every_command_and_workload_has_help() {
    for cmd in ["run", "load", "simulate", "check"] {
        for wl in ["micro", "tpcb", "tpcc", "tpce"] {
            let (code, out, err) = oltpscope(&[cmd, wl, "--help"]);
            assert_eq!(code, 0, "{cmd} {wl}: {err}");
            assert!(out.contains("Usage:"), "{cmd} {wl}: {out}");
        }
    }
    for cmd in ["load", "check", "run", "profile"] {
        let (code, out, err) = oltpscope(&[cmd, "tpch", "--help"]);
        assert_eq!(code, 0, "{cmd} tpch: {err}");
        assert!(out.contains("--scale-factor"), "{cmd} tpch: {out}");
    }
    for (cmd, option) in [
        ("load", "--warehouses"),
        ("check", "--warehouses"),
        ("run", "--analytic-streams"),
        ("profile", "--analytic-streams"),
    ] {
        let (code, out, err) = oltpscope(&[cmd, "chbench", "--help"]);
        assert_eq!(code, 0, "{cmd} chbench: {err}");
        assert!(out.contains(option), "{cmd} chbench: {out}");
    }
    for cmd in ["drop", "crashtest"] {
        let (code, _, err) = oltpscope(&[cmd, "--help"]);
        assert_eq!(code, 0, "{cmd}: {err}");
    }
}

#[test]
fn each_command_offers_only_the_options_it_uses() {
    let help = |args: &[&str]| {
        let (code, out, err) = oltpscope(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        out
    };
    let run = help(&["run", "tpcb", "--help"]);
    for o in [
        "--duration",
        "--warmup",
        "--no-load",
        "--bpool-size",
        "--json",
    ] {
        assert!(run.contains(o), "run lacks {o}");
    }
    for o in ["--cpu", "--sweep", "--l1i", "--warmup-txns", "--recover"] {
        assert!(!run.contains(o), "run offers {o}");
    }
    let sim = help(&["simulate", "tpcb", "--help"]);
    // `--db` there is a native load the traced runs copy (`--load-only` makes it).
    for o in [
        "--cpu",
        "--sweep",
        "--txns",
        "--json",
        "--engine",
        "--db",
        "--load-only",
    ] {
        assert!(sim.contains(o), "simulate lacks {o}");
    }
    for o in [
        "--duration",
        "--warmup ",
        "--no-load ",
        "--reload",
        "--recover",
    ] {
        assert!(!sim.contains(o), "simulate offers {o}");
    }
    let check = help(&["check", "tpcc", "--help"]);
    for o in ["--db", "--recover", "--json", "--warehouses"] {
        assert!(check.contains(o), "check lacks {o}");
    }
    for o in [
        "--threads",
        "--duration",
        "--mix",
        "--affinity",
        "--reload",
        "--log ",
    ] {
        assert!(!check.contains(o), "check offers {o}");
    }
    let load = help(&["load", "micro", "--help"]);
    for o in ["--db", "--keys", "--columns", "--reload"] {
        assert!(load.contains(o), "load lacks {o}");
    }
    for o in ["--duration", "--rows", "--mode", "--json", "--no-load"] {
        assert!(!load.contains(o), "load offers {o}");
    }
}

#[test]
fn a_bad_json_path_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // A run of an hour: the refusal must come before it (the test would hang otherwise).
    for bad in [
        dir.path().join("no/such/dir/r.json"),
        dir.path().to_path_buf(),
    ] {
        let (code, _, err) = oltpscope(&[
            "run",
            "micro",
            "--keys",
            "100",
            "--duration",
            "3600",
            "--json",
            bad.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--json"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn json_dash_writes_only_json_to_standard_output() {
    let (code, out, err) = oltpscope(&[
        "run", "micro", "--keys", "1000", "--txns", "200", "--warmup", "0", "--json", "-",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is one JSON document");
    assert_eq!(v["workload"], "micro");
    assert!(
        err.contains("consistency checks: all passed"),
        "text goes to stderr: {err}"
    );
}

#[test]
fn txns_follow_a_warm_up_and_a_short_run_says_it_is_short() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, out, err) = oltpscope(&[
        "run",
        "micro",
        "--keys",
        "1000",
        "--threads",
        "2",
        "--txns",
        "301",
        "--warmup",
        "0.2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Exactly the measured transactions asked for, after the warm-up.
    let done = v["committed"].as_u64().unwrap() + v["user_aborts"].as_u64().unwrap();
    assert_eq!(done, 301, "{v}");
    assert_eq!(v["warmup_s"].as_f64(), Some(0.2));
    assert!(v["duration_s"].as_f64().unwrap() > 0.0);
    assert!(!out.contains("0.0 s measured"), "{out}");
    assert!(out.contains("ms measured after 200 ms warm-up"), "{out}");
    assert!(out.contains("a run under"), "{out}");
    assert!(!out.contains("workers on CPU"), "{out}");
}

/// Load, check, run --no-load and drop a database of each durable engine, naming the
/// engine only at the load: the directory says which engine made it.
#[test]
fn load_check_run_and_drop_need_no_engine_after_the_load() {
    for engine in ["disk", "memory", "mvcc", "partitioned"] {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("db");
        let dbs = db.to_str().unwrap();
        let (code, out, err) = oltpscope(&["load", "tpcb", "--engine", engine, "--db", dbs]);
        assert_eq!(code, 0, "{engine}: {out}{err}");
        assert!(out.contains(&format!("the {engine} engine")), "{out}");
        // Loading again is refused; the other engine is refused by name.
        let (code, _, err) = oltpscope(&["load", "tpcb", "--db", dbs]);
        assert_eq!(code, 2, "{engine}: {err}");
        let other = if engine == "disk" { "memory" } else { "disk" };
        let (code, _, err) = oltpscope(&["check", "tpcb", "--engine", other, "--db", dbs]);
        assert_eq!(code, 2, "{engine}: {err}");
        let a = if engine == "mvcc" { "an" } else { "a" };
        assert!(
            err.contains(&format!("holds {a} {engine}-engine database")),
            "{err}"
        );
        let json = t.path().join("check.json");
        let (code, out, err) = oltpscope(&[
            "check",
            "tpcb",
            "--db",
            dbs,
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{engine}: {out}{err}");
        assert!(
            out.contains(&format!("tpcb on {engine}: consistency checks all passed")),
            "{out}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["checks"]["passed"], true);
        assert_eq!(v["engine"], engine);
        let (code, out, err) = oltpscope(&[
            "run",
            "tpcb",
            "--db",
            dbs,
            "--no-load",
            "--log",
            "async",
            "--txns",
            "50",
            "--warmup",
            "0",
        ]);
        assert_eq!(code, 0, "{engine}: {out}{err}");
        assert!(out.contains(&format!("tpcb on {engine} engine")), "{out}");
        // drop refuses a directory holding anything else, and removes nothing then.
        let stray = db.join("notes.txt");
        std::fs::write(&stray, "mine").unwrap();
        let before = std::fs::read_dir(&db).unwrap().count();
        let (code, _, err) = oltpscope(&["drop", "--db", dbs]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("notes.txt"), "{err}");
        assert_eq!(std::fs::read_dir(&db).unwrap().count(), before);
        std::fs::remove_file(&stray).unwrap();
        let (code, out, err) = oltpscope(&["drop", "--db", dbs]);
        assert_eq!(code, 0, "{engine}: {out}{err}");
        assert!(!db.exists(), "{engine}: the directory is still there");
        let (code, _, err) = oltpscope(&["drop", "--db", dbs]);
        assert_eq!(code, 2, "{err}");
    }
    // A directory that no engine made is refused.
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("precious"), "data").unwrap();
    let (code, _, err) = oltpscope(&["drop", "--db", t.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(t.path().join("precious").exists());
}

#[test]
fn tpcc_report_counts_rollbacks_in_tpmc_and_names_its_modes() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcc",
        "--txns",
        "1000",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let no = &v["per_txn"][0];
    assert_eq!(no["name"], "new-order");
    let done = no["committed"].as_u64().unwrap() + no["user_aborts"].as_u64().unwrap();
    let tpmc = v["tpmc"].as_f64().unwrap();
    let expect = done as f64 * 60.0 / v["duration_s"].as_f64().unwrap();
    assert!(
        (tpmc - expect).abs() <= 1e-6 * expect,
        "tpmC {tpmc} vs {expect}"
    );
    // 1000 transactions of one worker are ten whole decks: the mix is exact.
    let per: Vec<u64> = v["per_txn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["committed"].as_u64().unwrap() + t["user_aborts"].as_u64().unwrap())
        .collect();
    assert_eq!(per, [450, 430, 40, 40, 40]);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes[0].contains("drawn uniformly per transaction"),
        "{notes:?}"
    );
    assert!(!notes.iter().any(|n| n.contains("missed")), "{notes:?}");
    assert!(
        notes.iter().any(|n| n.contains("of 400 districts")),
        "{notes:?}"
    );
    assert!(v["counters"]["delivery_skipped_districts"].is_u64());
    assert_eq!(v["config"]["workload"]["affinity"], false);
    assert!(out.contains("home warehouse: drawn uniformly"), "{out}");
}

#[test]
fn progress_lines_go_to_a_file_labelled_with_the_last_second_and_separators() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("progress.txt");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "serial",
        "--duration",
        "1.3",
        "--warmup",
        "1",
        "--progress-file",
        p.to_str().unwrap(),
        "--report-interval",
        "0",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    assert!(
        lines[0].contains("warm-up"),
        "the first second is warm-up: {text}"
    );
    assert!(lines[1..].iter().all(|l| l.contains("measure")), "{text}");
    // The run ends 2.3 s in: its last part has a line of its own.
    let last = lines.last().unwrap().trim_start_matches('[').trim_start();
    assert!(last.starts_with("2.") && !last.starts_with("2.0"), "{text}");
    assert!(text.contains(','), "counts have separators: {text}");
    // Not a terminal, and no plain lines asked for: nothing on stderr.
    assert!(!err.contains("txn/s"), "{err}");
}

#[test]
fn an_open_loop_run_offers_its_rate_and_no_more() {
    for arrivals in ["regular", "poisson"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let (code, out, err) = oltpscope(&[
            "run",
            "tpcb",
            "--engine",
            "serial",
            "--threads",
            "2",
            "--rate",
            "200",
            "--arrivals",
            arrivals,
            "--duration",
            "1.5",
            "--warmup",
            "0",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("open loop: offered 200 txn/s"), "{out}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["open_loop"]["tps"], 200.0);
        assert_eq!(v["open_loop"]["poisson"], arrivals == "poisson");
        let done = v["committed"].as_u64().unwrap();
        let offered = 200.0 * v["duration_s"].as_f64().unwrap();
        // Regular arrivals never run ahead of the schedule (one due at each worker's
        // start); Poisson ones only by chance (6 standard deviations here). Far fewer
        // would mean the arrivals were not generated at all.
        let slack = if arrivals == "regular" {
            2.0
        } else {
            6.0 * offered.sqrt()
        };
        assert!(
            done as f64 <= offered + slack,
            "{done} done, {offered} offered"
        );
        assert!(
            done as f64 >= offered / 2.0,
            "{done} done, {offered} offered"
        );
    }
}

#[test]
fn terminal_times_pace_a_tpcc_run_and_its_end_is_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let t0 = std::time::Instant::now();
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcc",
        "--terminal-times",
        "--mix",
        "new-order=100",
        "--threads",
        "2",
        "--duration",
        "1.5",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // New-Order's keying time is 18 s: no terminal finishes a transaction in 1.5 s.
    let done = v["committed"].as_u64().unwrap() + v["user_aborts"].as_u64().unwrap();
    assert_eq!(done, 0, "{out}");
    // The end does not wait for the workers' keying times: a run that waited for them
    // would take 18 s plus the load.
    assert!(t0.elapsed().as_secs_f64() < 17.5, "{:?}", t0.elapsed());
    assert_eq!(v["config"]["workload"]["terminal_times"], true);
    assert!(
        out.contains("terminal times: each worker is one terminal"),
        "{out}"
    );
}

/// TPC-E across processes on the disk engine: a run leaves pending orders, the next
/// run's Trade-Cleanup cancels them, and `check tpce` passes after each.
#[test]
fn tpce_runs_on_a_loaded_database_and_the_next_run_cleans_up() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let dbs = db.to_str().unwrap();
    let (code, out, err) = oltpscope(&["load", "tpce", "--engine", "disk", "--db", dbs]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("loaded tpce (1,477,987 rows)"), "{out}");
    // Orders only: limit orders stay pending in TRADE_REQUEST at the end.
    let run = |extra: &[&str]| {
        let mut a = vec!["run", "tpce", "--db", dbs, "--no-load", "--txns", "400"];
        a.extend_from_slice(extra);
        let (code, out, err) = oltpscope(&a);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("consistency checks: all passed"), "{out}");
        out
    };
    let first = run(&["--mix", "trade-order=100"]);
    assert!(!first.contains("trade-cleanup canceled"), "{first}");
    let second = run(&[]);
    assert!(second.contains("trade-cleanup canceled"), "{second}");
    let (code, out, err) = oltpscope(&["check", "tpce", "--db", dbs]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("tpce on disk: consistency checks all passed"),
        "{out}"
    );
}

/// `--mem-reserve` and `--no-prefetch-hints`: the memory engine runs with its reserve
/// and without TPC-C's hints, the report records both, and the consistency checks pass
/// on memory that came from the reserve.
#[test]
fn memory_engine_runs_on_its_reserve_without_hints() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcc",
        "--engine",
        "memory",
        "--mem-reserve",
        "64MB",
        "--no-prefetch-hints",
        "--txns",
        "2000",
        "--warmup",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("consistency checks: all passed"), "{out}");
    assert!(out.contains("prefetch hints: ignored"), "{out}");
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(
        text.contains("\"reserve_bytes\": 67108864"),
        "reserve not in the report"
    );
    assert!(
        text.contains("\"ignore_hints\": true"),
        "hints' setting not in the report"
    );
}
