//! `valuelog::logger`: the group-commit flusher of the value logs (`memory`, `mvcc`),
//! once. Committing workers append their records to their own buffer
//! (`logfile::WorkerBuffers`) under an announcement in their in-flight slot
//! (`Logger::commit_start`); the flusher thread reads the engine's clock (`LogClock`:
//! an epoch or a commit timestamp), waits for every commit in flight whose stamp is not
//! above the durable counter `D` it is about to state, drains all buffers into one
//! checksummed block stating `D`, writes and fsyncs it, and publishes `D`
//! (`logfile::Watermark`). A recovered log's first write is its restart block.
//!
//! Must never: hold a worker's buffer lock while writing the file, or publish a counter
//! durable before a block stating it (or a later one) is fsync'd: a block's durable
//! counter `D` promises that every record of a counter `<= D` is in it or before it.

use super::BLOCK_RESTART;
use super::{BlockFormat, Cut, CutTracker, RecordFormat, BLOCK_DATA, BLOCK_HEADER_BYTES};
use crate::logdir::LogTail;
use crate::logfile::{io_failure, BlockWriter, Restart, Watermark, WorkerBuffers, HEADER_BYTES};
use crate::File;
use crossbeam_utils::CachePadded;
use parking_lot::MutexGuard;
use std::path::PathBuf;
use std::sync::atomic::{fence, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the flusher drains buffers when no commit asks sooner.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(10);

/// What an engine's log counts in, and how its flusher learns how far it may go.
pub trait LogClock: Send + Sync + 'static {
    /// The flusher thread's name.
    const THREAD: &'static str;
    /// The records this log holds (their counter is what the clock counts).
    const RECORDS: RecordFormat;
    /// The blocks this log is made of.
    const BLOCKS: BlockFormat;
    /// The durable counter a block written now may state: every commit announced after
    /// this read takes a counter above it (the flusher then waits for those announced
    /// before). `stopping`: the last round, which must cover every commit made so far.
    fn durable_now(&self, stopping: bool) -> u64;
    /// A counter every commit made so far is at or below (a checkpoint that read rows
    /// before this call is safe once it is durable).
    fn now(&self) -> u64;
    /// Ask for counter `c` to become durable soon (the memory engine closes its epoch).
    fn hurry(&self, _c: u64) {}
}

/// `Logger::inflight` of a worker that announced a commit but has no counter yet.
const COMMITTING: u64 = u64::MAX;

/// A commit in flight (see `Logger::commit_start`); dropping it ends it.
pub struct InFlight<'a>(&'a AtomicU64);

impl InFlight<'_> {
    /// The counter the commit took (its epoch or commit timestamp).
    #[inline]
    pub fn set(&self, c: u64) {
        // Set once, between `commit_start` and the drop; 0 and `COMMITTING` mean "none".
        debug_assert_eq!(
            self.0.load(Relaxed),
            COMMITTING,
            "the counter of a commit set twice"
        );
        assert!(c != 0 && c != COMMITTING, "commit counter {c} out of range");
        self.0.store(c, SeqCst);
    }
}

impl Drop for InFlight<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the appends made under it are in the buffer before the flusher sees 0.
        self.0.store(0, Release);
    }
}

pub struct Logger<C: LogClock> {
    /// Per-worker buffers, bounded by `logfile::BUFFER_LIMIT`.
    bufs: WorkerBuffers,
    /// Per worker: 0, [`COMMITTING`] (announced, no counter yet), or the counter of the
    /// commit it is validating, installing and appending now.
    inflight: Box<[CachePadded<AtomicU64>]>,
    /// The durable counter.
    mark: Watermark,
    clock: C,
    pub path: PathBuf,
    pub database_id: u64,
    /// What has been written: bytes, blocks, fsyncs.
    pub io: BlockWriter,
    /// The log file (the checkpointer frees its prefix, `File::punch_hole`).
    pub file: Arc<dyn File>,
    /// Where a checkpoint taken now would start its log (`Cut`), after the last block.
    cut: parking_lot::Mutex<Option<Cut>>,
}

impl<C: LogClock> Logger<C> {
    /// Start the flusher thread appending to `tail`.
    pub fn start(
        tail: LogTail,
        workers: usize,
        clock: C,
    ) -> Result<(Arc<Self>, JoinHandle<()>), String> {
        let lg = Arc::new(Logger {
            bufs: WorkerBuffers::new(workers),
            inflight: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            mark: Watermark::new(tail.durable),
            clock,
            path: tail.path.clone(),
            database_id: tail.database_id,
            io: BlockWriter::new(tail.offset),
            file: tail.file.clone(),
            cut: parking_lot::Mutex::new(None),
        });
        let me = lg.clone();
        let h = std::thread::Builder::new()
            .name(C::THREAD.into())
            .spawn(move || {
                probe::thread_role(probe::Role::LogFlusher);
                me.run(tail)
            })
            .map_err(|e| format!("spawn logger thread: {e}"))?;
        Ok((lg, h))
    }

    /// A worker's buffer, locked only while a commit appends its records (all of them
    /// at once, so a transaction's records never straddle two blocks); the flusher
    /// takes it briefly to drain it, so a worker waits through `rt`.
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
    pub fn wait_drained(&self, worker: usize, seen: u64) -> Result<(), String> {
        self.bufs.wait_drained(worker, seen, &self.mark)
    }

    /// Whether the flusher has taken `worker`'s buffer since its drain count was `seen`.
    pub fn drained_since(&self, worker: usize, seen: u64) -> bool {
        self.bufs.drained_since(worker, seen)
    }

    /// Announce a commit of `worker` before it takes its counter. Until the returned
    /// guard is dropped (after the commit's last append, or its abort) the flusher does
    /// not state a durable counter at or above the commit's. SeqCst, paired with the
    /// flusher's fence between its clock read and its look at the slots: either the
    /// flusher sees the commit in flight, or the commit's counter is above the durable
    /// counter the flusher is about to state.
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

    /// The engine's clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Every commit with a counter at or below this is in the file, fsync'd.
    pub fn durable(&self) -> u64 {
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

    /// Wait (through `rt`) until counter `c` is durable, asking for a flush now.
    pub fn wait_durable(&self, c: u64) -> Result<(), String> {
        if self.mark.durable() >= c {
            return Ok(());
        }
        self.clock.hurry(c);
        self.mark.wait_durable(c)
    }

    /// Ask the flusher for a round now.
    pub fn request_flush(&self) {
        self.mark.request_flush();
    }

    /// Ask the thread to flush everything and stop.
    pub fn stop(&self) {
        self.mark.stop();
    }

    fn fail(&self, msg: String) {
        self.mark.fail(msg);
    }

    /// A recovered log's first write: its unmarked tail made durable and a torn tail cut
    /// (`Restart::prepare`), then a restart block (records above `durable` written
    /// before it are void).
    fn restart(&self, file: &dyn File, offset: &mut u64, r: Restart, durable: u64) -> bool {
        assert!(
            *offset >= HEADER_BYTES as u64,
            "a restart block inside the file header"
        );
        if let Err(msg) = r.prepare(file, *offset, &self.path) {
            self.fail(msg);
            return false;
        }
        let mut b = [0u8; BLOCK_HEADER_BYTES];
        C::BLOCKS.seal(&mut b, durable, 0, BLOCK_RESTART);
        if let Err(err) = file.write_all_at(&b, *offset) {
            self.fail(io_failure("writing the restart block", &self.path, &err));
            return false;
        }
        *offset += b.len() as u64;
        true
    }

    /// Wait until no commit announced before the fence (SeqCst, after the clock was
    /// read) could still append a record of a counter `<= d`: each slot is empty, or
    /// holds a counter above `d`. (Between taking its counter and its last append a
    /// commit waits for nothing the flusher holds.)
    fn wait_for_commits_up_to(&self, d: u64) {
        fence(SeqCst);
        for f in self.inflight.iter() {
            rt::wait_until(rt::WaitKind::Latch, None, || {
                let p = f.load(SeqCst);
                p == 0 || (p != COMMITTING && p > d)
            });
        }
    }

    fn run(&self, tail: LogTail) {
        let LogTail {
            file,
            mut offset,
            durable: mut last_d,
            mut restart,
            ..
        } = tail;
        let counter = C::RECORDS.counter;
        let mut spare: Vec<Vec<u8>> = (0..self.bufs.workers()).map(|_| Vec::new()).collect();
        let mut block: Vec<u8> = Vec::with_capacity(1 << 20);
        // Highest counter of any record written so far; while it is above the durable
        // counter of the last block written, a later block must state a higher one.
        let mut max_rec = last_d;
        // Where `Cut::tomb_from` is found. Before this run's first block every valid
        // record has a counter `<= last_d` (later ones are void: restart block).
        let mut cuts = CutTracker::new(last_d, offset);
        loop {
            let stopping = self.mark.next_round(FLUSH_INTERVAL);
            let d = self.clock.durable_now(stopping);
            // The durable counter stated by consecutive blocks never goes back.
            assert!(
                d >= last_d,
                "the {counter} {d} is below the durable {counter} {last_d}"
            );
            self.wait_for_commits_up_to(d);
            block.clear();
            block.resize(BLOCK_HEADER_BYTES, 0);
            self.bufs
                .drain(&mut spare, &self.mark, |b| block.extend_from_slice(b));
            let payload = block.len() - BLOCK_HEADER_BYTES;
            // Records of counters above `d` may be in the block too (a record may
            // carry a counter above the durable counter of the block holding it).
            let (count, top) = C::RECORDS.scan(&block[BLOCK_HEADER_BYTES..]);
            debug_assert!(payload == 0 || count > 0, "a payload without records");
            max_rec = max_rec.max(top);
            // A block without records only states a durable counter that covers
            // records already written above the last stated one.
            if payload > 0 || (d > last_d && max_rec > last_d) {
                if let Some(r) = restart.take() {
                    if !self.restart(&*file, &mut offset, r, last_d) {
                        return;
                    }
                }
                C::BLOCKS.seal(&mut block, d, count, BLOCK_DATA);
                if let Err(msg) = self
                    .io
                    .write_durably(&*file, &mut offset, &block, &self.path)
                {
                    self.fail(msg);
                    return;
                }
                last_d = d;
                *self.cut.lock() = Some(cuts.block_written(max_rec, offset, d));
            }
            self.mark.publish(d);
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
