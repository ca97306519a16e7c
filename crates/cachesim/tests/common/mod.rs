//! Test-side helpers: run valgrind's lackey and convert its text trace into records.
#![allow(dead_code)]

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
        println!("SKIPPED: valgrind not found");
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

/// Lines of a lackey `--trace-mem=yes` log turned into records: `I  a,n` -> one IFETCH of
/// one instruction, ` L`/` S`/` M` -> LOAD/STORE/MODIFY. Calls `f` per record.
pub fn lackey_records(log: &Path, mut f: impl FnMut(&Record)) {
    let text = std::fs::read_to_string(log).expect("lackey log");
    for line in text.lines() {
        if line.starts_with("==") || line.len() < 4 {
            continue;
        }
        let (tag, rest) = line.split_at(2);
        let Some((a, n)) = rest.trim().split_once(',') else {
            continue;
        };
        let (Ok(addr), Ok(size)) = (u64::from_str_radix(a, 16), n.parse::<u64>()) else {
            continue;
        };
        let rec = match tag {
            "I " if (1..=15).contains(&size) => Record::IFetch {
                addr,
                ninstr: 1,
                len: size as u8,
            },
            " L" => Record::Load {
                addr,
                size: size as u16,
            },
            " S" => Record::Store {
                addr,
                size: size as u16,
            },
            " M" => Record::Modify {
                addr,
                size: size as u16,
            },
            _ => continue,
        };
        f(&rec);
    }
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
