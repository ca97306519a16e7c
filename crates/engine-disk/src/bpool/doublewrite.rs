//! The double-write file (torn-page protection, as InnoDB's doublewrite buffer). A page
//! write can be cut short (a power loss, a full disk), leaving a page that is neither the
//! old image nor the new one, which the log cannot repair (redo needs a valid page to
//! apply records to). So every batch of pages goes first to `dw` and is fsynced there,
//! and only then to the data file: at any moment each page being written has an intact
//! copy in one of the two files. At open, `replay` finishes the recent batches: it writes
//! their newest copies again where the data file's page is damaged (torn) or not newer.
//! It must never interpret a page beyond the common header (id, LSN, checksum).
//!
//! The file is a ring of `REGIONS` regions, one batch each, so a batch costs one fsync
//! (of `dw`), not two: the data file's writes of a batch need not be durable before the
//! next batch starts, only before its region is reused, and one data-file fsync covers
//! every batch written before it (a checkpoint's fsync too, which it needs anyway).
//! An fsync costs about 3 ms here whatever its size, so this halves the cost of eviction
//! when the pool is much smaller than the data.
//!
//! File (little-endian):
//! * page 0, the file header: `[0..8)` magic `OLTPDWB\0`, `[8..12)` version,
//!   `[12..16)` region count, `[16..24)` database id, `[24..28)` slots per region,
//!   `[28..32)` crc32 of `[0..28)`. Written once, at creation.
//! * then `REGIONS` regions of `1 + SLOTS` pages, region `r` from page `1 + r * (1 +
//!   SLOTS)`: the batch descriptor (`[0..4)` crc32 of `[4..8192)`, `[4..8)` magic
//!   `0x44574254`, `[8..16)` batch sequence number, `[16..20)` page count `k`,
//!   `[24..32)` database id, then from 32 one 16-byte entry per page: page id (u64), the
//!   image's checksum (u32, its bytes `0..4`), 4 bytes zero), then the batch's `k` sealed
//!   page images in descriptor order.
//!
//! The descriptor and the images go to the region in one write, then one fsync. Only
//! batches still in the ring can have data-file writes that are not durable (a region is
//! reused only after a data-file fsync that follows its batch), and a page's newest copy
//! in the ring is its newest write, so replay takes, per page, the copy of the batch with
//! the highest sequence number. Sequence numbers continue across opens. Images of older
//! batches left in a region's higher slots are never looked at (only the descriptor's
//! `k`), nor is an image whose checksum disagrees with its descriptor (a region being
//! rewritten when the process stopped).

use crate::log::io_err;
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, Page, PageType, PAGE_SIZE};
use api::{Error, Result};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use storage::{File, Open, Storage};

pub const NAME: &str = "dw";
const MAGIC: &[u8; 8] = b"OLTPDWB\0";
/// 3: a ring of regions, one fsync per batch (2: one batch, two fsyncs; 1: slots only,
/// replay could take a stale copy).
const VERSION: u32 = 3;
const BATCH_MAGIC: u32 = 0x4457_4254; // "TBWD"
const ENTRY: usize = 16;
/// Pages per batch: 2 MiB, so the cleaner's fsync is amortised over many pages.
pub const SLOTS: usize = 256;
/// Batches in the ring (8 MiB in all).
pub const REGIONS: usize = 4;

/// Byte offset of region `r`'s batch descriptor; its images follow it.
fn region_at(r: usize) -> u64 {
    ((1 + r * (1 + SLOTS)) * PAGE_SIZE) as u64
}
const _: () = assert!(
    32 + SLOTS * ENTRY <= PAGE_SIZE,
    "the descriptor must fit a page"
);
// An entry is its page id, the image's checksum and 4 zero bytes; the page count field
// (`u32`) holds `SLOTS`; the ring has room for a batch while the last one's data-file
// writes become durable.
const _: () = assert!(ENTRY == 8 + 4 + 4);
const _: () = assert!(SLOTS <= u32::MAX as usize && REGIONS >= 2);

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
        // The buffer is the descriptor page and one image per page id.
        debug_assert_eq!(self.bytes.len(), (1 + self.pids.len()) * PAGE_SIZE);
        self.pids.push(pid);
        let at = self.bytes.len();
        self.bytes.resize(at + PAGE_SIZE, 0);
        (&mut self.bytes[at..]).try_into().unwrap()
    }
    /// Add page `pid` as a copy of `src` (one copy, no zeroing first); returns the
    /// image, to `seal` once the log is durable past it.
    pub fn push_copy(&mut self, pid: u64, src: &Page) -> &mut Page {
        debug_assert_eq!(self.bytes.len(), (1 + self.pids.len()) * PAGE_SIZE);
        assert!(pid != page::NO_PAGE, "a batch image of the null page id");
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

    /// Write the pages to `data` in place, with no torn-page protection (a load in
    /// progress; pools without a double-write file: unit tests of pages and trees).
    /// Images of consecutive pages, adjacent in the batch, go in one write.
    pub fn write_unprotected(&self, data: &dyn File) -> Result<()> {
        let mut i = 0;
        while i < self.len() {
            let mut j = i + 1;
            while j < self.len() && self.pid(j) == self.pid(j - 1) + 1 {
                j += 1;
            }
            for k in i..j {
                debug_assert!(
                    page::verify(self.page(k), self.pid(k)).is_ok(),
                    "an unsealed image"
                );
            }
            let bytes = &self.bytes[(1 + i) * PAGE_SIZE..(1 + j) * PAGE_SIZE];
            data.write_all_at(bytes, self.pid(i) * PAGE_SIZE as u64)
                .map_err(|e| {
                    io_err(std::io::Error::new(
                        e.kind(),
                        format!("{e} (pages {} to {})", self.pid(i), self.pid(j - 1)),
                    ))
                })?;
            i = j;
        }
        Ok(())
    }
}

/// Write one sealed page to the data file; an error names the page.
fn write_page(data: &dyn File, pid: u64, p: &Page) -> Result<()> {
    data.write_all_at(&p[..], pid * PAGE_SIZE as u64)
        .map_err(|e| io_err(std::io::Error::new(e.kind(), format!("{e} (page {pid})"))))
}

/// A batch as read back from its region.
struct Region {
    at: u64,
    seq: u64,
    /// The descriptor, then the images.
    bytes: Vec<u8>,
    /// Per image that verifies: (its index, its page id).
    ok: Vec<(usize, u64)>,
}

impl Region {
    fn image(&self, j: usize) -> &Page {
        self.bytes[(1 + j) * PAGE_SIZE..(2 + j) * PAGE_SIZE]
            .try_into()
            .unwrap()
    }
}

struct Writer {
    /// Sequence number of the next batch (after the highest on file: replay orders
    /// copies by it). Batch `seq` (from 1) goes to region `(seq - 1) % REGIONS`.
    seq: u64,
    /// Every batch numbered below this has its data-file writes durable.
    synced_below: u64,
    /// The first failure: once a batch failed, its data-file writes may be torn and the
    /// only intact copies are in `dw`, so no later batch may overwrite them.
    failed: Option<String>,
}

pub struct DoubleWrite {
    file: Arc<dyn File>,
    db_id: u64,
    /// One batch at a time, held through the whole batch (dw write, dw fsync, data
    /// writes): batches reach the file in order, and a region is never reused while its
    /// batch's data-file writes may not be durable. A mutex costs nothing here: each
    /// holder does an fsync.
    writer: Mutex<Writer>,
}

fn header(db_id: u64) -> Vec<u8> {
    let mut h = vec![0u8; PAGE_SIZE];
    h[..8].copy_from_slice(MAGIC);
    put_u32(&mut h, 8, VERSION);
    put_u32(&mut h, 12, REGIONS as u32);
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
        Ok(Self::with(file, db_id, 0))
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
        if get_u32(&h, 8) != VERSION
            || get_u32(&h, 12) as usize != REGIONS
            || get_u32(&h, 24) as usize != SLOTS
        {
            return Err(Error::fatal(format!(
                "{}: double-write format version {} with {} regions of {} slots, this build uses {VERSION} with {REGIONS} of {SLOTS}",
                path.display(),
                get_u32(&h, 8),
                get_u32(&h, 12),
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
        let dw = Self::with(file, db_id, 0);
        let last = dw.regions()?.iter().map(|r| r.seq).max().unwrap_or(0);
        let mut w = dw.writer.lock();
        w.seq = last + 1;
        // Batches of an earlier open are made durable by `replay`, which a read-write
        // open runs before it writes anything.
        w.synced_below = last + 1;
        drop(w);
        Ok(dw)
    }

    fn with(file: Arc<dyn File>, db_id: u64, last: u64) -> DoubleWrite {
        DoubleWrite {
            file,
            db_id,
            writer: Mutex::new(Writer {
                seq: last + 1,
                synced_below: last + 1,
                failed: None,
            }),
        }
    }

    /// Write the batch's sealed pages to the data file, each protected against a torn
    /// write: descriptor and images to the next region of `dw` (one write, after a
    /// data-file fsync if that region's batch may not be durable yet), fsync `dw`, the
    /// pages to the data file. The data file is not synced here: `sync` callers
    /// (checkpoints, shutdown) do that. A batch of more than `SLOTS` pages goes in
    /// several rounds. After a failure every later write is refused (see
    /// `Writer::failed`).
    pub fn write(&self, data: &dyn File, b: &mut Batch) -> Result<()> {
        // Waiting here means another thread is inside its fsync: an I/O wait.
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
        assert!(
            (1..=SLOTS).contains(&k) && from + k <= b.len(),
            "a round of {k} pages from {from}"
        );
        assert!(
            w.seq >= 1 && w.synced_below <= w.seq,
            "the ring's numbers went wrong"
        );
        // The region's previous batch (number seq - REGIONS) must be durable in the
        // data file before its copies are overwritten.
        if w.seq > REGIONS as u64 && w.synced_below <= w.seq - REGIONS as u64 {
            data.sync_data().map_err(io_err)?;
            w.synced_below = w.seq;
        }
        // The region's last batch is durable in the data file: its copies may go.
        debug_assert!(w.seq <= REGIONS as u64 || w.synced_below > w.seq - REGIONS as u64);
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
        let region = ((w.seq - 1) % REGIONS as u64) as usize;
        let r = self
            .file
            .write_all_at(&b.bytes[at..at + (1 + k) * PAGE_SIZE], region_at(region))
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
        Ok(())
    }

    /// The batches the ring holds, as the file holds them, oldest first. A region whose
    /// descriptor does not verify never completed its write to `dw`, so none of its
    /// data-file writes had started: left out. An image that does not verify (its
    /// checksum, the descriptor's checksum of it, its header with the descriptor's page
    /// id) was being written when the batch stopped: left out, same reason.
    fn regions(&self) -> Result<Vec<Region>> {
        let mut out = Vec::new();
        for r in 0..REGIONS {
            let at = region_at(r);
            let mut d = vec![0u8; PAGE_SIZE];
            let n = self.file.read_full_at(&mut d, at).map_err(io_err)?;
            if n < PAGE_SIZE
                || get_u32(&d, 4) != BATCH_MAGIC
                || crc32fast::hash(&d[4..]) != get_u32(&d, 0)
                || get_u64(&d, 24) != self.db_id
            {
                continue;
            }
            let k = (get_u32(&d, 16) as usize).min(SLOTS);
            d.resize((1 + k) * PAGE_SIZE, 0);
            let got = self
                .file
                .read_full_at(&mut d[PAGE_SIZE..], at + PAGE_SIZE as u64)
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
            out.push(Region {
                at,
                seq: get_u64(&d, 8),
                bytes: d,
                ok,
            });
        }
        out.sort_by_key(|r| r.seq);
        // One batch per region, numbered apart (a batch goes to region `(seq - 1) % REGIONS`).
        debug_assert!(
            out.windows(2).all(|p| p[0].seq < p[1].seq),
            "two regions of one batch"
        );
        Ok(out)
    }

    /// Per page with a copy in the ring, its newest copy: (page id, region index, image
    /// index), in page order.
    fn newest(regions: &[Region]) -> Vec<(u64, usize, usize)> {
        let mut m = std::collections::BTreeMap::new();
        for (ri, r) in regions.iter().enumerate() {
            for &(j, pid) in &r.ok {
                m.insert(pid, (ri, j)); // regions are oldest first: later ones win
            }
        }
        m.into_iter().map(|(pid, (ri, j))| (pid, ri, j)).collect()
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

    /// The newest intact copies of data pages that are damaged: (page id, image).
    /// Reads only (read-only opens put them in the pool, in memory).
    pub fn damaged_pages(&self, data: &dyn File) -> Result<Vec<(u64, Box<Page>)>> {
        let regions = self.regions()?;
        let mut out = Vec::new();
        let mut cur: Box<Page> = Box::new([0; PAGE_SIZE]);
        for (pid, ri, j) in Self::newest(&regions) {
            if Self::data_page(data, pid, &mut cur)? {
                let mut img: Box<Page> = Box::new([0; PAGE_SIZE]);
                img.copy_from_slice(regions[ri].image(j));
                out.push((pid, img));
            }
        }
        Ok(out)
    }

    /// At a read-write open, before this process writes anything (its batches overwrite
    /// the copies): finish the ring's batches. First make the copies themselves durable
    /// by writing them again (the killed process's batches may be in the page cache only,
    /// and after a failed fsync the kernel no longer holds them dirty, so a sync alone
    /// would not do); then write each page's newest copy where the data file's page is
    /// damaged or not newer than it (its data write may likewise be in the page cache
    /// only), and fsync the data file. Returns the pages written. Idempotent: a crash
    /// during it repeats it at the next open.
    pub fn replay(&self, data: &dyn File) -> Result<usize> {
        let regions = self.regions()?;
        if regions.is_empty() {
            return Ok(0);
        }
        for r in &regions {
            self.file.write_all_at(&r.bytes, r.at).map_err(io_err)?;
        }
        self.file.sync_data().map_err(io_err)?;
        let mut n = 0;
        let mut cur: Box<Page> = Box::new([0; PAGE_SIZE]);
        for (pid, ri, j) in Self::newest(&regions) {
            let img = regions[ri].image(j);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of consecutive pages go in one write each; every page lands at its own
    /// offset, whatever the order of the batch.
    #[test]
    fn an_unprotected_batch_writes_each_page_at_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let st = storage::os();
        let file = storage::create_durable(&*st, &dir.path().join("data")).unwrap();
        let pids = [4u64, 5, 6, 9, 2, 3, 11];
        let mut b = Batch::new();
        for &pid in &pids {
            let p = b.push(pid);
            page::format(p, pid, PageType::Heap);
            p[100] = pid as u8 * 3;
            page::seal(p);
        }
        b.write_unprotected(&*file).unwrap();
        let mut got: Box<Page> = Box::new([0; PAGE_SIZE]);
        for &pid in &pids {
            let n = file.read_full_at(&mut got[..], pid * PAGE_SIZE as u64);
            assert_eq!(n.unwrap(), PAGE_SIZE);
            assert!(page::verify(&got, pid).is_ok(), "page {pid}");
            assert_eq!(got[100], pid as u8 * 3, "page {pid}");
        }
        // Pages never written read as zeros.
        for pid in [0u64, 1, 7, 8, 10] {
            let n = file.read_full_at(&mut got[..], pid * PAGE_SIZE as u64);
            assert_eq!(n.unwrap(), PAGE_SIZE);
            assert!(got.iter().all(|&x| x == 0), "page {pid}");
        }
    }
}
