//! `profile --counters` on a machine with hardware counters: each worker thread opens
//! the generic hardware events perf_event offers on any core (cycles, instructions,
//! branch misses, L1-I, L1-D and last-level read misses) for itself when its measured
//! phase begins, and adds their counts (scaled by the time the kernel ran them, when it
//! had to multiplex) to the run's total when it stops. The totals go to `tmam::compute`
//! under perf's generic names, exactly as a recorded `perf stat` would. TMAM's own
//! events are model-specific raw encodings this module does not open: on a machine with
//! counters the breakdown needs a recorded file (`--counters-from`) for now.

use crate::tmam::Counters;
use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware};
use perf_event::{Builder, Counter};
use std::sync::{Arc, Mutex};

enum Ev {
    Hw(Hardware),
    ReadMiss(CacheId),
}

/// The events, under the names `tmam` reads (perf's generic names).
const EVENTS: [(&str, Ev); 6] = [
    ("cycles", Ev::Hw(Hardware::CPU_CYCLES)),
    ("instructions", Ev::Hw(Hardware::INSTRUCTIONS)),
    ("branch-misses", Ev::Hw(Hardware::BRANCH_MISSES)),
    ("L1-icache-load-misses", Ev::ReadMiss(CacheId::L1I)),
    ("L1-dcache-load-misses", Ev::ReadMiss(CacheId::L1D)),
    ("LLC-load-misses", Ev::ReadMiss(CacheId::LL)),
];

/// This thread's user-space count of `ev`, started.
fn open(ev: &Ev) -> std::io::Result<Counter> {
    fn build(b: &mut Builder<'_>) -> std::io::Result<Counter> {
        b.observe_self()
            .any_cpu()
            .exclude_kernel(true)
            .exclude_hv(true)
            .enabled(true)
            .build()
    }
    match ev {
        Ev::Hw(h) => build(&mut Builder::new(*h)),
        Ev::ReadMiss(which) => build(&mut Builder::new(Cache {
            which: *which,
            operation: CacheOp::READ,
            result: CacheResult::MISS,
        })),
    }
}

/// Whether this machine's kernel lets the process count hardware events: opens
/// `PERF_COUNT_HW_CPU_CYCLES` on the calling thread. `Err` says why not.
pub fn available() -> Result<(), String> {
    Builder::new(Hardware::CPU_CYCLES)
        .observe_self()
        .any_cpu()
        .build()
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The run's totals, filled by the worker threads.
#[derive(Default, Clone)]
pub struct Totals(Arc<Mutex<Counters>>);

impl Totals {
    pub fn take(&self) -> Counters {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// One worker thread's open counters (those the kernel accepted).
pub struct ThreadCounters {
    open: Vec<(&'static str, Counter)>,
    totals: Totals,
}

impl ThreadCounters {
    /// Opens and starts the events on the calling thread; an event the kernel refuses
    /// is left out (its figures are then reported missing).
    pub fn start(totals: &Totals) -> ThreadCounters {
        let open = EVENTS
            .iter()
            .filter_map(|(name, ev)| open(ev).ok().map(|c| (*name, c)))
            .collect();
        ThreadCounters {
            open,
            totals: totals.clone(),
        }
    }

    /// Stops the counters and adds them to the totals.
    pub fn finish(mut self) {
        let mut t = self.totals.0.lock().unwrap();
        for (name, c) in self.open.iter_mut() {
            let _ = c.disable();
            if let Ok(d) = c.read_full() {
                let scale = match (d.time_enabled(), d.time_running()) {
                    (Some(e), Some(r)) if !r.is_zero() => e.as_secs_f64() / r.as_secs_f64(),
                    _ => 1.0,
                };
                t.insert(name, d.count() as f64 * scale);
            }
        }
    }
}
