//! The memory engine recovers from its log through the command line: a run killed with
//! SIGKILL keeps every acknowledged commit (`check --engine memory --log-dir`); `run
//! --no-load` continues from the log; a reused log directory, a damaged log, a killed
//! load and a missing log are refused with one line and exit code 2 and the files are
//! left as they were; a torn tail is cut; a killed run's temporary log directory is
//! removed by the next run.

use crate::common;
use common::oltpscope;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_oltpscope");
const LOG: &str = "memory.log";

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

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn spawn(args: &[&str], env: &[(&str, &Path)]) -> Child {
    let mut c = Command::new(BIN);
    c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("start oltpscope")
}

fn wait_for(what: &str, child: &mut Child, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the run ended ({st}) before {what}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no {what} within 120 s"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Cut the acknowledgement file after its last whole line (the run may die mid-line).
fn cut_torn_line(p: &Path) {
    let mut b = std::fs::read(p).unwrap();
    let keep = b.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
    b.truncate(keep);
    std::fs::write(p, b).unwrap();
}

/// A short `run tpcb` with sync logging into `dir` (plus `extra`).
fn run_tpcb(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec![
        "run",
        "tpcb",
        "--engine",
        "memory",
        "--log",
        "sync",
        "--log-dir",
        s(dir),
        "--duration",
        "0.3",
        "--warmup",
        "0",
    ];
    a.extend(extra);
    oltpscope(&a)
}

fn check_tpcb(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec!["check", "tpcb", "--engine", "memory", "--log-dir", s(dir)];
    a.extend(extra);
    oltpscope(&a)
}

/// The number in "history rows counted: N history rows" of a check.
fn history_rows(out: &str) -> u64 {
    let l = out
        .lines()
        .find(|l| l.contains("history rows counted"))
        .unwrap_or_else(|| panic!("no history count in: {out}"));
    l.split(": ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_killed_run_keeps_every_acknowledged_commit() {
    let t = tempfile::tempdir().unwrap();
    let (dir, acked) = (t.path().join("log"), t.path().join("acked"));
    let mut child = spawn(
        &[
            "run",
            "tpcb",
            "--engine",
            "memory",
            "--log",
            "sync",
            "--log-dir",
            s(&dir),
            "--threads",
            "2",
            "--duration",
            "3600",
            "--warmup",
            "0",
            "--no-check",
            "--acked-file",
            s(&acked),
        ],
        &[],
    );
    wait_for("200 acknowledged commits", &mut child, || {
        std::fs::read_to_string(&acked).is_ok_and(|t| t.lines().count() >= 200)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    cut_torn_line(&acked);
    let n = std::fs::read_to_string(&acked).unwrap().lines().count();
    let (code, out, err) = check_tpcb(&dir, &["--acked-file", s(&acked)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("all passed"), "{out}");
    assert!(
        out.contains(&format!(
            "[ok] acknowledged commits durable, nothing else: {n} acknowledged commits: 0 missing"
        )),
        "{out}"
    );
}

#[test]
fn run_no_load_continues_from_the_log_and_a_reused_dir_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("log");
    let (code, out, err) = run_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let first = history_rows(&check_tpcb(&dir, &[]).1);
    assert!(first > 0);
    let log = std::fs::read(dir.join(LOG)).unwrap();
    // Running (loading) again on it is refused, naming both ways out; nothing changes.
    let err = refused(run_tpcb(&dir, &[]));
    assert!(
        err.contains("--no-load") && err.contains("--reload"),
        "{err}"
    );
    assert!(
        std::fs::read(dir.join(LOG)).unwrap() == log,
        "a refused run changed the log"
    );
    // --no-load continues: the history grows, the checks pass.
    let (code, out, err) = run_tpcb(&dir, &["--no-load"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("consistency checks: all passed"), "{out}");
    let (code, out, _) = check_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}");
    let second = history_rows(&out);
    assert!(second > first, "{first} then {second}");
    // --reload starts over with a new log (a new database id): the history then holds
    // exactly the new run's transactions (a count, not a duration: no timing involved).
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "memory",
        "--log",
        "sync",
        "--log-dir",
        s(&dir),
        "--warmup",
        "0",
        "--txns",
        "20",
        "--reload",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let fresh = std::fs::read(dir.join(LOG)).unwrap();
    assert_ne!(fresh[16..24], log[16..24], "--reload kept the old log");
    assert_eq!(
        history_rows(&check_tpcb(&dir, &[]).1),
        20,
        "second run had {second}"
    );
    // --log off on a directory holding a log would not log the run's changes.
    let err = refused(oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "memory",
        "--log-dir",
        s(&dir),
        "--no-load",
        "--log",
        "off",
        "--duration",
        "0.1",
    ]));
    assert!(err.contains("--log sync"), "{err}");
}

#[test]
fn damage_in_the_middle_of_the_log_is_refused_and_the_file_left_unchanged() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("log");
    let (code, out, err) = run_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let path = dir.join(LOG);
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte inside the first block (header 32 bytes, block header 32): the load's
    // blocks and the run's follow it.
    bytes[32 + 32 + 100] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    for r in [check_tpcb(&dir, &[]), run_tpcb(&dir, &["--no-load"])] {
        let err = refused(r);
        assert!(
            err.contains("damaged at byte 32") && err.contains(s(&path)) && err.contains("refused"),
            "{err}"
        );
        assert!(
            std::fs::read(&path).unwrap() == bytes,
            "the damaged log was changed"
        );
    }
    // A damaged header, a foreign file: refused too.
    let mut b = bytes.clone();
    b[20] ^= 1;
    std::fs::write(&path, &b).unwrap();
    assert!(refused(check_tpcb(&dir, &[])).contains("header checksum"));
    std::fs::write(&path, b"not a log").unwrap();
    assert!(refused(check_tpcb(&dir, &[])).contains("not a memory-engine log"));
    assert!(refused(run_tpcb(&dir, &["--reload"])).contains("refuses to remove"));
    assert_eq!(std::fs::read(&path).unwrap(), b"not a log");
}

#[test]
fn a_torn_tail_is_cut_and_the_log_recovered() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("log");
    let (code, out, err) = run_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let path = dir.join(LOG);
    let good = len(&path);
    let rows = history_rows(&check_tpcb(&dir, &[]).1);
    // The start of a block whose write was cut short: magic, a length beyond the end.
    let mut tail = 0x4B4C_424Du32.to_le_bytes().to_vec();
    tail.extend_from_slice(&4096u32.to_le_bytes());
    tail.extend_from_slice(&[0xAB; 50]);
    let mut f = std::fs::read(&path).unwrap();
    f.extend_from_slice(&tail);
    std::fs::write(&path, &f).unwrap();
    // check only reads: the torn tail is ignored, the file untouched.
    let (code, out, err) = check_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(history_rows(&out), rows);
    assert!(std::fs::read(&path).unwrap() == f, "check changed the log");
    // A run cuts it, appends a restart block right there, and continues.
    let (code, out, err) = run_tpcb(&dir, &["--no-load"]);
    assert_eq!(code, 0, "{out}{err}");
    let now = std::fs::read(&path).unwrap();
    assert!(now[..good as usize] == f[..good as usize]);
    assert_eq!(
        now[good as usize..good as usize + 4],
        0x4B4C_424Du32.to_le_bytes()
    );
    assert_ne!(
        now[good as usize + 4..good as usize + 8],
        4096u32.to_le_bytes()
    );
    let (code, out, _) = check_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(history_rows(&out) > rows);
}

#[test]
fn a_killed_load_is_reported_as_unfinished() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("log");
    let mut child = spawn(
        &[
            "run",
            "tpcb",
            "--engine",
            "memory",
            "--log",
            "sync",
            "--log-dir",
            s(&dir),
            "--scale",
            "20",
            "--duration",
            "3600",
        ],
        &[],
    );
    wait_for("the load to start writing", &mut child, || {
        len(&dir.join(LOG)) > 1 << 20
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !dir.join("memory.loaded").exists(),
        "the load finished before the kill"
    );
    let log = std::fs::read(dir.join(LOG)).unwrap();
    for r in [
        oltpscope(&[
            "check",
            "tpcb",
            "--engine",
            "memory",
            "--log-dir",
            s(&dir),
            "--scale",
            "20",
        ]),
        run_tpcb(&dir, &["--scale", "20"]),
        run_tpcb(&dir, &["--scale", "20", "--no-load"]),
    ] {
        let err = refused(r);
        assert!(
            err.contains("the load did not finish") && err.contains("--reload"),
            "{err}"
        );
    }
    assert!(
        std::fs::read(dir.join(LOG)).unwrap() == log,
        "a refused run changed the log"
    );
    let (code, out, err) = run_tpcb(&dir, &["--reload"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn check_needs_a_log_and_never_creates_one() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("nothing");
    assert!(refused(check_tpcb(&dir, &[])).contains("no memory-engine log"));
    assert!(!dir.exists(), "check created the log directory");
    assert!(refused(oltpscope(&["check", "tpcb", "--engine", "memory"])).contains("--log-dir"));
    assert!(refused(check_tpcb(&dir, &["--reload"])).contains("--reload"));
    // The load marker without its log: the log is missing, refused.
    let (code, out, err) = run_tpcb(&dir, &[]);
    assert_eq!(code, 0, "{out}{err}");
    std::fs::remove_file(dir.join(LOG)).unwrap();
    for r in [
        check_tpcb(&dir, &[]),
        run_tpcb(&dir, &["--no-load"]),
        run_tpcb(&dir, &[]),
    ] {
        assert!(refused(r).contains("missing"));
    }
}

fn temp_logs(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("oltpscope-memory-"))
        })
        .collect()
}

#[test]
fn a_killed_runs_temporary_log_is_removed_by_the_next_run() {
    let t = tempfile::tempdir().unwrap();
    let tmp = t.path();
    let mut child = spawn(
        &[
            "run",
            "tpcb",
            "--engine",
            "memory",
            "--log",
            "sync",
            "--duration",
            "3600",
        ],
        &[("TMPDIR", tmp)],
    );
    wait_for("a temporary log", &mut child, || {
        temp_logs(tmp).iter().any(|d| len(&d.join(LOG)) > 0)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        temp_logs(tmp).len(),
        1,
        "the killed run's log directory is there"
    );
    let out = Command::new(BIN)
        .args([
            "run",
            "tpcb",
            "--engine",
            "memory",
            "--log",
            "async",
            "--duration",
            "0.1",
        ])
        .args(["--warmup", "0"])
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        temp_logs(tmp).is_empty(),
        "left behind: {:?}",
        temp_logs(tmp)
    );
}
