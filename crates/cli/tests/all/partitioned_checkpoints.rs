//! The partitioned engine's checkpoints through the command line: a run (updates of the
//! micro-benchmark's 20,000 rows, a snapshot of under 1 MB) with a small
//! `--checkpoint-log` takes checkpoints (the report's engine statistics count them),
//! frees the log before the newest snapshot's position (its allocated size shrinks
//! below its length), `check` passes; a log cut before the snapshot's position is
//! refused in one line with exit code 2 and every file left as it was; the option is
//! refused on an engine without checkpoints.

use crate::common;
use common::{cut, oltpscope, snapshot};

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The micro-benchmark's rows.
const KEYS: &str = "20000";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The log position a format-2 snapshot covers: its end chunk's last two words.
fn snapshot_position(db: &Path) -> (u64, u64) {
    let b = std::fs::read(db.join("partitioned.snap")).unwrap();
    let n = b.len();
    let le = |x: &[u8]| u64::from_le_bytes(x.try_into().unwrap());
    (le(&b[n - 16..n - 8]), le(&b[n - 8..]))
}

/// Update-only runs on the partitioned engine's database `db` (loaded by the first)
/// until two checkpoints at least are written; each report's log statistics checked.
fn run_until_two_checkpoints(db: &std::path::Path, json: &std::path::Path) {
    // Two checkpoints at least. Each writes the whole database (0.7 MB): 50 ms alone,
    // 16 checkpoints in a 2 s run (2026-11-30). The writer runs at the lowest CPU
    // priority, so in a loaded suite a run may end before it finishes one (CI, 0 in
    // 2 s): the database is then continued (`--no-load`) for up to five more runs.
    let mut checkpoints = 0;
    let mut last = serde_json::Value::Null;
    for attempt in 0..6 {
        let mut args = vec![
            "run",
            "micro",
            "--mode",
            "update",
            "--keys",
            KEYS,
            "--engine",
            "partitioned",
            "--db",
            s(db),
            "--log",
            "async",
            "--threads",
            "2",
            "--duration",
            "2",
            "--warmup",
            "0",
            "--checkpoint-log",
            "64KB",
            "--json",
            s(json),
        ];
        if attempt > 0 {
            args.push("--no-load");
        }
        let (code, out, err) = oltpscope(&args);
        assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
        assert!(out.contains("consistency checks: all passed"), "{out}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
        let log = report["engine_stats"]["log"].clone();
        assert!(log["checkpoint_error"].is_null(), "{log}");
        assert!(log["punch_hole"].is_null(), "ext4 punches holes: {log}");
        checkpoints += log["checkpoints"].as_u64().unwrap();
        if !log["last_checkpoint"].is_null() {
            last = log;
        }
        if checkpoints >= 2 && !last.is_null() {
            break;
        }
    }
    assert!(
        checkpoints >= 2,
        "{checkpoints} checkpoints in six runs: {last}"
    );
    let pause = last["last_checkpoint"]["pause_us"].as_u64().unwrap();
    assert!(pause > 0, "{last}");
}

#[test]
fn a_run_checkpoints_frees_its_log_and_a_log_cut_behind_the_snapshot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let json = dir.path().join("report.json");
    run_until_two_checkpoints(&db, &json);

    // The log before the snapshot's position is freed: no data between its first page
    // and the page holding the position (`SEEK_DATA` from the first page finds none
    // before it), and it takes less disk than its length. (Counting allocated blocks
    // against the freed range was off by whatever ext4 keeps preallocated past the end
    // of a growing file: 2 KB too many once in a full suite run.)
    let lp = db.join("partitioned.log");
    let meta = std::fs::metadata(&lp).unwrap();
    let (offset, commands) = snapshot_position(&db);
    assert!(commands > 0 && offset > 8192, "({offset}, {commands})");
    assert!(offset <= meta.len());
    let f = std::fs::File::open(&lp).unwrap();
    // SAFETY: lseek on a descriptor this function owns; no memory is passed.
    let data = unsafe { libc::lseek(std::os::fd::AsRawFd::as_raw_fd(&f), 4096, libc::SEEK_DATA) };
    assert!(
        data >= 0 && data as u64 >= offset / 4096 * 4096,
        "the first data after the first page is at {data}, the log is freed up to {offset}"
    );
    let allocated = meta.blocks() * 512;
    assert!(
        allocated < meta.len(),
        "allocated {allocated} of {} bytes, freed up to {offset}",
        meta.len()
    );

    let (code, out, err) = oltpscope(&["check", "micro", "--keys", KEYS, "--db", s(&db)]);
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("consistency checks all passed"), "{out}");

    // Cut before the snapshot's position: refused by `check` and by `run --no-load`,
    // one line, exit 2, files unchanged.
    cut(&lp, offset - 1);
    let before = snapshot(&db);
    for args in [
        vec!["check", "micro", "--keys", KEYS, "--db", s(&db)],
        vec![
            "run",
            "micro",
            "--keys",
            KEYS,
            "--db",
            s(&db),
            "--no-load",
            "--log",
            "async",
            "--txns",
            "10",
        ],
    ] {
        let (code, out, err) = oltpscope(&args);
        assert_eq!(code, 2, "{args:?}: stdout: {out}\nstderr: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.starts_with("error:")
                && err.contains("snapshot's commands end")
                && err.contains("refused"),
            "{err}"
        );
        assert_eq!(snapshot(&db), before, "{args:?} changed a file");
    }
}

#[test]
fn checkpoint_log_is_refused_on_an_engine_without_checkpoints() {
    let (code, _, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--txns",
        "10",
        "--checkpoint-log",
        "1MB",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--checkpoint-log is an option of the memory, mvcc and partitioned engines"),
        "{err}"
    );
}
