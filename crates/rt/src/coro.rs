//! The coroutine scheduler: one thread runs N transactions' bodies as stackful
//! coroutines (`crate::switch`) and switches whenever one would wait (every wait goes through
//! `rt`, which hands it to the [`Scheduler`] installed here) instead of blocking the
//! thread. Blocking calls (page I/O, log writes) run on `rt`'s I/O threads meanwhile.
//!
//! Policies: [`Policy::RoundRobin`] (runs: switch only on waits, next coroutine in turn)
//! and [`Policy::Seeded`] (tests: switch at every wait *and* every [`Point`], and a seeded
//! generator picks which coroutine runs next, so a seed names one interleaving of the
//! thread's transactions; it reproduces exactly as long as what the coroutines wait for
//! does not depend on other threads' timing), and [`Policy::Steps`] (STEPS, Harizopoulos
//! and Ailamaki: coroutines about to run the same database operation form a team, and at
//! every CTX point the running member passes the thread to the next member, so the team
//! reuses the instructions the first member brought into the L1-I cache).
//! [`Policy::Interleave`] (`--interleave`) is round-robin that also switches at
//! [`Point::Probe`], where an index probe has just prefetched a line.
//!
//! Must never switch except inside a wait or at a point a body reached (a coroutine is
//! never preempted), and must never return before every coroutine finished.

use crate::switch::{Fiber, Sp};
use crate::{Point, Scheduler, WaitKind};
use rand_xoshiro::rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::Instant;

/// How a thread's scheduler picks the coroutine to run next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Switch only when the running coroutine would wait; take the next in turn.
    RoundRobin,
    /// Switch at every wait and every point; the seed picks who runs next.
    Seeded(u64),
    /// STEPS with teams of at most `team` members (at least 1): see [`run`].
    Steps { team: usize },
    /// `--interleave`: like `RoundRobin`, and also switch at every [`Point::Probe`] (an
    /// index probe prefetched a line it is about to need), so the miss overlaps other
    /// transactions' work instead of stalling the thread. With `group` above 1
    /// (`--interleave-group`), the prefetches made for after a probe point
    /// ([`crate::probe_ahead`]) are held back and issued together every `group` probe
    /// points (and before any other switch), back to back: see [`crate::probe_ahead`].
    Interleave { group: usize },
}

impl Policy {
    /// [`Policy::Interleave`] issuing each probe's prefetches at once.
    pub const INTERLEAVE: Policy = Policy::Interleave { group: 1 };
}

/// Coroutine stacks: mapped lazily, so only the touched part costs memory. Engine frames
/// hold page-sized buffers; 1 MiB leaves ample room.
const STACK_BYTES: usize = 1 << 20;

/// The span of addresses over which a first-level cache's sets repeat (64 sets of 64-byte
/// lines on the CPUs the project runs on and simulates): addresses this far apart share
/// a set.
const L1_SET_SPAN: usize = 4096;

/// How far below its stack's top coroutine `i` of `n` starts: the tops of freshly mapped
/// stacks are page-aligned, so without this every coroutine's innermost frames would
/// fall in the same first-level cache sets and evict each other at every switch
/// (`simulate micro --interleave 8` showed 6x the L1-D misses of one coroutine, a third
/// of them conflict misses). Spread evenly over the set span, in whole lines.
fn stack_color(i: usize, n: usize) -> usize {
    ((i % n.max(1)) * L1_SET_SPAN / n.max(1)) & !63
}

/// What a coroutine tells the scheduler when it gives the thread back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Yielded {
    /// Waiting and its condition is still false after being resumed: no progress.
    StillWaiting,
    /// Started a wait, reached a point or backed off: it made progress before.
    Progress,
    /// STEPS: reached the entry of an operation ([`Sched::entry`] says which, on which
    /// object); parks in its team list. The payload travels beside the value, not in it:
    /// a one-byte value crosses the switch several times faster than a 16-byte one.
    Entry,
    /// STEPS: a team member reached a CTX point; the next member runs.
    Ctx,
}

const _: () = assert!(std::mem::size_of::<Yielded>() == 1);

/// A coroutine's body, its borrows' lifetime erased (see `run_with_points`).
type Body = Box<dyn FnOnce() + 'static>;

/// What a resumed coroutine did, as the central loops ([`Policy::Seeded`], STEPS) see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Yield(Yielded),
    Return,
}

/// What a thread's coroutines did (for the report and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Times the scheduler resumed a coroutine.
    pub switches: u64,
    /// Times every live coroutine was waiting and the thread paused.
    pub idle_pauses: u64,
    /// Team statistics under [`Policy::Steps`].
    pub steps: Option<StepsStats>,
    /// Switches made at [`Point::Probe`] (index probes that prefetched a line).
    pub probe_switches: u64,
}

/// One team list's figures (a row of the STEPS paper's Table 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamRow {
    /// `probe::Op` code of the operation.
    pub op: u32,
    /// Its object ([`crate::NO_OBJ`] or [`crate::obj`]).
    pub obj: u64,
    /// Teams formed for it.
    pub teams: u64,
    /// Members that entered its teams (sum of team sizes when formed): the paper's "in".
    pub members_in: u64,
    /// Members that left at their next operation entry or end, not as strays: "out".
    pub members_out: u64,
}

/// STEPS team statistics of one thread (or, summed, of a run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepsStats {
    /// The team size cap.
    pub cap: usize,
    /// Operation entries (every one parks in a team list).
    pub ops: u64,
    /// Transactions begun (entries of `probe::Op::Begin`, retries included).
    pub txns: u64,
    /// Teams formed.
    pub teams: u64,
    /// `team_sizes[k]`: teams formed with `k` members (index 0 unused).
    pub team_sizes: Vec<u64>,
    /// Operations run to their end in a team of two or more without straying.
    pub ops_in_teams: u64,
    /// Members that left their team by waiting (lock, latch, I/O, back-off).
    pub strays: u64,
    /// Operation entries of transactions retried after a conflict, which run alone.
    pub retry_ops: u64,
    /// CTX points at which the thread passed from one member to another.
    pub ctx_switches: u64,
    /// Sum over team formations of the coroutines then parked or stray (the paper's
    /// "ready threads", averaged over `teams`).
    pub ready_sum: u64,
    /// Per team list, in order of first use.
    pub rows: Vec<TeamRow>,
}

impl StepsStats {
    fn new(cap: usize) -> Self {
        StepsStats {
            cap,
            team_sizes: vec![0; cap + 1],
            ..Default::default()
        }
    }

    fn row(&mut self, op: u32, obj: u64) -> &mut TeamRow {
        let i = match self.rows.iter().position(|r| r.op == op && r.obj == obj) {
            Some(i) => i,
            None => {
                self.rows.push(TeamRow {
                    op,
                    obj,
                    ..Default::default()
                });
                self.rows.len() - 1
            }
        };
        &mut self.rows[i]
    }

    /// Add another thread's figures.
    pub fn add(&mut self, o: &StepsStats) {
        self.cap = self.cap.max(o.cap);
        if self.team_sizes.len() < o.team_sizes.len() {
            self.team_sizes.resize(o.team_sizes.len(), 0);
        }
        for (k, n) in o.team_sizes.iter().enumerate() {
            self.team_sizes[k] += n;
        }
        self.ops += o.ops;
        self.txns += o.txns;
        self.teams += o.teams;
        self.ops_in_teams += o.ops_in_teams;
        self.strays += o.strays;
        self.retry_ops += o.retry_ops;
        self.ctx_switches += o.ctx_switches;
        self.ready_sum += o.ready_sum;
        for r in &o.rows {
            let m = self.row(r.op, r.obj);
            m.teams += r.teams;
            m.members_in += r.members_in;
            m.members_out += r.members_out;
        }
    }

    /// Mean team size when formed.
    pub fn avg_team(&self) -> f64 {
        ratio(
            self.team_sizes
                .iter()
                .enumerate()
                .map(|(k, n)| k as u64 * n)
                .sum(),
            self.teams,
        )
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

struct Sched {
    cur: Cell<usize>,
    /// Each coroutine's suspended context, and the thread's own (where `run` waits).
    sps: Vec<Sp>,
    main: Sp,
    /// Bodies not started yet (a coroutine takes its own when it starts).
    bodies: Vec<Cell<Option<Body>>>,
    /// The first panic of a body, resumed by `run` once every coroutine finished.
    panicked: RefCell<Option<Box<dyn Any + Send>>>,
    /// Coroutines that returned.
    done: Vec<Cell<bool>>,
    /// Round robin and interleaving hand the thread from coroutine to coroutine
    /// directly (see `crate::switch` for why); the other policies return to a loop in
    /// `run` after every step ([`Sched::resume`]), which reads `outcome`.
    symmetric: bool,
    outcome: Cell<Outcome>,
    /// Direct hand-overs: consecutive ones from coroutines still waiting (all waiting:
    /// pause the thread), and the pause's escalation.
    idle: Cell<usize>,
    round: Cell<u32>,
    switches: Cell<u64>,
    idle_pauses: Cell<u64>,
    policy: Policy,
    /// STEPS: whether each coroutine is a member of the running team (else a stray, or
    /// parked: CTX points do not switch it).
    in_team: Vec<Cell<bool>>,
    /// STEPS: members in the running team (a team of one never switches at CTX points).
    team_len: Cell<usize>,
    /// STEPS: a coroutine retrying a transaction after a conflict runs it alone (see
    /// [`run_steps`]): 0 no, 1 backed off (its next begin is the retry), 2 retrying.
    solo: Vec<Cell<u8>>,
    /// STEPS: operation entries passed by retrying coroutines.
    solo_ops: Cell<u64>,
    /// STEPS: transactions begun (retries included).
    begins: Cell<u64>,
    /// STEPS: the CTX points that switch (`crate::set_ctx_points`; None: all).
    points: Option<std::sync::Arc<crate::CtxPoints>>,
    /// STEPS with `points`: each coroutine's operation (`probe::Op` code) and the CTX
    /// points of each component it reached since entering it.
    op: Vec<Cell<u32>>,
    ordinals: Vec<Cell<[u16; crate::Component::ALL.len()]>>,
    /// Coroutines not yet returned (a lone one has nobody to switch to).
    live: Cell<usize>,
    probe_switches: Cell<u64>,
    /// STEPS: the operation and object of the last [`Yielded::Entry`].
    entry: Cell<(u32, u64)>,
    /// Under valgrind: every context that starts running says so to the tracer
    /// (`probe::client::CONTEXT`), which keeps each context's open operation marks and
    /// transaction apart.
    traced: bool,
    /// Interleaving: probe points whose prefetches are held back and issued together.
    group: usize,
    since_flush: Cell<usize>,
}

impl Sched {
    #[inline(always)]
    fn suspend(&self, y: Yielded) {
        let i = self.cur.get();
        self.give_up(i, y);
        self.running(i + 1);
    }

    /// Tell the tracer (only under valgrind) that context `ctx` runs now: coroutine
    /// `ctx - 1`, or 0, the thread's own stack (`run`'s loop).
    #[inline(always)]
    fn running(&self, ctx: usize) {
        if self.traced {
            probe::client::request(probe::client::CONTEXT, ctx as u64, 0);
        }
    }

    /// Give the thread away from running coroutine `i`; returns when `i` runs again.
    #[inline(always)]
    fn give_up(&self, i: usize, y: Yielded) {
        if self.symmetric {
            self.hand_over(i, y);
        } else {
            self.outcome.set(Outcome::Yield(y));
            // SAFETY: `main` was saved by `resume`, which waits for this switch.
            unsafe { self.sps[i].switch_to(&self.main) };
        }
        debug_assert_eq!(self.cur.get(), i, "resumed as another coroutine");
    }

    /// Direct hand-over from `i` to the next live coroutine in turn (or none: `i` is
    /// alone). When every live coroutine handed over still waiting on other threads, the
    /// thread pauses first, as a lone waiter would.
    #[inline(always)]
    fn hand_over(&self, i: usize, y: Yielded) {
        let live = self.live.get();
        if y == Yielded::StillWaiting {
            let idle = self.idle.get() + 1;
            if idle >= live {
                self.idle.set(0);
                self.idle_pauses.set(self.idle_pauses.get() + 1);
                crate::pause(self.round.get());
                self.round.set(self.round.get().saturating_add(1));
            } else {
                self.idle.set(idle);
            }
        } else {
            self.idle.set(0);
            self.round.set(0);
        }
        self.switches.set(self.switches.get() + 1);
        let j = self.next_live(i);
        if j != i {
            self.cur.set(j);
            // SAFETY: `j` is live and not running, so suspended in `sps[j]` (or not
            // started, its initial frame there).
            unsafe { self.sps[i].switch_to(&self.sps[j]) };
        }
    }

    /// The next live coroutine after `i` in turn, `i` itself if it is the only one.
    /// No division: this runs at every switch.
    #[inline(always)]
    fn next_live(&self, i: usize) -> usize {
        let n = self.done.len();
        let mut j = i;
        loop {
            j = if j + 1 >= n { 0 } else { j + 1 };
            if !self.done[j].get() || j == i {
                return j;
            }
        }
    }

    /// Central loops: run coroutine `i` until it gives the thread back.
    fn resume(&self, i: usize) -> Outcome {
        assert!(!self.done[i].get(), "resume a finished coroutine");
        self.cur.set(i);
        self.switches.set(self.switches.get() + 1);
        // SAFETY: `i` is live and suspended (or not started); it switches back to `main`.
        unsafe { self.main.switch_to(&self.sps[i]) };
        self.running(0);
        self.outcome.get()
    }

    /// Grouped interleaving: issue the prefetches held back since the last flush (before
    /// a group's last probe switches, and before any other switch or a coroutine's end).
    #[inline]
    fn flush_group(&self) {
        if self.group > 1 {
            crate::flush_prefetches();
            self.since_flush.set(0);
        }
    }

    /// Coroutine `i` returned: hand the thread on for good (its stack is freed by `run`).
    fn finish(&self, i: usize) -> ! {
        self.flush_group();
        self.done[i].set(true);
        let live = self.live.get() - 1;
        self.live.set(live);
        self.outcome.set(Outcome::Return);
        let to = if self.symmetric && live > 0 {
            let j = self.next_live(i);
            self.cur.set(j);
            self.switches.set(self.switches.get() + 1);
            &self.sps[j]
        } else {
            &self.main
        };
        // SAFETY: `to` is suspended: `main` waits in `run`, `j` is live and not running.
        unsafe { self.sps[i].switch_to(to) };
        unreachable!("a finished coroutine was resumed");
    }
}

/// Where every coroutine starts (`arg` is its [`Sched`]; the switcher set `cur`).
extern "C" fn coroutine_main(arg: *mut u8) -> ! {
    // SAFETY: `run_with_points` passes its `Sched`, which outlives every coroutine.
    let sched = unsafe { &*(arg as *const Sched) };
    let i = sched.cur.get();
    sched.running(i + 1);
    let body = sched.bodies[i].take().expect("a coroutine starts once");
    if let Err(p) = catch_unwind(AssertUnwindSafe(body)) {
        let mut s = sched.panicked.borrow_mut();
        if s.is_none() {
            *s = Some(p);
        }
    }
    sched.finish(i)
}

impl Scheduler for Sched {
    fn wait(
        &self,
        kind: WaitKind,
        cond: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool {
        if kind == WaitKind::Backoff && matches!(self.policy, Policy::Steps { .. }) {
            self.solo[self.cur.get()].set(1);
        }
        let mut first = true;
        loop {
            if cond() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            self.flush_group();
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
        match self.policy {
            Policy::RoundRobin => {}
            Policy::Interleave { .. } => {
                if p == Point::Probe && self.live.get() > 1 && !std::thread::panicking() {
                    self.probe_switches.set(self.probe_switches.get() + 1);
                    if self.group > 1 {
                        let k = self.since_flush.get() + 1;
                        if k >= self.group {
                            self.flush_group();
                        } else {
                            self.since_flush.set(k);
                        }
                    }
                    self.suspend(Yielded::Progress);
                }
            }
            Policy::Seeded(_) => {
                if !std::thread::panicking() {
                    self.suspend(Yielded::Progress);
                }
            }
            Policy::Steps { .. } => match p {
                Point::OpEntry(op, obj) => {
                    if op == probe::Op::Begin as u32 {
                        self.begins.set(self.begins.get() + 1);
                    }
                    let solo = &self.solo[self.cur.get()];
                    if solo.get() != 0 {
                        if op == probe::Op::Begin as u32 {
                            // The retry begins (1), or the next transaction does (2).
                            solo.set(if solo.get() == 1 { 2 } else { 0 });
                        }
                        if solo.get() != 0 {
                            self.solo_ops.set(self.solo_ops.get() + 1);
                            return;
                        }
                    }
                    if self.points.is_some() {
                        let i = self.cur.get();
                        self.op[i].set(op);
                        self.ordinals[i].set(Default::default());
                    }
                    if !std::thread::panicking() {
                        self.entry.set((op, obj));
                        self.suspend(Yielded::Entry);
                    }
                }
                Point::Ctx(c) => {
                    let i = self.cur.get();
                    if let Some(points) = &self.points {
                        // Counted whether or not it switches: the ordinal names the point.
                        let mut o = self.ordinals[i].get();
                        o[c.index()] = o[c.index()].saturating_add(1);
                        self.ordinals[i].set(o);
                        if !points.contains(self.op[i].get(), c, o[c.index()]) {
                            return;
                        }
                    }
                    // Strays and lone members bypass CTX points (the paper's S-thread check).
                    if self.in_team[i].get() && self.team_len.get() > 1 && !std::thread::panicking()
                    {
                        self.suspend(Yielded::Ctx);
                    }
                }
                Point::Probe => {}
            },
        }
    }

    fn offloads_io(&self) -> bool {
        true
    }

    fn interests(&self) -> u8 {
        use crate::interest::*;
        match self.policy {
            Policy::RoundRobin => 0,
            Policy::Interleave { .. } if self.group > 1 => PROBES | GROUPS,
            Policy::Interleave { .. } => PROBES,
            Policy::Seeded(_) => ENTRIES | CTX | PROBES,
            Policy::Steps { .. } => ENTRIES | CTX,
        }
    }
}

/// Run `bodies` as coroutines on this thread under `policy`, until every one returned.
/// A panic in a body is resumed here once the others have finished.
pub fn run<'a>(policy: Policy, bodies: Vec<Box<dyn FnOnce() + 'a>>) -> Stats {
    run_with_points(policy, crate::ctx_points(), bodies)
}

/// [`run`] with the CTX points that switch under [`Policy::Steps`] given (None: all),
/// instead of the process's (`crate::set_ctx_points`).
pub fn run_with_points<'a>(
    policy: Policy,
    points: Option<std::sync::Arc<crate::CtxPoints>>,
    bodies: Vec<Box<dyn FnOnce() + 'a>>,
) -> Stats {
    let n = bodies.len();
    let sched = Sched {
        cur: Cell::new(0),
        sps: (0..n).map(|_| Sp::default()).collect(),
        main: Sp::default(),
        bodies: bodies
            .into_iter()
            // SAFETY: every coroutine runs to completion before this function returns
            // (below), so what a body borrows outlives it.
            .map(|b| {
                Cell::new(Some(unsafe {
                    std::mem::transmute::<Box<dyn FnOnce() + 'a>, Body>(b)
                }))
            })
            .collect(),
        panicked: RefCell::new(None),
        done: (0..n).map(|_| Cell::new(false)).collect(),
        symmetric: matches!(policy, Policy::RoundRobin | Policy::Interleave { .. }),
        outcome: Cell::new(Outcome::Return),
        idle: Cell::new(0),
        round: Cell::new(0),
        switches: Cell::new(0),
        idle_pauses: Cell::new(0),
        policy,
        in_team: (0..n).map(|_| Cell::new(false)).collect(),
        team_len: Cell::new(0),
        solo: (0..n).map(|_| Cell::new(0)).collect(),
        solo_ops: Cell::new(0),
        begins: Cell::new(0),
        points: match policy {
            Policy::Steps { .. } => points,
            _ => None,
        },
        op: (0..n).map(|_| Cell::new(0)).collect(),
        ordinals: (0..n).map(|_| Cell::new(Default::default())).collect(),
        live: Cell::new(n),
        probe_switches: Cell::new(0),
        entry: Cell::new((0, 0)),
        traced: probe::running_on_valgrind(),
        group: match policy {
            Policy::Interleave { group } => group.clamp(1, n.max(1)),
            _ => 1,
        },
        since_flush: Cell::new(0),
    };
    let mut stats = Stats::default();
    {
        let arg = &sched as *const Sched as *mut u8;
        // Freed only after every coroutine finished (the end of this block).
        let _fibers: Vec<Fiber> = sched
            .sps
            .iter()
            .enumerate()
            .map(|(i, sp)| Fiber::new(STACK_BYTES, stack_color(i, n), coroutine_main, arg, sp))
            .collect();
        crate::with_scheduler(&sched, || match policy {
            Policy::Steps { team } => {
                let mut st = run_steps(&sched, team.max(1), &mut stats);
                st.retry_ops = sched.solo_ops.get();
                st.txns = sched.begins.get();
                stats.steps = Some(st);
            }
            Policy::Seeded(seed) => run_seeded(&sched, seed, &mut stats),
            Policy::RoundRobin | Policy::Interleave { .. } => {
                if n > 0 {
                    // Coroutine 0 starts; they hand the thread to each other, and the
                    // last to finish hands it back here.
                    sched.cur.set(0);
                    sched.switches.set(1);
                    // SAFETY: coroutine 0's initial frame is in `sps[0]`.
                    unsafe { sched.main.switch_to(&sched.sps[0]) };
                    sched.running(0);
                }
            }
        });
        assert_eq!(
            sched.live.get(),
            0,
            "run returned before every coroutine finished"
        );
    }
    // Nothing held past the scheduler (a body's last lines, asked for after its last
    // switch, are issued as it ends).
    crate::flush_prefetches();
    if let Some(p) = sched.panicked.take() {
        resume_unwind(p);
    }
    stats.switches = sched.switches.get();
    stats.idle_pauses += sched.idle_pauses.get();
    stats.probe_switches = sched.probe_switches.get();
    stats
}

/// The list the next STEPS team comes from: the `prefer`red one (the list the last
/// parked coroutine joined), unless the oldest parked coroutine has seen as many teams
/// formed (`teams` now) as there are `live` coroutines since it parked: then its list.
/// None when no coroutine is parked.
fn next_list(lists: &[List], prefer: Option<(u32, u64)>, teams: u64, live: usize) -> Option<usize> {
    let (stamp, oldest) = lists
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.parked.front().map(|&(_, stamp)| (stamp, i)))
        .min()?;
    let starved = teams - stamp >= live as u64;
    Some(match prefer {
        Some((op, obj)) if !starved => lists
            .iter()
            .position(|l| l.op == op && l.obj == obj && !l.parked.is_empty())
            .unwrap_or(oldest),
        _ => oldest,
    })
}

/// Park coroutine `c` at the entry of operation `op` on `obj`: in that list, stamped
/// with the number of teams formed so far.
fn park(lists: &mut Vec<List>, st: &mut StepsStats, c: usize, op: u32, obj: u64) {
    st.ops += 1;
    let stamp = st.teams;
    match lists.iter_mut().find(|l| l.op == op && l.obj == obj) {
        Some(l) => l.parked.push_back((c, stamp)),
        None => lists.push(List {
            op,
            obj,
            parked: VecDeque::from([(c, stamp)]),
        }),
    }
}

/// Between two STEPS teams every stray gets one turn: to join its next list (the list
/// then `prefer`red), to find its wait over, or to return (one fewer `live`). True when
/// there were strays and every one is still waiting on other threads.
fn strays_turn(
    sched: &Sched,
    strays: &mut VecDeque<usize>,
    lists: &mut Vec<List>,
    st: &mut StepsStats,
    prefer: &mut Option<(u32, u64)>,
    live: &mut usize,
) -> bool {
    let mut all_waiting = !strays.is_empty();
    for _ in 0..strays.len() {
        let c = strays.pop_front().expect("counted");
        match sched.resume(c) {
            Outcome::Yield(Yielded::Entry) => {
                let (op, obj) = sched.entry.get();
                park(lists, st, c, op, obj);
                *prefer = Some((op, obj));
                all_waiting = false;
            }
            Outcome::Yield(Yielded::StillWaiting) => strays.push_back(c),
            // A stray bypasses CTX points; `Ctx` cannot come from one.
            Outcome::Yield(Yielded::Progress | Yielded::Ctx) => {
                strays.push_back(c);
                all_waiting = false;
            }
            Outcome::Return => {
                *live -= 1;
                all_waiting = false;
            }
        }
    }
    all_waiting
}

/// [`Policy::Seeded`]: each turn goes to a live coroutine drawn from the seeded
/// generator, until every one returned.
fn run_seeded(sched: &Sched, seed: u64, stats: &mut Stats) {
    let n = sched.sps.len();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut idle = 0usize;
    let mut round = 0u32;
    while sched.live.get() > 0 {
        let live = sched.live.get();
        let k = (rng.next_u64() % live as u64) as usize;
        let i = (0..n)
            .filter(|&j| !sched.done[j].get())
            .nth(k)
            .expect("a live coroutine");
        match sched.resume(i) {
            Outcome::Yield(Yielded::StillWaiting) => idle += 1,
            _ => {
                idle = 0;
                round = 0;
            }
        }
        // Everyone waits on other threads: pause the thread as a lone waiter would.
        let live = sched.live.get();
        if live > 0 && idle >= live {
            idle = 0;
            stats.idle_pauses += 1;
            crate::pause(round);
            round = round.saturating_add(1);
        }
    }
}

/// A STEPS team list: coroutines parked at the entry of one operation (on one object),
/// each with the number of teams formed on the thread when it parked.
struct List {
    op: u32,
    obj: u64,
    parked: VecDeque<(usize, u64)>,
}

/// The STEPS loop (paper, Sections 3-4). Every operation entry parks the coroutine in the
/// list of its operation and object. A team is formed from the front of one list (at most
/// `cap` members) and runs alone: at each CTX point the running member passes the thread
/// to the next member, round robin. A member leaves the team when it reaches its next
/// operation entry (it parks in that list), when it returns, or when it waits: then it is
/// a stray and, like every stray, is resumed once between two teams until it reaches an
/// operation entry and parks again. When the team is empty, every stray gets its turn,
/// then the next team is the list the last parked coroutine joined (the paper's "the
/// operation the last member or last stray is interested in"), unless a list's oldest
/// coroutine has seen as many teams formed as there are live coroutines since it parked:
/// then that list goes first, so every coroutine progresses.
///
/// A transaction retried after a conflict (it backed off through `rt::Backoff`) runs
/// alone, as a stray that parks nowhere until its next transaction begins. Lockstep
/// execution is deterministic: under optimistic concurrency control a team member that
/// lost validation to its teammates would otherwise meet them again in the same order
/// at every retry and could lose forever (the paper's Shore used locking, where waits
/// already make members stray).
fn run_steps(sched: &Sched, cap: usize, stats: &mut Stats) -> StepsStats {
    let n = sched.sps.len();
    let mut st = StepsStats::new(cap);
    let mut live = n;
    let mut lists: Vec<List> = Vec::new();
    // Not started yet, or waiting outside any team.
    let mut strays: VecDeque<usize> = (0..n).collect();
    let mut team: Vec<usize> = Vec::new();
    let mut team_key = (0u32, 0u64);
    let mut team_size = 0usize;
    let mut pos = 0usize;
    let mut prefer: Option<(u32, u64)> = None;
    let mut round = 0u32;

    while live > 0 {
        if !team.is_empty() {
            let c = team[pos];
            let r = sched.resume(c);
            let leave = match r {
                Outcome::Yield(Yielded::Ctx) => {
                    if team.len() > 1 {
                        st.ctx_switches += 1;
                    }
                    pos = (pos + 1) % team.len();
                    continue;
                }
                Outcome::Yield(Yielded::Entry) => {
                    let (op, obj) = sched.entry.get();
                    park(&mut lists, &mut st, c, op, obj);
                    prefer = Some((op, obj));
                    true
                }
                Outcome::Return => {
                    live -= 1;
                    true
                }
                Outcome::Yield(Yielded::Progress | Yielded::StillWaiting) => {
                    st.strays += 1;
                    strays.push_back(c);
                    false
                }
            };
            if leave {
                st.row(team_key.0, team_key.1).members_out += 1;
                if team_size > 1 {
                    st.ops_in_teams += 1;
                }
            }
            sched.in_team[c].set(false);
            team.remove(pos);
            sched.team_len.set(team.len());
            if pos >= team.len() {
                pos = 0;
            }
            continue;
        }

        // Between teams: every stray gets one turn.
        let all_waiting = strays_turn(
            sched,
            &mut strays,
            &mut lists,
            &mut st,
            &mut prefer,
            &mut live,
        );

        // The next team.
        let Some(li) = next_list(&lists, prefer, st.teams, live) else {
            // Only strays, all waiting on other threads: pause as a lone waiter would.
            if live > 0 && all_waiting {
                stats.idle_pauses += 1;
                crate::pause(round);
                round = round.saturating_add(1);
            } else {
                round = 0;
            }
            continue;
        };
        round = 0;
        let l = &mut lists[li];
        let k = l.parked.len().min(cap);
        team.extend(l.parked.drain(..k).map(|(c, _)| c));
        team_key = (l.op, l.obj);
        team_size = k;
        pos = 0;
        for &c in &team {
            sched.in_team[c].set(true);
        }
        sched.team_len.set(k);
        st.ready_sum +=
            (lists.iter().map(|l| l.parked.len()).sum::<usize>() + strays.len() + k) as u64;
        st.teams += 1;
        st.team_sizes[k] += 1;
        let row = st.row(team_key.0, team_key.1);
        row.teams += 1;
        row.members_in += k as u64;
    }
    st
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{point, wait_until, Component, Point};
    use std::cell::RefCell;
    use std::sync::atomic::{AtomicBool, Ordering};

    const OP: u32 = 4;
    const CTX: Point = Point::Ctx(Component::BtreeLevel);

    #[test]
    fn stacks_start_in_different_first_level_sets() {
        for n in 1..=64 {
            let mut seen: Vec<usize> = (0..n).map(|i| stack_color(i, n)).collect();
            assert!(
                seen.iter().all(|&c| c % 64 == 0 && c < L1_SET_SPAN),
                "{n}: {seen:?}"
            );
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), n, "{n} coroutines, one set offset each");
        }
        // More coroutines than lines in the span: offsets repeat, never leave it.
        assert!((0..256).all(|i| stack_color(i, 256) < L1_SET_SPAN));
        // The coroutines' frames really start at different offsets in their pages.
        let offsets = RefCell::new(Vec::new());
        let bodies: Vec<Box<dyn FnOnce()>> = (0..8)
            .map(|_| {
                let offsets = &offsets;
                Box::new(move || {
                    let local = std::hint::black_box(0u64);
                    offsets
                        .borrow_mut()
                        .push(&local as *const u64 as usize % L1_SET_SPAN);
                }) as Box<dyn FnOnce()>
            })
            .collect();
        run(Policy::RoundRobin, bodies);
        let mut offsets = offsets.into_inner();
        assert_eq!(offsets.len(), 8);
        offsets.sort_unstable();
        offsets.dedup();
        assert_eq!(
            offsets.len(),
            8,
            "frames at the same page offset: {offsets:?}"
        );
    }

    /// Coroutine `c` runs `ops` operations (entry on `key(c, op)`), each `steps` CTX points
    /// long, logging (c, op, step) after each point.
    fn lockstep_bodies<'a>(
        n: usize,
        ops: u32,
        steps: u32,
        key: impl Fn(usize, u32) -> u64 + Copy + 'a,
        log: &'a RefCell<Vec<(usize, u32, u32)>>,
    ) -> Vec<Box<dyn FnOnce() + 'a>> {
        (0..n)
            .map(|c| {
                Box::new(move || {
                    for op in 0..ops {
                        point(Point::OpEntry(OP, key(c, op)));
                        for s in 0..steps {
                            point(CTX);
                            log.borrow_mut().push((c, op, s));
                        }
                    }
                }) as Box<dyn FnOnce()>
            })
            .collect()
    }

    #[test]
    fn a_team_runs_in_lockstep() {
        let log = RefCell::new(Vec::new());
        let stats = run(
            Policy::Steps { team: 8 },
            lockstep_bodies(3, 2, 3, |_, _| 7, &log),
        );
        // At every CTX point the next member runs: members in order, step by step.
        let mut want = Vec::new();
        for op in 0..2 {
            for s in 0..3 {
                for c in 0..3 {
                    want.push((c, op, s));
                }
            }
        }
        assert_eq!(log.into_inner(), want);
        let st = stats.steps.expect("steps statistics");
        assert_eq!(st.teams, 2);
        assert_eq!(st.team_sizes[3], 2);
        assert_eq!(st.ops, 6);
        assert_eq!(st.ops_in_teams, 6);
        assert_eq!(st.strays, 0);
        // Per operation and team: 3 steps x 3 members, each passing on.
        assert_eq!(st.ctx_switches, 2 * 3 * 3);
        assert_eq!(st.rows.len(), 1);
        assert_eq!((st.rows[0].members_in, st.rows[0].members_out), (6, 6));
    }

    #[test]
    fn only_enabled_ctx_points_switch() {
        // Of the three CTX points of each operation, only the second switches.
        let mut points = crate::CtxPoints::default();
        points.insert(OP, Component::BtreeLevel, 2);
        let log = RefCell::new(Vec::new());
        let stats = run_with_points(
            Policy::Steps { team: 8 },
            Some(std::sync::Arc::new(points)),
            lockstep_bodies(2, 2, 3, |_, _| 7, &log),
        );
        let mut want = Vec::new();
        for op in 0..2 {
            // Member 0 runs to its second point (step 0 logged), then member 1 does;
            // after the switch back each runs to its next operation entry.
            want.extend([
                (0, op, 0),
                (1, op, 0),
                (0, op, 1),
                (0, op, 2),
                (1, op, 1),
                (1, op, 2),
            ]);
        }
        assert_eq!(log.into_inner(), want);
        let st = stats.steps.expect("steps statistics");
        assert_eq!(st.ctx_switches, 2 * 2, "one pass per member and operation");
    }

    #[test]
    fn team_size_is_capped() {
        let log = RefCell::new(Vec::new());
        let stats = run(
            Policy::Steps { team: 2 },
            lockstep_bodies(5, 1, 2, |_, _| 7, &log),
        );
        assert_eq!(
            log.into_inner(),
            [
                (0, 0, 0),
                (1, 0, 0),
                (0, 0, 1),
                (1, 0, 1),
                (2, 0, 0),
                (3, 0, 0),
                (2, 0, 1),
                (3, 0, 1),
                (4, 0, 0),
                (4, 0, 1)
            ]
        );
        let st = stats.steps.unwrap();
        assert_eq!(st.team_sizes, [0, 1, 2]);
        assert_eq!(st.ops_in_teams, 4, "the team of one is not a team");
    }

    #[test]
    fn teams_are_per_operation_object() {
        // Even coroutines work on object 1, odd ones on object 2: two teams.
        let log = RefCell::new(Vec::new());
        let stats = run(
            Policy::Steps { team: 8 },
            lockstep_bodies(4, 1, 2, |c, _| (c % 2) as u64, &log),
        );
        let log = log.into_inner();
        assert_eq!(log.len(), 8);
        let first: Vec<usize> = log[..4].iter().map(|e| e.0).collect();
        let second: Vec<usize> = log[4..].iter().map(|e| e.0).collect();
        // The last stray to park (3) chose the first team.
        assert_eq!(first, [1, 3, 1, 3]);
        assert_eq!(second, [0, 2, 0, 2]);
        let st = stats.steps.unwrap();
        assert_eq!(st.rows.len(), 2);
        assert!(st.rows.iter().all(|r| r.teams == 1 && r.members_in == 2));
    }

    #[test]
    fn a_waiter_becomes_stray_and_rejoins() {
        // Three members of one team; member 0 waits at its first step for a flag that
        // member 2 sets at its second step. Member 0 goes stray, the other two go on in
        // lockstep, and member 0 rejoins the team of the next operation.
        let flag = AtomicBool::new(false);
        let log = RefCell::new(Vec::new());
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..3)
            .map(|c| {
                let (flag, log) = (&flag, &log);
                Box::new(move || {
                    for op in 0..2u32 {
                        point(Point::OpEntry(OP, 0));
                        for s in 0..3u32 {
                            point(CTX);
                            if op == 0 && s == 0 && c == 0 {
                                wait_until(WaitKind::Other, None, || flag.load(Ordering::Relaxed));
                            }
                            if op == 0 && s == 1 && c == 2 {
                                flag.store(true, Ordering::Relaxed);
                            }
                            log.borrow_mut().push((c, op, s));
                        }
                    }
                }) as Box<dyn FnOnce()>
            })
            .collect();
        let stats = run(Policy::Steps { team: 8 }, bodies);
        let log = log.into_inner();
        assert_eq!(
            &log[..9],
            [
                (1, 0, 0),
                (2, 0, 0),
                (1, 0, 1),
                (2, 0, 1),
                (1, 0, 2),
                (2, 0, 2),
                // The stray's turn between teams: it bypasses CTX points.
                (0, 0, 0),
                (0, 0, 1),
                (0, 0, 2),
            ]
        );
        // Rejoined: the second operation's team has all three, in lockstep.
        let second: Vec<usize> = log[9..].iter().map(|e| e.0).collect();
        assert_eq!(second, [1, 2, 0, 1, 2, 0, 1, 2, 0]);
        let st = stats.steps.unwrap();
        assert_eq!(st.strays, 1);
        assert_eq!(st.team_sizes[3], 2);
        assert_eq!(st.ops_in_teams, 5, "all but the stray's first operation");
    }

    #[test]
    fn no_coroutine_starves() {
        // With teams of one, "the list the last member joined" would always pick the
        // same coroutine again; every coroutine must still progress.
        let log = RefCell::new(Vec::new());
        run(
            Policy::Steps { team: 1 },
            lockstep_bodies(3, 60, 1, |c, _| c as u64, &log),
        );
        let log = log.into_inner();
        assert_eq!(log.len(), 180);
        for c in 0..3 {
            let first = log.iter().position(|e| e.0 == c).unwrap();
            assert!(first < 10, "coroutine {c} first ran at {first}: {log:?}");
        }
        // Nobody runs more than a few operations in a row.
        let longest = log
            .chunk_by(|a, b| a.0 == b.0)
            .map(|r| r.len())
            .max()
            .unwrap();
        assert!(longest <= 4, "longest run {longest}");
    }

    #[test]
    fn a_team_of_one_never_switches_at_ctx_points() {
        let log = RefCell::new(Vec::new());
        let stats = run(
            Policy::Steps { team: 1 },
            lockstep_bodies(2, 1, 3, |_, _| 0, &log),
        );
        assert_eq!(
            log.into_inner(),
            [
                (0, 0, 0),
                (0, 0, 1),
                (0, 0, 2),
                (1, 0, 0),
                (1, 0, 1),
                (1, 0, 2)
            ]
        );
        assert_eq!(stats.steps.unwrap().ctx_switches, 0);
    }

    #[test]
    fn a_retried_transaction_runs_alone() {
        // Coroutine 0 backs off (a conflict) after its first operation; its retry (begin,
        // two more operations) runs without parking, then its next transaction parks
        // again. Coroutine 1 runs plain operations in teams.
        const BEGIN: u32 = probe::Op::Begin as u32;
        let log = RefCell::new(Vec::new());
        let bodies: Vec<Box<dyn FnOnce() + '_>> = vec![
            Box::new(|| {
                point(Point::OpEntry(BEGIN, crate::NO_OBJ));
                log.borrow_mut().push("0 first try");
                crate::Backoff::new(1).wait();
                for step in ["0 retry begins", "0 retry op", "0 retry commits"] {
                    let op = if step == "0 retry begins" { BEGIN } else { OP };
                    point(Point::OpEntry(op, 0));
                    point(CTX);
                    log.borrow_mut().push(step);
                }
                point(Point::OpEntry(BEGIN, crate::NO_OBJ));
                log.borrow_mut().push("0 next txn");
            }),
            Box::new(|| {
                for step in ["1 a", "1 b", "1 c"] {
                    point(Point::OpEntry(OP, 0));
                    point(CTX);
                    log.borrow_mut().push(step);
                }
            }),
        ];
        let stats = run(Policy::Steps { team: 4 }, bodies);
        let log = log.into_inner();
        let retry = log.iter().position(|s| *s == "0 retry begins").unwrap();
        assert_eq!(
            &log[retry..retry + 3],
            ["0 retry begins", "0 retry op", "0 retry commits"],
            "nothing runs inside the retry: {log:?}"
        );
        let st = stats.steps.unwrap();
        assert_eq!(st.retry_ops, 3);
        assert_eq!(st.txns, 3, "first try, retry, next transaction");
        assert_eq!(st.ops, 5, "first try, next transaction, 3 of coroutine 1");
    }

    #[test]
    fn waits_on_one_another_finish_under_steps() {
        // A holds a mutex across a wait for B's flag; B then wants the mutex.
        let m = parking_lot::Mutex::new(0u32);
        let flag = AtomicBool::new(false);
        run(
            Policy::Steps { team: 4 },
            vec![
                Box::new(|| {
                    point(Point::OpEntry(OP, 0));
                    let mut g = crate::lock(WaitKind::Latch, &m);
                    point(CTX);
                    wait_until(WaitKind::Other, None, || flag.load(Ordering::Acquire));
                    *g += 1;
                }),
                Box::new(|| {
                    point(Point::OpEntry(OP, 0));
                    point(CTX);
                    flag.store(true, Ordering::Release);
                    *crate::lock(WaitKind::Latch, &m) += 1;
                }),
            ],
        );
        assert_eq!(*m.lock(), 2);
    }
}
