//! The mvcc engine keeps a database through the command line: `run --db --log async`
//! loads it, `run --no-load` (the engine found from the directory's files) continues
//! from the log, `check` recovers it read-only, `drop` removes it; what it still
//! refuses (`--db` with `--log off`, another engine's directory, a damaged log) is one
//! line and exit code 2 with the files left as they were.

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
fn an_mvcc_database_is_loaded_continued_checked_and_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let d = s(&db);
    let err = refused(oltpscope(&[
        "run", "tpcb", "--engine", "mvcc", "--db", d, "--log", "off", "--txns", "10",
    ]));
    assert!(err.contains("--log async or --log sync"), "{err}");
    assert!(!db.exists(), "a refused run created the directory");
    let out = ok(oltpscope(&[
        "run", "tpcb", "--engine", "mvcc", "--db", d, "--log", "async", "--txns", "300",
        "--warmup", "0",
    ]));
    assert!(out.contains("consistency checks: all passed"), "{out}");
    assert!(db.join("mvcc.log").exists() && db.join("mvcc.loaded").exists());
    // The directory names its engine: no --engine needed.
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
    assert!(out.contains("tpcb on mvcc engine"), "{out}");
    let out = ok(oltpscope(&["check", "tpcb", "--db", d]));
    assert!(
        out.contains("tpcb on mvcc: consistency checks all passed"),
        "{out}"
    );
    // History rows of both runs are there (tpcb's check counts them).
    assert!(out.contains("500 history rows"), "{out}");
    let err = refused(oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "memory",
        "--db",
        d,
        "--log",
        "async",
        "--no-load",
    ]));
    assert!(err.contains("holds an mvcc-engine database"), "{err}");
    // Damage in the middle of the log: refused, the file left as it is.
    let log = db.join("mvcc.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[32 + 32 + 5] ^= 0x40;
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
    assert!(out.contains("dropped the mvcc-engine database"), "{out}");
    assert!(!db.exists());
}
