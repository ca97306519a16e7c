//! The run loop: load, warm up, measure, check, report.

use crate::interrupt;
use crate::machine;
use crate::memwatch::{self, Verdict};
use crate::observe::{Observer, ThreadObserver};
use crate::pick;
use crate::report::Rate;
use crate::report::{
    Checks, Latency, Report, Second, SecondTxn, Stopped, TxnTypeReport, WaitReport,
};
use api::{Database, Engine, EngineOptions, Error, OpenFn, Session};
use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use workloads::{RunInfo, Workload};

/// When the measured phase ends.
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// After this many seconds.
    Seconds(f64),
    /// After this many measured transactions in total (committed or user-aborted), split
    /// evenly over the workers, after the warm-up seconds.
    Txns(u64),
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub engine: EngineOptions,
    pub threads: usize,
    pub warmup_s: f64,
    pub stop: Stop,
    pub seed: u64,
    /// Pin worker `i` to core `i % cores`.
    pub pin: bool,
    /// Skip loading (the engine opened an existing database).
    pub no_load: bool,
    /// Show progress bars and a live line per second (only on a terminal).
    pub interactive: bool,
    /// Turn the tracer on for the measured phase (`oltpscope simulate`).
    pub trace_measured: bool,
    /// Append one line per acknowledged commit (the workload's tag) to this file.
    pub acked_file: Option<PathBuf>,
    /// Run the workload's consistency check after the run.
    pub check: bool,
    /// Write the per-second lines to this file (whether or not output is a terminal).
    pub progress_file: Option<PathBuf>,
    /// Record the per-second time series (counts, latency percentiles per type, CPU) into
    /// the report: costs each worker one relaxed load and one histogram record per txn.
    pub timeseries: bool,
    /// Open loop: transactions arrive at this rate instead of back to back.
    pub rate: Option<Rate>,
    /// Transactions each worker thread runs at once, as coroutines (`rt::coro`) that
    /// switch whenever one would wait. 1: no coroutine at all (plain loop).
    pub coroutines: usize,
    /// With coroutines: let this seed pick the coroutine to run at every wait and
    /// operation entry (`rt::coro::Policy::Seeded`, tests) instead of switching only on
    /// waits, in turn.
    pub coroutine_seed: Option<u64>,
    /// With coroutines: run them under STEPS with teams of at most this many
    /// (`rt::coro::Policy::Steps`); takes precedence over `coroutine_seed`.
    pub steps_team: Option<usize>,
    /// With coroutines: also switch at index probes that prefetched a line
    /// (`rt::coro::Policy::Interleave`, `--interleave N`), not only on waits.
    pub interleave: bool,
    /// With `interleave`: probe points whose prefetches are held back and issued
    /// together (`--interleave-group`; 1: each at once).
    pub interleave_group: usize,
    /// Per-transaction statistics (`--stats`): arm each worker's `txnstats` counters,
    /// take them after every attempt, and census the tables after the load.
    pub stats: bool,
}

impl RunConfig {
    /// The probes grouped per flush with `ncoro` coroutines per thread (1 without
    /// interleaving; the scheduler groups at most as many as there are coroutines).
    pub fn interleave_group_in_use(&self, ncoro: usize) -> usize {
        if self.interleave && ncoro > 1 {
            self.interleave_group.clamp(1, ncoro)
        } else {
            1
        }
    }
}

/// What a run may use beyond its configuration (`run_limited`).
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// `--mem-limit`: the process's resident bytes allowed (the cgroup's limit and the
    /// machine's available memory apply whether or not it is given; see `memwatch`).
    pub mem_limit: Option<u64>,
}

/// When one worker's transactions are due in an open-loop run. Latency then counts from
/// the due time, so a backlog shows in it (no coordinated omission).
struct Pacer {
    gap_s: f64,
    poisson: bool,
    rng: workloads::util::KitRng,
    next: Instant,
}

impl Pacer {
    fn new(rate: &Rate, threads: usize, worker: usize, seed: u64) -> Self {
        Pacer {
            gap_s: threads as f64 / rate.tps,
            poisson: rate.poisson,
            rng: workloads::util::rng_for(seed, 0x0A77_1000 + worker as u64),
            next: Instant::now(),
        }
    }

    /// Wait until the next transaction is due; how late it starts, or None if `stop`
    /// said so while waiting.
    fn wait(&mut self, stop: impl Fn() -> bool) -> Option<Duration> {
        use rand::RngCore;
        let due = self.next;
        let gap = if self.poisson {
            // U in (0, 1): -ln U is exponential with mean 1.
            let u = ((self.rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            -u.ln() * self.gap_s
        } else {
            self.gap_s
        };
        self.next += Duration::from_secs_f64(gap);
        loop {
            let now = Instant::now();
            if now >= due {
                return Some(now - due);
            }
            if stop() {
                return None;
            }
            // Sleep (in short naps, so the end of the run is noticed within 20 ms) until
            // shortly before it is due, then yield: a sleep's wake-up is too late to time
            // microsecond transactions from.
            let left = due - now;
            if left > Duration::from_micros(200) {
                std::thread::sleep(
                    (left - Duration::from_micros(200)).min(Duration::from_millis(20)),
                );
            } else {
                std::thread::yield_now();
            }
        }
    }
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Per-worker counters other threads read for the live line (each kept on its own cache
/// line by `CachePadded`).
#[derive(Default)]
struct Live {
    committed: AtomicU64,
    aborted: AtomicU64,
}

struct WorkerResult {
    committed: Vec<u64>,
    aborted: Vec<u64>,
    user_aborts: Vec<u64>,
    /// Committed since the run started, warm-up included (for the consistency check).
    committed_all: Vec<u64>,
    hist: Vec<Histogram<u64>>,
    /// CPU time this worker's thread used during the measured phase (None: no clock).
    cpu: Option<Duration>,
    /// Wall time over which `cpu` was taken (from the thread's first look at the
    /// measured phase to its end): the share on CPU is `cpu / wall`, never the main
    /// thread's interval, which starts and ends at other moments than the worker's.
    wall: Duration,
    /// This worker's thread's waits during the measured phase (`rt`).
    waits: rt::WaitStats,
    /// Coroutine switches during the whole run (0 without coroutines), and those made at
    /// index probes (`--interleave`).
    switches: u64,
    probe_switches: u64,
    /// Inputs started before older ones of their stream, and waits for conflict classes,
    /// during the whole run (`pick`; 0 unless keyed).
    reordered: u64,
    held: u64,
    /// When this worker stopped (with --txns, the measured interval ends at the last).
    ended: Option<Instant>,
    /// The workload's counters of this worker's measured commits.
    counters: Vec<(&'static str, u64)>,
    /// STEPS team statistics of the thread (whole run).
    steps: Option<rt::coro::StepsStats>,
    /// `--stats`: the measured attempts' counts per transaction type.
    stats: Vec<crate::stats::Sums>,
}

impl WorkerResult {
    fn new(ntypes: usize) -> Self {
        WorkerResult {
            committed: vec![0; ntypes],
            aborted: vec![0; ntypes],
            user_aborts: vec![0; ntypes],
            committed_all: vec![0; ntypes],
            hist: (0..ntypes).map(|_| new_hist()).collect(),
            cpu: None,
            wall: Duration::ZERO,
            waits: rt::WaitStats::default(),
            switches: 0,
            probe_switches: 0,
            reordered: 0,
            held: 0,
            ended: None,
            counters: Vec::new(),
            steps: None,
            stats: vec![crate::stats::Sums::default(); ntypes],
        }
    }

    /// Fold in the counts of another transaction stream of the same thread.
    fn merge(&mut self, o: &WorkerResult) {
        for t in 0..self.committed.len() {
            self.committed[t] += o.committed[t];
            self.aborted[t] += o.aborted[t];
            self.user_aborts[t] += o.user_aborts[t];
            self.committed_all[t] += o.committed_all[t];
            self.stats[t].add(&o.stats[t]);
            self.hist[t]
                .add(&o.hist[t])
                .expect("histograms of the same precision add");
        }
        self.ended = self.ended.max(o.ended);
        self.reordered += o.reordered;
        self.held += o.held;
        for &(name, n) in &o.counters {
            match self.counters.iter_mut().find(|(k, _)| *k == name) {
                Some((_, v)) => *v += n,
                None => self.counters.push((name, n)),
            }
        }
    }
}

/// What one worker thread's transaction streams share (one stream without coroutines,
/// `coroutines` of them with).
struct Shared<'a, W: Workload> {
    wl: &'a W,
    phase: &'a AtomicU8,
    live: &'a Live,
    fatal: &'a Mutex<Option<Error>>,
    acked: &'a Option<Mutex<std::fs::File>>,
    clock: LatencyClock,
    /// The measured latencies per type, one set for all the thread's streams (moved into
    /// the thread's result at its end): with a set per coroutine, `--interleave 8` kept
    /// eight sets' touched buckets in cache beside the index, and the bucket's count
    /// missed (3-4% of a B+tree point read's time, issue 40).
    hist: std::cell::RefCell<Vec<Histogram<u64>>>,
    /// Open-loop arrivals, split over the streams (`--rate`; never with coroutines).
    rate: Option<Rate>,
    streams: usize,
    seed: u64,
    /// The thread's CPU time, waits and the time when it first saw the measured phase.
    at_measure: Cell<Option<(Option<Duration>, rt::WaitStats, Instant)>>,
    /// The time series (`timeseries`): the second the run is in, this thread's current
    /// interval (shared by its coroutines) and where finished intervals go.
    second: &'a AtomicU64,
    iv: std::cell::RefCell<Option<Interval>>,
    series_tx: Option<mpsc::Sender<Interval>>,
    worker: usize,
    ntypes: usize,
    /// `oltpscope profile`: the observer, and this thread's part once it measures.
    obs: Option<&'a dyn Observer>,
    thread_obs: std::cell::RefCell<Option<Box<dyn ThreadObserver>>>,
    /// `--stats`: take the thread's `txnstats` counts after every attempt.
    stats: bool,
    /// `--interleave`: the conflict classes this thread's coroutines have in flight (a
    /// stream starts no transaction whose classes meet them, see `pick`).
    in_flight: Option<pick::InFlight>,
}

impl<W: Workload> Shared<'_, W> {
    /// Run transactions on `s` until the run stops or `quota` is done.
    fn stream(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        st: &mut W::WorkerState,
        quota: Option<u64>,
        salt: u64,
        r: &mut WorkerResult,
    ) {
        let (wl, phase, clock) = (self.wl, self.phase, &self.clock);
        let mut done = 0u64;
        let mut backoff = rt::Backoff::new(salt);
        let mut pacer = self
            .rate
            .map(|r| Pacer::new(&r, self.streams, salt as usize, self.seed));
        let stop = || phase.load(Ordering::Relaxed) == STOP;
        // A command-logging engine gets each transaction's encoded inputs (reused buffer).
        let log_commands = s.wants_commands();
        let mut cmd: Vec<u8> = Vec::new();
        let mut ahead = self
            .in_flight
            .as_ref()
            .map(|fl| pick::Lookahead::new(fl.stream_id()));
        loop {
            let ph = phase.load(Ordering::Relaxed);
            // A stream may have to wait for its turn (`Workload::wait_turn`).
            if ph == STOP || quota.is_some_and(|q| done >= q) || !wl.wait_turn(st, &stop) {
                break;
            }
            self.observe_phase(ph);
            let late = match pacer.as_mut() {
                None => Duration::ZERO,
                Some(p) => match p.wait(stop) {
                    Some(l) => l,
                    None => break,
                },
            };
            let Some(pick::Drawn {
                ty,
                input,
                conflicts,
            }) = self.next_input(ahead.as_mut(), st, r)
            else {
                break;
            };
            // A terminal's keying time (before) and think time (after).
            let pause = wl.pauses(st, ty);
            if let Some((keying, _)) = pause {
                if !nap(keying, stop) {
                    self.release(conflicts);
                    break;
                }
            }
            let t = ty as usize;
            let t0 = clock.now();
            backoff.reset();
            // Conflicts counted from the stop on: a transaction starved during the run
            // (one branch, a slow engine, a loaded machine) gets its own 1,000 retries
            // once the other workers have quit, not none.
            let mut tries_at_stop = None;
            let outcome = loop {
                let attempt = s.run(ty, |s| {
                    wl.execute(s, st, &input)?;
                    if log_commands {
                        // After the body: the command records what the body took.
                        cmd.clear();
                        wl.encode_input(st, &input, &mut cmd);
                        s.command(ty, &cmd);
                    }
                    Ok(())
                });
                self.count_attempt(ph, ty, &attempt, r);
                match attempt {
                    Err(Error::Conflict(_)) => {
                        self.count_conflict(ph, t, r);
                        backoff.wait();
                        let at_stop = (phase.load(Ordering::Relaxed) == STOP)
                            .then(|| *tries_at_stop.get_or_insert(backoff.tries()));
                        if at_stop.is_some_and(|t| backoff.tries() - t > 1000) {
                            break Err(Error::fatal("a transaction kept conflicting for 1000 retries at the end of the run"));
                        }
                    }
                    other => break other,
                }
            };
            self.release(conflicts);
            let ns = clock.nanos(t0, clock.now()) + late.as_nanos() as u64;
            // --txns counts measured transactions only (warm-up ones are extra).
            if ph == MEASURE {
                done += 1;
            }
            match outcome {
                Ok(()) => self.record_commit(st, &input, ph == MEASURE, t, ns, r),
                Err(Error::UserAbort) => {
                    if ph == MEASURE {
                        r.user_aborts[t] += 1;
                        self.hist.borrow_mut()[t].saturating_record(ns.max(1));
                    }
                    if let Some(cur) = self.iv.borrow_mut().as_mut() {
                        cur.user_aborts[t] += 1;
                        cur.hist[t].saturating_record(ns.max(1));
                    }
                }
                Err(e) => {
                    let mut f = self.fatal.lock().unwrap();
                    if f.is_none() {
                        *f = Some(e);
                    }
                    phase.store(STOP, Ordering::Relaxed);
                    break;
                }
            }
            if let Some((_, think)) = pause {
                if !nap(think, stop) {
                    break;
                }
            }
        }
        r.ended = Some(Instant::now());
        r.counters = wl.counters(st);
    }

    /// An attempt of type `t` aborted on a conflict: counted in the measured phase's
    /// result, the current interval and the live counters.
    fn count_conflict(&self, ph: u8, t: usize, r: &mut WorkerResult) {
        if ph == MEASURE {
            r.aborted[t] += 1;
        }
        if let Some(cur) = self.iv.borrow_mut().as_mut() {
            cur.aborted[t] += 1;
        }
        let me = self.live;
        me.aborted
            .store(me.aborted.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The stream's next input: drawn, or under conflict classes picked (`pick_input`,
    /// its classes then in flight until `release`). `None`: the run stopped meanwhile.
    #[inline]
    fn next_input(
        &self,
        ahead: Option<&mut pick::Lookahead<W::Input>>,
        st: &mut W::WorkerState,
        r: &mut WorkerResult,
    ) -> Option<pick::Drawn<W::Input>> {
        match ahead {
            None => {
                let (ty, input) = self.wl.next(st);
                Some(pick::Drawn {
                    ty,
                    input,
                    conflicts: workloads::Conflicts::NONE,
                })
            }
            Some(la) => {
                let drawn = la.draw_keyless(|| {
                    let (ty, input) = self.wl.next(st);
                    let conflicts = self.wl.conflicts(&input);
                    pick::Drawn {
                        ty,
                        input,
                        conflicts,
                    }
                });
                match drawn {
                    Some(d) => Some(d),
                    None => self.pick_input(la, st, r),
                }
            }
        }
    }

    /// A picked input's transaction is over: its conflict classes no longer in flight.
    #[inline]
    fn release(&self, conflicts: workloads::Conflicts) {
        if let Some(fl) = self.in_flight.as_ref() {
            fl.leave(conflicts);
        }
    }

    /// The next input of a stream with conflict classes (`pick`): the oldest drawn none
    /// of whose classes another coroutine of the thread has in flight or a stream
    /// waiting before this one claims, its classes then entered; waits (other
    /// coroutines run), in line for its oldest input's classes, while every
    /// candidate's are taken. `None`: the run stopped meanwhile.
    fn pick_input(
        &self,
        la: &mut pick::Lookahead<W::Input>,
        st: &mut W::WorkerState,
        r: &mut WorkerResult,
    ) -> Option<pick::Drawn<W::Input>> {
        let fl = self.in_flight.as_ref().expect("a keyed stream");
        let stop = || self.phase.load(Ordering::Relaxed) == STOP;
        loop {
            let draw = || {
                let (ty, input) = self.wl.next(st);
                let conflicts = self.wl.conflicts(&input);
                pick::Drawn {
                    ty,
                    input,
                    conflicts,
                }
            };
            let id = la.id;
            match la.pick(draw, |c| fl.busy(id, c)) {
                pick::Pick::Start { drawn, reordered } => {
                    r.reordered += u64::from(reordered);
                    fl.enter(id, drawn.conflicts);
                    return Some(drawn);
                }
                pick::Pick::Hold(c) => {
                    r.held += 1;
                    fl.wait_for(id, c);
                    rt::wait_until(rt::WaitKind::Other, None, || !fl.busy(id, c) || stop());
                    if stop() {
                        fl.unqueue(id);
                        return None;
                    }
                }
            }
        }
    }

    /// Before each transaction: the thread's first look at the measured phase (its CPU
    /// time, waits and observer start), and the time series' interval closed when the
    /// run's second changed.
    #[inline]
    fn observe_phase(&self, ph: u8) {
        if ph == MEASURE && self.at_measure.get().is_none() {
            self.at_measure
                .set(Some((thread_cpu(), rt::thread_stats(), Instant::now())));
            if let Some(o) = self.obs {
                *self.thread_obs.borrow_mut() = Some(o.thread_start());
            }
        }
        if let (Some(cur), Some(tx)) = (self.iv.borrow_mut().as_mut(), self.series_tx.as_ref()) {
            let now_s = self.second.load(Ordering::Relaxed);
            if now_s != cur.second {
                let old = std::mem::replace(cur, Interval::new(self.worker, now_s, self.ntypes));
                // The receiver outlives the workers: a send cannot fail.
                let _ = tx.send(old.close());
            }
        }
    }

    /// After each attempt: the observer's end of transaction and, with `--stats`, the
    /// attempt's counts.
    #[inline]
    fn count_attempt(&self, ph: u8, ty: u32, attempt: &Result<(), Error>, r: &mut WorkerResult) {
        if self.obs.is_some() {
            if let Some(o) = self.thread_obs.borrow_mut().as_mut() {
                o.txn_end(ty);
            }
        }
        if self.stats {
            // Every attempt's counts are taken (warm-up ones dropped); a measured
            // attempt that aborted is kept apart from the commits.
            let c = txnstats::take();
            if ph == MEASURE {
                let s = &mut r.stats[ty as usize];
                match attempt {
                    Ok(()) => s.committed.add(&c),
                    Err(Error::Conflict(_)) | Err(Error::UserAbort) => {
                        s.aborted.add(&c);
                        s.aborted_attempts += 1;
                    }
                    Err(_) => {}
                }
            }
        }
    }

    /// A commit of type `t` that took `ns` counted (in the results when `measured`, in
    /// the current second, in the live counts) and acknowledged (`--acked-file`; a
    /// failed write stops the run with a fatal error).
    #[inline]
    fn record_commit(
        &self,
        st: &mut W::WorkerState,
        input: &W::Input,
        measured: bool,
        t: usize,
        ns: u64,
        r: &mut WorkerResult,
    ) {
        let me = self.live;
        self.wl.committed(st, input, measured);
        r.committed_all[t] += 1;
        if measured {
            r.committed[t] += 1;
            self.hist.borrow_mut()[t].saturating_record(ns.max(1));
        }
        if let Some(cur) = self.iv.borrow_mut().as_mut() {
            cur.committed[t] += 1;
            cur.hist[t].saturating_record(ns.max(1));
        }
        me.committed
            .store(me.committed.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if let Some((f, tag)) = self
            .acked
            .as_ref()
            .and_then(|f| Some((f, self.wl.txn_tag(st, input)?)))
        {
            let mut f = f.lock().unwrap();
            if let Err(e) = writeln!(f, "{tag}") {
                *self.fatal.lock().unwrap() = Some(Error::fatal(format!(
                    "cannot write the acknowledgement file: {e}"
                )));
                self.phase.store(STOP, Ordering::Relaxed);
            }
        }
    }
}

/// What one worker did during one second of the run (time series), sent to the main
/// thread when the worker sees the second change, and once more when it stops.
struct Interval {
    worker: usize,
    second: u64,
    hist: Vec<Histogram<u64>>,
    committed: Vec<u64>,
    aborted: Vec<u64>,
    user_aborts: Vec<u64>,
    cpu: Option<Duration>,
    /// When the interval began on its worker; once closed, its wall length (the share
    /// on CPU of a second is its CPU time over this, not over the main thread's second).
    start: Instant,
    wall: Duration,
}

impl Interval {
    fn new(worker: usize, second: u64, ntypes: usize) -> Self {
        Interval {
            worker,
            second,
            hist: (0..ntypes).map(|_| new_hist()).collect(),
            committed: vec![0; ntypes],
            aborted: vec![0; ntypes],
            user_aborts: vec![0; ntypes],
            cpu: thread_cpu(),
            start: Instant::now(),
            wall: Duration::ZERO,
        }
    }

    /// Close the interval: `cpu` becomes the CPU time used during it.
    fn close(mut self) -> Self {
        self.cpu = match (self.cpu, thread_cpu()) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        self.wall = self.start.elapsed();
        self
    }
}

/// A summarized second: its number, counts per type, latency, and the workers' CPU
/// time and wall time in it (None: no CPU clock).
type SettledSecond = (u64, Vec<SecondTxn>, Latency, Option<(Duration, Duration)>);

/// The main thread's merge of the workers' intervals: a second is summarized (its
/// histograms dropped) once every worker has moved past it, so memory stays bounded by
/// the longest transaction, not by the run's length.
struct SeriesMerge {
    ntypes: usize,
    /// Per worker: the last second it delivered (it is done with every second up to it).
    through: Vec<Option<u64>>,
    pending: BTreeMap<u64, Interval>,
    /// Per second: the counts, latency, and the workers' CPU time and wall time.
    done: Vec<SettledSecond>,
}

impl SeriesMerge {
    fn new(threads: usize, ntypes: usize) -> Self {
        SeriesMerge {
            ntypes,
            through: vec![None; threads],
            pending: BTreeMap::new(),
            done: Vec::new(),
        }
    }

    fn add(&mut self, iv: Interval) {
        let w = iv.worker;
        self.through[w] = Some(self.through[w].map_or(iv.second, |t| t.max(iv.second)));
        let ntypes = self.ntypes;
        let agg = self.pending.entry(iv.second).or_insert_with(|| Interval {
            worker: usize::MAX,
            second: iv.second,
            hist: (0..ntypes).map(|_| new_hist()).collect(),
            committed: vec![0; ntypes],
            aborted: vec![0; ntypes],
            user_aborts: vec![0; ntypes],
            cpu: Some(Duration::ZERO),
            start: Instant::now(),
            wall: Duration::ZERO,
        });
        for t in 0..ntypes {
            agg.hist[t]
                .add(&iv.hist[t])
                .expect("histograms of the same precision add");
            agg.committed[t] += iv.committed[t];
            agg.aborted[t] += iv.aborted[t];
            agg.user_aborts[t] += iv.user_aborts[t];
        }
        agg.cpu = match (agg.cpu, iv.cpu) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        agg.wall += iv.wall;
    }

    /// The settled seconds as the report's time series; `run_s`: the run's length (the
    /// last second may be partial), `warm_s`: seconds before it are warm-up.
    fn seconds(self, run_s: f64, warm_s: f64) -> Vec<Second> {
        self.done
            .into_iter()
            .map(|(k, per_txn, all, cpu)| {
                let interval_s = (run_s - k as f64).clamp(1e-9, 1.0);
                Second {
                    second: k,
                    warmup: (k as f64) < warm_s,
                    interval_s,
                    committed: per_txn.iter().map(|t| t.committed).sum(),
                    aborted: per_txn.iter().map(|t| t.aborted).sum(),
                    user_aborts: per_txn.iter().map(|t| t.user_aborts).sum(),
                    worker_cpu_busy: cpu.map(|(c, w)| c.as_secs_f64() / w.as_secs_f64().max(1e-9)),
                    latency_us: all,
                    per_txn,
                }
            })
            .collect()
    }

    /// Summarize the seconds every worker is done with (`all`: every second left).
    fn settle(&mut self, all: bool) {
        let min = if all {
            u64::MAX
        } else {
            match self.through.iter().copied().collect::<Option<Vec<u64>>>() {
                Some(v) => v.into_iter().min().unwrap_or(u64::MAX),
                None => return,
            }
        };
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() > min {
                break;
            }
            let iv = entry.remove();
            let mut all = new_hist();
            for h in &iv.hist {
                all.add(h).expect("histograms of the same precision add");
            }
            let per_txn = (0..self.ntypes)
                .map(|t| SecondTxn {
                    committed: iv.committed[t],
                    aborted: iv.aborted[t],
                    user_aborts: iv.user_aborts[t],
                    latency_us: Latency::from_ns(&iv.hist[t]),
                })
                .collect();
            self.done.push((
                iv.second,
                per_txn,
                Latency::from_ns(&all),
                iv.cpu.map(|c| (c, iv.wall)),
            ));
        }
    }
}

/// The clock for per-transaction latency: the TSC through quanta (a few ns to read, where
/// the OS clock costs tens in a VM), or the OS clock under valgrind, where quanta's
/// calibration (a timed spin) would make instruction counts differ from run to run.
enum LatencyClock {
    Tsc(quanta::Clock),
    Os(Instant),
}

impl LatencyClock {
    fn new() -> Self {
        if probe::running_on_valgrind() {
            LatencyClock::Os(Instant::now())
        } else {
            LatencyClock::Tsc(quanta::Clock::new())
        }
    }
    #[inline]
    fn now(&self) -> u64 {
        match self {
            LatencyClock::Tsc(c) => c.raw(),
            LatencyClock::Os(origin) => origin.elapsed().as_nanos() as u64,
        }
    }
    #[inline]
    fn nanos(&self, from: u64, to: u64) -> u64 {
        match self {
            LatencyClock::Tsc(c) => c.delta_as_nanos(from, to),
            LatencyClock::Os(_) => to.saturating_sub(from),
        }
    }
}

/// CPU time the calling thread has used (None where the clock is not available).
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

fn new_hist() -> Histogram<u64> {
    // 1 ns .. 100 s at 3 significant figures; longer latencies saturate at 100 s.
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// Sleep for `d` in short naps; false if `stop` said so first.
fn nap(d: Duration, stop: impl Fn() -> bool) -> bool {
    if rt::scheduled() {
        // A coroutine: let the thread's other transactions run meanwhile.
        return !rt::wait_until(rt::WaitKind::Other, Some(d), stop);
    }
    let end = Instant::now() + d;
    loop {
        if stop() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Committed and conflict-aborted transactions of all workers so far.
fn live_counts(live: &[CachePadded<Live>]) -> (u64, u64) {
    live.iter().fold((0, 0), |(c, a), l| {
        (
            c + l.committed.load(Ordering::Relaxed),
            a + l.aborted.load(Ordering::Relaxed),
        )
    })
}

/// One per-second line: the interval from `second` to `end` seconds into the run (None:
/// one second), labelled warm-up when any of it was, with its commits per second and
/// abort share.
fn progress_line(
    out: &mut Option<Box<dyn Write + Send>>,
    second: u64,
    end: Option<f64>,
    warm: Duration,
    now: (u64, u64),
    last: (u64, u64),
) {
    let Some(out) = out else { return };
    let (dc, da) = (now.0 - last.0, now.1 - last.1);
    let what = if Duration::from_secs(second) < warm {
        "warm-up"
    } else {
        "measure"
    };
    let aborts = if dc + da > 0 {
        100.0 * da as f64 / (dc + da) as f64
    } else {
        0.0
    };
    let len = end.map_or(1.0, |e| e - second as f64);
    let tps = crate::report::fmt_count(dc as f64 / len);
    let end = match end {
        Some(e) => format!("{e:.1}s"),
        None => format!("{}s", second + 1),
    };
    // A failed write of a progress line must not end the run: the report still comes.
    let _ = writeln!(
        out,
        "[{end:>6}] {what:<8} {tps:>11} txn/s   aborts {aborts:>6.2}%"
    );
}

/// Re-execute the commands a command-logging engine recovered from its log
/// (`Engine::recovered_commands`), one at a time in log order on worker 0, before any
/// other transaction; then tell the engine (`Engine::replay_done`). Returns how many.
pub fn replay<W: Workload>(engine: &dyn Database, wl: &W, seed: u64) -> api::Result<usize> {
    let cmds = engine.recovered_commands()?;
    if !cmds.is_empty() {
        let ntypes = wl.txn_types().len();
        let mut st = wl.worker_state(0, 1, seed);
        let mut s = Session::new(engine.worker(0));
        for (n, c) in cmds.iter().enumerate() {
            let fail = |why: String| {
                Error::fatal(format!(
                    "replaying command {} of {} from the log: {why}",
                    n + 1,
                    cmds.len()
                ))
            };
            if c.txn_type as usize >= ntypes {
                return Err(fail(format!(
                    "transaction type {} is not one of {}'s {ntypes}: the log is another workload's",
                    c.txn_type,
                    wl.name()
                )));
            }
            let input = wl
                .decode_input(&mut st, &c.input)
                .map_err(|e| fail(e.to_string()))?;
            // Single-threaded on a quiescent database: a logged command commits again.
            s.run(c.txn_type, |s| wl.execute(s, &mut st, &input))
                .map_err(|e| fail(format!("it did not commit again ({e})")))?;
        }
    }
    engine.replay_done()?;
    Ok(cmds.len())
}

/// Load `wl` into a fresh `engine` and mark the load complete; returns its seconds.
fn load_phase<W: Workload>(
    engine: &dyn Database,
    wl: &W,
    threads: usize,
    seed: u64,
    interactive: bool,
) -> api::Result<f64> {
    let t0 = Instant::now();
    let bar = if interactive {
        let b = ProgressBar::new(wl.load_rows());
        // At most 80 columns: a 16-column bar, rows per second as an integer.
        b.set_style(
            ProgressStyle::with_template(
                "loading {msg} [{bar:16}] {human_pos}/{human_len} rows {rate}/s eta {eta}",
            )
            .expect("static template")
            .with_key(
                "rate",
                |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", crate::report::fmt_count(s.per_sec()));
                },
            )
            .progress_chars("=> "),
        );
        b.set_message(wl.name());
        b
    } else {
        ProgressBar::hidden()
    };
    // Off a terminal: plain lines every --report-interval instead of the bar.
    let plain = if interactive {
        None
    } else {
        crate::report::PlainLoad::start(wl.name(), wl.load_rows(), threads)
    };
    wl.load(engine, threads, seed, &|n| {
        bar.inc(n);
        if let Some(p) = &plain {
            p.inc(n);
        }
    })?;
    // Durable and marked complete: a load cut short is never taken for data.
    engine.load_done()?;
    bar.finish_and_clear();
    if let Some(p) = &plain {
        p.finish();
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// `oltpscope load`: create the database, load it, and close it (no run). Returns the
/// load's seconds.
pub fn load_only<W: Workload>(
    open: OpenFn,
    wl: &W,
    opts: &EngineOptions,
    seed: u64,
    interactive: bool,
) -> api::Result<f64> {
    let engine = open(Arc::new(wl.schema()), opts)?;
    if engine.has_data() {
        return Err(Error::fatal(
            "the database already holds data: run on it with `run --no-load`, or load again with --reload",
        ));
    }
    let secs = load_phase(&*engine, wl, opts.threads.max(1), seed, interactive)?;
    engine.shutdown()?;
    Ok(secs)
}

/// Load (unless the database already has data) and run `wl` on engine `E`.
pub fn run<E: Engine, W: Workload>(wl: &W, cfg: &RunConfig) -> api::Result<Report> {
    run_limited(api::database::open::<E>, wl, cfg, None, &Limits::default())
}

/// Load (unless the database already has data) and run `wl` on the engine `open`
/// opens, with `obs` told about each worker thread's measured phase and transactions,
/// held to `limits`. A run that reaches its memory limit, or that a signal interrupts
/// (once `interrupt::install` was called), stops as at its end and returns the report
/// of what ran, with `Report::stopped` saying why.
///
/// The phases, each a function below: open (and load or recover), the gate (a parent's
/// go, when asked: `gate`), measure (the workers and the main thread's clock),
/// aggregate, check, report.
pub fn run_limited<W: Workload>(
    open: OpenFn,
    wl: &W,
    cfg: &RunConfig,
    obs: Option<&dyn Observer>,
    limits: &Limits,
) -> api::Result<Report> {
    let mut reports = run_phases(open, wl, cfg, &[], obs, limits)?;
    assert!(reports.len() == 1, "one phase, one report");
    Ok(reports.remove(0))
}

/// [`run_limited`] with more measured phases on the one database it loads: after the
/// phase `cfg` describes, one more per entry of `more_teams`, each `cfg` with its
/// `steps_team` set to that team size (`simulate --steps-team 1,8`: one traced load
/// serves every team size). Each phase is measured as a run of its own (its warm-up,
/// its transactions, its trace window under `trace_measured`, its workers and
/// coroutines started afresh) and has its own report; the database carries each
/// phase's transactions into the next. The check runs once, after the last phase, and
/// every report holds it. A phase that stops (signal, memory limit) ends the list: its
/// report is the last, with `stopped` saying why.
pub fn run_phases<W: Workload>(
    open: OpenFn,
    wl: &W,
    cfg: &RunConfig,
    more_teams: &[usize],
    obs: Option<&dyn Observer>,
    limits: &Limits,
) -> api::Result<Vec<Report>> {
    let started_at_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let progress = progress_writer(cfg)?;
    let ncoro = coroutines(cfg)?;
    if !more_teams.is_empty() && (ncoro < 2 || more_teams.iter().any(|&t| t == 0 || t > ncoro)) {
        return Err(Error::fatal(format!(
            "more STEPS phases need coroutines and team sizes of 1 to {ncoro} (the coroutines per thread)"
        )));
    }
    let schema = Arc::new(wl.schema());
    let opened = open_database(open, wl, cfg, schema.clone(), ncoro)?;
    let engine = opened.engine;
    wl.begin_run(&*engine, &acked_so_far(cfg)?)?;
    // The database as stored after the load (or as found), before any measured change.
    let tables = if cfg.stats {
        engine.table_sizes()?
    } else {
        Vec::new()
    };
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    // A gated run (the lab's sweep) waits here, loaded, for its parent's go.
    crate::gate::wait_for_go()?;
    let phases = measure_phases(
        &*engine, wl, cfg, more_teams, obs, limits, ncoro, &cores, progress,
    )?;
    crate::gate::window_ended();

    let last = &phases.last().expect("at least one phase").m;
    let at_memory_limit = last.stopped.as_ref().is_some_and(|s| s.signal.is_none());
    let stopped = last.stopped.is_some();
    // The check counts every phase's commits.
    let committed_all = opened.fresh.then(|| {
        let mut all = vec![0u64; wl.txn_types().len()];
        for p in &phases {
            for (a, c) in all.iter_mut().zip(&p.t.committed_all) {
                *a += c;
            }
        }
        all
    });
    let checks = run_checks(&*engine, wl, cfg, at_memory_limit, committed_all)?;
    let engine_stats = engine.stats();
    let (engine_name, counted) = (engine.name(), engine.counted());
    engine.shutdown()?;
    // A stopped run's engine stays open until the report is printed (its memory is what
    // the report is about); a finished one is closed now.
    let mut held = if stopped {
        Some(crate::report::Held(Some(engine)))
    } else {
        drop(engine);
        None
    };
    let n = phases.len();
    let mut reports = Vec::with_capacity(n);
    for (i, p) in phases.into_iter().enumerate() {
        let ran = Ran {
            workload: wl.name(),
            txn_types: wl.txn_types(),
            engine: engine_name,
            counted,
            config: config_json(wl.config(), &p.cfg, ncoro, !cores.is_empty()),
            schema: &schema,
            tables: if i == 0 { tables.clone() } else { Vec::new() },
            notes: p.notes,
            checks: checks.clone(),
            engine_stats: engine_stats.clone(),
            held: match i + 1 == n {
                true => held.take().unwrap_or(crate::report::Held(None)),
                false => crate::report::Held(None),
            },
            load_s: opened.load_s,
            open_s: opened.open_s,
            started_at_unix_s,
        };
        reports.push(report(ran, p.m, p.t, &p.cfg, ncoro));
    }
    Ok(reports)
}

/// What a resident run's (`run_resident`) caller answers after each run's report: the
/// next run on the same database (its workload, of the same data shape, and its
/// configuration), or the end.
// Answered once per run: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Next<W> {
    Run(W, RunConfig),
    End,
}

/// Why a resident run's reports hold no check: the database is checked once, after
/// its last run (`run_resident`).
pub const CHECKED_AT_END: &str =
    "a resident run's database is checked once, after its last run on it";

/// A *resident* run (the lab's sweep, issue 41): load `wl` once into the engine `open`
/// opens, then run measured windows on it one after the other, each gated
/// (`gate::wait_for_go`) and measured as a run of its own (its warm-up, its workers
/// started afresh) with its own report, which `next` gets and answers with the next
/// run (its workload and configuration: the same data shape, other run settings such
/// as the micro-benchmark's mode or rows) or the end. Each run sees the database as the
/// runs before it left it. Each report's `checks` are not run ([`CHECKED_AT_END`]);
/// only the first holds the load's seconds (`load_s`). After the last run the
/// workload's consistency check runs once, on the database as every run left it
/// (without the count of committed updates, which holds after one run on a fresh load
/// only), and its result is returned. A run that stops (a signal, the memory limit)
/// ends the resident run with its reason.
pub fn run_resident<W: Workload>(
    open: OpenFn,
    wl: W,
    cfg: RunConfig,
    limits: &Limits,
    mut next: impl FnMut(Report) -> api::Result<Next<W>>,
) -> api::Result<Checks> {
    let ncoro = coroutines(&cfg)?;
    let schema = Arc::new(wl.schema());
    let opened = open_database(open, &wl, &cfg, schema.clone(), ncoro)?;
    let engine = opened.engine;
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let (first_threads, first_engine) = (cfg.threads, format!("{:?}", cfg.engine));
    let (mut wl, mut cfg) = (wl, cfg);
    let mut load_s = opened.load_s;
    loop {
        let started_at_unix_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let ncoro_now = coroutines(&cfg)?;
        // The engine was opened for the first run's workers: another count, other
        // engine options or another schema would not be the same database.
        if cfg.threads != first_threads
            || ncoro_now != ncoro
            || format!("{:?}", cfg.engine) != first_engine
            || format!("{:?}", wl.schema()) != format!("{schema:?}")
        {
            return Err(Error::fatal(
                "a resident run's next run must have the first one's data shape, engine options, threads and coroutines",
            ));
        }
        wl.begin_run(&*engine, &acked_so_far(&cfg)?)?;
        let tables = if cfg.stats {
            engine.table_sizes()?
        } else {
            Vec::new()
        };
        crate::gate::wait_for_go()?;
        let mut phases = measure_phases(
            &*engine,
            &wl,
            &cfg,
            &[],
            None,
            limits,
            ncoro,
            &cores,
            progress_writer(&cfg)?,
        )?;
        crate::gate::window_ended();
        let p = phases.pop().expect("one phase");
        if let Some(s) = &p.m.stopped {
            return Err(Error::fatal(format!(
                "a resident run stopped: {}",
                s.message
            )));
        }
        let ran = Ran {
            workload: wl.name(),
            txn_types: wl.txn_types(),
            engine: engine.name(),
            counted: engine.counted(),
            config: config_json(wl.config(), &p.cfg, ncoro, !cores.is_empty()),
            schema: &schema,
            tables,
            notes: p.notes,
            checks: Checks {
                passed: true,
                list: vec![],
                skipped: cfg.check.then(|| CHECKED_AT_END.to_string()),
            },
            engine_stats: engine.stats(),
            held: crate::report::Held(None),
            load_s: load_s.take(),
            open_s: opened.open_s,
            started_at_unix_s,
        };
        match next(report(ran, p.m, p.t, &p.cfg, ncoro))? {
            Next::Run(w, c) => (wl, cfg) = (w, c),
            Next::End => break,
        }
    }
    let checks = run_checks(&*engine, &wl, &cfg, false, None)?;
    engine.shutdown()?;
    Ok(checks)
}

/// One measured phase of a run: its configuration, what it measured, and its totals
/// and notes.
struct PhaseRun {
    cfg: RunConfig,
    m: Measured,
    t: Totals,
    notes: Vec<String>,
}

/// The measured phases of [`run_phases`], in order; a phase that stops ends them.
#[allow(clippy::too_many_arguments)]
fn measure_phases<W: Workload>(
    engine: &dyn Database,
    wl: &W,
    cfg: &RunConfig,
    more_teams: &[usize],
    obs: Option<&dyn Observer>,
    limits: &Limits,
    ncoro: usize,
    cores: &[core_affinity::CoreId],
    mut progress: Option<Box<dyn Write + Send>>,
) -> api::Result<Vec<PhaseRun>> {
    let mut phases = Vec::new();
    let cfgs = std::iter::once(cfg.clone()).chain(more_teams.iter().map(|&t| RunConfig {
        steps_team: Some(t),
        ..cfg.clone()
    }));
    for (i, pcfg) in cfgs.enumerate() {
        if i > 0 {
            // Each phase is a run of the workload on the database as the phases before
            // left it (TPC-B numbers its History rows per run).
            wl.begin_run(engine, &acked_so_far(cfg)?)?;
        }
        let m = measure(
            engine,
            wl,
            &pcfg,
            obs,
            limits,
            ncoro,
            cores,
            progress.take(),
        )?;
        let t = Totals::of(
            wl.txn_types(),
            &m.results,
            m.measured.as_secs_f64().max(1e-9),
        );
        let done: Vec<u64> = t
            .per_txn
            .iter()
            .map(|t| t.committed + t.user_aborts)
            .collect();
        let notes = wl.notes(&done, &t.counters, m.measured.as_secs_f64());
        let stopped = m.stopped.is_some();
        phases.push(PhaseRun {
            cfg: pcfg,
            m,
            t,
            notes,
        });
        if stopped {
            break;
        }
        // A later phase's live lines go to the terminal; a progress file keeps the
        // first phase's (creating it again would cut them).
        if cfg.progress_file.is_none() {
            progress = progress_writer(cfg)?;
        }
    }
    Ok(phases)
}

/// What the engine- and workload-typed part of a run hands to [`report`].
struct Ran<'a> {
    workload: &'static str,
    txn_types: &'static [&'static str],
    engine: &'static str,
    counted: api::Counted,
    config: serde_json::Value,
    schema: &'a api::Schema,
    tables: Vec<api::TableSize>,
    notes: Vec<String>,
    checks: Checks,
    engine_stats: serde_json::Value,
    held: crate::report::Held,
    load_s: Option<f64>,
    open_s: Option<f64>,
    started_at_unix_s: u64,
}

/// The run's report from what it measured. Not generic, so compiled once rather than
/// once per engine and workload (issue 39: the build's cost).
fn report(ran: Ran<'_>, m: Measured, t: Totals, cfg: &RunConfig, ncoro: usize) -> Report {
    assert!(
        m.results.len() == cfg.threads,
        "one result per worker thread"
    );
    let secs = m.measured.as_secs_f64().max(1e-9);
    let warm_s = cfg.warmup_s.max(0.0);
    // With --txns the workers may stop after the main thread's last look: the series'
    // last second ends with the last worker.
    let timeseries = m.series.seconds(m.run_s.max(warm_s + secs), warm_s);
    let stats = cfg.stats.then(|| {
        let committed: Vec<u64> = t.per_txn.iter().map(|t| t.committed).collect();
        crate::stats::StatsReport::new(
            ran.txn_types,
            &t.stat_sums,
            &committed,
            ran.counted,
            ran.tables,
        )
    });
    let steps = t
        .steps
        .map(|s| crate::report::StepsReport::new(&s, ran.schema));
    let committed: u64 = t.per_txn.iter().map(|t| t.committed).sum();
    let aborted: u64 = t.per_txn.iter().map(|t| t.aborted).sum();
    let user_aborts: u64 = t.per_txn.iter().map(|t| t.user_aborts).sum();
    let (tpmc, tpse) = tpmc_tpse(&t.per_txn, secs);
    Report {
        workload: ran.workload.to_string(),
        engine: ran.engine.to_string(),
        threads: cfg.threads,
        coroutines: ncoro,
        interleave_group: cfg.interleave_group_in_use(ncoro),
        coroutine_switches: t.switches,
        probe_switches: t.probe_switches,
        committed_whole_run: t.committed_all.iter().sum(),
        keyed_reordered: t.reordered,
        keyed_held: t.held,
        steps,
        stats,
        waits: t.waits,
        duration_s: secs,
        warmup_s: warm_s,
        seed: cfg.seed,
        committed,
        aborted,
        user_aborts,
        abort_rate: if committed + aborted > 0 {
            aborted as f64 / (committed + aborted) as f64
        } else {
            0.0
        },
        throughput_tps: committed as f64 / secs,
        worker_cpu_busy: t.cpu_busy,
        tpmc,
        tpse,
        counters: t.counters.into_iter().collect(),
        open_loop: cfg.rate,
        notes: ran.notes,
        latency_us: Latency::from_ns(&t.all_hist),
        per_txn: t.per_txn,
        checks: ran.checks,
        stopped: m.stopped,
        memory: m.memory,
        _held: ran.held,
        load_s: ran.load_s,
        open_s: ran.open_s,
        config: ran.config,
        engine_stats: ran.engine_stats,
        machine: machine::describe(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_at_unix_s: ran.started_at_unix_s,
        timeseries,
        histograms: t.histograms,
    }
}

/// The memory watch's look at `now`: a warning printed, or the run's stop at the memory
/// limit (said at once).
fn memory_stop(
    watch: &mut memwatch::Watch,
    now: Duration,
    warm: Duration,
    total_s: Option<f64>,
) -> Option<Stopped> {
    let s = memwatch::read_sample(now.as_secs_f64())?;
    match watch.observe(s, warm.as_secs_f64(), total_s) {
        Verdict::Fine => None,
        Verdict::Warn(m) => {
            eprintln!("{m}");
            None
        }
        Verdict::Stop(message) => {
            // Said at once: what follows (the workers' last transactions, the report)
            // still takes memory, and the user must learn why even if the kernel then
            // has its way.
            eprintln!("stopped: {message}");
            Some(Stopped {
                reason: "memory-limit".into(),
                signal: None,
                at_s: now.as_secs_f64(),
                message,
            })
        }
    }
}

/// The TPC figures of merit over `secs` measured seconds: TPC-C's New-Orders per
/// minute and TPC-E's Trade-Results per second (each none for other workloads).
fn tpmc_tpse(per_txn: &[TxnTypeReport], secs: f64) -> (Option<f64>, Option<f64>) {
    // Rolled-back New-Orders count too (clause 5.4.2): they are user aborts here.
    let tpmc = per_txn
        .iter()
        .find(|t| t.name == "new-order" || t.name == "new_order")
        .map(|t| (t.committed + t.user_aborts) as f64 * 60.0 / secs);
    let tpse = per_txn
        .iter()
        .find(|t| t.name == "trade-result")
        .map(|t| t.committed as f64 / secs);
    (tpmc, tpse)
}

/// The run's configuration as the report records it (`pinned`: cores were found to pin
/// the workers to).
fn config_json(
    workload: serde_json::Value,
    cfg: &RunConfig,
    ncoro: usize,
    pinned: bool,
) -> serde_json::Value {
    serde_json::json!({
        "workload": workload,
        "engine": cfg.engine,
        "threads": cfg.threads,
        "coroutines": ncoro,
        "interleave": cfg.interleave && ncoro > 1,
        "interleave_group": cfg.interleave_group_in_use(ncoro),
        "warmup_s": cfg.warmup_s,
        "stop": cfg.stop,
        "seed": cfg.seed,
        "pin": cfg.pin && pinned,
        "no_load": cfg.no_load,
        "rate": cfg.rate,
    })
}

/// Where the per-second lines go: to --progress-file, else to a terminal, else nowhere.
/// The lines of the acknowledgement file before this run appends to it (none when there
/// is no such file yet).
fn acked_so_far(cfg: &RunConfig) -> api::Result<Vec<String>> {
    let Some(p) = &cfg.acked_file else {
        return Ok(Vec::new());
    };
    match std::fs::read_to_string(p) {
        Ok(t) => Ok(t.lines().map(str::to_string).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::fatal(format!("cannot read {}: {e}", p.display()))),
    }
}

fn progress_writer(cfg: &RunConfig) -> api::Result<Option<Box<dyn Write + Send>>> {
    Ok(match &cfg.progress_file {
        Some(p) => Some(Box::new(std::fs::File::create(p).map_err(|e| {
            Error::fatal(format!("cannot create {}: {e}", p.display()))
        })?)),
        None if cfg.interactive => Some(Box::new(std::io::stderr())),
        None => None,
    })
}

/// The coroutines per worker thread, refused with the options they cannot go with.
fn coroutines(cfg: &RunConfig) -> api::Result<usize> {
    let ncoro = cfg.coroutines.max(1);
    if ncoro > 1 && cfg.stats {
        // The counters are per thread: a thread's coroutines would mix their counts.
        return Err(Error::fatal(
            "--stats cannot be combined with --coroutines, --steps-team or --interleave yet (its counters are per thread)",
        ));
    }
    if ncoro > 1 && cfg.rate.is_some() {
        // The pacer sleeps the thread, which would hold up its other coroutines.
        return Err(Error::fatal(
            "--rate cannot be combined with --coroutines yet: give one or the other",
        ));
    }
    Ok(ncoro)
}

/// The engine, opened and loaded (or recovered and checked against the workload).
struct Opened {
    engine: Box<dyn Database>,
    /// It was loaded by this run.
    fresh: bool,
    load_s: Option<f64>,
    /// Time to open an existing database (recovery and the replay of its commands).
    open_s: Option<f64>,
}

fn open_database<W: Workload>(
    open: OpenFn,
    wl: &W,
    cfg: &RunConfig,
    schema: Arc<api::Schema>,
    ncoro: usize,
) -> api::Result<Opened> {
    // Every coroutine is a worker of its own (its own id, log buffer, epoch participant).
    let mut eopts = cfg.engine.clone();
    eopts.threads = cfg.threads * ncoro;
    let opened = std::time::Instant::now();
    let engine = open(schema, &eopts)?;
    let fresh = !engine.has_data();
    let (mut load_s, mut open_s) = (None, None);
    if fresh {
        if cfg.no_load {
            return Err(Error::fatal(
                "--no-load given but the database holds no data",
            ));
        }
        load_s = Some(load_phase(
            &*engine,
            wl,
            cfg.threads,
            cfg.seed,
            cfg.interactive,
        )?);
    } else if !cfg.no_load {
        return Err(Error::fatal(
            "the database already holds data: add --no-load to run on it, or --reload to discard it and load again",
        ));
    } else {
        // Before the first transaction (the replay's included): a database of other
        // settings is refused, not written to.
        wl.check_loaded(&*engine)?;
        replay(&*engine, wl, cfg.seed)?;
        open_s = Some(opened.elapsed().as_secs_f64());
    }
    Ok(Opened {
        engine,
        fresh,
        load_s,
        open_s,
    })
}

/// What the measured phase leaves.
struct Measured {
    results: Vec<WorkerResult>,
    /// The measured interval (zero when the run stopped in its warm-up).
    measured: Duration,
    /// The whole run, warm-up included, as the main thread saw it.
    run_s: f64,
    stopped: Option<Stopped>,
    series: SeriesMerge,
    memory: memwatch::MemoryReport,
}

/// What every worker thread of a run reads.
struct Ctx<'a, W> {
    engine: &'a dyn Database,
    wl: &'a W,
    cfg: &'a RunConfig,
    obs: Option<&'a dyn Observer>,
    ncoro: usize,
    /// Transaction streams in all (thread x coroutine).
    streams: usize,
    ntypes: usize,
    phase: &'a AtomicU8,
    live: &'a [CachePadded<Live>],
    fatal: &'a Mutex<Option<Error>>,
    acked: &'a Option<Mutex<std::fs::File>>,
    cores: &'a [core_affinity::CoreId],
    second: &'a AtomicU64,
    /// With --txns: each stream's share.
    quotas: &'a Option<Vec<u64>>,
    series_tx: &'a mpsc::Sender<Interval>,
}

/// With `Stop::Txns`: each stream's share (the workload's, or an even split).
fn quotas<W: Workload>(wl: &W, stop: Stop, streams: usize) -> Option<Vec<u64>> {
    let Stop::Txns(n) = stop else {
        return None;
    };
    let even = |i: usize| n / streams as u64 + (i < (n % streams as u64) as usize) as u64;
    Some(
        (0..streams)
            .map(|i| wl.stream_txns(i, streams, n).unwrap_or_else(|| even(i)))
            .collect(),
    )
}

/// Run the workers and keep time on this thread until the run stops.
#[allow(clippy::too_many_arguments)]
fn measure<W: Workload>(
    engine: &dyn Database,
    wl: &W,
    cfg: &RunConfig,
    obs: Option<&dyn Observer>,
    limits: &Limits,
    ncoro: usize,
    cores: &[core_affinity::CoreId],
    mut progress: Option<Box<dyn Write + Send>>,
) -> api::Result<Measured> {
    let ntypes = wl.txn_types().len();
    let phase = AtomicU8::new(if cfg.warmup_s <= 0.0 { MEASURE } else { WARMUP });
    let live: Vec<CachePadded<Live>> = (0..cfg.threads).map(|_| CachePadded::default()).collect();
    let fatal: Mutex<Option<Error>> = Mutex::new(None);
    let acked = match &cfg.acked_file {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| Error::fatal(format!("cannot open {}: {e}", p.display())))?,
        )),
        None => None,
    };
    let streams = cfg.threads * ncoro;
    let quotas = quotas(wl, cfg.stop, streams);
    // This thread keeps time while the workers run: not a worker (see cachesim).
    probe::thread_role(probe::Role::Main);
    if cfg.trace_measured && phase.load(Ordering::Relaxed) == MEASURE {
        probe::tracing_start();
    }
    // The time series: the second the run is in (workers read it), and their intervals.
    let second = AtomicU64::new(0);
    let (series_tx, series_rx) = mpsc::channel::<Interval>();
    let mut series = SeriesMerge::new(cfg.threads, ntypes);
    // Read once: a cgroup's limit does not change under a run.
    let mut watch = memwatch::Watch::new(limits.mem_limit, memwatch::cgroup_limit());
    let ctx = Ctx {
        engine,
        wl,
        cfg,
        obs,
        ncoro,
        streams,
        ntypes,
        phase: &phase,
        live: &live,
        fatal: &fatal,
        acked: &acked,
        cores,
        second: &second,
        quotas: &quotas,
        series_tx: &series_tx,
    };
    let (results, kept) = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..cfg.threads)
            .map(|w| {
                let ctx = &ctx;
                sc.spawn(move || worker_thread(ctx, w))
            })
            .collect();
        let clock = Clock {
            cfg,
            phase: &phase,
            live: &live,
            second: &second,
            workload: wl.name(),
        };
        let mut kept = keep_time(
            &clock,
            &|| handles.iter().all(|h| h.is_finished()),
            &mut progress,
            &mut watch,
            &mut series,
            &series_rx,
        );
        let results: Vec<WorkerResult> = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        while let Ok(iv) = series_rx.try_recv() {
            series.add(iv);
        }
        series.settle(true);
        if matches!(cfg.stop, Stop::Txns(_)) && !kept.in_warmup {
            let end = results.iter().filter_map(|r| r.ended).max();
            kept.measured = end.map_or(Duration::ZERO, |e| {
                e.saturating_duration_since(kept.measure_start)
            });
        }
        (results, kept)
    });
    if cfg.trace_measured {
        probe::tracing_stop();
    }
    if let Some(e) = fatal.into_inner().unwrap() {
        return Err(e);
    }
    Ok(Measured {
        results,
        measured: kept.measured,
        run_s: kept.run_s,
        stopped: kept.stopped,
        series,
        memory: watch.report(),
    })
}

/// One worker thread: its transaction stream, or its coroutines' streams under the
/// run's scheduling policy; then its CPU time, waits and last interval.
fn worker_thread<W: Workload>(c: &Ctx<'_, W>, w: usize) -> WorkerResult {
    let (cfg, wl, engine) = (c.cfg, c.wl, c.engine);
    probe::thread_role(probe::Role::Worker);
    if cfg.pin && !c.cores.is_empty() {
        core_affinity::set_for_current(c.cores[w % c.cores.len()]);
    }
    let series_tx = cfg.timeseries.then(|| c.series_tx.clone());
    let sh = Shared {
        wl,
        phase: c.phase,
        live: &c.live[w],
        fatal: c.fatal,
        acked: c.acked,
        clock: LatencyClock::new(),
        hist: std::cell::RefCell::new((0..c.ntypes).map(|_| new_hist()).collect()),
        at_measure: Cell::new(None),
        rate: cfg.rate,
        streams: c.streams,
        seed: cfg.seed,
        second: c.second,
        iv: std::cell::RefCell::new(series_tx.as_ref().map(|_| Interval::new(w, 0, c.ntypes))),
        series_tx,
        worker: w,
        ntypes: c.ntypes,
        obs: c.obs,
        thread_obs: std::cell::RefCell::new(None),
        stats: cfg.stats,
        in_flight: (c.ncoro > 1 && cfg.interleave).then(pick::InFlight::default),
    };
    if cfg.stats {
        txnstats::arm(true);
    }
    let mut r = WorkerResult::new(c.ntypes);
    let quota = |id: usize| c.quotas.as_ref().map(|q| q[id]);
    if c.ncoro == 1 {
        // No coroutine at all: the plain loop on this thread.
        let mut st = wl.worker_state(w, cfg.threads, cfg.seed);
        let mut s = Session::new(engine.worker(w));
        sh.stream(&mut s, &mut st, quota(w), w as u64, &mut r);
    } else {
        let parts: Vec<std::cell::RefCell<WorkerResult>> = (0..c.ncoro)
            .map(|_| std::cell::RefCell::new(WorkerResult::new(c.ntypes)))
            .collect();
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..c.ncoro)
            .map(|k| {
                let (sh, part) = (&sh, &parts[k]);
                let id = w * c.ncoro + k;
                let quota = quota(id);
                Box::new(move || {
                    let mut st = wl.worker_state(id, c.streams, cfg.seed);
                    let mut s = Session::new(engine.worker(id));
                    sh.stream(&mut s, &mut st, quota, id as u64, &mut part.borrow_mut());
                }) as Box<dyn FnOnce() + '_>
            })
            .collect();
        let policy = match (cfg.steps_team, cfg.coroutine_seed) {
            (Some(team), _) => rt::coro::Policy::Steps { team },
            (None, Some(seed)) => rt::coro::Policy::Seeded(seed ^ w as u64),
            (None, None) if cfg.interleave => rt::coro::Policy::Interleave {
                group: cfg.interleave_group_in_use(c.ncoro),
            },
            (None, None) => rt::coro::Policy::RoundRobin,
        };
        let cs = rt::coro::run(policy, bodies);
        r.switches = cs.switches;
        r.probe_switches = cs.probe_switches;
        r.steps = cs.steps;
        for p in &parts {
            r.merge(&p.borrow());
        }
    }
    for (h, s) in r.hist.iter_mut().zip(sh.hist.borrow().iter()) {
        h.add(s).expect("histograms of the same precision add");
    }
    if let Some(o) = sh.thread_obs.take() {
        o.finish();
    }
    if let Some((cpu0, waits0, t0)) = sh.at_measure.get() {
        if let (Some(a), Some(b)) = (cpu0, thread_cpu()) {
            r.cpu = Some(b.saturating_sub(a));
            r.wall = t0.elapsed();
        }
        r.waits = rt::thread_stats().since(&waits0);
    }
    if let (Some(cur), Some(tx)) = (sh.iv.take(), sh.series_tx.as_ref()) {
        let _ = tx.send(cur.close());
    }
    r
}

/// What the main thread reads and sets while the workers run (not generic: compiled
/// once, not per engine and workload).
struct Clock<'a> {
    cfg: &'a RunConfig,
    phase: &'a AtomicU8,
    live: &'a [CachePadded<Live>],
    second: &'a AtomicU64,
    workload: &'static str,
}

/// What the main thread's clock saw.
struct Kept {
    measure_start: Instant,
    measured: Duration,
    run_s: f64,
    stopped: Option<Stopped>,
    /// The run stopped before its warm-up ended.
    in_warmup: bool,
}

/// The main thread while the workers run: ends the warm-up, prints the live line each
/// second, watches memory and signals, merges the time series, and says when to stop.
fn keep_time(
    c: &Clock<'_>,
    all_finished: &dyn Fn() -> bool,
    progress: &mut Option<Box<dyn Write + Send>>,
    watch: &mut memwatch::Watch,
    series: &mut SeriesMerge,
    series_rx: &mpsc::Receiver<Interval>,
) -> Kept {
    let (cfg, phase, live) = (c.cfg, c.phase, c.live);
    let run_start = Instant::now();
    let mut measure_start = run_start;
    let mut stopped = None;
    let warm = Duration::from_secs_f64(cfg.warmup_s.max(0.0));
    let total = match cfg.stop {
        Stop::Seconds(secs) => warm + Duration::from_secs_f64(secs),
        // Until every worker has run its quota.
        Stop::Txns(_) => Duration::MAX,
    };
    let mut last = (0u64, 0u64);
    let mut tick = 1u64;
    // Off a terminal: a plain line every --report-interval instead.
    let mut plain = if cfg.interactive {
        None
    } else {
        let stop = match cfg.stop {
            Stop::Seconds(s) => format!("{s:.1} s measured"),
            Stop::Txns(n) => format!("{n} transactions measured"),
        };
        crate::report::PlainRun::start(c.workload, cfg.warmup_s, &stop)
    };
    let total_s = matches!(cfg.stop, Stop::Seconds(_)).then(|| total.as_secs_f64());
    let running = interrupt::Running::start();
    loop {
        if phase.load(Ordering::Relaxed) == STOP {
            break;
        }
        let now = run_start.elapsed();
        if let Some(sig) = running.pending() {
            stopped = Some(interrupted(sig, now));
            break;
        }
        // At most 100 ms apart (the sleep below): a database growing 100 MB/s
        // passes the stop line by at most 10 MB, well inside the headroom.
        if let Some(s) = memory_stop(watch, now, warm, total_s) {
            stopped = Some(s);
            break;
        }
        if phase.load(Ordering::Relaxed) == WARMUP && now >= warm {
            measure_start = Instant::now();
            phase.store(MEASURE, Ordering::Relaxed);
            if cfg.trace_measured {
                probe::tracing_start();
            }
        }
        if now >= total || (matches!(cfg.stop, Stop::Txns(_)) && all_finished()) {
            break;
        }
        if now >= Duration::from_secs(tick) {
            c.second.store(tick, Ordering::Relaxed);
            let counts = live_counts(live);
            progress_line(progress, tick - 1, None, warm, counts, last);
            if let Some(p) = &mut plain {
                p.at(tick as f64, counts, false);
            }
            last = counts;
            tick += 1;
        }
        while let Ok(iv) = series_rx.try_recv() {
            series.add(iv);
        }
        series.settle(false);
        // Sleep until the next event: the end of warm-up, the next second, the end.
        let mut next = total.min(Duration::from_secs(tick));
        if phase.load(Ordering::Relaxed) == WARMUP {
            next = next.min(warm);
        }
        std::thread::sleep(
            next.saturating_sub(run_start.elapsed())
                .min(Duration::from_millis(100)),
        );
    }
    // A signal taken after the loop's last look still ends the run as stopped.
    if let (Some(sig), None) = (running.finish(), &stopped) {
        stopped = Some(interrupted(sig, run_start.elapsed()));
    }
    let in_warmup = phase.load(Ordering::Relaxed) == WARMUP;
    let measured = if in_warmup {
        Duration::ZERO
    } else {
        measure_start.elapsed()
    };
    phase.store(STOP, Ordering::Relaxed);
    // The rest since the last line (a partial second, usually).
    let end = run_start.elapsed().as_secs_f64();
    if end - (tick - 1) as f64 > 0.05 {
        let counts = live_counts(live);
        progress_line(progress, tick - 1, Some(end), warm, counts, last);
    }
    // A stopped run's last line stays its `stopped:` line (the report follows).
    if let (Some(p), None) = (&mut plain, &stopped) {
        p.at(end, live_counts(live), true);
    }
    Kept {
        measure_start,
        measured,
        run_s: end,
        stopped,
        in_warmup,
    }
}

/// The workers' results summed per transaction type and over the run.
struct Totals {
    per_txn: Vec<TxnTypeReport>,
    histograms: Vec<Histogram<u64>>,
    all_hist: Histogram<u64>,
    stat_sums: Vec<crate::stats::Sums>,
    /// Committed per type since the run started, warm-up included.
    committed_all: Vec<u64>,
    /// Share of the measured interval the workers spent on a CPU.
    cpu_busy: Option<f64>,
    waits: Vec<WaitReport>,
    switches: u64,
    probe_switches: u64,
    reordered: u64,
    held: u64,
    steps: Option<rt::coro::StepsStats>,
    counters: Vec<(String, u64)>,
}

impl Totals {
    fn of(txn_types: &[&str], results: &[WorkerResult], secs: f64) -> Totals {
        let ntypes = txn_types.len();
        let mut per_txn = Vec::new();
        let mut stat_sums = vec![crate::stats::Sums::default(); ntypes];
        let mut histograms = Vec::new();
        let mut all_hist = new_hist();
        let mut committed_all = vec![0u64; ntypes];
        for (t, name) in txn_types.iter().enumerate() {
            let mut h = new_hist();
            let (mut c, mut a, mut u) = (0, 0, 0);
            for r in results {
                stat_sums[t].add(&r.stats[t]);
                h.add(&r.hist[t])
                    .expect("histograms of the same precision add");
                c += r.committed[t];
                a += r.aborted[t];
                u += r.user_aborts[t];
                committed_all[t] += r.committed_all[t];
            }
            all_hist
                .add(&h)
                .expect("histograms of the same precision add");
            histograms.push(h.clone());
            per_txn.push(TxnTypeReport {
                name: name.to_string(),
                committed: c,
                aborted: a,
                user_aborts: u,
                throughput_tps: c as f64 / secs,
                latency_us: Latency::from_ns(&h),
            });
        }
        // Share of the measured interval the workers spent on a CPU (1.0 = each had a
        // core): each worker's CPU time over the wall time of the same stretch of its
        // own thread. (Dividing by the main thread's interval gave shares above 100%:
        // the main thread, short of a core while the workers and the logger ran, ended
        // the interval late or set the phase late, and a worker's stretch ran past it.)
        let wall: f64 = results.iter().map(|r| r.wall.as_secs_f64()).sum();
        let cpu_busy = results
            .iter()
            .map(|r| r.cpu)
            .sum::<Option<Duration>>()
            .map(|c| c.as_secs_f64() / wall.max(1e-9));
        let mut waits = rt::WaitStats::default();
        for r in results {
            waits.add(&r.waits);
        }
        let waits = rt::WaitKind::ALL
            .iter()
            .map(|&k| WaitReport {
                kind: k.name().to_string(),
                count: waits.waits[k as usize],
                total_ms: waits.wait_ns[k as usize] as f64 / 1e6,
            })
            .collect();
        let steps = results.iter().filter_map(|r| r.steps.as_ref()).fold(
            None,
            |acc: Option<rt::coro::StepsStats>, s| {
                let mut a = acc.unwrap_or_default();
                a.add(s);
                Some(a)
            },
        );
        let mut counters: Vec<(String, u64)> = Vec::new();
        for (name, n) in results.iter().flat_map(|r| r.counters.iter()) {
            match counters.iter_mut().find(|(k, _)| k == name) {
                Some((_, c)) => *c += n,
                None => counters.push((name.to_string(), *n)),
            }
        }
        Totals {
            per_txn,
            histograms,
            all_hist,
            stat_sums,
            committed_all,
            cpu_busy,
            waits,
            switches: results.iter().map(|r| r.switches).sum(),
            probe_switches: results.iter().map(|r| r.probe_switches).sum(),
            reordered: results.iter().map(|r| r.reordered).sum(),
            held: results.iter().map(|r| r.held).sum(),
            steps,
            counters,
        }
    }
}

/// The workload's consistency check after the run (unless it was turned off, or the run
/// stopped at its memory limit: the check needs memory of its own).
fn run_checks<W: Workload>(
    engine: &dyn Database,
    wl: &W,
    cfg: &RunConfig,
    at_memory_limit: bool,
    committed: Option<Vec<u64>>,
) -> api::Result<Checks> {
    if !cfg.check {
        return Ok(Checks {
            passed: true,
            list: vec![],
            skipped: None,
        });
    }
    if at_memory_limit {
        // The check builds maps of its own (TPC-C's: hundreds of thousands of order
        // lines): run at the limit, it is what the kernel would kill.
        return Ok(Checks {
            passed: true,
            list: vec![],
            skipped: Some(
                "the run stopped at its memory limit, and the check needs memory of its own".into(),
            ),
        });
    }
    let info = RunInfo {
        committed,
        acked: None,
    };
    let list = wl.check(engine, &info)?;
    Ok(Checks {
        passed: list.iter().all(|c| c.passed),
        list,
        skipped: None,
    })
}

/// A run stopped by signal `sig`, `at` into it; says so at once (the check and the
/// report may take a while).
fn interrupted(sig: i32, at: Duration) -> Stopped {
    let message = format!("interrupted by {}", interrupt::name(sig));
    eprintln!("stopped: {message}");
    Stopped {
        reason: "interrupted".into(),
        signal: Some(sig),
        at_s: at.as_secs_f64(),
        message,
    }
}

/// For the command line, once the report is out: a stopped run (which said why in one
/// line when it stopped) ends with exit code 2 at a memory limit, or dies of the signal
/// that interrupted it (exit status 128+n, as without a handler).
pub fn exit_if_stopped(r: Report) {
    let Some(s) = &r.stopped else { return };
    match s.signal {
        Some(sig) => {
            // The engine's teardown removes its temporary directory.
            drop(r);
            interrupt::die(sig)
        }
        None => {
            // At the memory limit the (shut down) engine is not torn down: that would
            // allocate, and exit releases its memory anyway. Only its temporary
            // directories are left to remove.
            interrupt::remove_own_temp_dirs(&std::env::temp_dir());
            std::process::exit(2)
        }
    }
}

/// Open an existing database and run the workload's consistency check on it.
pub fn check_only<W: Workload>(
    open: OpenFn,
    wl: &W,
    opts: &EngineOptions,
    info: &RunInfo,
) -> api::Result<Vec<workloads::Check>> {
    let engine = open(Arc::new(wl.schema()), opts)?;
    if !engine.has_data() {
        return Err(Error::fatal("the database holds no data to check"));
    }
    // Other settings are a refusal, not a failed check.
    wl.check_loaded(&*engine)?;
    replay(&*engine, wl, 0)?;
    let list = wl.check(&*engine, info)?;
    engine.shutdown()?;
    Ok(list)
}
