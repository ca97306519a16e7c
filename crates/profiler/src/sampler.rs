//! Per-thread cpu-clock samplers with call chains, and their collection.
//!
//! Each worker thread opens its own perf_event (software cpu-clock, this thread only)
//! when it enters the measured phase, and reads its ring buffer itself after every
//! transaction attempt: the samples found then were taken during that attempt (or the
//! driver's work just before it), so they are charged to its transaction type exactly,
//! with no shared state and nothing written on the hot path between samples. (Under
//! coroutines a thread interleaves transactions; the samples go to the attempt that ends
//! next, an approximation the report states.) The kernel walks the user stack by frame
//! pointers, which the workspace build keeps (`.cargo/config.toml`).

use crate::report::{Profile, NO_TXN};
use crate::symbolize::{loaded_segments, Symbolizer};
use perf_event::data::Record;
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The ring buffer of each thread's sampler: room for about a thousand deep call chains
/// between two reads (a long transaction at a high frequency).
const RING_BYTES: usize = 256 * 1024;
/// perf's context markers in a call chain are the top 4095 values.
const CONTEXT_MAX: u64 = u64::MAX - 4095 + 1;
const CONTEXT_USER: u64 = (-512i64) as u64;
const KERNEL_START: u64 = 1 << 63;

#[derive(Debug, Clone)]
pub struct Settings {
    /// Samples per second of a thread's CPU time.
    pub frequency_hz: u64,
    /// Also count the generic hardware events on each worker (`counters`); only where
    /// `counters::available` said yes.
    pub counters: bool,
    /// The component rules (`components::rules_for(engine)`).
    pub components: Vec<(String, String)>,
    /// Where a worker's time is spent, asked on the worker thread when its measured
    /// phase starts: `None` samples the worker itself; a function giving the pid of
    /// another process (the PostgreSQL backend serving this thread's connection) samples
    /// that process instead, and its samples are symbolized with its own objects.
    pub target: Option<fn() -> Option<u32>>,
}

impl Settings {
    /// Sample the workers themselves, with the default component table.
    pub fn new(frequency_hz: u64) -> Settings {
        Settings {
            frequency_hz,
            counters: false,
            components: components::default_components(),
            target: None,
        }
    }
}

/// Samples of one thread, flattened: per sample `[txn_type | kernel << 32, n, n addrs]`
/// (user-space addresses, innermost first).
#[derive(Default)]
struct ThreadSamples {
    /// The process sampled instead of this thread (see `Settings::target`) and its
    /// executable segments, read when sampling began.
    target: Option<(u32, Vec<crate::symbolize::Segment>)>,
    chains: Vec<u64>,
    samples: u64,
    lost: u64,
    /// Time spent reading the ring buffer (the sampler's own cost in the worker).
    read_ns: u64,
}

struct Inner {
    period_ns: u64,
    kernel: bool,
    threads: Mutex<Vec<ThreadSamples>>,
    errors: Mutex<Vec<String>>,
    /// Hardware counter totals (`Settings::counters`).
    counters: Option<crate::counters::Totals>,
}

/// The profiler of one run: give it to `driver::run_limited`, then `finish`.
pub struct Profiler {
    inner: Arc<Inner>,
    settings: Settings,
}

fn open(period_ns: u64, kernel: bool, pid: Option<u32>) -> std::io::Result<Sampler> {
    let mut b = Builder::new(Software::CPU_CLOCK);
    match pid {
        None => b.observe_self(),
        Some(p) => b.observe_pid(p as i32),
    };
    b.any_cpu()
        .sample_period(period_ns)
        .sample(SampleFlag::IP | SampleFlag::CALLCHAIN)
        .exclude_kernel(!kernel)
        .exclude_hv(true)
        // The user part of the chain says which engine code entered the kernel.
        .exclude_callchain_kernel(true)
        .enabled(true)
        .build()?
        .sampled(RING_BYTES)
}

impl Profiler {
    /// Checks that this machine lets the process sample itself (kernel time included
    /// when allowed, else user time only): an error here comes before the run.
    pub fn new(settings: Settings) -> Result<Profiler, String> {
        if settings.frequency_hz == 0 {
            return Err("the sampling frequency must be at least 1 Hz".into());
        }
        let period_ns = (1_000_000_000 / settings.frequency_hz).max(1);
        let kernel = match open(period_ns, true, None) {
            Ok(_) => true,
            Err(_) => match open(period_ns, false, None) {
                Ok(_) => false,
                Err(e) => {
                    return Err(format!(
                        "cannot open a cpu-clock sampler (perf_event_open: {e}); \
                         /proc/sys/kernel/perf_event_paranoid may forbid it, or the \
                         kernel has no perf events"
                    ))
                }
            },
        };
        Ok(Profiler {
            inner: Arc::new(Inner {
                period_ns,
                kernel,
                threads: Mutex::new(Vec::new()),
                errors: Mutex::new(Vec::new()),
                counters: settings.counters.then(crate::counters::Totals::default),
            }),
            settings,
        })
    }

    /// The hardware counters' totals over the workers' measured phase, if counted.
    pub fn counters(&self) -> Option<crate::tmam::Counters> {
        self.inner.counters.as_ref().map(|t| t.take())
    }

    /// Symbolizes and attributes every sample. `txn_types` names the workload's types;
    /// `thread_ns`: the workers' measured time in total (threads x measured seconds).
    pub fn finish(self, txn_types: &[&str], thread_ns: u64) -> Result<Profile, String> {
        if let Some(e) = self.inner.errors.lock().unwrap().first() {
            return Err(e.clone());
        }
        let threads = std::mem::take(&mut *self.inner.threads.lock().unwrap());
        let mut own = Symbolizer::new(loaded_segments());
        // Processes sampled instead of the workers: one symbolizer per distinct layout
        // (backends forked from one postmaster share theirs).
        let mut others: Vec<(Vec<crate::symbolize::Segment>, Symbolizer)> = Vec::new();
        let mut b = crate::report::Builder::new(txn_types, &self.settings.components);
        let mut read_ns = 0;
        let mut pids = Vec::new();
        for t in &threads {
            let sym = match &t.target {
                None => &mut own,
                Some((pid, segs)) => {
                    pids.push(*pid);
                    let i = match others.iter().position(|(s, _)| same_layout(s, segs)) {
                        Some(i) => i,
                        None => {
                            others.push((segs.clone(), Symbolizer::new(segs.clone())));
                            others.len() - 1
                        }
                    };
                    &mut others[i].1
                }
            };
            b.lost += t.lost;
            read_ns += t.read_ns;
            let mut i = 0;
            while i + 2 <= t.chains.len() {
                let head = t.chains[i];
                let n = t.chains[i + 1] as usize;
                let addrs = &t.chains[i + 2..i + 2 + n];
                i += 2 + n;
                let frames: Vec<Vec<String>> = addrs
                    .iter()
                    .enumerate()
                    // A return address points after the call: look up the call itself.
                    .map(|(k, &a)| sym.frames(if k == 0 { a } else { a - 1 }).to_vec())
                    .collect();
                b.add(head as u32, head >> 32 != 0, &frames);
            }
        }
        b.library.extend(own.library.iter().cloned());
        for (_, s) in &others {
            b.library.extend(s.library.iter().cloned());
        }
        let mut warnings = own.warnings;
        for (_, s) in others {
            warnings.extend(
                s.warnings
                    .into_iter()
                    .filter(|w| !warnings.contains(w))
                    .collect::<Vec<_>>(),
            );
        }
        let mut p = b.finish(
            self.settings.frequency_hz,
            self.inner.kernel,
            threads.len(),
            read_ns as f64 / thread_ns.max(1) as f64,
            warnings,
        );
        if self.settings.target.is_some() {
            p.sampled_processes = Some(pids);
        }
        Ok(p)
    }
}

/// Whether two processes' executable segments are the same (so one symbolizer serves
/// both).
fn same_layout(a: &[crate::symbolize::Segment], b: &[crate::symbolize::Segment]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.start == y.start && x.end == y.end && x.path == y.path)
}

impl Profiler {
    fn error(&self, e: String) {
        self.inner.errors.lock().unwrap().push(e);
    }
}

impl driver::Observer for Profiler {
    fn thread_start(&self) -> Box<dyn driver::ThreadObserver> {
        let mut data = ThreadSamples::default();
        let pid = match self.settings.target {
            None => None,
            Some(f) => match f() {
                Some(pid) => match crate::symbolize::process_segments(pid) {
                    Ok(segs) => {
                        data.target = Some((pid, segs));
                        Some(pid)
                    }
                    Err(e) => {
                        self.error(e);
                        None
                    }
                },
                None => {
                    self.error(
                        "a worker thread has no server process to sample (no backend pid)"
                            .to_string(),
                    );
                    None
                }
            },
        };
        let sampler = if self.settings.target.is_some() && pid.is_none() {
            None
        } else {
            match open(self.inner.period_ns, self.inner.kernel, pid) {
                Ok(s) => Some(s),
                Err(e) => {
                    let whose = match pid {
                        Some(p) => format!("server process {p}'s"),
                        None => "a worker thread's".to_string(),
                    };
                    self.error(format!("cannot open {whose} sampler: {e}"));
                    None
                }
            }
        };
        Box::new(ThreadSampler {
            inner: self.inner.clone(),
            sampler,
            data,
            counters: self
                .inner
                .counters
                .as_ref()
                .map(crate::counters::ThreadCounters::start),
        })
    }
}

struct ThreadSampler {
    inner: Arc<Inner>,
    sampler: Option<Sampler>,
    data: ThreadSamples,
    counters: Option<crate::counters::ThreadCounters>,
}

impl ThreadSampler {
    fn read(&mut self, txn_type: u32) {
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        let mut t0 = None;
        while let Some(rec) = s.next_record() {
            t0.get_or_insert_with(Instant::now);
            match rec.parse_record() {
                Ok(Record::Sample(smp)) => {
                    let kernel = smp.ip().is_some_and(|ip| ip >= KERNEL_START);
                    let chain = smp.callchain().unwrap_or(&[]);
                    let d = &mut self.data;
                    d.samples += 1;
                    d.chains.push(txn_type as u64 | (kernel as u64) << 32);
                    let at = d.chains.len();
                    d.chains.push(0);
                    d.chains.extend(user_addrs(chain));
                    d.chains[at] = (d.chains.len() - at - 1) as u64;
                }
                Ok(Record::Lost(l)) => self.data.lost += l.lost,
                Ok(Record::LostSamples(l)) => self.data.lost += l.lost,
                _ => {}
            }
        }
        if let Some(t0) = t0 {
            self.data.read_ns += t0.elapsed().as_nanos() as u64;
        }
    }
}

/// The user-space part of a perf call chain (after its `PERF_CONTEXT_USER` marker; all
/// of it when it has no marker), innermost first.
pub fn user_addrs(chain: &[u64]) -> impl Iterator<Item = u64> + '_ {
    let marked = chain.iter().any(|&a| a >= CONTEXT_MAX);
    let mut user = !marked;
    chain.iter().copied().filter(move |&a| {
        if a >= CONTEXT_MAX {
            user = a == CONTEXT_USER;
            return false;
        }
        user && a != 0 && a < KERNEL_START
    })
}

impl driver::ThreadObserver for ThreadSampler {
    fn txn_end(&mut self, txn_type: u32) {
        self.read(txn_type);
    }

    fn finish(mut self: Box<Self>) {
        if let Some(s) = self.sampler.as_mut() {
            let _ = s.disable();
        }
        if let Some(c) = self.counters.take() {
            c.finish();
        }
        self.read(NO_TXN);
        let data = std::mem::take(&mut self.data);
        self.inner.threads.lock().unwrap().push(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_user_part_of_a_chain_is_kept() {
        let kernel_marker = (-128i64) as u64;
        let chain = [
            kernel_marker,
            0xffff_ffff_8100_0000,
            CONTEXT_USER,
            0x5555_0000_1000,
            0x5555_0000_2000,
        ];
        let got: Vec<u64> = user_addrs(&chain).collect();
        assert_eq!(got, vec![0x5555_0000_1000, 0x5555_0000_2000]);
        let unmarked = [0x10u64, 0x20];
        assert_eq!(user_addrs(&unmarked).collect::<Vec<_>>(), vec![0x10, 0x20]);
    }
}
