//! `load tpch`, `check tpch` and `run tpch` through the command line on every engine
//! that keeps a database (the serial engine keeps none: its load and check are the
//! `workloads` crate's tests): the checks pass on the loaded data, a run of two queries
//! (the power test with its refresh functions and a throughput test of one stream and
//! one refresh pair) reports them and leaves a database the checks pass on, another
//! scale factor is refused as a setting (exit 2), and the database drops. (PostgreSQL keeps no database between
//! commands: its load and check are `engine_postgres`'s tests.)

use crate::common::oltpscope;

fn load_check_drop(engine: &str) {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let db = db.to_str().unwrap();
    let sf = ["--scale-factor", "0.01"];
    let (code, out, err) = oltpscope(
        &[
            &[
                "load",
                "tpch",
                "--engine",
                engine,
                "--db",
                db,
                "--threads",
                "2",
            ][..],
            &sf,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{engine}: {out}{err}");
    assert!(out.contains(&format!("with the {engine} engine")), "{out}");
    assert!(out.contains("run it with `oltpscope run tpch"), "{out}");
    let (code, out, err) = oltpscope(&[&["check", "tpch", "--db", db][..], &sf].concat());
    assert_eq!(code, 0, "{engine}: {out}{err}");
    assert!(
        out.contains(&format!("tpch on {engine}: consistency checks all passed")),
        "{out}"
    );
    assert!(out.contains("O_TOTALPRICE"), "{out}");
    // Two queries on the loaded data: the power test in stream 0's order (RF1, 6, 1,
    // RF2), each step's time, the partial figures naming what is missing; then a
    // throughput stream (stream 1's order: 6 before 1) beside a refresh pair.
    let (code, out, err) = oltpscope(
        &[
            &[
                "run",
                "tpch",
                "--db",
                db,
                "--no-load",
                "--queries",
                "1,6",
                "--streams",
                "1",
            ][..],
            &sf,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{engine}: {out}{err}");
    let at = |s: &str| {
        err.find(s)
            .unwrap_or_else(|| panic!("{engine}: no '{s}' in {err}"))
    };
    assert!(at("tpch: RF1 running (1 of 4)") < at("tpch: Q6 running (2 of 4)"));
    assert!(at("tpch: Q6 running (2 of 4)") < at("tpch: Q1 running (3 of 4)"));
    assert!(at("tpch: Q1 running (3 of 4)") < at("tpch: RF2 running (4 of 4)"));
    assert!(
        at("tpch: refresh stream: RF1 running (1 of 2)")
            < at("tpch: refresh stream: RF2 running (2 of 2)")
    );
    assert!(at("tpch: stream 1: Q6 running (1 of 2)") < at("tpch: stream 1: Q1 running (2 of 2)"));
    assert!(
        out.contains("queries run: 2 of 22 (6, 1); refresh functions: RF1 and RF2"),
        "{engine}: {out}"
    );
    assert!(
        out.contains("Power@Size (partial: queries 2, 3, 4, 5, 7,"),
        "{engine}: {out}"
    );
    assert!(out.contains("stream 1: 2 of 2 steps"), "{engine}: {out}");
    assert!(
        out.contains("refresh stream: 2 of 2 steps"),
        "{engine}: {out}"
    );
    assert!(
        out.contains("Throughput@Size (partial: queries 2,"),
        "{engine}: {out}"
    );
    assert!(out.contains("QphH@Size: not computed"), "{engine}: {out}");
    // Q1's four groups (return flag and line status) at its time.
    assert!(
        out.lines()
            .any(|l| l.starts_with("Q1 ") && l.ends_with(" s  4 rows")),
        "{out}"
    );
    // Two refresh pairs later the database checks as before.
    let (code, out, err) = oltpscope(&[&["check", "tpch", "--db", db][..], &sf].concat());
    assert_eq!(code, 0, "{engine}: {out}{err}");
    assert!(out.contains("2 refresh pairs applied"), "{engine}: {out}");
    // Another scale factor is another database: refused, not a failed check.
    let (code, _, err) = oltpscope(&["check", "tpch", "--db", db, "--scale-factor", "0.02"]);
    assert_eq!(code, 2, "{engine}: {err}");
    assert!(err.contains("--scale-factor 0.02"), "{err}");
    let (code, out, err) = oltpscope(&["drop", "--db", db]);
    assert_eq!(code, 0, "{engine}: {out}{err}");
}

#[test]
fn tpch_loads_and_checks_on_every_engine_that_keeps_a_database() {
    for engine in ["memory", "disk", "mvcc", "partitioned", "sqlite"] {
        load_check_drop(engine);
    }
}

#[test]
fn a_tpch_database_too_large_for_memory_is_refused_before_loading() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("db");
    let (code, _, err) = oltpscope(&[
        "load",
        "tpch",
        "--scale-factor",
        "5000",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("needs about"), "{err}");
    assert!(!db.exists(), "a refused load made its directory");
}
