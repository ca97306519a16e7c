//! Value logging: with `Sync` logging a commit's records are in the (fsync'd) log file
//! when commit returns; replaying the log (each key's records in TID order, an update on
//! the version it names) gives the database's final contents; a damaged log is an error, not a panic; a commit whose log buffer is full
//! waits until the logger has taken it (a stuck disk holds commits back).

use api::{Engine, EngineOptions, IndexKind, LogMode, Schema, Session, TableDef};
use engine_memory::log::{apply_runs, OwnedBody};
use engine_memory::{read_log, MemoryEngine};
use std::collections::BTreeMap;
use std::sync::Arc;

fn key(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

fn open(mode: LogMode, dir: &std::path::Path, threads: usize) -> MemoryEngine {
    let mut s = Schema::new();
    s.add(TableDef::new("t0", 12, IndexKind::BTree, 100));
    s.add(TableDef::new("t1", 8, IndexKind::Hash, 100));
    // Rows long enough that an update of a few bytes is logged as its changes.
    s.add(TableDef::new("t2", 100, IndexKind::Hash, 100));
    let opts = EngineOptions {
        threads,
        log: mode,
        log_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    };
    MemoryEngine::open(Arc::new(s), &opts).unwrap()
}

/// Replay, the simple way: each key's records in TID order, a put or a delete setting
/// the row, an update changing the version its record names (which must be the one
/// before it: a version lost from the log fails here).
fn replay(path: &std::path::Path) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
    let log = read_log(path).unwrap();
    assert!(!log.torn_tail);
    type Versions = Vec<(u64, OwnedBody)>;
    let mut by_key: BTreeMap<(u32, Vec<u8>), Versions> = BTreeMap::new();
    for r in log.records {
        by_key
            .entry((r.table, r.key))
            .or_default()
            .push((r.tid, r.body));
    }
    let mut out = BTreeMap::new();
    for (k, mut recs) in by_key {
        recs.sort_by_key(|r| r.0);
        let mut cur: (u64, Option<Vec<u8>>) = (0, None);
        for (tid, body) in recs {
            assert_ne!(cur.0, tid, "two log records of one key with the same TID");
            cur.1 = match body {
                OwnedBody::Put(row) => Some(row),
                OwnedBody::Delete => None,
                OwnedBody::Update { prev, runs } => {
                    assert_eq!(prev, cur.0, "{k:?}: an update of a version not before it");
                    let mut row = cur.1.expect("an update of a deleted row");
                    apply_runs(&mut row, &runs).unwrap();
                    Some(row)
                }
            };
            cur.0 = tid;
        }
        if let Some(row) = cur.1 {
            out.insert(k, row);
        }
    }
    out
}

fn contents(e: &MemoryEngine) -> BTreeMap<(u32, Vec<u8>), Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for table in e.schema().table_ids() {
            for k in 0..64 {
                s.get(table, &key(k), |r| {
                    out.insert((table.0, key(k).to_vec()), r.to_vec());
                })?;
            }
        }
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn sync_commit_is_in_the_log_when_it_returns() {
    let dir = tempdir("sync");
    let e = open(LogMode::Sync, &dir, 2);
    let path = e.log_path().unwrap();
    let mut s = Session::new(e.worker(0));
    for i in 0..5u32 {
        let row = [i as u8 + 1; 12];
        s.run(0, |s| s.insert(api::TableId(0), &key(i), &row))
            .unwrap();
        let log = read_log(&path).unwrap();
        assert!(
            log.records
                .iter()
                .any(|r| r.key == key(i) && r.body == OwnedBody::Put(row.to_vec())),
            "a Sync commit returned before its record was in the log file"
        );
        assert!(e.durable_epoch() >= 1);
    }
    drop(s);
    e.shutdown().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn log_replay_gives_final_contents() {
    for mode in [LogMode::Sync, LogMode::Async] {
        let dir = tempdir("replay");
        let e = open(mode, &dir, 2);
        std::thread::scope(|sc| {
            for w in 0..2usize {
                let e = &e;
                sc.spawn(move || {
                    let mut s = Session::new(e.worker(w));
                    let mut x = 12345u64 + w as u64;
                    for _ in 0..if mode == LogMode::Sync { 60 } else { 600 } {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let k = (x % 64) as u32;
                        let table = api::TableId((x >> 8) as u32 % 3);
                        let size = [12, 8, 100][table.0 as usize];
                        let v = (x >> 16) as u8;
                        let r = s.run_retry(0, 1000, |s| {
                            let present = s.get(table, &key(k), |_| {})?;
                            if !present {
                                s.insert(table, &key(k), &vec![v; size])?;
                            } else if v.is_multiple_of(3) {
                                s.delete(table, &key(k))?;
                            } else {
                                s.update(table, &key(k), |r| {
                                    r[0] = v;
                                    let n = r.len();
                                    r[n - 1] = v;
                                })?;
                            }
                            Ok(())
                        });
                        r.unwrap();
                    }
                });
            }
        });
        let want = contents(&e);
        e.shutdown().unwrap();
        let stats = e.stats();
        assert!(stats["log"]["bytes"].as_u64().unwrap() > 16, "{stats}");
        let updates = read_log(&e.log_path().unwrap())
            .unwrap()
            .records
            .iter()
            .filter(|r| matches!(r.body, OwnedBody::Update { .. }))
            .count();
        assert!(updates > 0, "{mode:?}: no update was logged as its changes");
        let got = replay(&e.log_path().unwrap());
        assert_eq!(got, want, "{mode:?}: log replay differs from the database");
        assert!(!want.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn damaged_log_is_an_error_a_torn_tail_is_not() {
    let dir = tempdir("damaged");
    let e = open(LogMode::Sync, &dir, 1);
    let mut s = Session::new(e.worker(0));
    // Sync commits one after the other: one block each.
    for k in 1..=2 {
        s.run(0, |s| s.insert(api::TableId(1), &key(k), &[7; 8]))
            .unwrap();
    }
    drop(s);
    e.shutdown().unwrap();
    let path = e.log_path().unwrap();
    let good = std::fs::read(&path).unwrap();
    let log = read_log(&path).unwrap();
    assert_eq!(log.records.len(), 2);
    assert!(log.blocks >= 2 && !log.torn_tail);
    let n = good.len();
    // A flipped byte in the first block, valid blocks after it: damage, an error.
    let first = engine_memory::log::FILE_HEADER_BYTES + engine_memory::log::BLOCK_HEADER_BYTES + 3;
    let mut bad = good.clone();
    bad[first] ^= 0x40;
    std::fs::write(&path, &bad).unwrap();
    let err = read_log(&path).unwrap_err().to_string();
    assert!(
        err.contains("damaged at byte 32") && err.contains("checksum"),
        "{err}"
    );
    // A flipped byte in the last block, nothing valid after it: a torn tail.
    let mut bad = good.clone();
    bad[n - 3] ^= 0x40;
    std::fs::write(&path, &bad).unwrap();
    assert!(read_log(&path).unwrap().torn_tail);
    // A truncated last block: a torn tail, not an error.
    std::fs::write(&path, &good[..n - 2]).unwrap();
    let log = read_log(&path).unwrap();
    assert!(log.torn_tail && log.records.len() <= 2);
    // Not a log at all.
    std::fs::write(&path, b"hello world, not a log").unwrap();
    assert!(read_log(&path).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "oltpscope-memlog-test-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

use storage::gated::{commit_against_stuck_log, Gate, Gated};

/// With the disk stuck (the logger held in a write), `Async` commits run ahead of the
/// log only until their buffer is full: then a commit waits, once it is over, until the
/// logger has taken the buffer, and goes on once the disk does. (Without the wait in
/// `occ` all of the three buffer limits below would be committed against a stuck log.) Every
/// commit is in the log at the end.
#[test]
fn a_full_log_buffer_holds_its_committer_until_the_logger_took_it() {
    const ROW: usize = 4000;
    let limit = storage::logfile::BUFFER_LIMIT;
    let n = (3 * limit / ROW + 1) as u64;
    let dir = tempdir("full");
    let gate = Arc::new(Gate::default());
    let mut sc = Schema::new();
    let t = sc.add(TableDef::new("wide", ROW, IndexKind::Hash, n));
    let opts = EngineOptions {
        log: LogMode::Async,
        log_dir: Some(dir.clone()),
        storage: Arc::new(Gated {
            name: engine_memory::log::LOG_FILE,
            gate: gate.clone(),
        }),
        ..EngineOptions::default()
    };
    let e = MemoryEngine::open(Arc::new(sc), &opts).unwrap();
    let seen = commit_against_stuck_log(&gate, n, || {
        let mut s = Session::new(e.worker(0));
        move |i| {
            s.run(0, |s| {
                s.insert(t, &(i as u32).to_be_bytes(), &[i as u8; ROW])
            })
            .unwrap()
        }
    });
    seen.assert_held_within_two_buffers(ROW, &format!("commits of {ROW}-byte rows"));
    e.shutdown().unwrap();
    let c = read_log(&dir.join(engine_memory::log::LOG_FILE)).unwrap();
    assert_eq!(c.records.len() as u64, n);
    std::fs::remove_dir_all(&dir).unwrap();
}
