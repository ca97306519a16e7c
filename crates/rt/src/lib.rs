//! The one way to wait. Every place an engine waits (lock grant, latch contention, log
//! flush, page I/O, epoch advance) calls [`wait_until`] or [`Event::wait`] here, so that a
//! scheduler that runs transactions as coroutines (STEPS, interleaving) can take waiting
//! over by installing a [`Scheduler`] for its thread, and so waits are counted by kind.
//!
//! This module must never hold an engine lock itself, and never wait unboundedly without
//! re-checking the caller's condition.

use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum WaitKind {
    Lock = 0,
    Latch = 1,
    LogFlush = 2,
    PageIo = 3,
    Epoch = 4,
    Other = 5,
}

impl WaitKind {
    pub const ALL: [WaitKind; 6] = [
        WaitKind::Lock,
        WaitKind::Latch,
        WaitKind::LogFlush,
        WaitKind::PageIo,
        WaitKind::Epoch,
        WaitKind::Other,
    ];
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::Lock => "lock",
            WaitKind::Latch => "latch",
            WaitKind::LogFlush => "log_flush",
            WaitKind::PageIo => "page_io",
            WaitKind::Epoch => "epoch",
            WaitKind::Other => "other",
        }
    }
}

/// A thread's counts of waits and time waited, by kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct WaitStats {
    pub waits: [u64; 6],
    pub wait_ns: [u64; 6],
}

thread_local! {
    static STATS: Cell<WaitStats> = const { Cell::new(WaitStats { waits: [0; 6], wait_ns: [0; 6] }) };
    static SCHED: RefCell<Option<Box<dyn Scheduler>>> = const { RefCell::new(None) };
}

/// This thread's wait statistics so far.
pub fn thread_stats() -> WaitStats {
    STATS.with(|s| s.get())
}

fn record(kind: WaitKind, since: Instant) {
    STATS.with(|s| {
        let mut v = s.get();
        v.waits[kind as usize] += 1;
        v.wait_ns[kind as usize] += since.elapsed().as_nanos() as u64;
        s.set(v);
    });
}

/// Takes over waiting on a thread (e.g. switches to another coroutine instead of
/// blocking). Returns whether `cond` became true before `deadline`.
pub trait Scheduler {
    fn wait(
        &self,
        kind: WaitKind,
        cond: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool;
}

/// Install (or remove, with `None`) the scheduler that handles this thread's waits.
pub fn set_scheduler(s: Option<Box<dyn Scheduler>>) {
    SCHED.with(|c| *c.borrow_mut() = s);
}

const SPINS: u32 = 64;
const YIELDS: u32 = 16;

/// Wait until `cond()` holds or `timeout` passes: spin briefly, then yield, then sleep in
/// growing steps (up to 1 ms). For short waits on state another thread changes without
/// signalling (latches, epochs). Returns whether `cond` held.
pub fn wait_until(
    kind: WaitKind,
    timeout: Option<Duration>,
    mut cond: impl FnMut() -> bool,
) -> bool {
    if cond() {
        return true;
    }
    let start = Instant::now();
    let deadline = timeout.map(|t| start + t);
    let handled = SCHED.with(|c| {
        c.try_borrow()
            .ok()
            .and_then(|s| s.as_ref().map(|s| s.wait(kind, &mut cond, deadline)))
    });
    if let Some(ok) = handled {
        record(kind, start);
        return ok;
    }
    let mut round = 0u32;
    let ok = loop {
        if cond() {
            break true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break false;
        }
        if round < SPINS {
            std::hint::spin_loop();
        } else if round < SPINS + YIELDS {
            std::thread::yield_now();
        } else {
            let us = 1u64 << ((round - SPINS - YIELDS).min(10));
            std::thread::sleep(Duration::from_micros(us));
        }
        round += 1;
    };
    record(kind, start);
    ok
}

/// A condition other threads signal: waiters block until notified and their condition
/// holds (lock grants, log flushes, page reads).
#[derive(Default)]
pub struct Event {
    generation: Mutex<u64>,
    cv: Condvar,
}

impl Event {
    pub fn new() -> Self {
        Self::default()
    }

    /// Wake every waiter so it re-checks its condition.
    pub fn notify_all(&self) {
        *self.generation.lock() += 1;
        self.cv.notify_all();
    }

    /// Block until `cond()` holds (checked after every notification) or `timeout`
    /// passes. Returns whether `cond` held.
    pub fn wait(
        &self,
        kind: WaitKind,
        timeout: Option<Duration>,
        mut cond: impl FnMut() -> bool,
    ) -> bool {
        if cond() {
            return true;
        }
        let start = Instant::now();
        let deadline = timeout.map(|t| start + t);
        let handled = SCHED.with(|c| {
            c.try_borrow()
                .ok()
                .and_then(|s| s.as_ref().map(|s| s.wait(kind, &mut cond, deadline)))
        });
        if let Some(ok) = handled {
            record(kind, start);
            return ok;
        }
        let mut g = self.generation.lock();
        let ok = loop {
            if cond() {
                break true;
            }
            match deadline {
                Some(d) => {
                    if Instant::now() >= d {
                        break cond();
                    }
                    // Bounded sleep: a notification between cond() and wait is re-checked.
                    let step = (d - Instant::now()).min(Duration::from_millis(10));
                    self.cv.wait_for(&mut g, step);
                }
                None => {
                    self.cv.wait_for(&mut g, Duration::from_millis(10));
                }
            }
        };
        drop(g);
        record(kind, start);
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn event_wakes_waiter_when_condition_holds() {
        let ev = Arc::new(Event::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (e2, f2) = (ev.clone(), flag.clone());
        let t = std::thread::spawn(move || {
            e2.wait(WaitKind::Lock, None, || f2.load(Ordering::Acquire))
        });
        std::thread::sleep(Duration::from_millis(5));
        flag.store(true, Ordering::Release);
        ev.notify_all();
        assert!(t.join().unwrap());
        assert!(
            thread_stats().waits.iter().all(|&w| w == 0),
            "waits are per thread"
        );
    }

    #[test]
    fn wait_until_times_out_and_counts() {
        assert!(!wait_until(
            WaitKind::Latch,
            Some(Duration::from_millis(2)),
            || false
        ));
        assert_eq!(thread_stats().waits[WaitKind::Latch as usize], 1);
        assert!(wait_until(WaitKind::Latch, None, || true));
    }
}
