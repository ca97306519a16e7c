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
use parking_lot::MutexGuard;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use storage::logfile::{io_failure, HeaderFormat, MarkerFormat, Watermark, WorkerBuffers};
pub use storage::logfile::{Header as FileHeader, LoadMarker};
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

/// How often the flusher drains buffers when no `Sync` commit asks sooner.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(10);

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

/// `Logger::inflight` of a worker that announced a commit but has no timestamp yet.
const COMMITTING: u64 = u64::MAX;

/// A commit in flight (see `Logger::commit_start`); dropping it ends it.
pub struct InFlight<'a>(&'a AtomicU64);

impl InFlight<'_> {
    /// The commit timestamp the commit took.
    #[inline]
    pub fn set_ts(&self, ts: u64) {
        // Set once, between `commit_start` and the drop; 0 and `COMMITTING` mean "none".
        debug_assert_eq!(
            self.0.load(Relaxed),
            COMMITTING,
            "the timestamp of a commit set twice"
        );
        assert!(
            ts != 0 && ts != COMMITTING,
            "commit timestamp {ts} out of range"
        );
        self.0.store(ts, SeqCst);
    }
}

impl Drop for InFlight<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the appends made under it are in the buffer before the flusher sees 0.
        self.0.store(0, Release);
    }
}

pub struct Logger {
    /// Per-worker buffers, bounded by `storage::logfile::BUFFER_LIMIT`.
    bufs: WorkerBuffers,
    /// Per worker: 0, [`COMMITTING`] (announced, no timestamp yet), or the commit
    /// timestamp of the commit it is validating and appending now.
    inflight: Box<[CachePadded<AtomicU64>]>,
    /// The durable timestamp.
    mark: Watermark,
    pub path: PathBuf,
    pub database_id: u64,
    /// What has been written: bytes, blocks, fsyncs.
    pub io: storage::logfile::BlockWriter,
    /// The log file (the checkpointer frees its prefix, `File::punch_hole`).
    pub file: Arc<dyn File>,
    /// Where a checkpoint taken now would start its log (`Cut`), after the last block.
    cut: parking_lot::Mutex<Option<Cut>>,
}

/// A place in the log a checkpoint can start from (`storage::valuelog::Cut`), with
/// timestamps for counters.
pub use storage::valuelog::Cut;

impl Logger {
    /// Start the flusher thread appending to `tail`; `clock` is the engine's last
    /// commit timestamp handed out.
    pub fn start(
        tail: LogTail,
        workers: usize,
        clock: Arc<CachePadded<AtomicU64>>,
    ) -> Result<(Arc<Logger>, JoinHandle<()>)> {
        let lg = Arc::new(Logger {
            bufs: WorkerBuffers::new(workers),
            inflight: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            mark: Watermark::new(tail.durable),
            path: tail.path.clone(),
            database_id: tail.database_id,
            io: storage::logfile::BlockWriter::new(tail.offset),
            file: tail.file.clone(),
            cut: parking_lot::Mutex::new(None),
        });
        let me = lg.clone();
        let h = std::thread::Builder::new()
            .name("mvcc-logger".into())
            .spawn(move || {
                probe::thread_role(probe::Role::LogFlusher);
                me.run(tail, clock)
            })
            .map_err(|e| Error::fatal(format!("spawn logger thread: {e}")))?;
        Ok((lg, h))
    }

    /// A worker's buffer, locked only while a commit appends its records (all of them
    /// at once, so a transaction's records never straddle two blocks).
    #[inline]
    pub fn buffer(&self, worker: usize) -> MutexGuard<'_, Vec<u8>> {
        self.bufs.lock(worker)
    }

    /// After a commit appended to `buf` (the locked buffer of `worker`): if the buffer
    /// is full, the drain count to wait past (`wait_drained`, once the commit is over).
    #[inline]
    pub fn full(&self, worker: usize, buf: &MutexGuard<'_, Vec<u8>>) -> Option<u64> {
        self.bufs.full(worker, buf)
    }

    /// Wait (through `rt`) until the flusher has taken `worker`'s buffer since its
    /// drain count was `seen`, asking for a flush now. The caller holds no lock and has
    /// no commit in flight (the flusher may be waiting for it).
    pub fn wait_drained(&self, worker: usize, seen: u64) -> Result<()> {
        self.bufs
            .wait_drained(worker, seen, &self.mark)
            .map_err(Error::Fatal)
    }

    /// Announce a commit of `worker` before it takes its timestamp. Until the returned
    /// guard is dropped (after the commit's last append, or a failed validation) the
    /// flusher does not state a durable timestamp at or above the commit's. SeqCst,
    /// paired with the flusher's fence between its clock read and its look at the
    /// slots: either the flusher sees the commit in flight, or the commit's timestamp
    /// is above the clock value the flusher read.
    #[inline]
    pub fn commit_start(&self, worker: usize) -> InFlight<'_> {
        let slot = &self.inflight[worker];
        // One commit in flight per worker: the last one's guard was dropped.
        debug_assert_eq!(
            slot.load(Relaxed),
            0,
            "worker {worker}: a commit already in flight"
        );
        slot.store(COMMITTING, SeqCst);
        InFlight(slot)
    }

    /// Every commit with a timestamp at or below this is in the file, fsync'd.
    pub fn durable_ts(&self) -> u64 {
        self.mark.durable()
    }

    /// Where a checkpoint taken now starts its log (None: no block written yet).
    pub fn cut(&self) -> Option<Cut> {
        *self.cut.lock()
    }

    /// Whether a write or sync failed (nothing more will become durable).
    #[inline]
    pub fn has_failed(&self) -> bool {
        self.mark.has_failed()
    }

    pub fn error(&self) -> Option<String> {
        self.mark.error()
    }

    /// Wait (through `rt`) until timestamp `ts` is durable, asking for a flush now.
    pub fn wait_durable(&self, ts: u64) -> Result<()> {
        self.mark.wait_durable(ts).map_err(Error::Fatal)
    }

    /// Ask the thread to flush everything and stop.
    pub fn stop(&self) {
        self.mark.stop();
    }

    fn fail(&self, msg: String) {
        self.mark.fail(msg);
    }

    /// A recovered log's first write: its unmarked tail made durable and a torn tail cut
    /// (`Restart::prepare`), then a restart block (records
    /// above `durable` written before it are void).
    fn restart(&self, file: &dyn File, offset: &mut u64, r: Restart, durable: u64) -> bool {
        assert!(
            *offset >= FILE_HEADER_BYTES as u64,
            "a restart block inside the file header"
        );
        if let Err(msg) = r.prepare(file, *offset, &self.path) {
            self.fail(msg);
            return false;
        }
        let mut b = [0u8; BLOCK_HEADER_BYTES];
        seal_block(&mut b, durable, 0, BLOCK_RESTART);
        if let Err(err) = file.write_all_at(&b, *offset) {
            self.fail(io_failure("writing the restart block", &self.path, &err));
            return false;
        }
        *offset += b.len() as u64;
        true
    }

    fn run(&self, tail: LogTail, clock: Arc<CachePadded<AtomicU64>>) {
        let LogTail {
            file,
            mut offset,
            durable: mut last_d,
            mut restart,
            ..
        } = tail;
        let mut spare: Vec<Vec<u8>> = (0..self.bufs.workers()).map(|_| Vec::new()).collect();
        let mut block: Vec<u8> = Vec::with_capacity(1 << 20);
        // Highest timestamp of any record written so far; while it is above the durable
        // timestamp of the last block written, a later block must state a higher one.
        let mut max_rec = last_d;
        // Where `Cut::tomb_from` is found. Before this run's first block every valid
        // record has a timestamp `<= last_d` (later ones are void: restart block).
        let mut cuts = storage::valuelog::CutTracker::new(last_d, offset);
        loop {
            let stopping = self.mark.next_round(FLUSH_INTERVAL);
            // A commit announced after the look at its slot below takes a timestamp
            // above `c`; one announced before is waited for until it has appended (or
            // failed validation) if its timestamp is `<= c` or not known yet. So after
            // the drain every record with a timestamp `<= c` is in this block or an
            // earlier one. (Between taking its timestamp and its last append a commit
            // waits only for committers with smaller timestamps.)
            let c = clock.load(SeqCst);
            // The clock starts at or above the recovered durable timestamp and only
            // grows: the durable timestamp stated by consecutive blocks never goes back.
            assert!(
                c >= last_d,
                "the clock {c} is below the durable timestamp {last_d}"
            );
            fence(SeqCst);
            for f in self.inflight.iter() {
                rt::wait_until(rt::WaitKind::Latch, None, || {
                    let p = f.load(SeqCst);
                    p == 0 || (p != COMMITTING && p > c)
                });
            }
            block.clear();
            block.resize(BLOCK_HEADER_BYTES, 0);
            self.bufs
                .drain(&mut spare, &self.mark, |b| block.extend_from_slice(b));
            let payload = block.len() - BLOCK_HEADER_BYTES;
            let (count, top) = RECORDS.scan(&block[BLOCK_HEADER_BYTES..]);
            debug_assert!(payload == 0 || count > 0, "a payload without records");
            max_rec = max_rec.max(top);
            // A block without records only states a durable timestamp that covers
            // records already written above the last stated one.
            let write = payload > 0 || (c > last_d && max_rec > last_d);
            if write {
                if let Some(r) = restart.take() {
                    if !self.restart(&*file, &mut offset, r, last_d) {
                        return;
                    }
                }
                seal_block(&mut block, c, count, BLOCK_DATA);
                if let Err(msg) = self
                    .io
                    .write_durably(&*file, &mut offset, &block, &self.path)
                {
                    self.fail(msg);
                    return;
                }
                last_d = c;
                *self.cut.lock() = Some(cuts.block_written(max_rec, offset, c));
            }
            self.mark.publish(c);
            if stopping {
                // A clean stop leaves the mark at the log's end: a cut of any length
                // after it is refused.
                if let Err(msg) = self.io.advance_mark(true) {
                    self.fail(msg);
                }
                return;
            }
        }
    }
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
    use std::time::Instant;

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
        let (lg, h) = Logger::start(tail, 2, clock.clone()).unwrap();
        let flight = lg.commit_start(1);
        let ts = clock.fetch_add(1, SeqCst) + 1;
        flight.set_ts(ts);
        lg.mark.request_flush();
        std::thread::sleep(Duration::from_millis(80));
        assert!(
            lg.durable_ts() < ts,
            "timestamp {} published durable while a commit of {ts} had not appended",
            lg.durable_ts()
        );
        append(&mut lg.buffer(1), ts, 3, b"key-in-flight", Some(b"row"));
        drop(flight);
        let t0 = Instant::now();
        while lg.durable_ts() < ts {
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
