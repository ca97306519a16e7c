//! A run's memory limit and its interruption (issue 43, items 5 and 6).
//!
//! - A run that reaches its memory limit stops with one `stopped:` line, its report and
//!   exit code 2; one whose growth will not fit its duration is warned about first.
//! - SIGINT and SIGTERM stop a run with its report, remove its temporary database, and
//!   the process dies of the signal; SIGINT is taken even when the process started
//!   with it ignored (a script's background job).

use crate::common;
use common::{oltpscope, OLTPSCOPE};

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The report's JSON.
fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Wait for `child` at most `limit`; killed (and the test failed) after it.
fn wait_at_most(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_limit_below_the_loaded_database_stops_the_run_at_once_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let j = dir.path().join("r.json");
    // With a log, in a temporary directory of the run's own.
    let run = Command::new(OLTPSCOPE)
        .args([
            "run",
            "tpcb",
            "--log",
            "async",
            "--mem-limit",
            "1MB",
            "--duration",
            "30",
        ])
        .args(["--json", j.to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let (code, out, err) = (
        run.status.code(),
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    assert_eq!(code, Some(2), "stderr: {err}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    let last = err.trim_end().lines().last().unwrap_or("");
    assert!(
        last.starts_with("stopped: resident memory ")
            && last.ends_with("reached the limit 922 KiB (90% of --mem-limit 1 MiB)"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // The report of what ran: nothing was measured.
    assert!(
        out.contains("tpcb on memory engine") && out.contains("stopped 0."),
        "{out}"
    );
    let r = json(&j);
    assert_eq!(r["stopped"]["reason"], "memory-limit", "{r}");
    assert_eq!(r["committed"], 0);
    assert_eq!(r["memory"]["limit_source"], "mem-limit");
    assert_eq!(r["memory"]["limit_bytes"], 1 << 20);
}

/// The resident bytes of a run of TPC-C with one warehouse on the memory engine when
/// its run begins (after the load), from a short run.
fn loaded_tpcc_rss(dir: &Path) -> u64 {
    let first = dir.join("first.json");
    let (code, _, err) = oltpscope(&[
        "run",
        "tpcc",
        "--warehouses",
        "1",
        "--warmup",
        "0",
        "--duration",
        "0.5",
        "--no-check",
        "--json",
        first.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let loaded = json(&first)["memory"]["rss_start_bytes"].as_u64().unwrap();
    assert!(
        loaded > 10 << 20,
        "a loaded TPC-C warehouse in {loaded} bytes?"
    );
    loaded
}

/// The case, scaled down: TPC-C on the memory engine grows about 1 KB per
/// transaction. The limit is set 64 MiB above what the loaded database holds (from a
/// first, short run), so the run warns after its warm-up and stops well before its 60 s.
#[test]
fn a_growing_tpcc_run_is_warned_about_then_stopped_at_its_limit_with_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let limit = ((loaded_tpcc_rss(dir.path()) + (64 << 20)) as f64 / 0.9) as u64;

    let j = dir.path().join("r.json");
    let mut child = Command::new(OLTPSCOPE)
        .args([
            "run",
            "tpcc",
            "--warehouses",
            "1",
            "--warmup",
            "1",
            "--duration",
            "60",
        ])
        .args([
            "--mem-limit",
            &limit.to_string(),
            "--json",
            j.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_at_most(&mut child, Duration::from_secs(50), "a run past its limit");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.trim_end().lines().collect();
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("stopped: resident memory "),
        "{err}"
    );
    let warned: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("warning: resident memory grows"))
        .collect();
    assert_eq!(warned.len(), 1, "{err}");
    assert!(
        warned[0].contains("into this 61 s run") && warned[0].contains("raise --mem-limit"),
        "{err}"
    );
    assert!(
        stdout.contains("tpcc on memory engine") && stdout.contains("stopped "),
        "{stdout}"
    );
    let r = json(&j);
    assert_eq!(r["stopped"]["reason"], "memory-limit", "{r}");
    let at = r["stopped"]["at_s"].as_f64().unwrap();
    assert!(at > 1.0 && at < 50.0, "stopped at {at} s");
    assert!(r["committed"].as_u64().unwrap() > 0, "{r}");
    // The check would take memory past the limit: it is skipped, and the report says so.
    assert!(
        r["checks"]["skipped"]
            .as_str()
            .unwrap()
            .contains("memory limit"),
        "{r}"
    );
    assert!(stdout.contains("consistency checks: skipped"), "{stdout}");
    assert!(r["memory"]["rss_peak_bytes"].as_u64().unwrap() >= (limit as f64 * 0.9) as u64);
}

#[test]
fn bad_memory_limits_are_refused_in_one_line() {
    for bad in ["0MB", "lots", "-1GB", "12XB"] {
        let flag = format!("--mem-limit={bad}");
        let args = ["run", "tpcb", flag.as_str()];
        common::assert_bad_input(&args);
        let (_, _, err) = oltpscope(&args);
        assert!(
            err.contains(&format!("invalid value '{bad}' for '--mem-limit")),
            "{err}"
        );
    }
}

/// What an interrupted run left: its exit status, standard output and error, and the
/// entries of its temporary directory.
struct Interrupted {
    status: ExitStatus,
    out: String,
    err: String,
    left: Vec<String>,
}

/// How the signal comes.
#[derive(Clone, Copy, PartialEq)]
enum How {
    Once,
    /// Twice within a moment, as `timeout` sends it (to its child, then to its process
    /// group).
    Twice,
    /// Once, to a process started with SIGINT ignored (a script's background job).
    SigintIgnored,
}

/// Run `args` with a temporary directory of its own, wait until its run loop has
/// printed a second (or, with `at_load`, until its temporary directory exists), send
/// `sig`, and wait for the end.
fn interrupt(args: &[&str], sig: i32, how: How, at_load: bool) -> Interrupted {
    let tmp = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let progress = files.path().join("progress");
    let (out, err) = (files.path().join("out"), files.path().join("err"));
    let mut cmd = Command::new(OLTPSCOPE);
    cmd.args(args)
        .args(["--progress-file", progress.to_str().unwrap()])
        .env("TMPDIR", tmp.path())
        .env("RUST_BACKTRACE", "1")
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    if how == How::SigintIgnored {
        // As a shell starts a script's background job.
        // SAFETY: signal() is async-signal-safe and touches no memory of ours.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let ready = || {
        if at_load {
            std::fs::read_dir(tmp.path()).unwrap().next().is_some()
        } else {
            std::fs::read_to_string(&progress).is_ok_and(|t| !t.is_empty())
        }
    };
    let end = Instant::now() + Duration::from_secs(120);
    while !ready() {
        if let Some(s) = child.try_wait().unwrap() {
            panic!(
                "{args:?} ended before the signal: {s}: {}",
                std::fs::read_to_string(&err).unwrap()
            );
        }
        assert!(
            Instant::now() < end,
            "{args:?} did not start its run in 120 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill has no memory effects; the pid is our unreaped child.
    unsafe { libc::kill(child.id() as i32, sig) };
    if how == How::Twice {
        // Apart enough that the two are not merged into one pending signal.
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: as above.
        unsafe { libc::kill(child.id() as i32, sig) };
    }
    let status = wait_at_most(&mut child, Duration::from_secs(60), "an interrupted run");
    let left = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    Interrupted {
        status,
        out: std::fs::read_to_string(&out).unwrap(),
        err: std::fs::read_to_string(&err).unwrap(),
        left,
    }
}

const SQLITE_RUN: &[&str] = &["run", "tpcb", "--engine", "sqlite", "--duration", "60"];

/// An interrupted run: the report of what ran, one `stopped:` line last, death by the
/// signal, and nothing left in the temporary directory.
fn assert_interrupted_with_report(r: &Interrupted, sig: i32, name: &str) {
    assert_eq!(r.status.signal(), Some(sig), "{}: {}", r.status, r.err);
    assert!(
        r.out.contains("throughput") && r.out.contains("stopped "),
        "{}",
        r.out
    );
    assert!(
        r.out.contains(&format!("interrupted by {name}")),
        "{}",
        r.out
    );
    let last = r.err.trim_end().lines().last().unwrap_or("");
    assert!(
        last.starts_with(&format!("stopped: interrupted by {name}")),
        "{}",
        r.err
    );
    assert!(!r.err.contains("panicked"), "{}", r.err);
    assert!(
        r.left.is_empty(),
        "left in the temporary directory: {:?}",
        r.left
    );
}

#[test]
fn ctrl_c_stops_a_sqlite_run_with_its_report_and_removes_its_temporary_database() {
    let r = interrupt(SQLITE_RUN, libc::SIGINT, How::Once, false);
    assert_interrupted_with_report(&r, libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_stops_a_sqlite_run_with_its_report_and_removes_its_temporary_database() {
    let r = interrupt(SQLITE_RUN, libc::SIGTERM, How::Once, false);
    assert_interrupted_with_report(&r, libc::SIGTERM, "SIGTERM");
}

/// `timeout -s INT 12 oltpscope run tpcb --engine sqlite`, the command: the
/// signal comes twice within a moment and is still one interrupt, with its report.
#[test]
fn an_interrupt_delivered_twice_within_a_moment_is_one_interrupt() {
    let r = interrupt(SQLITE_RUN, libc::SIGINT, How::Twice, false);
    assert_interrupted_with_report(&r, libc::SIGINT, "SIGINT");
}

#[test]
fn sigint_stops_a_sqlite_run_started_with_sigint_ignored() {
    let r = interrupt(SQLITE_RUN, libc::SIGINT, How::SigintIgnored, false);
    assert_interrupted_with_report(&r, libc::SIGINT, "SIGINT");
}

#[test]
fn a_signal_during_the_load_removes_the_temporary_database_too() {
    // A database that takes a while to load into SQLite: the signal comes as soon as
    // its directory exists (if the load wins the race, the run's own stop is checked).
    let args = [
        "run",
        "tpcb",
        "--engine",
        "sqlite",
        "--scale",
        "20",
        "--duration",
        "60",
    ];
    let r = interrupt(&args, libc::SIGINT, How::Once, true);
    assert_eq!(
        r.status.signal(),
        Some(libc::SIGINT),
        "{}: {}",
        r.status,
        r.err
    );
    let last = r.err.trim_end().lines().last().unwrap_or("");
    assert!(last.starts_with("stopped: "), "{}", r.err);
    assert!(!r.err.contains("panicked"), "{}", r.err);
    assert!(
        r.left.is_empty(),
        "left in the temporary directory: {:?}",
        r.left
    );
}

#[test]
fn sigterm_stops_a_logging_memory_engine_run_and_removes_its_temporary_log() {
    let args = ["run", "tpcb", "--log", "async", "--duration", "60"];
    let r = interrupt(&args, libc::SIGTERM, How::Once, false);
    assert_interrupted_with_report(&r, libc::SIGTERM, "SIGTERM");
}

/// The same under a real cgroup memory limit, where the kernel kills the process that
/// passes it: the run must stop, report and exit with 2 within the limit (the check and
/// the engine's teardown, which would take memory past it, are left out). Behind
/// OLTPSCOPE_CGROUP_TESTS=1 (needs root and a cgroup v1 memory hierarchy or a v2 one
/// whose root delegates `memory`).
#[test]
fn a_growing_tpcc_run_in_a_memory_cgroup_stops_with_its_report_instead_of_being_killed() {
    if std::env::var("OLTPSCOPE_CGROUP_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set OLTPSCOPE_CGROUP_TESTS=1 to run it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let limit = loaded_tpcc_rss(dir.path()) + (240 << 20);
    let name = format!("oltpscope-test-{}", std::process::id());
    let v1 = Path::new("/sys/fs/cgroup/memory");
    let (cg, limit_file) = if v1.is_dir() {
        (v1.join(&name), "memory.limit_in_bytes")
    } else {
        let root = Path::new("/sys/fs/cgroup");
        let sub = std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
        assert!(
            sub.split_whitespace().any(|c| c == "memory"),
            "no cgroup v1 memory hierarchy and no v2 root delegating memory"
        );
        (root.join(&name), "memory.max")
    };
    std::fs::create_dir(&cg).unwrap();
    std::fs::write(cg.join(limit_file), limit.to_string()).unwrap();
    let procs = std::ffi::CString::new(cg.join("cgroup.procs").to_str().unwrap()).unwrap();
    let j = dir.path().join("r.json");
    let mut cmd = Command::new(OLTPSCOPE);
    cmd.args(["run", "tpcc", "--warehouses", "1", "--duration", "60"])
        .args(["--json", j.to_str().unwrap()]);
    // SAFETY: between fork and exec only open, write and close (async-signal-safe), on
    // a path made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_dir(&cg);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", out.status);
    assert!(
        err.contains("stopped: resident memory") && err.contains("the cgroup's memory limit"),
        "{err}"
    );
    let r = json(&j);
    assert_eq!(r["stopped"]["reason"], "memory-limit", "{r}");
    assert_eq!(r["memory"]["limit_source"], "cgroup");
    assert!(r["committed"].as_u64().unwrap() > 0, "{r}");
}
