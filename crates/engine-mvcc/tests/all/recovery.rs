//! The mvcc engine's log and recovery: replay gives back committed rows and every index
//! (and nothing aborted or uncommitted); the clock restarts above the log; snapshots
//! of a log being written (crash images) keep every acknowledged `Sync` commit; a torn
//! tail is ignored, then cut with a restart block; damage in the middle, foreign,
//! missing and unasked-for files and an unfinished load are refused in one line with
//! the files left as they are; only durable timestamps replay, the highest wins, and a
//! restart block voids what never became durable; a commit whose log buffer is full
//! waits until the flusher has taken it (a stuck disk holds commits back).

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use api::{Engine, EngineOptions, Error, IndexKind, LogMode, Schema, Session, TableDef};
use conformance::logged::{self, key, ordered_row, schema, Dump, T_HASH, T_ORDERED};
use engine_mvcc::log::{self, LoadMarker};
use engine_mvcc::MvccEngine;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The log's files and formats, for `conformance::logged`.
const FILES: logged::LogFiles = logged::LogFiles {
    log: log::LOG_FILE,
    marker: log::MARKER_FILE,
    header: &log::HEADER,
    format: &log::MARKER,
    seal_block: log::seal_block,
};

fn opts(dir: &Path, mode: LogMode, threads: usize) -> EngineOptions {
    EngineOptions {
        threads,
        log: mode,
        db_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
}

fn check_opts(dir: &Path) -> EngineOptions {
    EngineOptions {
        create: false,
        read_only: true,
        ..opts(dir, LogMode::Off, 1)
    }
}

fn open(o: &EngineOptions) -> api::Result<MvccEngine> {
    MvccEngine::open(Arc::new(schema(false)), o)
}

/// Every row (hash keys below 300), the secondary indexes checked against the rows.
fn dump(e: &MvccEngine) -> Dump {
    logged::dump(e, &[T_HASH], 0..300)
}

/// Random inserts, updates and deletes over both tables from `threads` workers, with
/// some transactions aborted after writing. Returns what the tables must hold.
fn churn(e: &MvccEngine, threads: usize, txns: usize, seed: u64, start: &Dump) -> Dump {
    let model = std::sync::Mutex::new(start.clone());
    std::thread::scope(|sc| {
        for w in 0..threads {
            let model = &model;
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w));
                let mut x = seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut done = 0;
                while done < txns {
                    // Keys are split by worker so the model needs no commit order.
                    let k = (next() % 20) * threads as u64 + w as u64;
                    let what = next() % 4;
                    let v = next() as u8;
                    let abort = next() % 5 == 0;
                    let r = s.run(0, |s| {
                        match what {
                            0 | 1 => {
                                let row = ordered_row(k % 3, k);
                                if !s.update(T_ORDERED, &key(k), |r| r.copy_from_slice(&row))? {
                                    s.insert(T_ORDERED, &key(k), &row)?;
                                }
                                if !s.update(T_HASH, &key(k), |r| r.fill(v))? {
                                    s.insert(T_HASH, &key(k), &[v; 8])?;
                                }
                            }
                            2 => {
                                s.delete(T_ORDERED, &key(k))?;
                            }
                            _ => {
                                s.delete(T_HASH, &key(k))?;
                            }
                        }
                        if abort {
                            return Err(Error::fatal("abort on purpose"));
                        }
                        Ok(())
                    });
                    match r {
                        Ok(()) => {
                            let mut m = model.lock().unwrap();
                            match what {
                                0 | 1 => {
                                    m.insert((0, k), ordered_row(k % 3, k).to_vec());
                                    m.insert((1, k), vec![v; 8]);
                                }
                                2 => {
                                    m.remove(&(0, k));
                                }
                                _ => {
                                    m.remove(&(1, k));
                                }
                            }
                            done += 1;
                        }
                        Err(Error::Conflict(_)) => {}
                        Err(Error::Fatal(m)) if abort && m == "abort on purpose" => done += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    model.into_inner().unwrap()
}

#[test]
fn replay_rebuilds_committed_rows_and_every_index_and_logging_continues() {
    for mode in [LogMode::Sync, LogMode::Async] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let e = open(&opts(d, mode, 2)).unwrap();
        assert!(!e.has_data());
        let want = churn(&e, 2, 300, 7, &Dump::new());
        e.load_done().unwrap();
        // An uncommitted transaction at shutdown leaves nothing behind.
        let mut s = Session::new(e.worker(0));
        s.begin(0).unwrap();
        s.insert(T_HASH, &key(299), &[9; 8]).unwrap();
        std::mem::forget(s); // never commits nor aborts: as if the process died here
        e.shutdown().unwrap();
        drop(e);
        let c = log::read_log(&d.join(log::LOG_FILE)).unwrap();
        let top = c.records.iter().map(|r| r.ts).max().unwrap();
        let e = open(&opts(d, mode, 2)).unwrap();
        assert!(e.has_data());
        assert_eq!(
            e.clock(),
            top.max(c.durable),
            "the clock restarts above the log"
        );
        assert_eq!(dump(&e), want, "{mode:?}: first replay");
        // Logging continues after a replay; and a read-only open sees the same.
        let want = churn(&e, 2, 200, 8, &want);
        e.shutdown().unwrap();
        drop(e);
        let before = std::fs::read(d.join(log::LOG_FILE)).unwrap();
        let e = open(&check_opts(d)).unwrap();
        assert_eq!(dump(&e), want, "{mode:?}: read-only replay");
        drop(e);
        assert!(
            std::fs::read(d.join(log::LOG_FILE)).unwrap() == before,
            "check changed the log"
        );
        let e = open(&opts(d, mode, 1)).unwrap();
        assert_eq!(dump(&e), want, "{mode:?}: second replay");
    }
}

/// Copies of a log taken while two `Sync` workers commit (each a possible crash image:
/// the last block may be half written) hold every commit acknowledged before the copy
/// began, and whole transactions only (each inserts a row into both tables).
#[test]
fn a_snapshot_of_a_running_log_keeps_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let e = open(&opts(&d, LogMode::Sync, 2)).unwrap();
    e.load_done().unwrap();
    let acked: [AtomicU64; 2] = Default::default();
    let stop = AtomicBool::new(false);
    let mut snaps = Vec::new();
    std::thread::scope(|sc| {
        for w in 0..2u64 {
            let (e, acked, stop) = (&e, &acked, &stop);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w as usize));
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && n < 100_000 {
                    let k = n * 2 + w;
                    s.run(0, |s| {
                        s.insert(T_ORDERED, &key(k), &ordered_row(w, k))?;
                        s.insert(T_HASH, &key(k % 300), &[w as u8; 8])
                            .or_else(|e| match e {
                                Error::Duplicate => Ok(()),
                                e => Err(e),
                            })
                    })
                    .unwrap();
                    n += 1;
                    acked[w as usize].store(n, Ordering::Release);
                }
            });
        }
        for i in 0..12 {
            std::thread::sleep(std::time::Duration::from_millis(15));
            let before = [0, 1].map(|w| acked[w].load(Ordering::Acquire));
            let sd = dir.path().join(format!("snap{i}"));
            std::fs::create_dir_all(&sd).unwrap();
            // Each file as it stood at one instant (`read_settled`).
            for f in [log::MARKER_FILE, log::LOG_FILE] {
                let b = logged::read_settled(&d.join(f)).unwrap();
                std::fs::write(sd.join(f), b).unwrap();
            }
            snaps.push((sd, before));
        }
        stop.store(true, Ordering::Relaxed);
    });
    e.shutdown().unwrap();
    drop(e);
    for (sd, before) in snaps {
        let e = open(&check_opts(&sd)).unwrap();
        let rows = dump(&e);
        for w in 0..2u64 {
            for n in 0..before[w as usize] {
                let k = n * 2 + w;
                assert!(
                    rows.contains_key(&(0, k)),
                    "{}: acknowledged commit of key {k} lost",
                    sd.display()
                );
            }
        }
        for &(_, k) in rows.keys().filter(|x| x.0 == 0) {
            assert!(
                rows.contains_key(&(1, k % 300)),
                "{}: half a transaction (key {k})",
                sd.display()
            );
        }
    }
}

#[test]
fn damage_in_the_middle_is_refused_and_the_file_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    e.load_done().unwrap();
    let mut s = Session::new(e.worker(0));
    for k in 0..5 {
        s.run(0, |s| s.insert(T_HASH, &key(k), &[1; 8])).unwrap();
    }
    drop(s);
    e.shutdown().unwrap();
    drop(e);
    let path = d.join(log::LOG_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = log::FILE_HEADER_BYTES + log::BLOCK_HEADER_BYTES + 2;
    bytes[at] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    for o in [opts(d, LogMode::Sync, 1), check_opts(d)] {
        let err = open(&o).err().expect("damaged log accepted").to_string();
        assert!(
            err.contains("damaged at byte 32") && err.contains(path.to_str().unwrap()),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1);
        assert!(
            std::fs::read(&path).unwrap() == bytes,
            "refused file was changed"
        );
    }
}

#[test]
fn a_torn_tail_is_ignored_then_cut_and_the_log_continues() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(1), &[1; 8])).unwrap();
    drop(s);
    e.load_done().unwrap();
    let ts = e.clock();
    e.shutdown().unwrap();
    drop(e);
    let path = d.join(log::LOG_FILE);
    let good = std::fs::read(&path).unwrap();
    // A write cut short: a block whose payload ends before its stated length.
    let mut torn = good.clone();
    let mut blk = vec![0u8; log::BLOCK_HEADER_BYTES];
    log::append(&mut blk, ts + 1, 1, &key(2), Some(&[2; 8]));
    let n = blk.len();
    log::seal_block(&mut blk, ts + 1, 1, log::BLOCK_DATA);
    torn.extend_from_slice(&blk[..n - 10]);
    std::fs::write(&path, &torn).unwrap();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let r = e.recovered().unwrap().clone();
    assert_eq!(r.end.unwrap().torn_bytes, (n - 10) as u64);
    assert!(
        !dump(&e).contains_key(&(1, 2)),
        "a record of a torn block was applied"
    );
    assert!(
        std::fs::read(&path).unwrap() == torn,
        "opening alone changed the log"
    );
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(3), &[3; 8])).unwrap();
    drop(s);
    e.shutdown().unwrap();
    drop(e);
    // The first commit cut the torn tail and wrote a restart block right there.
    let now = std::fs::read(&path).unwrap();
    let g = good.len();
    assert!(now[..g] == good[..]);
    assert_eq!(now[g..g + 4], log::BLOCK_MAGIC.to_le_bytes());
    assert_eq!(now[g + 20..g + 24], log::BLOCK_RESTART.to_le_bytes());
    let c = log::read_log(&path).unwrap();
    assert!(!c.torn_tail && c.restarts == 1);
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let rows = dump(&e);
    assert!(rows.contains_key(&(1, 1)) && rows.contains_key(&(1, 3)));
    assert!(!rows.contains_key(&(1, 2)));
}

#[test]
fn an_unfinished_load_is_refused_and_reload_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(1), &[1; 8])).unwrap();
    drop(s);
    e.shutdown().unwrap();
    drop(e);
    let before = std::fs::read(d.join(log::LOG_FILE)).unwrap();
    for o in [opts(d, LogMode::Sync, 1), check_opts(d)] {
        let err = open(&o)
            .err()
            .expect("unfinished load accepted")
            .to_string();
        assert!(
            err.contains("the load did not finish") && err.contains("--reload"),
            "{err}"
        );
    }
    assert!(std::fs::read(d.join(log::LOG_FILE)).unwrap() == before);
    let e = open(&EngineOptions {
        reload: true,
        ..opts(d, LogMode::Sync, 1)
    })
    .unwrap();
    assert!(!e.has_data());
    assert!(dump(&e).is_empty());
}

/// A log written by hand: header, blocks, marker.
fn write_log(d: &Path, blocks: &[(u64, u32, Vec<u8>)]) -> u64 {
    logged::write_log(&FILES, d, &schema(false), blocks)
}

#[test]
fn only_durable_timestamps_replay_the_highest_wins_and_a_restart_voids_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let put =
        |b: &mut Vec<u8>, ts: u64, k: u64, v: u8| log::append(b, ts, 1, &key(k), Some(&[v; 8]));
    let mut b1 = Vec::new();
    put(&mut b1, 10, 1, 1); // durable in this block
    put(&mut b1, 20, 2, 2); // above every durable timestamp: never acknowledged
    log::append(&mut b1, 14, 1, &key(3), None); // a tombstone met before ...
    let mut b2 = Vec::new();
    put(&mut b2, 12, 3, 3); // ... the older row it deletes
    put(&mut b2, 13, 4, 4);
    put(&mut b2, 11, 4, 5); // older: loses
    put(&mut b2, 15, 5, 6); // above b1's durable 12, covered by b2's 15
    write_log(d, &[(12, log::BLOCK_DATA, b1), (15, log::BLOCK_DATA, b2)]);
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let r = e.recovered().unwrap().clone();
    assert_eq!(
        (r.durable, r.max_ts, r.applied, r.discarded),
        (15, 20, 6, 1),
        "{r:?}"
    );
    assert!(e.clock() >= 20, "clock {} not above the log", e.clock());
    let want: Dump = [
        ((1, 1), vec![1; 8]),
        ((1, 4), vec![4; 8]),
        ((1, 5), vec![6; 8]),
    ]
    .into_iter()
    .collect();
    assert_eq!(dump(&e), want);
    // Continue: new timestamps start above 20; once they are durable, the void record
    // of timestamp 20 must still not come back (the restart block voids it).
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(6), &[7; 8])).unwrap();
    drop(s);
    assert!(e.durable_ts() > 20);
    e.shutdown().unwrap();
    drop(e);
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let rows = dump(&e);
    assert!(
        !rows.contains_key(&(1, 2)),
        "a never-durable record came back"
    );
    assert!(rows.contains_key(&(1, 6)) && rows.contains_key(&(1, 1)));
}

#[test]
fn foreign_missing_and_unasked_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = |r: api::Result<MvccEngine>| {
        let e = r.err().expect("accepted").to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    // check on an empty directory.
    let empty = dir.path().join("empty");
    let err = one_line(open(&check_opts(&empty)));
    assert!(err.contains("no mvcc-engine log"), "{err}");
    assert!(!empty.exists(), "check created the directory");
    // A good database to spoil.
    let good = dir.path().join("good");
    let e = open(&opts(&good, LogMode::Sync, 1)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(1), &[1; 8])).unwrap();
    drop(s);
    e.load_done().unwrap();
    drop(e);
    let copy = |name: &str| {
        let p = dir.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        for f in [log::LOG_FILE, log::MARKER_FILE] {
            std::fs::copy(good.join(f), p.join(f)).unwrap();
        }
        p
    };
    type Spoil = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Spoil, &str)> = vec![
        (
            "memory-log",
            Box::new(|p: &Path| {
                let mut b = std::fs::read(p.join(log::LOG_FILE)).unwrap();
                b[0..8].copy_from_slice(storage::valuelog::identity::memory::FILE_MAGIC);
                std::fs::write(p.join(log::LOG_FILE), b).unwrap();
            }),
            "a memory-engine log",
        ),
        (
            "random",
            Box::new(|p: &Path| {
                std::fs::write(p.join(log::LOG_FILE), b"hello, world; not a log").unwrap()
            }),
            "not an mvcc-engine log",
        ),
        (
            "header",
            Box::new(|p: &Path| {
                let mut b = std::fs::read(p.join(log::LOG_FILE)).unwrap();
                b[20] ^= 0xff; // database id: the header checksum fails
                std::fs::write(p.join(log::LOG_FILE), b).unwrap();
            }),
            "header checksum mismatch",
        ),
        (
            "other-marker",
            Box::new(|p: &Path| {
                let m = LoadMarker {
                    database_id: 7,
                    log_bytes: 32,
                };
                std::fs::write(p.join(log::MARKER_FILE), log::MARKER.encode(&m)).unwrap();
            }),
            "belongs to another log",
        ),
        (
            "bad-marker",
            Box::new(|p: &Path| std::fs::write(p.join(log::MARKER_FILE), [0u8; 36]).unwrap()),
            "not an mvcc-engine load marker",
        ),
        (
            "no-log",
            Box::new(|p: &Path| std::fs::remove_file(p.join(log::LOG_FILE)).unwrap()),
            "is missing",
        ),
        (
            "short-log",
            Box::new(|p: &Path| {
                let m = LoadMarker {
                    database_id: log::read_log(&p.join(log::LOG_FILE))
                        .unwrap()
                        .header
                        .unwrap()
                        .database_id,
                    log_bytes: 1 << 20,
                };
                std::fs::write(p.join(log::MARKER_FILE), log::MARKER.encode(&m)).unwrap();
            }),
            "records as durable",
        ),
    ];
    for (name, spoil, want) in cases {
        let p = copy(name);
        spoil(&p);
        let files =
            |p: &Path| [log::LOG_FILE, log::MARKER_FILE].map(|f| std::fs::read(p.join(f)).ok());
        let before = files(&p);
        for o in [opts(&p, LogMode::Sync, 1), check_opts(&p)] {
            let err = one_line(open(&o));
            assert!(err.contains(want), "{name}: {err}");
        }
        assert!(files(&p) == before, "{name}: a refused file was changed");
    }
    // A log of another schema.
    let other = copy("schema");
    let mut s2 = schema(false);
    s2.add(TableDef::new("extra", 8, IndexKind::Hash, 10));
    let err = MvccEngine::open(Arc::new(s2), &opts(&other, LogMode::Sync, 1))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("another schema"), "{err}");
    // --log off on a directory holding a log (its changes would not be kept).
    let err = one_line(open(&opts(&good, LogMode::Off, 1)));
    assert!(err.contains("--log off"), "{err}");
    // A memory-engine database directory.
    let mem = dir.path().join("mem");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(
        mem.join(storage::valuelog::identity::memory::LOG_FILE),
        b"OLTPMLOG",
    )
    .unwrap();
    let err = one_line(open(&opts(&mem, LogMode::Sync, 1)));
    assert!(err.contains("memory-engine log"), "{err}");
    assert!(!mem.join(log::LOG_FILE).exists());
    // --reload refuses to remove a file that is not this engine's.
    let p = copy("reload-foreign");
    std::fs::write(p.join(log::LOG_FILE), b"precious data").unwrap();
    let err = one_line(open(&EngineOptions {
        reload: true,
        ..opts(&p, LogMode::Sync, 1)
    }));
    assert!(err.contains("refuses to remove"), "{err}");
    assert_eq!(
        std::fs::read(p.join(log::LOG_FILE)).unwrap(),
        b"precious data"
    );
}

use storage::gated::{commit_against_stuck_log, Gate, Gated};

/// With the disk stuck (the flusher held in a write), `Async` commits run ahead of
/// the log only until their buffer is full: then a commit waits until the flusher has
/// taken it, and goes on once the disk does. (Without the wait all of the three buffer limits below
/// would be committed against a stuck log.) Every commit is in the log at the end.
#[test]
fn a_full_log_buffer_holds_its_committer_until_the_flusher_took_it() {
    const ROW: usize = 4000;
    let limit = storage::logfile::BUFFER_LIMIT;
    let n = (3 * limit / ROW + 1) as u64;
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let o = EngineOptions {
        storage: Arc::new(Gated {
            name: log::LOG_FILE,
            gate: gate.clone(),
        }),
        ..opts(dir.path(), LogMode::Async, 1)
    };
    let mut sc = Schema::new();
    let t = sc.add(TableDef::new("wide", ROW, IndexKind::Hash, n));
    let e = MvccEngine::open(Arc::new(sc), &o).unwrap();
    let seen = commit_against_stuck_log(&gate, n, || {
        let mut s = Session::new(e.worker(0));
        move |i| s.run(0, |s| s.insert(t, &key(i), &[i as u8; ROW])).unwrap()
    });
    seen.assert_held_within_two_buffers(ROW, &format!("commits of {ROW}-byte rows"));
    e.shutdown().unwrap();
    let c = log::read_log(&dir.path().join(log::LOG_FILE)).unwrap();
    assert_eq!(c.records.len() as u64, n);
}

/// `conformance::logged::log_cut_before_its_durable_mark_is_refused`.
#[test]
fn a_log_cut_before_its_durable_mark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    logged::log_cut_before_its_durable_mark_is_refused(
        open,
        |d| opts(d, LogMode::Sync, 1),
        check_opts,
        &FILES,
        &dir.path().join("db"),
    );
}
