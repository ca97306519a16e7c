//! The run loop: load, warm up, measure, check, report.

use crate::machine;
use crate::report::{Checks, Latency, Report, TxnTypeReport, WaitReport};
use api::{Engine, EngineOptions, Error, Session};
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use std::cell::Cell;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use workloads::{RunInfo, Workload};

/// When the measured phase ends.
#[derive(Debug, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// After this many seconds.
    Seconds(f64),
    /// After this many transactions in total (committed or user-aborted), split evenly
    /// over the workers; there is no time-based warm-up then.
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
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// Per-worker counters other threads read for the live line; each on its own cache line.
#[repr(align(128))]
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
    /// This worker's thread's waits during the measured phase (`rt`).
    waits: rt::WaitStats,
    /// Coroutine switches during the whole run (0 without coroutines).
    switches: u64,
    /// STEPS team statistics of the thread (whole run).
    steps: Option<rt::coro::StepsStats>,
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
            waits: rt::WaitStats::default(),
            switches: 0,
            steps: None,
        }
    }

    /// Fold in the counts of another transaction stream of the same thread.
    fn merge(&mut self, o: &WorkerResult) {
        for t in 0..self.committed.len() {
            self.committed[t] += o.committed[t];
            self.aborted[t] += o.aborted[t];
            self.user_aborts[t] += o.user_aborts[t];
            self.committed_all[t] += o.committed_all[t];
            self.hist[t]
                .add(&o.hist[t])
                .expect("histograms of the same precision add");
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
    /// The thread's CPU time and waits when it first saw the measured phase.
    at_measure: Cell<Option<(Option<Duration>, rt::WaitStats)>>,
}

impl<W: Workload> Shared<'_, W> {
    /// Run transactions on `s` until the run stops or `quota` is done.
    fn stream<X: api::Worker>(
        &self,
        s: &mut Session<X>,
        st: &mut W::WorkerState,
        quota: Option<u64>,
        salt: u64,
        r: &mut WorkerResult,
    ) {
        let (wl, phase, me, clock) = (self.wl, self.phase, self.live, &self.clock);
        let mut done = 0u64;
        let mut backoff = rt::Backoff::new(salt);
        loop {
            let ph = phase.load(Ordering::Relaxed);
            if ph == STOP || quota.is_some_and(|q| done >= q) {
                break;
            }
            if ph == MEASURE && self.at_measure.get().is_none() {
                self.at_measure
                    .set(Some((thread_cpu(), rt::thread_stats())));
            }
            let (ty, input) = wl.next(st);
            let t = ty as usize;
            let t0 = clock.now();
            backoff.reset();
            let outcome = loop {
                match s.run(ty, |s| wl.execute(s, st, &input)) {
                    Err(Error::Conflict(_)) => {
                        if ph == MEASURE {
                            r.aborted[t] += 1;
                        }
                        me.aborted
                            .store(me.aborted.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        backoff.wait();
                        if phase.load(Ordering::Relaxed) == STOP && backoff.tries() > 1000 {
                            break Err(Error::fatal("a transaction kept conflicting for 1000 retries at the end of the run"));
                        }
                    }
                    other => break other,
                }
            };
            let ns = clock.nanos(t0, clock.now());
            done += 1;
            match outcome {
                Ok(()) => {
                    r.committed_all[t] += 1;
                    if ph == MEASURE {
                        r.committed[t] += 1;
                        r.hist[t].saturating_record(ns.max(1));
                    }
                    me.committed
                        .store(me.committed.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                    if let Some((f, tag)) = self
                        .acked
                        .as_ref()
                        .and_then(|f| Some((f, wl.txn_tag(st, &input)?)))
                    {
                        let mut f = f.lock().unwrap();
                        if let Err(e) = writeln!(f, "{tag}") {
                            *self.fatal.lock().unwrap() = Some(Error::fatal(format!(
                                "cannot write the acknowledgement file: {e}"
                            )));
                            phase.store(STOP, Ordering::Relaxed);
                        }
                    }
                }
                Err(Error::UserAbort) => {
                    if ph == MEASURE {
                        r.user_aborts[t] += 1;
                        r.hist[t].saturating_record(ns.max(1));
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

/// Load (unless the database already has data) and run `wl` on engine `E`.
pub fn run<E: Engine, W: Workload>(wl: &W, cfg: &RunConfig) -> api::Result<Report> {
    let started_at_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let schema = Arc::new(wl.schema());
    let ncoro = cfg.coroutines.max(1);
    // Every coroutine is a worker of its own (its own id, log buffer, epoch participant).
    let mut eopts = cfg.engine.clone();
    eopts.threads = cfg.threads * ncoro;
    let engine = E::open(schema.clone(), &eopts)?;
    let fresh = !engine.has_data();
    let mut load_s = None;
    if fresh {
        if cfg.no_load {
            return Err(Error::fatal(
                "--no-load given but the database holds no data",
            ));
        }
        let t0 = Instant::now();
        let bar = if cfg.interactive {
            let b = ProgressBar::new(wl.load_rows());
            b.set_style(
                ProgressStyle::with_template(
                    "loading {msg} [{bar:40}] {human_pos}/{human_len} rows ({per_sec}, eta {eta})",
                )
                .expect("static template")
                .progress_chars("=> "),
            );
            b.set_message(wl.name());
            b
        } else {
            ProgressBar::hidden()
        };
        wl.load(&engine, cfg.threads, cfg.seed, &|n| bar.inc(n))?;
        // Durable and marked complete: a load cut short is never taken for data.
        engine.load_done()?;
        bar.finish_and_clear();
        load_s = Some(t0.elapsed().as_secs_f64());
    } else if !cfg.no_load {
        return Err(Error::fatal(
            "the database already holds data: add --no-load to run on it, or --reload to discard it and load again",
        ));
    }

    let ntypes = wl.txn_types().len();
    let phase = AtomicU8::new(
        if matches!(cfg.stop, Stop::Txns(_)) || cfg.warmup_s <= 0.0 {
            MEASURE
        } else {
            WARMUP
        },
    );
    let live: Vec<Live> = (0..cfg.threads).map(|_| Live::default()).collect();
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
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    // Split over every transaction stream (thread x coroutine).
    let streams = cfg.threads * ncoro;
    let per_stream_txns = match cfg.stop {
        Stop::Txns(n) => Some(
            (0..streams)
                .map(|i| n / streams as u64 + (i < (n % streams as u64) as usize) as u64)
                .collect::<Vec<_>>(),
        ),
        Stop::Seconds(_) => None,
    };
    if cfg.trace_measured && phase.load(Ordering::Relaxed) == MEASURE {
        probe::tracing_start();
    }

    let mut measure_start = Instant::now();
    let mut measured = Duration::ZERO;
    let results: Vec<WorkerResult> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..cfg.threads)
            .map(|w| {
                let (engine, phase, live, fatal, acked, cores) =
                    (&engine, &phase, &live, &fatal, &acked, &cores);
                let quotas = &per_stream_txns;
                sc.spawn(move || {
                    if cfg.pin && !cores.is_empty() {
                        core_affinity::set_for_current(cores[w % cores.len()]);
                    }
                    let sh = Shared {
                        wl,
                        phase,
                        live: &live[w],
                        fatal,
                        acked,
                        clock: LatencyClock::new(),
                        at_measure: Cell::new(None),
                    };
                    let mut r = WorkerResult::new(ntypes);
                    if ncoro == 1 {
                        // No coroutine at all: the plain loop on this thread.
                        let mut st = wl.worker_state(w, cfg.threads, cfg.seed);
                        let mut s = Session::new(engine.worker(w));
                        sh.stream(
                            &mut s,
                            &mut st,
                            quotas.as_ref().map(|q| q[w]),
                            w as u64,
                            &mut r,
                        );
                    } else {
                        let parts: Vec<std::cell::RefCell<WorkerResult>> = (0..ncoro)
                            .map(|_| std::cell::RefCell::new(WorkerResult::new(ntypes)))
                            .collect();
                        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..ncoro)
                            .map(|c| {
                                let (sh, part) = (&sh, &parts[c]);
                                let id = w * ncoro + c;
                                Box::new(move || {
                                    let mut st = wl.worker_state(id, streams, cfg.seed);
                                    let mut s = Session::new(engine.worker(id));
                                    let quota = quotas.as_ref().map(|q| q[id]);
                                    sh.stream(
                                        &mut s,
                                        &mut st,
                                        quota,
                                        id as u64,
                                        &mut part.borrow_mut(),
                                    );
                                }) as Box<dyn FnOnce() + '_>
                            })
                            .collect();
                        let policy = match (cfg.steps_team, cfg.coroutine_seed) {
                            (Some(team), _) => rt::coro::Policy::Steps { team },
                            (None, Some(seed)) => rt::coro::Policy::Seeded(seed ^ w as u64),
                            (None, None) => rt::coro::Policy::RoundRobin,
                        };
                        let cs = rt::coro::run(policy, bodies);
                        r.switches = cs.switches;
                        r.steps = cs.steps;
                        for p in &parts {
                            r.merge(&p.borrow());
                        }
                    }
                    if let Some((cpu0, waits0)) = sh.at_measure.get() {
                        if let (Some(a), Some(b)) = (cpu0, thread_cpu()) {
                            r.cpu = Some(b.saturating_sub(a));
                        }
                        r.waits = rt::thread_stats().since(&waits0);
                    }
                    r
                })
            })
            .collect();

        // The main thread keeps time and prints the live line.
        let run_start = Instant::now();
        if phase.load(Ordering::Relaxed) == MEASURE {
            measure_start = run_start;
        }
        if let Stop::Seconds(secs) = cfg.stop {
            let warm = Duration::from_secs_f64(cfg.warmup_s.max(0.0));
            let total = warm + Duration::from_secs_f64(secs);
            let mut last = (0u64, 0u64);
            let mut tick = 1u64;
            loop {
                if phase.load(Ordering::Relaxed) == STOP {
                    break;
                }
                let now = run_start.elapsed();
                if phase.load(Ordering::Relaxed) == WARMUP && now >= warm {
                    measure_start = Instant::now();
                    phase.store(MEASURE, Ordering::Relaxed);
                    if cfg.trace_measured {
                        probe::tracing_start();
                    }
                }
                if now >= total {
                    break;
                }
                if now >= Duration::from_secs(tick) {
                    tick += 1;
                    let c: u64 = live
                        .iter()
                        .map(|l| l.committed.load(Ordering::Relaxed))
                        .sum();
                    let a: u64 = live.iter().map(|l| l.aborted.load(Ordering::Relaxed)).sum();
                    if cfg.interactive {
                        let (dc, da) = (c - last.0, a - last.1);
                        let what = if phase.load(Ordering::Relaxed) == WARMUP {
                            "warm-up"
                        } else {
                            "measure"
                        };
                        let rate = if dc + da > 0 {
                            100.0 * da as f64 / (dc + da) as f64
                        } else {
                            0.0
                        };
                        eprintln!(
                            "[{:>4}s] {what:<8} {:>12.0} txn/s   aborts {rate:>6.2}%",
                            tick - 1,
                            dc as f64
                        );
                    }
                    last = (c, a);
                }
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
            measured = measure_start.elapsed();
            phase.store(STOP, Ordering::Relaxed);
        }
        let results: Vec<WorkerResult> = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        if matches!(cfg.stop, Stop::Txns(_)) {
            measured = measure_start.elapsed();
        }
        results
    });
    if cfg.trace_measured {
        probe::tracing_stop();
    }
    if let Some(e) = fatal.into_inner().unwrap() {
        return Err(e);
    }

    let secs = measured.as_secs_f64().max(1e-9);
    let mut per_txn = Vec::new();
    let mut all_hist = new_hist();
    let mut committed_all = vec![0u64; ntypes];
    for (t, name) in wl.txn_types().iter().enumerate() {
        let mut h = new_hist();
        let (mut c, mut a, mut u) = (0, 0, 0);
        for r in &results {
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
        per_txn.push(TxnTypeReport {
            name: name.to_string(),
            committed: c,
            aborted: a,
            user_aborts: u,
            throughput_tps: c as f64 / secs,
            latency_us: Latency::from_ns(&h),
        });
    }
    // Share of the measured interval the workers spent on a CPU (1.0 = each had a core).
    let cpu_busy = results
        .iter()
        .map(|r| r.cpu)
        .sum::<Option<Duration>>()
        .map(|c| c.as_secs_f64() / (secs * cfg.threads as f64));
    let mut waits = rt::WaitStats::default();
    for r in &results {
        waits.add(&r.waits);
    }
    let waits: Vec<WaitReport> = rt::WaitKind::ALL
        .iter()
        .map(|&k| WaitReport {
            kind: k.name().to_string(),
            count: waits.waits[k as usize],
            total_ms: waits.wait_ns[k as usize] as f64 / 1e6,
        })
        .collect();
    let switches: u64 = results.iter().map(|r| r.switches).sum();
    let steps = results
        .iter()
        .filter_map(|r| r.steps.as_ref())
        .fold(None, |acc: Option<rt::coro::StepsStats>, s| {
            let mut a = acc.unwrap_or_default();
            a.add(s);
            Some(a)
        })
        .map(|s| crate::report::StepsReport::new(&s, &schema));
    let committed: u64 = per_txn.iter().map(|t| t.committed).sum();
    let aborted: u64 = per_txn.iter().map(|t| t.aborted).sum();
    let user_aborts: u64 = per_txn.iter().map(|t| t.user_aborts).sum();
    let tpmc = per_txn
        .iter()
        .find(|t| t.name == "new-order" || t.name == "new_order")
        .map(|t| t.committed as f64 * 60.0 / secs);

    let checks = if cfg.check {
        let info = RunInfo {
            committed: fresh.then_some(committed_all),
            acked: None,
        };
        let list = wl.check(&engine, &info)?;
        Checks {
            passed: list.iter().all(|c| c.passed),
            list,
        }
    } else {
        Checks {
            passed: true,
            list: vec![],
        }
    };
    let engine_stats = engine.stats();
    engine.shutdown()?;

    let config = serde_json::json!({
        "workload": wl.config(),
        "engine": cfg.engine,
        "threads": cfg.threads,
        "coroutines": ncoro,
        "warmup_s": cfg.warmup_s,
        "stop": cfg.stop,
        "seed": cfg.seed,
        "pin": cfg.pin && !cores.is_empty(),
        "no_load": cfg.no_load,
    });
    Ok(Report {
        workload: wl.name().to_string(),
        engine: E::NAME.to_string(),
        threads: cfg.threads,
        coroutines: ncoro,
        coroutine_switches: switches,
        steps,
        waits,
        duration_s: secs,
        warmup_s: if matches!(cfg.stop, Stop::Seconds(_)) {
            cfg.warmup_s.max(0.0)
        } else {
            0.0
        },
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
        worker_cpu_busy: cpu_busy,
        tpmc,
        latency_us: Latency::from_ns(&all_hist),
        per_txn,
        checks,
        load_s,
        config,
        engine_stats,
        machine: machine::describe(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        started_at_unix_s,
    })
}

/// Open an existing database and run the workload's consistency check on it.
pub fn check_only<E: Engine, W: Workload>(
    wl: &W,
    opts: &EngineOptions,
    info: &RunInfo,
) -> api::Result<Vec<workloads::Check>> {
    let engine = E::open(Arc::new(wl.schema()), opts)?;
    if !engine.has_data() {
        return Err(Error::fatal("the database holds no data to check"));
    }
    let list = wl.check(&engine, info)?;
    engine.shutdown()?;
    Ok(list)
}
