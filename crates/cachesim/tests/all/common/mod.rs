//! Test-side helpers: run valgrind's lackey and convert its text trace into records.
#![allow(dead_code)]

/// A skipped test's one line, written past the test harness's capture (which hides
/// what a passing test prints with `println!`), so the run's output shows every skip.
macro_rules! skipped {
    ($($a:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED: {}", format_args!($($a)*));
    }};
}

use cachesim::trace::Record;
use std::path::{Path, PathBuf};
use std::process::Command;

/// True when valgrind can be run; prints the skip line otherwise.
pub fn have_valgrind() -> bool {
    let ok = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skipped!("valgrind not found");
    }
    ok
}

pub fn run_ok(cmd: &mut Command) -> std::process::Output {
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

/// Records of a lackey `--trace-mem=yes` log (see `cachesim::lackey`), fed to `f`.
pub fn lackey_records(log: &Path, f: impl FnMut(&Record)) {
    let file = std::io::BufReader::new(std::fs::File::open(log).expect("lackey log"));
    cachesim::lackey::for_each_record(file, f).expect("reading the lackey log");
}

/// Runs `prog` under lackey; returns the log path.
pub fn lackey(dir: &Path, prog: &Path) -> PathBuf {
    let log = dir.join("lackey.log");
    run_ok(
        Command::new("valgrind")
            .arg("--tool=lackey")
            .arg("--trace-mem=yes")
            .arg(format!("--log-file={}", log.display()))
            .arg(prog),
    );
    log
}
