//! `log`: value logging with epoch-based group commit, and the log file's format and
//! reader. Committing workers append value records (TID, table, key, and the full row,
//! the changed bytes of an update, or a delete marker) to their own buffer; a logger thread drains all buffers, writes one
//! checksummed block to the log file, fsyncs it and publishes the durable epoch. `Sync`
//! commits wait until their epoch is durable. Every byte goes through `storage`.
//!
//! File format 3 (all integers little-endian; see docs/design/memory-engine.md):
//! file header (32 bytes) `b"OLTPMLOG"`, `u32` version, `u32` zero, `u64` database id,
//! `u32` schema fingerprint, `u32` CRC-32 of bytes 0..28; then blocks: `u32` magic
//! `BLOCK_MAGIC`, `u32` payload bytes, `u64` durable epoch, `u32` record count, `u32`
//! kind (0 data, 1 restart), `u32` zero, `u32` CRC-32 of header bytes 0..28 and the
//! payload; payload: records `u64` tid, `u32` table, `u32` body bytes, `u8` kind (1
//! put, 2 delete, 3 update), `u8` key bytes, key, body: a put's row; nothing for a
//! delete; an update's `u64` TID of the version it changes, then its changed bytes as
//! runs of `u16` offset, `u16` length and the bytes, in increasing offset order (format
//! 2 had no updates). The side file `memory.loaded` marks a finished load and is the
//! log's durable mark (`LoadMarker`, `storage::logfile::MarkFile`).
//!
//! Committing workers take no lock on the way to the log but their own buffer's, and
//! that only while appending one transaction's records; they announce a commit in
//! flight (`commit_start`) and the logger waits for those of older epochs.
//! A worker whose buffer reaches `BUFFER_LIMIT` waits, once its commit is over, until
//! the logger has drained it (`full`, `wait_drained`; the buffers are
//! `storage::logfile::WorkerBuffers`).
//!
//! This module must never hold a worker's buffer lock while writing to the file, and
//! never report an epoch durable before a block covering it is fsync'd: a block's
//! durable epoch `D` promises that every record of an epoch `<= D` is in it or before it.

use crate::epoch::Epochs;
use crate::record::Rec;
use api::{Error, Result};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use storage::logdir::{LogDir, LogDirFormat};
use storage::logfile::le64;
pub use storage::logfile::{Header as FileHeader, LoadMarker};
use storage::valuelog::{BlockFormat, RecordFormat};
use storage::File;

/// The files' names and headers (`HEADER`, `MARKER`) live in `storage` (the mvcc engine
/// refuses them by name without depending on this engine).
pub use storage::valuelog::identity::memory::{
    FILE_MAGIC, FORMAT_VERSION, LOG as HEADER, LOG_FILE, MARKER, MARKER_FILE, MARKER_MAGIC,
};
pub const BLOCK_MAGIC: u32 = 0x4B4C_424D; // "MBLK"
pub const FILE_HEADER_BYTES: usize = storage::logfile::HEADER_BYTES;
pub const MARKER_BYTES: usize = storage::logfile::MARKER_BYTES;
/// The block and record layout (`storage::valuelog`, shared with the mvcc engine):
/// blocks of kinds data, restart (records of epochs above its durable epoch written
/// before it are void) and a checkpoint's end; puts and deletes.
pub use storage::valuelog::{
    LogEnd, BLOCK_DATA, BLOCK_END, BLOCK_HEADER_BYTES, BLOCK_RESTART, END_BYTES, KIND_DELETE,
    KIND_PUT, MAX_BLOCK_BYTES, RECORD_HEADER_BYTES,
};
/// An update: the changed bytes of the row, on top of the version whose TID it names.
pub const KIND_UPDATE: u8 = 3;

/// This engine's records: a put's row, a delete's nothing, an update's `u64` TID of
/// the version it changes and its runs; a TID never has flag bits.
pub const RECORDS: RecordFormat = RecordFormat {
    kind_ok: |kind, body| {
        kind == KIND_PUT || (kind == KIND_DELETE && body == 0) || (kind == KIND_UPDATE && body >= 8)
    },
    stamp_error: |tid| {
        (tid & crate::record::FLAGS != 0).then(|| "a record's TID has flag bits set".to_string())
    },
    counter_of: crate::record::epoch_of,
    counter: "epoch",
    max_key: api::key::MAX_KEY_LEN,
};

/// This engine's blocks (magic `BLOCK_MAGIC`, payload `RECORDS`).
pub const BLOCKS: BlockFormat = BlockFormat {
    magic: BLOCK_MAGIC,
    check_payload: |p, n| RECORDS.check(p, n),
};
/// A worker whose buffer holds this much after a commit waits until the logger has
/// drained it (`Logger::wait_drained`; the limit is shared with the other in-memory
/// engines' loggers).
pub use storage::logfile::BUFFER_LIMIT;

/// The log directory's files: the log and its load marker (the durable mark).
pub const DIR: LogDirFormat = LogDirFormat {
    log: LOG_FILE,
    marker: MARKER_FILE,
    header: &HEADER,
    marker_format: &MARKER,
};

/// The log directory `dir`.
pub fn log_dir(dir: &Path) -> LogDir {
    LogDir::new(dir, &DIR)
}

/// Read and verify the header of the log `f` (`path` names it in errors).
pub fn read_header(f: &dyn File, path: &Path) -> Result<FileHeader> {
    storage::valuelog::read_header(f, path, &HEADER).map_err(Error::Fatal)
}

/// Encode a block (header and payload) into `block`, whose first `BLOCK_HEADER_BYTES`
/// are reserved for the header and the rest is the payload.
pub fn seal_block(block: &mut [u8], durable: u64, count: u32, kind: u32) {
    BLOCKS.seal(block, durable, count, kind)
}

/// A place in the log a checkpoint can start from (`storage::valuelog::Cut`).
pub use storage::valuelog::Cut;

/// The group-commit flusher (`storage::valuelog::logger`), counting epochs.
pub type Logger = storage::valuelog::logger::Logger<EpochClock>;
/// A commit in flight (`Logger::commit_start`); its counter is the epoch it read.
pub use storage::valuelog::logger::InFlight;

/// This log's clock: a block written now states durable the epoch before the current
/// one (a commit announced after the read takes the current epoch or a later one).
pub struct EpochClock(pub Arc<Epochs>);

impl storage::valuelog::logger::LogClock for EpochClock {
    const THREAD: &'static str = "mem-logger";
    const RECORDS: RecordFormat = RECORDS;
    const BLOCKS: BlockFormat = BLOCKS;

    fn durable_now(&self, stopping: bool) -> u64 {
        if stopping {
            // Everything committed so far becomes durable.
            self.0.close(self.0.current());
        }
        let e = self.0.current();
        // Epoch 0 is never current (`Epochs` starts at 1): epoch 0 holds no commit.
        assert!(e >= 1, "the current epoch is 0");
        e - 1
    }

    /// Every commit so far took the current epoch or an earlier one.
    fn now(&self) -> u64 {
        self.0.current()
    }

    /// Close epoch `e` so that the flusher's next round covers it.
    fn hurry(&self, e: u64) {
        self.0.close(e);
    }
}

/// Start the logger thread appending to `tail`.
pub fn start(
    tail: LogTail,
    workers: usize,
    epochs: Arc<Epochs>,
) -> Result<(Arc<Logger>, JoinHandle<()>)> {
    Logger::start(tail, workers, EpochClock(epochs)).map_err(Error::Fatal)
}

pub fn append_put(buf: &mut Vec<u8>, tid: u64, table: u32, key: &[u8], row: &[u8]) {
    append(buf, tid, table, KIND_PUT, key, row);
}
pub fn append_delete(buf: &mut Vec<u8>, tid: u64, table: u32, key: &[u8]) {
    append(buf, tid, table, KIND_DELETE, key, &[]);
}
fn append(buf: &mut Vec<u8>, tid: u64, table: u32, kind: u8, key: &[u8], row: &[u8]) {
    // What `RECORDS` accepts on reading is what is written: a TID without flag bits.
    debug_assert_eq!(tid & crate::record::FLAGS, 0, "a logged TID with flag bits");
    storage::valuelog::append_record(buf, tid, table, kind, key, row);
}

/// Install `row` into `rec` (locked by the caller, its version `prev`) and log it: as an
/// update record holding only the changed bytes when that is shorter than the row, else
/// as a put. TPC-C's updates change a few counters of rows of 100-700 bytes, so the log
/// (and its copies, its checksum and its disk bandwidth) shrinks about threefold.
///
/// `words`: the row's words the update holds (`row`'s bytes outside them are not its
/// own: an update of part of a row). Such an update is always logged as its changes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn append_update(
    buf: &mut Vec<u8>,
    tid: u64,
    table: u32,
    key: &[u8],
    prev: u64,
    rec: Rec,
    row: &[u8],
    words: [usize; 2],
) {
    let whole = words == [0, crate::record::row_words(row.len())];
    debug_assert!(words[0] < words[1], "an update of no words");
    debug_assert!(
        prev < tid && prev & crate::record::FLAGS == 0,
        "an update's base version"
    );
    if row.len() > u16::MAX as usize {
        assert!(whole, "an update of part of a row above 64 KiB");
        rec.store_row(row);
        return append_put(buf, tid, table, key, row);
    }
    let start = buf.len();
    append(buf, tid, table, KIND_UPDATE, key, &prev.to_le_bytes());
    let body = buf.len() - 8;
    rec.store_changes_in(row, words[0], words[1], buf);
    let len = buf.len() - body;
    if len >= row.len() && whole {
        buf.truncate(start);
        return append_put(buf, tid, table, key, row);
    }
    // The record's body length (bytes 12..16 of its header): the base TID and the runs.
    debug_assert!(len >= 8 && body == start + RECORD_HEADER_BYTES + key.len());
    buf[start + 12..start + 16].copy_from_slice(&(len as u32).to_le_bytes());
}

/// Apply an update's runs (`Body::Update`) to `row`; `Err` when a run is cut short or
/// out of the row, or the runs are not in increasing offset order (a damaged record).
pub fn apply_runs(row: &mut [u8], mut runs: &[u8]) -> std::result::Result<(), String> {
    let mut floor = 0usize;
    while !runs.is_empty() {
        if runs.len() < 4 {
            return Err("an update's run is cut short".into());
        }
        let off = u16::from_le_bytes([runs[0], runs[1]]) as usize;
        let len = u16::from_le_bytes([runs[2], runs[3]]) as usize;
        if len == 0 || off < floor || runs.len() < 4 + len || off + len > row.len() {
            return Err(format!(
                "an update's run of {len} bytes at offset {off} does not fit a row of {} bytes",
                row.len()
            ));
        }
        row[off..off + len].copy_from_slice(&runs[4..4 + len]);
        debug_assert!(off + len > floor, "runs in increasing order");
        floor = off + len;
        runs = &runs[4 + len..];
    }
    Ok(())
}

pub use storage::logdir::LogTail;

pub use storage::logfile::Restart;

/// One record of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub tid: u64,
    pub table: u32,
    pub key: &'a [u8],
    pub body: Body<'a>,
}

/// What a record does to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body<'a> {
    /// The whole row.
    Put(&'a [u8]),
    Delete,
    /// The changed bytes (`apply_runs`) of the version with TID `prev`.
    Update {
        prev: u64,
        runs: &'a [u8],
    },
}

impl Body<'_> {
    /// An owned copy (records kept past their block).
    pub fn to_owned(&self) -> OwnedBody {
        match *self {
            Body::Put(r) => OwnedBody::Put(r.to_vec()),
            Body::Delete => OwnedBody::Delete,
            Body::Update { prev, runs } => OwnedBody::Update {
                prev,
                runs: runs.to_vec(),
            },
        }
    }
}

/// [`Body`], owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnedBody {
    Put(Vec<u8>),
    Delete,
    Update { prev: u64, runs: Vec<u8> },
}

impl OwnedBody {
    /// The borrowed form.
    pub fn as_body(&self) -> Body<'_> {
        match self {
            OwnedBody::Put(r) => Body::Put(r),
            OwnedBody::Delete => Body::Delete,
            OwnedBody::Update { prev, runs } => Body::Update { prev: *prev, runs },
        }
    }
}

/// A verified block (`storage::valuelog`).
pub use storage::valuelog::Block;

/// The records of a verified block.
pub fn records<'a>(b: &Block<'a>) -> impl Iterator<Item = RecordRef<'a>> {
    b.records().map(|r| RecordRef {
        tid: r.stamp,
        table: r.table,
        key: r.key,
        body: match r.kind {
            KIND_PUT => Body::Put(r.body),
            KIND_DELETE => Body::Delete,
            // The block was verified: an update's body holds its version's TID.
            _ => Body::Update {
                prev: le64(&r.body[..8]),
                runs: &r.body[8..],
            },
        },
    })
}

/// One record read back from a log file (owned; for tests and tools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub tid: u64,
    pub table: u32,
    pub key: Vec<u8>,
    pub body: OwnedBody,
}

/// A log file's contents.
#[derive(Debug, Default)]
pub struct LogContents {
    pub header: Option<FileHeader>,
    /// Records of data blocks in file order (all of them: recovery applies only those of
    /// durable epochs, see `recovery`).
    pub records: Vec<LogRecord>,
    /// Highest durable epoch stated by a valid block.
    pub durable_epoch: u64,
    pub blocks: u64,
    /// The file ends in an invalid block with no valid block after it (a crash during a
    /// write), which is ignored.
    pub torn_tail: bool,
    /// Length of the valid prefix.
    pub valid_bytes: u64,
}

/// Read a whole log file back into memory (tests and tools; recovery streams instead).
/// A damaged file (bad header, or an invalid block followed by a valid one) is an
/// error; an invalid tail is reported as `torn_tail`.
pub fn read_log(path: &Path) -> Result<LogContents> {
    let mut out = LogContents::default();
    let (header, end) = storage::valuelog::read_file(path, &HEADER, &BLOCKS, |b| {
        out.durable_epoch = out.durable_epoch.max(b.durable);
        out.blocks += 1;
        for rec in records(b) {
            out.records.push(LogRecord {
                tid: rec.tid,
                table: rec.table,
                key: rec.key.to_vec(),
                body: rec.body.to_owned(),
            });
        }
    })
    .map_err(Error::Fatal)?;
    out.header = Some(header);
    out.torn_tail = end.torn_bytes > 0;
    out.valid_bytes = end.valid;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::Ordering::Acquire;
    use std::time::{Duration, Instant};

    /// The header and the marker are format 3's, byte for byte (checksums computed
    /// apart, with Python's zlib.crc32): logs of earlier builds of this format must
    /// still be read.
    #[test]
    fn header_and_marker_bytes_are_format_3() {
        let h = FileHeader {
            database_id: 0x0102_0304_0506_0708,
            schema: 0xA1B2_C3D4,
        };
        let want = b"OLTPMLOG\x03\0\0\0\0\0\0\0\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\xF2\xC3\x00\x9F";
        assert_eq!(&HEADER.encode(&h), want);
        assert_eq!(HEADER.decode(want, Path::new("m.log")), Ok(h));
        let m = LoadMarker {
            database_id: 0x1122_3344_5566_7788,
            log_bytes: 4096,
        };
        let want = b"OLTPMLDN\x03\0\0\0\0\0\0\0\x88\x77\x66\x55\x44\x33\x22\x11\0\x10\0\0\0\0\0\0\x2A\x33\xD7\xF6";
        assert_eq!(&MARKER.encode(&m), want);
        assert_eq!(MARKER.decode(want, Path::new("m.loaded")), Ok(m));
    }

    /// A new log in a fresh directory (named by `tag`), its logger started for two
    /// workers at epoch `epoch`: the directory, the log's path, the epochs, the logger.
    #[allow(clippy::type_complexity)]
    fn started(
        tag: &str,
        epoch: u64,
    ) -> (PathBuf, PathBuf, Arc<Epochs>, Arc<Logger>, JoinHandle<()>) {
        let st = storage::os();
        let dir =
            std::env::temp_dir().join(format!("oltpscope-logtest-{tag}-{}", std::process::id()));
        st.create_dir_all(&dir).unwrap();
        let path = dir.join(LOG_FILE);
        let file = storage::create_durable(&*st, &path).unwrap();
        let epochs = Epochs::starting_at(epoch);
        let tail = LogTail {
            file,
            path: path.clone(),
            database_id: 1,
            offset: 0,
            durable: 0,
            restart: None,
        };
        let (lg, h) = start(tail, 2, epochs.clone()).unwrap();
        (dir, path, epochs, lg, h)
    }

    /// A commit in flight with an epoch below the one the logger flushes holds the
    /// durable epoch back until its records are appended; then they are in the log.
    /// (Before commits announced themselves, the logger published epoch 6 durable here
    /// while the commit of epoch 5 had not appended its record.)
    #[test]
    fn logger_waits_for_a_commit_in_flight() {
        let (dir, path, epochs, lg, h) = started("inflight", 5);
        let flight = lg.commit_start(1);
        flight.set(epochs.current());
        epochs.close(5);
        epochs.close(6);
        lg.request_flush();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(
            lg.durable(),
            0,
            "an epoch was published durable while a commit of it had not appended"
        );
        append_put(
            &mut lg.buffer(1),
            (5 << 32) | 8,
            3,
            b"key-in-flight",
            b"row",
        );
        drop(flight);
        let t0 = Instant::now();
        while lg.durable() < 6 {
            assert!(t0.elapsed() < Duration::from_secs(10), "never durable");
            std::thread::sleep(Duration::from_millis(2));
        }
        lg.stop();
        h.join().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes
            .windows(b"key-in-flight".len())
            .any(|w| w == b"key-in-flight"));
        let d = le64(&bytes[8..16]);
        assert!(
            d >= 5,
            "the block holding the record states durable epoch {d}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A buffer at its limit makes its worker wait until the logger has taken it (and
    /// only then): commits cannot run ahead of the log without bound.
    #[test]
    fn a_full_buffer_waits_for_the_logger() {
        let (dir, _, epochs, lg, h) = started("full", 3);
        let row = vec![7u8; 4000];
        // (The logger may drain the buffer meanwhile: append until it is full.)
        let mut i = 0u64;
        let seen = loop {
            let mut b = lg.buffer(1);
            // A TID of epoch 3 without flag bits (a logged TID never has any).
            let tid = (3 << 32) + (i + 1) * crate::record::SEQ_ONE;
            append_put(&mut b, tid, 0, &i.to_le_bytes(), &row);
            i += 1;
            if let Some(seen) = lg.full(1, &b) {
                assert!(b.len() >= BUFFER_LIMIT);
                break seen;
            }
        };
        assert!(lg.full(0, &lg.buffer(0)).is_none(), "worker 0 is not full");
        lg.wait_drained(1, seen).unwrap();
        assert!(lg.drained_since(1, seen));
        assert!(
            lg.buffer(1).len() < BUFFER_LIMIT,
            "the logger took the full buffer"
        );
        epochs.close(3);
        lg.stop();
        h.join().unwrap();
        assert!(lg.io.bytes.load(Acquire) > BUFFER_LIMIT as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
