//! `valuelog::checkpoint`: the checkpoint file of a value log, its writer and reader,
//! and the schedule a checkpointer thread follows (when to take one, freeing the log's
//! prefix after it), shared by the `memory` and `mvcc` engines. The engines bring only
//! their scan of the committed rows and the counter (epoch, timestamp) they wait for.
//!
//! The file (`CheckpointFormat::file`): a file header (the engine's checkpoint
//! `HeaderFormat`, with the log's database id and schema fingerprint); data blocks in
//! the log's block format (kind `BLOCK_DATA`), each record a put of one row with its
//! stamp, each block stating a counter no row of it exceeds; one end block
//! (`BLOCK_END`, no records, `End`), which ends the file. It is written as
//! `CheckpointFormat::tmp`, fsync'd, renamed and the directory fsync'd, so it is whole
//! or absent: any invalid block, a missing end block, bytes after it, a row count that
//! differs, a record that is not a put, another database or schema is refused.
//!
//! Must never: free log bytes a durable checkpoint does not cover, or leave a file
//! that a reader could take for whole when it is not.

use super::logger::{LogClock, Logger};
use super::{
    BlockFormat, RecordFormat, RecordRef, BLOCK_DATA, BLOCK_END, BLOCK_HEADER_BYTES, END_BYTES,
    KIND_PUT,
};
use crate::logfile::{le64, Header, HeaderFormat, HEADER_BYTES};
use crate::{File, Open, Storage};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Data blocks of about this many bytes.
const BLOCK_TARGET: usize = 1 << 20;
/// The writer makes every this many bytes durable and drops them from the page cache:
/// left to the kernel, a checkpoint of hundreds of MB is written back in one burst that
/// the log's fsyncs queue behind (mvcc TPC-C W=2/2T: workers waited 1.9-5.1 s of 40 for
/// full log buffers with checkpoints on, 0-0.2 s off), and it would fill the page cache
/// with a file read only at recovery.
const PACE_BYTES: u64 = 4 << 20;
/// How often the checkpointer looks at the log's growth.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// The default growth of the log that starts a checkpoint (at least; see `threshold`).
pub const DEFAULT_LOG_BYTES: u64 = 64 << 20;

/// One engine's checkpoint file.
#[derive(Debug)]
pub struct CheckpointFormat {
    /// `memory.ckpt`.
    pub file: &'static str,
    /// The one being written (renamed to `file` when whole): `memory.ckpt.tmp`.
    pub tmp: &'static str,
    pub header: &'static HeaderFormat,
    /// The log's blocks and records (a checkpoint holds only puts).
    pub blocks: &'static BlockFormat,
    pub records: &'static RecordFormat,
}

/// What a checkpoint's end block states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    /// Recovery replays the log from here (a block boundary)...
    pub log_from: u64,
    /// ...and, from here to `log_from`, only its deletes.
    pub tomb_from: u64,
    /// Every row's counter is at or below it, and it was durable when the file was made.
    pub durable: u64,
    pub rows: u64,
}

impl End {
    pub fn encode(&self) -> [u8; END_BYTES] {
        let mut b = [0u8; END_BYTES];
        for (i, x) in [self.log_from, self.tomb_from, self.durable, self.rows]
            .into_iter()
            .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> End {
        End {
            log_from: le64(&b[0..]),
            tomb_from: le64(&b[8..]),
            durable: le64(&b[16..]),
            rows: le64(&b[24..]),
        }
    }

    /// Where a log's replay starts after this checkpoint (the file `ckpt`): the deletes
    /// from `tomb_from`, every record from `log_from`, returned in that order. The log
    /// `f` (at `path`) must reach `log_from`: a shorter one lost what the checkpoint
    /// relies on, and is refused.
    pub fn replay_from(
        &self,
        ckpt: &Path,
        f: &dyn File,
        path: &Path,
    ) -> Result<(u64, u64), String> {
        debug_assert!(
            self.tomb_from <= self.log_from,
            "a checkpoint's deletes start after its records"
        );
        let len = f
            .len()
            .map_err(|e| format!("log file {}: {e}", path.display()))?;
        if self.log_from > len {
            return Err(format!(
                "checkpoint file {} continues at byte {} of log file {}, which is {len} bytes long: refused, the files are left as they are",
                ckpt.display(),
                self.log_from,
                path.display()
            ));
        }
        Ok((self.tomb_from, self.log_from))
    }
}

fn refuse(path: &Path, why: String) -> String {
    format!(
        "checkpoint file {} {why}: refused, the file is left as it is",
        path.display()
    )
}

/// Read the checkpoint in `dir` of the log whose header is `log` (None: there is none),
/// passing each row to `put`: its end and its file's length. Any damage is refused in
/// one line.
pub fn read(
    st: &dyn Storage,
    dir: &Path,
    fmt: &CheckpointFormat,
    log: &Header,
    mut put: impl FnMut(&RecordRef<'_>) -> Result<(), String>,
) -> Result<Option<(End, u64)>, String> {
    let path = dir.join(fmt.file);
    let io = |e: std::io::Error| format!("checkpoint file {}: {e}", path.display());
    if !st.exists(&path).map_err(io)? {
        return Ok(None);
    }
    let f = st.open(&path, Open::Read).map_err(io)?;
    let hd = super::read_header(&*f, &path, fmt.header)?;
    if hd.database_id != log.database_id {
        return Err(refuse(
            &path,
            format!(
                "belongs to another log (database id {:016x}, the log's is {:016x})",
                hd.database_id, log.database_id
            ),
        ));
    }
    if hd.schema != log.schema {
        return Err(refuse(&path, "was written for another schema".into()));
    }
    let len = f.len().map_err(io)?;
    let mut at = HEADER_BYTES as u64;
    let mut buf = Vec::new();
    let mut rows = 0u64;
    loop {
        if at == len {
            return Err(refuse(
                &path,
                format!("has no end block (ends at byte {len})"),
            ));
        }
        let total = match fmt
            .blocks
            .probe(&*f, len, at, &mut buf, &[BLOCK_DATA, BLOCK_END])
            .map_err(io)?
        {
            Ok(t) => t,
            Err(why) => return Err(refuse(&path, format!("is damaged at byte {at} ({why})"))),
        };
        let block = fmt.blocks.block_in(&buf[..total], at);
        if block.kind == BLOCK_END {
            let end = End::decode(block.payload);
            if at + total as u64 != len {
                return Err(refuse(
                    &path,
                    format!("has bytes after its end block at byte {at}"),
                ));
            }
            if end.rows != rows {
                return Err(refuse(
                    &path,
                    format!("holds {rows} rows, its end block says {}", end.rows),
                ));
            }
            if end.tomb_from > end.log_from || end.tomb_from < HEADER_BYTES as u64 {
                return Err(refuse(
                    &path,
                    format!(
                        "names log bytes {}..{} out of order",
                        end.tomb_from, end.log_from
                    ),
                ));
            }
            return Ok(Some((end, len)));
        }
        for r in block.records() {
            if r.kind != KIND_PUT {
                return Err(refuse(
                    &path,
                    format!("holds a record that is not a row at block {at}"),
                ));
            }
            if (fmt.records.counter_of)(r.stamp) > block.durable {
                return Err(refuse(
                    &path,
                    format!(
                        "holds a row above its {} at block {at}",
                        fmt.records.counter
                    ),
                ));
            }
            put(&r).map_err(|why| refuse(&path, format!("block at byte {at}: {why}")))?;
            rows += 1;
        }
        at += total as u64;
    }
}

/// A checkpoint file being written (`Checkpoints::take` makes one and finishes it).
pub struct Writer {
    f: Arc<dyn File>,
    tmp: PathBuf,
    blocks: &'static BlockFormat,
    counter_of: fn(u64) -> u64,
    off: u64,
    block: Vec<u8>,
    count: u32,
    durable: u64,
    /// The highest counter of a row in the block being filled: rows committed while the
    /// scan runs are above `durable`, and a block states a counter no row of it exceeds.
    top: u64,
    rows: u64,
    /// The highest counter of any row so far.
    max: u64,
    /// Bytes before this are durable and dropped from the cache (`PACE_BYTES`).
    paced: u64,
}

impl Writer {
    fn io(&self, what: &str, e: std::io::Error) -> String {
        format!("checkpoint {}: {what}: {e}", self.tmp.display())
    }

    /// Add a row (key, stamp, row) of `table`.
    pub fn put(&mut self, table: u32, key: &[u8], stamp: u64, row: &[u8]) -> Result<(), String> {
        super::append_record(&mut self.block, stamp, table, KIND_PUT, key, row);
        self.count += 1;
        self.rows += 1;
        self.top = self.top.max((self.counter_of)(stamp));
        self.max = self.max.max(self.top);
        if self.block.len() >= BLOCK_TARGET {
            self.flush()?;
        }
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The highest counter of any row so far.
    pub fn max_counter(&self) -> u64 {
        self.max
    }

    fn flush(&mut self) -> Result<(), String> {
        if self.count == 0 {
            return Ok(());
        }
        let d = self.durable.max(self.top);
        self.blocks.seal(&mut self.block, d, self.count, BLOCK_DATA);
        self.top = 0;
        self.f
            .write_all_at(&self.block, self.off)
            .map_err(|e| self.io("writing", e))?;
        self.off += self.block.len() as u64;
        self.block.truncate(BLOCK_HEADER_BYTES);
        self.count = 0;
        if self.off - self.paced >= PACE_BYTES {
            self.f.sync_data().map_err(|e| self.io("fsync", e))?;
            self.f.drop_cached(self.paced, self.off - self.paced);
            self.paced = self.off;
        }
        Ok(())
    }
}

/// A finished checkpoint, for the statistics.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    pub end: End,
    /// The checkpoint file's length.
    pub bytes: u64,
    pub millis: u64,
}

/// What the checkpointer has done, for the statistics.
#[derive(Debug, Default, Clone)]
pub struct Progress {
    pub last: Option<Done>,
    /// Where the log was read from at the last checkpoint (or recovery).
    pub last_log_from: u64,
    /// The last checkpoint file's length.
    pub last_bytes: u64,
    pub count: u64,
    /// The log is freed (holes) up to here.
    pub punched_to: u64,
    /// The file system cannot punch holes: said once, the log is not shortened.
    pub punch_unsupported: Option<String>,
    /// The last checkpoint that failed (the next one tries again).
    pub last_error: Option<String>,
}

/// One log's checkpoints: the file's place and format, when the next is due, the one
/// being taken, and freeing the log's prefix once one is durable.
pub struct Checkpoints {
    st: Arc<dyn Storage>,
    dir: PathBuf,
    fmt: &'static CheckpointFormat,
    header: Header,
    /// The log (its prefix is freed with `File::punch_hole`).
    log: Arc<dyn File>,
    /// A checkpoint starts when the log has grown by more than this since the last
    /// one's `log_from` (None: the larger of `DEFAULT_LOG_BYTES` and its file's size).
    log_bytes: Option<u64>,
    stop: AtomicBool,
    wake: rt::Event,
    progress: Mutex<Progress>,
    /// Held by the one checkpoint being written: two would share the `.tmp` name, and
    /// one could rename the other's unfinished file.
    taking: Mutex<()>,
}

impl Checkpoints {
    /// `recovered`: the checkpoint recovery started from (and its file's length).
    pub fn new(
        st: Arc<dyn Storage>,
        dir: PathBuf,
        fmt: &'static CheckpointFormat,
        header: Header,
        log: Arc<dyn File>,
        log_bytes: Option<u64>,
        recovered: Option<(End, u64)>,
    ) -> Self {
        let progress = Progress {
            last_log_from: recovered.map_or(HEADER_BYTES as u64, |r| r.0.log_from),
            last_bytes: recovered.map_or(0, |r| r.1),
            ..Progress::default()
        };
        Checkpoints {
            st,
            dir,
            fmt,
            header,
            log,
            log_bytes,
            stop: AtomicBool::new(false),
            wake: rt::Event::new(),
            progress: Mutex::new(progress),
            taking: Mutex::new(()),
        }
    }

    /// Ask the thread to end (a checkpoint being written is abandoned).
    pub fn stop(&self) {
        self.stop.store(true, Release);
        self.wake.notify_all();
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Acquire)
    }

    /// The log growth since the last checkpoint's `log_from` that starts the next one.
    fn threshold(&self, last_bytes: u64) -> u64 {
        // Default: recovery reads at most about twice the database (the checkpoint and
        // a log suffix as long) and never less than 64 MiB at a time is checkpointed.
        self.log_bytes
            .unwrap_or_else(|| DEFAULT_LOG_BYTES.max(last_bytes))
    }

    /// The checkpointer thread's body: every `CHECK_INTERVAL`, if the log (`written()`
    /// bytes long, not `failed()`) has grown past the threshold, `take()` one. Runs
    /// until `stop`. A failed checkpoint is kept for the statistics; the next tries again.
    pub fn run(
        &self,
        written: impl Fn() -> u64,
        failed: impl Fn() -> bool,
        take: impl Fn() -> Result<Option<Done>, String>,
    ) {
        while !self.stopping() {
            self.wake
                .wait(rt::WaitKind::Other, Some(CHECK_INTERVAL), || {
                    self.stopping()
                });
            if self.stopping() || failed() {
                continue;
            }
            let (from, last) = {
                let p = self.progress.lock();
                (p.last_log_from, p.last_bytes)
            };
            if written().saturating_sub(from) <= self.threshold(last) {
                continue;
            }
            if let Err(msg) = take() {
                self.progress.lock().last_error = Some(msg);
            }
        }
    }

    /// Take one checkpoint from `cut` (None: no block written yet, nothing to start
    /// from). `scan` writes every committed row into the writer, then returns the
    /// counter it waited to be durable (every row's is at or below it), or `None` if
    /// it stopped (the engine stops; the `.tmp` goes at the next checkpoint).
    pub fn take(
        &self,
        cut: Option<super::Cut>,
        scan: impl FnOnce(&mut Writer, &AtomicBool) -> Result<Option<u64>, String>,
    ) -> Result<Option<Done>, String> {
        let _one = self.taking.lock();
        let Some(cut) = cut else {
            return Ok(None);
        };
        assert!(cut.tomb_from <= cut.log_from, "a cut out of order: {cut:?}");
        let t0 = Instant::now();
        let tmp = self.dir.join(self.fmt.tmp);
        let path = self.dir.join(self.fmt.file);
        let io =
            |what: &str, e: std::io::Error| format!("checkpoint {}: {what}: {e}", tmp.display());
        match self.st.remove(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("removing an unfinished one", e)),
        }
        let f = self
            .st
            .open(&tmp, Open::CreateNew)
            .map_err(|e| io("creating", e))?;
        let written = self.write_tmp(f, &tmp, cut, scan);
        let Ok(Some((end, bytes))) = written else {
            // Abandoned (the engine stops) or failed: the unfinished file is never
            // read, but a clean stop should not leave it behind. A failure to remove
            // it is harmless (the next checkpoint, `--reload` or `drop` removes it).
            let _ = self.st.remove(&tmp);
            return written.map(|_| None);
        };
        self.st.rename(&tmp, &path).map_err(|e| io("renaming", e))?;
        self.st
            .sync_dir(&self.dir)
            .map_err(|e| io("syncing the directory", e))?;
        let done = Done {
            end,
            bytes,
            millis: t0.elapsed().as_millis() as u64,
        };
        self.finished(done)?;
        Ok(Some(done))
    }

    /// Write the checkpoint into `f` (the `.tmp` at `tmp`) and fsync it: its end and
    /// length, or None if the scan stopped.
    fn write_tmp(
        &self,
        f: Arc<dyn File>,
        tmp: &Path,
        cut: super::Cut,
        scan: impl FnOnce(&mut Writer, &AtomicBool) -> Result<Option<u64>, String>,
    ) -> Result<Option<(End, u64)>, String> {
        let io =
            |what: &str, e: std::io::Error| format!("checkpoint {}: {what}: {e}", tmp.display());
        f.write_all_at(&self.fmt.header.encode(&self.header), 0)
            .map_err(|e| io("writing", e))?;
        let mut w = Writer {
            f,
            tmp: tmp.to_path_buf(),
            blocks: self.fmt.blocks,
            counter_of: self.fmt.records.counter_of,
            off: HEADER_BYTES as u64,
            block: Vec::with_capacity(BLOCK_TARGET + (64 << 10)),
            count: 0,
            durable: cut.durable,
            top: 0,
            rows: 0,
            max: 0,
            paced: 0,
        };
        w.block.resize(BLOCK_HEADER_BYTES, 0);
        let Some(durable) = scan(&mut w, &self.stop)? else {
            return Ok(None);
        };
        assert!(
            durable >= cut.durable && durable >= w.max,
            "a checkpoint's counter {durable} below its cut's or a row's"
        );
        w.durable = durable;
        w.flush()?;
        let end = End {
            log_from: cut.log_from,
            tomb_from: cut.tomb_from,
            durable,
            rows: w.rows,
        };
        let mut b = vec![0u8; BLOCK_HEADER_BYTES];
        b.extend_from_slice(&end.encode());
        self.fmt.blocks.seal(&mut b, durable, 0, BLOCK_END);
        w.f.write_all_at(&b, w.off).map_err(|e| io("writing", e))?;
        let bytes = w.off + b.len() as u64;
        w.f.sync_data().map_err(|e| io("fsync", e))?;
        Ok(Some((end, bytes)))
    }

    /// `done` is durable: the log before its `tomb_from` is never read again, free it.
    fn finished(&self, done: Done) -> Result<(), String> {
        let mut p = self.progress.lock();
        p.last = Some(done);
        p.last_log_from = done.end.log_from;
        p.last_bytes = done.bytes;
        p.count += 1;
        let from = p.punched_to.max(HEADER_BYTES as u64);
        let to = done.end.tomb_from;
        if p.punch_unsupported.is_none() && to > from {
            match self.log.punch_hole(from, to - from) {
                Ok(()) => p.punched_to = to,
                Err(e) if crate::is_unsupported(&e) => {
                    p.punch_unsupported = Some(format!(
                        "the file system cannot punch holes ({e}): the log is not shortened"
                    ))
                }
                Err(e) => return Err(format!("checkpoint: freeing the log's prefix: {e}")),
            }
        }
        Ok(())
    }

    /// What has been done so far.
    pub fn progress(&self) -> Progress {
        self.progress.lock().clone()
    }
}

impl CheckpointFormat {
    /// `end` for the statistics, its counter named as the log names it.
    pub fn end_json(&self, end: &End) -> serde_json::Value {
        serde_json::json!({
            "log_from": end.log_from,
            "tomb_from": end.tomb_from,
            self.records.counter: end.durable,
            "rows": end.rows,
        })
    }
}

/// What an engine brings to its checkpoints: its scan of the committed rows. Its log
/// (`logger::Logger`) says how far the log is written, where a checkpoint starts in it
/// and which counter every row read is at or below; everything else (the thread, the
/// schedule, the file, the statistics) is `Checkpointer`'s.
pub trait Rows: Send + Sync + 'static {
    /// Put every committed row into `w`, reading while transactions run. `Ok(false)`:
    /// `stop` was set.
    fn scan(&self, w: &mut Writer, stop: &AtomicBool) -> Result<bool, String>;
}

/// An engine's checkpointer: its rows, its log, the checkpoints of its log, and the
/// thread.
pub struct Checkpointer<C: LogClock, R: Rows> {
    rows: R,
    logger: Arc<Logger<C>>,
    ckpts: Checkpoints,
}

impl<C: LogClock, R: Rows> Checkpointer<C, R> {
    /// The checkpointer of `logger`'s log in `dir`, whose checkpoint files are `fmt`
    /// (`recovered`: the checkpoint recovery started from, and its file's length).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rows: R,
        logger: Arc<Logger<C>>,
        st: Arc<dyn Storage>,
        dir: PathBuf,
        fmt: &'static CheckpointFormat,
        schema: u32,
        log_bytes: Option<u64>,
        recovered: Option<(End, u64)>,
    ) -> Arc<Self> {
        let header = Header {
            database_id: logger.database_id,
            schema,
        };
        let file = logger.file.clone();
        let ckpts = Checkpoints::new(st, dir, fmt, header, file, log_bytes, recovered);
        Arc::new(Checkpointer {
            rows,
            logger,
            ckpts,
        })
    }

    /// The log's length in bytes (written so far).
    fn written(&self) -> u64 {
        self.logger.io.bytes.load(Acquire)
    }

    /// Start the thread `name`, at the lowest CPU priority.
    pub fn start(self: &Arc<Self>, name: &str) -> Result<std::thread::JoinHandle<()>, String> {
        let me = self.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                probe::thread_role(probe::Role::Checkpointer);
                lowest_priority();
                me.ckpts
                    .run(|| me.written(), || me.logger.has_failed(), || me.take())
            })
            .map_err(|e| format!("spawn checkpointer thread: {e}"))
    }

    /// Ask the thread to end (a checkpoint being written is abandoned).
    pub fn stop(&self) {
        self.ckpts.stop();
    }

    /// Take one checkpoint now (the thread's, or a test's). `Ok(None)`: nothing to
    /// start from yet, or abandoned because the engine stops.
    pub fn take(&self) -> Result<Option<Done>, String> {
        let cut = self.logger.cut();
        if let Some(c) = cut {
            assert!(c.log_from <= self.written(), "a cut beyond the log: {c:?}");
        }
        self.ckpts.take(cut, |w, stop| {
            if !self.rows.scan(w, stop)? {
                return Ok(None);
            }
            // Every row read was installed by a commit of a counter at or below the
            // clock's value now: once it is durable, no row of the checkpoint can be
            // lost by a crash.
            let c = self.logger.clock().now();
            self.logger
                .wait_durable(c)
                .map_err(|e| format!("checkpoint: {e}"))?;
            Ok(Some(c))
        })
    }

    /// The statistics' checkpoint fields of the engine's `log` object.
    pub fn stats(&self, v: &mut serde_json::Value) {
        let p = self.ckpts.progress();
        v["checkpoints"] = p.count.into();
        v["last_checkpoint"] = p.last.map_or(serde_json::Value::Null, |d| {
            let mut j = self.ckpts.fmt.end_json(&d.end);
            j["bytes"] = d.bytes.into();
            j["millis"] = d.millis.into();
            j
        });
        v["log_freed_to"] = p.punched_to.into();
        if let Some(m) = &p.punch_unsupported {
            v["punch_hole"] = m.clone().into();
        }
        if let Some(m) = &p.last_error {
            v["checkpoint_error"] = m.clone().into();
        }
    }

    /// Checkpoints finished so far.
    pub fn count(&self) -> u64 {
        self.ckpts.progress().count
    }
}

/// An engine's checkpointer once started, and its thread: started at most once, never
/// after `stop` (an engine shutting down does not start one behind its back).
pub struct Slot<C: LogClock, R: Rows> {
    state: Mutex<SlotState<C, R>>,
}

type Running<C, R> = (Arc<Checkpointer<C, R>>, std::thread::JoinHandle<()>);

struct SlotState<C: LogClock, R: Rows> {
    /// The checkpointer and its thread.
    running: Option<Running<C, R>>,
    stopped: bool,
}

impl<C: LogClock, R: Rows> Default for Slot<C, R> {
    fn default() -> Self {
        Slot {
            state: Mutex::new(SlotState {
                running: None,
                stopped: false,
            }),
        }
    }
}

impl<C: LogClock, R: Rows> Slot<C, R> {
    /// The checkpointer, once started.
    pub fn get(&self) -> Option<Arc<Checkpointer<C, R>>> {
        self.state.lock().running.as_ref().map(|c| c.0.clone())
    }

    /// Start the thread `name` of the checkpointer `make` builds, unless one was
    /// started or `stop` was called.
    pub fn start_once(
        &self,
        name: &str,
        make: impl FnOnce() -> Arc<Checkpointer<C, R>>,
    ) -> Result<(), String> {
        let mut g = self.state.lock();
        if g.running.is_some() || g.stopped {
            return Ok(());
        }
        let c = make();
        let h = c.start(name)?;
        g.running = Some((c, h));
        Ok(())
    }

    /// Stop the thread and wait for it (a checkpoint being written is abandoned).
    pub fn stop(&self) {
        let running = {
            let mut g = self.state.lock();
            g.stopped = true;
            g.running.take()
        };
        if let Some((c, h)) = running {
            c.stop();
            let _ = h.join();
        }
    }

    /// The statistics' checkpoint fields of the engine's `log` object (none before
    /// the checkpointer starts).
    pub fn stats(&self, v: &mut serde_json::Value) {
        if let Some(c) = self.get() {
            c.stats(v);
        }
    }
}

/// Put the calling thread at the lowest CPU priority (nice 19): a checkpointer on a
/// machine the workers fill takes their idle time instead of their cores (at normal
/// priority the memory engine's cost TPC-C W=2/2T a quarter of its throughput on 2
/// cores). It still finishes: the log it bounds only grows longer meanwhile.
pub fn lowest_priority() {
    // SAFETY: setpriority on this thread's own id; a failure is harmless.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}
