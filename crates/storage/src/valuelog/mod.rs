//! `valuelog`: the block codec and the streaming reader of the value logs (`memory`,
//! `mvcc`), once. A block is a 32-byte header and a payload of records:
//!
//! header: `u32` magic (the engine's), `u32` payload bytes (at most `MAX_BLOCK_BYTES`),
//! `u64` durable counter `D` (an epoch or a commit timestamp: every record of a counter
//! `<= D` is in this block or an earlier one), `u32` record count, `u32` kind
//! (`BLOCK_DATA`, `BLOCK_RESTART`, `BLOCK_END`), `u32` zero, `u32` CRC-32 of header
//! bytes 0..28 followed by the payload.
//!
//! record (`RECORD_HEADER_BYTES` = 18, then key and body): `u64` stamp (a TID or a
//! commit timestamp), `u32` table, `u32` body bytes, `u8` kind, `u8` key bytes, key,
//! body. Kind 1 is a put (the whole row) and 2 a delete (no body) in both engines; an
//! engine may add kinds (the memory engine's update). What each engine accepts is its
//! `RecordFormat`; what a block's payload must satisfy is its `BlockFormat`, a function
//! of the payload, so a log whose blocks hold something else (the partitioned engine's
//! commands) can use the same reader.
//!
//! The partitioned engine's command log uses the same blocks (its own magic): the `u64`
//! field holds the sequence number of the block's first command and the count its
//! commands (`engine_partitioned::log`).
//!
//! The reader (`LogReader`) verifies each block before handing it out, and at the first
//! invalid one decides: a valid block anywhere after it means damage in the middle
//! (refused, naming the file and both offsets); none means a torn tail (a write a crash
//! cut short), which ends the valid log. The checkpoint files written in this block
//! format are `checkpoint`.
//!
//! Must never: hand out a block it did not verify whole, take damage followed by a
//! valid block for a torn tail, or change a byte of the formats (logs written before
//! this module existed are read by it). Refusals are one-line `String`s (this crate
//! does not know `api`).

pub mod checkpoint;
pub mod identity;
pub mod logger;

use crate::logfile::{crc, le32, le64, Header, HeaderFormat, HEADER_BYTES};
use crate::File;
use std::path::{Path, PathBuf};

pub const BLOCK_HEADER_BYTES: usize = 32;
/// Bytes of the block header the checksum covers (the checksum follows them).
const BLOCK_CHECKED: usize = 28;
const _: () = assert!(BLOCK_CHECKED + 4 == BLOCK_HEADER_BYTES);
/// Largest block payload the reader accepts (a sanity limit against corrupt lengths).
pub const MAX_BLOCK_BYTES: usize = 1 << 30;
/// Block kinds: records; the restart mark written when a recovered log is reopened for
/// appending (records above its durable counter written before it are void); a
/// checkpoint file's last block (`END_BYTES` of fields, no records).
pub const BLOCK_DATA: u32 = 0;
pub const BLOCK_RESTART: u32 = 1;
pub const BLOCK_END: u32 = 2;
/// Payload of an end block: `u64` log_from, tomb_from, durable counter, rows.
pub const END_BYTES: usize = 32;
pub const RECORD_HEADER_BYTES: usize = 18;
// A record's header is its stamp, table, body length, kind and key length; the end
// block's payload four `u64`s; a block's length field (`u32`) holds any block.
const _: () = assert!(RECORD_HEADER_BYTES == 8 + 4 + 4 + 1 + 1 && END_BYTES == 4 * 8);
const _: () = assert!(MAX_BLOCK_BYTES <= u32::MAX as usize);
/// Record kinds every value log has: the whole row; the key's deletion (no body).
pub const KIND_PUT: u8 = 1;
pub const KIND_DELETE: u8 = 2;

/// What one engine's records may hold.
#[derive(Debug)]
pub struct RecordFormat {
    /// Whether a record of `kind` may have a body of `body_len` bytes.
    pub kind_ok: fn(kind: u8, body_len: usize) -> bool,
    /// Why a record's stamp is not one this engine writes (`None`: it is).
    pub stamp_error: fn(stamp: u64) -> Option<String>,
    /// The durability counter a stamp belongs to (a TID's epoch; a timestamp itself).
    pub counter_of: fn(stamp: u64) -> u64,
    /// What the counter is called in messages ("epoch", "timestamp").
    pub counter: &'static str,
    /// Longest key.
    pub max_key: usize,
}

impl RecordFormat {
    /// Why `payload` is not `count` well-formed records.
    pub fn check(&self, payload: &[u8], count: u32) -> Result<(), String> {
        let mut p = payload;
        let mut n = 0u32;
        while !p.is_empty() {
            if p.len() < RECORD_HEADER_BYTES {
                return Err("a record is cut short".into());
            }
            let body_len = le32(&p[12..16]) as usize;
            let kind = p[16];
            let key_len = p[17] as usize;
            if key_len > self.max_key || p.len() < RECORD_HEADER_BYTES + key_len + body_len {
                return Err("a record overruns the block".into());
            }
            if !(self.kind_ok)(kind, body_len) {
                return Err(format!("bad record kind {kind}"));
            }
            if let Some(why) = (self.stamp_error)(le64(&p[0..8])) {
                return Err(why);
            }
            p = &p[RECORD_HEADER_BYTES + key_len + body_len..];
            n += 1;
        }
        if n != count {
            return Err(format!("{n} records, header says {count}"));
        }
        Ok(())
    }

    /// The number of records in a well-formed buffer (one the engine appended) and the
    /// highest counter among them.
    pub fn scan(&self, mut p: &[u8]) -> (u32, u64) {
        let (mut n, mut top) = (0, 0);
        while p.len() >= RECORD_HEADER_BYTES {
            top = top.max((self.counter_of)(le64(&p[0..8])));
            let body = le32(&p[12..16]) as usize;
            let key = p[17] as usize;
            p = &p[RECORD_HEADER_BYTES + key + body..];
            n += 1;
        }
        assert!(p.is_empty(), "log buffer holds a partial record");
        (n, top)
    }
}

/// Append a record to `buf` (the engines' commit path: one reservation and plain
/// stores, since a commit appends a record per write, TPC-C about 17 per transaction,
/// and the per-piece length checks of `extend_from_slice` counted, issue 15).
#[inline]
pub fn append_record(buf: &mut Vec<u8>, stamp: u64, table: u32, kind: u8, key: &[u8], body: &[u8]) {
    assert!(
        key.len() <= u8::MAX as usize,
        "a key above 255 bytes in the log"
    );
    let n = RECORD_HEADER_BYTES + key.len() + body.len();
    buf.reserve(n);
    // SAFETY: `reserve` made room for the `n` bytes written after `len`, every one of
    // them before `set_len`.
    unsafe {
        let len = buf.len();
        let p = buf.as_mut_ptr().add(len);
        (p as *mut u64).write_unaligned(stamp.to_le());
        (p.add(8) as *mut u32).write_unaligned(table.to_le());
        (p.add(12) as *mut u32).write_unaligned((body.len() as u32).to_le());
        *p.add(16) = kind;
        *p.add(17) = key.len() as u8;
        let p = p.add(RECORD_HEADER_BYTES);
        std::ptr::copy_nonoverlapping(key.as_ptr(), p, key.len());
        std::ptr::copy_nonoverlapping(body.as_ptr(), p.add(key.len()), body.len());
        buf.set_len(len + n);
    }
}

/// One record of a verified block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub stamp: u64,
    pub table: u32,
    pub kind: u8,
    pub key: &'a [u8],
    pub body: &'a [u8],
}

/// The records of a verified payload, in order.
pub struct Records<'a> {
    p: &'a [u8],
}

impl<'a> Records<'a> {
    /// The records of `payload`, which a reader verified (`RecordFormat::check`).
    pub fn new(payload: &'a [u8]) -> Self {
        Records { p: payload }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = RecordRef<'a>;
    fn next(&mut self) -> Option<RecordRef<'a>> {
        let p = self.p;
        if p.is_empty() {
            return None;
        }
        let body_len = le32(&p[12..16]) as usize;
        let key_len = p[17] as usize;
        let end = RECORD_HEADER_BYTES + key_len + body_len;
        self.p = &p[end..];
        Some(RecordRef {
            stamp: le64(&p[0..8]),
            table: le32(&p[8..12]),
            kind: p[16],
            key: &p[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key_len],
            body: &p[RECORD_HEADER_BYTES + key_len..end],
        })
    }
}

/// One engine's blocks: their magic and what their payload must be.
#[derive(Debug)]
pub struct BlockFormat {
    pub magic: u32,
    /// Why a payload of `count` records is not well formed (a value log's:
    /// `RecordFormat::check`).
    pub check_payload: fn(payload: &[u8], count: u32) -> Result<(), String>,
}

impl BlockFormat {
    /// Write the header of `block`, whose first `BLOCK_HEADER_BYTES` are reserved for
    /// it and the rest is the payload.
    pub fn seal(&self, block: &mut [u8], durable: u64, count: u32, kind: u32) {
        let payload = block.len() - BLOCK_HEADER_BYTES;
        assert!(payload <= MAX_BLOCK_BYTES, "a block of {payload} bytes");
        block[0..4].copy_from_slice(&self.magic.to_le_bytes());
        block[4..8].copy_from_slice(&(payload as u32).to_le_bytes());
        block[8..16].copy_from_slice(&durable.to_le_bytes());
        block[16..20].copy_from_slice(&count.to_le_bytes());
        block[20..24].copy_from_slice(&kind.to_le_bytes());
        block[24..28].copy_from_slice(&0u32.to_le_bytes());
        let c = crc(&[&block[0..BLOCK_CHECKED], &block[BLOCK_HEADER_BYTES..]]);
        block[BLOCK_CHECKED..BLOCK_HEADER_BYTES].copy_from_slice(&c.to_le_bytes());
    }

    /// Validate the block at `at` of `f` (`len` bytes long) into `buf`: Ok(its total
    /// length) or Err(why it is not a valid block of one of `kinds`). An end block
    /// (`BLOCK_END`) holds `END_BYTES` of fields and no record.
    pub fn probe(
        &self,
        f: &dyn File,
        len: u64,
        at: u64,
        buf: &mut Vec<u8>,
        kinds: &[u32],
    ) -> std::io::Result<Result<usize, String>> {
        let rest = len.saturating_sub(at);
        if rest < BLOCK_HEADER_BYTES as u64 {
            return Ok(Err("incomplete block header".into()));
        }
        let mut h = [0u8; BLOCK_HEADER_BYTES];
        let n = f.read_full_at(&mut h, at)?;
        if n < BLOCK_HEADER_BYTES {
            return Ok(Err("incomplete block header".into()));
        }
        if le32(&h[0..4]) != self.magic {
            return Ok(Err("no block magic".into()));
        }
        let plen = le32(&h[4..8]) as usize;
        if plen > MAX_BLOCK_BYTES {
            return Ok(Err(format!("block claims {plen} bytes")));
        }
        if rest < (BLOCK_HEADER_BYTES + plen) as u64 {
            return Ok(Err("block cut short".into()));
        }
        buf.clear();
        buf.resize(BLOCK_HEADER_BYTES + plen, 0);
        buf[..BLOCK_HEADER_BYTES].copy_from_slice(&h);
        let n = f.read_full_at(
            &mut buf[BLOCK_HEADER_BYTES..],
            at + BLOCK_HEADER_BYTES as u64,
        )?;
        if n < plen {
            return Ok(Err("block cut short".into()));
        }
        if crc(&[&buf[0..BLOCK_CHECKED], &buf[BLOCK_HEADER_BYTES..]]) != le32(&h[28..32]) {
            return Ok(Err("checksum mismatch".into()));
        }
        let kind = le32(&h[20..24]);
        if !kinds.contains(&kind) {
            return Ok(Err(format!("unknown block kind {kind}")));
        }
        if kind == BLOCK_END {
            if plen != END_BYTES || le32(&h[16..20]) != 0 {
                return Ok(Err("an end block of the wrong size".into()));
            }
        } else if let Err(why) = (self.check_payload)(&buf[BLOCK_HEADER_BYTES..], le32(&h[16..20]))
        {
            return Ok(Err(why));
        }
        Ok(Ok(BLOCK_HEADER_BYTES + plen))
    }

    /// The block `probe` verified into `buf` (at `offset`).
    pub fn block_in<'a>(&self, buf: &'a [u8], offset: u64) -> Block<'a> {
        Block {
            offset,
            durable: le64(&buf[8..16]),
            kind: le32(&buf[20..24]),
            payload: &buf[BLOCK_HEADER_BYTES..],
        }
    }
}

/// A verified block.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    /// Offset of its header in the file.
    pub offset: u64,
    pub durable: u64,
    pub kind: u32,
    pub payload: &'a [u8],
}

impl<'a> Block<'a> {
    pub fn records(&self) -> Records<'a> {
        Records::new(self.payload)
    }

    /// Offset of the byte after it.
    pub fn end(&self) -> u64 {
        self.offset + (BLOCK_HEADER_BYTES + self.payload.len()) as u64
    }
}

/// The refusal of a replayed log (at `path`) in which two rows of `table` share a key of
/// a unique secondary index: a damaged log, or another database's.
pub fn duplicate_unique_key(path: &Path, table: &str) -> String {
    format!(
        "log file {}: two rows of table {table} share a key of a unique secondary index (a damaged or foreign log): refused",
        path.display()
    )
}

/// Where the valid log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogEnd {
    /// Length of the valid prefix (header and whole valid blocks).
    pub valid: u64,
    /// Bytes after it: a torn tail (0: the file ends cleanly).
    pub torn_bytes: u64,
}

/// Read and verify the header of the file `f` of format `hf` (`path` names it).
pub fn read_header(f: &dyn File, path: &Path, hf: &HeaderFormat) -> Result<Header, String> {
    let mut b = [0u8; HEADER_BYTES];
    let n = f
        .read_full_at(&mut b, 0)
        .map_err(|e| format!("{} {}: {e}", hf.label, path.display()))?;
    hf.decode(&b[..n], path)
}

/// Reads a log's blocks in order, one at a time (memory: one block), verifying each.
/// At the first invalid block it decides: if a valid block follows anywhere after it,
/// the log is damaged in the middle (an error naming the file and offsets); otherwise
/// the rest of the file is a torn tail (a write cut short by a crash), reported by `end`.
pub struct LogReader<'f> {
    f: &'f dyn File,
    path: PathBuf,
    label: &'static str,
    blocks: &'static BlockFormat,
    len: u64,
    at: u64,
    buf: Vec<u8>,
    pub header: Header,
    end: Option<LogEnd>,
    /// Said in the damage refusal when the damaged span is whole pages of zeros
    /// (`zeroed_hint`); `None`: nothing said.
    zeroed: Option<&'static str>,
}

impl<'f> LogReader<'f> {
    /// A reader of the blocks of `f` (header `hf`, blocks `bf`) from `from` on (a block
    /// boundary: a checkpoint's `tomb_from`; bytes before it are never read, they may
    /// be a hole); the header is still read and verified.
    pub fn new_at(
        f: &'f dyn File,
        path: &Path,
        hf: &'static HeaderFormat,
        bf: &'static BlockFormat,
        from: u64,
    ) -> Result<Self, String> {
        let header = read_header(f, path, hf)?;
        let len = f
            .len()
            .map_err(|e| format!("{} {}: {e}", hf.label, path.display()))?;
        Ok(LogReader {
            f,
            path: path.to_path_buf(),
            label: hf.label,
            blocks: bf,
            len,
            at: from.max(HEADER_BYTES as u64),
            buf: Vec::new(),
            header,
            end: None,
            zeroed: None,
        })
    }

    /// Add `hint` to the refusal of damage before a valid block when the damaged span
    /// is at least a page of zeros (the partitioned engine: a log prefix a later
    /// checkpoint punched out, read from an older snapshot's position).
    pub fn zeroed_hint(mut self, hint: &'static str) -> Self {
        self.zeroed = Some(hint);
        self
    }

    /// Whether the bytes `from..to` are all zeros.
    fn all_zeros(&self, from: u64, to: u64) -> Result<bool, String> {
        const CHUNK: u64 = 1 << 20;
        let mut buf = Vec::new();
        let mut at = from;
        while at < to {
            let n = CHUNK.min(to - at) as usize;
            buf.resize(n, 0);
            let got = self.f.read_full_at(&mut buf, at).map_err(|e| self.io(e))?;
            if got < n || buf.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }

    fn io(&self, e: std::io::Error) -> String {
        format!("{} {}: {e}", self.label, self.path.display())
    }

    /// Validate the block at `at`: Ok(total length) or Err(why not).
    fn probe(&mut self, at: u64) -> Result<Result<usize, String>, String> {
        let r = self.blocks.probe(
            self.f,
            self.len,
            at,
            &mut self.buf,
            &[BLOCK_DATA, BLOCK_RESTART],
        );
        r.map_err(|e| self.io(e))
    }

    /// The offset of the first valid block starting at or after `from`, if any: streams
    /// the file looking for the block magic and verifies each candidate.
    fn find_valid_after(&mut self, from: u64) -> Result<Option<u64>, String> {
        const CHUNK: usize = 1 << 20;
        let magic = self.blocks.magic.to_le_bytes();
        let mut chunk = vec![0u8; CHUNK + 3];
        let mut pos = from;
        while pos + (BLOCK_HEADER_BYTES as u64) <= self.len {
            let n = self
                .f
                .read_full_at(&mut chunk, pos)
                .map_err(|e| self.io(e))?;
            if n < 4 {
                break;
            }
            for i in 0..=n - 4 {
                if chunk[i..i + 4] == magic && self.probe(pos + i as u64)?.is_ok() {
                    return Ok(Some(pos + i as u64));
                }
            }
            pos += (n - 3) as u64;
        }
        Ok(None)
    }

    /// The next valid block, or `None` at the end of the valid log (see `end`).
    pub fn next_block(&mut self) -> Result<Option<Block<'_>>, String> {
        if self.end.is_some() {
            return Ok(None);
        }
        let at = self.at;
        if at >= self.len {
            self.end = Some(LogEnd {
                valid: at,
                torn_bytes: 0,
            });
            return Ok(None);
        }
        match self.probe(at)? {
            Ok(total) => {
                self.at += total as u64;
                Ok(Some(self.blocks.block_in(&self.buf, at)))
            }
            Err(why) => {
                if let Some(next) = self.find_valid_after(at + 1)? {
                    let hint = match self.zeroed {
                        Some(h) if next - at >= 4096 && self.all_zeros(at, next)? => h,
                        _ => "",
                    };
                    return Err(format!(
                        "{} {} is damaged at byte {at} ({why}){hint} with a valid block after it at byte {next}: refused, the file is left as it is",
                        self.label,
                        self.path.display()
                    ));
                }
                self.end = Some(LogEnd {
                    valid: at,
                    torn_bytes: self.len - at,
                });
                Ok(None)
            }
        }
    }

    /// Where the valid log ends (after `next_block` returned `None`).
    pub fn end(&self) -> Option<LogEnd> {
        self.end
    }
}

/// Read the whole log at `path` on the OS's file system, passing each valid block to
/// `each` (tests and tools; recovery streams instead). A damaged file is an error.
pub fn read_file(
    path: &Path,
    hf: &'static HeaderFormat,
    bf: &'static BlockFormat,
    mut each: impl FnMut(&Block<'_>),
) -> Result<(Header, LogEnd), String> {
    let st = crate::RealStorage;
    let f = crate::Storage::open(&st, path, crate::Open::Read)
        .map_err(|e| format!("{} {}: {e}", hf.label, path.display()))?;
    let mut r = LogReader::new_at(&*f, path, hf, bf, 0)?;
    let header = r.header;
    while let Some(b) = r.next_block()? {
        each(&b);
    }
    Ok((header, r.end().expect("reader finished")))
}

/// Where a checkpoint taken now would start its log, published by a flusher after each
/// block: every record of a counter `<= durable` is before `log_from`, and every record
/// before `tomb_from` has a counter `<= durable`. So a record after `log_from` can have
/// a lower stamp than a record of the same key before it (two commits' appends reach
/// the buffers in either order) only if that record is in `tomb_from..log_from`:
/// recovery reads the deletes there (see `checkpoint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    pub log_from: u64,
    pub tomb_from: u64,
    pub durable: u64,
}

/// A flusher's bookkeeping for `Cut`: the block boundaries where the highest record
/// counter written so far changed (increasing in both).
#[derive(Debug)]
pub struct CutTracker {
    bounds: std::collections::VecDeque<(u64, u64)>,
    top: u64,
}

impl CutTracker {
    /// A log whose valid records up to `offset` all have counters `<= durable` (a new
    /// log, or a recovered one: later records are void behind its restart block).
    pub fn new(durable: u64, offset: u64) -> Self {
        CutTracker {
            bounds: [(durable, offset)].into(),
            top: durable,
        }
    }

    /// A block holding records of counters up to `top` ended at `offset` and stated
    /// `durable`: the cut a checkpoint may start from now.
    pub fn block_written(&mut self, top: u64, offset: u64, durable: u64) -> Cut {
        self.top = self.top.max(top);
        match self.bounds.back_mut() {
            Some(b) if b.0 == self.top => b.1 = offset,
            _ => self.bounds.push_back((self.top, offset)),
        }
        // The last boundary with nothing above `durable` before it; older ones are
        // never wanted again (`durable` only grows).
        while self.bounds.len() > 1 && self.bounds[1].0 <= durable {
            self.bounds.pop_front();
        }
        let (top, tomb_from) = self.bounds[0];
        assert!(top <= durable && tomb_from <= offset, "a cut out of order");
        Cut {
            log_from: offset,
            tomb_from,
            durable,
        }
    }

    /// The highest record counter written so far.
    pub fn top(&self) -> u64 {
        self.top
    }
}

#[cfg(test)]
mod tests;
