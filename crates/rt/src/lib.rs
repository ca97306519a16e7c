//! The one way to wait. Every place an engine waits (lock grant, latch contention, log
//! flush, page I/O, epoch advance, conflict back-off) calls [`wait_until`],
//! [`Event::wait`], [`lock`]/[`read`]/[`write`], [`blocking`] or [`Backoff::wait`] here,
//! so that a scheduler that runs transactions as coroutines ([`coro`]; later STEPS and
//! interleaving) can take waiting over, and so waits are counted by kind.
//!
//! Every entry point tries the cheap thing first (the condition, `try_lock`): a wait
//! that costs nothing when nobody waits stays that cheap, and touches no thread-local.
//!
//! This module must never hold an engine lock itself, and never wait unboundedly without
//! re-checking the caller's condition.

pub mod coro;
mod io;
mod switch;

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::Cell;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum WaitKind {
    Lock = 0,
    Latch = 1,
    LogFlush = 2,
    PageIo = 3,
    Epoch = 4,
    /// A conflict abort waiting before its retry.
    Backoff = 5,
    Other = 6,
}

/// Number of [`WaitKind`]s.
pub const KINDS: usize = 7;

impl WaitKind {
    pub const ALL: [WaitKind; KINDS] = [
        WaitKind::Lock,
        WaitKind::Latch,
        WaitKind::LogFlush,
        WaitKind::PageIo,
        WaitKind::Epoch,
        WaitKind::Backoff,
        WaitKind::Other,
    ];
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::Lock => "lock",
            WaitKind::Latch => "latch",
            WaitKind::LogFlush => "log_flush",
            WaitKind::PageIo => "page_io",
            WaitKind::Epoch => "epoch",
            WaitKind::Backoff => "backoff",
            WaitKind::Other => "other",
        }
    }
}

/// A thread's counts of waits and time waited, by kind (indexed by `WaitKind as usize`).
/// Under a coroutine scheduler the time is each transaction's (others ran meanwhile), so
/// the sum over a thread's coroutines may exceed the thread's elapsed time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitStats {
    pub waits: [u64; KINDS],
    pub wait_ns: [u64; KINDS],
}

impl WaitStats {
    /// `self - earlier` (the waits in between two snapshots of one thread).
    pub fn since(&self, earlier: &WaitStats) -> WaitStats {
        let mut d = *self;
        for k in 0..KINDS {
            d.waits[k] -= earlier.waits[k];
            d.wait_ns[k] -= earlier.wait_ns[k];
        }
        d
    }
    pub fn add(&mut self, o: &WaitStats) {
        for k in 0..KINDS {
            self.waits[k] += o.waits[k];
            self.wait_ns[k] += o.wait_ns[k];
        }
    }
}

/// What kind of point a running transaction reached, for the scheduler to decide whether
/// to switch. Waits are told through [`Scheduler::wait`]; these are the points where
/// nothing waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Point {
    /// Entry of a database operation (`api::Session`): its `probe::Op` code and the
    /// object it works on ([`NO_OBJ`], or a table or index, see [`obj`]), which together
    /// name its STEPS team.
    OpEntry(u32, u64),
    /// A STEPS context-switch (CTX) point: the entry of an engine component.
    Ctx(Component),
    /// An index probe has just asked for a cache line it will need next (a hash bucket,
    /// a B+tree node, a record) and would otherwise stall on it: an interleaving
    /// scheduler runs another transaction meanwhile ([`prefetch_point`]).
    Probe,
}

/// The object of an operation without one (begin, commit, abort, update: their code is
/// the same whatever the table, so they form one team each).
pub const NO_OBJ: u64 = u64::MAX;

/// The object id of table `table`'s index `index` (0: primary) in [`Point::OpEntry`].
#[inline]
pub const fn obj(table: u32, index: u16) -> u64 {
    ((table as u64) << 16) | index as u64
}

/// Engine components whose entries are STEPS CTX points. Never reached while holding a
/// plain (non-`rt`) lock: a switch there could stop the thread (see [`lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    /// One level of a B+tree descent.
    BtreeLevel,
    /// A lock acquire (disk engine lock manager; memory engine record lock at commit).
    LockAcquire,
    /// A log insert (disk engine log append; memory engine commit's log phase).
    LogInsert,
    /// A buffer-pool fix (disk engine).
    BufferFix,
    /// A record read (heap record; memory engine row copy).
    RecordRead,
}

impl Component {
    pub const ALL: [Component; 5] = [
        Component::BtreeLevel,
        Component::LockAcquire,
        Component::LogInsert,
        Component::BufferFix,
        Component::RecordRead,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Component::BtreeLevel => "btree_level",
            Component::LockAcquire => "lock_acquire",
            Component::LogInsert => "log_insert",
            Component::BufferFix => "buffer_fix",
            Component::RecordRead => "record_read",
        }
    }

    /// Its position in [`Component::ALL`] (the CTX_POINT marker's argument).
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_name(name: &str) -> Option<Component> {
        Component::ALL.iter().copied().find(|c| c.name() == name)
    }
}

/// Which STEPS candidate CTX points switch (autoSTEPS' choice, `--steps-points`): a point
/// is named by the operation it is reached in (`probe::Op` code of the outermost
/// operation), its component, and its ordinal: the k-th point of that component since
/// the operation's entry, from 1 (so "the second buffer fix of an index probe" is one
/// point). Without a set every candidate switches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CtxPoints {
    set: std::collections::HashSet<(u32, u8, u16)>,
}

impl CtxPoints {
    pub fn insert(&mut self, op: u32, c: Component, ordinal: u16) {
        self.set.insert((op, c as u8, ordinal));
    }
    #[inline]
    pub fn contains(&self, op: u32, c: Component, ordinal: u16) -> bool {
        self.set.contains(&(op, c as u8, ordinal))
    }
    pub fn len(&self) -> usize {
        self.set.len()
    }
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

static CTX_POINTS: parking_lot::RwLock<Option<std::sync::Arc<CtxPoints>>> =
    parking_lot::RwLock::new(None);

/// Enable exactly these candidate CTX points for STEPS schedulers started from now on
/// (None: all of them), process-wide, as if only these had been compiled in.
pub fn set_ctx_points(p: Option<CtxPoints>) {
    *CTX_POINTS.write() = p.map(std::sync::Arc::new);
}

/// The enabled CTX points (None: all).
pub fn ctx_points() -> Option<std::sync::Arc<CtxPoints>> {
    CTX_POINTS.read().clone()
}

static TRACE_CTX: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Emit a tracer marker (`probe::ctx_point`) at every candidate CTX point from now on
/// (autoSTEPS' traces); off by default, then a point costs one more relaxed load.
pub fn set_trace_ctx(on: bool) {
    TRACE_CTX.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Takes over waiting on a thread: switches to another coroutine instead of blocking.
pub trait Scheduler {
    /// Wait until `cond()` holds or `deadline` passes; returns whether `cond` held.
    fn wait(
        &self,
        kind: WaitKind,
        cond: &mut dyn FnMut() -> bool,
        deadline: Option<Instant>,
    ) -> bool;
    /// A point where the running transaction could give way (see [`Point`]).
    fn point(&self, p: Point);
    /// Run blocking calls ([`blocking`]) off this thread, switching meanwhile.
    fn offloads_io(&self) -> bool;
    /// Which calls it acts on ([`interest`] bits): the others are not made at all, so
    /// a point or mark nobody acts on costs one thread-local load and a branch (a
    /// transaction passes about ten of them).
    fn interests(&self) -> u8 {
        interest::ALL
    }
}

/// The calls a [`Scheduler`] acts on ([`Scheduler::interests`]).
pub mod interest {
    /// [`crate::Point::OpEntry`].
    pub const ENTRIES: u8 = 1;
    /// [`crate::Point::Ctx`].
    pub const CTX: u8 = 2;
    /// [`crate::Point::Probe`].
    pub const PROBES: u8 = 4;
    /// The prefetches marked by [`crate::probe_ahead`], held back until the scheduler
    /// issues them with other probes' (`Policy::Interleave`'s `group`).
    pub const GROUPS: u8 = 16;
    pub const ALL: u8 = ENTRIES | CTX | PROBES;
}

thread_local! {
    static STATS: Cell<WaitStats> = const { Cell::new(WaitStats { waits: [0; KINDS], wait_ns: [0; KINDS] }) };
    static SCHED: Cell<Option<NonNull<dyn Scheduler + 'static>>> = const { Cell::new(None) };
    /// The installed scheduler's [`Scheduler::interests`] (0 without one).
    static INTERESTS: Cell<u8> = const { Cell::new(0) };
    /// Lines asked for while an interleaving scheduler groups its probes' prefetches
    /// (`Defer`), not yet asked of the memory system.
    static DEFER: Defer = const { Defer { armed: Cell::new(false), n: Cell::new(0), q: [const { Cell::new(0) }; DEFER_CAP] } };
}

const DEFER_CAP: usize = 512;

/// Prefetches held back while other transactions' come, then issued back to back.
struct Defer {
    /// Between `probe_ahead` and the probe point after it, under a scheduler interested
    /// in [`interest::GROUPS`].
    armed: Cell<bool>,
    n: Cell<usize>,
    q: [Cell<usize>; DEFER_CAP],
}

/// The prefetches until the next [`Point::Probe`] are for after it: an interleaving
/// scheduler that groups probes may hold them back and issue them with other
/// transactions' (`Policy::Interleave`'s `group`, `--interleave-group`).
#[inline(always)]
pub fn probe_ahead() {
    if interested(interest::GROUPS) {
        DEFER.with(|d| d.armed.set(true));
    }
}

/// No probe point follows the `probe_ahead` after all: prefetches go out at once again.
#[inline(always)]
pub fn probe_ahead_off() {
    DEFER.with(|d| d.armed.set(false));
}

/// Lines held back now (tests).
#[cfg(test)]
fn held_prefetches() -> usize {
    DEFER.with(|d| d.n.get())
}

/// Issue the held prefetches, back to back (and hold no more until the next
/// `probe_ahead`).
#[inline]
pub(crate) fn flush_prefetches() {
    DEFER.with(|d| {
        let n = d.n.get();
        for c in &d.q[..n] {
            issue_prefetch(c.get() as *const u8);
        }
        d.n.set(0);
        d.armed.set(false);
    });
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

/// Run `f` with `s` handling this thread's waits (restoring the previous one after,
/// also on panic).
pub fn with_scheduler<R>(s: &dyn Scheduler, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<NonNull<dyn Scheduler + 'static>>, u8);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCHED.with(|c| c.set(self.0));
            INTERESTS.with(|c| c.set(self.1));
        }
    }
    // SAFETY: the pointer is only dereferenced (by `current`) on this thread while `f`
    // runs, and removed before `s` can go away (`Restore` runs on return and unwind).
    let p: NonNull<dyn Scheduler + 'static> = unsafe { std::mem::transmute(NonNull::from(s)) };
    let _restore = Restore(
        SCHED.with(|c| c.replace(Some(p))),
        INTERESTS.with(|c| c.replace(s.interests())),
    );
    f()
}

/// Whether the installed scheduler (if any) acts on calls of kind `bit`.
#[inline(always)]
fn interested(bit: u8) -> bool {
    INTERESTS.with(|c| c.get()) & bit != 0
}

/// The scheduler installed on this thread, if any.
#[inline]
fn current<'a>() -> Option<&'a dyn Scheduler> {
    // SAFETY: installed only for the extent of `with_scheduler`, which outlives every
    // wait made inside it; callers use the reference only for the wait at hand.
    SCHED.with(|c| c.get()).map(|p| unsafe { &*p.as_ptr() })
}

/// Whether a scheduler handles this thread's waits.
#[inline]
pub fn scheduled() -> bool {
    SCHED.with(|c| c.get()).is_some()
}

/// Whether a [`Point::Probe`] on this thread reaches a scheduler that acts on it (one
/// that may run another transaction there: `--interleave N` with N > 1). A lookup that
/// can split its misses over two probe points does so only then; without one, a second
/// miss after the first is a stall of its own. One thread-local load.
#[inline]
pub fn probes_switch() -> bool {
    interested(interest::PROBES)
}

/// Tell the scheduler (if any) that the running transaction reached point `p`. One
/// thread-local load and a branch when no scheduler is installed (and for a CTX point a
/// relaxed load of the autoSTEPS trace flag).
#[inline]
pub fn point(p: Point) {
    if let Point::Ctx(c) = p {
        if TRACE_CTX.load(std::sync::atomic::Ordering::Relaxed) {
            probe::ctx_point(c as u32);
        }
    }
    let bit = match p {
        Point::OpEntry(..) => interest::ENTRIES,
        Point::Ctx(_) => interest::CTX,
        Point::Probe => {
            if interested(interest::GROUPS) {
                DEFER.with(|d| d.armed.set(false));
            }
            interest::PROBES
        }
    };
    if interested(bit) {
        if let Some(s) = current() {
            s.point(p);
        }
    }
}

/// Ask for the cache line at `p` (a hint: never faults, whatever the address). Between
/// [`probe_ahead`] and the probe point after it, under a scheduler that groups probes,
/// the request is held back and issued with other transactions' (a full queue issues
/// it at once).
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    let held = DEFER.with(|d| {
        if !d.armed.get() {
            return false;
        }
        let n = d.n.get();
        if n == DEFER_CAP {
            return false;
        }
        d.q[n].set(p as usize);
        d.n.set(n + 1);
        true
    });
    if !held {
        issue_prefetch(p);
    }
}

/// [`prefetch`] of the `lines` cache lines from `p` on, the thread's grouping state read
/// once for all of them, not once per line (a B+tree node is 5-14 lines).
#[inline(always)]
pub fn prefetch_lines(p: *const u8, lines: usize) {
    if DEFER.with(|d| d.armed.get()) {
        for l in 0..lines {
            prefetch(p.wrapping_add(l * 64));
        }
    } else {
        for l in 0..lines {
            issue_prefetch(p.wrapping_add(l * 64));
        }
    }
}

#[inline(always)]
fn issue_prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetch the line at `p` and reach [`Point::Probe`]: under `--interleave` the thread
/// runs another transaction while the line comes; otherwise this is the prefetch plus
/// a few thread-local loads and branches.
#[inline(always)]
pub fn prefetch_point<T>(p: *const T) {
    prefetch_for_probe(true, || prefetch(p));
}

/// The shape of every probe: when `on`, the lines `ask` prefetches are for after a
/// [`Point::Probe`] ([`probe_ahead`]) and the point follows them; otherwise `ask` alone.
#[inline(always)]
pub fn prefetch_for_probe(on: bool, ask: impl FnOnce()) {
    if on {
        probe_ahead();
    }
    ask();
    if on {
        point(Point::Probe);
    }
}

const SPINS: u32 = 64;
/// How long `Event::wait` spins on a lock or latch condition before it sleeps.
const EVENT_SPIN: Duration = Duration::from_micros(50);
/// Spin-loop hints between two checks of the condition while spinning: about 0.1 µs (a
/// hint takes 27 ns on the AMD EPYC VMs this runs on), so a released lock or latch is
/// seen about 0.05 µs after its release on average, not 0.45 µs as with 32 hints. The
/// conditions are cheap reads (lock grant flags; latch `try_*` look before their CAS).
const SPIN_CHECK: u32 = 4;
/// Condition checks between two reads of the clock while spinning (about 0.9 µs).
const SPIN_CLOCK: u32 = 8;
const YIELDS: u32 = 16;

/// One step of the thread's escalating pause: spin, then yield, then sleep in growing
/// steps up to 1 ms (`round` counts from 0).
pub(crate) fn pause(round: u32) {
    if round < SPINS {
        std::hint::spin_loop();
    } else if round < SPINS + YIELDS {
        std::thread::yield_now();
    } else {
        let us = 1u64 << ((round - SPINS - YIELDS).min(10));
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// Wait until `cond()` holds or `timeout` passes: spin briefly, then yield, then sleep in
/// growing steps (up to 1 ms). For short waits on state another thread changes without
/// signalling (latches, epochs). Returns whether `cond` held.
#[inline]
pub fn wait_until(
    kind: WaitKind,
    timeout: Option<Duration>,
    mut cond: impl FnMut() -> bool,
) -> bool {
    if cond() {
        return true;
    }
    wait_slow(kind, timeout, &mut cond)
}

#[cold]
fn wait_slow(kind: WaitKind, timeout: Option<Duration>, cond: &mut dyn FnMut() -> bool) -> bool {
    let start = Instant::now();
    let deadline = timeout.map(|t| start + t);
    if let Some(s) = current() {
        let ok = s.wait(kind, cond, deadline);
        record(kind, start);
        return ok;
    }
    // Spin for about a wake-up's cost first (see `EVENT_SPIN`), checking the condition
    // every `SPIN_CHECK` hints and the clock every `SPIN_CLOCK` checks; then the
    // escalating pause.
    let spin_end = start + EVENT_SPIN;
    let mut round = 0u32;
    let ok = 'wait: loop {
        if cond() {
            break true;
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break false;
        }
        if now < spin_end {
            for _ in 0..SPIN_CLOCK {
                for _ in 0..SPIN_CHECK {
                    std::hint::spin_loop();
                }
                if cond() {
                    break 'wait true;
                }
            }
            continue;
        }
        pause(round);
        round += 1;
    };
    record(kind, start);
    ok
}

/// Lock `m`: `try_lock` first, then wait through `rt` (a coroutine holding it may be
/// suspended on this very thread: blocking would never let it run again).
#[inline]
pub fn lock<T>(kind: WaitKind, m: &Mutex<T>) -> MutexGuard<'_, T> {
    if let Some(g) = m.try_lock() {
        return g;
    }
    let mut got = None;
    wait_until(kind, None, || {
        got = m.try_lock();
        got.is_some()
    });
    got.expect("wait_until without a timeout returns once the condition held")
}

/// Read-lock `m` (as [`lock`]).
#[inline]
pub fn read<T>(kind: WaitKind, m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    if let Some(g) = m.try_read() {
        return g;
    }
    let mut got = None;
    wait_until(kind, None, || {
        got = m.try_read();
        got.is_some()
    });
    got.expect("wait_until without a timeout returns once the condition held")
}

/// Write-lock `m` (as [`lock`]).
#[inline]
pub fn write<T>(kind: WaitKind, m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    if let Some(g) = m.try_write() {
        return g;
    }
    let mut got = None;
    wait_until(kind, None, || {
        // Look first: `try_write` is a CAS even when the lock is held.
        if m.is_locked() {
            return false;
        }
        got = m.try_write();
        got.is_some()
    });
    got.expect("wait_until without a timeout returns once the condition held")
}

/// Run a blocking call (a page read or write, a log write and fsync) and count it as a
/// wait of `kind`. Under a coroutine scheduler it runs on a small I/O thread pool while
/// this thread switches to other coroutines; otherwise inline, as a plain call.
pub fn blocking<R: Send>(kind: WaitKind, f: impl FnOnce() -> R + Send) -> R {
    let start = Instant::now();
    let r = match current() {
        Some(s) if s.offloads_io() => io::offload(f, |done| {
            s.wait(kind, &mut || done(), None);
        }),
        _ => f(),
    };
    record(kind, start);
    r
}

/// Let the current thread run on any CPU the process may use. A thread inherits its
/// creator's affinity, and the driver pins each worker to one core (`--no-pin` aside), so
/// the threads a worker starts for one query's scan parts would otherwise all share the
/// worker's core. The mask is the main thread's, which nothing pins: the process's CPUs
/// (within its cgroup's cpuset, `--cores`).
pub fn unpin_current() {
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: a zeroed `cpu_set_t` is a valid empty set; both calls get its true size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(libc::getpid(), size, &mut set) == 0 {
            // A failure leaves the thread where it was: slower, never wrong.
            libc::sched_setaffinity(0, size, &set);
        }
    }
}

/// The one conflict back-off policy: before retry `n` of a transaction that aborted on
/// a conflict, wait a random number of spins below 2^min(n, 12); past 16 tries also give
/// the core (or, under a coroutine scheduler, the thread) away.
pub struct Backoff {
    tries: u32,
    seed: u64,
}

impl Backoff {
    /// `salt` decorrelates workers (e.g. the worker id).
    pub fn new(salt: u64) -> Self {
        Backoff {
            tries: 0,
            // Never 0 (xorshift would stay there).
            seed: salt
                .wrapping_add(1)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .max(1),
        }
    }

    /// Conflicts since the last [`Backoff::reset`].
    pub fn tries(&self) -> u32 {
        self.tries
    }

    /// A new transaction: forget earlier conflicts.
    pub fn reset(&mut self) {
        self.tries = 0;
    }

    /// Count one conflict and wait before the retry.
    pub fn wait(&mut self) {
        let start = Instant::now();
        self.tries += 1;
        // xorshift64: decorrelated retries without a shared generator.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let spins = self.seed % (1u64 << self.tries.min(12));
        for _ in 0..spins {
            std::hint::spin_loop();
        }
        match current() {
            // Let the thread's other transactions run (the conflicting one may be
            // among them).
            Some(s) => {
                let mut once = false;
                s.wait(
                    WaitKind::Backoff,
                    &mut || std::mem::replace(&mut once, true),
                    None,
                );
            }
            None if self.tries > 16 => std::thread::yield_now(),
            None => {}
        }
        record(WaitKind::Backoff, start);
    }
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
        if let Some(s) = current() {
            // Coroutines poll: blocking on the condvar would stop the whole thread.
            let ok = s.wait(kind, &mut cond, deadline);
            record(kind, start);
            return ok;
        }
        // A lock or latch is usually held for microseconds, and waking a thread that
        // sleeps on the other core costs about 70 µs on the VMs this runs on: spin on
        // the condition first, for about as long as a wake-up would take.
        if matches!(kind, WaitKind::Lock | WaitKind::Latch) {
            let spin_until = start + EVENT_SPIN;
            let end = deadline.map_or(spin_until, |d| d.min(spin_until));
            loop {
                for _ in 0..SPIN_CLOCK {
                    for _ in 0..SPIN_CHECK {
                        std::hint::spin_loop();
                    }
                    if cond() {
                        record(kind, start);
                        return true;
                    }
                }
                if Instant::now() >= end {
                    break;
                }
            }
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
    use std::panic::AssertUnwindSafe;
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
        assert_eq!(
            thread_stats().waits[WaitKind::Latch as usize],
            1,
            "no wait, no count"
        );
    }

    #[test]
    fn coroutines_switch_on_waits_instead_of_blocking() {
        // A holds a mutex across a wait for B's flag; B then wants the mutex. On one
        // thread this only finishes if both waits switch.
        let m = Mutex::new(0u32);
        let flag = AtomicBool::new(false);
        let order = std::cell::RefCell::new(Vec::new());
        let stats = coro::run(
            coro::Policy::RoundRobin,
            vec![
                Box::new(|| {
                    let mut g = lock(WaitKind::Latch, &m);
                    order.borrow_mut().push("a locked");
                    wait_until(WaitKind::Other, None, || flag.load(Ordering::Acquire));
                    *g += 1;
                    order.borrow_mut().push("a done");
                }),
                Box::new(|| {
                    order.borrow_mut().push("b runs");
                    flag.store(true, Ordering::Release);
                    *lock(WaitKind::Latch, &m) += 1;
                    order.borrow_mut().push("b done");
                }),
            ],
        );
        assert_eq!(*m.lock(), 2);
        assert_eq!(*order.borrow(), ["a locked", "b runs", "a done", "b done"]);
        assert!(stats.switches >= 4, "{stats:?}");
        assert!(!scheduled(), "the scheduler is removed after the run");
    }

    #[test]
    fn blocking_runs_off_the_thread_only_under_a_scheduler() {
        let me = std::thread::current().id();
        assert_eq!(
            blocking(WaitKind::PageIo, || std::thread::current().id()),
            me
        );
        let before = thread_stats().waits[WaitKind::PageIo as usize];
        let mut buf = [0u8; 4];
        let other = std::cell::Cell::new(None);
        coro::run(
            coro::Policy::RoundRobin,
            vec![Box::new(|| {
                // Borrows from this frame: the I/O thread writes into `buf`.
                let id = blocking(WaitKind::PageIo, || {
                    buf.copy_from_slice(b"read");
                    std::thread::current().id()
                });
                other.set(Some(id));
            })],
        );
        assert_ne!(other.get(), Some(me));
        assert_eq!(&buf, b"read");
        assert_eq!(thread_stats().waits[WaitKind::PageIo as usize], before + 1);
    }

    fn interleaving(seed: u64) -> Vec<(usize, u32)> {
        let log = std::cell::RefCell::new(Vec::new());
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..3)
            .map(|c| {
                let log = &log;
                Box::new(move || {
                    for step in 0..5 {
                        point(Point::OpEntry(step, NO_OBJ));
                        log.borrow_mut().push((c, step));
                    }
                }) as Box<dyn FnOnce()>
            })
            .collect();
        coro::run(coro::Policy::Seeded(seed), bodies);
        log.into_inner()
    }

    #[test]
    fn a_seed_names_one_interleaving() {
        let a = interleaving(7);
        assert_eq!(a.len(), 15);
        assert_eq!(a, interleaving(7), "same seed, same interleaving");
        let distinct: std::collections::HashSet<_> = (0..20).map(interleaving).collect();
        assert!(
            distinct.len() > 10,
            "seeds explore interleavings: {}",
            distinct.len()
        );
    }

    #[test]
    fn round_robin_ignores_points() {
        let log = std::cell::RefCell::new(Vec::new());
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..2)
            .map(|c| {
                let log = &log;
                Box::new(move || {
                    for step in 0..3 {
                        point(Point::OpEntry(step, NO_OBJ));
                        log.borrow_mut().push((c, step));
                    }
                }) as Box<dyn FnOnce()>
            })
            .collect();
        coro::run(coro::Policy::RoundRobin, bodies);
        assert_eq!(
            log.into_inner(),
            [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        );
    }

    /// Grouped interleaving: the lines asked for between `probe_ahead` and a probe point
    /// are held back until `group` probe points have been reached (or a coroutine waits
    /// or ends), then issued together; lines asked for any other way go out at once, and
    /// nothing is held without such a scheduler or after it returns.
    #[test]
    fn grouped_probes_hold_their_prefetches_until_the_group_is_complete() {
        use std::cell::RefCell;
        let line = [0u64; 64];
        for group in [1usize, 2, 3, 4] {
            // (coroutine, step, lines held when the step starts)
            let log = RefCell::new(Vec::new());
            let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..4)
                .map(|c| {
                    let (log, line) = (&log, &line);
                    Box::new(move || {
                        for step in 0..3 {
                            log.borrow_mut().push((c, step, held_prefetches()));
                            prefetch(&line[0]); // no probe after it: at once
                            probe_ahead();
                            prefetch(&line[8]);
                            prefetch(&line[16]);
                            point(Point::Probe);
                        }
                        if c == 1 {
                            probe_ahead();
                            prefetch(&line[24]);
                            probe_ahead_off(); // no probe point after all
                            prefetch(&line[32]);
                        }
                    }) as Box<dyn FnOnce() + '_>
                })
                .collect();
            let st = coro::run(coro::Policy::Interleave { group }, bodies);
            assert_eq!(st.probe_switches, 12, "group {group}");
            let log = log.into_inner();
            // Round robin as without groups; two lines per probe held, and the held
            // ones issued every `group` probe points.
            for (n, &(c, step, held)) in log.iter().enumerate() {
                assert_eq!((c, step), (n % 4, n / 4), "group {group}");
                let want = if group == 1 { 0 } else { 2 * (n % group) };
                assert_eq!(held, want, "group {group}, step {n}");
            }
            assert_eq!(held_prefetches(), 0, "group {group}: issued at the end");
            // Off again after the run.
            probe_ahead();
            prefetch(&line[40]);
            assert_eq!(held_prefetches(), 0);
            point(Point::Probe);
        }
    }

    #[test]
    fn interleave_switches_at_probe_points_only_with_company() {
        use std::cell::RefCell;
        let line = 0u64;
        // Two coroutines: each probe point hands the thread to the other.
        let log = RefCell::new(Vec::new());
        let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..2)
            .map(|c| {
                let log = &log;
                let line = &line;
                Box::new(move || {
                    for step in 0..3 {
                        log.borrow_mut().push((c, step));
                        point(Point::OpEntry(0, NO_OBJ)); // not a probe: no switch
                        prefetch_point(line);
                    }
                }) as Box<dyn FnOnce() + '_>
            })
            .collect();
        let st = coro::run(coro::Policy::INTERLEAVE, bodies);
        assert_eq!(
            log.into_inner(),
            [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
        );
        // Every probe switched (a coroutine is company until it has returned).
        assert_eq!(st.probe_switches, 6);
        // Alone, a probe point never switches.
        let st = coro::run(
            coro::Policy::INTERLEAVE,
            vec![Box::new(|| (0..10).for_each(|_| prefetch_point(&line)))],
        );
        assert_eq!((st.probe_switches, st.switches), (0, 1));
        // Without a scheduler it is a prefetch and nothing else.
        prefetch_point(&line);
        // Round-robin ignores probe points.
        let st = coro::run(
            coro::Policy::RoundRobin,
            vec![
                Box::new(|| prefetch_point(&line)),
                Box::new(|| prefetch_point(&line)),
            ],
        );
        assert_eq!(st.probe_switches, 0);
    }

    #[test]
    fn a_panicking_coroutine_lets_the_others_finish_then_panics() {
        let finished = AtomicBool::new(false);
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
            coro::run(
                coro::Policy::RoundRobin,
                vec![
                    Box::new(|| panic!("boom")),
                    Box::new(|| finished.store(true, Ordering::Relaxed)),
                ],
            )
        }));
        assert!(r.is_err());
        assert!(finished.load(Ordering::Relaxed));
        assert!(!scheduled());
    }

    #[test]
    fn no_voluntary_switch_while_unwinding() {
        // A reaches a point while it unwinds (a guard's drop). Were that a switch, B
        // would run while the thread counts as panicking (std's count is per thread:
        // mutex poisoning, drop-time checks and a second panic would all see it).
        struct AtPoint;
        impl Drop for AtPoint {
            fn drop(&mut self) {
                point(Point::OpEntry(0, NO_OBJ));
            }
        }
        for seed in 0..8 {
            let saw_panicking = std::cell::Cell::new(false);
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                coro::run(
                    coro::Policy::Seeded(seed),
                    vec![
                        Box::new(|| {
                            let _g = AtPoint;
                            panic!("a");
                        }),
                        Box::new(|| {
                            point(Point::OpEntry(0, NO_OBJ));
                            saw_panicking.set(std::thread::panicking());
                        }),
                    ],
                )
            }));
            assert!(r.is_err(), "seed {seed}");
            assert!(!saw_panicking.get(), "seed {seed}: B ran while A unwound");
        }
    }

    #[test]
    fn backoff_grows_and_counts() {
        let mut b = Backoff::new(3);
        let before = thread_stats().waits[WaitKind::Backoff as usize];
        for _ in 0..3 {
            b.wait();
        }
        assert_eq!(b.tries(), 3);
        assert_eq!(thread_stats().waits[WaitKind::Backoff as usize], before + 3);
        b.reset();
        assert_eq!(b.tries(), 0);
    }
}
