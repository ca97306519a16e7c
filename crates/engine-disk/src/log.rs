//! Write-ahead log: the record format, the log buffer, group commit by a flush daemon,
//! segment files, and reading the log back with bounded memory. LSN = byte position of
//! a record in one endless log stream; the stream is stored in segment files of
//! `seg_bytes` each (`wal.<n>` holds positions `[n * seg_bytes, (n + 1) * seg_bytes)`
//! after its `SEG_HEADER`), so records may span two files and old segments can be
//! removed once no recovery can need them. Only a torn tail is ever cut; damage is
//! refused. Each flush is synced before the next one starts, so a crash can only tear
//! the last flush, and tears it at any sector (a power loss keeps any subset of an
//! unsynced write's sectors): valid records may follow an invalid one inside it. The
//! first record of every flush is marked (flag bit 1), so an invalid record is a torn
//! tail when no marked valid record lies beyond it, and damage when one does.
//! This module owns log bytes and durability only; it must never touch pages or locks.
//!
//! Record (little-endian, `REC_HEADER` = 64 bytes, then the payload):
//! `[0..4)` total length, `[4..8)` crc32 of `[8..len)`, `[8..16)` lsn, `[16..24)` txn id
//! (0 = redo-only system record), `[24..32)` txn's previous lsn, `[32..40)` undo-next lsn
//! (CLRs), `[40..48)` page id, `[48]` kind, `[49]` flags (bit 0: CLR; bit 1: the first
//! record of a flush), `[50..52)` slot, `[52..56)` table, `[56..58)` index, `[58..60)` a
//! (kind-specific), `[60..64)` reserved.

use crate::page::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64, PAGE_SIZE};
use api::{Error, LogMode, Result};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use storage::{File, Open, Storage};

pub const REC_HEADER: usize = 64;
/// Segment file header: `[0..8)` magic, `[8..12)` format version, `[12..16)` zero,
/// `[16..24)` database id, `[24..32)` segment number, `[32..40)` segment bytes,
/// `[40..44)` crc32 of `[0..40)`; zeros up to `SEG_HEADER`.
pub const SEG_HEADER: usize = 64;
const SEG_MAGIC: &[u8; 8] = b"OLTPWAL\0";
/// 3: segment files with a database id; 2: one file, `PageImages` with two ranges.
const FORMAT_VERSION: u32 = 3;
/// Default segment size: big enough that switching files is rare (TPC-C writes about
/// 9 MB/s), small enough that recycling frees space every few seconds.
pub const DEFAULT_SEG_BYTES: u64 = 64 << 20;
/// The first LSN of a new database (0 means "no record" in prev/undo-next fields).
pub const FIRST_LSN: u64 = 64;
/// Longest record accepted (a split logs a few page images; a checkpoint lists every
/// dirty page: 16 bytes each, so 256 MiB covers a pool of 16M frames).
pub const MAX_REC: usize = 1 << 28;
// The record header's last field (`[60..64)`) ends at `REC_HEADER`, its length field
// (`u32`) holds any record, and the segment header's checksum (`[40..44)`) fits in
// `SEG_HEADER`; the first LSN leaves LSN 0 free ("no record").
const _: () = assert!(60 + 4 == REC_HEADER && MAX_REC <= u32::MAX as usize);
const _: () = assert!(40 + 4 <= SEG_HEADER && FIRST_LSN > 0);
/// The async flusher's period: the most an `Async` commit stays volatile.
const ASYNC_PERIOD: Duration = Duration::from_millis(2);
/// Room each of the log's two buffers (the appenders' and the flusher's spare) is made
/// with: what a flush writes at once is far less, so appends never grow a buffer, and
/// neither does it depend on the log's history when one does. A spare made empty grew,
/// copying its records, whenever a round outgrew every earlier one: once per new
/// largest round, a timing accident that moved a traced run's instructions per
/// transaction by 0.4% (issue 41, session 71).
const BUF_CAP: usize = 1 << 20;

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
        // What `decode` accepts: a length it reads back, an LSN past the segment header.
        assert!(len <= MAX_REC, "a log record of {len} bytes");
        debug_assert!(lsn >= FIRST_LSN, "a record at LSN {lsn}");
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
        debug_assert!(
            Rec::decode(out, lsn).is_some(),
            "an encoded record does not decode"
        );
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
        debug_assert!(len >= REC_HEADER && b.len() == len);
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

/// The log directory's files for one database: segment naming, headers, identity.
#[derive(Debug, Clone)]
pub struct Segments {
    pub st: Arc<dyn Storage>,
    pub dir: PathBuf,
    pub db_id: u64,
    pub seg_bytes: u64,
}

pub fn is_segment_name(name: &str) -> bool {
    name.strip_prefix("wal.")
        .is_some_and(|n| n.len() == 12 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A segment being created (`Segments::create`), left behind by a crash.
pub fn is_segment_tmp_name(name: &str) -> bool {
    name.strip_suffix(".tmp").is_some_and(is_segment_name)
}

/// Which database a segment file (`wal.<n>`, or `wal.<n>.tmp` being created) is, by its
/// header alone (the log directory's ownership check: `crate::own_files`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegOwner {
    /// The header names this database id (its checksum is not required: a damaged
    /// header that still carries the magic and an id is that database's damaged file).
    Db(u64),
    /// A `.tmp` cut before its header was whole: it holds no record (segments get
    /// records only after the rename), so it is no database's data.
    Empty,
    /// Not a segment header: whose it is cannot be told.
    Unknown,
}

/// The owner of the segment file at `path` (see [`SegOwner`]).
pub fn segment_owner(st: &dyn Storage, path: &Path, tmp: bool) -> Result<SegOwner> {
    let f = st.open(path, Open::Read).map_err(io_err)?;
    let mut h = [0u8; SEG_HEADER];
    let n = f.read_full_at(&mut h, 0).map_err(io_err)?;
    Ok(if n >= 24 && &h[..8] == SEG_MAGIC {
        SegOwner::Db(get_u64(&h, 16))
    } else if tmp && n < SEG_HEADER {
        SegOwner::Empty
    } else {
        SegOwner::Unknown
    })
}

impl Segments {
    pub fn path(&self, seg: u64) -> PathBuf {
        self.dir.join(format!("wal.{seg:012}"))
    }

    fn header(&self, seg: u64) -> [u8; SEG_HEADER] {
        let mut h = [0u8; SEG_HEADER];
        h[..8].copy_from_slice(SEG_MAGIC);
        put_u32(&mut h, 8, FORMAT_VERSION);
        put_u64(&mut h, 16, self.db_id);
        put_u64(&mut h, 24, seg);
        put_u64(&mut h, 32, self.seg_bytes);
        let c = crc32fast::hash(&h[..40]);
        put_u32(&mut h, 40, c);
        h
    }

    /// Segment numbers present, in order (ignores other files).
    pub fn list(&self) -> Result<Vec<u64>> {
        let names = self
            .st
            .list(&self.dir)
            .map_err(|e| Error::fatal(e.to_string()))?;
        Ok(names
            .iter()
            .filter(|n| is_segment_name(n))
            .filter_map(|n| n[4..].parse().ok())
            .collect())
    }

    /// Open an existing segment and check its header against this database.
    fn open(&self, seg: u64, how: Open) -> Result<Arc<dyn File>> {
        let path = self.path(seg);
        let f = self
            .st
            .open(&path, how)
            .map_err(|e| Error::fatal(e.to_string()))?;
        let mut h = [0u8; SEG_HEADER];
        let n = f.read_full_at(&mut h, 0)?;
        let bad = |what: &str| Err(Error::fatal(format!("{}: {what}", path.display())));
        if n < 44 || &h[..8] != SEG_MAGIC || crc32fast::hash(&h[..40]) != get_u32(&h, 40) {
            return bad("not an oltpscope log segment (bad header)");
        }
        if get_u32(&h, 8) != FORMAT_VERSION {
            return bad(&format!(
                "log format version {}, this build reads {FORMAT_VERSION}",
                get_u32(&h, 8)
            ));
        }
        if get_u64(&h, 16) != self.db_id {
            return bad(&format!(
                "belongs to another database (id {:016x}, expected {:016x})",
                get_u64(&h, 16),
                self.db_id
            ));
        }
        if get_u64(&h, 24) != seg || get_u64(&h, 32) != self.seg_bytes {
            return bad("segment number or size does not match its name (renamed or foreign file)");
        }
        Ok(f)
    }

    /// Create segment `seg` with its header, durable with its directory entry. Atomic
    /// (written as `wal.<n>.tmp`, then renamed): after a crash the segment is absent or
    /// has its whole header, never a name without a valid header, which reading the log
    /// must refuse as damage.
    fn create(&self, seg: u64) -> Result<Arc<dyn File>> {
        let path = self.path(seg);
        let name = format!("wal.{seg:012}");
        storage::write_atomic(&*self.st, &self.dir, &name, &self.header(seg)).map_err(io_err)?;
        self.st.open(&path, Open::ReadWrite).map_err(io_err)
    }

    fn seg_of(&self, lsn: u64) -> u64 {
        lsn / self.seg_bytes
    }

    fn offset_of(&self, lsn: u64) -> u64 {
        SEG_HEADER as u64 + lsn % self.seg_bytes
    }

    /// Write the stream's bytes `[from, end)` again, as read, and sync them. Recovery
    /// does this for the last flush (`LogReader::last_flush_lsn`) before it builds on
    /// it: after a process kill those bytes may be in the page cache only (the killed
    /// process's fsync failed, or it was killed before its fsync), and a later power
    /// loss would tear them under pages and records written after them. Syncing again
    /// is not enough: after a failed fsync the kernel no longer holds them dirty.
    pub fn rewrite(&self, mut from: u64, end: u64) -> Result<()> {
        while from < end {
            let seg = self.seg_of(from);
            let n = (self.seg_bytes - from % self.seg_bytes).min(end - from);
            let f = self.open(seg, Open::ReadWrite)?;
            let mut buf = vec![0u8; n as usize];
            let got = f
                .read_full_at(&mut buf, self.offset_of(from))
                .map_err(io_err)?;
            if got < buf.len() {
                return Err(Error::fatal(format!(
                    "{}: log bytes at LSN {from} vanished during recovery",
                    self.path(seg).display()
                )));
            }
            f.write_all_at(&buf, self.offset_of(from)).map_err(io_err)?;
            f.sync_data().map_err(io_err)?;
            from += n;
        }
        Ok(())
    }

    /// Remove every segment that ends at or below `lsn` (no recovery can need them).
    pub fn remove_below(&self, lsn: u64) -> Result<usize> {
        let mut n = 0;
        for seg in self.list()? {
            if (seg + 1) * self.seg_bytes <= lsn {
                self.st.remove(&self.path(seg)).map_err(io_err)?;
                n += 1;
            }
        }
        if n > 0 {
            self.st.sync_dir(&self.dir).map_err(io_err)?;
        }
        Ok(n)
    }
}

/// An I/O error as the one line a user sees (full disks say so).
pub fn io_err(e: std::io::Error) -> Error {
    if storage::is_no_space(&e) {
        Error::fatal(format!(
            "no space left on the device ({e}): free space, then reopen the database; recovery keeps every acknowledged commit"
        ))
    } else {
        Error::fatal(e.to_string())
    }
}

/// A record read from the log (owned, so recovery holds only what it needs).
pub struct OwnedRec {
    bytes: Vec<u8>,
    lsn: u64,
}

impl OwnedRec {
    pub fn rec(&self) -> Rec<'_> {
        Rec::decode(&self.bytes, self.lsn).expect("decoded once already")
    }
    pub fn lsn(&self) -> u64 {
        self.lsn
    }
    /// Whether this record was the first of a flush (everything before it was durable
    /// when it was written).
    pub fn starts_flush(&self) -> bool {
        self.bytes[49] & FLAG_FLUSH != 0
    }
}

/// Record flag: the first record of a flush.
const FLAG_FLUSH: u8 = 2;

/// Mark the record at the start of `data` as the first of a flush and reseal it.
fn mark_flush_start(data: &mut [u8]) {
    let len = get_u32(data, 0) as usize;
    data[49] |= FLAG_FLUSH;
    let crc = crc32fast::hash(&data[8..len]);
    put_u32(data, 4, crc);
}

/// The log as found on disk, read on demand: where its valid records end, and records
/// by LSN or in order. Memory use is bounded by one segment (the damage scan) and one
/// read-ahead chunk, whatever the log's length.
pub struct LogReader {
    segs: Segments,
    files: BTreeMap<u64, Arc<dyn File>>,
    end: u64,
    /// The start of the last flush found (`from` if none is marked after it).
    last_flush: u64,
}

const CHUNK: usize = 1 << 20;

impl LogReader {
    /// Open the log of database `segs.db_id`, which must hold a valid record at `from`
    /// (the last checkpoint). Finds the end of the valid records after `from`; refuses
    /// damage (an invalid record with a valid one beyond it), missing segments and
    /// foreign files. Changes nothing on disk.
    pub fn open(segs: Segments, from: u64) -> Result<LogReader> {
        let dir = segs.dir.display().to_string();
        let list = segs.list()?;
        let first_needed = segs.seg_of(from);
        if !list.contains(&first_needed) {
            return Err(Error::fatal(format!(
                "the log in {dir} has no segment holding the last checkpoint (LSN {from}): the log was lost, cut or replaced"
            )));
        }
        let mut files = BTreeMap::new();
        for &seg in &list {
            files.insert(seg, segs.open(seg, Open::Read)?);
        }
        let last = *list.last().expect("not empty");
        for seg in first_needed..=last {
            if !files.contains_key(&seg) {
                return Err(Error::fatal(format!(
                    "log segment {} is missing (segments {first_needed}..={last} must all exist): the log is damaged",
                    segs.path(seg).display()
                )));
            }
        }
        let mut r = LogReader {
            segs,
            files,
            end: from,
            last_flush: from,
        };
        if r.get(from)?.is_none() {
            return Err(Error::fatal(format!(
                "the log in {dir} does not reach the last checkpoint (LSN {from}): the log was lost, cut or replaced"
            )));
        }
        // Walk to the first position that holds no valid record.
        let mut end = from;
        let mut last_flush = from;
        {
            let mut it = r.iter_from(from);
            while let Some(rec) = it.next_raw()? {
                end = rec.lsn + rec.bytes.len() as u64;
                if rec.starts_flush() {
                    last_flush = rec.lsn;
                }
            }
        }
        r.end = end;
        r.last_flush = last_flush;
        r.check_nothing_beyond(end)?;
        Ok(r)
    }

    /// The first LSN after the last valid record.
    pub fn end_lsn(&self) -> u64 {
        self.end
    }

    /// Where the last flush before the end began: the records from here to the end may
    /// not be durable even though they can be read (a process killed after its fsync
    /// failed leaves them in the page cache only). See `Log::open`.
    pub fn last_flush_lsn(&self) -> u64 {
        self.last_flush
    }

    /// Bytes of the stream stored at `lsn..` (stops at a missing segment or a file end).
    fn read_stream(&self, mut lsn: u64, buf: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            let seg = self.segs.seg_of(lsn);
            let Some(f) = self.files.get(&seg) else { break };
            let in_seg = (self.segs.seg_bytes - lsn % self.segs.seg_bytes) as usize;
            let want = (buf.len() - got).min(in_seg);
            let n = f.read_full_at(&mut buf[got..got + want], self.segs.offset_of(lsn))?;
            got += n;
            lsn += n as u64;
            if n < want {
                break;
            }
        }
        Ok(got)
    }

    /// The valid record at `lsn`, if there is one.
    pub fn get(&self, lsn: u64) -> Result<Option<OwnedRec>> {
        let mut h = [0u8; REC_HEADER];
        if self.read_stream(lsn, &mut h)? < REC_HEADER || get_u64(&h, 8) != lsn {
            return Ok(None);
        }
        let len = get_u32(&h, 0) as usize;
        if !(REC_HEADER..=MAX_REC).contains(&len) {
            return Ok(None);
        }
        let mut bytes = vec![0u8; len];
        if self.read_stream(lsn, &mut bytes)? < len || Rec::decode(&bytes, lsn).is_none() {
            return Ok(None);
        }
        Ok(Some(OwnedRec { bytes, lsn }))
    }

    /// The record at `lsn`, which must exist (a needed record that does not decode is
    /// damage, never the end of the log).
    pub fn need(&self, lsn: u64, why: &str) -> Result<OwnedRec> {
        if lsn >= self.end {
            return Err(Error::fatal(format!(
                "log record {lsn} needed by {why} lies beyond the log's end {}: the log is damaged",
                self.end
            )));
        }
        self.get(lsn)?.ok_or_else(|| {
            Error::fatal(format!(
                "log record {lsn} needed by {why} is damaged or missing ({})",
                self.segs.path(self.segs.seg_of(lsn)).display()
            ))
        })
    }

    /// Records in order from `lsn` (a record boundary) to the end.
    pub fn iter_from(&self, lsn: u64) -> RecIter<'_> {
        RecIter {
            r: self,
            lsn,
            buf: Vec::new(),
            buf_lsn: lsn,
        }
    }

    /// Refuse if a valid record that starts a flush lies after `end` in the stored
    /// segments: the invalid record at `end` was then durable before that flush began,
    /// so it is damage, not a torn last write. (Valid records of the last flush may
    /// follow the tear: a power loss keeps any subset of an unsynced write's sectors.)
    fn check_nothing_beyond(&self, end: u64) -> Result<()> {
        let mut data = Vec::new();
        for (&seg, f) in self.files.range(self.segs.seg_of(end)..) {
            let base = seg * self.segs.seg_bytes;
            let len = f
                .len()?
                .saturating_sub(SEG_HEADER as u64)
                .min(self.segs.seg_bytes);
            data.resize(len as usize, 0);
            let n = f.read_full_at(&mut data, SEG_HEADER as u64)?;
            data.truncate(n);
            let mut p = if base <= end {
                (end - base) as usize + 1
            } else {
                0
            };
            while p + 16 <= data.len() {
                // A record's own LSN field equals its position: a cheap first filter.
                if get_u64(&data, p + 8) == base + p as u64
                    && self.get(base + p as u64)?.is_some_and(|r| r.starts_flush())
                {
                    return Err(Error::fatal(format!(
                        "the log is damaged at LSN {end} ({} offset {}): records of a later flush follow it, so it is not a torn tail; refusing to cut it",
                        self.segs.path(self.segs.seg_of(end)).display(),
                        self.segs.offset_of(end)
                    )));
                }
                p += 1;
            }
        }
        Ok(())
    }
}

pub struct RecIter<'a> {
    r: &'a LogReader,
    lsn: u64,
    buf: Vec<u8>,
    buf_lsn: u64,
}

impl RecIter<'_> {
    /// Bytes `[lsn, lsn + n)` from the read-ahead buffer, refilled as needed.
    fn bytes(&mut self, n: usize) -> Result<Option<&[u8]>> {
        let at = (self.lsn - self.buf_lsn) as usize;
        if at + n > self.buf.len() {
            self.buf.resize(n.max(CHUNK), 0);
            let got = self.r.read_stream(self.lsn, &mut self.buf)?;
            self.buf.truncate(got);
            self.buf_lsn = self.lsn;
            if got < n {
                return Ok(None);
            }
            return Ok(Some(&self.buf[..n]));
        }
        Ok(Some(&self.buf[at..at + n]))
    }

    fn next_raw(&mut self) -> Result<Option<OwnedRec>> {
        let lsn = self.lsn;
        let Some(h) = self.bytes(REC_HEADER)? else {
            return Ok(None);
        };
        let len = get_u32(h, 0) as usize;
        if get_u64(h, 8) != lsn || !(REC_HEADER..=MAX_REC).contains(&len) {
            return Ok(None);
        }
        let Some(b) = self.bytes(len)? else {
            return Ok(None);
        };
        if Rec::decode(b, lsn).is_none() {
            return Ok(None);
        }
        let bytes = b.to_vec();
        self.lsn += len as u64;
        Ok(Some(OwnedRec { bytes, lsn }))
    }

    /// The next record before the log's end; damage before the end is an error.
    #[allow(clippy::should_implement_trait)] // fallible: not an Iterator
    pub fn next(&mut self) -> Result<Option<OwnedRec>> {
        if self.lsn >= self.r.end {
            return Ok(None);
        }
        let lsn = self.lsn;
        match self.next_raw()? {
            Some(r) => Ok(Some(r)),
            None => Err(Error::fatal(format!(
                "log record {lsn} is damaged ({})",
                self.r.segs.path(self.r.segs.seg_of(lsn)).display()
            ))),
        }
    }
}

struct Buf {
    /// Bytes appended but not yet handed to the file; `data[0]` has lsn `data_lsn`.
    data: Vec<u8>,
    data_lsn: u64,
    next_lsn: u64,
    /// Bytes appended since the log was opened (counted here, under the latch every
    /// append takes anyway: a separate atomic would be one more cache line that moves
    /// between cores on every record).
    appended: u64,
}

struct Writer {
    segs: Segments,
    seg: u64,
    file: Arc<dyn File>,
    /// The buffer the next flush swaps in for the appenders' full one: both are made
    /// with `BUF_CAP` and keep their capacity, so appends (under the buffer latch) never
    /// grow a fresh vector.
    spare: Vec<u8>,
}

impl Writer {
    /// Write `data` at `lsn`, moving to new segments as the stream crosses them.
    fn write(&mut self, mut lsn: u64, mut data: &[u8], sync: bool) -> Result<()> {
        while !data.is_empty() {
            let seg = self.segs.seg_of(lsn);
            if seg != self.seg {
                if sync {
                    self.file.sync_data().map_err(io_err)?;
                }
                self.file = self.segs.create(seg)?;
                self.seg = seg;
            }
            let room = (self.segs.seg_bytes - lsn % self.segs.seg_bytes) as usize;
            let n = room.min(data.len());
            self.file
                .write_all_at(&data[..n], self.segs.offset_of(lsn))
                .map_err(io_err)?;
            lsn += n as u64;
            data = &data[n..];
        }
        if sync {
            self.file.sync_data().map_err(io_err)?;
        }
        Ok(())
    }
}

fn mode_code(m: LogMode) -> u8 {
    match m {
        LogMode::Off => 0,
        LogMode::Async => 1,
        LogMode::Sync => 2,
    }
}

pub struct Log {
    /// The `LogMode` (`mode_code`); it changes once at most, at the end of an unlogged
    /// load (`resume_logging`), while nothing appends.
    mode: AtomicU8,
    buf: Mutex<Buf>,
    /// Every record starting below `durable` is on stable storage (or, with
    /// `LogMode::Off`, deliberately dropped).
    durable: AtomicU64,
    requested: AtomicU64,
    flushed: rt::Event,
    work: rt::Event,
    file: Mutex<Option<Writer>>,
    detached: AtomicBool,
    stop: AtomicBool,
    /// The flush daemon is running; without it (recovery, `Hooks::inline`) a commit
    /// writes the log itself.
    daemon_on: AtomicBool,
    /// Why the log stopped accepting flushes (the first write or sync error).
    failure: Mutex<Option<String>>,
    failed: AtomicBool,
    pub flushes: AtomicU64,
}

impl Log {
    /// Create the log of a new database: its first segment, empty, records from
    /// `FIRST_LSN` on.
    pub fn create(segs: Segments, mode: LogMode) -> Result<Log> {
        let seg = segs.seg_of(FIRST_LSN);
        let file = segs.create(seg)?;
        Ok(Self::with_writer(
            mode,
            FIRST_LSN,
            Some(Writer {
                segs,
                seg,
                file,
                spare: Vec::with_capacity(BUF_CAP),
            }),
        ))
    }

    /// Open the log for appending at `end` (from `LogReader::end_lsn`, so everything
    /// after it has been shown to be a torn tail): cut that tail and remove segments
    /// beyond it, so new records follow the last valid one.
    pub fn open(segs: Segments, mode: LogMode, end: u64) -> Result<Log> {
        assert!(end >= FIRST_LSN, "a log end {end} before the first record");
        let seg = segs.seg_of(end);
        for s in segs.list()? {
            if s > seg {
                segs.st.remove(&segs.path(s)).map_err(io_err)?;
            }
        }
        let file = match segs.list()?.contains(&seg) {
            true => segs.open(seg, Open::ReadWrite)?,
            false => segs.create(seg)?,
        };
        if file.len()? > segs.offset_of(end) {
            file.set_len(segs.offset_of(end)).map_err(io_err)?;
            file.sync_data().map_err(io_err)?;
        }
        segs.st.sync_dir(&segs.dir).map_err(io_err)?;
        Ok(Self::with_writer(
            mode,
            end,
            Some(Writer {
                segs,
                seg,
                file,
                spare: Vec::with_capacity(BUF_CAP),
            }),
        ))
    }

    /// A log that keeps nothing (unit tests of pages and trees).
    pub fn memory_only() -> Log {
        Self::memory_only_at(FIRST_LSN)
    }

    /// A log that keeps nothing, continuing at `end` (read-only opens: recovery's CLRs
    /// stay in memory, and the log on disk stays exactly as it was found).
    pub fn memory_only_at(end: u64) -> Log {
        Self::with_writer(LogMode::Off, end, None)
    }

    fn with_writer(mode: LogMode, end: u64, w: Option<Writer>) -> Log {
        Log {
            mode: AtomicU8::new(mode_code(mode)),
            buf: Mutex::new(Buf {
                data: Vec::with_capacity(BUF_CAP),
                data_lsn: end,
                next_lsn: end,
                appended: 0,
            }),
            durable: AtomicU64::new(end),
            requested: AtomicU64::new(0),
            flushed: rt::Event::new(),
            work: rt::Event::new(),
            file: Mutex::new(w),
            detached: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            daemon_on: AtomicBool::new(false),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            flushes: AtomicU64::new(0),
        }
    }

    pub fn mode(&self) -> LogMode {
        match self.mode.load(Ordering::Relaxed) {
            0 => LogMode::Off,
            1 => LogMode::Async,
            _ => LogMode::Sync,
        }
    }

    /// Start keeping records in `mode` from here on, after a load that kept none
    /// (`LogMode::Off`; the engine's `load_done`, whose checkpoint made the stream
    /// durable up to `next_lsn`). Called with no transaction active: the next record
    /// starts the buffer, and the flush daemon (already running) writes it.
    pub fn resume_logging(&self, mode: LogMode) {
        let b = crate::latch::lock(&self.buf);
        assert!(
            self.mode() == LogMode::Off && b.data.is_empty(),
            "logging resumed on a log that kept records"
        );
        assert_eq!(
            self.durable.load(Ordering::Acquire),
            b.next_lsn,
            "logging resumed before the stream was durable"
        );
        let mut b = b;
        b.data_lsn = b.next_lsn;
        self.mode.store(mode_code(mode), Ordering::Release);
    }

    /// Append a record; returns its lsn. `txn`, if given, is the transaction's (first,
    /// last) lsn pair: set while the buffer is held, so a checkpoint that reads them
    /// later sees every earlier record.
    pub fn append(&self, rec: &Rec<'_>, txn: Option<(&AtomicU64, &AtomicU64)>) -> u64 {
        rt::point(rt::Point::Ctx(rt::Component::LogInsert));
        let len = rec.len();
        let mut b = crate::latch::lock(&self.buf);
        let lsn = b.next_lsn;
        // The buffer holds exactly the records from `data_lsn` on (none with the log off).
        debug_assert!(self.mode() == LogMode::Off || b.data_lsn + b.data.len() as u64 == lsn);
        b.next_lsn += len as u64;
        b.appended += len as u64;
        if self.mode() == LogMode::Off {
            // Kept nowhere: the papers' "log to RAM". Transactions keep their own undo.
            self.durable.store(b.next_lsn, Ordering::Release);
        } else {
            let at = b.data.len();
            b.data.resize(at + len, 0);
            rec.encode(lsn, &mut b.data[at..]);
        }
        if let Some((first, last)) = txn {
            if first.load(Ordering::Relaxed) == 0 {
                first.store(lsn, Ordering::Release);
            }
            // A transaction's records chain backwards (`prev`): its LSNs grow.
            assert!(
                last.load(Ordering::Relaxed) < lsn,
                "a transaction's LSN went back"
            );
            last.store(lsn, Ordering::Release);
        }
        drop(b);
        lsn
    }

    /// Bytes of records appended since the log was opened.
    pub fn bytes(&self) -> u64 {
        crate::latch::lock(&self.buf).appended
    }

    /// Append `rec` and make it durable whatever the mode (checkpoints: with the log
    /// off, the stream skips to the record's LSN; recovery starts there).
    pub fn append_durable(&self, rec: &Rec<'_>) -> Result<u64> {
        if self.mode() != LogMode::Off {
            let lsn = self.append(rec, None);
            // Written here, not by the daemon: it may not run yet (creation, recovery).
            self.flush_once()?;
            assert!(
                self.durable_lsn() > lsn,
                "checkpoint {lsn} not durable after a flush"
            );
            return Ok(lsn);
        }
        let mut fg = rt::lock(rt::WaitKind::LogFlush, &self.file);
        let Some(w) = fg.as_mut() else {
            return Err(self.why_stopped());
        };
        let mut b = crate::latch::lock(&self.buf);
        let lsn = b.next_lsn;
        let mut bytes = vec![0u8; rec.len()];
        rec.encode(lsn, &mut bytes);
        mark_flush_start(&mut bytes);
        rt::blocking(rt::WaitKind::LogFlush, || w.write(lsn, &bytes, true))?;
        b.next_lsn += bytes.len() as u64;
        b.data_lsn = b.next_lsn;
        self.durable.store(b.next_lsn, Ordering::Release);
        Ok(lsn)
    }

    /// The lsn the next record will get.
    pub fn next_lsn(&self) -> u64 {
        crate::latch::lock(&self.buf).next_lsn
    }

    pub fn durable_lsn(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    fn why_stopped(&self) -> Error {
        match &*self.failure.lock() {
            Some(m) => Error::fatal(m.clone()),
            None if self.detached.load(Ordering::Acquire) => {
                Error::fatal("log is detached (engine crashed)")
            }
            None => Error::fatal("log flush failed (log writer stopped)"),
        }
    }

    /// Wait until every record starting below `lsn` is durable.
    pub fn flush_to(&self, lsn: u64) -> Result<()> {
        if self.durable.load(Ordering::Acquire) >= lsn {
            return Ok(());
        }
        if !self.daemon_on.load(Ordering::Acquire) {
            // No daemon to wait for (recovery, an engine opened with `Hooks::inline`):
            // write it here.
            self.flush_once()?;
            return if self.durable.load(Ordering::Acquire) >= lsn {
                Ok(())
            } else {
                Err(self.why_stopped())
            };
        }
        self.requested.fetch_max(lsn, Ordering::AcqRel);
        self.work.notify_all();
        self.flushed.wait(rt::WaitKind::LogFlush, None, || {
            self.durable.load(Ordering::Acquire) >= lsn || self.stop.load(Ordering::Acquire)
        });
        if self.durable.load(Ordering::Acquire) >= lsn {
            Ok(())
        } else {
            Err(self.why_stopped())
        }
    }

    /// Write out everything appended so far (the flush daemon's step; also used
    /// directly at shutdown and by recovery). A failure stops the log for good: what
    /// reached the file is unknown, so nothing after it may be acknowledged.
    pub fn flush_once(&self) -> Result<()> {
        let r = self.flush_inner();
        if let Err(e) = &r {
            let mut f = self.failure.lock();
            if f.is_none() && !self.detached.load(Ordering::Acquire) {
                *f = Some(e.to_string());
                self.failed.store(true, Ordering::Release);
            }
            drop(f);
            self.stop.store(true, Ordering::Release);
            self.flushed.notify_all();
        }
        r
    }

    fn flush_inner(&self) -> Result<()> {
        if self.failure.lock().is_some() {
            return Err(self.why_stopped());
        }
        // Held across the write and fsync: another flusher waits through `rt` (it may be
        // a coroutine of this very thread, which must switch rather than block).
        let mut fg = rt::lock(rt::WaitKind::LogFlush, &self.file);
        if fg.is_none() {
            if self.mode() == LogMode::Off && !self.detached.load(Ordering::Acquire) {
                return Ok(());
            }
            return Err(self.why_stopped());
        }
        let Some(w) = fg.as_mut() else {
            return Err(self.why_stopped());
        };
        // Swap the spare (empty, with `BUF_CAP` or an earlier round's capacity) for the full
        // buffer: appenders never regrow a vector from nothing under their latch.
        let mut data = std::mem::take(&mut w.spare);
        data.clear();
        let (data_lsn, end) = {
            let mut b = crate::latch::lock(&self.buf);
            if b.data.is_empty() {
                drop(b);
                w.spare = data;
                return Ok(());
            }
            let end = b.next_lsn;
            let data_lsn = b.data_lsn;
            debug_assert_eq!(
                end - data_lsn,
                b.data.len() as u64,
                "the buffer is the records from data_lsn"
            );
            b.data_lsn = end;
            std::mem::swap(&mut b.data, &mut data);
            (data_lsn, end)
        };
        mark_flush_start(&mut data);
        let sync = self.mode() != LogMode::Off;
        rt::blocking(rt::WaitKind::LogFlush, || w.write(data_lsn, &data, sync))?;
        // Flushes are serialised (`file` held): the durable LSN only grows, and what
        // was written starts where the last flush ended.
        assert!(
            self.durable.load(Ordering::Relaxed) <= data_lsn,
            "a flush overlaps the durable log"
        );
        self.durable.store(end, Ordering::Release);
        self.flushes.fetch_add(1, Ordering::Relaxed);
        data.clear();
        w.spare = data;
        drop(fg);
        self.flushed.notify_all();
        Ok(())
    }

    /// The flush daemon: group commit. Runs until `stop`.
    pub fn daemon(&self) {
        self.daemon_on.store(true, Ordering::Release);
        self.daemon_loop();
        self.daemon_on.store(false, Ordering::Release);
    }

    fn daemon_loop(&self) {
        loop {
            let stopping = self.stop.load(Ordering::Acquire);
            let period = if self.mode() == LogMode::Async {
                Some(ASYNC_PERIOD)
            } else {
                Some(Duration::from_millis(50))
            };
            self.work.wait(rt::WaitKind::Other, period, || {
                self.stop.load(Ordering::Acquire)
                    || self.requested.load(Ordering::Acquire) > self.durable.load(Ordering::Acquire)
            });
            // A failure is recorded in `failure`: every later flush and commit reports it.
            if self.mode() != LogMode::Off && self.flush_once().is_err() {
                return;
            }
            if stopping {
                return;
            }
        }
    }

    /// Whether a write or sync failed (one load: cheap enough for every commit).
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Stop the log for good because of an I/O error elsewhere (a failed data-file
    /// fsync): nothing more is flushed, so nothing more is acknowledged, and no later
    /// checkpoint can be written.
    pub fn fail(&self, why: String) {
        let mut f = self.failure.lock();
        if f.is_none() {
            *f = Some(why);
            self.failed.store(true, Ordering::Release);
        }
        drop(f);
        self.stop.store(true, Ordering::Release);
        self.work.notify_all();
        self.flushed.notify_all();
    }

    /// The first write or sync error, once the log has stopped because of it.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.work.notify_all();
        self.flushed.notify_all();
    }

    pub fn is_detached(&self) -> bool {
        self.detached.load(Ordering::Acquire)
    }

    /// Forget the file handle (the crash hook: nothing more reaches the disk).
    pub fn detach(&self) {
        self.detached.store(true, Ordering::Release);
        *rt::lock(rt::WaitKind::LogFlush, &self.file) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(dir: &std::path::Path, db_id: u64) -> Segments {
        Segments {
            st: storage::os(),
            dir: dir.to_path_buf(),
            db_id,
            seg_bytes: 8192,
        }
    }

    /// 40 records of growing size over 8 KB segments (so several span two files).
    fn write_some(dir: &std::path::Path) -> Vec<u64> {
        let log = Log::create(segs(dir, 7), LogMode::Sync).unwrap();
        let mut lsns = vec![];
        for i in 0..40u32 {
            let mut r = Rec::new(Kind::HeapInsert);
            r.txn = 5;
            r.page = i as u64;
            r.slot = i as u16;
            let body = vec![i as u8; i as usize * 37];
            r.payload = &body;
            lsns.push(log.append(&r, None));
            if i % 7 == 0 {
                log.flush_once().unwrap();
            }
        }
        log.flush_once().unwrap();
        lsns
    }

    fn all(dir: &std::path::Path) -> Result<Vec<(u64, u16, Vec<u8>)>> {
        let r = LogReader::open(segs(dir, 7), FIRST_LSN)?;
        let mut v = vec![];
        let mut it = r.iter_from(FIRST_LSN);
        while let Some(o) = it.next()? {
            let rec = o.rec();
            v.push((rec.lsn, rec.slot, rec.payload.to_vec()));
        }
        Ok(v)
    }

    fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
        let st = storage::os();
        st.list(dir)
            .unwrap()
            .into_iter()
            .map(|n| {
                let b = std::fs::read(dir.join(&n)).unwrap();
                (n, b)
            })
            .collect()
    }

    /// An unlogged load's records take LSNs but reach no file; the checkpoint record
    /// written at the stream's end is readable there, and once logging resumes the
    /// records after it are written and read back in order.
    #[test]
    fn logging_resumes_after_an_unlogged_stretch() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::create(segs(dir.path(), 7), LogMode::Off).unwrap();
        let body = vec![3u8; 500];
        let mut r = Rec::new(Kind::HeapInsert);
        r.txn = 5;
        r.payload = &body;
        for i in 0..60u16 {
            r.slot = i;
            log.append(&r, None);
        }
        log.flush_once().unwrap();
        assert_eq!(
            log.flushes.load(Ordering::Relaxed),
            0,
            "the load was written"
        );
        let payload = [0u8; 24];
        let mut c = Rec::new(Kind::Checkpoint);
        c.payload = &payload;
        let ck = log.append_durable(&c).unwrap();
        assert!(ck > FIRST_LSN + 60 * r.len() as u64 - 1);
        log.resume_logging(LogMode::Sync);
        assert_eq!(log.mode(), LogMode::Sync);
        let mut after = vec![];
        for i in 100..110u16 {
            r.slot = i;
            after.push(log.append(&r, None));
        }
        log.flush_to(log.next_lsn()).unwrap();
        let rd = LogReader::open(segs(dir.path(), 7), ck).unwrap();
        let mut it = rd.iter_from(ck);
        assert_eq!(it.next().unwrap().unwrap().rec().kind, Kind::Checkpoint);
        let mut got = vec![];
        while let Some(o) = it.next().unwrap() {
            got.push((o.rec().lsn, o.rec().slot));
        }
        let want: Vec<_> = after
            .iter()
            .zip(100..110u16)
            .map(|(&l, s)| (l, s))
            .collect();
        assert_eq!(got, want);
        // The unlogged records are nowhere: no segment between the first and the
        // checkpoint's was created.
        let s = segs(dir.path(), 7);
        let (first, ck_seg) = (s.seg_of(FIRST_LSN), s.seg_of(ck));
        assert!(ck_seg > first + 2);
        assert!(s.list().unwrap().iter().all(|&n| n == first || n >= ck_seg));
    }

    #[test]
    #[should_panic(expected = "logging resumed on a log that kept records")]
    fn logging_resumes_only_from_off() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::create(segs(dir.path(), 7), LogMode::Async).unwrap();
        log.resume_logging(LogMode::Sync);
    }

    /// A flush swaps the appenders' buffer with the spare of the previous round; both
    /// are made with `BUF_CAP`, so from the first round on appends go into a vector that
    /// has room (none grows), and the records still reach the file in order, once each.
    #[test]
    fn flushes_alternate_two_buffers_that_keep_their_capacity() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::create(segs(dir.path(), 7), LogMode::Async).unwrap();
        let body = vec![9u8; 300];
        let mut r = Rec::new(Kind::HeapInsert);
        r.txn = 5;
        r.payload = &body;
        let mut caps = vec![];
        for round in 0..4u16 {
            for i in 0..10u16 {
                r.slot = round * 10 + i;
                log.append(&r, None);
            }
            log.flush_once().unwrap();
            caps.push(crate::latch::lock(&log.buf).data.capacity());
        }
        // Every buffer swapped in, the first spare included, has the room it was made
        // with: nothing grew (a grown buffer is not exactly `BUF_CAP`).
        assert!(10 * r.len() < BUF_CAP);
        assert_eq!(caps, vec![BUF_CAP; 4]);
        assert_eq!(log.bytes(), 40 * r.len() as u64);
        drop(log);
        let r = LogReader::open(segs(dir.path(), 7), FIRST_LSN).unwrap();
        let mut it = r.iter_from(FIRST_LSN);
        let mut slots = vec![];
        while let Some(o) = it.next().unwrap() {
            slots.push(o.rec().slot);
        }
        assert_eq!(slots, (0..40).collect::<Vec<u16>>());
    }

    #[test]
    fn records_round_trip_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let lsns = write_some(dir.path());
        assert_eq!(lsns[0], FIRST_LSN);
        let got = all(dir.path()).unwrap();
        assert_eq!(got.len(), 40);
        for (i, (lsn, slot, body)) in got.iter().enumerate() {
            assert_eq!(*lsn, lsns[i]);
            assert_eq!(*slot as usize, i);
            assert_eq!(body, &vec![i as u8; i * 37]);
        }
        assert!(
            segs(dir.path(), 7).list().unwrap().len() > 3,
            "records span segments"
        );
        // Random access (undo) and `need` past the end.
        let r = LogReader::open(segs(dir.path(), 7), lsns[3]).unwrap();
        assert_eq!(r.need(lsns[20], "test").unwrap().rec().slot, 20);
        assert!(r.need(r.end_lsn(), "test").is_err());
    }

    #[test]
    fn torn_tail_is_cut_and_appending_continues() {
        let dir = tempfile::tempdir().unwrap();
        let lsns = write_some(dir.path());
        let s = segs(dir.path(), 7);
        let last = *s.list().unwrap().last().unwrap();
        let path = s.path(last);
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 5).unwrap();
        let r = LogReader::open(s.clone(), FIRST_LSN).unwrap();
        assert_eq!(r.end_lsn(), lsns[39]);
        let log = Log::open(s.clone(), LogMode::Sync, r.end_lsn()).unwrap();
        let l = log.append(&Rec::new(Kind::Commit), None);
        log.flush_once().unwrap();
        assert_eq!(l, lsns[39]);
        let got = all(dir.path()).unwrap();
        assert_eq!(got.len(), 40);
        assert_eq!(got[39].0, lsns[39]);
    }

    /// Damage before a later flush is refused (`write_some` flushes after records 0, 7,
    /// 14, 21, 28, 35 and 39, so 33 lies before the flush that starts at 36).
    #[test]
    fn damage_before_valid_records_is_refused_and_nothing_changes() {
        for victim in [1usize, 20, 33] {
            let dir = tempfile::tempdir().unwrap();
            let lsns = write_some(dir.path());
            let s = segs(dir.path(), 7);
            let lsn = lsns[victim] + REC_HEADER as u64 + 3;
            let path = s.path(s.seg_of(lsn));
            let mut raw = std::fs::read(&path).unwrap();
            raw[s.offset_of(lsn) as usize] ^= 0x10;
            std::fs::write(&path, &raw).unwrap();
            let before = snapshot(dir.path());
            match LogReader::open(s.clone(), FIRST_LSN) {
                Err(Error::Fatal(m)) => {
                    assert!(
                        m.contains("damaged") && m.contains(&lsns[victim].to_string()),
                        "{m}"
                    )
                }
                Ok(r) => panic!(
                    "damage at record {victim} read as a log ending at {}",
                    r.end_lsn()
                ),
                Err(e) => panic!("{e:?}"),
            }
            assert_eq!(before, snapshot(dir.path()), "a refused log was changed");
        }
    }

    /// A power loss keeps any subset of the last flush's sectors: a lost sector inside
    /// it, with valid records of the same flush after it, is a torn tail (records 36 to
    /// 39 are one flush), cut there; appending continues after it.
    #[test]
    fn torn_last_flush_with_valid_records_after_the_tear_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let lsns = write_some(dir.path());
        let s = segs(dir.path(), 7);
        let lsn = lsns[37];
        let path = s.path(s.seg_of(lsn));
        let mut raw = std::fs::read(&path).unwrap();
        let at = s.offset_of(lsn) as usize;
        raw[at..at + 16].fill(0);
        std::fs::write(&path, &raw).unwrap();
        let r = LogReader::open(s.clone(), FIRST_LSN).unwrap();
        assert_eq!(r.end_lsn(), lsns[37]);
        assert!(
            r.get(lsns[38]).unwrap().is_some(),
            "the test tore before a valid record"
        );
        assert_eq!(r.last_flush_lsn(), lsns[36]);
        drop(r);
        let log = Log::open(s.clone(), LogMode::Sync, lsns[37]).unwrap();
        assert_eq!(log.append(&Rec::new(Kind::Commit), None), lsns[37]);
        log.flush_once().unwrap();
        assert_eq!(all(dir.path()).unwrap().len(), 38);
    }

    #[test]
    fn damaged_last_record_is_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let lsns = write_some(dir.path());
        let s = segs(dir.path(), 7);
        let lsn = lsns[39] + REC_HEADER as u64 + 1;
        let path = s.path(s.seg_of(lsn));
        let mut raw = std::fs::read(&path).unwrap();
        raw[s.offset_of(lsn) as usize] ^= 0x10;
        std::fs::write(&path, &raw).unwrap();
        assert_eq!(LogReader::open(s, FIRST_LSN).unwrap().end_lsn(), lsns[39]);
    }

    #[test]
    fn foreign_missing_or_garbled_segments_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_some(dir.path());
        let s = segs(dir.path(), 7);
        // Another database's id.
        assert!(matches!(LogReader::open(segs(dir.path(), 8), FIRST_LSN),
            Err(Error::Fatal(m)) if m.contains("another database")));
        // A missing segment in the middle.
        let list = s.list().unwrap();
        let mid = s.path(list[2]);
        let saved = std::fs::read(&mid).unwrap();
        std::fs::remove_file(&mid).unwrap();
        assert!(matches!(LogReader::open(s.clone(), FIRST_LSN),
            Err(Error::Fatal(m)) if m.contains("missing")));
        // A garbled header.
        let mut bad = saved.clone();
        bad[3] ^= 1;
        std::fs::write(&mid, &bad).unwrap();
        assert!(matches!(LogReader::open(s.clone(), FIRST_LSN),
            Err(Error::Fatal(m)) if m.contains("bad header")));
        std::fs::write(&mid, &saved).unwrap();
        assert_eq!(all(dir.path()).unwrap().len(), 40);
        // A checkpoint LSN beyond what the log holds: the log was cut.
        let end = LogReader::open(s.clone(), FIRST_LSN).unwrap().end_lsn();
        assert!(LogReader::open(s.clone(), end).is_err());
    }

    #[test]
    fn segments_below_a_point_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let lsns = write_some(dir.path());
        let s = segs(dir.path(), 7);
        let n = s.list().unwrap().len();
        let removed = s.remove_below(lsns[30]).unwrap();
        assert!(removed > 0);
        assert_eq!(s.list().unwrap().len(), n - removed);
        assert_eq!(s.list().unwrap()[0], s.seg_of(lsns[30]));
        let r = LogReader::open(s, lsns[30]).unwrap();
        assert_eq!(r.need(lsns[31], "test").unwrap().rec().slot, 31);
    }
}
