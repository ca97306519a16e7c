//! The damage matrix of the in-memory engines (`memory`, `mvcc`, `partitioned`), as
//! `damage.rs` runs it for the disk engine: a TPC-B database killed mid-run (SIGKILL)
//! and one stopped cleanly are damaged in every file of their directory (a byte flipped
//! at 1%, 50% and 99.9%, cut to half, the last 100 bytes cut, deleted, replaced by
//! another engine's file, zeroed, and an unknown file beside them), then checked with
//! the run's acknowledged commits. Each case must end repaired (every acknowledged
//! commit present), refused (one error line, exit 2) or, for a cut after the durable
//! mark of a killed run (the documented window: at most `MARK_INTERVAL` of logging),
//! caught by the acknowledged-commit check (exit 1). Never: exit 0 with a commit
//! missing, a panic, a file changed by `check`. After a clean stop there is no window:
//! every cut of the log is refused.

use crate::common;
use common::{copy_dir, cut, oltpscope, snapshot, Outcome};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn run_args<'a>(engine: &'a str, db: &'a Path, acked: &'a Path, duration: &'a str) -> Vec<&'a str> {
    let mut v = vec![
        "run",
        "tpcb",
        "--engine",
        engine,
        "--db",
        s(db),
        "--log",
        "sync",
        "--threads",
        "2",
        "--duration",
        duration,
        "--warmup",
        "0",
        "--no-check",
        "--acked-file",
        s(acked),
    ];
    if engine == "mvcc" || engine == "memory" {
        // Checkpoints every megabyte of log: memory.ckpt and mvcc.ckpt are in the
        // matrix too.
        v.extend(["--checkpoint-log", "1MB"]);
    }
    v
}

/// A TPC-B database of `engine` killed with SIGKILL while committing, more than a
/// durable-mark interval after the load, and its acknowledged commits.
fn killed_database(dir: &Path, engine: &str) -> (PathBuf, PathBuf) {
    let db = dir.join(format!("{engine}-killed"));
    let acked = dir.join(format!("{engine}-killed.acked"));
    let mut child = Command::new(common::OLTPSCOPE)
        .args(run_args(engine, &db, &acked, "3600"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::fs::metadata(&acked).map(|m| m.len()).unwrap_or(0) < 20_000 {
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no commits acknowledged"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Past a mark interval: the mark has moved beyond the load's end.
    std::thread::sleep(Duration::from_millis(1300));
    let ckpt = db.join(format!("{engine}.ckpt"));
    while (engine == "mvcc" || engine == "memory") && !ckpt.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no checkpoint taken"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    (db, acked)
}

/// A TPC-B database of `engine` after a short run that stopped cleanly.
fn stopped_database(dir: &Path, engine: &str) -> (PathBuf, PathBuf) {
    let db = dir.join(format!("{engine}-stopped"));
    let acked = dir.join(format!("{engine}-stopped.acked"));
    let (code, out, err) = oltpscope(&run_args(engine, &db, &acked, "0.5"));
    assert_eq!(code, 0, "{out}{err}");
    (db, acked)
}

/// Check `db` with the acknowledged commits in `acked` (`common::classify`).
fn classify(case: &str, db: &Path, acked: &Path) -> Outcome {
    let args = ["check", "tpcb", "--db", s(db), "--acked-file", s(acked)];
    common::classify(case, db, &args)
}

fn flip(path: &Path, frac: f64) {
    let mut b = std::fs::read(path).unwrap();
    let at = ((b.len() as f64 * frac) as usize).min(b.len() - 1);
    b[at] ^= 0x5a;
    std::fs::write(path, b).unwrap();
}

type Damage = Box<dyn Fn(&Path)>;

/// The damages of one file `name`: (case, the outcome it must have if it must have one,
/// the damage). `foreign`: another engine's file to put in its place.
fn damages(name: &str, len: u64, foreign: PathBuf) -> Vec<(String, Damage)> {
    let mut v: Vec<(String, Damage)> = Vec::new();
    for frac in [0.01, 0.5, 0.999] {
        let n = name.to_string();
        v.push((
            format!("{name}: byte flipped at {:.1}%", frac * 100.0),
            Box::new(move |d| flip(&d.join(&n), frac)),
        ));
    }
    let n = name.to_string();
    v.push((
        format!("{name}: cut to half"),
        Box::new(move |d| cut(&d.join(&n), len / 2)),
    ));
    let n = name.to_string();
    v.push((
        format!("{name}: last 100 bytes cut"),
        Box::new(move |d| cut(&d.join(&n), len.saturating_sub(100))),
    ));
    let n = name.to_string();
    v.push((
        format!("{name}: deleted"),
        Box::new(move |d| std::fs::remove_file(d.join(&n)).unwrap()),
    ));
    let n = name.to_string();
    v.push((
        format!("{name}: replaced by another engine's file"),
        Box::new(move |d| {
            std::fs::copy(&foreign, d.join(&n)).unwrap();
        }),
    ));
    let n = name.to_string();
    v.push((
        format!("{name}: zeroed"),
        Box::new(move |d| std::fs::write(d.join(&n), vec![0u8; len as usize]).unwrap()),
    ));
    v
}

/// Run the matrix on `base`; returns the report and the count per outcome.
fn matrix(
    tmp: &Path,
    base: &Path,
    acked: &Path,
    foreign: &Path,
    strict_cuts: bool,
) -> (String, BTreeMap<Outcome, usize>) {
    let mut cases: Vec<(String, Damage)> = vec![("undamaged".into(), Box::new(|_| {}))];
    cases.push((
        "an unknown file beside them".into(),
        Box::new(|d| std::fs::write(d.join("notes.txt"), b"hello").unwrap()),
    ));
    for (name, bytes) in snapshot(base) {
        cases.extend(damages(&name, bytes.len() as u64, foreign.to_path_buf()));
    }
    let mut report = String::new();
    let mut counts = BTreeMap::new();
    for (i, (name, damage)) in cases.iter().enumerate() {
        let db = tmp.join(format!("case-{i}"));
        copy_dir(base, &db);
        damage(&db);
        let got = classify(name, &db, acked);
        report += &format!("{name}: {got:?}\n");
        if name == "undamaged" || name == "an unknown file beside them" {
            assert_eq!(got, Outcome::Repaired, "{name}\n{report}");
        }
        if strict_cuts && name.contains("cut") {
            assert_eq!(got, Outcome::Refused, "{name} after a clean stop\n{report}");
        }
        *counts.entry(got).or_default() += 1;
        std::fs::remove_dir_all(&db).unwrap();
    }
    (report, counts)
}

/// One engine's matrix on a killed and a cleanly stopped database.
fn engine_matrix(engine: &str, foreign_engine: &str, foreign_file: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (other, _) = stopped_database(tmp.path(), foreign_engine);
    let foreign = other.join(foreign_file);
    let (killed, killed_acked) = killed_database(tmp.path(), engine);
    let (r1, c1) = matrix(tmp.path(), &killed, &killed_acked, &foreign, false);
    let (stopped, stopped_acked) = stopped_database(tmp.path(), engine);
    let (r2, c2) = matrix(tmp.path(), &stopped, &stopped_acked, &foreign, true);
    println!("{engine}, killed:\n{r1}{c1:?}\n{engine}, stopped cleanly:\n{r2}{c2:?}");
}

#[test]
fn memory_damage_matrix_repairs_or_refuses_never_silent() {
    engine_matrix("memory", "mvcc", "mvcc.log");
}

#[test]
fn mvcc_damage_matrix_repairs_or_refuses_never_silent() {
    engine_matrix("mvcc", "memory", "memory.log");
}

#[test]
fn partitioned_damage_matrix_repairs_or_refuses_never_silent() {
    engine_matrix("partitioned", "memory", "memory.log");
}
