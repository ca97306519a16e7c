//! `load tpch`, `check tpch` and `run tpch` through the command line on every engine
//! that keeps a database (the serial engine keeps none: its load and check are the
//! `workloads` crate's tests): the checks pass on the loaded data, a power run of two
//! queries reports them, another scale factor is refused as a setting (exit 2), and
//! the database drops. (PostgreSQL keeps no database between
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
    // A power run of two queries on the loaded data: stream 0's order (6 before 1),
    // each query's time, the partial power figure naming what is missing.
    let (code, out, err) = oltpscope(
        &[
            &["run", "tpch", "--db", db, "--no-load", "--queries", "1,6"][..],
            &sf,
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{engine}: {out}{err}");
    let (q6, q1) = (
        err.find("tpch: Q6 running (1 of 2)"),
        err.find("tpch: Q1 running (2 of 2)"),
    );
    assert!(q6.is_some() && q1 > q6, "{engine}: {err}");
    assert!(
        out.contains("queries run: 2 of 22 (6, 1)"),
        "{engine}: {out}"
    );
    assert!(
        out.contains("power (partial: queries 2, 3, 4, 5, 7,"),
        "{engine}: {out}"
    );
    // Q1's four groups (return flag and line status) at its time.
    assert!(
        out.lines()
            .any(|l| l.starts_with("Q1 ") && l.ends_with(" s  4 rows")),
        "{out}"
    );
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
