//! Write-ahead log: the record format, the log buffer, group commit by a flush daemon,
//! and reading the log back (torn-tail truncation). LSN = byte position of a record in
//! the log stream (the log file maps position `lsn - start_lsn` to `lsn`).
//! This module owns log bytes and durability only; it must never touch pages or locks.
//!
//! Record (little-endian, `REC_HEADER` = 64 bytes, then the payload):
//! `[0..4)` total length, `[4..8)` crc32 of `[8..len)`, `[8..16)` lsn, `[16..24)` txn id
//! (0 = redo-only system record), `[24..32)` txn's previous lsn, `[32..40)` undo-next lsn
//! (CLRs), `[40..48)` page id, `[48]` kind, `[49]` flags (bit 0: CLR), `[50..52)` slot,
//! `[52..56)` table, `[56..58)` index, `[58..60)` a (kind-specific), `[60..64)` reserved.

use crate::page::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, PAGE_SIZE};
use api::{Error, LogMode, Result};
use parking_lot::Mutex;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

pub const REC_HEADER: usize = 64;
pub const FILE_HEADER: usize = 32;
const FILE_MAGIC: u32 = 0x574c_4f47; // "GOLW"
/// 2: `PageImages` carry two ranges per page (slotted B-tree nodes); 1: one prefix.
const FILE_VERSION: u32 = 2;
/// Longest record accepted (a split logs a few page images; a checkpoint lists every
/// dirty page: 16 bytes each, so 256 MiB covers a pool of 16M frames).
pub const MAX_REC: usize = 1 << 28;
/// The async flusher's period: the most an `Async` commit stays volatile.
const ASYNC_PERIOD: Duration = Duration::from_millis(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    HeapFormat = 1,
    HeapInsert = 2,
    HeapDelete = 3,
    HeapUpdate = 4,
    BtInsert = 5,
    BtDelete = 6,
    PageImages = 7,
    Commit = 8,
    End = 9,
    Checkpoint = 10,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        use Kind::*;
        Some(match v {
            1 => HeapFormat,
            2 => HeapInsert,
            3 => HeapDelete,
            4 => HeapUpdate,
            5 => BtInsert,
            6 => BtDelete,
            7 => PageImages,
            8 => Commit,
            9 => End,
            10 => Checkpoint,
            _ => return None,
        })
    }
}

/// A log record, decoded (borrowing its payload) or about to be written.
#[derive(Debug, Clone, Copy)]
pub struct Rec<'a> {
    pub lsn: u64,
    pub txn: u64,
    pub prev: u64,
    pub undo_next: u64,
    pub page: u64,
    pub kind: Kind,
    pub clr: bool,
    pub slot: u16,
    pub table: u32,
    pub index: u16,
    pub a: u16,
    pub payload: &'a [u8],
    /// A second payload part written after `payload` (saves a copy when logging).
    pub payload2: &'a [u8],
}

impl<'a> Rec<'a> {
    pub fn new(kind: Kind) -> Self {
        Rec {
            lsn: 0,
            txn: 0,
            prev: 0,
            undo_next: 0,
            page: 0,
            kind,
            clr: false,
            slot: 0,
            table: 0,
            index: 0,
            a: 0,
            payload: &[],
            payload2: &[],
        }
    }

    #[allow(clippy::len_without_is_empty)] // a record is never empty (header)
    pub fn len(&self) -> usize {
        REC_HEADER + self.payload.len() + self.payload2.len()
    }

    /// Encode into `out` (exactly `self.len()` bytes) with lsn `lsn`.
    pub fn encode(&self, lsn: u64, out: &mut [u8]) {
        let len = self.len();
        assert_eq!(out.len(), len, "log record buffer of the wrong size");
        put_u32(out, 0, len as u32);
        put_u64(out, 8, lsn);
        put_u64(out, 16, self.txn);
        put_u64(out, 24, self.prev);
        put_u64(out, 32, self.undo_next);
        put_u64(out, 40, self.page);
        out[48] = self.kind as u8;
        out[49] = self.clr as u8;
        put_u16(out, 50, self.slot);
        put_u32(out, 52, self.table);
        put_u16(out, 56, self.index);
        put_u16(out, 58, self.a);
        put_u32(out, 60, 0);
        let p = REC_HEADER + self.payload.len();
        out[REC_HEADER..p].copy_from_slice(self.payload);
        out[p..].copy_from_slice(self.payload2);
        let crc = crc32fast::hash(&out[8..]);
        put_u32(out, 4, crc);
    }

    /// Decode the record at the start of `buf`; `None` if it is incomplete or damaged
    /// (a torn tail), or does not carry `expect_lsn`.
    pub fn decode(buf: &'a [u8], expect_lsn: u64) -> Option<Rec<'a>> {
        if buf.len() < REC_HEADER {
            return None;
        }
        let len = get_u32(buf, 0) as usize;
        if !(REC_HEADER..=MAX_REC).contains(&len) || len > buf.len() {
            return None;
        }
        let b = &buf[..len];
        if crc32fast::hash(&b[8..]) != get_u32(b, 4) || get_u64(b, 8) != expect_lsn {
            return None;
        }
        let kind = Kind::from_u8(b[48])?;
        let pl = len - REC_HEADER;
        // Structural checks, so replaying a record can never index out of bounds.
        let well_formed = match kind {
            Kind::BtInsert | Kind::BtDelete => pl >= 8,
            Kind::HeapUpdate => {
                pl.is_multiple_of(2) && pl / 2 + get_u16(b, 58) as usize <= PAGE_SIZE
            }
            Kind::HeapInsert | Kind::HeapDelete => pl <= PAGE_SIZE,
            Kind::PageImages => pl >= 4,
            Kind::Checkpoint => pl >= 24,
            Kind::HeapFormat | Kind::Commit | Kind::End => true,
        };
        if !well_formed {
            return None;
        }
        Some(Rec {
            lsn: expect_lsn,
            txn: get_u64(b, 16),
            prev: get_u64(b, 24),
            undo_next: get_u64(b, 32),
            page: get_u64(b, 40),
            kind,
            clr: b[49] & 1 != 0,
            slot: get_u16(b, 50),
            table: get_u32(b, 52),
            index: get_u16(b, 56),
            a: get_u16(b, 58),
            payload: &b[REC_HEADER..],
            payload2: &[],
        })
    }
}

struct Buf {
    /// Bytes appended but not yet handed to the file; `data[0]` has lsn `data_lsn`.
    data: Vec<u8>,
    data_lsn: u64,
    next_lsn: u64,
}

pub struct Log {
    mode: LogMode,
    buf: Mutex<Buf>,
    /// Every record starting below `durable` is on stable storage (or, with
    /// `LogMode::Off`, deliberately dropped).
    durable: AtomicU64,
    requested: AtomicU64,
    flushed: rt::Event,
    work: rt::Event,
    file: Mutex<Option<(File, u64)>>,
    stop: AtomicBool,
    pub bytes: AtomicU64,
    pub flushes: AtomicU64,
}

pub fn wal_path(dir: &Path) -> PathBuf {
    dir.join("wal")
}

fn file_header(start_lsn: u64) -> [u8; FILE_HEADER] {
    let mut h = [0u8; FILE_HEADER];
    put_u32(&mut h, 0, FILE_MAGIC);
    put_u32(&mut h, 4, FILE_VERSION);
    put_u64(&mut h, 8, start_lsn);
    let c = crc32fast::hash(&h[..16]);
    put_u32(&mut h, 16, c);
    h
}

/// The log as found on disk: its first lsn and its valid records' bytes (a torn or
/// damaged tail is cut off). `None` if there is no log file.
pub struct LogImage {
    pub start_lsn: u64,
    pub bytes: Vec<u8>,
}

impl LogImage {
    pub fn read(dir: &Path) -> Result<Option<LogImage>> {
        let path = wal_path(dir);
        let raw = match std::fs::read(&path) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::fatal(format!("reading {}: {e}", path.display()))),
        };
        if raw.len() < FILE_HEADER
            || get_u32(&raw, 0) != FILE_MAGIC
            || crc32fast::hash(&raw[..16]) != get_u32(&raw, 16)
        {
            return Err(Error::fatal(format!(
                "{} is not an oltpscope log (bad header)",
                path.display()
            )));
        }
        if get_u32(&raw, 4) != FILE_VERSION {
            return Err(Error::fatal(format!(
                "{} has log format version {}, this build reads {FILE_VERSION}",
                path.display(),
                get_u32(&raw, 4)
            )));
        }
        let start_lsn = get_u64(&raw, 8);
        let mut bytes = raw;
        // Cut at the first record that does not decode: a torn last write.
        let mut off = FILE_HEADER;
        while let Some(r) = Rec::decode(&bytes[off..], start_lsn + off as u64) {
            off += r.len();
        }
        bytes.truncate(off);
        Ok(Some(LogImage { start_lsn, bytes }))
    }

    pub fn end_lsn(&self) -> u64 {
        self.start_lsn + self.bytes.len() as u64
    }

    pub fn first_lsn(&self) -> u64 {
        self.start_lsn + FILE_HEADER as u64
    }

    pub fn get(&self, lsn: u64) -> Option<Rec<'_>> {
        let off = lsn.checked_sub(self.start_lsn)? as usize;
        if off < FILE_HEADER || off >= self.bytes.len() {
            return None;
        }
        Rec::decode(&self.bytes[off..], lsn)
    }

    /// Records from `from` (a record boundary) to the end.
    pub fn iter_from(&self, from: u64) -> impl Iterator<Item = Rec<'_>> {
        let mut lsn = from.max(self.first_lsn());
        std::iter::from_fn(move || {
            let r = self.get(lsn)?;
            lsn += r.len() as u64;
            Some(r)
        })
    }
}

impl Log {
    /// Open the log in `dir` for appending at `end_lsn`. The file holds `[start_lsn,
    /// end_lsn)` already (recovery may still append CLRs after it).
    pub fn open(dir: &Path, mode: LogMode, start_lsn: u64, end_lsn: u64) -> Result<Log> {
        let path = wal_path(dir);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::fatal(format!("opening {}: {e}", path.display())))?;
        // Drop a torn tail so new records follow the last valid one.
        f.set_len(end_lsn - start_lsn)?;
        Ok(Log {
            mode,
            buf: Mutex::new(Buf {
                data: Vec::with_capacity(1 << 20),
                data_lsn: end_lsn,
                next_lsn: end_lsn,
            }),
            durable: AtomicU64::new(end_lsn),
            requested: AtomicU64::new(0),
            flushed: rt::Event::new(),
            work: rt::Event::new(),
            file: Mutex::new(Some((f, start_lsn))),
            stop: AtomicBool::new(false),
            bytes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
        })
    }

    /// Replace the log with an empty one whose first record gets lsn `next_lsn`
    /// (after recovery has made every page durable). Crash-safe by rename.
    pub fn create_empty(dir: &Path, next_lsn: u64) -> Result<u64> {
        let start = next_lsn - FILE_HEADER as u64;
        let tmp = dir.join("wal.new");
        {
            let mut f = File::create(&tmp)?;
            f.write_all(&file_header(start))?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, wal_path(dir))?;
        File::open(dir)?.sync_all()?;
        Ok(start)
    }

    pub fn mode(&self) -> LogMode {
        self.mode
    }

    /// Append a record; returns its lsn. `last_lsn`, if given, is set to the lsn while
    /// the buffer is held, so a checkpoint that reads it later sees every earlier record.
    pub fn append(&self, rec: &Rec<'_>, last_lsn: Option<&AtomicU64>) -> u64 {
        let len = rec.len();
        let mut b = crate::latch::lock(&self.buf);
        let lsn = b.next_lsn;
        b.next_lsn += len as u64;
        if self.mode == LogMode::Off {
            // Kept nowhere: the papers' "log to RAM". Transactions keep their own undo.
            self.durable.store(b.next_lsn, Ordering::Release);
        } else {
            let at = b.data.len();
            b.data.resize(at + len, 0);
            rec.encode(lsn, &mut b.data[at..]);
        }
        if let Some(l) = last_lsn {
            l.store(lsn, Ordering::Release);
        }
        drop(b);
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
        lsn
    }

    /// The lsn the next record will get.
    pub fn next_lsn(&self) -> u64 {
        crate::latch::lock(&self.buf).next_lsn
    }

    pub fn durable_lsn(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// Wait until every record starting below `lsn` is durable.
    pub fn flush_to(&self, lsn: u64) -> Result<()> {
        if self.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        self.requested.fetch_max(lsn, Ordering::AcqRel);
        self.work.notify_all();
        self.flushed.wait(rt::WaitKind::LogFlush, None, || {
            self.durable.load(Ordering::Acquire) >= lsn || self.stop.load(Ordering::Acquire)
        });
        if self.durable.load(Ordering::Acquire) >= lsn {
            Ok(())
        } else {
            Err(Error::fatal("log flush failed (log writer stopped)"))
        }
    }

    /// Write out everything appended so far (the flush daemon's step; also used
    /// directly at shutdown and by recovery).
    pub fn flush_once(&self) -> Result<()> {
        let mut fg = self.file.lock();
        if fg.is_none() {
            return Err(Error::fatal("log is detached (engine crashed)"));
        }
        let (data, data_lsn, end) = {
            let mut b = crate::latch::lock(&self.buf);
            if b.data.is_empty() {
                return Ok(());
            }
            let end = b.next_lsn;
            let data_lsn = b.data_lsn;
            b.data_lsn = end;
            (std::mem::take(&mut b.data), data_lsn, end)
        };
        let Some((f, start)) = fg.as_mut() else {
            return Err(Error::fatal("log is detached (engine crashed)"));
        };
        f.write_all_at(&data, data_lsn - *start)?;
        if self.mode == LogMode::Sync || self.mode == LogMode::Async {
            f.sync_data()?;
        }
        self.durable.store(end, Ordering::Release);
        self.flushes.fetch_add(1, Ordering::Relaxed);
        // Hand the allocation back to the buffer to avoid a fresh one next time.
        let mut b = crate::latch::lock(&self.buf);
        if b.data.is_empty() && b.data.capacity() < data.capacity() {
            let mut d = data;
            d.clear();
            b.data = d;
        }
        drop(b);
        drop(fg);
        self.flushed.notify_all();
        Ok(())
    }

    /// The flush daemon: group commit. Runs until `stop`.
    pub fn daemon(&self) {
        loop {
            let stopping = self.stop.load(Ordering::Acquire);
            let period = if self.mode == LogMode::Async {
                Some(ASYNC_PERIOD)
            } else {
                Some(Duration::from_millis(50))
            };
            self.work.wait(rt::WaitKind::Other, period, || {
                self.stop.load(Ordering::Acquire)
                    || self.requested.load(Ordering::Acquire) > self.durable.load(Ordering::Acquire)
            });
            if self.mode != LogMode::Off {
                if let Err(e) = self.flush_once() {
                    if self.file.lock().is_some() {
                        eprintln!("oltpscope disk engine: log write failed: {e}");
                    }
                    self.stop.store(true, Ordering::Release);
                    self.flushed.notify_all();
                    return;
                }
            }
            if stopping {
                return;
            }
        }
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.work.notify_all();
        self.flushed.notify_all();
    }

    pub fn is_detached(&self) -> bool {
        self.file.lock().is_none()
    }

    /// Forget the file handle (the crash hook: nothing more reaches the disk).
    pub fn detach(&self) {
        *self.file.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let start = Log::create_empty(dir.path(), 1000).unwrap();
        let log = Log::open(dir.path(), LogMode::Sync, start, 1000).unwrap();
        let mut lsns = vec![];
        for i in 0..10u32 {
            let mut r = Rec::new(Kind::HeapInsert);
            r.txn = 5;
            r.page = i as u64;
            r.slot = i as u16;
            let body = vec![i as u8; i as usize * 3];
            r.payload = &body;
            lsns.push(log.append(&r, None));
        }
        log.flush_once().unwrap();
        assert_eq!(lsns[0], 1000);
        drop(log);
        let img = LogImage::read(dir.path()).unwrap().unwrap();
        let recs: Vec<_> = img.iter_from(0).collect();
        assert_eq!(recs.len(), 10);
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.lsn, lsns[i]);
            assert_eq!(r.kind, Kind::HeapInsert);
            assert_eq!(r.payload, &vec![i as u8; i * 3][..]);
            assert_eq!(r.slot as usize, i);
        }
        // Tear the last record: it must disappear, the others stay.
        let path = wal_path(dir.path());
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        let img = LogImage::read(dir.path()).unwrap().unwrap();
        assert_eq!(img.iter_from(0).count(), 9);
        // A flipped byte inside record 5 cuts the log there.
        let mut raw = std::fs::read(&path).unwrap();
        let off = (lsns[5] - start) as usize + REC_HEADER - 1;
        raw[off] ^= 0xff;
        std::fs::write(&path, &raw).unwrap();
        let img = LogImage::read(dir.path()).unwrap().unwrap();
        assert_eq!(img.iter_from(0).count(), 5);
        // Appending after reopening continues at the cut.
        let log = Log::open(dir.path(), LogMode::Sync, img.start_lsn, img.end_lsn()).unwrap();
        let l = log.append(&Rec::new(Kind::Commit), None);
        assert_eq!(l, img.end_lsn());
    }

    #[test]
    fn bad_log_header_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(wal_path(dir.path()), b"not a log at all, definitely not").unwrap();
        assert!(matches!(LogImage::read(dir.path()), Err(Error::Fatal(_))));
    }
}
