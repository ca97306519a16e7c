//! `log`: the log of committed versions, with group commit by a flusher thread, and the
//! log file's format and reader. A committing writer announces itself in its in-flight
//! slot before it takes its commit timestamp, stores the timestamp there, and after a
//! successful validation appends one record per version it wrote (commit timestamp,
//! table, key, row or tombstone) to its own buffer; the flusher (`mvcc-logger`) reads
//! the clock `C`, waits for every commit in flight with a timestamp `<= C` to finish
//! appending, drains all buffers into one checksummed block stating durable timestamp
//! `C`, writes and fsyncs it, and publishes `C`. Every byte goes through `storage`.
//! A worker whose buffer reaches `storage::logfile::BUFFER_LIMIT` waits after its commit
//! until the flusher has taken it (`full`, `wait_drained`).
//!
//! File format 1 (all integers little-endian; see docs/design/mvcc-engine.md): file
//! header (32 bytes) `b"OLTPVLOG"`, `u32` version, `b"mvcc"`, `u64` database id, `u32`
//! schema fingerprint, `u32` CRC-32 of bytes 0..28; then blocks: `u32` magic
//! `BLOCK_MAGIC`, `u32` payload bytes, `u64` durable timestamp, `u32` record count, `u32`
//! kind (0 data, 1 restart), `u32` zero, `u32` CRC-32 of header bytes 0..28 and the
//! payload; payload: records `u64` commit timestamp, `u32` table, `u32` row bytes, `u8`
//! kind (1 put, 2 tombstone), `u8` key bytes, key, row. The side file `mvcc.loaded`
//! marks a finished load (`LoadMarker`).
//!
//! Must never: hold a worker's buffer lock while writing the file, or publish a
//! timestamp durable before a block stating it (or a later one) is fsync'd: a block's
//! durable timestamp `D` promises that every record with a timestamp `<= D` is in it or
//! before it.

use api::{Error, Result};
use crossbeam_utils::CachePadded;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use storage::logdir::{LogDir, LogDirFormat};
pub use storage::logfile::{Header as FileHeader, LoadMarker};
use storage::logfile::{HeaderFormat, MarkerFormat};
use storage::valuelog::{BlockFormat, RecordFormat};
use storage::File;

pub const LOG_FILE: &str = "mvcc.log";
pub const MARKER_FILE: &str = "mvcc.loaded";
pub const FILE_MAGIC: &[u8; 8] = b"OLTPVLOG";
/// Bytes 12..16 of the file header: which engine wrote the log.
pub const ENGINE_TAG: &[u8; 4] = b"mvcc";
pub const MARKER_MAGIC: &[u8; 8] = b"OLTPVLDN";
pub const FORMAT_VERSION: u32 = 1;
pub const BLOCK_MAGIC: u32 = 0x4B4C_4256; // "VBLK"
pub const FILE_HEADER_BYTES: usize = storage::logfile::HEADER_BYTES;
pub const MARKER_BYTES: usize = storage::logfile::MARKER_BYTES;
/// The block and record layout (`storage::valuelog`, shared with the memory engine):
/// blocks of kinds data, restart (records above its durable timestamp written before
/// it are void) and a checkpoint's end; puts and tombstones.
pub use storage::valuelog::{
    LogEnd, BLOCK_DATA, BLOCK_END, BLOCK_HEADER_BYTES, BLOCK_RESTART, END_BYTES, KIND_PUT,
    MAX_BLOCK_BYTES, RECORD_HEADER_BYTES,
};
/// A tombstone (a delete): no body.
pub const KIND_TOMB: u8 = storage::valuelog::KIND_DELETE;

/// This engine's records: a put's row or a tombstone's nothing, stamped with a commit
/// timestamp in `1..MAX_TS`.
pub const RECORDS: RecordFormat = RecordFormat {
    kind_ok: |kind, body| kind == KIND_PUT || (kind == KIND_TOMB && body == 0),
    stamp_error: |ts| {
        (ts == 0 || ts >= crate::version::MAX_TS)
            .then(|| format!("a record's timestamp {ts} is out of range"))
    },
    counter_of: |ts| ts,
    counter: "timestamp",
    max_key: api::key::MAX_KEY_LEN,
};

/// This engine's blocks (magic `BLOCK_MAGIC`, payload `RECORDS`).
pub const BLOCKS: BlockFormat = BlockFormat {
    magic: BLOCK_MAGIC,
    check_payload: |p, n| RECORDS.check(p, n),
};

/// The log's file header; a memory-engine log in its place is refused by name.
pub const HEADER: HeaderFormat = HeaderFormat {
    magic: FILE_MAGIC,
    version: FORMAT_VERSION,
    tag: Some(*ENGINE_TAG),
    label: "log file",
    kind: "log",
    what: "an mvcc-engine log",
    version_hint: "",
    others: &[&storage::valuelog::identity::memory::LOG],
};

/// The load marker `MARKER_FILE`: magic `MARKER_MAGIC`, `u32` version, `u32` zero,
/// `u64` database id, `u64` length of the log when the load was durable, `u32` CRC-32
/// of bytes 0..32. Written with `storage::write_atomic` once the load is durable.
pub const MARKER: MarkerFormat = MarkerFormat {
    magic: MARKER_MAGIC,
    version: FORMAT_VERSION,
    what: "an mvcc-engine load marker",
};

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

/// Encode a block's header into the first `BLOCK_HEADER_BYTES` of `block` (the rest
/// is the payload).
pub fn seal_block(block: &mut [u8], durable: u64, count: u32, kind: u32) {
    BLOCKS.seal(block, durable, count, kind)
}

/// Append a record: `row` `None` is a tombstone (a delete).
#[inline]
pub fn append(buf: &mut Vec<u8>, ts: u64, table: u32, key: &[u8], row: Option<&[u8]>) {
    let (kind, row) = match row {
        Some(r) => (KIND_PUT, r),
        None => (KIND_TOMB, &[][..]),
    };
    // What `RECORDS` accepts on reading is what is written.
    debug_assert!(
        ts != 0 && ts < crate::version::MAX_TS,
        "a logged timestamp {ts} out of range"
    );
    storage::valuelog::append_record(buf, ts, table, kind, key, row);
}

pub use storage::logdir::LogTail;

pub use storage::logfile::Restart;

/// A place in the log a checkpoint can start from (`storage::valuelog::Cut`), with
/// timestamps for counters.
pub use storage::valuelog::Cut;

/// The group-commit flusher (`storage::valuelog::logger`), counting commit timestamps.
pub type Logger = storage::valuelog::logger::Logger<TsClock>;
/// A commit in flight (`Logger::commit_start`); its counter is its commit timestamp.
pub use storage::valuelog::logger::InFlight;

/// This log's clock, the engine's last commit timestamp handed out: a block written now
/// states it durable (a commit announced after the read takes a timestamp above it).
pub struct TsClock(pub Arc<CachePadded<AtomicU64>>);

impl storage::valuelog::logger::LogClock for TsClock {
    const THREAD: &'static str = "mvcc-logger";
    const RECORDS: RecordFormat = RECORDS;
    const BLOCKS: BlockFormat = BLOCKS;

    fn durable_now(&self, _stopping: bool) -> u64 {
        self.0.load(SeqCst)
    }

    /// A commit takes its timestamp from the clock before it stamps a version.
    fn now(&self) -> u64 {
        self.0.load(SeqCst)
    }
}

/// Start the flusher thread appending to `tail`; `clock` is the engine's last commit
/// timestamp handed out.
pub fn start(
    tail: LogTail,
    workers: usize,
    clock: Arc<CachePadded<AtomicU64>>,
) -> Result<(Arc<Logger>, JoinHandle<()>)> {
    Logger::start(tail, workers, TsClock(clock)).map_err(Error::Fatal)
}

/// One record of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub ts: u64,
    pub table: u32,
    pub key: &'a [u8],
    /// `None`: a tombstone.
    pub row: Option<&'a [u8]>,
}

/// A verified block (`storage::valuelog`).
pub use storage::valuelog::Block;

/// The records of a verified block.
pub fn records<'a>(b: &Block<'a>) -> impl Iterator<Item = RecordRef<'a>> {
    b.records().map(|r| RecordRef {
        ts: r.stamp,
        table: r.table,
        key: r.key,
        row: (r.kind == KIND_PUT).then_some(r.body),
    })
}

/// One record read back from a log file (owned; tests and tools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    pub ts: u64,
    pub table: u32,
    pub key: Vec<u8>,
    /// `None`: a tombstone.
    pub row: Option<Vec<u8>>,
}

/// A log file's contents (tests and tools; recovery streams instead).
#[derive(Debug, Default)]
pub struct LogContents {
    pub header: Option<FileHeader>,
    /// Records of data blocks in file order.
    pub records: Vec<LogRecord>,
    /// Highest durable timestamp stated by a valid block.
    pub durable: u64,
    pub blocks: u64,
    pub restarts: u64,
    pub torn_tail: bool,
    pub valid_bytes: u64,
}

/// Read a whole log file back. A damaged file is an error; an invalid tail is reported
/// as `torn_tail`.
pub fn read_log(path: &Path) -> Result<LogContents> {
    let mut out = LogContents::default();
    let (header, end) = storage::valuelog::read_file(path, &HEADER, &BLOCKS, |b| {
        out.durable = out.durable.max(b.durable);
        out.blocks += 1;
        out.restarts += (b.kind == BLOCK_RESTART) as u64;
        for rec in records(b) {
            out.records.push(LogRecord {
                ts: rec.ts,
                table: rec.table,
                key: rec.key.to_vec(),
                row: rec.row.map(<[u8]>::to_vec),
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
    use std::time::{Duration, Instant};

    /// The header and the marker are format 1's, byte for byte (checksums computed
    /// apart, with Python's zlib.crc32): logs of earlier builds must still be read.
    #[test]
    fn header_and_marker_bytes_are_format_1() {
        let h = FileHeader {
            database_id: 0x0102_0304_0506_0708,
            schema: 0xA1B2_C3D4,
        };
        let want = b"OLTPVLOG\x01\0\0\0mvcc\x08\x07\x06\x05\x04\x03\x02\x01\xD4\xC3\xB2\xA1\x37\x82\x9E\xF7";
        assert_eq!(&HEADER.encode(&h), want);
        assert_eq!(HEADER.decode(want, Path::new("v.log")), Ok(h));
        let m = LoadMarker {
            database_id: 0x1122_3344_5566_7788,
            log_bytes: 4096,
        };
        let want = b"OLTPVLDN\x01\0\0\0\0\0\0\0\x88\x77\x66\x55\x44\x33\x22\x11\0\x10\0\0\0\0\0\0\x3A\xC1\xC2\x3B";
        assert_eq!(&MARKER.encode(&m), want);
        assert_eq!(MARKER.decode(want, Path::new("v.loaded")), Ok(m));
    }

    /// A commit in flight with a timestamp at or below the clock value the flusher read
    /// holds the durable timestamp back until its records are appended; then they are
    /// in the log. (Without the in-flight wait the flusher would publish the clock
    /// value durable while the record was still outside the file.)
    #[test]
    fn the_flusher_waits_for_a_commit_in_flight() {
        let st = storage::os();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let file = storage::create_durable(&*st, &path).unwrap();
        let h = FileHeader {
            database_id: 1,
            schema: 2,
        };
        file.write_all_at(&HEADER.encode(&h), 0).unwrap();
        let clock = Arc::new(CachePadded::new(AtomicU64::new(4)));
        let tail = LogTail {
            file,
            path: path.clone(),
            database_id: 1,
            offset: FILE_HEADER_BYTES as u64,
            durable: 0,
            restart: None,
        };
        let (lg, h) = start(tail, 2, clock.clone()).unwrap();
        let flight = lg.commit_start(1);
        let ts = clock.fetch_add(1, SeqCst) + 1;
        flight.set(ts);
        lg.request_flush();
        std::thread::sleep(Duration::from_millis(80));
        assert!(
            lg.durable() < ts,
            "timestamp {} published durable while a commit of {ts} had not appended",
            lg.durable()
        );
        append(&mut lg.buffer(1), ts, 3, b"key-in-flight", Some(b"row"));
        drop(flight);
        let t0 = Instant::now();
        while lg.durable() < ts {
            assert!(t0.elapsed() < Duration::from_secs(10), "never durable");
            std::thread::sleep(Duration::from_millis(2));
        }
        lg.stop();
        h.join().unwrap();
        let c = read_log(&path).unwrap();
        assert_eq!(
            c.records,
            vec![LogRecord {
                ts,
                table: 3,
                key: b"key-in-flight".to_vec(),
                row: Some(b"row".to_vec())
            }]
        );
        assert!(c.durable >= ts);
    }
}
