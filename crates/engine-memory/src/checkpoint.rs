//! `checkpoint`: a snapshot of the committed rows, taken in the background while
//! transactions run (Silo's and Hekaton's fuzzy checkpoints), so that recovery reads
//! the newest checkpoint plus the log after it and the log's prefix can be freed.
//!
//! The file `memory.ckpt`: a file header (`HEADER`, magic `"OLTPMCKP"`, the log's
//! database id and schema fingerprint), blocks in the log's format (`log::seal_block`)
//! holding one put record per row (the row's TID), and a last block of kind
//! `log::BLOCK_END` holding `End`. Written as `memory.ckpt.tmp`, fsync'd, renamed,
//! directory fsync'd: it is whole or absent, so any invalid block, a missing end block,
//! bytes after it or a row count that differs is a damaged file, refused.
//!
//! Why a fuzzy scan plus the log is the committed state (details in
//! docs/design/memory-engine.md, Checkpoints): the scan starts after the logger
//! published `Cut` (`log_from`); a commit installs its versions before it appends its
//! records, so a version the scan did not see is in a block at or after `log_from`, and
//! replay keeps the highest TID of each key. A delete's record may precede `log_from`
//! while an older write of its key follows it; such deletes are in `tomb_from..log_from`
//! (`log::Cut`), which recovery reads for its deletes only. The scan's rows are all of
//! durable epochs: the checkpoint is renamed only after the epoch current at the end of
//! the scan is durable.
//!
//! Must never: free log bytes a durable checkpoint does not cover, or leave a file
//! that recovery could take for whole when it is not.

use crate::catalog::{Catalog, Index, TableData};
use crate::epoch::Epochs;
use crate::log::{self, le64_at, Logger, RecordRef, BLOCK_HEADER_BYTES};
use crate::record::{epoch_of, Rec, ABSENT, FLAGS};
use parking_lot::Mutex;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::logfile::{Header, HeaderFormat, HEADER_BYTES};
use storage::{File, Open, Storage};

pub const CKPT_FILE: &str = "memory.ckpt";
/// The checkpoint being written (renamed to `CKPT_FILE` when whole).
pub const CKPT_TMP: &str = "memory.ckpt.tmp";
pub const CKPT_MAGIC: &[u8; 8] = b"OLTPMCKP";
pub const CKPT_VERSION: u32 = 1;
/// Data blocks of about this many bytes.
const BLOCK_TARGET: usize = 1 << 20;
/// Rows read per pin of crossbeam-epoch (a long pin would hold back reclamation).
const CHUNK: usize = 4096;
/// How often the checkpointer looks at the log's growth.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// The default growth of the log that starts a checkpoint (at least; see `threshold`).
pub const DEFAULT_LOG_BYTES: u64 = 64 << 20;

pub const HEADER: HeaderFormat = HeaderFormat {
    magic: CKPT_MAGIC,
    version: CKPT_VERSION,
    tag: None,
    label: "checkpoint file",
    kind: "checkpoint",
    what: "a memory-engine checkpoint",
    version_hint: "",
    others: &[&log::HEADER],
};

/// The checkpoint file beside the log (removed with it on `--reload`).
pub const SIDE: storage::logdir::SideFile = storage::logdir::SideFile {
    name: CKPT_FILE,
    header: &HEADER,
};

/// What a checkpoint's end block states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct End {
    /// Recovery replays the log from here (a block boundary)...
    pub log_from: u64,
    /// ...and, from here to `log_from`, only its deletes.
    pub tomb_from: u64,
    /// Every row's epoch is at or below it, and it was durable when the file was made.
    pub epoch: u64,
    pub rows: u64,
}

impl End {
    fn encode(&self) -> [u8; log::END_BYTES] {
        let mut b = [0u8; log::END_BYTES];
        for (i, x) in [self.log_from, self.tomb_from, self.epoch, self.rows]
            .into_iter()
            .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes());
        }
        b
    }
    fn decode(b: &[u8]) -> End {
        End {
            log_from: le64_at(b, 0),
            tomb_from: le64_at(b, 8),
            epoch: le64_at(b, 16),
            rows: le64_at(b, 24),
        }
    }
}

fn refuse(path: &Path, why: String) -> String {
    format!(
        "checkpoint file {} {why}: refused, the file is left as it is",
        path.display()
    )
}

/// Read the checkpoint in `dir` of the log whose header is `log` (None: there is
/// none), passing each row to `put`. Any damage is refused in one line.
pub fn read(
    st: &dyn Storage,
    dir: &Path,
    log: &Header,
    mut put: impl FnMut(&RecordRef<'_>) -> Result<(), String>,
) -> Result<Option<End>, String> {
    let path = dir.join(CKPT_FILE);
    let io = |e: std::io::Error| format!("checkpoint file {}: {e}", path.display());
    if !st.exists(&path).map_err(io)? {
        return Ok(None);
    }
    let f = st.open(&path, Open::Read).map_err(io)?;
    let mut h = [0u8; HEADER_BYTES];
    let n = f.read_full_at(&mut h, 0).map_err(io)?;
    let hd = HEADER.decode(&h[..n], &path)?;
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
        let total =
            match log::probe_block(&*f, len, at, &mut buf, &[log::BLOCK_DATA, log::BLOCK_END])
                .map_err(io)?
            {
                Ok(t) => t,
                Err(why) => return Err(refuse(&path, format!("is damaged at byte {at} ({why})"))),
            };
        let kind = log::le32_at(&buf, 20);
        let payload = &buf[BLOCK_HEADER_BYTES..total];
        if kind == log::BLOCK_END {
            let end = End::decode(payload);
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
            return Ok(Some(end));
        }
        let block = log::Block {
            offset: at,
            durable: le64_at(&buf, 8),
            kind,
            payload,
        };
        for r in block.records() {
            if !matches!(r.body, log::Body::Put(_)) {
                return Err(refuse(
                    &path,
                    format!("holds a record that is not a row at block {at}"),
                ));
            }
            if epoch_of(r.tid) > block.durable {
                return Err(refuse(
                    &path,
                    format!("holds a row above its epoch at block {at}"),
                ));
            }
            put(&r).map_err(|why| refuse(&path, format!("block at byte {at}: {why}")))?;
            rows += 1;
        }
        at += total as u64;
    }
}

/// A finished checkpoint, for the statistics.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Done {
    #[serde(flatten)]
    pub end: End,
    /// The checkpoint file's length.
    pub bytes: u64,
    pub millis: u64,
}

#[derive(Debug, Default)]
struct Progress {
    last: Option<Done>,
    /// Where the log was read from at the last checkpoint (or recovery).
    last_log_from: u64,
    /// The last checkpoint file's length.
    last_bytes: u64,
    count: u64,
    /// The log is freed (holes) up to here.
    punched_to: u64,
    /// The file system cannot punch holes: said once, the log is not shortened.
    punch_unsupported: Option<String>,
    /// The last checkpoint that failed (the next one tries again).
    last_error: Option<String>,
}

/// The checkpointer: its thread's state, shared with the engine.
pub struct Checkpointer {
    catalog: Arc<Catalog>,
    logger: Arc<Logger>,
    epochs: Arc<Epochs>,
    st: Arc<dyn Storage>,
    dir: PathBuf,
    header: Header,
    /// `MemoryOptions::checkpoint_log_bytes`.
    log_bytes: Option<u64>,
    stop: AtomicBool,
    wake: rt::Event,
    progress: Mutex<Progress>,
    /// Held by the one checkpoint being written: two would share the `.tmp` name, and
    /// one could rename the other's unfinished file.
    taking: Mutex<()>,
}

impl Checkpointer {
    /// `recovered`: the checkpoint recovery started from (and its file's length).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        catalog: Arc<Catalog>,
        logger: Arc<Logger>,
        epochs: Arc<Epochs>,
        st: Arc<dyn Storage>,
        dir: PathBuf,
        schema: u32,
        log_bytes: Option<u64>,
        recovered: Option<(End, u64)>,
    ) -> Arc<Self> {
        let header = Header {
            database_id: logger.database_id,
            schema,
        };
        let progress = Progress {
            last_log_from: recovered.map_or(HEADER_BYTES as u64, |r| r.0.log_from),
            last_bytes: recovered.map_or(0, |r| r.1),
            ..Progress::default()
        };
        Arc::new(Checkpointer {
            catalog,
            logger,
            epochs,
            st,
            dir,
            header,
            log_bytes,
            stop: AtomicBool::new(false),
            wake: rt::Event::new(),
            progress: Mutex::new(progress),
            taking: Mutex::new(()),
        })
    }

    /// Start the thread.
    pub fn start(self: &Arc<Self>) -> api::Result<std::thread::JoinHandle<()>> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("mem-ckpt".into())
            .spawn(move || {
                probe::thread_role(probe::Role::Checkpointer);
                // The lowest CPU priority: on a machine the workers fill, a checkpoint
                // takes their idle time instead of their cores (at normal priority it
                // cost TPC-C W=2/2T a quarter of its throughput on 2 cores). It still
                // finishes: the log it bounds only grows longer meanwhile.
                // SAFETY: setpriority on this thread's own id; a failure is harmless.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
                }
                me.run()
            })
            .map_err(|e| api::Error::fatal(format!("spawn checkpointer thread: {e}")))
    }

    /// Ask the thread to end (a checkpoint being written is abandoned).
    pub fn stop(&self) {
        self.stop.store(true, Release);
        self.wake.notify_all();
    }

    /// The log growth since the last checkpoint's `log_from` that starts the next one.
    fn threshold(&self, last_bytes: u64) -> u64 {
        // Default: recovery reads at most about twice the database (the checkpoint and
        // a log suffix as long) and never less than 64 MiB at a time is checkpointed.
        self.log_bytes
            .unwrap_or_else(|| DEFAULT_LOG_BYTES.max(last_bytes))
    }

    fn run(&self) {
        while !self.stop.load(Acquire) {
            self.wake
                .wait(rt::WaitKind::Other, Some(CHECK_INTERVAL), || {
                    self.stop.load(Acquire)
                });
            if self.stop.load(Acquire) || self.logger.has_failed() {
                continue;
            }
            let (from, last) = {
                let p = self.progress.lock();
                (p.last_log_from, p.last_bytes)
            };
            let bytes = self.logger.io.bytes.load(Acquire);
            if bytes.saturating_sub(from) <= self.threshold(last) {
                continue;
            }
            match self.take() {
                Ok(_) => {}
                Err(msg) => self.progress.lock().last_error = Some(msg),
            }
        }
    }

    /// Take one checkpoint now (the thread's, or a test's). `Ok(None)`: nothing to
    /// start from yet, or abandoned because the engine stops.
    pub fn take(&self) -> Result<Option<Done>, String> {
        let _one = self.taking.lock();
        let Some(cut) = self.logger.cut() else {
            return Ok(None);
        };
        assert!(
            cut.tomb_from <= cut.log_from && cut.log_from <= self.logger.io.bytes.load(Acquire),
            "a cut out of order: {cut:?}"
        );
        let t0 = Instant::now();
        let tmp = self.dir.join(CKPT_TMP);
        let path = self.dir.join(CKPT_FILE);
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
        f.write_all_at(&HEADER.encode(&self.header), 0)
            .map_err(|e| io("writing", e))?;
        let mut w = Writer {
            f: &*f,
            off: HEADER_BYTES as u64,
            block: Vec::with_capacity(BLOCK_TARGET + (64 << 10)),
            count: 0,
            durable: cut.durable,
            top: 0,
        };
        w.block.resize(BLOCK_HEADER_BYTES, 0);
        let mut rows = 0u64;
        let mut top = 0u64;
        for (ti, t) in self.catalog.tables.iter().enumerate() {
            let mut put = |key: &[u8], tid: u64, row: &[u8]| -> std::io::Result<()> {
                top = top.max(epoch_of(tid));
                rows += 1;
                log::append_put(&mut w.block, tid, ti as u32, key, row);
                w.count += 1;
                w.top = w.top.max(epoch_of(tid));
                if w.block.len() >= BLOCK_TARGET {
                    w.flush()?;
                }
                Ok(())
            };
            if !scan_table(t, &self.stop, &mut put).map_err(|e| io("writing", e))? {
                return Ok(None); // stopping: the .tmp goes at the next checkpoint
            }
        }
        // Every row read was installed by a commit of an epoch at or below the epoch
        // now; once it is durable, no row of the checkpoint can be lost by a crash.
        let epoch = self.epochs.current();
        assert!(
            top <= epoch,
            "a row of epoch {top} above the current {epoch}"
        );
        w.durable = epoch;
        w.flush().map_err(|e| io("writing", e))?;
        self.logger
            .wait_durable(epoch, &self.epochs)
            .map_err(|e| format!("checkpoint: {e}"))?;
        let end = End {
            log_from: cut.log_from,
            tomb_from: cut.tomb_from,
            epoch,
            rows,
        };
        let mut b = vec![0u8; BLOCK_HEADER_BYTES];
        b.extend_from_slice(&end.encode());
        log::seal_block(&mut b, epoch, 0, log::BLOCK_END);
        f.write_all_at(&b, w.off).map_err(|e| io("writing", e))?;
        let bytes = w.off + b.len() as u64;
        f.sync_data().map_err(|e| io("fsync", e))?;
        drop(w);
        drop(f);
        self.st.rename(&tmp, &path).map_err(|e| io("renaming", e))?;
        self.st
            .sync_dir(&self.dir)
            .map_err(|e| io("syncing the directory", e))?;
        // The checkpoint is durable: the log before `tomb_from` is never read again.
        let done = Done {
            end,
            bytes,
            millis: t0.elapsed().as_millis() as u64,
        };
        let mut p = self.progress.lock();
        p.last = Some(done);
        p.last_log_from = end.log_from;
        p.last_bytes = bytes;
        p.count += 1;
        let from = p.punched_to.max(HEADER_BYTES as u64);
        if p.punch_unsupported.is_none() && end.tomb_from > from {
            match self.logger.file.punch_hole(from, end.tomb_from - from) {
                Ok(()) => p.punched_to = end.tomb_from,
                Err(e) if storage::is_unsupported(&e) => {
                    p.punch_unsupported = Some(format!(
                        "the file system cannot punch holes ({e}): the log is not shortened"
                    ))
                }
                Err(e) => return Err(format!("checkpoint: freeing the log's prefix: {e}")),
            }
        }
        Ok(Some(done))
    }

    /// The statistics' `checkpoints` part of `log`.
    pub fn stats(&self, v: &mut serde_json::Value) {
        let p = self.progress.lock();
        v["checkpoints"] = p.count.into();
        v["last_checkpoint"] = serde_json::to_value(p.last).unwrap_or_default();
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
        self.progress.lock().count
    }
}

/// The checkpoint file being written.
struct Writer<'f> {
    f: &'f dyn File,
    off: u64,
    block: Vec<u8>,
    count: u32,
    durable: u64,
    /// The highest epoch of a row in the block being filled: rows committed while the
    /// scan runs are above `durable`, and a block states an epoch no row of it exceeds.
    top: u64,
}

impl Writer<'_> {
    fn flush(&mut self) -> std::io::Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let d = self.durable.max(self.top);
        log::seal_block(&mut self.block, d, self.count, log::BLOCK_DATA);
        self.top = 0;
        self.f.write_all_at(&self.block, self.off)?;
        self.off += self.block.len() as u64;
        self.block.truncate(BLOCK_HEADER_BYTES);
        self.count = 0;
        Ok(())
    }
}

/// Takes each row (key, TID, row) of a scan.
type RowSink<'a> = dyn FnMut(&[u8], u64, &[u8]) -> std::io::Result<()> + 'a;

/// Pass every present row of `t` (key, TID, row) to `put`, reading while
/// transactions run. `Ok(false)`: stopped.
fn scan_table(t: &TableData, stop: &AtomicBool, put: &mut RowSink<'_>) -> std::io::Result<bool> {
    let mut row = vec![0u8; t.row_size];
    // A consistent (TID, row) of a record reached from the index while pinned;
    // absent records (uncommitted inserts, deletes) are not rows.
    let mut one = |key: &[u8], v: u64| -> std::io::Result<()> {
        let tid = Rec::from_u64(v).stable_read(&mut row);
        if tid & ABSENT != 0 {
            return Ok(());
        }
        assert!(tid & FLAGS == 0, "a present row with flags {tid:#x}");
        put(key, tid, &row)
    };
    match &t.primary {
        Index::BTree(b) => {
            let mut last: Option<api::key::Key> = None;
            loop {
                if stop.load(Acquire) {
                    return Ok(false);
                }
                let _g = crossbeam_epoch::pin();
                let lo = match &last {
                    Some(k) => Bound::Excluded(k.as_bytes()),
                    None => Bound::Unbounded,
                };
                let mut n = 0usize;
                let mut next: Option<api::key::Key> = None;
                let mut err = None;
                b.scan(lo, Bound::Unbounded, true, &mut |_, _| {}, &mut |k, v| {
                    if let Err(e) = one(k, v) {
                        err = Some(e);
                        return false;
                    }
                    n += 1;
                    if n == CHUNK {
                        next = Some(api::key::Key::from_bytes(k));
                        return false;
                    }
                    true
                });
                if let Some(e) = err {
                    return Err(e);
                }
                match next {
                    Some(k) => last = Some(k),
                    None => return Ok(true),
                }
            }
        }
        Index::Hash(h) => {
            let mut vals = Vec::new();
            let mut i = 0;
            while i < h.buckets() {
                if stop.load(Acquire) {
                    return Ok(false);
                }
                let g = crossbeam_epoch::pin();
                let end = (i + CHUNK).min(h.buckets());
                for b in i..end {
                    vals.clear();
                    h.bucket_values(b, &mut vals, &g);
                    for &v in &vals {
                        // SAFETY: a keyed record (hash table), linked when the bucket
                        // was read and so allocated while `g` is pinned; its key area
                        // never changes.
                        let key = unsafe { Rec::from_u64(v).key(t.words) };
                        one(key, v)?;
                    }
                }
                i = end;
            }
            Ok(true)
        }
    }
}
