//! Checkpoints: taken while writers run, recovery from the newest one plus the log after
//! it gives back every acknowledged commit, whole transactions only, and every index;
//! crash images (marker, then checkpoint, then log) taken while writers and the
//! checkpointer run recover; recovery reads only the log after the checkpoint; a
//! damaged, missing or foreign checkpoint is refused in one line, no file changed; the
//! log's prefix is freed (holes) and reads back only with its checkpoint.

use api::{Engine, EngineOptions, LogMode, Session};
use conformance::logged::{self, key, ordered_row, schema, wide_row, Dump};
use conformance::logged::{T_HASH, T_ORDERED, T_WIDE};
use engine_memory::checkpoint::{CKPT_FILE, CKPT_TMP};
use engine_memory::log;
use engine_memory::{MemoryEngine, MemoryOptions};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn opts(dir: &Path, mode: LogMode, threads: usize, ckpt: Option<u64>) -> EngineOptions {
    EngineOptions {
        threads,
        log: mode,
        log_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
    .with_own(MemoryOptions {
        checkpoint_log_bytes: ckpt,
        ..MemoryOptions::default()
    })
}

fn read_only(d: &Path) -> EngineOptions {
    EngineOptions {
        create: false,
        ..opts(d, LogMode::Off, 1, None)
    }
}

fn open(o: &EngineOptions) -> api::Result<MemoryEngine> {
    MemoryEngine::open(Arc::new(schema(true)), o)
}

/// Every row of the ordered table (by a scan) and of the hash tables (keys `hkeys`),
/// with both secondary indexes checked against the ordered rows.
fn dump(e: &MemoryEngine, hkeys: &[u64]) -> Dump {
    logged::dump(e, &[T_HASH, T_WIDE], hkeys.iter().copied())
}

/// Worker `w`'s ordered key of sequence `s`.
fn wkey(w: u64, s: u64) -> u64 {
    w << 32 | s
}

/// The counter rows of worker `w` (hash tables).
fn ckey(w: u64) -> u64 {
    1000 + w
}

/// Worker `w`'s transaction `t` (from 1): insert key `t`; when `t % 3 == 0` delete key
/// `t - 2`; when `t % 3 == 1` (and `t >= 4`) insert again key `t - 3`, deleted by
/// transaction `t - 1`, with another row; bump the counters (the wide one as an update
/// record). All of it or nothing is in any recovered state.
fn txn(s: &mut Session<engine_memory::MemoryWorker<'_>>, w: u64, t: u64) {
    s.run_retry(0, 100_000, |s| {
        s.insert(T_ORDERED, &key(wkey(w, t)), &ordered_row(w, wkey(w, t)))?;
        if t.is_multiple_of(3) {
            assert!(s.delete(T_ORDERED, &key(wkey(w, t - 2)))?);
        }
        if t % 3 == 1 && t >= 4 {
            s.insert(
                T_ORDERED,
                &key(wkey(w, t - 3)),
                &ordered_row(w + 100, wkey(w, t - 3)),
            )?;
        }
        s.update(T_HASH, &key(ckey(w)), |r| {
            r.copy_from_slice(&t.to_le_bytes())
        })?;
        s.update(T_WIDE, &key(ckey(w)), |r| {
            r[0..8].copy_from_slice(&t.to_le_bytes());
            r[8 + (t % 50) as usize] ^= 1;
        })?;
        Ok(())
    })
    .unwrap();
}

/// What worker `w`'s ordered rows are after its first `c` transactions.
fn model(w: u64, c: u64) -> BTreeMap<u64, Vec<u8>> {
    let mut m = BTreeMap::new();
    for t in 1..=c {
        m.insert(wkey(w, t), ordered_row(w, wkey(w, t)).to_vec());
        if t.is_multiple_of(3) {
            m.remove(&wkey(w, t - 2));
        }
        if t % 3 == 1 && t >= 4 {
            m.insert(
                wkey(w, t - 3),
                ordered_row(w + 100, wkey(w, t - 3)).to_vec(),
            );
        }
    }
    m
}

/// The state `rows` recovered is whole: each worker's counters agree and its ordered
/// rows are exactly those of its first `counter` transactions, which include `acked`.
fn check_whole(rows: &Dump, threads: u64, acked: &[u64], what: &str) {
    for w in 0..threads {
        let c = u64::from_le_bytes(rows[&(1, ckey(w))][..].try_into().unwrap());
        let cw = u64::from_le_bytes(rows[&(2, ckey(w))][0..8].try_into().unwrap());
        assert_eq!(c, cw, "{what}: worker {w}: counters {c} and {cw} differ");
        assert!(
            c >= acked[w as usize],
            "{what}: worker {w}: acknowledged transaction {} lost (recovered {c})",
            acked[w as usize]
        );
        let got: BTreeMap<u64, Vec<u8>> = rows
            .iter()
            .filter(|(k, _)| k.0 == 0 && k.1 >> 32 == w)
            .map(|(k, v)| (k.1, v.clone()))
            .collect();
        assert!(
            got == model(w, c),
            "{what}: worker {w}: rows are not those of {c} transactions"
        );
    }
}

fn setup(e: &MemoryEngine, threads: u64) {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for w in 0..threads {
            s.insert(T_HASH, &key(ckey(w)), &0u64.to_le_bytes())?;
            s.insert(T_WIDE, &key(ckey(w)), &wide_row(0))?;
        }
        Ok(())
    })
    .unwrap();
}

fn checkpoints(e: &MemoryEngine) -> u64 {
    e.checkpointer().map_or(0, |c| c.count())
}

/// Writers run (inserts, deletes, re-inserts of deleted keys, updates logged as
/// changes) while the checkpointer takes checkpoints as often as it can; crash images
/// are copied meanwhile. The clean reopen and every image recover a whole state that
/// holds every commit acknowledged before it, with every index.
#[test]
fn checkpoints_under_writers_and_crash_images_keep_every_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let threads = 2u64;
    let e = open(&opts(&d, LogMode::Sync, threads as usize, Some(0))).unwrap();
    setup(&e, threads);
    e.load_done().unwrap();
    let acked: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let images = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for w in 0..threads {
            let (e, acked, stop) = (&e, &acked, &stop);
            sc.spawn(move || {
                let mut s = Session::new(e.worker(w as usize));
                let mut t = 0;
                while !stop.load(Ordering::Relaxed) {
                    t += 1;
                    txn(&mut s, w, t);
                    acked[w as usize].store(t, Ordering::Release);
                }
            });
        }
        let t0 = Instant::now();
        while checkpoints(&e) < 4 || images.lock().unwrap().len() < 8 {
            assert!(t0.elapsed() < Duration::from_secs(60), "no checkpoints");
            std::thread::sleep(Duration::from_millis(20));
            let before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
            let n = checkpoints(&e);
            // As a crash leaves them: the marker, then the checkpoint, then the log.
            // (A checkpoint finished between the copies would have freed log bytes the
            // copied one needs, a state no crash leaves: copy again.)
            // Each as it stood at one instant (`read_settled`).
            let marker = logged::read_settled(&d.join(log::MARKER_FILE)).unwrap();
            let ckpt = logged::read_settled(&d.join(CKPT_FILE));
            let bytes = logged::read_settled(&d.join(log::LOG_FILE)).unwrap();
            if checkpoints(&e) == n {
                images.lock().unwrap().push((before, marker, ckpt, bytes));
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let acked: Vec<u64> = acked.iter().map(|a| a.load(Ordering::Acquire)).collect();
    let hkeys: Vec<u64> = (0..threads).map(ckey).collect();
    let want = dump(&e, &hkeys);
    check_whole(&want, threads, &acked, "the running engine");
    let stats = e.stats();
    assert!(
        stats["log"]["checkpoints"].as_u64().unwrap() >= 4,
        "{stats}"
    );
    e.shutdown().unwrap();
    drop(e);

    // A clean reopen: the newest checkpoint and the log after it.
    let e = open(&opts(&d, LogMode::Sync, 1, None)).unwrap();
    let r = e.recovered().unwrap();
    assert!(
        r.checkpoint.is_some(),
        "recovery did not start from the checkpoint"
    );
    assert_eq!(
        dump(&e, &hkeys),
        want,
        "recovered from the checkpoint: rows differ"
    );
    drop(e);

    let images = images.into_inner().unwrap();
    let with_ckpt = images.iter().filter(|i| i.2.is_some()).count();
    assert!(with_ckpt >= 2, "only {with_ckpt} images hold a checkpoint");
    for (i, (acked, marker, ckpt, bytes)) in images.into_iter().enumerate() {
        let sd = dir.path().join(format!("image{i}"));
        std::fs::create_dir_all(&sd).unwrap();
        std::fs::write(sd.join(log::MARKER_FILE), &marker).unwrap();
        if let Some(c) = &ckpt {
            std::fs::write(sd.join(CKPT_FILE), c).unwrap();
        }
        std::fs::write(sd.join(log::LOG_FILE), &bytes).unwrap();
        let e = open(&read_only(&sd)).unwrap_or_else(|e| panic!("image {i}: {e}"));
        assert_eq!(e.recovered().unwrap().checkpoint.is_some(), ckpt.is_some());
        let rows = dump(&e, &hkeys);
        check_whole(&rows, threads, &acked, &format!("image {i}"));
        drop(e);
        // It continues: a run on it, a checkpoint, a clean stop, a reopen.
        let e = open(&opts(&sd, LogMode::Sync, 1, None)).unwrap();
        let mut s = Session::new(e.worker(0));
        s.run(0, |s| {
            s.insert(T_ORDERED, &key(7 << 40), &ordered_row(9, 7 << 40))
        })
        .unwrap();
        drop(s);
        e.checkpointer()
            .unwrap()
            .take()
            .unwrap()
            .expect("a checkpoint");
        e.shutdown().unwrap();
        drop(e);
        let e = open(&read_only(&sd)).unwrap();
        let again = dump(&e, &hkeys);
        assert!(again.contains_key(&(0, 7 << 40)), "image {i}");
        assert_eq!(again.len(), rows.len() + 1, "image {i}");
    }
}

/// Every file of `d`, for "nothing changed".
fn files(d: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn one_line(r: api::Result<MemoryEngine>) -> String {
    let err = r.err().expect("accepted").to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// A database of `n` ordered rows (one Sync commit each) in `d`, then a checkpoint
/// taken by hand and `after` more commits; cleanly stopped. Returns the rows, the
/// blocks the log had at the checkpoint and those written after it.
fn build(d: &Path, n: u64, after: u64) -> (Dump, u64, u64) {
    let e = open(&opts(d, LogMode::Sync, 1, None)).unwrap();
    setup(&e, 1);
    let mut s = Session::new(e.worker(0));
    for k in 0..n {
        s.run(0, |s| s.insert(T_ORDERED, &key(k), &ordered_row(k % 5, k)))
            .unwrap();
    }
    e.load_done().unwrap();
    let done = e
        .checkpointer()
        .unwrap()
        .take()
        .unwrap()
        .expect("a checkpoint");
    assert_eq!(done.end.rows, n + 2);
    let at = e.stats()["log"]["blocks"].as_u64().unwrap();
    for k in 0..after {
        s.run(0, |s| {
            s.delete(T_ORDERED, &key(k))?;
            s.insert(T_ORDERED, &key(n + k), &ordered_row(1, n + k))
        })
        .unwrap();
    }
    drop(s);
    let rows = dump(&e, &[ckey(0)]);
    let stats = e.stats();
    let written = stats["log"]["blocks"].as_u64().unwrap() - at;
    assert_eq!(stats["log"]["checkpoints"], 1, "{stats}");
    e.shutdown().unwrap();
    (rows, at, written)
}

/// Recovery after a checkpoint reads the log after it, not the whole log; the log's
/// prefix was freed, and without its checkpoint the log is refused as damaged.
#[test]
fn recovery_reads_only_the_log_after_the_checkpoint_and_the_prefix_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let (want, at, written) = build(&d, 300, 5);
    assert!(at >= 300, "{at} blocks before the checkpoint");
    let e = open(&read_only(&d)).unwrap();
    let r = e.recovered().unwrap().clone();
    assert_eq!(dump(&e, &[ckey(0)]), want);
    assert!(
        r.blocks <= written + 2,
        "recovery read {} blocks; {written} were written after the checkpoint",
        r.blocks
    );
    assert_eq!(r.checkpoint.unwrap().rows, 302);
    drop(e);

    // The freed prefix: zeros on disk (where the file system punches holes).
    let logp = d.join(log::LOG_FILE);
    let bytes = std::fs::read(&logp).unwrap();
    let end = r.checkpoint.unwrap().tomb_from as usize;
    assert!(end > 8192, "{end}");
    let freed = bytes[4096..end / 4096 * 4096].iter().all(|&b| b == 0);
    if !freed {
        eprintln!("the file system did not punch holes: the rest of this test needs them");
        return;
    }
    let ck = d.join(CKPT_FILE);
    let saved = std::fs::read(&ck).unwrap();
    std::fs::remove_file(&ck).unwrap();
    let before = files(&d);
    let err = one_line(open(&read_only(&d)));
    assert!(
        err.contains("damaged") && err.contains("memory.log"),
        "{err}"
    );
    assert_eq!(files(&d), before, "a refused open changed a file");
    std::fs::write(&ck, saved).unwrap();
    assert_eq!(dump(&open(&read_only(&d)).unwrap(), &[ckey(0)]), want);
}

#[test]
fn a_damaged_foreign_or_lone_checkpoint_is_refused_and_reload_removes_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("db");
    let (want, _, _) = build(&d, 50, 3);
    let ck = d.join(CKPT_FILE);
    let good = std::fs::read(&ck).unwrap();
    let n = good.len();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "a flipped byte in a row",
            {
                let mut b = good.clone();
                b[200] ^= 0x40;
                b
            },
            "damaged at byte",
        ),
        ("no end block", good[..n - 64].to_vec(), "no end block"),
        (
            "cut inside the end block",
            good[..n - 10].to_vec(),
            "damaged at byte",
        ),
        (
            "bytes after the end",
            [&good[..], &[0u8; 7]].concat(),
            "after its end block",
        ),
        (
            "a bad header",
            {
                let mut b = good.clone();
                b[20] ^= 1;
                b
            },
            "header checksum",
        ),
        (
            "not a checkpoint",
            b"something else entirely, long enough".to_vec(),
            "not a memory-engine checkpoint",
        ),
    ];
    for (what, bytes, says) in cases {
        std::fs::write(&ck, &bytes).unwrap();
        for o in [read_only(&d), opts(&d, LogMode::Sync, 1, None)] {
            let before = files(&d);
            let err = one_line(open(&o));
            assert!(
                err.contains(says) && err.contains("memory.ckpt"),
                "{what}: {err}"
            );
            assert_eq!(files(&d), before, "{what}: a refused open changed a file");
        }
    }
    // Another database's checkpoint.
    let d2 = dir.path().join("other");
    build(&d2, 10, 0);
    std::fs::write(&ck, std::fs::read(d2.join(CKPT_FILE)).unwrap()).unwrap();
    let err = one_line(open(&read_only(&d)));
    assert!(err.contains("another log"), "{err}");
    // The checkpoint names log bytes the log no longer has (cut to its end).
    std::fs::write(&ck, &good).unwrap();
    assert_eq!(dump(&open(&read_only(&d)).unwrap(), &[ckey(0)]), want);
    let logp = d.join(log::LOG_FILE);
    let whole = std::fs::read(&logp).unwrap();
    let log_from = {
        let e = open(&read_only(&d)).unwrap();
        e.recovered().unwrap().checkpoint.unwrap().log_from as usize
    };
    std::fs::write(&logp, &whole[..log_from - 1]).unwrap();
    let before = files(&d);
    let err = one_line(open(&read_only(&d)));
    assert!(err.contains("memory.log"), "{err}");
    assert_eq!(files(&d), before);
    std::fs::write(&logp, &whole).unwrap();
    // A checkpoint without its log.
    std::fs::rename(&logp, d.join("saved.log")).unwrap();
    let err = one_line(open(&read_only(&d)));
    assert!(
        err.contains("memory.ckpt") && err.contains("missing"),
        "{err}"
    );
    std::fs::rename(d.join("saved.log"), &logp).unwrap();
    // --reload removes the checkpoint (and an unfinished one) with the log.
    std::fs::write(d.join(CKPT_TMP), &good[..5]).unwrap();
    let e = open(&EngineOptions {
        reload: true,
        ..opts(&d, LogMode::Sync, 1, None)
    })
    .unwrap();
    assert!(!e.has_data());
    drop(e);
    assert!(!ck.exists() && !d.join(CKPT_TMP).exists());
    // A foreign file where the checkpoint belongs is not removed.
    std::fs::write(&ck, b"not ours").unwrap();
    let err = one_line(open(&EngineOptions {
        reload: true,
        ..opts(&d, LogMode::Sync, 1, None)
    }));
    assert!(err.contains("refuses to remove"), "{err}");
    assert_eq!(std::fs::read(&ck).unwrap(), b"not ours");
}

fn tid(epoch: u64, seq: u64) -> u64 {
    epoch << 32 | seq << 3
}

/// A log and marker written by hand (database 42); returns each block's offset.
fn write_log(d: &Path, blocks: &[(u64, u32, Vec<u8>)]) -> Vec<u64> {
    std::fs::create_dir_all(d).unwrap();
    let header = log::FileHeader {
        database_id: 42,
        schema: schema(true).fingerprint(),
    };
    let mut f = log::HEADER.encode(&header).to_vec();
    let mut at = Vec::new();
    for (durable, count, records) in blocks {
        at.push(f.len() as u64);
        let mut b = vec![0u8; log::BLOCK_HEADER_BYTES];
        b.extend_from_slice(records);
        log::seal_block(&mut b, *durable, *count, log::BLOCK_DATA);
        f.extend_from_slice(&b);
    }
    std::fs::write(d.join(log::LOG_FILE), &f).unwrap();
    let m = log::LoadMarker {
        database_id: 42,
        log_bytes: log::FILE_HEADER_BYTES as u64,
    };
    std::fs::write(d.join(log::MARKER_FILE), log::MARKER.encode(&m)).unwrap();
    at
}

/// A checkpoint written by hand: `rows` (one block) and the end block's fields.
fn write_ckpt(d: &Path, rows: &[u8], count: u32, end: [u64; 4]) {
    let header = log::FileHeader {
        database_id: 42,
        schema: schema(true).fingerprint(),
    };
    let mut f = engine_memory::checkpoint::HEADER.encode(&header).to_vec();
    let mut b = vec![0u8; log::BLOCK_HEADER_BYTES];
    b.extend_from_slice(rows);
    log::seal_block(&mut b, end[2], count, log::BLOCK_DATA);
    f.extend_from_slice(&b);
    let mut b = vec![0u8; log::BLOCK_HEADER_BYTES];
    for x in end {
        b.extend_from_slice(&x.to_le_bytes());
    }
    log::seal_block(&mut b, end[2], 0, log::BLOCK_END);
    f.extend_from_slice(&b);
    std::fs::write(d.join(CKPT_FILE), f).unwrap();
}

/// A delete appended before `log_from` and an older put of its key after it (two
/// commits' appends reach the buffers in either order): the checkpoint's scan saw the
/// key deleted, and recovery must not bring it back. The delete is in
/// `tomb_from..log_from`, which recovery reads for its deletes; read from `log_from`
/// alone (the control) the old put comes back.
#[test]
fn a_delete_before_log_from_still_beats_an_older_write_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let put = |b: &mut Vec<u8>, t: u64, k: u64, v: u8| log::append_put(b, t, 1, &key(k), &[v; 8]);
    let mut b0 = Vec::new();
    put(&mut b0, tid(3, 1), 1, 1);
    put(&mut b0, tid(3, 1), 2, 2);
    let mut b1 = Vec::new();
    log::append_delete(&mut b1, tid(5, 2), 1, &key(2));
    let mut b2 = Vec::new();
    put(&mut b2, tid(5, 1), 2, 9); // older than the delete, appended after it
    put(&mut b2, tid(6, 1), 3, 3); // durable only with the next block
    for (zone, want_k2) in [(true, None), (false, Some(vec![9u8; 8]))] {
        let d = dir.path().join(format!("zone{zone}"));
        let at = write_log(
            &d,
            &[
                (3, 2, b0.clone()),
                (4, 1, b1.clone()),
                (5, 2, b2.clone()),
                (6, 0, Vec::new()),
            ],
        );
        let mut rows = Vec::new();
        put(&mut rows, tid(3, 1), 1, 1);
        let tomb_from = if zone { at[1] } else { at[2] };
        write_ckpt(&d, &rows, 1, [at[2], tomb_from, 5, 1]);
        let e = open(&read_only(&d)).unwrap();
        let r = e.recovered().unwrap();
        assert_eq!(
            r.blocks,
            if zone { 3 } else { 2 },
            "blocks read from tomb_from"
        );
        let mut s = Session::new(e.worker(0));
        let mut got = BTreeMap::new();
        s.run(0, |s| {
            for k in 1..4 {
                s.get(T_HASH, &key(k), |r| {
                    got.insert(k, r.to_vec());
                })?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(got.get(&1), Some(&vec![1u8; 8]));
        assert_eq!(got.get(&3), Some(&vec![3u8; 8]));
        assert_eq!(got.get(&2).cloned(), want_k2, "tomb zone read: {zone}");
    }
}
