//! Helpers for the CLI tests: running oltpscope; for the simulate validation tests,
//! finding valgrind, running cachegrind and parsing its summary, and streaming an
//! oltptrace run of oltpscope into the simulator.
//!
//! Must never: hide a failure. A missing valgrind is the only reason to skip.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The engines whose answers the analytical kits' tests compare with the serial
/// engine's (the oracle): every other built-in design and SQLite, each opened as an
/// `api::Database` (PostgreSQL's adapter has its own test, with its server).
pub fn compared_engines() -> [api::Descriptor; 5] {
    [
        api::Descriptor::of::<engine_sqlite::SqliteEngine>(),
        api::Descriptor::of::<engine_memory::MemoryEngine>(),
        api::Descriptor::of::<engine_mvcc::MvccEngine>(),
        api::Descriptor::of::<engine_partitioned::PartitionedEngine>(),
        api::Descriptor::of::<engine_disk::DiskEngine>(),
    ]
}

/// The serial engine's `open`: the oracle of the answers tests.
pub const ORACLE: api::OpenFn = api::database::open::<engine_serial::SerialEngine>;

/// The oltpscope binary this test build made.
pub const OLTPSCOPE: &str = env!("CARGO_BIN_EXE_oltpscope");

/// Run oltpscope with `args`: (exit code, stdout, stderr). Backtraces are on, so a
/// panic cannot pass for a one-line error.
pub fn oltpscope(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(OLTPSCOPE)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run oltpscope");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Bad input: oltpscope with `args` exits with 2 and one `error:` line, no panic.
pub fn assert_bad_input(args: &[&str]) {
    let (code, _out, err) = oltpscope(args);
    assert_eq!(code, 2, "{args:?} should exit with 2, stderr: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line expected, got: {err}"
    );
    assert!(err.starts_with("error:"), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

/// The newest disk-engine log segment file in `dir`.
pub fn last_segment(dir: &Path) -> std::path::PathBuf {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("wal."))
        .collect();
    v.sort();
    v.pop().expect("a log segment")
}

/// Say that a test skipped its checks, and why, where the summary shows it: the test
/// runner hides what `println!`/`eprintln!` print in a passing test, not what is written
/// to standard error directly.
#[allow(dead_code)] // not every test binary skips
pub fn skip(reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {reason}");
}

/// The prepared tracer, or None (after printing `SKIPPED`) when valgrind is absent.
/// Any other tracer problem (tool not built, version mismatch) fails the test.
pub fn tracer_or_skip() -> Option<tracer::TracerSetup> {
    let present = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        skip("valgrind not found");
        return None;
    }
    Some(tracer::prepare().unwrap_or_else(|e| panic!("valgrind is installed but: {e}")))
}

pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// cachegrind's summary lines (`==pid== D1  misses:  1,234 (...)`) as key → first number.
pub fn cachegrind_summary(stderr: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for line in stderr.lines() {
        let Some(rest) = line.split("== ").nth(1) else {
            continue;
        };
        let Some((key, val)) = rest.split_once(':') else {
            continue;
        };
        let num: String = val
            .split_whitespace()
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| *c != ',')
            .collect();
        if let Ok(n) = num.parse() {
            m.insert(key.trim().to_string(), n);
        }
    }
    m
}

/// Runs `program args` under oltptrace (with `opts`) writing into a FIFO that this thread
/// drains into `sim`. Panics if the traced run or the stream fails.
pub fn trace_into(
    setup: &tracer::TracerSetup,
    opts: &tracer::TraceOptions,
    program: &Path,
    args: &[&str],
    sim: &mut cachesim::Simulator,
) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    tracer::make_fifo(&fifo).unwrap();
    let stderr_path = dir.path().join("child.stderr");
    let mut child = setup
        .command_with(program, args, &fifo, opts)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("start valgrind");
    // If the child dies before opening the FIFO, our open would wait forever: the
    // watcher opens it for writing once the child is gone (as `oltpscope simulate` does).
    let opened = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (opened, fifo) = (opened.clone(), fifo.clone());
        std::thread::spawn(move || {
            let status = child.wait().expect("wait for valgrind");
            while !opened.load(Ordering::Acquire) {
                use std::os::unix::fs::OpenOptionsExt;
                let r = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&fifo);
                if r.is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            status
        })
    };
    let file = std::fs::File::open(&fifo).unwrap();
    opened.store(true, Ordering::Release);
    let result = cachesim::trace::Reader::new(std::io::BufReader::with_capacity(1 << 20, file))
        .map_err(|e| e.to_string())
        .and_then(|r| sim.run(r).map_err(|e| e.to_string()));
    let status = watcher.join().expect("watcher");
    let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(status.success(), "traced run failed: {status}\n{err}");
    result.unwrap_or_else(|e| panic!("reading the trace: {e}\n{err}"));
}

/// Every file in `dir` with its bytes (empty if `dir` does not exist).
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect()
        })
        .unwrap_or_default()
}

/// Copy the files of `from` into `to` (created).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for (name, bytes) in snapshot(from) {
        std::fs::write(to.join(name), bytes).unwrap();
    }
}

/// Cut (or grow) the file at `path` to `len` bytes.
pub fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Flip every bit of the byte at `offset` of the file at `path`, in place.
pub fn flip(path: &Path, offset: u64) {
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

/// What a `check --acked-file` of a damaged database may end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Exit 0 with every acknowledged commit present.
    Repaired,
    /// One error line, exit 2.
    Refused,
    /// The acknowledged-commit check failed (exit 1).
    CaughtByCheck,
}

/// Run `check` with `args` on the database in `db` and classify the result; panics on
/// any forbidden outcome (exit 0 with a commit missing, a panic, a file of `db` changed).
pub fn classify(case: &str, db: &Path, args: &[&str]) -> Outcome {
    let before = snapshot(db);
    let (code, out, err) = oltpscope(args);
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{case}: {err}"
    );
    assert_eq!(snapshot(db), before, "{case}: check changed the files");
    match code {
        0 => {
            assert!(
                out.contains("all passed") && out.contains("0 missing"),
                "{case}: exit 0 without every acknowledged commit: {out}"
            );
            Outcome::Repaired
        }
        2 => {
            assert_eq!(err.trim_end().lines().count(), 1, "{case}: {err}");
            assert!(err.starts_with("error:"), "{case}: {err}");
            Outcome::Refused
        }
        1 => {
            assert!(
                out.contains("[FAIL] acknowledged commits durable"),
                "{case}: exit 1 for another reason: {out}{err}"
            );
            Outcome::CaughtByCheck
        }
        c => panic!("{case}: exit code {c}: {out}{err}"),
    }
}

/// Whether PostgreSQL's server binaries are installed (else say the test skips).
pub fn postgres_installed() -> bool {
    let dirs = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| {
            d.flatten()
                .map(|e| e.path().join("bin"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let found = dirs
        .iter()
        .any(|d| d.join("postgres").exists() && d.join("initdb").exists());
    if !found {
        skip("PostgreSQL server binaries not found (run scripts/install-postgres.sh)");
    }
    found
}
