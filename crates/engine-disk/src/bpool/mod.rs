//! Buffer pool: the data file's pages cached in a fixed set of frames. Owns the page
//! table (page id -> frame, sharded), pin counts, per-frame latches, CLOCK replacement,
//! page reads (checksum-verified) and write-back of dirty pages obeying WAL (a page is
//! written only once the log is durable past its LSN), through the double-write file
//! (`doublewrite`) so that no write can leave a torn page behind.
//! It must never interpret page contents beyond the common header, and never block on
//! a latch while choosing a victim (it only try-latches there, so it cannot deadlock
//! with a caller that already holds latches).

pub mod doublewrite;

use crate::latch::{Latch, Mode};
use crate::log::{Log, Rec};
use crate::page::{self, Page, PageType, NO_PAGE, PAGE_SIZE};
use api::{Error, Result};
use crossbeam_utils::CachePadded;
use doublewrite::{Batch, DoubleWrite};
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use storage::File;

const SHARDS: usize = 64;
/// The fewest frames a pool may have: enough for the deepest latch path (a split holds
/// a root-to-leaf path plus new pages) on every worker.
pub const MIN_FRAMES: usize = 64;
/// Pages between two of `prewarm`'s progress calls (8 MiB).
const PREWARM_STEP: usize = 1024;

struct Frame {
    latch: Latch,
    page_id: AtomicU64,
    pin: AtomicU32,
    dirty: AtomicBool,
    /// LSN from which the log must be replayed to rebuild this page (valid when dirty).
    rec_lsn: AtomicU64,
    referenced: AtomicBool,
    /// A read from the data file into this frame is in progress.
    io: AtomicBool,
    /// Bumped by every X-latched access to the bytes: a write-back that copied the page
    /// at version v may mark it clean only if it is still at v.
    version: AtomicU64,
}

/// A frame's page bytes, kept apart from the frame's control block so that the control
/// blocks (pin, latch, page id) are dense and stay cached.
struct Bytes(UnsafeCell<Page>);

// SAFETY: the bytes are only accessed through a PageGuard holding the frame's latch (or
// by the thread that exclusively owns an unmapped frame).
unsafe impl Sync for Bytes {}

/// A page-table shard and its hit counter.
type ShardCell = (RwLock<Shard>, AtomicU64);

#[derive(Default)]
struct Shard {
    map: FxHashMap<u64, u32>,
}

#[derive(Default)]
pub struct PoolStats {
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub evictions: AtomicU64,
    pub hits: AtomicU64,
}

pub struct BufferPool {
    frames: Box<[Frame]>,
    bytes: Box<[Bytes]>,
    /// Page-table shards with their hit counters, each on its own cache line (threads
    /// fixing pages of different shards must not invalidate each other's lines).
    shards: Box<[CachePadded<ShardCell>]>,
    free: Mutex<Vec<u32>>,
    hand: AtomicUsize,
    file: Arc<dyn File>,
    /// Torn-page protection (`None` only in unit tests of pages and trees).
    /// The owning module's check of a page read from disk (`page::ContentCheck`).
    content_check: page::ContentCheck,
    dw: Option<DoubleWrite>,
    next_page: AtomicU64,
    log: Arc<Log>,
    /// Set by the crash hook: nothing more is written to the data file.
    detached: AtomicBool,
    /// A read-only open: dirty pages stay in memory; needing to write one is an error.
    read_only: AtomicBool,
    /// A new database's load is in progress: pages go to the data file without their
    /// double-write copy (`set_loading`).
    loading: AtomicBool,
    /// The first failed write (full disk, failed fsync): commits stop being acknowledged.
    failure: Mutex<Option<String>>,
    failed: AtomicBool,
    /// Write-back buffers not in use (one per concurrent writer, kept for reuse).
    /// Held from a write-back's copies to its marking pages clean (and around a single
    /// victim's write): data-file writes then happen in copy order, so an older copy can
    /// never land on disk after a newer one of the same page was written and marked clean.
    order: Mutex<()>,
    spare: Mutex<Vec<WriteBuf>>,
    /// A worker found no clean victim in a whole sweep: the cleaner should run now
    /// rather than at its period, starting at the hand.
    pressure: AtomicBool,
    /// Wakes the cleaner (pressure, shutdown).
    cleaner: rt::Event,
    /// The eviction count at the cleaner's last step (it cleans ahead while it grows).
    seen_evictions: AtomicU64,
    /// See `set_flush_target`.
    flush_target: AtomicU64,
    /// When the cleaner last wrote the pages older than the flush target.
    last_target_pass: Mutex<std::time::Instant>,
    pub stats: PoolStats,
}

/// Which dirty pages a write-back takes.
#[derive(Clone, Copy)]
enum Pick {
    All,
    /// Not used since the CLOCK hand last passed: next in line for eviction.
    Unreferenced,
    /// Dirty since before this LSN.
    OlderThan(u64),
}

impl Pick {
    fn takes(self, fr: &Frame) -> bool {
        match self {
            Pick::All => true,
            Pick::Unreferenced => !fr.referenced.load(Ordering::Relaxed),
            Pick::OlderThan(lsn) => fr.rec_lsn.load(Ordering::Relaxed) < lsn,
        }
    }
}

/// A write-back's buffers: the batch of page images and, per frame copied into it,
/// (frame, its version at the copy, the log's next LSN then).
#[derive(Default)]
struct WriteBuf {
    batch: Batch,
    frames: Vec<(usize, u64, u64)>,
}

/// A pinned, latched page. Dropping it releases the latch and the pin.
pub struct PageGuard<'a> {
    pool: &'a BufferPool,
    f: u32,
    mode: Mode,
}

impl PageGuard<'_> {
    fn frame(&self) -> &Frame {
        &self.pool.frames[self.f as usize]
    }
    pub fn pid(&self) -> u64 {
        self.frame().page_id.load(Ordering::Relaxed)
    }
    pub fn page(&self) -> &Page {
        // SAFETY: we hold the latch (S or X).
        unsafe { &*self.pool.bytes[self.f as usize].0.get() }
    }
    pub fn page_mut(&mut self) -> &mut Page {
        assert_eq!(self.mode, Mode::X, "page modified under a shared latch");
        // Only the X holder writes it and nobody reads it meanwhile (write-back reads
        // it under S): a plain increment, no atomic read-modify-write on the hot path.
        let v = &self.frame().version;
        v.store(v.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // SAFETY: we hold the X latch.
        unsafe { &mut *self.pool.bytes[self.f as usize].0.get() }
    }
    pub fn lsn(&self) -> u64 {
        page::lsn(self.page())
    }
    /// Log `rec` as a change of this page: mark the page dirty (recovery LSN taken before
    /// the append, so a concurrent checkpoint cannot miss it), append, stamp the LSN.
    pub fn log(&mut self, log: &Log, rec: &Rec<'_>, txn: Option<(&AtomicU64, &AtomicU64)>) -> u64 {
        self.mark_dirty(log);
        let before = self.lsn();
        let lsn = log.append(rec, txn);
        // WAL: a page's LSN only grows (redo skips records at or below it), and the
        // page is dirty since at most this record (a checkpoint's redo point covers it).
        assert!(
            lsn > before,
            "page {}: LSN {lsn} not above {before}",
            self.pid()
        );
        debug_assert!(self.frame().rec_lsn.load(Ordering::Relaxed) <= lsn);
        page::set_lsn(self.page_mut(), lsn);
        lsn
    }
    pub fn mark_dirty(&self, log: &Log) {
        assert_eq!(self.mode, Mode::X, "page dirtied under a shared latch");
        let fr = self.frame();
        debug_assert!(
            fr.pin.load(Ordering::Relaxed) > 0,
            "dirtied an unpinned frame"
        );
        if !fr.dirty.load(Ordering::Relaxed) {
            fr.rec_lsn.store(log.next_lsn(), Ordering::Relaxed);
            fr.dirty.store(true, Ordering::Release);
        }
    }
}

impl Drop for PageGuard<'_> {
    fn drop(&mut self) {
        let fr = self.frame();
        fr.latch.release(self.mode);
        let prev = fr.pin.fetch_sub(1, Ordering::Release);
        assert!(prev > 0, "unpinned a page that was not pinned");
    }
}

impl BufferPool {
    /// Check each page read from disk with `f` too (the B+tree's full node check).
    pub fn with_content_check(mut self, f: page::ContentCheck) -> Self {
        self.content_check = f;
        self
    }

    pub fn new(
        file: Arc<dyn File>,
        dw: Option<DoubleWrite>,
        frames: usize,
        next_page: u64,
        log: Arc<Log>,
    ) -> BufferPool {
        let n = frames.max(MIN_FRAMES);
        assert!(n < u32::MAX as usize, "too many frames");
        let frames: Box<[Frame]> = (0..n)
            .map(|_| Frame {
                latch: Latch::new(),
                page_id: AtomicU64::new(NO_PAGE),
                pin: AtomicU32::new(1), // owned by the free list
                dirty: AtomicBool::new(false),
                rec_lsn: AtomicU64::new(0),
                referenced: AtomicBool::new(false),
                io: AtomicBool::new(false),
                version: AtomicU64::new(0),
            })
            .collect();
        // Zeroed by the allocator (fresh pages from the kernel), not written here: a frame's
        // memory is then touched first when a page enters it, and a pool larger than
        // its data never touches the rest (writing zeros to every frame at open was 13%
        // of a 100MB load's samples: the kernel's page faults).
        let bytes: Box<[Bytes]> = {
            let b = Box::<[Bytes]>::new_zeroed_slice(n);
            // SAFETY: `Bytes` is bytes in an `UnsafeCell`; all zeros is a valid value.
            unsafe { b.assume_init() }
        };
        BufferPool {
            frames,
            bytes,
            shards: (0..SHARDS)
                .map(|_| CachePadded::new((RwLock::new(Shard::default()), AtomicU64::new(0))))
                .collect(),
            free: Mutex::new((0..n as u32).rev().collect()),
            hand: AtomicUsize::new(0),
            file,
            dw,
            content_check: page::no_content_check,
            next_page: AtomicU64::new(next_page),
            log,
            detached: AtomicBool::new(false),
            read_only: AtomicBool::new(false),
            loading: AtomicBool::new(false),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            order: Mutex::new(()),
            spare: Mutex::new(Vec::new()),
            pressure: AtomicBool::new(false),
            cleaner: rt::Event::new(),
            seen_evictions: AtomicU64::new(0),
            flush_target: AtomicU64::new(0),
            last_target_pass: Mutex::new(std::time::Instant::now()),
            stats: PoolStats::default(),
        }
    }

    pub fn frames(&self) -> usize {
        self.frames.len()
    }

    fn shard(&self, pid: u64) -> &(RwLock<Shard>, AtomicU64) {
        // Fibonacci hashing spreads consecutive page ids over shards.
        let h = pid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58;
        &self.shards[h as usize % SHARDS]
    }

    /// A new page id (pages are never freed; see the design doc).
    pub fn alloc_page(&self) -> u64 {
        self.next_page.fetch_add(1, Ordering::Relaxed)
    }
    pub fn next_page(&self) -> u64 {
        self.next_page.load(Ordering::Relaxed)
    }
    /// Make sure page ids below `n` are never handed out again (recovery).
    pub fn reserve_pages(&self, n: u64) {
        self.next_page.fetch_max(n, Ordering::Relaxed);
    }

    /// Pin and latch page `pid`, reading it if needed. A damaged page is an error.
    /// Counted for `--stats` by the kind its header gives (a new page, `fix_new`, is
    /// counted by its caller, which knows what it will be).
    pub fn fix(&self, pid: u64, mode: Mode) -> Result<PageGuard<'_>> {
        assert!(pid != NO_PAGE, "fix of the null page id");
        // A STEPS CTX point; in a B+tree descent, the one per level.
        rt::point(rt::Point::Ctx(rt::Component::BufferFix));
        loop {
            let (lock, hits) = self.shard(pid);
            {
                let sh = crate::latch::read(lock);
                if let Some(&f) = sh.map.get(&pid) {
                    let fr = &self.frames[f as usize];
                    fr.pin.fetch_add(1, Ordering::Acquire);
                    drop(sh);
                    hits.fetch_add(1, Ordering::Relaxed);
                    if fr.io.load(Ordering::Acquire) {
                        // Another thread is reading it in: a page-I/O wait, not a latch one.
                        rt::wait_until(rt::WaitKind::PageIo, None, || {
                            !fr.io.load(Ordering::Acquire)
                        });
                    }
                    fr.latch.acquire(mode);
                    if fr.page_id.load(Ordering::Acquire) != pid {
                        // Its read failed and the frame was given up; try again.
                        fr.latch.release(mode);
                        fr.pin.fetch_sub(1, Ordering::Release);
                        continue;
                    }
                    if !fr.referenced.load(Ordering::Relaxed) {
                        fr.referenced.store(true, Ordering::Relaxed);
                    }
                    let g = PageGuard {
                        pool: self,
                        f,
                        mode,
                    };
                    debug_assert!(!fr.io.load(Ordering::Relaxed), "a hit handed out mid-read");
                    count_request(&g);
                    return Ok(g);
                }
            }
            let f = self.get_frame()?;
            let fr = &self.frames[f as usize];
            assert!(fr.latch.try_x(), "a free frame was latched");
            {
                let mut sh = crate::latch::write(lock);
                // The frame is ours alone: unmapped, pinned once (by `get_frame`).
                debug_assert_eq!(fr.page_id.load(Ordering::Relaxed), NO_PAGE);
                debug_assert_eq!(fr.pin.load(Ordering::Relaxed), 1);
                if sh.map.contains_key(&pid) {
                    drop(sh);
                    fr.latch.release(Mode::X);
                    self.give_back(f);
                    continue;
                }
                fr.io.store(true, Ordering::Release);
                fr.page_id.store(pid, Ordering::Release);
                sh.map.insert(pid, f);
            }
            // SAFETY: X latch held, frame pinned by us.
            let data = unsafe { &mut *self.bytes[f as usize].0.get() };
            if let Err(e) = self.read_page(pid, data) {
                crate::latch::write(lock).map.remove(&pid);
                fr.page_id.store(NO_PAGE, Ordering::Release);
                fr.io.store(false, Ordering::Release);
                fr.latch.release(Mode::X);
                self.give_back(f);
                return Err(e);
            }
            // A page just read is its disk image: clean, and from this database's past.
            debug_assert!(
                page::lsn(data) < self.log.next_lsn()
                    || page::page_type(data) == PageType::Free as u8
            );
            fr.dirty.store(false, Ordering::Relaxed);
            fr.referenced.store(true, Ordering::Relaxed);
            fr.io.store(false, Ordering::Release);
            if mode == Mode::S {
                fr.latch.release(Mode::X);
                fr.latch.acquire(Mode::S);
            }
            let g = PageGuard {
                pool: self,
                f,
                mode,
            };
            count_request(&g);
            return Ok(g);
        }
    }

    /// Read the data file's pages from `first` up to the last allocated one into free
    /// frames, in page order, until the pool is full (PostgreSQL's pg_prewarm): a reopened
    /// database then starts with its pages resident as the load that wrote them left them
    /// (page order is also the order the load took frames in). Each page is read and
    /// verified as any read is (a damaged page is an error); pages already resident are
    /// left alone, and no page is evicted. `progress` is told (pages done, pages to do)
    /// as it goes. Returns the pages read.
    pub fn prewarm(&self, first: u64, progress: &mut dyn FnMut(u64, u64)) -> Result<u64> {
        let end = self.next_page();
        let free = crate::latch::lock(&self.free).len() as u64;
        let todo = end.saturating_sub(first).min(free);
        let mut read = 0;
        for (i, pid) in (first..end).enumerate() {
            if crate::latch::lock(&self.free).is_empty() {
                break;
            }
            let before = self.stats.reads.load(Ordering::Relaxed);
            drop(self.fix(pid, Mode::S)?);
            read += self.stats.reads.load(Ordering::Relaxed) - before;
            if (i + 1) % PREWARM_STEP == 0 {
                progress(read, todo);
            }
        }
        progress(read, todo);
        Ok(read)
    }

    /// Pages resident in the pool now (tests and `prewarm`'s callers).
    pub fn resident_pages(&self) -> usize {
        self.shards
            .iter()
            .map(|s| crate::latch::read(&s.0).map.len())
            .sum()
    }

    /// Keep page `pid` in the pool for good (B-tree roots: every operation starts there,
    /// so they skip the page table); returns its frame for `fix_frame`.
    pub fn pin_forever(&self, pid: u64) -> Result<u32> {
        let g = self.fix(pid, Mode::S)?;
        self.frames[g.f as usize].pin.fetch_add(1, Ordering::AcqRel);
        Ok(g.f)
    }

    /// Latch a frame made resident by `pin_forever` (no page-table lookup).
    #[inline]
    pub fn fix_frame(&self, f: u32, pid: u64, mode: Mode) -> PageGuard<'_> {
        let fr = &self.frames[f as usize];
        fr.pin.fetch_add(1, Ordering::Acquire);
        fr.latch.acquire(mode);
        assert_eq!(
            fr.page_id.load(Ordering::Relaxed),
            pid,
            "a permanently pinned frame changed its page"
        );
        let g = PageGuard {
            pool: self,
            f,
            mode,
        };
        count_request(&g);
        g
    }

    /// A frame for a page just allocated with `alloc_page` (never on disk): zeroed,
    /// X-latched, no read.
    pub fn fix_new(&self, pid: u64) -> Result<PageGuard<'_>> {
        assert!(pid != NO_PAGE, "fix_new of the null page id");
        let f = self.get_frame()?;
        let fr = &self.frames[f as usize];
        assert!(fr.latch.try_x(), "a free frame was latched");
        {
            let mut sh = crate::latch::write(&self.shard(pid).0);
            assert!(
                !sh.map.contains_key(&pid),
                "fix_new of page {pid} that is already cached"
            );
            fr.page_id.store(pid, Ordering::Release);
            sh.map.insert(pid, f);
        }
        // SAFETY: X latch held.
        unsafe { (*self.bytes[f as usize].0.get()).fill(0) };
        fr.dirty.store(false, Ordering::Relaxed);
        fr.referenced.store(true, Ordering::Relaxed);
        Ok(PageGuard {
            pool: self,
            f,
            mode: Mode::X,
        })
    }

    fn read_page(&self, pid: u64, data: &mut Page) -> Result<()> {
        assert!(pid != NO_PAGE, "a read of the null page id");
        let file = &*self.file;
        let got = rt::blocking(rt::WaitKind::PageIo, || {
            file.read_full_at(&mut data[..], pid * PAGE_SIZE as u64)
        })
        .map_err(crate::log::io_err)?;
        debug_assert!(got <= PAGE_SIZE, "read {got} bytes into a page");
        data[got..].fill(0); // past the end of the file: never written
        self.stats.reads.fetch_add(1, Ordering::Relaxed);
        let t = page::verify(data, pid)?;
        let end = self.log.next_lsn();
        if t != PageType::Free && page::lsn(data) >= end {
            return Err(Error::fatal(format!(
                "data page {pid} has LSN {} beyond the log's end {end}: the log was lost, cut or replaced",
                page::lsn(data)
            )));
        }
        // Once per read, so visits need only check the node's header.
        (self.content_check)(t, data, pid)?;
        Ok(())
    }

    fn give_back(&self, f: u32) {
        let fr = &self.frames[f as usize];
        // The free list owns the one pin `get_frame` handed out.
        debug_assert_eq!(
            fr.pin.load(Ordering::Relaxed),
            1,
            "a frame given back while pinned by others"
        );
        fr.page_id.store(NO_PAGE, Ordering::Release);
        fr.dirty.store(false, Ordering::Relaxed);
        crate::latch::lock(&self.free).push(f);
    }

    /// An unmapped frame pinned once for the caller: from the free list, else by CLOCK.
    fn get_frame(&self) -> Result<u32> {
        if let Some(f) = crate::latch::lock(&self.free).pop() {
            return Ok(f);
        }
        let n = self.frames.len();
        // The hand's bound: two sweeps clear every reference bit and pass every frame
        // looking for a clean victim; then one batch of dirty pages, those the hand
        // reaches next, is written back (a dirty victim written alone would cost two
        // fsyncs through the double-write file) and a third sweep finds the ones now
        // clean; a fourth takes a dirty victim and writes it alone, for races with other
        // threads. Past that, every frame was seen pinned at least once per sweep.
        for step in 0..n * 4 {
            if step == n && !self.pressure.swap(true, Ordering::AcqRel) {
                // A sweep found nothing clean: the cleaner is behind; wake it so the
                // frames the hand reaches next are clean by then.
                self.cleaner.notify_all();
            }
            if step == n * 2 {
                match self.order.try_lock() {
                    // Nobody is writing: write the next batch ourselves.
                    Some(g) => {
                        drop(g);
                        let at = self.hand.load(Ordering::Relaxed) % n;
                        self.write_back(false, 1, at, Pick::All)?;
                    }
                    // The cleaner is writing a batch ahead of the hand: wait for it
                    // rather than write (and fsync) another one behind it.
                    None => drop(crate::latch::lock(&self.order)),
                }
            }
            let i = self.hand.fetch_add(1, Ordering::Relaxed) % n;
            let fr = &self.frames[i];
            if fr.pin.load(Ordering::Acquire) != 0 {
                continue;
            }
            if fr.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            let pid = fr.page_id.load(Ordering::Acquire);
            if pid == NO_PAGE {
                continue;
            }
            if step < n * 3 && fr.dirty.load(Ordering::Acquire) {
                continue;
            }
            let lock = &self.shard(pid).0;
            let mut sh = crate::latch::write(lock);
            if fr.page_id.load(Ordering::Acquire) != pid || fr.pin.load(Ordering::Acquire) != 0 {
                continue;
            }
            fr.pin.store(1, Ordering::Release);
            if fr.dirty.load(Ordering::Acquire) {
                drop(sh);
                // Write it back first; never block on its latch (we may hold others).
                if !fr.latch.try_s() {
                    fr.pin.fetch_sub(1, Ordering::Release);
                    continue;
                }
                let r = self.write_frame(i);
                fr.latch.release(Mode::S);
                if let Err(e) = r {
                    fr.pin.fetch_sub(1, Ordering::Release);
                    return Err(e);
                }
                sh = crate::latch::write(lock);
                if fr.pin.load(Ordering::Acquire) != 1 || fr.dirty.load(Ordering::Acquire) {
                    fr.pin.fetch_sub(1, Ordering::Release);
                    continue;
                }
            }
            // A victim is clean (written back above) and pinned by us alone: nobody can
            // reach it through the page table once it leaves it.
            assert!(
                !fr.dirty.load(Ordering::Acquire),
                "evicting dirty page {pid}"
            );
            debug_assert_eq!(fr.pin.load(Ordering::Relaxed), 1);
            sh.map.remove(&pid);
            fr.page_id.store(NO_PAGE, Ordering::Release);
            drop(sh);
            self.stats.evictions.fetch_add(1, Ordering::Relaxed);
            return Ok(i as u32);
        }
        Err(Error::fatal(format!(
            "buffer pool of {n} pages exhausted: every frame is pinned (pool too small)"
        )))
    }

    /// Refuse writes after a crash hook or in a read-only pool.
    fn may_write(&self) -> Result<()> {
        if self.detached.load(Ordering::Acquire) {
            return Err(Error::fatal(
                "engine crashed (test hook): no more page writes",
            ));
        }
        if self.read_only.load(Ordering::Acquire) {
            return Err(Error::fatal(format!(
                "the buffer pool ({} pages) is too small to open this database without writing to it: give a larger --bpool-size",
                self.frames.len()
            )));
        }
        if let Some(m) = self.failure() {
            return Err(Error::fatal(m));
        }
        Ok(())
    }

    /// A batch buffer: a spare one if any (reused: no allocation per page or batch).
    fn take_buf(&self) -> WriteBuf {
        crate::latch::lock(&self.spare).pop().unwrap_or_default()
    }
    fn put_buf(&self, mut w: WriteBuf) {
        w.batch.clear();
        w.frames.clear();
        crate::latch::lock(&self.spare).push(w);
    }

    /// Write a batch of sealed images (through the double-write file, unless a load is
    /// in progress and `always_protect` is false) and remember the first failure: from
    /// then on commits fail and nothing more is written.
    fn write_images(&self, b: &mut Batch, always_protect: bool) -> Result<()> {
        let (dw, file) = (&self.dw, &*self.file);
        let dw = dw
            .as_ref()
            .filter(|_| always_protect || !self.loading.load(Ordering::Acquire));
        let r = rt::blocking(rt::WaitKind::PageIo, || match dw {
            Some(dw) => dw.write(file, b),
            None => b.write_unprotected(file),
        });
        match r {
            Ok(()) => {
                self.stats
                    .writes
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.record_failure(&e);
                Err(e)
            }
        }
    }

    /// Write frame `i` if dirty (eviction of a single victim). The caller holds its
    /// latch (S or X) and a pin, so the page cannot change until it is marked clean
    /// after the write.
    fn write_frame(&self, i: usize) -> Result<()> {
        let fr = &self.frames[i];
        if !fr.dirty.load(Ordering::Acquire) {
            return Ok(());
        }
        self.may_write()?;
        let _order = crate::latch::lock(&self.order);
        let pid = fr.page_id.load(Ordering::Acquire);
        // SAFETY: latched by the caller; writers are excluded.
        let cur = unsafe { &*self.bytes[i].0.get() };
        // WAL: the log must be durable past the page's LSN before the page is.
        self.log.flush_to(page::lsn(cur) + 1)?;
        if page::page_type(cur) != PageType::Free as u8 {
            let mut w = self.take_buf();
            page::seal(w.batch.push_copy(pid, cur));
            let r = self.write_images(&mut w.batch, false);
            self.put_buf(w);
            r?;
        }
        // Clean only now that the data file has it (a checkpoint that reads the flag in
        // between lists the page and keeps its log; one that reads it after syncs the
        // data file before it moves its redo point past the page's changes).
        fr.dirty.store(false, Ordering::Release);
        Ok(())
    }

    /// Write back dirty frames in batches (the cleaner, `flush_all`, eviction): copy each
    /// under a short S latch into the batch buffer, make the log durable past the copies
    /// with no latch held (hot pages never stall), write them through the double-write
    /// file (durable there, written to the data file, which checkpoints sync before they
    /// rely on it), then mark each clean if nobody
    /// changed it since its copy, else move its recovery LSN past the copy (the part of
    /// its history now on disk). `wait` latches busy pages instead of skipping them;
    /// at most `max_batches` batches are written, from frame `start` on (wrapping).
    fn write_back(
        &self,
        wait: bool,
        max_batches: usize,
        start: usize,
        pick: Pick,
    ) -> Result<usize> {
        self.may_write()?;
        let mut written = 0;
        let mut w = self.take_buf();
        let (b, meta) = (&mut w.batch, &mut w.frames);
        // Pins hold pages in the pool during the batch's I/O: leave most frames free.
        let most = doublewrite::SLOTS.min(self.frames.len() / 4).max(1);
        let n = self.frames.len();
        let mut i = 0;
        let mut batches = 0;
        let mut r = Ok(());
        while i < n && batches < max_batches {
            let order = crate::latch::lock(&self.order);
            b.clear();
            meta.clear();
            let mut max_lsn = 0;
            while i < n && meta.len() < most {
                let idx = (start + i) % n;
                i += 1;
                let fr = &self.frames[idx];
                if !fr.dirty.load(Ordering::Acquire) || !pick.takes(fr) {
                    continue;
                }
                let Some(pid) = self.pin_frame(idx) else {
                    continue;
                };
                if wait {
                    fr.latch.acquire(Mode::S);
                } else if !fr.latch.try_s() {
                    fr.pin.fetch_sub(1, Ordering::Release);
                    continue;
                }
                if !fr.dirty.load(Ordering::Acquire) {
                    fr.latch.release(Mode::S);
                    fr.pin.fetch_sub(1, Ordering::Release);
                    continue;
                }
                let version = fr.version.load(Ordering::Relaxed);
                // Any change after the copy needs the X latch, so it gets an LSN at or
                // past this one: a record boundary redo may start from.
                let after = self.log.next_lsn();
                // SAFETY: S latch held.
                let cur = unsafe { &*self.bytes[idx].0.get() };
                if page::page_type(cur) != PageType::Free as u8 {
                    b.push_copy(pid, cur);
                    max_lsn = max_lsn.max(page::lsn(cur));
                }
                fr.latch.release(Mode::S);
                meta.push((idx, version, after));
            }
            if meta.is_empty() {
                continue;
            }
            batches += 1;
            r = self.write_batch(b, max_lsn);
            for &(idx, version, after) in meta.iter() {
                let fr = &self.frames[idx];
                // A worker writing back to find a victim may hold other latches:
                // never block then (the page stays dirty, which is always safe).
                let latched = r.is_ok()
                    && if wait {
                        fr.latch.acquire(Mode::S);
                        true
                    } else {
                        fr.latch.try_s()
                    };
                if latched {
                    if fr.version.load(Ordering::Relaxed) == version {
                        fr.dirty.store(false, Ordering::Release);
                    } else {
                        fr.rec_lsn.fetch_max(after, Ordering::AcqRel);
                    }
                    fr.latch.release(Mode::S);
                }
                fr.pin.fetch_sub(1, Ordering::Release);
            }
            drop(order);
            if r.is_err() {
                break;
            }
            written += meta.len();
        }
        self.put_buf(w);
        r.map(|()| written)
    }

    /// WAL, then seal and write the batch's images.
    fn write_batch(&self, b: &mut Batch, max_lsn: u64) -> Result<()> {
        self.log.flush_to(max_lsn + 1)?;
        for j in 0..b.len() {
            page::seal(b.page_mut(j));
        }
        if b.is_empty() {
            return Ok(());
        }
        self.write_images(b, false)
    }

    /// Pin frame `i` if it holds a page (for the cleaner/flush-all); returns its page.
    fn pin_frame(&self, i: usize) -> Option<u64> {
        let fr = &self.frames[i];
        let pid = fr.page_id.load(Ordering::Acquire);
        if pid == NO_PAGE {
            return None;
        }
        let sh = crate::latch::read(&self.shard(pid).0);
        if fr.page_id.load(Ordering::Acquire) != pid {
            return None;
        }
        let prev = fr.pin.fetch_add(1, Ordering::Acquire);
        assert!(prev < u32::MAX, "pin count overflow on page {pid}");
        drop(sh);
        Some(pid)
    }

    /// Write back every dirty page not latched right now, starting at the CLOCK hand
    /// (tests and test hooks: a full pass).
    pub fn clean(&self) -> Result<usize> {
        self.pressure.store(false, Ordering::Release);
        let n = self.frames.len();
        let at = self.hand.load(Ordering::Relaxed) % n;
        self.write_back(false, usize::MAX, at, Pick::All)
    }

    /// The page cleaner's step; returns how long to pause before the next one. While
    /// pages are being evicted: one batch of the pages the hand reaches next that were
    /// not used since it last passed (so eviction finds them clean and no worker waits
    /// for a write), at once again if it found any. And every `period`: the pages dirty
    /// since before the last checkpoint began, so the next one can move its redo point
    /// and recycle the log; each is written about once per checkpoint, not every page
    /// every period (with the data cached, rewriting hot pages took the second core
    /// from the workers).
    pub fn clean_step(&self, period: std::time::Duration) -> Result<std::time::Duration> {
        let n = self.frames.len();
        let evictions = self.stats.evictions.load(Ordering::Relaxed);
        let evicting = self.pressure.swap(false, Ordering::AcqRel)
            || evictions != self.seen_evictions.swap(evictions, Ordering::Relaxed);
        let due = {
            let mut last = crate::latch::lock(&self.last_target_pass);
            let due = last.elapsed() >= period;
            if due {
                *last = std::time::Instant::now();
            }
            due
        };
        let target = self.flush_target.load(Ordering::Acquire);
        if due && target > 0 {
            let at = self.hand.load(Ordering::Relaxed) % n;
            self.write_back(false, usize::MAX, at, Pick::OlderThan(target))?;
        }
        if evicting {
            let at = self.hand.load(Ordering::Relaxed) % n;
            let k = self.write_back(false, 1, at, Pick::Unreferenced)?;
            return Ok(match k {
                0 => std::time::Duration::from_millis(1),
                _ => std::time::Duration::ZERO,
            });
        }
        Ok(period)
    }

    /// Pages dirty since before `lsn` are to be written by the cleaner (a checkpoint's
    /// begin: the next checkpoint's redo point can then pass it).
    pub fn set_flush_target(&self, lsn: u64) {
        debug_assert!(
            lsn <= self.log.next_lsn(),
            "a flush target past the log's end"
        );
        self.flush_target.fetch_max(lsn, Ordering::AcqRel);
    }

    /// The cleaner's pause between passes: until `period` passes, `stop()` holds, or a
    /// worker finds no clean victim (then at once: eviction is waiting on writes).
    pub fn cleaner_pause(&self, period: std::time::Duration, stop: impl Fn() -> bool) {
        self.cleaner.wait(rt::WaitKind::Other, Some(period), || {
            stop() || self.pressure.load(Ordering::Acquire)
        });
    }

    /// Wake the cleaner (shutdown: it re-checks its stop condition).
    pub fn wake_cleaner(&self) {
        self.cleaner.notify_all();
    }

    /// While `on`, page writes skip the double-write file: a new database's load, which
    /// a crash leaves refused ("the load did not finish"), so no torn page of it is ever
    /// read; `load_done` writes every page and syncs the file before it turns this off
    /// and marks the database ready. Turning it off waits for a batch in flight (the
    /// batches hold `order`), so every later write is protected. On from the pool's
    /// first page write, and the catalog (`write_through`) always protected: a later
    /// open's replay may put back a page's newest copy in the ring, which must be its
    /// newest write, never one an unprotected write superseded.
    pub fn set_loading(&self, on: bool) {
        let _order = crate::latch::lock(&self.order);
        self.loading.store(on, Ordering::Release);
    }

    /// Write every dirty page and sync the file (shutdown, end of recovery, end of load).
    pub fn flush_all(&self) -> Result<()> {
        if self.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        self.write_back(true, usize::MAX, 0, Pick::All)?;
        self.sync()
    }

    pub fn sync(&self) -> Result<()> {
        if self.detached.load(Ordering::Acquire) || self.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        // A failed fsync may have dropped writes whose double-write copies the next
        // batches would overwrite: like a failed write, it stops all writing.
        let file = &*self.file;
        let r = rt::blocking(rt::WaitKind::PageIo, || file.sync_data()).map_err(crate::log::io_err);
        if let Err(e) = &r {
            self.record_failure(e);
        }
        r
    }

    /// Remember the first failed write or fsync: from then on commits fail and nothing
    /// more is written.
    fn record_failure(&self, e: &Error) {
        let mut f = crate::latch::lock(&self.failure);
        if f.is_none() && !self.detached.load(Ordering::Acquire) {
            *f = Some(e.to_string());
            self.failed.store(true, Ordering::Release);
        }
    }

    /// Dirty page table for a checkpoint: (page, recovery LSN).
    pub fn dirty_pages(&self, out: &mut Vec<(u64, u64)>) {
        for fr in self.frames.iter() {
            if fr.dirty.load(Ordering::Acquire) {
                let pid = fr.page_id.load(Ordering::Acquire);
                if pid != NO_PAGE {
                    out.push((pid, fr.rec_lsn.load(Ordering::Relaxed)));
                }
            }
        }
    }

    pub fn hits(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.1.load(Ordering::Relaxed))
            .sum()
    }

    /// Write a sealed page that lives outside the frames (the catalog) with the same
    /// torn-page protection, and sync it.
    pub fn write_through(&self, pid: u64, page: &Page) -> Result<()> {
        // Sealed by the caller: a page written without its checksum would read as damaged.
        debug_assert!(
            page::verify(page, pid).is_ok(),
            "page {pid} written through unsealed"
        );
        self.may_write()?;
        let mut w = self.take_buf();
        w.batch.push_copy(pid, page);
        // Protected even while loading (see `set_loading`).
        let r = self.write_images(&mut w.batch, true);
        self.put_buf(w);
        r?;
        self.sync()
    }

    /// The first failed write, if any.
    pub fn failure(&self) -> Option<String> {
        crate::latch::lock(&self.failure).clone()
    }

    /// Whether a write failed (one load: cheap enough for every commit).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Put `image` in the pool as page `pid`, dirty (a read-only open's repair of a
    /// torn page from the double-write file: in memory only).
    pub fn install(&self, pid: u64, image: &Page) -> Result<()> {
        let mut g = self.fix_new(pid)?;
        g.page_mut().copy_from_slice(image);
        g.mark_dirty(&self.log);
        Ok(())
    }

    /// Never write a page (read-only opens).
    pub fn set_read_only(&self) {
        self.read_only.store(true, Ordering::Release);
    }

    /// The crash hook: from now on no page reaches the data file.
    pub fn detach(&self) {
        self.detached.store(true, Ordering::Release);
    }

    pub fn file(&self) -> &Arc<dyn File> {
        &self.file
    }
}

/// `--stats`: one request of a heap or B+tree page to the pool, by its header's type
/// (the pool knows page types, not the modules that own them).
#[inline(always)]
fn count_request(g: &PageGuard<'_>) {
    if txnstats::armed() {
        let kind = match crate::page::page_type(g.page()) {
            t if t == crate::page::PageType::Heap as u8 => txnstats::PageKind::Heap,
            t if t == crate::page::PageType::BTree as u8 => txnstats::PageKind::Index,
            _ => return,
        };
        txnstats::page(kind, g.pid());
    }
}

/// A pool over `dir/data` (created if missing) with a log that keeps nothing, for the
/// unit tests of pages, heaps and trees.
#[cfg(test)]
pub(crate) fn for_tests(dir: &std::path::Path, frames: usize) -> (BufferPool, Arc<Log>) {
    let st = storage::os();
    let path = dir.join("data");
    let f = match st.open(&path, storage::Open::ReadWrite) {
        Ok(f) => f,
        Err(_) => st.open(&path, storage::Open::CreateNew).unwrap(),
    };
    let log = Arc::new(Log::memory_only());
    (BufferPool::new(f, None, frames, 1, log.clone()), log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(dir: &std::path::Path, frames: usize) -> BufferPool {
        for_tests(dir, frames).0
    }

    fn write_page(p: &BufferPool, pid: u64, val: u64) {
        let mut g = p.fix(pid, Mode::X).unwrap();
        let pg = g.page_mut();
        if page::page_type(pg) == PageType::Free as u8 {
            page::format(pg, pid, PageType::Heap);
        }
        page::put_u64(pg, 100, val);
        page::set_lsn(pg, 1);
        g.mark_dirty(&p.log);
    }

    /// A pool over `dir/data` with a double-write file.
    fn pool_dw(dir: &std::path::Path, frames: usize) -> BufferPool {
        let st = storage::os();
        let f = match st.open(&dir.join("data"), storage::Open::ReadWrite) {
            Ok(f) => f,
            Err(_) => st
                .open(&dir.join("data"), storage::Open::CreateNew)
                .unwrap(),
        };
        let dw = match DoubleWrite::open(&*st, dir, 9, storage::Open::ReadWrite) {
            Ok(dw) => dw,
            Err(_) => DoubleWrite::create(&*st, dir, 9).unwrap(),
        };
        BufferPool::new(f, Some(dw), frames, 1, Arc::new(Log::memory_only()))
    }

    #[test]
    fn eviction_under_concurrency_keeps_every_page() {
        eviction_under_concurrency(false);
    }

    /// The same with every write through the double-write file, and the cleaner running.
    #[test]
    fn eviction_under_concurrency_keeps_every_page_with_double_write() {
        eviction_under_concurrency(true);
    }

    fn eviction_under_concurrency(with_dw: bool) {
        let dir = tempfile::tempdir().unwrap();
        let mk = |d: &std::path::Path| match with_dw {
            true => pool_dw(d, MIN_FRAMES),
            false => pool(d, MIN_FRAMES),
        };
        let p = Arc::new(mk(dir.path()));
        let pages = 400u64;
        for pid in 1..=pages {
            write_page(&p, pid, pid * 10);
        }
        let hs: Vec<_> = (0..4u64)
            .map(|t| {
                let p = p.clone();
                std::thread::spawn(move || {
                    let mut x = t + 1;
                    for _ in 0..5000 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let pid = 1 + (x >> 33) % pages;
                        if (x >> 20) % 4 == 0 {
                            let mut g = p.fix(pid, Mode::X).unwrap();
                            let v = page::get_u64(g.page(), 100);
                            assert_eq!(v % 10, 0);
                            page::put_u64(g.page_mut(), 100, v + 10 * pages);
                            g.mark_dirty(&p.log);
                        } else {
                            let g = p.fix(pid, Mode::S).unwrap();
                            let v = page::get_u64(g.page(), 100);
                            assert_eq!(v % (10 * pages), pid * 10 % (10 * pages), "page {pid}");
                        }
                    }
                })
            })
            .collect();
        let done = Arc::new(AtomicBool::new(false));
        let cleaner = with_dw.then(|| {
            let (p, done) = (p.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    p.clean().unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            })
        });
        for h in hs {
            h.join().unwrap();
        }
        done.store(true, Ordering::Release);
        if let Some(c) = cleaner {
            c.join().unwrap();
        }
        assert!(p.stats.evictions.load(Ordering::Relaxed) > 0);
        p.flush_all().unwrap();
        // A fresh pool reads every page back intact.
        let q = mk(dir.path());
        for pid in 1..=pages {
            let g = q.fix(pid, Mode::S).unwrap();
            assert_eq!(
                page::get_u64(g.page(), 100) % (10 * pages),
                pid * 10 % (10 * pages)
            );
        }
    }

    #[test]
    fn damaged_page_is_an_error_not_data() {
        let dir = tempfile::tempdir().unwrap();
        let p = pool(dir.path(), MIN_FRAMES);
        write_page(&p, 3, 30);
        p.flush_all().unwrap();
        drop(p);
        damage(dir.path(), 3 * PAGE_SIZE + 200, 0x40);
        let q = pool(dir.path(), MIN_FRAMES);
        match q.fix(3, Mode::S) {
            Err(Error::Fatal(m)) => assert!(m.contains("damaged"), "{m}"),
            _ => panic!("damaged page accepted"),
        }
        // And still refused on retry (the failed frame was not left mapped).
        assert!(q.fix(3, Mode::S).is_err());
    }

    /// Flip the bits `mask` of byte `at` of the pool's file `dir/data`.
    fn damage(dir: &std::path::Path, at: usize, mask: u8) {
        let path = dir.join("data");
        let mut raw = std::fs::read(&path).unwrap();
        raw[at] ^= mask;
        std::fs::write(&path, raw).unwrap();
    }

    /// A pool over `dir/data` holding pages 1..=`pages`, written and flushed, then a
    /// fresh pool of `frames` frames over the same file (as a reopen makes).
    fn reopened(dir: &std::path::Path, pages: u64, frames: usize) -> BufferPool {
        let p = pool(dir, 2 * MIN_FRAMES);
        for pid in 1..=pages {
            write_page(&p, pid, pid * 7);
        }
        p.flush_all().unwrap();
        drop(p);
        let q = pool(dir, frames);
        q.reserve_pages(pages + 1);
        q
    }

    /// `prewarm` reads every page once, in page order into frame order, so that every
    /// later fix is a hit; a pool smaller than the file takes the first pages that fit
    /// and evicts none.
    #[test]
    fn prewarm_reads_every_page_into_the_pool() {
        let dir = tempfile::tempdir().unwrap();
        let pages = 100;
        let q = reopened(dir.path(), pages, 2 * MIN_FRAMES);
        assert_eq!(q.resident_pages(), 0);
        let mut told = Vec::new();
        let read = q.prewarm(1, &mut |d, t| told.push((d, t))).unwrap();
        assert_eq!(read, pages);
        assert_eq!(q.resident_pages(), pages as usize);
        assert_eq!(told.last(), Some(&(pages, pages)));
        for pid in 1..=pages {
            let g = q.fix(pid, Mode::S).unwrap();
            assert_eq!(
                g.f as u64,
                pid - 1,
                "page {pid} not in its page-order frame"
            );
            assert_eq!(page::get_u64(g.page(), 100), pid * 7);
        }
        assert_eq!(
            q.stats.reads.load(Ordering::Relaxed),
            pages,
            "a fix after the prewarm read"
        );
        drop(q);

        let small = reopened(dir.path(), pages, MIN_FRAMES);
        assert_eq!(small.prewarm(1, &mut |_, _| {}).unwrap(), MIN_FRAMES as u64);
        assert_eq!(small.resident_pages(), MIN_FRAMES);
        assert_eq!(small.stats.evictions.load(Ordering::Relaxed), 0);
        drop(small.fix(MIN_FRAMES as u64, Mode::S).unwrap());
        assert_eq!(small.stats.reads.load(Ordering::Relaxed), MIN_FRAMES as u64);
    }

    /// A damaged page stops the prewarm with the read's own error.
    #[test]
    fn prewarm_refuses_a_damaged_page() {
        let dir = tempfile::tempdir().unwrap();
        let q = reopened(dir.path(), 20, MIN_FRAMES);
        drop(q);
        damage(dir.path(), 9 * PAGE_SIZE + 300, 0x10);
        let q = pool(dir.path(), MIN_FRAMES);
        q.reserve_pages(21);
        match q.prewarm(1, &mut |_, _| {}) {
            Err(Error::Fatal(m)) => assert!(m.contains("damaged") && m.contains('9'), "{m}"),
            other => panic!("damaged page accepted: {other:?}"),
        }
    }
}
