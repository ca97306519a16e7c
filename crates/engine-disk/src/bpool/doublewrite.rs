//! The double-write file (torn-page protection, as InnoDB's doublewrite buffer). A page
//! write can be cut short (a power loss, a full disk), leaving a page that is neither the
//! old image nor the new one, which the log cannot repair (redo needs a valid page to
//! apply records to). So every batch of pages goes first to `dw` and is fsynced there,
//! then to the data file, which is fsynced before the next batch may overwrite `dw`: at
//! any moment each page being written has an intact copy in one of the two files. At
//! open, `replay` finishes the last batch: it writes its copies again where the data
//! file's page is damaged (torn) or not newer.
//! It must never interpret a page beyond the common header (id, LSN, checksum).
//!
//! File (little-endian):
//! * page 0, the file header: `[0..8)` magic `OLTPDWB\0`, `[8..12)` version,
//!   `[16..24)` database id, `[24..28)` slot count, `[28..32)` crc32 of `[0..28)`.
//!   Written once, at creation.
//! * page 1, the batch descriptor: `[0..4)` crc32 of `[4..8192)`, `[4..8)` magic
//!   `0x44574254`, `[8..16)` batch sequence number, `[16..20)` page count `k`,
//!   `[24..32)` database id, then from 32 one 16-byte entry per page: page id (u64),
//!   the image's checksum (u32, its bytes `0..4`), 4 bytes zero.
//! * pages `2..2+k`: the batch's sealed page images, in descriptor order.
//!
//! The descriptor and the images go to the file in one write, then one fsync. Only the
//! last batch can have data-file writes in flight (a batch starts after the previous
//! one's data-file fsync), so replay looks at the descriptor's `k` images only: images
//! of older batches left in higher slots are stale (the page may have been written again
//! since, in a slot a later batch reused), and a stale copy must never replace a page.

use crate::log::io_err;
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, Page, PageType, PAGE_SIZE};
use api::{Error, Result};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use storage::{File, Open, Storage};

pub const NAME: &str = "dw";
const MAGIC: &[u8; 8] = b"OLTPDWB\0";
/// 2: a batch descriptor names the last batch's pages (1: slots only, replay could
/// take a stale copy).
const VERSION: u32 = 2;
const BATCH_MAGIC: u32 = 0x4457_4254; // "TBWD"
/// Byte offset of the batch descriptor (page 1); the images follow it.
const BATCH_AT: u64 = PAGE_SIZE as u64;
const ENTRY: usize = 16;
/// Pages per batch: 2 MiB, so the cleaner's two fsyncs are amortised over many pages.
pub const SLOTS: usize = 256;
const _: () = assert!(
    32 + SLOTS * ENTRY <= PAGE_SIZE,
    "the descriptor must fit a page"
);

/// Pages on their way to the data file, laid out as the double-write file's batch
/// (descriptor page, then one sealed image per page) so the batch reaches `dw` in one
/// write with no further copy. Buffers are reused: nothing is allocated per page.
pub struct Batch {
    pids: Vec<u64>,
    /// The descriptor page, then `pids.len()` images.
    bytes: Vec<u8>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    pub fn new() -> Batch {
        Batch {
            pids: Vec::new(),
            bytes: vec![0; PAGE_SIZE],
        }
    }
    pub fn clear(&mut self) {
        self.pids.clear();
        self.bytes.truncate(PAGE_SIZE);
    }
    pub fn len(&self) -> usize {
        self.pids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }
    /// Add page `pid`; returns its (zeroed) image to fill, then `seal`.
    pub fn push(&mut self, pid: u64) -> &mut Page {
        self.pids.push(pid);
        let at = self.bytes.len();
        self.bytes.resize(at + PAGE_SIZE, 0);
        (&mut self.bytes[at..]).try_into().unwrap()
    }
    /// Add page `pid` as a copy of `src` (one copy, no zeroing first); returns the
    /// image, to `seal` once the log is durable past it.
    pub fn push_copy(&mut self, pid: u64, src: &Page) -> &mut Page {
        self.pids.push(pid);
        let at = self.bytes.len();
        self.bytes.extend_from_slice(&src[..]);
        (&mut self.bytes[at..]).try_into().unwrap()
    }
    pub fn pid(&self, i: usize) -> u64 {
        self.pids[i]
    }
    pub fn page(&self, i: usize) -> &Page {
        let at = (1 + i) * PAGE_SIZE;
        (&self.bytes[at..at + PAGE_SIZE]).try_into().unwrap()
    }
    pub fn page_mut(&mut self, i: usize) -> &mut Page {
        let at = (1 + i) * PAGE_SIZE;
        (&mut self.bytes[at..at + PAGE_SIZE]).try_into().unwrap()
    }

    /// Write the pages to `data` in place, with no torn-page protection (pools without
    /// a double-write file: unit tests of pages and trees).
    pub fn write_unprotected(&self, data: &dyn File) -> Result<()> {
        for i in 0..self.len() {
            write_page(data, self.pid(i), self.page(i))?;
        }
        Ok(())
    }
}

/// Write one sealed page to the data file; an error names the page.
fn write_page(data: &dyn File, pid: u64, p: &Page) -> Result<()> {
    data.write_all_at(&p[..], pid * PAGE_SIZE as u64)
        .map_err(|e| io_err(std::io::Error::new(e.kind(), format!("{e} (page {pid})"))))
}

/// The last batch as read back: its bytes (descriptor, then the images) and, per image
/// that verifies, (its index, its page id).
type LastBatch = (Vec<u8>, Vec<(usize, u64)>);

struct Writer {
    /// Sequence number of the next batch (diagnostics: tells batches apart in a dump).
    seq: u64,
    /// The first failure: once a batch failed, its data-file writes may be torn and the
    /// only intact copies are in `dw`, so no later batch may overwrite them.
    failed: Option<String>,
}

pub struct DoubleWrite {
    file: Arc<dyn File>,
    db_id: u64,
    /// One batch at a time, held through the whole batch (dw write, dw fsync, data
    /// writes, data fsync): a second batch would overwrite the descriptor and the slots
    /// of pages whose data-file writes are not yet durable, leaving them unprotected.
    /// A mutex costs nothing here: each holder does two fsyncs.
    writer: Mutex<Writer>,
}

fn header(db_id: u64) -> Vec<u8> {
    let mut h = vec![0u8; PAGE_SIZE];
    h[..8].copy_from_slice(MAGIC);
    put_u32(&mut h, 8, VERSION);
    put_u64(&mut h, 16, db_id);
    put_u32(&mut h, 24, SLOTS as u32);
    let c = crc32fast::hash(&h[..28]);
    put_u32(&mut h, 28, c);
    h
}

impl DoubleWrite {
    /// The double-write file of a new database, durable with its directory entry.
    pub fn create(st: &dyn Storage, dir: &Path, db_id: u64) -> Result<DoubleWrite> {
        let file = storage::create_durable(st, &dir.join(NAME)).map_err(io_err)?;
        file.write_all_at(&header(db_id), 0).map_err(io_err)?;
        file.sync_data().map_err(io_err)?;
        Ok(Self::with(file, db_id))
    }

    /// The double-write file of an existing database; missing, garbled or another
    /// database's is refused with one line naming the file.
    pub fn open(st: &dyn Storage, dir: &Path, db_id: u64, how: Open) -> Result<DoubleWrite> {
        let path = dir.join(NAME);
        if !st.exists(&path).map_err(io_err)? {
            return Err(Error::fatal(format!(
                "{} is missing: the database is damaged",
                path.display()
            )));
        }
        let file = st.open(&path, how).map_err(io_err)?;
        let mut h = vec![0u8; PAGE_SIZE];
        let n = file.read_full_at(&mut h, 0).map_err(io_err)?;
        if n < 32 || &h[..8] != MAGIC || crc32fast::hash(&h[..28]) != get_u32(&h, 28) {
            return Err(Error::fatal(format!(
                "{}: not an oltpscope double-write file (bad header)",
                path.display()
            )));
        }
        if get_u32(&h, 8) != VERSION || get_u32(&h, 24) as usize != SLOTS {
            return Err(Error::fatal(format!(
                "{}: double-write format version {} with {} slots, this build uses {VERSION} with {SLOTS}",
                path.display(),
                get_u32(&h, 8),
                get_u32(&h, 24)
            )));
        }
        if get_u64(&h, 16) != db_id {
            return Err(Error::fatal(format!(
                "{} belongs to another database (id {:016x}, expected {db_id:016x})",
                path.display(),
                get_u64(&h, 16)
            )));
        }
        Ok(Self::with(file, db_id))
    }

    fn with(file: Arc<dyn File>, db_id: u64) -> DoubleWrite {
        DoubleWrite {
            file,
            db_id,
            writer: Mutex::new(Writer {
                seq: 1,
                failed: None,
            }),
        }
    }

    /// Write the batch's sealed pages to the data file, each protected against a torn
    /// write: descriptor and images to `dw` (one write), fsync `dw`, the pages to the
    /// data file, fsync it. A batch of more than `SLOTS` pages goes in several rounds.
    /// After a failure every later write is refused (see `Writer::failed`).
    pub fn write(&self, data: &dyn File, b: &mut Batch) -> Result<()> {
        // Waiting here means another thread is inside its two fsyncs: an I/O wait.
        let mut w = crate::latch::lock(&self.writer);
        if let Some(m) = &w.failed {
            return Err(Error::fatal(m.clone()));
        }
        let mut from = 0;
        while from < b.len() {
            let k = (b.len() - from).min(SLOTS);
            let r = self.round(&mut w, data, b, from, k);
            if let Err(e) = r {
                w.failed = Some(e.to_string());
                return Err(e);
            }
            from += k;
        }
        Ok(())
    }

    /// One round of at most `SLOTS` pages: `b`'s pages `from..from + k`.
    fn round(
        &self,
        w: &mut Writer,
        data: &dyn File,
        b: &mut Batch,
        from: usize,
        k: usize,
    ) -> Result<()> {
        // The descriptor is built in the buffer page right before the round's first image
        // (the descriptor page for the first round; for a later one the previous round's
        // last image, saved and put back), so the round reaches `dw` in one write.
        let at = from * PAGE_SIZE;
        let saved: Option<Box<Page>> = (from > 0).then(|| {
            let mut s: Box<Page> = Box::new([0; PAGE_SIZE]);
            s.copy_from_slice(&b.bytes[at..at + PAGE_SIZE]);
            s
        });
        b.bytes[at..at + PAGE_SIZE].fill(0);
        put_u32(&mut b.bytes, at + 4, BATCH_MAGIC);
        put_u64(&mut b.bytes, at + 8, w.seq);
        put_u32(&mut b.bytes, at + 16, k as u32);
        put_u64(&mut b.bytes, at + 24, self.db_id);
        for j in 0..k {
            let pid = b.pids[from + j];
            let img = at + (1 + j) * PAGE_SIZE;
            debug_assert_eq!(get_u64(&b.bytes, img + 8), pid, "an image under another id");
            let crc = get_u32(&b.bytes, img);
            put_u64(&mut b.bytes, at + 32 + j * ENTRY, pid);
            put_u32(&mut b.bytes, at + 32 + j * ENTRY + 8, crc);
        }
        let c = crc32fast::hash(&b.bytes[at + 4..at + PAGE_SIZE]);
        put_u32(&mut b.bytes, at, c);
        let r = self
            .file
            .write_all_at(&b.bytes[at..at + (1 + k) * PAGE_SIZE], BATCH_AT)
            .map_err(io_err);
        if let Some(s) = saved {
            b.bytes[at..at + PAGE_SIZE].copy_from_slice(&s[..]);
        }
        r?;
        w.seq += 1;
        self.file.sync_data().map_err(io_err)?;
        for j in from..from + k {
            write_page(data, b.pid(j), b.page(j))?;
        }
        data.sync_data().map_err(io_err)
    }

    /// The last batch as the file holds it: its bytes (descriptor, then `k` images) and
    /// the index and page id of each image that verifies (its checksum, the descriptor's
    /// checksum of it, its header with the descriptor's page id). `None` if no batch
    /// was ever written or the last one's descriptor does not verify: then that batch
    /// never completed its write to `dw`, so none of its data-file writes had started
    /// (and older batches' data writes were all durable before it began). An image that
    /// does not verify was being written when the batch stopped: left out, same reason.
    fn last_batch(&self) -> Result<Option<LastBatch>> {
        let mut d = vec![0u8; PAGE_SIZE];
        let n = self.file.read_full_at(&mut d, BATCH_AT).map_err(io_err)?;
        if n < PAGE_SIZE
            || get_u32(&d, 4) != BATCH_MAGIC
            || crc32fast::hash(&d[4..]) != get_u32(&d, 0)
            || get_u64(&d, 24) != self.db_id
        {
            return Ok(None);
        }
        let k = (get_u32(&d, 16) as usize).min(SLOTS);
        d.resize((1 + k) * PAGE_SIZE, 0);
        let got = self
            .file
            .read_full_at(&mut d[PAGE_SIZE..], BATCH_AT + PAGE_SIZE as u64)
            .map_err(io_err)?;
        d.truncate(PAGE_SIZE + got);
        let mut ok = Vec::with_capacity(k);
        for j in 0..k.min(got / PAGE_SIZE) {
            let pid = get_u64(&d, 32 + j * ENTRY);
            let crc = get_u32(&d, 32 + j * ENTRY + 8);
            let img: &Page = d[(1 + j) * PAGE_SIZE..(2 + j) * PAGE_SIZE]
                .try_into()
                .unwrap();
            if get_u32(img, 0) == crc
                && matches!(page::verify(img, pid), Ok(t) if t != PageType::Free)
            {
                ok.push((j, pid));
            }
        }
        Ok(Some((d, ok)))
    }

    /// The data file's page `pid` (zeros past its end) and whether it is damaged: fails
    /// verification, or is all zeros (or short) where a copy exists.
    fn data_page(data: &dyn File, pid: u64, cur: &mut Page) -> Result<bool> {
        let got = data
            .read_full_at(&mut cur[..], pid * PAGE_SIZE as u64)
            .map_err(io_err)?;
        cur[got..].fill(0);
        Ok(!matches!(page::verify(cur, pid), Ok(t) if t != PageType::Free))
    }

    /// The last batch's intact copies of data pages that are damaged: (page id, image).
    /// Reads only (read-only opens put them in the pool, in memory).
    pub fn damaged_pages(&self, data: &dyn File) -> Result<Vec<(u64, Box<Page>)>> {
        let Some((bytes, ok)) = self.last_batch()? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut cur: Box<Page> = Box::new([0; PAGE_SIZE]);
        for (j, pid) in ok {
            if Self::data_page(data, pid, &mut cur)? {
                let mut img: Box<Page> = Box::new([0; PAGE_SIZE]);
                img.copy_from_slice(&bytes[(1 + j) * PAGE_SIZE..(2 + j) * PAGE_SIZE]);
                out.push((pid, img));
            }
        }
        Ok(out)
    }

    /// At a read-write open, before this process writes anything (its first batch
    /// overwrites the copies): finish the last batch. First make the copies themselves
    /// durable by writing them again (the killed process's batch may be in the page cache
    /// only, and after a failed fsync the kernel no longer holds it dirty, so a sync
    /// alone would not do); then write every page of the batch that is damaged in the
    /// data file or not newer than its copy there (its data write may likewise be in the
    /// page cache only), and fsync the data file. Returns the pages written. Idempotent:
    /// a crash during it repeats it at the next open.
    pub fn replay(&self, data: &dyn File) -> Result<usize> {
        let Some((bytes, ok)) = self.last_batch()? else {
            return Ok(0);
        };
        self.file.write_all_at(&bytes, BATCH_AT).map_err(io_err)?;
        self.file.sync_data().map_err(io_err)?;
        let mut n = 0;
        let mut cur: Box<Page> = Box::new([0; PAGE_SIZE]);
        for (j, pid) in ok {
            let img: &Page = bytes[(1 + j) * PAGE_SIZE..(2 + j) * PAGE_SIZE]
                .try_into()
                .unwrap();
            if Self::data_page(data, pid, &mut cur)? || page::lsn(&cur) <= page::lsn(img) {
                write_page(data, pid, img)?;
                n += 1;
            }
        }
        data.sync_data().map_err(io_err)?;
        Ok(n)
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }
}
