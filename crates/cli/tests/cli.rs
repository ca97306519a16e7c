//! The command line's bad-input cases: each returns exit code 2 with one message line and
//! no backtrace; a good short run succeeds and writes its JSON report.

mod common;
use common::{last_segment, oltpscope};

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
        &["nosuchcommand"],
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
        "0.3",
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
    // Non-terminal output: no live lines, no progress bar.
    assert!(!err.contains("txn/s"), "{err}");
}

#[test]
fn simulate_bad_input_gives_one_line_and_exit_code_2() {
    let cases: &[&[&str]] = &[
        &["simulate", "micro", "--cpu", "nosuchcpu"],
        &["simulate", "micro", "--l1i", "32Q:8:64"],
        &["simulate", "micro", "--l1d", "48K:8:64"],
        &["simulate", "micro", "--l2", "256K:8:48"],
        &["simulate", "micro", "--sweep", "l1i=8K,oops"],
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
        eprintln!("SKIPPED: {}", tracer::prepare().unwrap_err());
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
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
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
fn twenty_killed_tpcb_runs_recover_every_acknowledged_commit() {
    let (code, out, err) = oltpscope(&[
        "crashtest",
        "--engine",
        "disk",
        "--trials",
        "20",
        "--max-kill-ms",
        "300",
        "--seed",
        "7",
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("all 20 crash trials passed"), "{out}");
    assert_eq!(out.matches(": ok").count(), 20, "{out}");
}

#[test]
fn crashtest_refuses_an_engine_without_recovery() {
    let (code, _, err) = oltpscope(&["crashtest", "--engine", "serial"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("durable"), "{err}");
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
    // Checked as a bigger database, rows are missing: the check fails (exit 1).
    let (code, out, _) = oltpscope(&[
        "check", "tpcb", "--engine", "disk", "--db", db, "--scale", "2",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[FAIL] all rows present"), "{out}");
    // A different schema (padded rows) is refused with one line.
    let (code, _, err) = oltpscope(&["check", "tpcb", "--engine", "disk", "--db", db, "--pad"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// Flip one byte of a file at `offset`.
fn flip(path: &std::path::Path, offset: u64) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8];
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.read_exact(&mut b).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&[b[0] ^ 0xff]).unwrap();
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
