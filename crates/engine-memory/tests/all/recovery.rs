//! Recovery from the value log: replay gives back the rows and every index; a snapshot
//! of a log being written (a crash image) keeps every acknowledged `Sync` commit and only
//! whole transactions; a torn tail is cut and the log continues; damage in the middle, a
//! foreign or missing file and an unfinished load are refused without touching a file;
//! records of epochs that never became durable stay out, also after a restart; an update
//! logged as its changes applies on the version it names, whatever the order it is read
//! in, and one whose version is missing is refused.

use api::{Engine, EngineOptions, IndexKind, LogMode, Schema, Session, TableDef};
use conformance::logged::{self, key, ordered_row, schema, wide_row, Dump};
use conformance::logged::{T_HASH, T_ORDERED, T_WIDE};
use engine_memory::log::{self, LoadMarker};
use engine_memory::MemoryEngine;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The counter of a wide row.
/// The log's files and formats, for `conformance::logged`.
const FILES: logged::LogFiles = logged::LogFiles {
    log: log::LOG_FILE,
    marker: log::MARKER_FILE,
    header: &log::HEADER,
    format: &log::MARKER,
    seal_block: log::seal_block,
};

fn wide_count(r: &[u8]) -> u64 {
    u64::from_le_bytes(r[0..8].try_into().unwrap())
}

fn opts(dir: &Path, mode: LogMode, threads: usize) -> EngineOptions {
    EngineOptions {
        threads,
        log: mode,
        log_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
}

fn open(o: &EngineOptions) -> api::Result<MemoryEngine> {
    MemoryEngine::open(Arc::new(schema(true)), o)
}

/// Every row (hash keys below 200 and four above 1000), the secondary indexes checked
/// against the rows.
fn dump(e: &MemoryEngine) -> Dump {
    logged::dump(e, &[T_HASH, T_WIDE], (0..200).chain(1000..1004))
}

/// Random inserts, updates and deletes over both tables from `threads` workers.
fn churn(e: &MemoryEngine, threads: usize, txns: usize, seed: u64) {
    std::thread::scope(|sc| {
        for w in 0..threads {
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w));
                let mut x = seed.wrapping_mul(31) + w as u64 + 1;
                for _ in 0..txns {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = x % 200;
                    let v = (x >> 20) % 7;
                    s.run_retry(0, 10_000, |s| {
                        let there = s.get(T_ORDERED, &key(k), |_| {})?;
                        if !there {
                            s.insert(T_ORDERED, &key(k), &ordered_row(v, k))?;
                        } else if v < 3 {
                            s.delete(T_ORDERED, &key(k))?;
                        } else {
                            s.update(T_ORDERED, &key(k), |_| {})?;
                        }
                        let there = s.get(T_HASH, &key(k), |_| {})?;
                        if !there {
                            s.insert(T_HASH, &key(k), &[v as u8; 8])?;
                        } else if v == 0 {
                            s.delete(T_HASH, &key(k))?;
                        } else {
                            s.update(T_HASH, &key(k), |r| r[0] = r[0].wrapping_add(1))?;
                        }
                        let there = s.get(T_WIDE, &key(k), |_| {})?;
                        if !there {
                            s.insert(T_WIDE, &key(k), &wide_row(v))?;
                        } else if v == 1 {
                            s.delete(T_WIDE, &key(k))?;
                        } else if v.is_multiple_of(2) {
                            s.update(T_WIDE, &key(k), |r| {
                                let n = wide_count(r) + v;
                                r[0..8].copy_from_slice(&n.to_le_bytes());
                                r[40 + v as usize] ^= 1;
                            })?;
                        } else {
                            // The same change in two parts of the row (logged as their
                            // words; the second completes the first's entry).
                            s.update_part(T_WIDE, &key(k), 40..48, |b| b[v as usize] ^= 1)?;
                            s.update_part(T_WIDE, &key(k), 0..8, |b| {
                                let n = wide_count(b) + v;
                                b.copy_from_slice(&n.to_le_bytes());
                            })?;
                        }
                        Ok(())
                    })
                    .unwrap();
                }
            });
        }
    });
}

#[test]
fn replay_rebuilds_rows_and_every_index_and_logging_continues() {
    let dir = tempfile::tempdir().unwrap();
    for mode in [LogMode::Sync, LogMode::Async] {
        let d = dir.path().join(format!("{mode:?}"));
        let e = open(&opts(&d, mode, 2)).unwrap();
        assert!(!e.has_data());
        churn(&e, 2, 150, 1);
        e.load_done().unwrap();
        churn(&e, 2, 150, 2);
        let want = dump(&e);
        e.shutdown().unwrap();
        drop(e);
        assert!(!want.is_empty());

        // Reopen: the same rows and indexes; the engine then keeps logging to the log.
        let e = open(&opts(&d, mode, 2)).unwrap();
        assert!(e.has_data());
        assert_eq!(dump(&e), want, "{mode:?}: replay differs");
        churn(&e, 2, 150, 3);
        let want = dump(&e);
        e.shutdown().unwrap();
        drop(e);
        // A third time, read-only (as `check` opens it: log off, create nothing).
        let ro = EngineOptions {
            create: false,
            ..opts(&d, LogMode::Off, 1)
        };
        let before = std::fs::read(d.join(log::LOG_FILE)).unwrap();
        let e = open(&ro).unwrap();
        assert_eq!(dump(&e), want, "{mode:?}: second replay differs");
        drop(e);
        assert!(std::fs::read(d.join(log::LOG_FILE)).unwrap() == before);
    }
}

#[test]
fn a_snapshot_of_a_running_log_keeps_every_acknowledged_commit() {
    // Each transaction inserts (worker, seq) and bumps its worker's counter row: after
    // recovery of any snapshot, every acknowledged insert is there and each counter
    // equals the number of its worker's rows (whole transactions only).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("live");
    let threads = 2;
    let e = open(&opts(&d, LogMode::Sync, threads)).unwrap();
    {
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            for w in 0..threads as u64 {
                s.insert(T_HASH, &key(1000 + w), &0u64.to_le_bytes())?;
                s.insert(T_WIDE, &key(1000 + w), &wide_row(0))?;
            }
            Ok(())
        })
        .unwrap();
    }
    e.load_done().unwrap();
    let acked: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let stop = AtomicBool::new(false);
    let mut snapshots = Vec::new();
    std::thread::scope(|sc| {
        for w in 0..threads {
            let (e, acked, stop) = (&e, &acked, &stop);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w));
                let mut seq = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    seq += 1;
                    let k = (w as u64) << 32 | seq;
                    s.run_retry(0, 10_000, |s| {
                        s.insert(T_ORDERED, &key(k), &ordered_row(w as u64, k))?;
                        s.update(T_HASH, &key(1000 + w as u64), |r| {
                            let n = u64::from_le_bytes(r.try_into().unwrap()) + 1;
                            r.copy_from_slice(&n.to_le_bytes());
                        })?;
                        s.update(T_WIDE, &key(1000 + w as u64), |r| {
                            let n = wide_count(r) + 1;
                            r[0..8].copy_from_slice(&n.to_le_bytes());
                        })?;
                        Ok(())
                    })
                    .unwrap();
                    acked.lock().unwrap().push(k);
                }
            });
        }
        for i in 0..6 {
            std::thread::sleep(std::time::Duration::from_millis(15 + 7 * i));
            let acked_before: Vec<u64> = acked.lock().unwrap().clone();
            // The marker (the durable mark) before the log, as a crash leaves them: the
            // mark never passes what the log holds.
            let marker = logged::read_settled(&d.join(log::MARKER_FILE)).unwrap();
            let bytes = logged::read_settled(&d.join(log::LOG_FILE)).unwrap();
            snapshots.push((acked_before, marker, bytes));
        }
        stop.store(true, Ordering::Relaxed);
    });
    e.shutdown().unwrap();
    for (i, (acked, marker, bytes)) in snapshots.into_iter().enumerate() {
        let sd = dir.path().join(format!("snap{i}"));
        std::fs::create_dir_all(&sd).unwrap();
        // (A read racing the logger's append may end inside a block: a torn tail.)
        std::fs::write(sd.join(log::LOG_FILE), &bytes).unwrap();
        std::fs::write(sd.join(log::MARKER_FILE), &marker).unwrap();
        let e = open(&EngineOptions {
            create: false,
            ..opts(&sd, LogMode::Off, 1)
        })
        .unwrap();
        let rows = dump(&e);
        for k in &acked {
            assert!(
                rows.contains_key(&(0, *k)),
                "snapshot {i}: acknowledged commit {k:x} lost"
            );
        }
        for w in 0..threads as u64 {
            let n = rows.keys().filter(|r| r.0 == 0 && r.1 >> 32 == w).count() as u64;
            let c = u64::from_le_bytes(rows[&(1, 1000 + w)][..].try_into().unwrap());
            assert_eq!(n, c, "snapshot {i}: worker {w}: {n} rows but counter {c}");
            let c = wide_count(&rows[&(2, 1000 + w)]);
            assert_eq!(
                n, c,
                "snapshot {i}: worker {w}: {n} rows but wide counter {c}"
            );
        }
        // Reopened for appending, the log continues after the cut.
        drop(e);
        let e = open(&opts(&sd, LogMode::Sync, 1)).unwrap();
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            s.insert(T_ORDERED, &key(7 << 40), &ordered_row(9, 7 << 40))
        })
        .unwrap();
        drop(s);
        e.shutdown().unwrap();
        drop(e);
        let e = open(&opts(&sd, LogMode::Sync, 1)).unwrap();
        let again = dump(&e);
        assert!(again.contains_key(&(0, 7 << 40)));
        assert_eq!(again.len(), rows.len() + 1, "snapshot {i}");
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
    for o in [
        opts(d, LogMode::Sync, 1),
        EngineOptions {
            create: false,
            ..opts(d, LogMode::Off, 1)
        },
    ] {
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
fn a_torn_tail_is_cut_and_the_log_continues() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(1), &[1; 8])).unwrap();
    drop(s);
    e.load_done().unwrap();
    e.shutdown().unwrap();
    drop(e);
    let path = d.join(log::LOG_FILE);
    let good = std::fs::read(&path).unwrap();
    // Half a block of a write cut short: a header with a length beyond the end.
    let mut torn = good.clone();
    let mut blk = vec![0u8; log::BLOCK_HEADER_BYTES + 40];
    log::append_put(&mut blk, 99 << 32 | 8, 1, &key(2), &[2; 8]);
    let n = blk.len();
    log::seal_block(&mut blk, 98, 1, log::BLOCK_DATA);
    torn.extend_from_slice(&blk[..n - 10]);
    std::fs::write(&path, &torn).unwrap();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let r = e.recovered().unwrap().clone();
    assert_eq!(r.end.unwrap().torn_bytes, (n - 10) as u64);
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
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let rows = dump(&e);
    assert!(rows.contains_key(&(1, 1)) && rows.contains_key(&(1, 3)));
    assert!(
        !rows.contains_key(&(1, 2)),
        "a record of a torn block was applied"
    );
}

#[test]
fn an_unfinished_load_is_reported_and_reload_starts_over() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(1), &[1; 8])).unwrap();
    drop(s);
    e.shutdown().unwrap();
    drop(e);
    let before = std::fs::read(d.join(log::LOG_FILE)).unwrap();
    for create in [true, false] {
        let o = EngineOptions {
            create,
            ..opts(d, LogMode::Sync, 1)
        };
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
    // --reload on a directory that does not exist yet just creates the log.
    let fresh = d.join("new");
    let e = open(&EngineOptions {
        reload: true,
        ..opts(&fresh, LogMode::Sync, 1)
    })
    .unwrap();
    assert!(!e.has_data() && fresh.join(log::LOG_FILE).exists());
}

/// A log written by hand: header, blocks, marker.
fn write_log(d: &Path, blocks: &[(u64, u32, Vec<u8>)]) -> u64 {
    logged::write_log(&FILES, d, &schema(true), blocks)
}

fn tid(epoch: u64, seq: u64) -> u64 {
    epoch << 32 | seq << 3
}

#[test]
fn only_durable_epochs_replay_highest_tid_wins_and_restart_voids_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let put = |b: &mut Vec<u8>, t: u64, k: u64, v: u8| log::append_put(b, t, 1, &key(k), &[v; 8]);
    let mut b1 = Vec::new();
    put(&mut b1, tid(1, 1), 1, 1); // durable in this block
    put(&mut b1, tid(2, 1), 2, 2); // epoch 2: never durable
    log::append_delete(&mut b1, tid(1, 5), 1, &key(3)); // a delete read before ...
    let mut b2 = Vec::new();
    put(&mut b2, tid(1, 2), 3, 3); // ... the older insert it follows
    put(&mut b2, tid(1, 9), 4, 4);
    put(&mut b2, tid(1, 3), 4, 5); // older: loses
    write_log(d, &[(1, log::BLOCK_DATA, b1), (1, log::BLOCK_DATA, b2)]);
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let r = e.recovered().unwrap().clone();
    assert_eq!((r.durable, r.max_epoch, r.discarded), (1, 2, 1), "{r:?}");
    let rows = dump(&e);
    let want: Dump = [((1, 1), vec![1; 8]), ((1, 4), vec![4; 8])]
        .into_iter()
        .collect();
    assert_eq!(rows, want);
    // Continue: new epochs start above 2; once they are durable, the void epoch-2
    // record must still not come back.
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| s.insert(T_HASH, &key(5), &[5; 8])).unwrap();
    drop(s);
    assert!(e.durable_epoch() >= 3);
    e.shutdown().unwrap();
    drop(e);
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let rows = dump(&e);
    assert!(
        !rows.contains_key(&(1, 2)),
        "a record of a never-durable epoch came back"
    );
    assert!(rows.contains_key(&(1, 5)) && rows.contains_key(&(1, 1)));
}

/// An update record of a wide row, by hand: `runs` as (offset, bytes).
fn update(b: &mut Vec<u8>, t: u64, k: u64, prev: u64, runs: &[(u16, &[u8])]) {
    let mut body = prev.to_le_bytes().to_vec();
    for (off, bytes) in runs {
        body.extend_from_slice(&off.to_le_bytes());
        body.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        body.extend_from_slice(bytes);
    }
    b.extend_from_slice(&t.to_le_bytes());
    b.extend_from_slice(&T_WIDE.0.to_le_bytes());
    b.extend_from_slice(&(body.len() as u32).to_le_bytes());
    b.push(log::KIND_UPDATE);
    b.push(8);
    b.extend_from_slice(&key(k));
    b.extend_from_slice(&body);
}

#[test]
fn updates_apply_on_their_version_in_whatever_order_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wide = |b: &mut Vec<u8>, t: u64, k: u64| {
        log::append_put(b, t, T_WIDE.0, &key(k), &wide_row(k));
    };
    let mut b1 = Vec::new();
    // Key 1: its second update, then its first, then (next block) the row they change.
    update(
        &mut b1,
        tid(1, 3),
        1,
        tid(1, 2),
        &[(8, &[7, 7]), (63, &[9])],
    );
    update(
        &mut b1,
        tid(1, 2),
        1,
        tid(1, 1),
        &[(9, &[5, 5]), (20, &[4])],
    );
    // Key 2: an update whose version never comes, overwritten by a later put.
    update(&mut b1, tid(1, 4), 2, tid(1, 2), &[(0, &[1])]);
    // Key 3: an update of an epoch that never became durable.
    wide(&mut b1, tid(1, 1), 3);
    update(&mut b1, tid(2, 1), 3, tid(1, 1), &[(0, &[1])]);
    let mut b2 = Vec::new();
    wide(&mut b2, tid(1, 1), 1);
    wide(&mut b2, tid(1, 6), 2);
    write_log(d, &[(1, log::BLOCK_DATA, b1), (1, log::BLOCK_DATA, b2)]);
    let e = open(&opts(d, LogMode::Sync, 1)).unwrap();
    let r = e.recovered().unwrap().clone();
    assert_eq!((r.durable, r.discarded, r.applied), (1, 1, 6), "{r:?}");
    let rows = dump(&e);
    let mut one = wide_row(1);
    one[8..11].copy_from_slice(&[7, 7, 5]);
    one[20] = 4;
    one[63] = 9;
    assert_eq!(
        rows[&(2, 1)],
        one.to_vec(),
        "updates applied out of version order"
    );
    assert_eq!(rows[&(2, 2)], wide_row(2).to_vec());
    assert_eq!(rows[&(2, 3)], wide_row(3).to_vec());
}

#[test]
fn an_update_of_a_missing_version_or_out_of_its_row_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, runs, prev, why) in [
        (
            "gap",
            &[(0u16, &[1u8][..])][..],
            tid(1, 2),
            "not in the log",
        ),
        (
            "long",
            &[(60, &[1u8; 8][..])][..],
            tid(1, 1),
            "does not fit",
        ),
    ] {
        let d = dir.path().join(name);
        let mut b = Vec::new();
        log::append_put(&mut b, tid(1, 1), T_WIDE.0, &key(1), &wide_row(1));
        update(&mut b, tid(1, 3), 1, prev, runs);
        write_log(&d, &[(1, log::BLOCK_DATA, b)]);
        let before = std::fs::read(d.join(log::LOG_FILE)).unwrap();
        let err = open(&opts(&d, LogMode::Sync, 1)).err().expect("refused");
        assert!(err.to_string().contains(why), "{name}: {err}");
        assert_eq!(std::fs::read(d.join(log::LOG_FILE)).unwrap(), before);
    }
}

#[test]
fn foreign_missing_and_unasked_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = |r: api::Result<MemoryEngine>| {
        let e = r.err().expect("accepted").to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
        e
    };
    // check (create: false) on an empty directory, and without a directory.
    let empty = dir.path().join("empty");
    let ro = |d: &Path| EngineOptions {
        create: false,
        ..opts(d, LogMode::Off, 1)
    };
    assert!(one_line(open(&ro(&empty))).contains("no memory-engine log"));
    assert!(!empty.exists(), "check created the directory");
    let no_dir = EngineOptions {
        create: false,
        ..EngineOptions::default()
    };
    assert!(one_line(open(&no_dir)).contains("--log-dir"));
    // A marker without its log.
    let d = dir.path().join("nolog");
    write_log(&d, &[]);
    std::fs::remove_file(d.join(log::LOG_FILE)).unwrap();
    assert!(one_line(open(&opts(&d, LogMode::Sync, 1))).contains("missing"));
    // A marker of another log.
    let d = dir.path().join("othermarker");
    write_log(&d, &[]);
    let m = LoadMarker {
        database_id: 7,
        log_bytes: 32,
    };
    std::fs::write(d.join(log::MARKER_FILE), log::MARKER.encode(&m)).unwrap();
    assert!(one_line(open(&opts(&d, LogMode::Sync, 1))).contains("another log"));
    // A log of another schema.
    let d = dir.path().join("schema");
    write_log(&d, &[]);
    let mut other = Schema::new();
    other.add(TableDef::new("x", 8, IndexKind::Hash, 10));
    let r = MemoryEngine::open(Arc::new(other), &opts(&d, LogMode::Sync, 1));
    assert!(one_line(r).contains("another schema"));
    // A file that is not a log, also under --reload; an old format-1 log.
    let d = dir.path().join("foreign");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(log::LOG_FILE), b"some notes").unwrap();
    assert!(one_line(open(&opts(&d, LogMode::Sync, 1))).contains("not a memory-engine log"));
    let reload = EngineOptions {
        reload: true,
        ..opts(&d, LogMode::Sync, 1)
    };
    assert!(one_line(open(&reload)).contains("refuses to remove"));
    assert_eq!(std::fs::read(d.join(log::LOG_FILE)).unwrap(), b"some notes");
    let mut v1 = b"OLTPMLOG".to_vec();
    v1.extend_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&0u32.to_le_bytes());
    std::fs::write(d.join(log::LOG_FILE), &v1).unwrap();
    assert!(one_line(open(&opts(&d, LogMode::Sync, 1))).contains("format 1"));
    // A run with --log off on a directory holding a log would not log its changes.
    let d = dir.path().join("logoff");
    write_log(&d, &[]);
    assert!(one_line(open(&opts(&d, LogMode::Off, 1))).contains("--log sync"));
}

/// `conformance::logged::log_cut_before_its_durable_mark_is_refused`.
#[test]
fn a_log_cut_before_its_durable_mark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    logged::log_cut_before_its_durable_mark_is_refused(
        open,
        |d| opts(d, LogMode::Sync, 1),
        read_only,
        &FILES,
        &dir.path().join("db"),
    );
}

/// The options of `check`: recover, write nothing.
fn read_only(d: &Path) -> EngineOptions {
    EngineOptions {
        create: false,
        ..opts(d, LogMode::Off, 1)
    }
}
