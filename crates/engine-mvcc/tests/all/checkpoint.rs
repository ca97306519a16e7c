//! Checkpoints of the mvcc engine: taken while writers run, recovery from the newest
//! one plus the log after it gives back every acknowledged commit and every index;
//! crash images (marker, then checkpoint, then log) copied while writers and the
//! checkpointer run recover every commit acknowledged before the copy; the log's
//! prefix is freed and reads back only with its checkpoint; damaged, lone, foreign
//! checkpoints and a log cut before the checkpoint's position are refused with every
//! file left as it is; a delete before `log_from` beats an older write after it.

use api::{Engine, EngineOptions, Error, LogMode, Session};
use conformance::logged::{self, key, ordered_row, schema, Dump, T_HASH, T_ORDERED};
use engine_mvcc::checkpoint::{End, CKPT_FILE, CKPT_TMP};
use engine_mvcc::log::{self, FileHeader, LoadMarker};
use engine_mvcc::{MvccEngine, MvccOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn opts(dir: &Path, mode: LogMode, threads: usize, ckpt: Option<u64>) -> EngineOptions {
    EngineOptions {
        threads,
        log: mode,
        db_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
    .with_own(MvccOptions {
        checkpoint_log_bytes: ckpt,
    })
}

fn check_opts(dir: &Path) -> EngineOptions {
    EngineOptions {
        create: false,
        read_only: true,
        ..opts(dir, LogMode::Off, 1, None)
    }
}

fn open(o: &EngineOptions) -> api::Result<MvccEngine> {
    MvccEngine::open(Arc::new(schema(false)), o)
}

/// Every row (hash keys below 20,000), the secondary indexes checked against the rows.
fn dump(e: &MvccEngine) -> Dump {
    logged::dump(e, &[T_HASH], 0..20_000)
}

/// Random inserts, updates, deletes and re-inserts from two workers (keys split by
/// worker) while the checkpointer runs; returns what the tables must hold.
fn churn(e: &MvccEngine, txns: usize, seed: u64, model: Dump) -> Dump {
    let model = std::sync::Mutex::new(model);
    std::thread::scope(|sc| {
        for w in 0..2u64 {
            let model = &model;
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w as usize));
                let mut x = seed ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let mut done = 0;
                while done < txns {
                    let k = (next() % 400) * 2 + w;
                    let (what, v) = (next() % 3, next() as u8);
                    let r = s.run(0, |s| {
                        if what == 2 {
                            s.delete(T_ORDERED, &key(k))?;
                            return s.delete(T_HASH, &key(k)).map(|_| ());
                        }
                        let row = ordered_row(k % 3, k);
                        if !s.update(T_ORDERED, &key(k), |r| r.copy_from_slice(&row))? {
                            s.insert(T_ORDERED, &key(k), &row)?;
                        }
                        if !s.update(T_HASH, &key(k), |r| r.fill(v))? {
                            s.insert(T_HASH, &key(k), &[v; 8])?;
                        }
                        Ok(())
                    });
                    match r {
                        Ok(()) => {
                            let mut m = model.lock().unwrap();
                            if what == 2 {
                                m.remove(&(0, k));
                                m.remove(&(1, k));
                            } else {
                                m.insert((0, k), ordered_row(k % 3, k).to_vec());
                                m.insert((1, k), vec![v; 8]);
                            }
                            done += 1;
                        }
                        Err(Error::Conflict(_)) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
            });
        }
    });
    model.into_inner().unwrap()
}

/// A loaded database in `d` (rows 0..n of both tables), checkpointing whenever the
/// log grew.
fn loaded(d: &Path, n: u64) -> (MvccEngine, Dump) {
    let e = open(&opts(d, LogMode::Sync, 2, Some(0))).unwrap();
    let mut model = Dump::new();
    let mut s = Session::new(e.worker(0));
    for k in 0..n {
        s.run(0, |s| {
            s.insert(T_ORDERED, &key(k), &ordered_row(k % 3, k))?;
            s.insert(T_HASH, &key(k), &[1; 8])
        })
        .unwrap();
        model.insert((0, k), ordered_row(k % 3, k).to_vec());
        model.insert((1, k), vec![1; 8]);
    }
    drop(s);
    e.load_done().unwrap();
    (e, model)
}

fn checkpoints(e: &MvccEngine) -> u64 {
    e.checkpointer().map_or(0, |c| c.count())
}

#[test]
fn recovery_from_a_checkpoint_and_the_log_after_it_keeps_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let (e, model) = loaded(&d, 2000);
    let model = churn(&e, 1500, 7, model);
    // One more, now, so the last is recent (the thread's may still be running).
    let done = e.checkpointer().unwrap().take().unwrap().unwrap();
    assert!(checkpoints(&e) >= 1);
    assert!(done.end.rows > 0 && done.end.tomb_from <= done.end.log_from);
    let model = churn(&e, 500, 8, model);
    assert_eq!(dump(&e), model);
    let stats = e.stats();
    assert!(
        stats["log"]["log_freed_to"].as_u64().unwrap() > 0,
        "{stats}"
    );
    e.shutdown().unwrap();
    drop(e);
    // The clean reopen starts from the newest checkpoint and holds exactly the model.
    let e = open(&opts(&d, LogMode::Sync, 2, Some(u64::MAX))).unwrap();
    let r = e.recovered().unwrap().clone();
    let c = r.checkpoint.expect("recovered from a checkpoint");
    assert!(c.log_from >= done.end.log_from, "{c:?}");
    assert_eq!(dump(&e), model);
    // And it goes on: commits after recovery survive the next one.
    let model = churn(&e, 300, 9, model);
    e.shutdown().unwrap();
    drop(e);
    let e = open(&check_opts(&d)).unwrap();
    assert_eq!(dump(&e), model);
    drop(e);
    // The log's prefix is a hole: without its checkpoint the log is refused.
    std::fs::remove_file(d.join(CKPT_FILE)).unwrap();
    let before = std::fs::read(d.join(log::LOG_FILE)).unwrap();
    let err = open(&check_opts(&d)).err().expect("refused").to_string();
    assert!(err.contains("damaged"), "{err}");
    assert_eq!(std::fs::read(d.join(log::LOG_FILE)).unwrap(), before);
}

/// Copies of the directory (marker, checkpoint, log: the order a crash preserves, each
/// written whole before it is renamed or appended after the one before) taken while
/// two `Sync` writers and the checkpointer run recover every commit acknowledged
/// before the copy, and only whole transactions.
#[test]
fn crash_images_taken_while_checkpointing_keep_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let (e, _) = loaded(&d, 1000);
    let acked: [AtomicU64; 2] = Default::default();
    let stop = AtomicBool::new(false);
    let mut images = Vec::new();
    std::thread::scope(|sc| {
        for w in 0..2u64 {
            let (e, acked, stop) = (&e, &acked, &stop);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w as usize));
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && n < 9_000 {
                    let k = 1000 + n * 2 + w;
                    s.run(0, |s| {
                        s.insert(T_ORDERED, &key(k), &ordered_row(w, k))?;
                        // Delete an older key of this worker: a checkpoint must not
                        // bring it back.
                        if n >= 10 {
                            s.delete(T_ORDERED, &key(k - 20))?;
                        }
                        s.insert(T_HASH, &key(k), &[w as u8; 8])
                    })
                    .unwrap();
                    n += 1;
                    acked[w as usize].store(n, Ordering::Release);
                }
            });
        }
        // Ten images at least, two of them with a checkpoint (on a loaded machine the
        // first checkpoint may take longer than the first ten images).
        let t0 = std::time::Instant::now();
        let mut with_ckpt = 0;
        while images.len() < 10 || with_ckpt < 2 || checkpoints(&e) < 2 {
            assert!(
                t0.elapsed().as_secs() < 60,
                "the checkpointer took {}",
                checkpoints(&e)
            );
            std::thread::sleep(std::time::Duration::from_millis(30));
            let before = [0, 1].map(|w| acked[w].load(Ordering::Acquire));
            let n = checkpoints(&e);
            // As a crash leaves them: the marker, then the checkpoint, then the log, each
            // as it stood at one instant. (A checkpoint finished between the reads would
            // have freed log bytes the copied one needs, a state no crash leaves: again.)
            let files = [log::MARKER_FILE, CKPT_FILE, log::LOG_FILE]
                .map(|f| (f, logged::read_settled(&d.join(f))));
            if checkpoints(&e) != n {
                continue;
            }
            let img = dir.path().join(format!("img{}", images.len()));
            std::fs::create_dir_all(&img).unwrap();
            for (f, bytes) in files {
                if let Some(b) = bytes {
                    std::fs::write(img.join(f), b).unwrap();
                    with_ckpt += (f == CKPT_FILE) as u32;
                }
            }
            images.push((img, before));
        }
        stop.store(true, Ordering::Relaxed);
    });
    e.shutdown().unwrap();
    drop(e);
    let mut from_ckpt = 0;
    for (img, before) in images {
        let e = open(&check_opts(&img)).unwrap_or_else(|e| panic!("{}: {e}", img.display()));
        from_ckpt += e.recovered().unwrap().checkpoint.is_some() as u32;
        let rows = dump(&e);
        // Every transaction writes its hash key (never deleted) and deletes the
        // ordered key of its worker's transaction ten before.
        let has = |t: u32, w: u64, i: u64| rows.contains_key(&(t, 1000 + i * 2 + w));
        for w in 0..2u64 {
            for i in 0..before[w as usize] {
                assert!(
                    has(1, w, i),
                    "{}: acknowledged transaction {w}/{i} lost",
                    img.display()
                );
            }
            for i in 0.. {
                if !has(1, w, i) {
                    break;
                }
                assert_eq!(
                    has(0, w, i),
                    !has(1, w, i + 10),
                    "{}: key {w}/{i} (a deleted key back, or half a transaction)",
                    img.display()
                );
            }
        }
    }
    assert!(from_ckpt > 0, "no image started from a checkpoint");
}

/// Every file of `d`, to check a refusal changed none.
fn files(d: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|f| {
            let f = f.unwrap();
            (
                f.file_name().to_string_lossy().into_owned(),
                std::fs::read(f.path()).unwrap(),
            )
        })
        .collect()
}

fn refused(d: &Path, want: &str) {
    let before = files(d);
    for o in [check_opts(d), opts(d, LogMode::Sync, 1, None)] {
        let err = open(&o).err().expect("refused").to_string();
        assert!(
            err.contains(want) && !err.contains('\n'),
            "want {want}: {err}"
        );
        assert_eq!(files(d), before, "a refusal changed a file");
    }
}

#[test]
fn damaged_lone_and_foreign_checkpoints_and_a_cut_log_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let (e, _) = loaded(&d, 3000);
    let done = e.checkpointer().unwrap().take().unwrap().unwrap();
    e.shutdown().unwrap();
    drop(e);
    let copy = |name: &str| {
        let c = dir.path().join(name);
        std::fs::create_dir_all(&c).unwrap();
        for (f, b) in files(&d) {
            std::fs::write(c.join(f), b).unwrap();
        }
        c
    };
    let ck = std::fs::read(d.join(CKPT_FILE)).unwrap();
    let c = copy("flip");
    let mut b = ck.clone();
    b[ck.len() / 2] ^= 0x10;
    std::fs::write(c.join(CKPT_FILE), b).unwrap();
    refused(&c, "checkpoint file");
    let c = copy("noend");
    std::fs::write(c.join(CKPT_FILE), &ck[..ck.len() - 64]).unwrap();
    refused(&c, "has no end block");
    let c = copy("lone");
    std::fs::remove_file(c.join(log::LOG_FILE)).unwrap();
    refused(&c, "is missing");
    let c = copy("memory");
    let mut m = storage::valuelog::identity::memory::CKPT
        .encode(&FileHeader {
            database_id: 1,
            schema: 2,
        })
        .to_vec();
    m.extend_from_slice(&ck[32..]);
    std::fs::write(c.join(CKPT_FILE), m).unwrap();
    refused(&c, "a memory-engine checkpoint");
    // The log cut before the checkpoint's position (and so before the mark).
    let c = copy("cut");
    let l = std::fs::read(c.join(log::LOG_FILE)).unwrap();
    std::fs::write(c.join(log::LOG_FILE), &l[..done.end.log_from as usize - 10]).unwrap();
    refused(&c, "refused");
    // --reload removes the checkpoint and its .tmp, and starts empty.
    let c = copy("reload");
    std::fs::write(c.join(CKPT_TMP), &ck[..20]).unwrap();
    let e = open(&EngineOptions {
        reload: true,
        ..opts(&c, LogMode::Sync, 1, None)
    })
    .unwrap();
    assert!(e.recovered().is_none());
    assert!(!c.join(CKPT_FILE).exists() && !c.join(CKPT_TMP).exists());
}

/// A log and a checkpoint written by hand: the checkpoint saw key 1 deleted (no row);
/// the delete (timestamp 5) is in `tomb_from..log_from`, an older put of the key
/// (timestamp 4, appended after it) after `log_from`. Recovery must read the delete;
/// the control (`tomb_from` = `log_from`) shows the key would come back without it.
#[test]
fn a_delete_before_log_from_still_beats_an_older_write_after_it() {
    let dir = tempfile::tempdir().unwrap();
    for control in [false, true] {
        let d = dir.path().join(format!("db{control}"));
        std::fs::create_dir_all(&d).unwrap();
        let header = FileHeader {
            database_id: 42,
            schema: schema(false).fingerprint(),
        };
        let mut f = log::HEADER.encode(&header).to_vec();
        let block = |f: &mut Vec<u8>, d: u64, recs: &[(u64, Option<u8>)]| {
            let mut b = vec![0u8; log::BLOCK_HEADER_BYTES];
            for (ts, v) in recs {
                log::append(
                    &mut b,
                    *ts,
                    1,
                    &key(1),
                    v.map(|v| [v; 8]).as_ref().map(|r| &r[..]),
                );
            }
            log::seal_block(&mut b, d, recs.len() as u32, log::BLOCK_DATA);
            f.extend_from_slice(&b);
        };
        block(&mut f, 2, &[(2, Some(9))]);
        let tomb_from = f.len() as u64;
        block(&mut f, 3, &[(5, None)]);
        let log_from = f.len() as u64;
        block(&mut f, 5, &[(4, Some(8))]);
        std::fs::write(d.join(log::LOG_FILE), &f).unwrap();
        let m = LoadMarker {
            database_id: 42,
            log_bytes: f.len() as u64,
        };
        std::fs::write(d.join(log::MARKER_FILE), log::MARKER.encode(&m)).unwrap();
        let end = End {
            log_from,
            tomb_from: if control { log_from } else { tomb_from },
            durable: 5,
            rows: 0,
        };
        let mut c = engine_mvcc::checkpoint::HEADER.encode(&header).to_vec();
        let mut b = vec![0u8; log::BLOCK_HEADER_BYTES];
        b.extend_from_slice(&end.encode());
        log::seal_block(&mut b, 5, 0, log::BLOCK_END);
        c.extend_from_slice(&b);
        std::fs::write(d.join(CKPT_FILE), c).unwrap();
        let e = open(&check_opts(&d)).unwrap();
        assert_eq!(e.recovered().unwrap().checkpoint, Some(end));
        let rows = dump(&e);
        assert_eq!(rows.contains_key(&(1, 1)), control, "{rows:?}");
    }
}
