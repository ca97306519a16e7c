//! The damage matrix: a disk-engine database killed mid-run (SIGKILL) is damaged in many
//! ways (bytes flipped, pages zeroed, files cut, deleted or swapped with another
//! database's), then checked. Each case must end repaired (every acknowledged commit
//! present), refused (one error line, exit 2, nothing on disk changed) or, for a log cut
//! after the last checkpoint that no page on disk betrays, caught by the acknowledged-
//! commit check (exit 1). Never: exit 0 with a commit missing, a panic, a file changed
//! by a refused open.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use crate::common;
use common::{copy_dir, cut, last_segment, oltpscope, Outcome};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_oltpscope")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A TPC-B database killed with SIGKILL while committing, and its acknowledged commits.
fn killed_database(dir: &Path) -> (PathBuf, PathBuf) {
    let db = dir.join("base");
    let acked = dir.join("acked");
    let mut child = Command::new(exe())
        .args([
            "run",
            "tpcb",
            "--engine",
            "disk",
            "--db",
            s(&db),
            "--log",
            "sync",
            "--threads",
            "2",
            "--duration",
            "3600",
            "--warmup",
            "0",
            "--no-check",
            "--checkpoint-ms",
            "40",
            "--bpool-size",
            "4MB",
            "--acked-file",
            s(&acked),
        ])
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
    std::thread::sleep(Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    (db, acked)
}

/// Check `db` (with its log in `log_dir`) with the acknowledged commits in `acked`
/// (`common::classify`).
fn classify(case: &str, db: &Path, acked: &Path, log_dir: Option<&Path>) -> Outcome {
    let mut args = vec![
        "check",
        "tpcb",
        "--engine",
        "disk",
        "--db",
        s(db),
        "--acked-file",
        s(acked),
    ];
    if let Some(l) = log_dir {
        args.extend(["--log-dir", s(l)]);
    }
    common::classify(case, db, &args)
}

fn flip(path: &Path, off: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[off as usize] ^= 0x5a;
    std::fs::write(path, b).unwrap();
}

fn zero_page(path: &Path, page: u64) {
    let mut b = std::fs::read(path).unwrap();
    let at = (page * 8192) as usize;
    b[at..at + 8192].fill(0);
    std::fs::write(path, b).unwrap();
}

type Damage = Box<dyn Fn(&Path)>;

#[test]
fn damage_matrix_repairs_or_refuses_never_silent() {
    let tmp = tempfile::tempdir().unwrap();
    let (base, acked) = killed_database(tmp.path());
    // Another database, for swapped files.
    let other = tmp.path().join("other");
    let (code, out, err) = oltpscope(&[
        "run",
        "tpcb",
        "--engine",
        "disk",
        "--db",
        s(&other),
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--log",
        "sync",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let seg_name = last_segment(&base).file_name().unwrap().to_owned();
    let seg_len = std::fs::metadata(base.join(&seg_name)).unwrap().len();
    let data_len = std::fs::metadata(base.join("data.db")).unwrap().len();
    let pages = data_len / 8192;
    let other2 = other.clone();
    let seg2 = seg_name.clone();

    let mut cases: Vec<(String, Option<Outcome>, Damage)> = vec![];
    let mut add = |name: String, want: Option<Outcome>, d: Damage| cases.push((name, want, d));
    add(
        "undamaged".into(),
        Some(Outcome::Repaired),
        Box::new(|_| {}),
    );
    // A torn last write: garbage after the last record is cut, nothing is lost.
    {
        let seg = seg_name.clone();
        add(
            "log: torn tail (partial record appended)".into(),
            Some(Outcome::Repaired),
            Box::new(move |d| {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(d.join(&seg))
                    .unwrap();
                let mut g = vec![0u8; 90];
                g[..4].copy_from_slice(&200u32.to_le_bytes());
                g[9..40].fill(0xab);
                f.write_all(&g).unwrap();
            }),
        );
    }
    for frac in [0.0005, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999] {
        let seg = seg_name.clone();
        let off = 64 + ((seg_len - 64) as f64 * frac) as u64;
        // A record recovery never reads (before the redo point) harms nothing.
        add(
            format!("log: byte flipped at {:.2}% (offset {off})", frac * 100.0),
            None,
            Box::new(move |d| flip(&d.join(&seg), off)),
        );
    }
    {
        let seg = seg_name.clone();
        add(
            "log: segment header flipped".into(),
            Some(Outcome::Refused),
            Box::new(move |d| flip(&d.join(&seg), 20)),
        );
    }
    for frac in [0.0, 0.3, 0.9, 0.99] {
        let seg = seg_name.clone();
        let len = 64 + ((seg_len - 64) as f64 * frac) as u64;
        // Cutting durable records is refused when it reaches back past the last
        // checkpoint or a page on disk; a cut after both can only be caught by the
        // acknowledged-commit check.
        add(
            format!("log: cut to {len} bytes"),
            None,
            Box::new(move |d| cut(&d.join(&seg), len)),
        );
    }
    {
        let seg = seg_name.clone();
        add(
            "log: cut to nothing".into(),
            Some(Outcome::Refused),
            Box::new(move |d| cut(&d.join(&seg), 0)),
        );
        let seg = seg_name.clone();
        add(
            "log: deleted".into(),
            Some(Outcome::Refused),
            Box::new(move |d| std::fs::remove_file(d.join(&seg)).unwrap()),
        );
    }
    for (what, off) in [
        ("catalog page 0", 100),
        ("page 1 (a root)", 8192 + 4000),
        ("page 5", 5 * 8192 + 3000),
        ("a middle page", pages / 2 * 8192 + 5000),
        ("the last page", (pages - 1) * 8192 + 100),
    ] {
        // Refused, unless the double-write file holds an intact copy of that page.
        add(
            format!("data: byte flipped in {what}"),
            None,
            Box::new(move |d| flip(&d.join("data.db"), off)),
        );
    }
    for page in [0, 3, pages / 2, pages - 1] {
        add(
            format!("data: page {page} zeroed"),
            None,
            Box::new(move |d| zero_page(&d.join("data.db"), page)),
        );
    }
    for len in [0, 8192, data_len / 2, data_len - 100] {
        // Shorter than at the last checkpoint: refused. Cutting into a page written
        // since is a torn write, repaired if the double-write file holds that page.
        let want = (len < data_len - 8192).then_some(Outcome::Refused);
        add(
            format!("data: file cut to {len} bytes"),
            want,
            Box::new(move |d| cut(&d.join("data.db"), len)),
        );
    }
    add(
        "data: file deleted".into(),
        Some(Outcome::Refused),
        Box::new(|d| std::fs::remove_file(d.join("data.db")).unwrap()),
    );
    add(
        "control: deleted".into(),
        Some(Outcome::Refused),
        Box::new(|d| std::fs::remove_file(d.join("control")).unwrap()),
    );
    add(
        "control: byte flipped".into(),
        Some(Outcome::Refused),
        Box::new(|d| flip(&d.join("control"), 25)),
    );
    for f in ["control", "data.db"] {
        let o = other2.clone();
        add(
            format!("swapped: {f} from another database"),
            Some(Outcome::Refused),
            Box::new(move |d| std::fs::copy(o.join(f), d.join(f)).map(|_| ()).unwrap()),
        );
    }
    {
        let o = other2.clone();
        let seg = seg2.clone();
        add(
            "swapped: log from another database".into(),
            Some(Outcome::Refused),
            Box::new(move |d| {
                std::fs::remove_file(d.join(&seg)).unwrap();
                let theirs = last_segment(&o);
                std::fs::copy(&theirs, d.join(theirs.file_name().unwrap())).unwrap();
            }),
        );
    }

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut report = String::new();
    for (i, (name, want, damage)) in cases.iter().enumerate() {
        let db = tmp.path().join(format!("case-{i}"));
        copy_dir(&base, &db);
        damage(&db);
        let got = classify(name, &db, &acked, None);
        report += &format!("{name}: {got:?}\n");
        if let Some(w) = want {
            assert_eq!(got, *w, "{name}\n{report}");
        }
        *counts
            .entry(match got {
                Outcome::Repaired => "repaired",
                Outcome::Refused => "refused",
                Outcome::CaughtByCheck => "caught by the acknowledged-commit check",
            })
            .or_default() += 1;
        std::fs::remove_dir_all(&db).unwrap();
    }
    // An empty --log-dir for an existing database: the log is missing.
    let empty = tmp.path().join("empty-log");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(
        classify("empty --log-dir", &base, &acked, Some(&empty)),
        Outcome::Refused
    );
    *counts.entry("refused").or_default() += 1;
    println!(
        "{report}damage matrix: {} cases: {counts:?}; silent: 0",
        cases.len() + 1
    );
}
