//! The coroutine scheduler: one thread runs N transactions' bodies as stackful
//! coroutines (corosensei) and switches whenever one would wait (every wait goes through
//! `rt`, which hands it to the [`Scheduler`] installed here) instead of blocking the
//! thread. Blocking calls (page I/O, log writes) run on `rt`'s I/O threads meanwhile.
//!
//! Policies: [`Policy::RoundRobin`] (runs: switch only on waits, next coroutine in turn)
//! and [`Policy::Seeded`] (tests: switch at every wait *and* every [`Point`], and a seeded
//! generator picks which coroutine runs next, so a seed names one interleaving of the
//! thread's transactions; it reproduces exactly as long as what the coroutines wait for
//! does not depend on other threads' timing). [`Policy::Interleave`] (`--interleave`)
//! is round-robin that also switches at [`Point::Probe`], where an index probe has just
//! prefetched a line. STEPS will add a policy that switches at its CTX points to the next
//! member of a team.
//!
//! Must never switch except inside a wait or at a point a body reached (a coroutine is
//! never preempted), and must never return before every coroutine finished.

use crate::{Point, Scheduler, WaitKind};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::Instant;

/// How a thread's scheduler picks the coroutine to run next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Switch only when the running coroutine would wait; take the next in turn.
    RoundRobin,
    /// Switch at every wait and every point; the seed picks who runs next.
    Seeded(u64),
    /// `--interleave`: like `RoundRobin`, and also switch at every [`Point::Probe`] (an
    /// index probe prefetched a line it is about to need), so the miss overlaps other
    /// transactions' work instead of stalling the thread.
    Interleave,
}

/// Coroutine stacks: mapped lazily, so only the touched part costs memory. Engine frames
/// hold page-sized buffers; 1 MiB leaves ample room.
const STACK_BYTES: usize = 1 << 20;

/// What a coroutine tells the scheduler when it gives the thread back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Yielded {
    /// Waiting and its condition is still false after being resumed: no progress.
    StillWaiting,
    /// Started a wait, reached a point or backed off: it made progress before.
    Progress,
}

type Co = Coroutine<(), Yielded, ()>;

/// What a thread's coroutines did (for the report and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Times the scheduler resumed a coroutine.
    pub switches: u64,
    /// Times every live coroutine was waiting and the thread paused.
    pub idle_pauses: u64,
    /// Switches made at [`Point::Probe`] (index probes that prefetched a line).
    pub probe_switches: u64,
}

struct Sched {
    cur: Cell<usize>,
    yielders: Vec<Cell<*const Yielder<(), Yielded>>>,
    /// The tracer marks (`probe` op codes) each coroutine has open.
    marks: RefCell<Vec<Vec<u32>>>,
    policy: Policy,
    /// Coroutines not yet returned (a lone one has nobody to switch to).
    live: Cell<usize>,
    probe_switches: Cell<u64>,
    /// Under valgrind (the tracer reads operation marks); natively marks are not kept.
    traced: bool,
}

impl Sched {
    fn suspend(&self, y: Yielded) {
        let i = self.cur.get();
        if !self.traced {
            // Natively nobody reads the marks: switch without touching them (an
            // interleaving switch happens several times per transaction).
            let yp = self.yielders[i].get();
            assert!(!yp.is_null(), "suspend outside a started coroutine");
            // SAFETY: set by coroutine `i` when it started; valid while it runs (now).
            unsafe { (*yp).suspend(y) };
            return;
        }
        // Close this coroutine's open operation marks while others run, reopen after.
        let open = std::mem::take(&mut self.marks.borrow_mut()[i]);
        for &op in open.iter().rev() {
            probe::client::request(probe::client::OP_END, op as u64, 0);
        }
        let yp = self.yielders[i].get();
        assert!(!yp.is_null(), "suspend outside a started coroutine");
        // SAFETY: set by coroutine `i` when it started; valid while it runs (now).
        unsafe { (*yp).suspend(y) };
        debug_assert_eq!(self.cur.get(), i, "resumed as another coroutine");
        for &op in open.iter() {
            probe::client::request(probe::client::OP_BEGIN, op as u64, 0);
        }
        self.marks.borrow_mut()[i] = open;
    }
}

impl Scheduler for Sched {
    fn wait(
        &self,
        _kind: WaitKind,
        cond: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        let mut first = true;
        loop {
            if cond() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            self.suspend(if first {
                Yielded::Progress
            } else {
                Yielded::StillWaiting
            });
            first = false;
        }
    }

    fn point(&self, p: Point) {
        // Never switch voluntarily while this coroutine unwinds: the panic count is the
        // thread's, and a second panic in another coroutine meanwhile would abort.
        let switch = match self.policy {
            Policy::Seeded(_) => true,
            Policy::Interleave => p == Point::Probe && self.live.get() > 1,
            Policy::RoundRobin => false,
        };
        if switch && !std::thread::panicking() {
            if p == Point::Probe {
                self.probe_switches.set(self.probe_switches.get() + 1);
            }
            self.suspend(Yielded::Progress);
        }
    }

    fn op_mark(&self, op: u32, enter: bool) {
        if !self.traced {
            return;
        }
        let mut m = self.marks.borrow_mut();
        let open = &mut m[self.cur.get()];
        if enter {
            open.push(op);
        } else if let Some(i) = open.iter().rposition(|&o| o == op) {
            open.truncate(i);
        }
    }

    fn offloads_io(&self) -> bool {
        true
    }
}

/// Run `bodies` as coroutines on this thread under `policy`, until every one returned.
/// A panic in a body is resumed here once the others have finished.
pub fn run<'a>(policy: Policy, bodies: Vec<Box<dyn FnOnce() + 'a>>) -> Stats {
    let n = bodies.len();
    let sched = Sched {
        cur: Cell::new(0),
        yielders: (0..n).map(|_| Cell::new(std::ptr::null())).collect(),
        marks: RefCell::new(vec![Vec::new(); n]),
        policy,
        live: Cell::new(n),
        probe_switches: Cell::new(0),
        traced: probe::running_on_valgrind(),
    };
    let panicked: RefCell<Option<Box<dyn Any + Send>>> = RefCell::new(None);
    let mut stats = Stats::default();
    {
        let mut cos: Vec<Option<Co>> = bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| {
                // SAFETY: every coroutine is run to completion (or dropped) before this
                // function returns, so what `body` borrows outlives it.
                let body: Box<dyn FnOnce() + 'static> = unsafe { std::mem::transmute(body) };
                let cell: *const Cell<*const Yielder<(), Yielded>> = &sched.yielders[i];
                let slot: *const RefCell<Option<Box<dyn Any + Send>>> = &panicked;
                let stack = DefaultStack::new(STACK_BYTES).expect("allocate a coroutine stack");
                Some(Coroutine::with_stack(
                    stack,
                    move |y: &Yielder<(), Yielded>, ()| {
                        // SAFETY: `sched` and `panicked` outlive every coroutine (above).
                        unsafe { (*cell).set(y) };
                        if let Err(p) = catch_unwind(AssertUnwindSafe(body)) {
                            let mut s = unsafe { (*slot).borrow_mut() };
                            if s.is_none() {
                                *s = Some(p);
                            }
                        }
                    },
                ))
            })
            .collect();
        let mut rng = match policy {
            Policy::Seeded(s) => Some(Xoshiro256PlusPlus::seed_from_u64(s)),
            Policy::RoundRobin | Policy::Interleave => None,
        };
        crate::with_scheduler(&sched, || {
            let mut live = n;
            let mut idle = 0usize;
            let mut round = 0u32;
            let mut i = n.wrapping_sub(1);
            while live > 0 {
                i = match rng.as_mut() {
                    // The next live one in turn (no division: this runs at every switch).
                    None => {
                        let mut j = i;
                        (0..n).find_map(|_| {
                            j = if j + 1 >= n { 0 } else { j + 1 };
                            cos[j].is_some().then_some(j)
                        })
                    }
                    Some(r) => {
                        let k = (r.next_u64() % live as u64) as usize;
                        (0..n).filter(|&j| cos[j].is_some()).nth(k)
                    }
                }
                .expect("a live coroutine");
                sched.cur.set(i);
                stats.switches += 1;
                let co = cos[i].as_mut().expect("picked a live coroutine");
                match co.resume(()) {
                    CoroutineResult::Yield(Yielded::StillWaiting) => idle += 1,
                    CoroutineResult::Yield(Yielded::Progress) => {
                        idle = 0;
                        round = 0;
                    }
                    CoroutineResult::Return(()) => {
                        cos[i] = None;
                        live -= 1;
                        sched.live.set(live);
                        idle = 0;
                        round = 0;
                    }
                }
                // Everyone waits on other threads: pause the thread as a lone waiter would.
                if live > 0 && idle >= live {
                    idle = 0;
                    stats.idle_pauses += 1;
                    crate::pause(round);
                    round = round.saturating_add(1);
                }
            }
        });
    }
    if let Some(p) = panicked.into_inner() {
        resume_unwind(p);
    }
    stats.probe_switches = sched.probe_switches.get();
    stats
}

/// The environment variable that runs one seed of the seeded tests ([`each_seed`]).
pub const SEED_ENV: &str = "OLTPSCOPE_SCHED_SEED";

/// Run `f` for seeds `0..count`, or only for the seed in `OLTPSCOPE_SCHED_SEED` if set;
/// a failure is re-raised naming its seed and how to run it alone.
pub fn each_seed(what: &str, count: u64, f: impl Fn(u64)) {
    let seeds: Vec<u64> = match std::env::var(SEED_ENV) {
        Ok(v) => vec![v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_ENV}={v:?} is not a seed (an integer)"))],
        Err(_) => (0..count).collect(),
    };
    for seed in seeds {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(seed))) {
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!("{what}: seed {seed} failed: {msg}\nreproduce with {SEED_ENV}={seed}");
        }
    }
}
