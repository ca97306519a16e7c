//! `--engine sqlite` (and the external engines' refusals) through the command line: a
//! short run whose checks pass, load / check / run --no-load / drop on a directory
//! recognised by its file, and one-line refusals of what these engines do not do.

use crate::common;
use common::{assert_bad_input, oltpscope};

#[test]
fn sqlite_runs_loads_checks_and_drops() {
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "sqlite",
        "--threads",
        "2",
        "--txns",
        "200",
        "--warmup",
        "0",
        "--sqlite-sync",
        "off",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("consistency checks: all passed"), "{out}");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let (code, out, err) = oltpscope(&["load", "tpcb", "--engine", "sqlite", "--db", db]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("with the sqlite engine"), "{out}");
    // The directory says which engine made it: no --engine needed.
    let (code, out, err) = oltpscope(&["check", "tpcb", "--db", db]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--db",
        db,
        "--no-load",
        "--txns",
        "50",
        "--warmup",
        "0",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("on sqlite engine"), "{out}");
    let (code, out, err) = oltpscope(&["drop", "--db", db]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!std::path::Path::new(db).exists());
}

#[test]
fn external_engines_refuse_what_they_cannot_do() {
    // (`simulate` and `profile` run on them: crates/cli/tests/all/real_systems.rs.)
    for args in [
        &["run", "tpcb", "--engine", "sqlite", "--log", "async"][..],
        &["run", "tpcb", "--engine", "sqlite", "--bpool-size", "64MB"],
        &["run", "tpcb", "--engine", "sqlite", "--coroutines", "4"],
        &["run", "tpcb", "--engine", "memory", "--sqlite-sync", "off"],
        &[
            "run",
            "tpcb",
            "--engine",
            "memory",
            "--isolation",
            "serializable",
        ],
        &["run", "tpcb", "--engine", "sqlite", "--pg-url", "host=/tmp"],
        // (`--db` keeps a private server's cluster: crates/engine-postgres/tests/all/kept.rs.)
        &[
            "run",
            "tpcb",
            "--engine",
            "postgres",
            "--db",
            "/tmp/x",
            "--log-dir",
            "/tmp/y",
        ],
        &["crashtest", "--engine", "sqlite", "--workload", "tpcb"],
    ] {
        assert_bad_input(args);
    }
}
