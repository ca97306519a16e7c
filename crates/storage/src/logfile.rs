//! `logfile`: the plumbing the in-memory engines' log files share, once: little-endian
//! reads and the CRC-32 (`le32`, `le64`, `crc`), the checksummed 32-byte file header
//! (`HeaderFormat`), the load-marker file (`MarkerFormat`), the durable mark that says
//! how long the log is known to be (`MarkFile`, advanced by `BlockWriter`), the durability watermark a
//! flusher thread publishes and committers wait on (`Watermark`), the bounded
//! per-worker log buffers a flusher drains (`WorkerBuffers`, `BUFFER_LIMIT`), and the
//! one line a failed log write becomes (`io_failure`). Each engine names what differs (magic,
//! format version, engine tag, what the file is called in messages) in a `const`.
//!
//! It knows nothing about blocks or records (each engine's `log` module does), and it
//! must never change a byte of the formats it encodes: logs written before it existed
//! are read by it. It does not depend on `api` (which depends on this crate): refusals
//! are one-line `String`s the engines turn into `api::Error::Fatal`.
//!
//! File header (32 bytes, little-endian): magic (8 bytes), `u32` format version, 4
//! bytes of engine tag (or a word of the file's own, such as the snapshot's table
//! count), `u64` database id, `u32` schema fingerprint, `u32` CRC-32 of bytes 0..28.
//! Load marker (36 bytes): magic (8 bytes), `u32` format version, `u32` zero, `u64`
//! database id, `u64` length of the log known durable (the load's end, then advanced
//! as the durable mark), `u32` CRC-32 of bytes 0..32.

use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `u32` at the start of `b` (little-endian).
#[inline]
pub fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

/// The `u64` at the start of `b` (little-endian).
#[inline]
pub fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// CRC-32 (IEEE, `crc32fast`) of `parts` one after the other.
#[inline]
pub fn crc(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

/// One table as [`schema_fingerprint`] sees it (this crate does not know `api`'s
/// `Schema`; the engines map theirs): its name, row size, primary index kind (as the
/// engine numbers it) and secondary indexes (name, unique).
#[derive(Debug, Clone)]
pub struct TableShape<'a, S> {
    pub name: &'a str,
    pub row_size: usize,
    pub primary: u8,
    pub secondary: S,
}

/// The schema fingerprint in every file header of the in-memory engines (a CRC-32 of
/// the tables' names, row sizes, index kinds and secondary indexes), so that a file is
/// never read into another workload's tables. The value must never change: logs,
/// checkpoints and snapshots written by earlier builds carry it (tested against fixed
/// values).
pub fn schema_fingerprint<'a, S>(tables: impl IntoIterator<Item = TableShape<'a, S>>) -> u32
where
    S: IntoIterator<Item = (&'a str, bool)>,
{
    let mut h = crc32fast::Hasher::new();
    for t in tables {
        h.update(t.name.as_bytes());
        h.update(&(t.row_size as u64).to_le_bytes());
        h.update(&[t.primary]);
        for (name, unique) in t.secondary {
            h.update(name.as_bytes());
            h.update(&[unique as u8]);
        }
        h.update(b";");
    }
    h.finalize()
}

/// Size of a file header.
pub const HEADER_BYTES: usize = 32;
/// Bytes of the header the checksum covers (the checksum follows them).
const HEADER_CHECKED: usize = 28;
/// Size of a load marker.
pub const MARKER_BYTES: usize = 36;
/// Bytes of the marker the checksum covers.
const MARKER_CHECKED: usize = 32;

// The checksum is the last field of each.
const _: () = assert!(HEADER_CHECKED + 4 == HEADER_BYTES);
const _: () = assert!(MARKER_CHECKED + 4 == MARKER_BYTES);

/// Who a file belongs to: the fields of its header that are not the format's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Random, chosen when the database (its log) is created.
    pub database_id: u64,
    /// The schema fingerprint: a file is never read into another workload's tables.
    pub schema: u32,
}

/// What one kind of file puts in its header, and how its refusals name it.
#[derive(Debug)]
pub struct HeaderFormat {
    /// Bytes 0..8.
    pub magic: &'static [u8; 8],
    /// Bytes 8..12; a file of another version is refused.
    pub version: u32,
    /// Bytes 12..16: the engine that writes this kind of file, checked by `decode`; or
    /// `None`: not checked here, zero from `encode` (a format that names no engine) or
    /// a word of the caller's own from `encode_with_word` (read back with
    /// [`HeaderFormat::word`], checked by the caller).
    pub tag: Option<[u8; 4]>,
    /// What the file is called before its path in messages: `"log file"`.
    pub label: &'static str,
    /// What `version` is the version of, in messages: `"log"` (`"log format 3"`).
    pub kind: &'static str,
    /// What a file of this kind is, in messages, with its article: `"a memory-engine
    /// log"`.
    pub what: &'static str,
    /// Appended to the refusal of another version (`""`, or a way out in parentheses).
    pub version_hint: &'static str,
    /// Formats of neighbouring files that are refused by their own name (a file of
    /// another engine put where this one's belongs).
    pub others: &'static [&'static HeaderFormat],
}

impl HeaderFormat {
    /// The header of a file of this format for `h`; bytes 12..16 are the tag (zero
    /// without one).
    pub fn encode(&self, h: &Header) -> [u8; HEADER_BYTES] {
        self.encode_with_word(h, self.tag.unwrap_or([0; 4]))
    }

    /// The header with `word` as bytes 12..16 (a format whose tag is `None`).
    pub fn encode_with_word(&self, h: &Header, word: [u8; 4]) -> [u8; HEADER_BYTES] {
        assert!(
            self.tag.is_none_or(|t| t == word),
            "{}: a word in place of its engine tag",
            self.what
        );
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(self.magic);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&word);
        b[16..24].copy_from_slice(&h.database_id.to_le_bytes());
        b[24..28].copy_from_slice(&h.schema.to_le_bytes());
        let c = crc(&[&b[..HEADER_CHECKED]]);
        b[HEADER_CHECKED..].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Whether `head` (a file's first bytes) starts like a file of this format, of any
    /// version (checked before removing a file on `--reload`).
    pub fn looks_like(&self, head: &[u8]) -> bool {
        head.len() >= 8
            && &head[0..8] == self.magic
            && self
                .tag
                .is_none_or(|t| head.len() >= 16 && head[12..16] == t)
    }

    /// Verify the header at the start of `b` (the file's first bytes, at most
    /// [`HEADER_BYTES`] needed; `path` names the file). Refused, in one line naming the
    /// file: another kind of file, a header cut short, another format version (checked
    /// before the checksum: another version may lay its header out otherwise), a
    /// checksum mismatch, another engine's tag.
    pub fn decode(&self, b: &[u8], path: &Path) -> Result<Header, String> {
        let refuse = |why: String| {
            format!(
                "{} {}: {why}: refused, the file is left as it is",
                self.label,
                path.display()
            )
        };
        let n = b.len();
        if n < 8 || &b[0..8] != self.magic {
            if let Some(o) = self.others.iter().find(|o| o.looks_like(b)) {
                return Err(refuse(format!("{}, not {}", o.what, self.what)));
            }
            let magic = String::from_utf8_lossy(self.magic);
            return Err(refuse(format!("not {} (no {magic} header)", self.what)));
        }
        let cut = || refuse(format!("header cut short ({n} bytes), damaged"));
        if n < 12 {
            return Err(cut());
        }
        let version = le32(&b[8..12]);
        if version != self.version {
            return Err(refuse(format!(
                "{} format {version}, this oltpscope reads format {}{}",
                self.kind, self.version, self.version_hint
            )));
        }
        if n < HEADER_BYTES {
            return Err(cut());
        }
        if crc(&[&b[..HEADER_CHECKED]]) != le32(&b[HEADER_CHECKED..]) {
            return Err(refuse("header checksum mismatch, damaged".into()));
        }
        if let Some(t) = self.tag {
            if b[12..16] != t {
                return Err(refuse(format!(
                    "written by another engine (tag {:?})",
                    String::from_utf8_lossy(&b[12..16])
                )));
            }
        }
        Ok(Header {
            database_id: le64(&b[16..24]),
            schema: le32(&b[24..28]),
        })
    }

    /// Bytes 12..16 of a header [`HeaderFormat::decode`] accepted, as a `u32`.
    pub fn word(b: &[u8]) -> u32 {
        le32(&b[12..16])
    }
}

/// The content of a load marker: the side file that says a load finished and was
/// durable (a log without it is a load that did not finish).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadMarker {
    /// The log's database id.
    pub database_id: u64,
    /// The valid log is at least this long: the end of the load when it is written,
    /// then advanced by the flusher as the log's durable mark ([`MarkFile`]).
    pub log_bytes: u64,
}

/// What one engine's load marker holds besides its content.
#[derive(Debug)]
pub struct MarkerFormat {
    /// Bytes 0..8.
    pub magic: &'static [u8; 8],
    /// Bytes 8..12 (the engine's log format version).
    pub version: u32,
    /// What the file is, in messages, with its article: `"a memory-engine load
    /// marker"`.
    pub what: &'static str,
}

impl MarkerFormat {
    /// The marker file's bytes for `m`.
    pub fn encode(&self, m: &LoadMarker) -> [u8; MARKER_BYTES] {
        let mut b = [0u8; MARKER_BYTES];
        b[0..8].copy_from_slice(self.magic);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[16..24].copy_from_slice(&m.database_id.to_le_bytes());
        b[24..32].copy_from_slice(&m.log_bytes.to_le_bytes());
        let c = crc(&[&b[..MARKER_CHECKED]]);
        b[MARKER_CHECKED..].copy_from_slice(&c.to_le_bytes());
        b
    }

    /// Whether `head` (a file's first bytes) starts like this engine's marker (checked
    /// before removing a file on `--reload`).
    pub fn looks_like(&self, head: &[u8]) -> bool {
        head.len() >= 8 && &head[0..8] == self.magic
    }

    /// Verify a whole marker file `b` (`path` names it). Refused in one line: another
    /// kind of file, or a damaged marker (size, version or checksum).
    pub fn decode(&self, b: &[u8], path: &Path) -> Result<LoadMarker, String> {
        let refuse = |why: String| format!("{}: {why}: refused", path.display());
        if !self.looks_like(b) {
            return Err(refuse(format!("not {}", self.what)));
        }
        if b.len() != MARKER_BYTES
            || le32(&b[8..12]) != self.version
            || crc(&[&b[..MARKER_CHECKED]]) != le32(&b[MARKER_CHECKED..])
        {
            return Err(refuse(
                "damaged load marker (size, version or checksum)".into(),
            ));
        }
        Ok(LoadMarker {
            database_id: le64(&b[16..24]),
            log_bytes: le64(&b[24..32]),
        })
    }
}

/// How often a flusher advances its log's durable mark (at most: a mark is written
/// after a block only once this much time has passed since the last one). A log cut
/// after its last mark cannot be told from a crash; this bounds that window.
pub const MARK_INTERVAL: Duration = Duration::from_secs(1);

/// A log's durable mark: a small file (a [`MarkerFormat`] file; for the memory and
/// mvcc engines the load marker itself) that records a length of the log known to be
/// fsync'd. Recovery refuses a log whose valid part ends before it: a log cut or
/// damaged behind the mark lost acknowledged commits, which a crash never does.
/// Rewritten whole with [`crate::write_atomic`], so it is the old mark or the new one.
#[derive(Debug, Clone)]
pub struct MarkFile {
    pub st: Arc<dyn crate::Storage>,
    pub dir: PathBuf,
    /// The file's name in `dir`.
    pub name: &'static str,
    pub format: &'static MarkerFormat,
    /// The log's database id, recorded in the mark.
    pub database_id: u64,
    /// [`MARK_INTERVAL`] (tests: shorter).
    pub interval: Duration,
}

impl MarkFile {
    /// Record that the log is durable up to `log_bytes`. The error is the user's line.
    pub fn write(&self, log_bytes: u64) -> Result<(), String> {
        let m = LoadMarker {
            database_id: self.database_id,
            log_bytes,
        };
        crate::write_atomic(&*self.st, &self.dir, self.name, &self.format.encode(&m)).map_err(
            |e| {
                let path = self.dir.join(self.name);
                if crate::is_no_space(&e) {
                    format!(
                        "no space left on the device holding {}: the log's durable mark cannot advance; commits acknowledged before this are durable (free space, then continue with --no-load)",
                        path.display()
                    )
                } else {
                    format!("{}: writing the log's durable mark failed: {e}", path.display())
                }
            },
        )
    }
}

/// An armed mark: where, what it says now, and when it was written.
#[derive(Debug)]
struct Marking {
    file: MarkFile,
    written: u64,
    at: Instant,
}

/// What a logger has written to its log file (statistics), and the one way it writes a
/// block: at the end, then fsync, then counted, then (once armed, at most every
/// [`MARK_INTERVAL`]) the durable mark advanced to the new length.
#[derive(Debug)]
pub struct BlockWriter {
    /// File length after the last block written (durable: counted after the fsync).
    pub bytes: AtomicU64,
    pub blocks: AtomicU64,
    pub fsyncs: AtomicU64,
    /// Durable marks written.
    pub marks: AtomicU64,
    mark: Mutex<Option<Marking>>,
}

impl BlockWriter {
    /// A log whose blocks end at `offset`.
    pub fn new(offset: u64) -> Self {
        BlockWriter {
            bytes: AtomicU64::new(offset),
            blocks: AtomicU64::new(0),
            fsyncs: AtomicU64::new(0),
            marks: AtomicU64::new(0),
            mark: Mutex::new(None),
        }
    }

    /// From now on the durable mark in `file` follows the log. `now`: write it at once
    /// at the log's durable length (the end of a load; the caller made the load
    /// durable first); otherwise it already holds a length (a recovered log) and is
    /// advanced after the next block once the interval has passed. Only one mark may
    /// be armed, once.
    pub fn arm_mark(&self, file: MarkFile, now: bool) -> Result<(), String> {
        let mut g = self.mark.lock();
        assert!(g.is_none(), "a log's durable mark armed twice");
        let mut m = Marking {
            file,
            written: 0,
            at: Instant::now(),
        };
        if now {
            let b = self.bytes.load(Acquire);
            m.file.write(b)?;
            m.written = b;
            self.marks.fetch_add(1, Relaxed);
        }
        *g = Some(m);
        Ok(())
    }

    /// Advance the mark to the durable length if it is armed and behind, and the
    /// interval has passed (`force`: whatever the interval, as at a clean stop).
    pub fn advance_mark(&self, force: bool) -> Result<(), String> {
        let mut g = self.mark.lock();
        let Some(m) = g.as_mut() else {
            return Ok(());
        };
        let b = self.bytes.load(Acquire);
        if b > m.written && (force || m.at.elapsed() >= m.file.interval) {
            m.file.write(b)?;
            m.written = b;
            m.at = Instant::now();
            self.marks.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    /// Write `block` at `*offset` of `file` (the log at `path`) and make it durable;
    /// `*offset` then moves past it. The error is the one line for the user.
    pub fn write_durably(
        &self,
        file: &dyn crate::File,
        offset: &mut u64,
        block: &[u8],
        path: &Path,
    ) -> Result<(), String> {
        file.write_all_at(block, *offset)
            .map_err(|e| io_failure("writing a block", path, &e))?;
        file.sync_data()
            .map_err(|e| io_failure("fsync", path, &e))?;
        file.drop_cached(*offset, block.len() as u64);
        *offset += block.len() as u64;
        self.bytes.store(*offset, Release);
        self.blocks.fetch_add(1, Relaxed);
        self.fsyncs.fetch_add(1, Relaxed);
        self.advance_mark(false)
    }
}

/// What a flusher does to a recovered log before its first block (then it writes its
/// engine's restart block at the valid end, and the block after it fsyncs them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    /// A torn tail follows the valid part: cut it.
    pub torn: bool,
    /// The durable mark: bytes before it were fsync'd by a flusher that saw it succeed.
    pub marked: u64,
}

impl Restart {
    /// Make the valid part (ending at `valid`) of the recovered log `file` (at `path`)
    /// safe to build on: its bytes after the durable mark are written again with what
    /// they hold, then a torn tail is cut. Why the rewrite: those bytes were read from
    /// the page cache, and may never have reached the disk (the process died before its
    /// fsync, or the fsync failed, after which Linux marks the pages clean and a later
    /// fsync does not write them). Recovery applied them and new commits build on them,
    /// so they must become durable with the first new block, not vanish in a later power
    /// loss leaving a hole before durable blocks. The error is the user's one line.
    pub fn prepare(&self, file: &dyn crate::File, valid: u64, path: &Path) -> Result<(), String> {
        const CHUNK: u64 = 1 << 20;
        let mut buf = Vec::new();
        let mut at = self.marked.min(valid);
        while at < valid {
            let n = CHUNK.min(valid - at) as usize;
            buf.resize(n, 0);
            let got = file
                .read_full_at(&mut buf, at)
                .map_err(|e| io_failure("reading the recovered tail", path, &e))?;
            if got < n {
                return Err(format!(
                    "log {}: the recovered log is shorter than when it was read ({} bytes at {at}): refused",
                    path.display(),
                    got
                ));
            }
            file.write_all_at(&buf, at)
                .map_err(|e| io_failure("rewriting the recovered tail", path, &e))?;
            at += n as u64;
        }
        if self.torn {
            file.set_len(valid)
                .map_err(|e| io_failure("cutting the torn tail", path, &e))?;
        }
        Ok(())
    }
}

/// The one line a user sees for a failed log write or sync of the log at `path`.
pub fn io_failure(what: &str, path: &Path, e: &std::io::Error) -> String {
    if crate::is_no_space(e) {
        format!(
            "no space left on the device holding the log {}: {what} failed; commits acknowledged before this are durable (free space, then continue with --no-load)",
            path.display()
        )
    } else {
        format!("log {}: {what} failed: {e}", path.display())
    }
}

/// How far a log is durable, shared by its flusher thread and the committers that wait
/// for it: a counter that only grows (an epoch, a commit timestamp, a number of
/// commands: the engine says which, and every value at or below it is durable), a
/// failure that stops it for good, and the wake-ups both ways (a committer asking for
/// a flush now, the flusher announcing progress or failure). Besides durability, the
/// flusher announces that it has taken what was buffered (`notify_taken`), for
/// committers held back by a full buffer (`wait_taken`). Waits go through `rt`.
///
/// Must never: report a value durable that the flusher did not publish, or let a
/// waiter sleep through a failure.
pub struct Watermark {
    durable: CachePadded<AtomicU64>,
    /// Notified when `durable` grows or the log fails.
    durable_ev: rt::Event,
    /// Notified when the flusher has taken buffered records, or the log fails.
    taken_ev: rt::Event,
    /// Notified when a committer asks for a flush, or at `stop`.
    wake: rt::Event,
    request: AtomicBool,
    stop: AtomicBool,
    failed: Mutex<Option<String>>,
    has_failed: AtomicBool,
}

impl Watermark {
    /// A watermark at `durable` (what the log already holds; 0 for a new log).
    pub fn new(durable: u64) -> Self {
        Watermark {
            durable: CachePadded::new(AtomicU64::new(durable)),
            durable_ev: rt::Event::new(),
            taken_ev: rt::Event::new(),
            wake: rt::Event::new(),
            request: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            failed: Mutex::new(None),
            has_failed: AtomicBool::new(false),
        }
    }

    /// Every value at or below this is durable.
    #[inline]
    pub fn durable(&self) -> u64 {
        self.durable.load(Acquire)
    }

    /// Whether a write or sync failed (nothing more will become durable).
    #[inline]
    pub fn has_failed(&self) -> bool {
        self.has_failed.load(Acquire)
    }

    /// The failure's one line, if the log failed.
    pub fn error(&self) -> Option<String> {
        if !self.has_failed() {
            return None;
        }
        self.failed.lock().clone()
    }

    /// Ask the flusher to flush now rather than at its next interval.
    pub fn request_flush(&self) {
        self.request.store(true, Release);
        self.wake.notify_all();
    }

    /// Wait (through `rt`) until `n` is durable, asking for a flush now; the failure's
    /// line if the log failed before `n` became durable.
    pub fn wait_durable(&self, n: u64) -> Result<(), String> {
        if self.durable() >= n {
            return Ok(());
        }
        self.request_flush();
        self.durable_ev.wait(rt::WaitKind::LogFlush, None, || {
            self.durable() >= n || self.has_failed()
        });
        match self.error() {
            Some(msg) if self.durable() < n => Err(msg),
            _ => Ok(()),
        }
    }

    /// Wait (through `rt`) until `taken()` holds, asking for a flush now; the failure's
    /// line if the log failed before it held. `taken` must become true only by the
    /// flusher's work, announced with [`Watermark::notify_taken`].
    ///
    /// Must never be called by a committer with a commit in flight, or holding a lock
    /// the flusher takes: the flusher may be waiting for it (a deadlock).
    pub fn wait_taken(&self, taken: impl Fn() -> bool) -> Result<(), String> {
        if taken() {
            return Ok(());
        }
        self.request_flush();
        self.taken_ev.wait(rt::WaitKind::LogFlush, None, || {
            taken() || self.has_failed()
        });
        match self.error() {
            Some(msg) if !taken() => Err(msg),
            _ => Ok(()),
        }
    }

    /// The flusher: it has taken buffered records (made the state `wait_taken`'s
    /// callers look at true for them); wakes those waiters.
    pub fn notify_taken(&self) {
        self.taken_ev.notify_all();
    }

    /// Ask the flusher to flush everything and stop.
    pub fn stop(&self) {
        self.stop.store(true, Release);
        self.wake.notify_all();
    }

    /// The flusher: sleep until a flush is asked for, `stop` is called or `interval`
    /// passes; returns whether to stop after this flush.
    pub fn next_round(&self, interval: Duration) -> bool {
        self.wake.wait(rt::WaitKind::Other, Some(interval), || {
            self.request.load(Acquire) || self.stop.load(Acquire)
        });
        self.request.store(false, Release);
        self.stop.load(Acquire)
    }

    /// The flusher: everything up to `d` is in the file and fsync'd. Publishes it (if
    /// above what was published) and wakes the waiters.
    pub fn publish(&self, d: u64) {
        if d > self.durable.load(Relaxed) {
            self.durable.store(d, Release);
            self.durable_ev.notify_all();
        }
    }

    /// The flusher: a write or sync failed with `msg`; nothing more becomes durable and
    /// every waiter (now and later) gets `msg`.
    pub fn fail(&self, msg: String) {
        *self.failed.lock() = Some(msg);
        self.has_failed.store(true, Release);
        self.durable_ev.notify_all();
        self.taken_ev.notify_all();
    }
}

/// A committer whose log buffer holds this much after a commit waits until the flusher
/// has taken it: the log's lag behind the commits, and the memory the buffers take,
/// stay bounded when commits outrun the disk. (Before the limit, `--log async` rounds
/// reached 1 GB and the log ran seconds behind.) 16 MiB: at 4 MiB, TPC-C's committers
/// waited 5.5% of their time at W=2/2T, at 16 MiB 1.5-2% (issue 15, ninth session).
pub const BUFFER_LIMIT: usize = 16 << 20;

/// The per-worker log buffers of an in-memory engine's logger: each worker appends a
/// commit's records to its own buffer under one short hold of its lock (so a
/// transaction's records never straddle two blocks), and the flusher swaps every
/// buffer for an empty spare once a round (`drain`). A buffer at [`BUFFER_LIMIT`] makes
/// its worker wait, after its commit, until the flusher has taken it (`full`, then
/// `wait_drained`).
///
/// Must never: let a worker wait for a drain while it has a commit in flight or holds
/// any lock (the flusher waits for commits in flight before it drains: a deadlock), or
/// lose or reorder the bytes of a buffer (the flusher gets each whole, in order).
pub struct WorkerBuffers {
    bufs: Box<[CachePadded<Mutex<Vec<u8>>>]>,
    /// Per worker: how many times the flusher has taken its buffer (counted under the
    /// buffer's lock, so a count read under the lock names the bytes seen there).
    drains: Box<[CachePadded<AtomicU64>]>,
}

impl WorkerBuffers {
    /// Empty buffers for `workers` workers.
    pub fn new(workers: usize) -> Self {
        WorkerBuffers {
            bufs: (0..workers)
                .map(|_| CachePadded::new(Mutex::new(Vec::with_capacity(1 << 16))))
                .collect(),
            drains: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }

    /// Number of workers (and buffers).
    pub fn workers(&self) -> usize {
        self.bufs.len()
    }

    /// `worker`'s buffer, locked (through `rt`: the flusher takes it briefly to drain
    /// it). Hold it only while appending one commit's records.
    #[inline]
    pub fn lock(&self, worker: usize) -> MutexGuard<'_, Vec<u8>> {
        rt::lock(rt::WaitKind::Latch, &self.bufs[worker])
    }

    /// After a commit appended to `buf`, `worker`'s buffer still locked: if it is at or
    /// above [`BUFFER_LIMIT`], the drain count to pass to `wait_drained` once the
    /// commit is over.
    #[inline]
    pub fn full(&self, worker: usize, buf: &MutexGuard<'_, Vec<u8>>) -> Option<u64> {
        (buf.len() >= BUFFER_LIMIT).then(|| self.drains[worker].load(Acquire))
    }

    /// Whether the flusher has taken `worker`'s buffer since its drain count was `seen`.
    pub fn drained_since(&self, worker: usize, seen: u64) -> bool {
        self.drains[worker].load(Acquire) > seen
    }

    /// Wait (through `rt`, asking `mark`'s flusher for a round now) until the flusher
    /// has taken `worker`'s buffer since its drain count was `seen` (from `full`); the
    /// failure's line if the log failed first.
    ///
    /// Must never be called with a commit in flight or any lock held (the flusher may
    /// be waiting for that commit: a deadlock), and only while the flusher runs.
    pub fn wait_drained(&self, worker: usize, seen: u64, mark: &Watermark) -> Result<(), String> {
        mark.wait_taken(|| self.drained_since(worker, seen))
    }

    /// The flusher's round: swap each buffer with its spare in `spares` (one per
    /// worker, empty) under its lock, count the drain, then hand its bytes to `take`
    /// (outside the lock) and empty the spare; at the end wake the workers waiting for
    /// a drain (`mark`).
    pub fn drain(&self, spares: &mut [Vec<u8>], mark: &Watermark, mut take: impl FnMut(&[u8])) {
        assert_eq!(spares.len(), self.bufs.len(), "one spare per worker buffer");
        for ((b, s), d) in self
            .bufs
            .iter()
            .zip(spares.iter_mut())
            .zip(self.drains.iter())
        {
            assert!(s.is_empty(), "a spare log buffer holds bytes");
            let mut g = rt::lock(rt::WaitKind::Latch, b);
            std::mem::swap(&mut *g, s);
            d.fetch_add(1, Release);
            drop(g);
            take(s);
            s.clear();
        }
        mark.notify_taken();
    }
}

#[cfg(test)]
mod tests {

    /// The fingerprint's value for a fixed schema, as the memory and partitioned
    /// engines computed it before it moved here (logs of earlier builds carry it).
    #[test]
    fn the_schema_fingerprint_keeps_its_value() {
        let tables = [
            TableShape {
                name: "acct",
                row_size: 100,
                primary: 1,
                secondary: vec![],
            },
            TableShape {
                name: "orders",
                row_size: 24,
                primary: 0,
                secondary: vec![("by_cust", false), ("by_id", true)],
            },
        ];
        assert_eq!(schema_fingerprint(tables.clone()), 0x2901_568f);
        assert_eq!(
            schema_fingerprint(Vec::<TableShape<'_, Vec<(&str, bool)>>>::new()),
            0
        );
        // Any field changes it.
        let mut other = tables.clone();
        other[1].secondary[1].1 = false;
        assert_ne!(schema_fingerprint(other), 0x2901_568f);
        let mut other = tables;
        other[0].row_size = 101;
        assert_ne!(schema_fingerprint(other), 0x2901_568f);
    }
    use super::*;
    use std::sync::Arc;

    const OTHER: HeaderFormat = HeaderFormat {
        magic: b"OLTPOLOG",
        version: 1,
        tag: Some(*b"othr"),
        label: "log file",
        kind: "log",
        what: "an other-engine log",
        version_hint: "",
        others: &[],
    };
    const F: HeaderFormat = HeaderFormat {
        magic: b"OLTPTLOG",
        version: 3,
        tag: Some(*b"test"),
        label: "log file",
        kind: "log",
        what: "a test-engine log",
        version_hint: " (format 2 logs cannot be replayed)",
        others: &[&OTHER],
    };
    const H: Header = Header {
        database_id: 0x0102_0304_0506_0708,
        schema: 0xA1B2_C3D4,
    };
    const P: &str = "/db/test.log";

    fn refusal(b: &[u8]) -> String {
        let e = F.decode(b, Path::new(P)).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains(P) && e.contains("refused"), "{e}");
        e
    }

    const MARKS: MarkerFormat = MarkerFormat {
        magic: b"OLTPTMRK",
        version: 1,
        what: "a test-engine mark",
    };

    /// A writer on a simulated disk appending to `/db/t.log`, and its mark's file.
    fn marked(
        interval: Duration,
    ) -> (
        crate::SimStorage,
        Arc<dyn crate::File>,
        BlockWriter,
        MarkFile,
    ) {
        let sim = crate::SimStorage::new(7);
        let st = sim.as_storage();
        st.create_dir_all(Path::new("/db")).unwrap();
        let f = crate::create_durable(&*st, Path::new("/db/t.log")).unwrap();
        let mf = MarkFile {
            st,
            dir: "/db".into(),
            name: "t.mark",
            format: &MARKS,
            database_id: 9,
            interval,
        };
        (sim, f, BlockWriter::new(0), mf)
    }

    fn mark_on_disk(sim: &crate::SimStorage) -> Option<u64> {
        let b = sim.read_file(Path::new("/db/t.mark"))?;
        let m = MARKS.decode(&b, Path::new("/db/t.mark")).unwrap();
        assert_eq!(m.database_id, 9);
        Some(m.log_bytes)
    }

    /// The mark follows the durable length of the log: at once when armed at the end of
    /// a load, after a block once the interval has passed, at every block with no
    /// interval, and whatever the interval when forced (a clean stop); never beyond
    /// what is fsync'd, and it survives a power loss.
    #[test]
    fn the_durable_mark_follows_the_log() {
        let (sim, f, w, mf) = marked(Duration::from_secs(3600));
        let mut off = 0;
        w.write_durably(&*f, &mut off, &[1; 100], Path::new("/db/t.log"))
            .unwrap();
        assert_eq!(mark_on_disk(&sim), None, "not armed: no mark");
        w.arm_mark(mf, true).unwrap();
        assert_eq!(mark_on_disk(&sim), Some(100));
        w.write_durably(&*f, &mut off, &[2; 50], Path::new("/db/t.log"))
            .unwrap();
        assert_eq!(mark_on_disk(&sim), Some(100), "the interval has not passed");
        w.advance_mark(true).unwrap();
        assert_eq!(mark_on_disk(&sim), Some(150));
        assert_eq!(w.marks.load(Relaxed), 2);
        w.advance_mark(true).unwrap();
        assert_eq!(
            w.marks.load(Relaxed),
            2,
            "a mark already there is not rewritten"
        );
        sim.crash();
        assert_eq!(mark_on_disk(&sim), Some(150), "the mark is durable");

        let (sim, f, w, mf) = marked(Duration::ZERO);
        w.arm_mark(mf, false).unwrap();
        assert_eq!(
            mark_on_disk(&sim),
            None,
            "a recovered log's mark is not rewritten at once"
        );
        let mut off = 0;
        for i in 1..=3u64 {
            w.write_durably(&*f, &mut off, &[3; 10], Path::new("/db/t.log"))
                .unwrap();
            assert_eq!(mark_on_disk(&sim), Some(10 * i));
        }
    }

    /// A mark that cannot be written is the user's one line, not a panic; a full disk
    /// says that acknowledged commits are durable.
    #[test]
    fn a_mark_that_cannot_be_written_is_one_line() {
        let (sim, f, w, mf) = marked(Duration::ZERO);
        w.arm_mark(mf, false).unwrap();
        let mut off = 0;
        sim.set_faults(crate::sim::Faults {
            no_space_after: Some(40), // the block fits, the mark (36 bytes) does not
            ..crate::sim::Faults::default()
        });
        let e = w
            .write_durably(&*f, &mut off, &[4; 20], Path::new("/db/t.log"))
            .unwrap_err();
        assert!(
            e.contains("no space left") && e.contains("t.mark") && !e.contains('\n'),
            "{e}"
        );
    }

    /// Bytes a failed fsync left only in the page cache survive a later power loss once
    /// `Restart::prepare` rewrote them and an fsync followed; without the rewrite they
    /// are lost (Linux's behaviour after a failed fsync, which the simulated disk
    /// models), leaving a hole under anything appended after them.
    #[test]
    fn a_recovered_tail_is_made_durable_before_it_is_built_on() {
        let mut lost_without = 0;
        for (seed, rewrite) in (0..20).flat_map(|s| [(s, false), (s, true)]) {
            let sim = crate::SimStorage::new(seed);
            let st = sim.as_storage();
            let p = Path::new("/t.log");
            let f = crate::create_durable(&*st, p).unwrap();
            f.write_all_at(&[1; 100], 0).unwrap();
            f.sync_data().unwrap();
            f.write_all_at(&[2; 100], 100).unwrap();
            sim.set_faults(crate::sim::Faults {
                sync_error: 1.0,
                ..crate::sim::Faults::default()
            });
            assert!(f.sync_data().is_err());
            sim.set_faults(crate::sim::Faults::default());
            sim.kill(); // the process dies; the page cache still shows 200 bytes
            let f = st.open(p, crate::Open::ReadWrite).unwrap();
            assert_eq!(f.len().unwrap(), 200);
            if rewrite {
                let r = Restart {
                    torn: false,
                    marked: 100,
                };
                r.prepare(&*f, 200, p).unwrap();
            }
            f.write_all_at(&[3; 50], 200).unwrap();
            f.sync_data().unwrap();
            sim.crash();
            let b = sim.read_file(p).unwrap();
            let whole = b.len() == 250 && b[100..200].iter().all(|&x| x == 2);
            assert!(whole || !rewrite, "seed {seed}: rewritten bytes lost");
            lost_without += !whole as u32;
        }
        assert!(
            lost_without > 0,
            "no seed lost the unsynced bytes: the test proves nothing"
        );
    }

    /// The header as it is on disk, byte by byte: logs written before this module
    /// existed must still be read, so the layout may never move.
    #[test]
    fn a_header_has_exactly_these_bytes() {
        let b = F.encode(&H);
        // The checksum bytes were computed apart from this code (Python's zlib.crc32).
        #[rustfmt::skip]
        let want: [u8; HEADER_BYTES] = [
            b'O', b'L', b'T', b'P', b'T', b'L', b'O', b'G', // magic
            0x03, 0x00, 0x00, 0x00, // format version
            b't', b'e', b's', b't', // engine tag
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // database id
            0xD4, 0xC3, 0xB2, 0xA1, // schema fingerprint
            0x2C, 0x61, 0xEE, 0x25, // CRC-32 of bytes 0..28
        ];
        assert_eq!(b, want);
        assert_eq!(F.decode(&b, Path::new(P)).unwrap(), H);
        assert!(F.looks_like(&b) && !OTHER.looks_like(&b));
    }

    #[test]
    fn a_word_of_the_files_own_takes_the_tags_place() {
        let f = HeaderFormat { tag: None, ..F };
        let b = f.encode_with_word(&H, 5u32.to_le_bytes());
        assert_eq!(HeaderFormat::word(&b), 5);
        assert_eq!(f.decode(&b, Path::new(P)).unwrap(), H);
        assert!(f.looks_like(&b[..8]));
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let e = refusal(b"some notes, not a log at all....");
        assert!(
            e.contains("not a test-engine log (no OLTPTLOG header)"),
            "{e}"
        );
        let e = refusal(b"");
        assert!(e.contains("not a test-engine log"), "{e}");
        let e = refusal(&OTHER.encode(&H));
        assert!(
            e.contains("an other-engine log, not a test-engine log"),
            "{e}"
        );
    }

    #[test]
    fn a_cut_header_is_refused() {
        let b = F.encode(&H);
        for n in [8, 11, 12, 20, 31] {
            let e = refusal(&b[..n]);
            assert!(e.contains(&format!("header cut short ({n} bytes)")), "{e}");
        }
    }

    #[test]
    fn a_checksum_mismatch_is_refused() {
        for i in [13, 16, 27, 28, 31] {
            let mut b = F.encode(&H);
            b[i] ^= 0x20;
            let e = refusal(&b);
            assert!(e.contains("header checksum mismatch"), "byte {i}: {e}");
        }
    }

    #[test]
    fn another_engines_tag_is_refused() {
        let f = HeaderFormat {
            tag: Some(*b"else"),
            ..F
        };
        let e = refusal(&f.encode(&H));
        assert!(
            e.contains("written by another engine (tag \"else\")"),
            "{e}"
        );
    }

    #[test]
    fn another_format_version_is_refused() {
        let f = HeaderFormat { version: 2, ..F };
        let e = refusal(&f.encode(&H));
        assert!(
            e.contains(
                "log format 2, this oltpscope reads format 3 (format 2 logs cannot be replayed)"
            ),
            "{e}"
        );
        // A header of an older version may be shorter: the version is named first.
        let e = refusal(&f.encode(&H)[..16]);
        assert!(e.contains("log format 2"), "{e}");
    }

    const M: MarkerFormat = MarkerFormat {
        magic: b"OLTPTLDN",
        version: 3,
        what: "a test-engine load marker",
    };

    #[test]
    fn a_marker_has_exactly_these_bytes_and_damage_is_refused() {
        let m = LoadMarker {
            database_id: 0x1122_3344_5566_7788,
            log_bytes: 4096,
        };
        let b = M.encode(&m);
        #[rustfmt::skip]
        let want: [u8; MARKER_BYTES] = [
            b'O', b'L', b'T', b'P', b'T', b'L', b'D', b'N', // magic
            0x03, 0x00, 0x00, 0x00, // format version
            0x00, 0x00, 0x00, 0x00, // zero
            0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // database id
            0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // log bytes
            0x0F, 0xF7, 0x92, 0xE1, // CRC-32 of bytes 0..32 (Python's zlib.crc32)
        ];
        assert_eq!(b, want);
        let p = Path::new("/db/test.loaded");
        assert_eq!(M.decode(&b, p).unwrap(), m);
        let e = M.decode(b"OLTPTLOG........", p).unwrap_err();
        assert!(e.contains("not a test-engine load marker: refused"), "{e}");
        for bad in [&b[..35], &[&b[..], &[0]].concat()[..]] {
            let e = M.decode(bad, p).unwrap_err();
            assert!(
                e.contains("damaged load marker") && e.contains("refused"),
                "{e}"
            );
        }
        let mut v = b;
        v[8] = 2;
        assert!(M.decode(&v, p).unwrap_err().contains("damaged load marker"));
        let mut c = b;
        c[20] ^= 1;
        assert!(M.decode(&c, p).unwrap_err().contains("damaged load marker"));
    }

    /// A waiter wakes when its value is published, and with the failure's line when
    /// the log fails first; a later waiter gets the line at once.
    #[test]
    fn waiters_wake_on_progress_and_on_failure() {
        let w = Arc::new(Watermark::new(3));
        assert_eq!(w.wait_durable(3), Ok(()));
        let flusher = {
            let w = w.clone();
            std::thread::spawn(move || {
                let mut rounds = 0;
                loop {
                    let stop = w.next_round(Duration::from_secs(30));
                    rounds += 1;
                    if stop {
                        return rounds;
                    }
                    w.publish(rounds * 10);
                }
            })
        };
        // Each wait asks for a round at once (the interval is 30 s).
        assert_eq!(w.wait_durable(5), Ok(()));
        assert!(w.durable() >= 5);
        w.publish(2);
        assert!(w.durable() >= 5, "the watermark went back");
        w.stop();
        assert!(flusher.join().unwrap() >= 2);
        let waiter = {
            let w = w.clone();
            std::thread::spawn(move || w.wait_durable(100))
        };
        std::thread::sleep(Duration::from_millis(20));
        w.fail("log /db/test.log: fsync failed: boom".into());
        let e = waiter.join().unwrap().unwrap_err();
        assert_eq!(e, "log /db/test.log: fsync failed: boom");
        assert!(w.has_failed());
        assert_eq!(w.wait_durable(1000).unwrap_err(), e);
        // What was durable before the failure stays so.
        assert_eq!(w.wait_durable(5), Ok(()));
    }

    /// A buffer is full at `BUFFER_LIMIT` bytes, not one byte before; the count `full`
    /// hands out is the drain count under the lock.
    #[test]
    fn a_buffer_is_full_at_the_limit_not_before() {
        let w = WorkerBuffers::new(2);
        let mark = Watermark::new(0);
        w.lock(1).resize(BUFFER_LIMIT - 1, 7);
        assert_eq!(w.full(1, &w.lock(1)), None);
        w.lock(1).push(7);
        assert_eq!(w.full(1, &w.lock(1)), Some(0));
        assert_eq!(w.full(0, &w.lock(0)), None);
        let mut spares = vec![Vec::new(), Vec::new()];
        let mut taken = Vec::new();
        w.drain(&mut spares, &mark, |b| taken.push(b.len()));
        assert_eq!(taken, [0, BUFFER_LIMIT]);
        assert!(w.drained_since(1, 0));
        w.lock(1).resize(BUFFER_LIMIT, 1);
        assert_eq!(w.full(1, &w.lock(1)), Some(1));
        // Already drained since then: no wait.
        assert_eq!(w.wait_drained(0, 0, &mark), Ok(()));
    }

    /// A worker waiting for its full buffer asks for a round, waits until the flusher
    /// has taken its buffer (and not before), and the bytes reach the flusher whole.
    #[test]
    fn a_full_buffer_waits_for_the_logger() {
        let w = Arc::new(WorkerBuffers::new(2));
        let mark = Arc::new(Watermark::new(0));
        let seen = {
            let mut b = w.lock(1);
            b.extend((0..BUFFER_LIMIT).map(|i| i as u8));
            w.full(1, &b).expect("full")
        };
        let waiter = {
            let (w, mark) = (w.clone(), mark.clone());
            std::thread::spawn(move || w.wait_drained(1, seen, &mark))
        };
        // The wait asked for a round (the interval is 30 s): it is waiting now, and
        // nothing but the drain below can end it.
        assert!(!mark.next_round(Duration::from_secs(30)));
        assert!(!waiter.is_finished(), "the wait ended before the drain");
        assert!(!w.drained_since(1, seen));
        let mut spares = vec![Vec::new(), Vec::new()];
        let mut got = Vec::new();
        w.drain(&mut spares, &mark, |b| got.extend_from_slice(b));
        assert_eq!(waiter.join().unwrap(), Ok(()));
        assert!(w.drained_since(1, seen));
        assert!(w.lock(1).is_empty());
        assert_eq!(got.len(), BUFFER_LIMIT);
        assert!(got.iter().enumerate().all(|(i, &b)| b == i as u8));
    }

    /// A failed log wakes a worker waiting for a drain with the failure's line, and a
    /// later wait gets it at once.
    #[test]
    fn a_failure_wakes_a_worker_waiting_for_a_drain() {
        let w = Arc::new(WorkerBuffers::new(1));
        let mark = Arc::new(Watermark::new(0));
        w.lock(0).resize(BUFFER_LIMIT, 0);
        let seen = w.full(0, &w.lock(0)).expect("full");
        let waiter = {
            let (w, mark) = (w.clone(), mark.clone());
            std::thread::spawn(move || w.wait_drained(0, seen, &mark))
        };
        assert!(!mark.next_round(Duration::from_secs(30)));
        mark.fail("log /db/test.log: fsync failed: boom".into());
        let e = waiter.join().unwrap().unwrap_err();
        assert_eq!(e, "log /db/test.log: fsync failed: boom");
        assert_eq!(w.wait_drained(0, seen, &mark).unwrap_err(), e);
        assert_eq!(w.lock(0).len(), BUFFER_LIMIT, "the buffer was not taken");
    }
}
