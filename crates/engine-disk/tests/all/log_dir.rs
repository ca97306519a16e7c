//! A log directory belongs to one database (its id is in every segment's header):
//! `--reload` and `oltpscope drop` remove only what `own_files` returns, which refuses a
//! directory holding another database's log (or a file whose owner cannot be told), and
//! a new database is never created over another's log. Refusals change nothing.

use crate::common;
use api::{Engine, EngineOptions, LogMode, Session, TableId};
use common::*;
use engine_disk::checkpoint::Control;
use engine_disk::DiskEngine;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file in `dirs` with its bytes (`None`: the directory does not exist).
fn snapshot(dirs: &[&Path]) -> Vec<Option<BTreeMap<String, Vec<u8>>>> {
    dirs.iter()
        .map(|d| {
            std::fs::read_dir(d).ok().map(|rd| {
                rd.map(|e| {
                    let e = e.unwrap();
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(e.path()).unwrap())
                })
                .collect()
            })
        })
        .collect()
}

fn with_log(db: &Path, log: &Path) -> EngineOptions {
    EngineOptions {
        log_dir: Some(log.to_path_buf()),
        ..opts(db, LogMode::Sync, None)
    }
}

/// A loaded database in `db` with its log in `log`: `n` accounts.
fn loaded(db: &Path, log: &Path, n: u64) {
    let e = DiskEngine::open(schema(100), &with_log(db, log)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for i in 0..n {
            s.insert(TableId(0), &key(i), &row(1, 0))?;
        }
        Ok(())
    })
    .unwrap();
    drop(s);
    e.load_done().unwrap();
    e.shutdown().unwrap();
}

fn accounts(db: &Path, log: &Path) -> usize {
    let e = DiskEngine::open(schema(100), &with_log(db, log)).unwrap();
    assert!(e.has_data());
    let mut s = Session::new(e.worker(0));
    let n = s.run(0, total).unwrap().1;
    drop(s);
    e.shutdown().unwrap();
    n
}

fn control(db: &Path) -> Control {
    Control::read(&*storage::os(), db).unwrap().unwrap()
}

fn names(v: &[PathBuf]) -> Vec<String> {
    v.iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn reload_with_another_databases_log_dir_removes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let p = |n: &str| t.path().join(n);
    let (a, la, c, lc) = (p("a"), p("la"), p("c"), p("lc"));
    loaded(&a, &la, 5);
    loaded(&c, &lc, 7);
    let all: [&Path; 4] = [&a, &la, &c, &lc];
    let before = snapshot(&all);
    let o = EngineOptions {
        reload: true,
        ..with_log(&a, &lc)
    };
    let err = DiskEngine::open(schema(100), &o).err().expect("refused");
    assert!(
        err.to_string().contains("belongs to another database"),
        "{err}"
    );
    assert!(snapshot(&all) == before, "a refused --reload changed files");
    assert_eq!(accounts(&c, &lc), 7);
    // With its own log directory --reload starts over, leaving C alone.
    let e = DiskEngine::open(
        schema(100),
        &EngineOptions {
            reload: true,
            ..with_log(&a, &la)
        },
    )
    .unwrap();
    assert!(!e.has_data());
    drop(e);
    assert_eq!(accounts(&c, &lc), 7);
}

#[test]
fn a_new_database_is_not_created_over_another_databases_log() {
    let t = tempfile::tempdir().unwrap();
    let (c, lc, n) = (t.path().join("c"), t.path().join("lc"), t.path().join("n"));
    loaded(&c, &lc, 3);
    let before = snapshot(&[&c, &lc]);
    let err = DiskEngine::open(schema(100), &with_log(&n, &lc))
        .err()
        .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("{} is not empty", lc.display())),
        "{msg}"
    );
    assert!(!n.exists(), "a refused open made the database directory");
    assert!(snapshot(&[&c, &lc]) == before);
    assert_eq!(accounts(&c, &lc), 3);
}

#[test]
fn own_files_are_the_segments_naming_this_database_and_its_log_must_be_found() {
    let t = tempfile::tempdir().unwrap();
    let p = |n: &str| t.path().join(n);
    let (a, la, c, lc) = (p("a"), p("la"), p("c"), p("lc"));
    loaded(&a, &la, 2);
    loaded(&c, &lc, 2);
    let st = storage::os();
    let ca = control(&a);
    let own = engine_disk::own_files(&*st, &a, &la, &ca).unwrap();
    let n = names(&own);
    // The data file first, the control file last, the log segment in between.
    assert_eq!(n.first().map(String::as_str), Some("data.db"), "{n:?}");
    assert_eq!(n.last().map(String::as_str), Some("control"), "{n:?}");
    assert!(n.iter().any(|x| x.starts_with("wal.")), "{n:?}");
    // Its log is not in its database directory: removing the rest would orphan it.
    let err = engine_disk::own_files(&*st, &a, &a, &ca).unwrap_err();
    assert!(err.to_string().contains("--log-dir"), "{err}");
    // Another database's segment among its own: refused.
    let foreign = last_segment(&lc);
    let copied = la.join("wal.000000000099");
    std::fs::copy(&foreign, &copied).unwrap();
    let err = engine_disk::own_files(&*st, &a, &la, &ca).unwrap_err();
    assert!(
        err.to_string().contains("belongs to another database"),
        "{err}"
    );
    std::fs::remove_file(&copied).unwrap();
    // A file named like a segment with no segment header: whose is it? Refused.
    std::fs::write(la.join("wal.000000000098"), b"something else entirely").unwrap();
    let err = engine_disk::own_files(&*st, &a, &la, &ca).unwrap_err();
    assert!(err.to_string().contains("no log segment header"), "{err}");
    std::fs::remove_file(la.join("wal.000000000098")).unwrap();
    // A segment creation cut before its header was whole holds no record: taken.
    std::fs::write(la.join("wal.000000000001.tmp"), [0u8; 10]).unwrap();
    let n = names(&engine_disk::own_files(&*st, &a, &la, &ca).unwrap());
    assert!(n.contains(&"wal.000000000001.tmp".to_string()), "{n:?}");
    // A removal cut short after the data file went can finish without the log.
    std::fs::remove_file(a.join("data.db")).unwrap();
    engine_disk::own_files(&*st, &a, &a, &ca).unwrap();
}
