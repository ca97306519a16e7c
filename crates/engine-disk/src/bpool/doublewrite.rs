//! The double-write file (torn-page protection, as InnoDB's doublewrite buffer). A page
//! write can be cut short (a power loss, a full disk), leaving a page that is neither the
//! old image nor the new one, which the log cannot repair (redo needs a valid page to
//! apply records to). So every batch of pages goes first to `dw` and is fsynced there,
//! then to the data file, which is fsynced before the batch's slots are reused: at any
//! moment each page being written has an intact copy in one of the two files. At open,
//! `repair` puts back the `dw` copy of every data page that is damaged.
//! It must never interpret a page beyond the common header (id, LSN, checksum).
//!
//! File: page 0 is the header (`[0..8)` magic, `[8..12)` version, `[16..24)` database
//! id, `[24..28)` slot count, `[28..32)` crc32 of `[0..28)`), then `SLOTS` sealed page
//! images, each at `(1 + slot) * PAGE_SIZE`.

use crate::log::io_err;
use crate::page::{self, get_u32, get_u64, put_u32, put_u64, Page, PageType, PAGE_SIZE};
use api::{Error, Result};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;
use storage::{File, Open, Storage};

pub const NAME: &str = "dw";
const MAGIC: &[u8; 8] = b"OLTPDWB\0";
const VERSION: u32 = 1;
/// Pages per batch: 2 MiB, so the cleaner's fsyncs are amortised over many pages.
pub const SLOTS: usize = 256;

pub struct DoubleWrite {
    file: Arc<dyn File>,
    /// Held through a whole batch (dw write, dw sync, data writes, data sync): a second
    /// batch must not overwrite slots whose data-file writes are not yet durable.
    staging: Mutex<Vec<u8>>,
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
        Ok(Self::with(file))
    }

    /// The double-write file of an existing database; missing, garbled or another
    /// database's is refused.
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
        Ok(Self::with(file))
    }

    fn with(file: Arc<dyn File>) -> DoubleWrite {
        DoubleWrite {
            file,
            staging: Mutex::new(Vec::with_capacity(SLOTS * PAGE_SIZE)),
        }
    }

    /// Write sealed `pages` to the data file, each protected against a torn write.
    pub fn write(&self, data: &dyn File, pages: &[(u64, &Page)]) -> Result<()> {
        let mut buf = crate::latch::lock(&self.staging);
        for chunk in pages.chunks(SLOTS) {
            buf.clear();
            for (_, p) in chunk {
                buf.extend_from_slice(&p[..]);
            }
            self.file
                .write_all_at(&buf, PAGE_SIZE as u64)
                .map_err(io_err)?;
            self.file.sync_data().map_err(io_err)?;
            for &(pid, p) in chunk {
                debug_assert_eq!(page::page_id(p), pid, "a page image under another id");
                data.write_all_at(&p[..], pid * PAGE_SIZE as u64)
                    .map_err(io_err)?;
            }
            data.sync_data().map_err(io_err)?;
        }
        Ok(())
    }

    /// Before a new process reuses the slots: write every page whose newest copy here
    /// is at least as new as the data file's (the killed process's data write may be in
    /// the page cache only, or dropped by a failed fsync while the cache still shows it),
    /// then sync the data file. Returns the pages written.
    pub fn replay(&self, data: &dyn File) -> Result<usize> {
        // First make the copies themselves durable, by writing them again: the killed
        // process's last batch may be in the page cache only (and after a failed fsync
        // the kernel no longer holds it dirty, so a sync alone would not do).
        let mut slots = vec![0u8; SLOTS * PAGE_SIZE];
        let got = self
            .file
            .read_full_at(&mut slots, PAGE_SIZE as u64)
            .map_err(io_err)?;
        if got > 0 {
            self.file
                .write_all_at(&slots[..got], PAGE_SIZE as u64)
                .map_err(io_err)?;
        }
        self.file.sync_data().map_err(io_err)?;
        let mut n = 0;
        let mut cur: Box<Page> = Box::new([0; PAGE_SIZE]);
        for (pid, copy) in self.newest()? {
            let got = data
                .read_full_at(&mut cur[..], pid * PAGE_SIZE as u64)
                .map_err(io_err)?;
            cur[got..].fill(0);
            let stale = match page::verify(&cur, pid) {
                Ok(PageType::Free) | Err(_) => true,
                Ok(_) => page::lsn(&cur) <= page::lsn(&copy),
            };
            if stale {
                data.write_all_at(&copy[..], pid * PAGE_SIZE as u64)
                    .map_err(io_err)?;
                n += 1;
            }
        }
        data.sync_data().map_err(io_err)?;
        Ok(n)
    }

    /// The newest intact copy of each page here.
    fn newest(&self) -> Result<std::collections::BTreeMap<u64, Box<Page>>> {
        let mut best: std::collections::BTreeMap<u64, Box<Page>> = Default::default();
        let mut img: Box<Page> = Box::new([0; PAGE_SIZE]);
        for slot in 0..SLOTS {
            let off = (1 + slot as u64) * PAGE_SIZE as u64;
            if self.file.read_full_at(&mut img[..], off).map_err(io_err)? < PAGE_SIZE {
                break;
            }
            let pid = page::page_id(&img);
            // A slot that does not verify was being written when the batch stopped: its
            // data-file write had not started, so the data page is intact.
            if !matches!(page::verify(&img, pid), Ok(t) if t != PageType::Free) {
                continue;
            }
            if best
                .get(&pid)
                .is_none_or(|b| page::lsn(b) < page::lsn(&img))
            {
                best.insert(pid, img.clone());
            }
        }
        Ok(best)
    }

    /// The intact copies of data pages that are damaged (checksum, torn, or zeroed where
    /// a copy exists): (page id, image), newest copy per page. Reads only.
    pub fn damaged_pages(&self, data: &dyn File) -> Result<Vec<(u64, Box<Page>)>> {
        let best = self.newest()?;
        let mut out = Vec::new();
        let mut cur: Box<Page> = Box::new([0; PAGE_SIZE]);
        for (pid, copy) in best {
            let n = data
                .read_full_at(&mut cur[..], pid * PAGE_SIZE as u64)
                .map_err(io_err)?;
            cur[n..].fill(0);
            let bad = match page::verify(&cur, pid) {
                Err(_) => true,
                Ok(PageType::Free) => true, // never freed: zeros where a copy exists
                Ok(_) => false,
            };
            if bad {
                out.push((pid, copy));
            }
        }
        Ok(out)
    }
}
