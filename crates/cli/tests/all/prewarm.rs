//! The disk engine's `--prewarm`: a run on an existing database reads its pages into the
//! buffer pool first; a damaged page found there is refused with one line and exit code
//! 2; the flag is the disk engine's, and `run`'s alone.

use crate::common::{flip, oltpscope};

#[test]
fn prewarm_reads_the_database_and_refuses_a_damaged_page() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let dbs = db.to_str().unwrap();
    let (code, out, err) = oltpscope(&["load", "tpcb", "--engine", "disk", "--db", dbs]);
    assert_eq!(code, 0, "{out}{err}");
    let run = [
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--db",
        dbs,
        "--no-load",
        "--prewarm",
        "--txns",
        "200",
        "--warmup",
        "0",
    ];
    let (code, out, err) = oltpscope(&run);
    assert_eq!(code, 0, "{out}{err}");
    // The prewarm reads every page before the first transaction, so it is what finds
    // a damaged one (the message says so), wherever it is.
    let data = db.join("data.db");
    let pages = std::fs::metadata(&data).unwrap().len() / 8192;
    assert!(pages > 10, "{pages} pages");
    flip(&data, pages / 2 * 8192 + 500);
    let (code, _, err) = oltpscope(&run);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("prewarm") && err.contains("damaged"), "{err}");
}

#[test]
fn prewarm_is_the_disk_engines_and_runs() {
    for args in [
        &[
            "run",
            "tpcb",
            "--engine",
            "memory",
            "--prewarm",
            "--txns",
            "10",
        ][..],
        &[
            "simulate",
            "tpcb",
            "--engine",
            "disk",
            "--prewarm",
            "--txns",
            "10",
        ][..],
    ] {
        let (code, _, err) = oltpscope(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--prewarm"), "{err}");
    }
}
