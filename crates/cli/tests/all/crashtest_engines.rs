//! `oltpscope crashtest` on the four durable engines and both workloads: a few kills each,
//! every acknowledged commit found after recovery (0 lost); the full-disk mode on the
//! memory, mvcc and partitioned engines where a tmpfs can be mounted (it says plainly when it cannot).

use std::io::Write;
use std::process::Command;

fn crashtest(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_oltpscope"))
        .arg("crashtest")
        .args(args)
        .output()
        .expect("run oltpscope");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn three_trials_pass(engine: &str, workload: &str) {
    let (code, out, err) = crashtest(&[
        "--engine",
        engine,
        "--workload",
        workload,
        "--trials",
        "3",
        "--max-kill-ms",
        "150",
        "--seed",
        "3",
    ]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("all 3 crash trials passed"), "{out}");
    assert_eq!(out.matches(": ok").count(), 3, "{out}");
    let summary = out
        .lines()
        .find(|l| l.starts_with(&format!("crashtest {workload} on {engine}: 3 trials")))
        .unwrap_or_else(|| panic!("no summary: {out}"));
    assert!(summary.contains(", 0 lost,"), "{summary}");
    let checked: u64 = summary
        .split(" trials, ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap();
    assert!(checked > 0, "no acknowledged commit was checked: {summary}");
    assert!(
        summary.contains("recoveries killed and re-run"),
        "{summary}"
    );
}

#[test]
fn memory_engine_tpcb_crashes_lose_nothing() {
    three_trials_pass("memory", "tpcb");
}

#[test]
fn memory_engine_tpcc_crashes_lose_nothing() {
    three_trials_pass("memory", "tpcc");
}

#[test]
fn disk_engine_tpcb_crashes_lose_nothing() {
    three_trials_pass("disk", "tpcb");
}

#[test]
fn disk_engine_tpcc_crashes_lose_nothing() {
    three_trials_pass("disk", "tpcc");
}

#[test]
fn mvcc_engine_tpcb_crashes_lose_nothing() {
    three_trials_pass("mvcc", "tpcb");
}

#[test]
fn mvcc_engine_tpcc_crashes_lose_nothing() {
    three_trials_pass("mvcc", "tpcc");
}

#[test]
fn partitioned_engine_tpcb_crashes_lose_nothing() {
    three_trials_pass("partitioned", "tpcb");
}

#[test]
fn partitioned_engine_tpcc_crashes_lose_nothing() {
    three_trials_pass("partitioned", "tpcc");
}

#[test]
fn a_full_disk_stops_the_memory_engine_with_one_line_and_loses_nothing() {
    full_disk("memory");
}

#[test]
fn a_full_disk_stops_the_mvcc_engine_with_one_line_and_loses_nothing() {
    full_disk("mvcc");
}

#[test]
fn a_full_disk_stops_the_partitioned_engine_with_one_line_and_loses_nothing() {
    full_disk("partitioned");
}

fn full_disk(engine: &str) {
    let (code, out, err) = crashtest(&[
        "--engine",
        engine,
        "--workload",
        "tpcb",
        "--enospc",
        "--trials",
        "2",
    ]);
    if code == 2 && err.contains("unavailable") {
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        // Straight to standard error: the runner shows it even when the test passes.
        let _ = writeln!(std::io::stderr(), "SKIPPED: {}", err.trim());
        return;
    }
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("all 2 crash trials passed"), "{out}");
    assert!(out.contains(", 0 lost,"), "{out}");
}
