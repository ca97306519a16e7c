//! The partitioned engine keeps a database through the command line: `run --db --log
//! async` loads it (snapshot and command log), `run --no-load` (the engine found from
//! the directory's files) replays the log and continues, `check` recovers it
//! read-only, `drop` removes it; what it refuses (`--db` with `--log off`, another
//! engine's directory, a damaged log) is one line and exit code 2 with the files left
//! as they were.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use crate::common;
use common::oltpscope;

use std::path::Path;

/// Exit code 2 and exactly one `error:` line, no panic.
fn refused(r: (i32, String, String)) -> String {
    let (code, out, err) = r;
    assert_eq!(code, 2, "stdout: {out}\nstderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(
        err.starts_with("error:") && !err.contains("panicked"),
        "{err}"
    );
    err
}

fn ok(r: (i32, String, String)) -> String {
    let (code, out, err) = r;
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_partitioned_database_is_loaded_continued_checked_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let d = s(&db);
    let err = refused(oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "partitioned",
        "--db",
        d,
        "--log",
        "off",
        "--txns",
        "10",
    ]));
    assert!(err.contains("--log async or --log sync"), "{err}");
    assert!(!db.exists(), "a refused run created the directory");
    let out = ok(oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "partitioned",
        "--db",
        d,
        "--log",
        "async",
        "--txns",
        "300",
        "--warmup",
        "0",
        "--threads",
        "2",
    ]));
    assert!(out.contains("consistency checks: all passed"), "{out}");
    assert!(db.join("partitioned.log").exists() && db.join("partitioned.snap").exists());
    // The directory names its engine: no --engine needed; the log is replayed first.
    let out = ok(oltpscope(&[
        "run",
        "tpcb",
        "--db",
        d,
        "--log",
        "sync",
        "--txns",
        "200",
        "--warmup",
        "0",
        "--no-load",
    ]));
    assert!(out.contains("tpcb on partitioned engine"), "{out}");
    assert!(out.contains("consistency checks: all passed"), "{out}");
    let out = ok(oltpscope(&["check", "tpcb", "--db", d]));
    assert!(
        out.contains("tpcb on partitioned: consistency checks all passed"),
        "{out}"
    );
    // History rows of both runs are there (tpcb's check counts them).
    assert!(out.contains("500 history rows"), "{out}");
    let err = refused(oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "mvcc",
        "--db",
        d,
        "--log",
        "async",
        "--no-load",
    ]));
    assert!(err.contains("holds a partitioned-engine database"), "{err}");
    // Another workload's database: refused before any row is read.
    let err = refused(oltpscope(&["check", "tpcc", "--db", d]));
    assert!(err.contains("another workload"), "{err}");
    // Damage in the middle of the log: refused, the file left as it is.
    let log = db.join("partitioned.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[32 + 24 + 5] ^= 0x40;
    std::fs::write(&log, &bytes).unwrap();
    for args in [
        &["check", "tpcb", "--db", d][..],
        &[
            "run",
            "tpcb",
            "--db",
            d,
            "--log",
            "async",
            "--no-load",
            "--txns",
            "10",
        ][..],
    ] {
        let err = refused(oltpscope(args));
        assert!(err.contains("is damaged at byte 32"), "{err}");
        assert!(
            std::fs::read(&log).unwrap() == bytes,
            "a refused log was changed"
        );
    }
    let out = ok(oltpscope(&["drop", "--db", d]));
    assert!(
        out.contains("dropped the partitioned-engine database"),
        "{out}"
    );
    assert!(!db.exists());
}
