//! `checkpoint`: a new snapshot of the whole database taken at a quiescent point, so
//! that recovery reads it plus the commands after its log position, and the log's
//! prefix before that position is freed (H-Store's periodic snapshots that truncate
//! the command log).
//!
//! A checkpoint owns every partition (as a writing transaction of every partition
//! does): no transaction runs then, and every committed writer has appended its command
//! (commit appends before it lets its partitions go). It seals the appended commands
//! into a block of their own (`Logger::cut`: the log position after them), copies every
//! row into chunk buffers in memory (partitions in parallel, one thread per core) and
//! lets the partitions go: that is the pause. A thread at the lowest CPU priority then
//! writes the copy as `partitioned.snap.tmp` (`snapshot::Writer`), waits until the
//! position's commands are durable, renames it over `partitioned.snap`, advances the
//! durable mark, and punches the log before the position out.
//!
//! Must never: rename a snapshot whose commands are not durable (a crash would leave
//! a snapshot ahead of its log, refused as a cut log), free log bytes before the new
//! snapshot is durable, or run two checkpoints at once (they share the `.tmp`).

use crate::log::{LogPosition, Logger, FILE_HEADER_BYTES};
use crate::partition::Partition;
use crate::snapshot::{self, CHUNK_BYTES};
use api::{Error, Result};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use storage::Storage;

/// How often the checkpointer looks at the log's growth.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// With the default rule, a log grown by more than the larger of this and the newest
/// snapshot's size starts a checkpoint whatever its replay would cost (it bounds the
/// log's disk use; see `due`).
pub const DEFAULT_LOG_BYTES: u64 = 64 << 20;
/// The default rule lets the log's replay grow to at least this before a checkpoint,
/// however small the snapshot: a database that loads in milliseconds would otherwise
/// pause every transaction for a checkpoint every few milliseconds.
pub const MIN_REPLAY: Duration = Duration::from_secs(1);
/// The default rule lets the log's replay grow to this many times the snapshot's load
/// before a checkpoint, so a recovery takes at most about three loads. One load (the
/// first rule) checkpointed TPC-C W=2/2 threads at full speed every 4-5 s, each a copy
/// of the whole database, and cost 16-23% of its throughput (2026-11-28).
pub const REPLAY_PER_LOAD: u32 = 2;
/// A recovery replaying fewer commands, or reading a smaller snapshot, measures
/// nothing: fixed costs (opening, the first pages) would dominate the rate.
pub const MIN_MEASURED_COMMANDS: u64 = 10_000;
pub const MIN_MEASURED_SNAPSHOT: u64 = 16 << 20;

/// What recovery costs on this machine: replaying a logged command (decoding and
/// re-executing it through the workload, single-threaded) and reading a snapshot back
/// into the partitions. Measured at the last recovery of this database when it had
/// enough to measure (`measured`), else the defaults (`Costs::DEFAULT`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Costs {
    pub replay_ns_per_command: u64,
    pub snapshot_bytes_per_s: u64,
    /// Which of the two were measured (the rest are defaults).
    pub replay_measured: bool,
    pub snapshot_measured: bool,
}

impl Costs {
    /// Conservative defaults (docs/design/partitioned-engine.md, "When"): TPC-C's
    /// replay cost per command and the fastest snapshot read measured on the reference
    /// machine (2026-11-28, Xeon @ 2.50GHz, 2 cores: 30.5-31.4 µs; 50-99 MB/s), so that
    /// without a measurement the log is checkpointed sooner, not later.
    pub const DEFAULT: Costs = Costs {
        replay_ns_per_command: 30_000,
        snapshot_bytes_per_s: 100_000_000,
        replay_measured: false,
        snapshot_measured: false,
    };

    /// The defaults with the replay of `commands` that took `took` (a recovery's),
    /// if there were enough to measure.
    pub fn with_replay(mut self, commands: u64, took: Duration) -> Costs {
        if commands >= MIN_MEASURED_COMMANDS {
            self.replay_ns_per_command = (took.as_nanos() as u64 / commands).max(1);
            self.replay_measured = true;
        }
        self
    }

    /// The costs with a snapshot of `bytes` read back in `took`, if large enough.
    pub fn with_snapshot(mut self, bytes: u64, took: Duration) -> Costs {
        if bytes >= MIN_MEASURED_SNAPSHOT {
            let ns = took.as_nanos().max(1);
            self.snapshot_bytes_per_s = ((bytes as u128 * 1_000_000_000 / ns) as u64).max(1);
            self.snapshot_measured = true;
        }
        self
    }

    /// Estimated time to replay `commands`.
    pub fn replay(&self, commands: u64) -> Duration {
        Duration::from_nanos(commands.saturating_mul(self.replay_ns_per_command))
    }

    /// Estimated time to read a snapshot of `bytes` back.
    pub fn load(&self, bytes: u64) -> Duration {
        let ns = bytes as u128 * 1_000_000_000 / self.snapshot_bytes_per_s.max(1) as u128;
        Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
    }
}

/// What the log holds since the newest snapshot's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// Log bytes after the position (durable or being written).
    pub log_bytes: u64,
    /// Durable commands after the position (what a recovery now would replay).
    pub commands: u64,
    /// The newest snapshot's file length.
    pub snapshot_bytes: u64,
}

/// Whether the log has grown enough for a checkpoint. `explicit`
/// (`PartitionedOptions::checkpoint_log_bytes`): a growth above that many bytes
/// (`Some(0)`: any growth). Default: when replaying the commands since the snapshot
/// would take longer than `REPLAY_PER_LOAD` times reading the snapshot back (at least
/// `MIN_REPLAY`), so a recovery takes at most about three loads; a byte of log costs far
/// more to recover than a byte of snapshot (each command is re-executed), so a byte
/// threshold let recovery grow with the run. Also when the log grew by more than the
/// larger of `DEFAULT_LOG_BYTES` and the snapshot, whatever its replay costs: that
/// bounds its disk use.
pub fn due(explicit: Option<u64>, g: Growth, costs: &Costs) -> bool {
    if let Some(bytes) = explicit {
        return g.log_bytes > bytes;
    }
    if g.log_bytes > DEFAULT_LOG_BYTES.max(g.snapshot_bytes) {
        return true;
    }
    costs.replay(g.commands) > (costs.load(g.snapshot_bytes) * REPLAY_PER_LOAD).max(MIN_REPLAY)
}
/// The page size `punch_hole` frees whole pages of.
const PAGE: u64 = 4096;

/// A copy of the database at a log position, made while every partition was owned.
pub struct Copy {
    pub position: LogPosition,
    /// Chunk buffers (`snapshot::new_chunk` layout) and their row counts.
    chunks: Vec<(Vec<u8>, u32)>,
    pub rows: u64,
    /// How long the partitions were owned (taking them included).
    pub pause: Duration,
}

/// A checkpoint made durable.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Done {
    pub position: LogPosition,
    pub rows: u64,
    /// The snapshot file's length.
    pub bytes: u64,
    /// Partitions owned by the checkpoint (every transaction waited meanwhile).
    pub pause_us: u64,
    /// Writing the file, waiting for the log, renaming.
    pub write_ms: u64,
}

#[derive(Debug)]
struct Progress {
    last: Option<Done>,
    /// The position of the newest durable snapshot (after the load, or recovered).
    last_position: LogPosition,
    /// Its file's length.
    last_bytes: u64,
    count: u64,
    pause_us_total: u64,
    pause_us_max: u64,
    /// The log is freed (holes) up to here (a page boundary).
    punched_to: u64,
    /// The file system cannot punch holes: said once, the log is not shortened.
    punch_unsupported: Option<String>,
    /// The last checkpoint that failed (the next one tries again).
    last_error: Option<String>,
}

/// The checkpointer: its threads' shared state.
pub struct Checkpointer {
    parts: Arc<[Partition]>,
    shared: Arc<Partition>,
    logger: Arc<Logger>,
    st: Arc<dyn Storage>,
    dir: PathBuf,
    header: crate::log::FileHeader,
    tables: u32,
    /// `PartitionedOptions::checkpoint_log_bytes`.
    log_bytes: Option<u64>,
    /// What the default rule estimates recovery with.
    costs: Costs,
    stop: AtomicBool,
    wake: rt::Event,
    /// A checkpoint is being copied or written: no other starts (they share the
    /// `.tmp`, and an older one must never be renamed over a newer one).
    busy: AtomicBool,
    progress: Mutex<Progress>,
}

/// What `Checkpointer::new` needs besides the partitions and the log.
pub struct Files {
    pub st: Arc<dyn Storage>,
    pub dir: PathBuf,
    pub header: crate::log::FileHeader,
    pub tables: u32,
}

impl Checkpointer {
    /// `base`: the newest durable snapshot's position and file length.
    pub fn new(
        parts: Arc<[Partition]>,
        shared: Arc<Partition>,
        logger: Arc<Logger>,
        files: Files,
        log_bytes: Option<u64>,
        costs: Costs,
        base: (LogPosition, u64),
    ) -> Arc<Self> {
        Arc::new(Checkpointer {
            parts,
            shared,
            logger,
            st: files.st,
            dir: files.dir,
            header: files.header,
            tables: files.tables,
            log_bytes,
            costs,
            stop: AtomicBool::new(false),
            wake: rt::Event::new(),
            busy: AtomicBool::new(false),
            progress: Mutex::new(Progress {
                last: None,
                last_position: base.0,
                last_bytes: base.1,
                count: 0,
                pause_us_total: 0,
                pause_us_max: 0,
                // Not known after a recovery: the first punch frees the prefix again
                // (punching a hole is harmless).
                punched_to: 0,
                punch_unsupported: None,
                last_error: None,
            }),
        })
    }

    /// Start the threads: `part-ckpt` (normal priority) watches the log and makes the
    /// copies; `part-ckpt-write` (lowest priority) writes them.
    pub fn start(self: &Arc<Self>) -> Result<Vec<JoinHandle<()>>> {
        let (tx, rx) = mpsc::channel::<Copy>();
        let me = self.clone();
        let writer = std::thread::Builder::new()
            .name("part-ckpt-write".into())
            .spawn(move || {
                probe::thread_role(probe::Role::Checkpointer);
                // The lowest CPU priority: on a machine the workers fill, writing takes
                // their idle time instead of their cores (as the memory engine's
                // checkpointer). The copy is taken already, so this only delays the
                // freeing of the log.
                // SAFETY: setpriority on this thread's own id; a failure is harmless.
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
                }
                while let Ok(c) = rx.recv() {
                    let r = me.write(c);
                    // A failure is kept in the statistics; the next one tries again.
                    let _ = me.finished(r);
                }
            })
            .map_err(|e| Error::fatal(format!("spawn checkpoint writer thread: {e}")))?;
        let me = self.clone();
        // Normal priority: while it copies it owns every partition, and every worker
        // waits for it; at the lowest priority the pause would stretch.
        let watcher = std::thread::Builder::new()
            .name("part-ckpt".into())
            .spawn(move || me.watch(tx))
            .map_err(|e| Error::fatal(format!("spawn checkpointer thread: {e}")))?;
        Ok(vec![watcher, writer])
    }

    /// Ask the threads to end (a checkpoint being written is abandoned; its `.tmp` is
    /// removed by the next one, or by `--reload` or `drop`).
    pub fn stop(&self) {
        self.stop.store(true, Release);
        self.wake.notify_all();
    }

    /// The costs the default rule estimates recovery with.
    pub fn costs(&self) -> Costs {
        self.costs
    }

    fn watch(&self, tx: mpsc::Sender<Copy>) {
        while !self.stop.load(Acquire) {
            self.wake
                .wait(rt::WaitKind::Other, Some(CHECK_INTERVAL), || {
                    self.stop.load(Acquire)
                });
            if self.stop.load(Acquire) || self.logger.error().is_some() {
                continue;
            }
            let (from, last) = {
                let p = self.progress.lock();
                (p.last_position, p.last_bytes)
            };
            let growth = Growth {
                log_bytes: self
                    .logger
                    .io
                    .bytes
                    .load(Acquire)
                    .saturating_sub(from.offset),
                commands: self.logger.durable().saturating_sub(from.commands),
                snapshot_bytes: last,
            };
            if !due(self.log_bytes, growth, &self.costs) {
                continue;
            }
            if self
                .busy
                .compare_exchange(false, true, AcqRel, Acquire)
                .is_err()
            {
                continue; // the last one is still being written
            }
            let c = self.copy();
            if tx.send(c).is_err() {
                self.busy.store(false, Release);
                return;
            }
        }
    }

    /// Take one checkpoint now, in this thread (tests and the simulated disk, where
    /// the storage calls must not depend on thread timing). Waits for one being
    /// written. `Ok(None)`: abandoned because the engine stops.
    pub fn take(&self) -> std::result::Result<Option<Done>, String> {
        rt::wait_until(rt::WaitKind::Other, None, || {
            self.busy
                .compare_exchange(false, true, AcqRel, Acquire)
                .is_ok()
        });
        if let Some(msg) = self.logger.error() {
            self.busy.store(false, Release);
            return Err(msg);
        }
        let c = self.copy();
        let r = self.write(c);
        self.finished(r)
    }

    /// Own every partition, cut the log, copy every row, let the partitions go.
    pub fn copy(&self) -> Copy {
        // Chunk buffers for a database the size of the last snapshot, their pages
        // touched before the pause, so the pause does not fault in fresh memory
        // (TPC-C W=2: 350 MB, about 85,000 pages).
        let want = self.progress.lock().last_bytes / CHUNK_BYTES as u64 + 2;
        let pool: Mutex<Vec<Vec<u8>>> = Mutex::new(
            (0..want)
                .map(|_| {
                    let mut b = snapshot::new_chunk();
                    let cap = b.capacity();
                    b.resize(cap, 0);
                    b.truncate(snapshot::CHUNK_HEADER_BYTES);
                    b
                })
                .collect(),
        );
        let fresh = || pool.lock().pop().unwrap_or_else(snapshot::new_chunk);
        let t0 = Instant::now();
        // Ascending, as transactions take them: no deadlock with any of them.
        let owned: Vec<_> = self.parts.iter().map(|p| p.acquire()).collect();
        let position = self.logger.cut();
        let all: Vec<&Partition> = self
            .parts
            .iter()
            .chain(std::iter::once(&*self.shared))
            .collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(all.len());
        let next = AtomicUsize::new(0);
        let work = || {
            let mut mine = Vec::new();
            loop {
                let i = next.fetch_add(1, Relaxed);
                let Some(part) = all.get(i) else {
                    return mine;
                };
                // SAFETY: every partition is owned by this checkpoint, so no
                // transaction reads or writes any data, and each partition is read
                // by one copying thread only.
                copy_partition(unsafe { part.data() }, &mut mine, &fresh);
            }
        };
        let chunks: Vec<(Vec<u8>, u32)> = std::thread::scope(|sc| {
            let helpers: Vec<_> = (1..threads).map(|_| sc.spawn(work)).collect();
            let mut v = work();
            for h in helpers {
                v.extend(h.join().expect("a checkpoint copying thread panicked"));
            }
            v
        });
        drop(owned);
        let pause = t0.elapsed();
        drop(pool);
        let rows = chunks.iter().map(|c| c.1 as u64).sum();
        Copy {
            position,
            chunks,
            rows,
            pause,
        }
    }

    /// Write `c` as the new snapshot and free the log before its position.
    /// `Ok(None)`: abandoned (the engine stops).
    fn write(&self, c: Copy) -> Result<Option<Done>> {
        let t0 = Instant::now();
        let mut w = snapshot::Writer::create(&*self.st, &self.dir, &self.header, self.tables)?;
        for (mut b, rows) in c.chunks {
            if self.stop.load(Acquire) {
                return Ok(None);
            }
            w.chunk(&mut b, rows)?;
        }
        // The snapshot replaces the old one only once its commands are durable: a
        // snapshot ahead of its log would be refused after a crash as a cut log.
        self.logger.wait_durable(c.position.commands)?;
        let written = w.finish(c.position)?;
        assert_eq!(
            written.rows, c.rows,
            "a checkpoint wrote other rows than it copied"
        );
        // The mark now covers the position: an older snapshot put back in place of
        // this one would read freed (zero) bytes and end before the mark: refused.
        self.logger.io.advance_mark(true).map_err(Error::Fatal)?;
        let done = Done {
            position: c.position,
            rows: written.rows,
            bytes: written.bytes,
            pause_us: c.pause.as_micros() as u64,
            write_ms: t0.elapsed().as_millis() as u64,
        };
        let mut p = self.progress.lock();
        p.last = Some(done);
        p.last_position = c.position;
        p.last_bytes = written.bytes;
        p.count += 1;
        p.pause_us_total += done.pause_us;
        p.pause_us_max = p.pause_us_max.max(done.pause_us);
        // The snapshot is durable: the log before its position is never read again.
        let from = p.punched_to.max(FILE_HEADER_BYTES as u64);
        if p.punch_unsupported.is_none() && c.position.offset > from {
            match self.logger.file.punch_hole(from, c.position.offset - from) {
                // The page holding the position is not whole inside the range: the
                // next punch starts there.
                Ok(()) => p.punched_to = c.position.offset / PAGE * PAGE,
                Err(e) if storage::is_unsupported(&e) => {
                    p.punch_unsupported = Some(format!(
                        "the file system cannot punch holes ({e}): the log is not shortened"
                    ))
                }
                Err(e) => {
                    return Err(Error::fatal(format!(
                        "checkpoint: freeing the log's prefix in {}: {e}",
                        self.logger.path.display()
                    )))
                }
            }
        }
        Ok(Some(done))
    }

    /// A checkpoint ended: record a failure (the next one tries again), let the next
    /// one start.
    fn finished(&self, r: Result<Option<Done>>) -> std::result::Result<Option<Done>, String> {
        let r = r.map_err(|e| e.to_string());
        if let Err(msg) = &r {
            self.progress.lock().last_error = Some(msg.clone());
        }
        self.busy.store(false, Release);
        r
    }

    /// Checkpoints made durable so far.
    pub fn count(&self) -> u64 {
        self.progress.lock().count
    }

    /// The newest durable checkpoint.
    pub fn last(&self) -> Option<Done> {
        self.progress.lock().last
    }

    /// The statistics' checkpoint fields of `log`.
    pub fn stats(&self, v: &mut serde_json::Value) {
        let p = self.progress.lock();
        v["checkpoints"] = p.count.into();
        v["checkpoint_rule"] = match self.log_bytes {
            Some(b) => serde_json::json!({ "log_bytes": b }),
            None => serde_json::to_value(self.costs).unwrap_or_default(),
        };
        v["last_checkpoint"] = serde_json::to_value(p.last).unwrap_or_default();
        v["checkpoint_pause_us_total"] = p.pause_us_total.into();
        v["checkpoint_pause_us_max"] = p.pause_us_max.into();
        v["log_freed_to"] = p.punched_to.into();
        if let Some(m) = &p.punch_unsupported {
            v["punch_hole"] = m.clone().into();
        }
        if let Some(m) = &p.last_error {
            v["checkpoint_error"] = m.clone().into();
        }
    }
}

/// Every row of one partition's tables into chunk buffers.
fn copy_partition(
    data: &crate::catalog::Tables,
    out: &mut Vec<(Vec<u8>, u32)>,
    fresh: &dyn Fn() -> Vec<u8>,
) {
    let mut cur = fresh();
    let mut n = 0u32;
    for (t, table) in data.tables.iter().enumerate() {
        table.primary.for_each(&mut |k, r| {
            snapshot::put_row(&mut cur, t as u32, k, r);
            n += 1;
            if cur.len() >= CHUNK_BYTES {
                out.push((std::mem::replace(&mut cur, fresh()), n));
                n = 0;
            }
        });
    }
    if n > 0 {
        out.push((cur, n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;
    /// 10 µs a command, 100 MB/s: a 300 MB snapshot loads in 3 s.
    const C: Costs = Costs {
        replay_ns_per_command: 10_000,
        snapshot_bytes_per_s: 100_000_000,
        replay_measured: true,
        snapshot_measured: true,
    };

    fn g(log_bytes: u64, commands: u64, snapshot_bytes: u64) -> Growth {
        Growth {
            log_bytes,
            commands,
            snapshot_bytes,
        }
    }

    #[test]
    fn the_default_rule_checkpoints_when_replay_would_outlast_the_snapshots_load() {
        // 3 s of load, 6 s of replay allowed: 599,999 commands replay in 5.99999 s,
        // 600,001 in 6.00001 s.
        assert!(!due(None, g(20 * MB, 599_999, 300_000_000), &C));
        assert!(due(None, g(20 * MB, 600_001, 300_000_000), &C));
        // The case: TPC-C at 5000 txn/s grew the log ~20 MB a minute; a
        // snapshot of 350 MB made the byte rule wait 17 minutes. By cost: 3.67 s of
        // load allows 7.34 s of replay, 734,003 commands of 10 µs, about 150 s of that run.
        assert!(!due(None, g(40 * MB, 730_000, 350 << 20), &C));
        assert!(due(None, g(50 * MB, 740_000, 350 << 20), &C));
    }

    #[test]
    fn a_small_snapshot_waits_for_the_minimum_replay() {
        // 1 MB loads in 10 ms, but nothing is checkpointed below 1 s of replay.
        assert!(!due(None, g(MB, 100_000, MB), &C));
        assert!(due(None, g(MB, 100_001, MB), &C));
    }

    #[test]
    fn the_log_is_checkpointed_at_the_byte_bound_whatever_its_replay() {
        // Cheap commands (10 ns): 64 MiB of log replays in a blink, but the log's disk
        // use is bounded by the larger of 64 MiB and the snapshot.
        let cheap = Costs {
            replay_ns_per_command: 10,
            ..C
        };
        assert!(!due(None, g(64 * MB, 1_000_000, 10 * MB), &cheap));
        assert!(due(None, g(64 * MB + 1, 1_000_000, 10 * MB), &cheap));
        assert!(!due(None, g(200 * MB, 1_000_000, 200 * MB), &cheap));
        assert!(due(None, g(200 * MB + 1, 1_000_000, 200 * MB), &cheap));
    }

    #[test]
    fn an_explicit_byte_threshold_overrides_the_cost_rule() {
        // Far past the cost rule, below the bytes: not due; above them: due.
        assert!(!due(Some(100 * MB), g(50 * MB, 10_000_000, MB), &C));
        assert!(due(Some(MB), g(MB + 1, 1, 300 * MB), &C));
        // Some(0): whenever the log grew.
        assert!(!due(Some(0), g(0, 0, MB), &C));
        assert!(due(Some(0), g(1, 0, MB), &C));
    }

    #[test]
    fn costs_are_measured_only_from_enough_work() {
        let d = Costs::DEFAULT;
        // Too few commands, too small a snapshot: the defaults stay.
        assert_eq!(d.with_replay(9_999, Duration::from_secs(9)), d);
        assert_eq!(d.with_snapshot(MB, Duration::from_secs(9)), d);
        let m = d
            .with_replay(20_000, Duration::from_millis(300))
            .with_snapshot(200_000_000, Duration::from_secs(4));
        assert_eq!(m.replay_ns_per_command, 15_000);
        assert_eq!(m.snapshot_bytes_per_s, 50_000_000);
        assert!(m.replay_measured && m.snapshot_measured);
        assert_eq!(m.replay(1000), Duration::from_millis(15));
        assert_eq!(m.load(100_000_000), Duration::from_secs(2));
    }
}
