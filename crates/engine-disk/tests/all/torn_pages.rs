//! Torn-page protection (the double-write file), the write-back order the checkpoint
//! relies on, full disks, and pages newer than the log. The faults are injected through
//! the `storage::File` the pool writes with (a wrapper around the real file), or made by
//! hand in the files between two opens, as a crash would leave them.

use crate::common;
use api::{Engine, LogMode, Session, TableId};
use common::*;
use engine_disk::bpool::doublewrite::{self, DoubleWrite};
use engine_disk::bpool::BufferPool;
use engine_disk::latch::Mode;
use engine_disk::log::Log;
use engine_disk::page::{self, PageType, PAGE_SIZE};
use engine_disk::DiskEngine;
use parking_lot::Mutex;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use storage::{File, Open, Storage};

const DB_ID: u64 = 0x5eed_0000_0000_0007;

// ---------------------------------------------------------------------------------------
// A data file with faults.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// A write starting in this page.
    Write(u64),
    Sync,
}

/// An armed pause: the operation, then "entered" to the test and "resume" from it.
type Pause = (Op, Sender<()>, Receiver<()>);

/// Faults shared by a wrapped file and the test driving it.
#[derive(Debug, Default)]
struct Faults {
    /// Bytes the file may still take; at 0 every write fails with ENOSPC.
    budget: Mutex<Option<usize>>,
    /// Pause at the next operation equal to this one: tell `entered`, wait for `resume`.
    pause: Mutex<Option<Pause>>,
    /// Every write and sync that reached the file, in order.
    ops: Mutex<Vec<Op>>,
    /// The page whose write the full disk cut.
    cut: Mutex<Option<u64>>,
}

impl Faults {
    fn full_after(&self, bytes: usize) {
        *self.budget.lock() = Some(bytes);
    }
    /// Arm a pause at `op`; returns (entered, resume).
    fn pause_at(&self, op: Op) -> (Receiver<()>, Sender<()>) {
        let (entered_tx, entered_rx) = channel();
        let (resume_tx, resume_rx) = channel();
        *self.pause.lock() = Some((op, entered_tx, resume_rx));
        (entered_rx, resume_tx)
    }
    fn maybe_pause(&self, op: Op) {
        let armed = {
            let mut p = self.pause.lock();
            match &*p {
                Some((o, _, _)) if *o == op => p.take(),
                _ => None,
            }
        };
        if let Some((_, entered, resume)) = armed {
            entered.send(()).unwrap();
            resume.recv().unwrap();
        }
    }
    fn writes(&self) -> usize {
        self.ops
            .lock()
            .iter()
            .filter(|o| matches!(o, Op::Write(_)))
            .count()
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Arc<dyn File>,
    faults: Arc<Faults>,
}

impl File for FaultyFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.inner.read_at(buf, off)
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        let op = Op::Write(off / PAGE_SIZE as u64);
        self.faults.maybe_pause(op);
        let mut budget = self.faults.budget.lock();
        let n = match *budget {
            None => buf.len(),
            Some(0) => {
                self.faults.cut.lock().get_or_insert(off / PAGE_SIZE as u64);
                // As the OS file reports it (the kind is what callers test).
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    format!(
                        "writing {}: No space left on device (os error 28)",
                        self.path().display()
                    ),
                ));
            }
            Some(left) => left.min(buf.len()),
        };
        let n = self.inner.write_at(&buf[..n], off)?;
        if let Some(left) = budget.as_mut() {
            *left -= n;
        }
        self.faults.ops.lock().push(op);
        Ok(n)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.faults.maybe_pause(Op::Sync);
        self.faults.ops.lock().push(Op::Sync);
        self.inner.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
}

/// The operating system's files, with faults on every `data.db` opened.
#[derive(Debug)]
struct FaultyStorage {
    os: Arc<dyn Storage>,
    faults: Arc<Faults>,
}

impl Storage for FaultyStorage {
    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn File>> {
        let f = self.os.open(path, how)?;
        if path.file_name().is_some_and(|n| n == "data.db") {
            return Ok(Arc::new(FaultyFile {
                inner: f,
                faults: self.faults.clone(),
            }));
        }
        Ok(f)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.os.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.os.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.os.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.os.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.os.list(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.os.exists(path)
    }
}

// ---------------------------------------------------------------------------------------
// Pools over a data file and a double-write file in a directory.

fn data_file(dir: &Path) -> Arc<dyn File> {
    let st = storage::os();
    let path = dir.join("data.db");
    match st.open(&path, Open::ReadWrite) {
        Ok(f) => f,
        Err(_) => st.open(&path, Open::CreateNew).unwrap(),
    }
}

fn open_dw(dir: &Path) -> DoubleWrite {
    let st = storage::os();
    if dir.join(doublewrite::NAME).exists() {
        DoubleWrite::open(&*st, dir, DB_ID, Open::ReadWrite).unwrap()
    } else {
        DoubleWrite::create(&*st, dir, DB_ID).unwrap()
    }
}

/// A pool with a log that keeps nothing (its next LSN is 64: pages carry LSNs below).
fn pool_over(file: Arc<dyn File>, dw: Option<DoubleWrite>) -> BufferPool {
    BufferPool::new(file, dw, 64, 1, Arc::new(Log::memory_only()))
        .with_content_check(engine_disk::check_content)
}

/// A pool with a double-write file over a data file whose faults the test controls.
fn faulty_pool(dir: &Path) -> (BufferPool, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let file = Arc::new(FaultyFile {
        inner: data_file(dir),
        faults: faults.clone(),
    });
    (pool_over(file, Some(open_dw(dir))), faults)
}

fn pool(dir: &Path, with_dw: bool) -> BufferPool {
    pool_over(data_file(dir), with_dw.then(|| open_dw(dir)))
}

/// Set page `pid`'s value (bytes 100 and 8000, one in each half) to `val` at LSN `lsn`,
/// dirty.
fn put(p: &BufferPool, pid: u64, val: u64, lsn: u64) {
    let log = Log::memory_only();
    let mut g = p.fix(pid, Mode::X).unwrap();
    let pg = g.page_mut();
    if page::page_type(pg) == PageType::Free as u8 {
        page::format(pg, pid, PageType::Heap);
    }
    page::put_u64(pg, 100, val);
    page::put_u64(pg, 8000, val);
    page::set_lsn(pg, lsn);
    g.mark_dirty(&log);
}

fn get(p: &BufferPool, pid: u64) -> api::Result<u64> {
    let g = p.fix(pid, Mode::S)?;
    let v = page::get_u64(g.page(), 100);
    assert_eq!(
        page::get_u64(g.page(), 8000),
        v,
        "page {pid} mixes two versions"
    );
    Ok(v)
}

/// What a power loss or a full disk does to a page write: its second half never arrives.
fn tear(dir: &Path, pid: u64) {
    let path = dir.join("data.db");
    let mut raw = std::fs::read(&path).unwrap();
    let at = pid as usize * PAGE_SIZE;
    raw[at + PAGE_SIZE / 2..at + PAGE_SIZE].fill(0x77);
    std::fs::write(&path, raw).unwrap();
}

fn dirty(p: &BufferPool) -> Vec<u64> {
    let mut v = Vec::new();
    p.dirty_pages(&mut v);
    let mut pids: Vec<u64> = v.into_iter().map(|(pid, _)| pid).collect();
    pids.sort();
    pids
}

fn fatal(r: api::Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(api::Error::Fatal(m)) => m,
        other => panic!("expected a fatal error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Torn pages.

#[test]
fn torn_page_is_repaired_from_the_double_write_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), true);
    for pid in 1..=10 {
        put(&p, pid, pid * 11, 1);
    }
    p.flush_all().unwrap();
    drop(p);
    tear(dir.path(), 5);
    // Without the double-write file the page is lost for good.
    let m = fatal(get(&pool(dir.path(), false), 5));
    assert!(m.contains("data page 5 is damaged"), "{m}");
    // With it, the open's replay puts the intact copy back (and writes the rest of the
    // batch again: their data writes might be in the page cache only).
    let dw = open_dw(dir.path());
    let torn: Vec<u64> = dw
        .damaged_pages(&*data_file(dir.path()))
        .unwrap()
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(torn, vec![5]);
    assert_eq!(dw.replay(&*data_file(dir.path())).unwrap(), 10);
    assert!(dw
        .damaged_pages(&*data_file(dir.path()))
        .unwrap()
        .is_empty());
    assert_eq!(
        dw.replay(&*data_file(dir.path())).unwrap(),
        10,
        "idempotent"
    );
    let p = pool(dir.path(), false);
    for pid in 1..=10 {
        assert_eq!(get(&p, pid).unwrap(), pid * 11, "page {pid}");
    }
}

/// A page whose write was cut short by a full disk (its first half written) is repaired;
/// the batch's pages that never reached the file (an older version there, or past its
/// end) are written too.
#[test]
fn pages_of_a_batch_cut_by_a_full_disk_are_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty_pool(dir.path());
    put(&p, 1, 7, 1);
    put(&p, 2, 14, 1);
    p.flush_all().unwrap();
    // The batch, in frame order: 1 (torn), 2 and 3 (never reached the file).
    put(&p, 1, 1000, 2);
    put(&p, 2, 2000, 2);
    put(&p, 3, 3000, 2);
    faults.full_after(PAGE_SIZE / 2);
    let m = fatal(p.clean());
    assert!(m.contains("no space left") && m.contains("(page 1)"), "{m}");
    assert_eq!(*faults.cut.lock(), Some(1));
    drop(p);
    // "Free space", reopen.
    assert!(fatal(get(&pool(dir.path(), false), 1)).contains("damaged"));
    let dw = open_dw(dir.path());
    let torn: Vec<u64> = dw
        .damaged_pages(&*data_file(dir.path()))
        .unwrap()
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(torn, vec![1, 3], "torn, and zeros past the end");
    assert_eq!(dw.replay(&*data_file(dir.path())).unwrap(), 3);
    let p = pool(dir.path(), false);
    let got: Vec<u64> = (1..=3).map(|pid| get(&p, pid).unwrap()).collect();
    assert_eq!(got, vec![1000, 2000, 3000]);
}

/// Each page is repaired from its newest copy in the ring, never an older one; a page
/// whose last write left the ring (its data write made durable before the region was
/// reused) has no copy, and a damaged page without a copy is refused, not replaced.
#[test]
fn stale_or_damaged_copies_are_never_used() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), true);
    for pid in 1..=20 {
        put(&p, pid, 1, 1); // batch 1
    }
    p.flush_all().unwrap();
    put(&p, 10, 2, 2);
    p.flush_all().unwrap(); // batch 2: page 10's second version
    put(&p, 3, 3, 3);
    p.flush_all().unwrap(); // batch 3
    drop(p);
    tear(dir.path(), 10);
    let dw = open_dw(dir.path());
    let torn = dw.damaged_pages(&*data_file(dir.path())).unwrap();
    assert_eq!(torn.len(), 1);
    assert_eq!(torn[0].0, 10);
    assert_eq!(page::get_u64(&torn[0].1[..], 100), 2, "the newest copy");
    assert_eq!(
        dw.replay(&*data_file(dir.path())).unwrap(),
        20,
        "each page once, from its newest copy"
    );
    assert_eq!(get(&pool(dir.path(), false), 10).unwrap(), 2);

    // Page 10's last write leaves the ring after `REGIONS` more batches.
    let p = pool(dir.path(), true);
    for b in 0..doublewrite::REGIONS as u64 {
        put(&p, 30 + b, 4, 4);
        p.flush_all().unwrap();
    }
    drop(p);
    tear(dir.path(), 10);
    let dw = open_dw(dir.path());
    assert!(dw
        .damaged_pages(&*data_file(dir.path()))
        .unwrap()
        .is_empty());
    dw.replay(&*data_file(dir.path())).unwrap();
    let m = fatal(get(&pool(dir.path(), false), 10));
    assert!(m.contains("data page 10 is damaged"), "{m}");

    // A copy failing its own checksum was being written when the batch stopped: ignored.
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), true);
    put(&p, 4, 44, 1);
    p.flush_all().unwrap();
    drop(p);
    let dw_path = dir.path().join(doublewrite::NAME);
    let mut raw = std::fs::read(&dw_path).unwrap();
    raw[2 * PAGE_SIZE + 500] ^= 1; // the batch's first image
    std::fs::write(&dw_path, raw).unwrap();
    assert_eq!(
        open_dw(dir.path()).replay(&*data_file(dir.path())).unwrap(),
        0
    );
    assert_eq!(
        get(&pool(dir.path(), false), 4).unwrap(),
        44,
        "intact page kept"
    );
    tear(dir.path(), 4);
    assert_eq!(
        open_dw(dir.path()).replay(&*data_file(dir.path())).unwrap(),
        0
    );
    assert!(fatal(get(&pool(dir.path(), false), 4)).contains("damaged"));
}

/// Once a batch failed, its data-file writes may be torn and `dw` holds the only intact
/// copies: no later batch may overwrite them.
#[test]
fn after_a_failed_batch_nothing_more_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty_pool(dir.path());
    put(&p, 1, 1, 1);
    put(&p, 2, 2, 1);
    faults.full_after(PAGE_SIZE + 100);
    let first = fatal(p.clean());
    assert_eq!(p.failure().as_deref(), Some(first.as_str()));
    assert!(p.failed());
    assert!(first.contains("(page 2)"), "names the page: {first}");
    assert_eq!(
        dirty(&p),
        vec![1, 2],
        "a failed write leaves its pages dirty"
    );
    let dw_before = std::fs::read(dir.path().join(doublewrite::NAME)).unwrap();
    let writes = faults.writes();
    *faults.budget.lock() = None; // space freed: still, this session writes nothing more
    assert_eq!(fatal(p.clean()), first, "the first failure, reported again");
    assert_eq!(fatal(p.flush_all()), first);
    assert!(p
        .write_through(0, &{
            let mut c = [0u8; PAGE_SIZE];
            page::format(&mut c, 0, PageType::Catalog);
            page::seal(&mut c);
            c
        })
        .is_err());
    assert_eq!(
        faults.writes(),
        writes,
        "no data-file write after the failure"
    );
    assert_eq!(
        std::fs::read(dir.path().join(doublewrite::NAME)).unwrap(),
        dw_before,
        "the double-write file keeps the failed batch's copies"
    );
    drop(p);
    assert_eq!(
        open_dw(dir.path()).replay(&*data_file(dir.path())).unwrap(),
        2
    );
    let p = pool(dir.path(), false);
    assert_eq!((get(&p, 1).unwrap(), get(&p, 2).unwrap()), (1, 2));
}

/// The same at the double-write file itself (two pools' threads racing for it): a batch
/// after a failed one is refused before it touches either file.
#[test]
fn double_write_file_refuses_batches_after_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let data = FaultyFile {
        inner: data_file(dir.path()),
        faults: faults.clone(),
    };
    let dw = open_dw(dir.path());
    let batch = |pid: u64| {
        let mut b = doublewrite::Batch::new();
        let pg = b.push(pid);
        page::format(pg, pid, PageType::Heap);
        page::set_lsn(pg, 1);
        page::seal(pg);
        b
    };
    faults.full_after(100);
    let m = fatal(dw.write(&data, &mut batch(1)));
    *faults.budget.lock() = None;
    let before = std::fs::read(dir.path().join(doublewrite::NAME)).unwrap();
    let writes = faults.writes();
    assert_eq!(fatal(dw.write(&data, &mut batch(2))), m);
    assert_eq!(faults.writes(), writes);
    assert_eq!(
        std::fs::read(dir.path().join(doublewrite::NAME)).unwrap(),
        before
    );
}

// ---------------------------------------------------------------------------------------
// The write-back order a checkpoint relies on: a page is marked clean only once its
// write is durable, so a checkpoint that does not list it as dirty may drop its log.

#[test]
fn a_page_is_clean_only_once_its_write_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty_pool(dir.path());
    let p = Arc::new(p);
    put(&p, 1, 5, 1);
    assert_eq!(dirty(&p), vec![1]);
    let (entered, resume) = faults.pause_at(Op::Write(1));
    let cleaner = {
        let p = p.clone();
        std::thread::spawn(move || p.clean())
    };
    entered.recv().unwrap();
    // The cleaner is inside the data-file write of page 1: a checkpoint taking its dirty
    // page table now must still list the page.
    assert_eq!(dirty(&p), vec![1], "page clean before its write");
    resume.send(()).unwrap();
    assert_eq!(cleaner.join().unwrap().unwrap(), 1);
    assert!(dirty(&p).is_empty());
    // The write is not synced yet (one fsync per batch, of the double-write file):
    // a checkpoint syncs the data file after taking its dirty page table, before it
    // lets recovery skip the page's log.
    let ops = faults.ops.lock().clone();
    let w = ops.iter().position(|o| *o == Op::Write(1)).unwrap();
    assert!(!ops[w..].contains(&Op::Sync), "{ops:?}");
    p.sync().unwrap();
    assert!(faults.ops.lock()[w..].contains(&Op::Sync));
}

/// A double-write region is reused only once its batch's data-file writes are durable.
#[test]
fn a_region_is_reused_only_after_a_data_file_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty_pool(dir.path());
    let n = doublewrite::REGIONS as u64;
    for b in 1..=n + 1 {
        put(&p, b, b, 1);
        p.clean().unwrap();
        let syncs = faults.ops.lock().iter().filter(|o| **o == Op::Sync).count();
        // Batches 1..=REGIONS fill the ring with no data-file fsync; the next one
        // reuses batch 1's region, so it syncs first.
        assert_eq!(syncs, (b > n) as usize, "after batch {b}");
    }
    let ops = faults.ops.lock().clone();
    let sync = ops.iter().position(|o| *o == Op::Sync).unwrap();
    let last = ops.iter().position(|o| *o == Op::Write(n + 1)).unwrap();
    assert!(sync < last, "{ops:?}");
}

/// Sequence numbers continue across opens: a copy written after a reopen is newer than
/// every copy of the earlier session, whichever region each sits in.
#[test]
fn copies_of_a_later_open_are_newer() {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), true);
    put(&p, 7, 1, 1);
    p.flush_all().unwrap(); // batch 1, region 0
    put(&p, 8, 1, 1);
    p.flush_all().unwrap(); // batch 2, region 1
    put(&p, 7, 2, 2);
    p.flush_all().unwrap(); // batch 3, region 2
    drop(p);
    let dw = open_dw(dir.path());
    dw.replay(&*data_file(dir.path())).unwrap();
    let p = pool_over(data_file(dir.path()), Some(dw));
    put(&p, 7, 3, 3);
    p.flush_all().unwrap(); // batch 4, region 3 (numbered 1 again, it would sit in region 0 and lose to batch 3)
    drop(p);
    tear(dir.path(), 7);
    let dw = open_dw(dir.path());
    dw.replay(&*data_file(dir.path())).unwrap();
    assert_eq!(get(&pool(dir.path(), false), 7).unwrap(), 3);
}

// ---------------------------------------------------------------------------------------
// Pages newer than the log.

#[test]
fn page_with_an_lsn_beyond_the_log_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = data_file(dir.path());
    for (pid, lsn) in [(2u64, 900u64), (3, 1000)] {
        let mut pg = [0u8; PAGE_SIZE];
        page::format(&mut pg, pid, PageType::Heap);
        page::set_lsn(&mut pg, lsn);
        page::seal(&mut pg);
        f.write_all_at(&pg, pid * PAGE_SIZE as u64).unwrap();
    }
    let p = BufferPool::new(f, None, 64, 4, Arc::new(Log::memory_only_at(1000)))
        .with_content_check(engine_disk::check_content);
    assert!(p.fix(2, Mode::S).is_ok());
    let m = fatal(p.fix(3, Mode::S).map(|_| ()));
    assert_eq!(
        m,
        "data page 3 has LSN 1000 beyond the log's end 1000: the log was lost, cut or replaced"
    );
}

// ---------------------------------------------------------------------------------------
// Whole engine.

const N: u64 = 300;
const ACC: TableId = TableId(0);

fn load(e: &DiskEngine) {
    let mut s = Session::new(e.worker(0));
    s.run(0, |s| {
        for i in 0..N {
            s.insert(ACC, &key(i), &row(100, (i % 5) as u32))?;
        }
        Ok(())
    })
    .unwrap();
    e.load_done().unwrap();
}

fn transfer(s: &mut Session<engine_disk::DiskWorker<'_>>, i: u64) -> api::Result<()> {
    let (a, b) = (i * 7 % N, i * 13 % N);
    s.run(0, |s| {
        s.update_row::<[u8; 24]>(ACC, &key(a), |r| {
            *r = row(bal(r) - i as i64, (a % 5) as u32)
        })?;
        s.update_row::<[u8; 24]>(ACC, &key(b), |r| {
            *r = row(bal(r) + i as i64, (b % 5) as u32)
        })?;
        Ok(())
    })
}

/// The sum of the balances and the balance of account 7 (moved by transfers).
fn state(dir: &Path) -> (i64, usize, i64) {
    let e = DiskEngine::open(schema(N), &opts(dir, LogMode::Sync, Some(200))).unwrap();
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    let (sum, n) = total(&mut s).unwrap();
    let b7 = bal(&s.get_row::<[u8; 24]>(ACC, &key(7)).unwrap().unwrap());
    s.commit().unwrap();
    (sum, n, b7)
}

/// The full-disk run: a page write cut in half by ENOSPC. The failure stops
/// commits with one line; after space is freed, the reopen replays the torn page from
/// the double-write file and recovery keeps every acknowledged commit.
#[test]
fn full_disk_stops_commits_and_a_reopen_recovers_every_acknowledged_one() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let mut o = opts(dir.path(), LogMode::Sync, Some(200));
    o.storage = Arc::new(FaultyStorage {
        os: storage::os(),
        faults: faults.clone(),
    });
    let e = DiskEngine::open(schema(N), &o).unwrap();
    load(&e);
    let mut s = Session::new(e.worker(0));
    for i in 1..=50 {
        transfer(&mut s, i).unwrap();
    }
    let acked_b7 = {
        s.begin(0).unwrap();
        let b = bal(&s.get_row::<[u8; 24]>(ACC, &key(7)).unwrap().unwrap());
        s.commit().unwrap();
        b
    };
    faults.full_after(PAGE_SIZE / 2);
    let m = fatal(e.inner().pool.clean());
    assert!(m.contains("no space left") && m.contains("data.db"), "{m}");
    // The next commit reports it, in one line, and is not acknowledged.
    let m = fatal(transfer(&mut s, 51));
    assert!(!m.contains('\n') && m.contains("no space left"), "{m}");
    drop(s);
    drop(e); // not a clean shutdown: the pool cannot write
             // The write was cut in its first half; its old second half may happen to match the
             // new one, so make sure it does not (as a power loss mid-sector could leave it).
    let pid = faults.cut.lock().expect("a write was cut");
    tear(dir.path(), pid);
    let raw = std::fs::read(dir.path().join("data.db")).unwrap();
    let pg: &[u8; PAGE_SIZE] = raw[pid as usize * PAGE_SIZE..][..PAGE_SIZE]
        .try_into()
        .unwrap();
    assert!(page::verify(pg, pid).is_err(), "page {pid} is torn");
    assert_eq!(state(dir.path()), (100 * N as i64, N as usize, acked_b7));
}

/// A double-write file that is missing, garbled, of another database or of another
/// format is refused with one line naming it; so is an engine open over such a file.
#[test]
fn missing_garbled_or_foreign_double_write_file_is_refused() {
    let st = storage::os();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join(doublewrite::NAME);
    let name = path.display().to_string();
    let refused = |id: u64| match DoubleWrite::open(&*st, d, id, Open::ReadWrite) {
        Err(api::Error::Fatal(m)) => {
            assert!(m.contains(&name) && !m.contains('\n'), "{m}");
            m
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    };
    assert!(refused(DB_ID).contains("is missing"));
    DoubleWrite::create(&*st, d, DB_ID).unwrap();
    assert!(DoubleWrite::open(&*st, d, DB_ID, Open::ReadWrite).is_ok());
    assert!(refused(DB_ID + 1).contains("belongs to another database"));
    let good = std::fs::read(&path).unwrap();
    let mut bad = good.clone();
    bad[20] ^= 1; // the database id, under the header checksum
    std::fs::write(&path, &bad).unwrap();
    assert!(refused(DB_ID).contains("bad header"));
    let mut v1 = good.clone();
    v1[8] = 1; // format version 1, checksum made right
    let c = crc32fast::hash(&v1[..28]);
    v1[28..32].copy_from_slice(&c.to_le_bytes());
    std::fs::write(&path, &v1).unwrap();
    assert!(refused(DB_ID).contains("format version 1"));
    std::fs::write(&path, b"").unwrap();
    assert!(refused(DB_ID).contains("bad header"));

    // Engine opens.
    let make = |dir: &Path| {
        let e = DiskEngine::open(schema(N), &opts(dir, LogMode::Sync, Some(200))).unwrap();
        load(&e);
        e.shutdown().unwrap();
    };
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    make(a.path());
    make(b.path());
    let open = |dir: &Path| -> String {
        fatal(DiskEngine::open(schema(N), &opts(dir, LogMode::Sync, Some(200))).map(|_| ()))
    };
    let a_dw: PathBuf = a.path().join(doublewrite::NAME);
    std::fs::copy(b.path().join(doublewrite::NAME), &a_dw).unwrap();
    let m = open(a.path());
    assert!(
        m.contains(&a_dw.display().to_string()) && m.contains("another database"),
        "{m}"
    );
    std::fs::remove_file(&a_dw).unwrap();
    let m = open(a.path());
    assert!(
        m.contains(&a_dw.display().to_string()) && m.contains("missing"),
        "{m}"
    );
}

/// A data page whose LSN lies beyond the log's end means the log was lost or replaced:
/// the engine refuses it (here a B-tree root, read when the engine opens).
#[test]
fn engine_refuses_a_page_newer_than_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let e = DiskEngine::open(schema(N), &opts(dir.path(), LogMode::Sync, Some(200))).unwrap();
    load(&e);
    e.shutdown().unwrap();
    drop(e);
    let path = dir.path().join("data.db");
    let mut raw = std::fs::read(&path).unwrap();
    let pg: &mut [u8; PAGE_SIZE] = (&mut raw[PAGE_SIZE..2 * PAGE_SIZE]).try_into().unwrap();
    assert_eq!(page::verify(pg, 1).unwrap(), PageType::BTree);
    page::set_lsn(pg, 1 << 40);
    page::seal(pg);
    std::fs::write(&path, raw).unwrap();
    let m =
        fatal(DiskEngine::open(schema(N), &opts(dir.path(), LogMode::Sync, Some(200))).map(|_| ()));
    assert!(
        m.starts_with(&format!(
            "data page 1 has LSN {} beyond the log's end",
            1u64 << 40
        )) && m.ends_with("the log was lost, cut or replaced"),
        "{m}"
    );
}
