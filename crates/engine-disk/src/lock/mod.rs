//! The disk engine's lock manager: hierarchical two-phase locking (Database > Table >
//! Page > Record, and Database > Table > Key for index keys) in IS/IX/S/SIX/X, with
//! automatic intention locks, upgrades, lock escalation, waits-for-graph deadlock
//! detection, optional timeouts and speculative lock inheritance of table and database
//! intention locks. Design: `docs/design/lock-manager.md`.
//!
//! Owns lock heads and each transaction's set of held locks. It must never wait except
//! through `rt` (lock grants as `WaitKind::Lock`, lock-table latches as `WaitKind::Latch`),
//! never block while holding a lock-table latch, and never release a lock before
//! `release_all` except instant-duration locks and finer locks made redundant by
//! escalation (strict 2PL).

mod deadlock;
mod id;
mod mode;
mod table;
#[cfg(test)]
mod tests;

pub use id::{LockId, END_OF_INDEX};
pub use mode::LockMode;

use deadlock::{Detector, Verdict};
use rustc_hash::FxHashMap;
use std::sync::atomic::AtomicU8;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use table::{wake_all, LockTable, Outcome, Slot, Waiter, IN_USE, PARKED, WAITING};

/// Lock-manager settings (limits are checked in [`LockManager::new`]).
#[derive(Debug, Clone)]
pub struct LockConfig {
    /// A transaction holding more than this many record/key locks in one table escalates
    /// to a table lock (S, or X if it writes the table). 0 disables escalation.
    pub escalation_threshold: u32,
    /// Give up a lock wait after this long with `Conflict("lock timeout")`.
    pub timeout: Option<Duration>,
    /// Lock-table partitions (each its own latch); a power of two.
    pub partitions: usize,
    /// A waiter re-runs deadlock detection this often while it waits (a safety net: the
    /// check at wait start already finds every cycle, see the design document).
    pub deadlock_recheck: Duration,
    /// Speculative lock inheritance: at the end of a transaction keep its IS/IX locks on
    /// tables and the database in the lock table for the next transaction of the same
    /// `TxnLocks` (revoked as soon as anyone requests a conflicting mode or must wait
    /// there). Saves two lock-table latch round trips per hot intention lock.
    pub inherit: bool,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            escalation_threshold: 25,
            timeout: None,
            partitions: 4096,
            deadlock_recheck: Duration::from_secs(1),
            inherit: true,
        }
    }
}

/// Partition-count limit (64 B each, and about 512 B of room for heads each: about
/// 600 MiB at most; the default 4096 take about 2.3 MiB).
pub const MAX_PARTITIONS: usize = 1 << 20;

/// Locks a transaction remembers having waited for (released first at its end).
const WAITED_MAX: usize = 8;

/// Counters since the manager was created. Per-request counters (`requests`, `covered`,
/// `acquired`, `upgrades`, `released`) are added when a transaction calls `release_all`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Calls to `lock`.
    pub requests: u64,
    /// Calls to `lock` that returned at once: already held, or implied by a coarser lock.
    pub covered: u64,
    /// Locks granted by the lock table (including intention locks and upgrades).
    pub acquired: u64,
    /// Of `acquired`, upgrades of a lock already held to a stronger mode.
    pub upgrades: u64,
    /// Locks released.
    pub released: u64,
    /// Requests that had to wait for a conflicting lock (logical contention).
    pub waits: u64,
    /// Time spent in those waits, in nanoseconds.
    pub wait_ns: u64,
    /// Lock-table latch acquisitions that found the latch taken (physical contention).
    pub latch_contended: u64,
    /// Time spent waiting for those latches, in nanoseconds (Lock-PC time).
    pub latch_wait_ns: u64,
    /// Requests refused as deadlock victims.
    pub deadlocks: u64,
    /// Of `deadlocks`, those found only by a periodic re-check (`deadlock_recheck`), not
    /// when the wait began. Expected 0; nonzero means a cycle formed in a way the design
    /// does not foresee.
    pub late_deadlocks: u64,
    /// Requests refused after `timeout`.
    pub timeouts: u64,
    /// Escalations to a table lock.
    pub escalations: u64,
    /// Escalations not done because the table lock was not free at once.
    pub escalation_failures: u64,
    /// Requests served by a lock inherited from the same owner's previous transaction
    /// (no lock-table access).
    pub inherited: u64,
    /// Inherited locks revoked because another transaction requested a conflicting mode
    /// or had to wait on their head.
    pub revoked: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    covered: AtomicU64,
    acquired: AtomicU64,
    upgrades: AtomicU64,
    released: AtomicU64,
    waits: AtomicU64,
    wait_ns: AtomicU64,
    deadlocks: AtomicU64,
    late_deadlocks: AtomicU64,
    timeouts: AtomicU64,
    escalations: AtomicU64,
    escalation_failures: AtomicU64,
    inherited: AtomicU64,
}

/// A transaction's own counters, folded into the manager's at `release_all` so the
/// common path writes no shared cache line.
#[derive(Default, Clone, Copy)]
struct TxnCounters {
    requests: u64,
    covered: u64,
    acquired: u64,
    upgrades: u64,
    released: u64,
    inherited: u64,
}

/// Locks one transaction acquired (for per-transaction statistics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TxnLockCounts {
    /// Record and key locks granted (not counting upgrades or implied requests).
    pub fine: u64,
    /// Page, table and database locks granted (intention locks included).
    pub coarse: u64,
    /// Requests that waited for a conflicting lock.
    pub waits: u64,
    /// Escalations of this transaction's record locks to a table lock.
    pub escalations: u64,
}

#[derive(Default, Clone, Copy)]
struct TableFine {
    /// Record/key locks held in the table.
    fine: u32,
    /// Next fine count at which escalation is tried (after a failed try).
    retry_at: u32,
}

/// A lock kept in the table by its owner across transactions (speculative inheritance).
struct Kept {
    /// The mode granted in the table (updated when the lock is parked).
    mode: LockMode,
    slot: Slot,
}

/// One transaction's locks. Reuse it across transactions (`reset`) to avoid allocation
/// and to inherit locks (`LockConfig::inherit`): the lock table names requests by the
/// owner id given to [`TxnLocks::new`], which stays the same across `reset`.
pub struct TxnLocks {
    txn_id: u64,
    /// The name of this object's requests in the lock table and the waits-for graph.
    owner: u64,
    held: FxHashMap<LockId, LockMode>,
    /// Locks with an inheritance slot in the table: in use (also in `held`) or parked.
    kept: FxHashMap<LockId, Kept>,
    tables: FxHashMap<u32, TableFine>,
    waiter: Arc<Waiter>,
    /// Registered in the deadlock detector (waited at least once).
    registered: bool,
    counters: TxnCounters,
    counts: TxnLockCounts,
    scratch: Vec<(LockId, LockMode)>,
    wake: Vec<Arc<Waiter>>,
    /// Locks this transaction had to wait for: others likely queue on them too.
    waited: Vec<LockId>,
}

impl TxnLocks {
    /// `txn_id` must be unique among live `TxnLocks`: it is also the owner id that names
    /// this object's requests in lock queues and in the waits-for graph, for good (`reset`
    /// changes only the transaction id).
    pub fn new(txn_id: u64) -> Self {
        TxnLocks {
            txn_id,
            owner: txn_id,
            held: FxHashMap::default(),
            kept: FxHashMap::default(),
            tables: FxHashMap::default(),
            waiter: Arc::new(Waiter::new()),
            registered: false,
            counters: TxnCounters::default(),
            counts: TxnLockCounts::default(),
            scratch: Vec::new(),
            wake: Vec::new(),
            waited: Vec::new(),
        }
    }

    /// Start a new transaction with this object; its locks must have been released
    /// (inherited locks stay kept for it).
    pub fn reset(&mut self, txn_id: u64) {
        assert!(
            self.held.is_empty(),
            "TxnLocks::reset: txn {} still holds {} locks (call release_all first)",
            self.txn_id,
            self.held.len()
        );
        self.txn_id = txn_id;
        self.tables.clear();
        self.registered = false;
        self.counts = TxnLockCounts::default();
    }

    /// Locks this transaction acquired since `new`/`reset`.
    pub fn counts(&self) -> TxnLockCounts {
        self.counts
    }

    pub fn txn_id(&self) -> u64 {
        self.txn_id
    }

    /// The id naming this object's requests in the lock table (see [`TxnLocks::new`]).
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// Locks kept in the table for inheritance (in use by this transaction or parked).
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// The mode this transaction holds on `id` itself (not counting coarser locks).
    pub fn held(&self, id: LockId) -> Option<LockMode> {
        self.held.get(&id).copied()
    }

    /// Number of locks held (each resource once).
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Record/key locks held in `table`.
    pub fn fine_locks(&self, table: u32) -> u32 {
        self.tables.get(&table).map_or(0, |t| t.fine)
    }

    /// Whether a lock in `mode` on `id` is granted to this transaction, explicitly or
    /// implied by a lock on an ancestor.
    pub fn covers(&self, id: LockId, mode: LockMode) -> bool {
        if self.held(id).is_some_and(|h| h.covers(mode)) {
            return true;
        }
        let (anc, n) = id.ancestors();
        anc[..n]
            .iter()
            .any(|a| self.held(*a).is_some_and(|h| h.implies_below(mode)))
    }
}

/// The centralized lock manager, shared by all workers.
pub struct LockManager {
    cfg: LockConfig,
    table: LockTable,
    detector: Detector,
    c: Counters,
}

impl Default for LockManager {
    fn default() -> Self {
        LockManager::new(LockConfig::default())
    }
}

impl LockManager {
    pub fn new(cfg: LockConfig) -> Self {
        assert!(
            cfg.partitions.is_power_of_two() && cfg.partitions <= MAX_PARTITIONS,
            "LockConfig: partitions {} must be a power of two <= {MAX_PARTITIONS}",
            cfg.partitions
        );
        assert!(
            !cfg.deadlock_recheck.is_zero(),
            "LockConfig: deadlock_recheck must be > 0"
        );
        LockManager {
            table: LockTable::new(cfg.partitions),
            cfg,
            detector: Detector::default(),
            c: Counters::default(),
        }
    }

    pub fn config(&self) -> &LockConfig {
        &self.cfg
    }

    /// Acquire `mode` on `id`, first taking the intention locks on its ancestors top-down
    /// unless already covered; upgrades an existing lock (supremum of modes); returns at
    /// once when a lock this transaction holds (on `id` or a coarser resource) covers the
    /// request. Blocks on conflict. Errors: `Conflict("deadlock")` when this transaction
    /// is the deadlock victim, `Conflict("lock timeout")` after `timeout`; either way the
    /// transaction keeps its other locks and must abort (`release_all`).
    pub fn lock(&self, txn: &mut TxnLocks, id: LockId, mode: LockMode) -> api::Result<()> {
        self.request(txn, id, mode, false, false).map(|_| ())
    }

    /// Like [`lock`](Self::lock) but never waits: `Ok(false)` when the lock (or one of the
    /// intention locks) is not free at once. Intention locks already granted are kept.
    /// For callers holding a page latch (never wait for a lock under a latch).
    pub fn try_lock(&self, txn: &mut TxnLocks, id: LockId, mode: LockMode) -> api::Result<bool> {
        self.request(txn, id, mode, true, false)
    }

    /// Instant-duration lock (key-range locking's insert check): wait until `mode` on
    /// `id` could be granted, then release it at once. Intention locks on the ancestors
    /// are kept. If the transaction already holds a weaker mode on `id`, the upgrade is
    /// kept (stronger than needed, never weaker).
    pub fn lock_instant(&self, txn: &mut TxnLocks, id: LockId, mode: LockMode) -> api::Result<()> {
        self.request(txn, id, mode, false, true).map(|_| ())
    }

    /// [`lock_instant`](Self::lock_instant) without waiting: `Ok(false)` if not free.
    pub fn try_lock_instant(
        &self,
        txn: &mut TxnLocks,
        id: LockId,
        mode: LockMode,
    ) -> api::Result<bool> {
        self.request(txn, id, mode, true, true)
    }

    fn request(
        &self,
        txn: &mut TxnLocks,
        id: LockId,
        mode: LockMode,
        nowait: bool,
        instant: bool,
    ) -> api::Result<bool> {
        rt::point(rt::Point::Ctx(rt::Component::LockAcquire));
        txn.counters.requests += 1;
        // One lookup per level: what this transaction holds on `id` and its ancestors.
        let (anc, n) = id.ancestors();
        let mut up: [Option<LockMode>; 3] = [None; 3];
        for i in 0..n {
            up[i] = Self::claim(txn, anc[i]);
        }
        let own = Self::claim(txn, id);
        let implied = |up: &[Option<LockMode>], m: LockMode| {
            up.iter().any(|h| h.is_some_and(|h| h.implies_below(m)))
        };
        if own.is_some_and(|h| h.covers(mode)) || implied(&up[..n], mode) {
            txn.counters.covered += 1;
            return Ok(true);
        }
        let need = mode.intention();
        for i in 0..n {
            if up[i].is_some_and(|h| h.covers(need)) || implied(&up[..i], need) {
                continue;
            }
            match self.acquire(txn, anc[i], up[i], need, nowait)? {
                Some(m) => up[i] = Some(m),
                None => return Ok(false),
            }
        }
        if self.acquire(txn, id, own, mode, nowait)?.is_none() {
            return Ok(false);
        }
        // The intention protocol: granted only under the intention locks it needs.
        debug_assert!(
            txn.covers(id, mode) && (0..n).all(|i| txn.covers(anc[i], need)),
            "lock: {id:?} in {} granted without its ancestors' {}",
            mode.name(),
            need.name()
        );
        if own.is_none() {
            if instant {
                self.release_one(txn, id);
            } else if id.is_fine() && self.cfg.escalation_threshold > 0 {
                let t = id.table().expect("fine locks belong to a table");
                let e = txn.tables.entry(t).or_default();
                e.fine += 1;
                if e.fine > self.cfg.escalation_threshold && e.fine >= e.retry_at {
                    self.escalate(txn, t);
                }
            }
        }
        Ok(true)
    }

    /// What `txn` holds on `id`, taking back a lock its owner kept from an earlier
    /// transaction if it was not revoked meanwhile (`PARKED -> IN_USE`, no latch).
    #[inline]
    fn claim(txn: &mut TxnLocks, id: LockId) -> Option<LockMode> {
        if let Some(m) = txn.held.get(&id) {
            return Some(*m);
        }
        if txn.kept.is_empty() || !inheritable(id) {
            return None;
        }
        let k = txn.kept.get(&id)?;
        match k
            .slot
            .compare_exchange(PARKED, IN_USE, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                let m = k.mode;
                txn.held.insert(id, m);
                txn.counters.inherited += 1;
                txn.counts.coarse += 1;
                Some(m)
            }
            Err(s) => {
                assert_eq!(
                    s,
                    table::REVOKED,
                    "lock: txn {} kept {id:?} in use outside a transaction",
                    txn.txn_id
                );
                // Revoked: its request is gone from the table; request it anew.
                txn.kept.remove(&id);
                None
            }
        }
    }

    /// Give up every lock `txn` keeps for inheritance (its owner stops running
    /// transactions; call after `release_all`). Leaves nothing of `txn` in the table.
    pub fn release_kept(&self, txn: &mut TxnLocks) {
        assert!(
            txn.held.is_empty(),
            "release_kept: txn {} still holds {} locks (call release_all first)",
            txn.txn_id,
            txn.held.len()
        );
        let mut n = 0;
        for (l, k) in txn.kept.drain() {
            if self
                .table
                .latch(l)
                .release_parked(txn.owner, l, &k.slot, &mut txn.wake)
            {
                n += 1;
            }
            wake_all(&mut txn.wake);
        }
        self.c.released.fetch_add(n, Ordering::Relaxed);
    }

    /// Release one lock before the end of the transaction (e.g. a read lock under cursor
    /// stability / read committed). Breaks strict 2PL for that resource: callers must not
    /// release locks protecting their writes. Returns whether the lock was held. The
    /// intention locks on its ancestors stay.
    pub fn unlock(&self, txn: &mut TxnLocks, id: LockId) -> bool {
        if txn.held(id).is_none() {
            return false;
        }
        if !id.is_fine() {
            let below = |l: &LockId| {
                let (anc, n) = l.ancestors();
                anc[..n].contains(&id)
            };
            assert!(
                !txn.held.keys().any(below),
                "unlock of {id:?} while txn {} holds locks below it (intention protocol)",
                txn.txn_id
            );
        }
        self.release_one(txn, id);
        if id.is_fine() {
            let t = id.table().expect("fine locks belong to a table");
            if let Some(e) = txn.tables.get_mut(&t) {
                e.fine = e.fine.saturating_sub(1);
            }
        }
        true
    }

    /// Release one lock early (instant duration, or made redundant by escalation).
    fn release_one(&self, txn: &mut TxnLocks, id: LockId) {
        txn.held.remove(&id).expect("release_one: lock not held");
        if !txn.kept.is_empty() {
            txn.kept.remove(&id);
        }
        self.table.latch(id).release(txn.owner, id, &mut txn.wake);
        wake_all(&mut txn.wake);
        txn.counters.released += 1;
    }

    /// Release every lock of `txn` (strict 2PL: at commit or abort), waking waiters.
    /// With `LockConfig::inherit`, IS/IX locks on tables and the database that nobody
    /// waits for stay in the table, parked for the owner's next transaction: they no
    /// longer protect anything of this one, and whoever needs a conflicting mode revokes
    /// them.
    pub fn release_all(&self, txn: &mut TxnLocks) {
        let id = txn.owner;
        let mut n = txn.held.len() as u64;
        // Locks this transaction waited for first (a hot row: the next owner is likely
        // queued already and starts as early as possible), then the other record and key
        // locks, then coarser ones, which rarely block anyone.
        let mut all = std::mem::take(&mut txn.scratch);
        all.extend(txn.held.drain());
        all.sort_unstable_by_key(|(l, _)| !l.is_fine());
        let mut front = 0;
        for w in &txn.waited {
            if let Some(p) = all[front..].iter().position(|(l, _)| l == w) {
                all.swap(front, front + p);
                front += 1;
            }
        }
        txn.waited.clear();
        for &(l, m) in &all {
            if !txn.kept.is_empty() {
                if let Some(k) = txn.kept.get_mut(&l) {
                    let park = matches!(m, LockMode::IS | LockMode::IX)
                        && k.slot
                            .compare_exchange(IN_USE, PARKED, Ordering::AcqRel, Ordering::Acquire)
                            .is_ok();
                    if park {
                        k.mode = m;
                        n -= 1;
                        continue;
                    }
                    // Wanted by a waiter, or upgraded past an intention mode.
                    txn.kept.remove(&l);
                }
            }
            self.table.latch(l).release(id, l, &mut txn.wake);
            wake_all(&mut txn.wake);
        }
        all.clear();
        txn.scratch = all;
        txn.tables.clear();
        // What it keeps is parked (or revoked by another since): none stays in use.
        debug_assert!(
            txn.kept
                .values()
                .all(|k| k.slot.load(Ordering::Relaxed) != IN_USE),
            "lock: txn {id} keeps a lock still in use after release_all"
        );
        if txn.registered {
            self.detector.forget(id);
            txn.registered = false;
        }
        txn.counters.released += n;
        let t = std::mem::take(&mut txn.counters);
        let add = |c: &AtomicU64, v: u64| {
            if v > 0 {
                c.fetch_add(v, Ordering::Relaxed);
            }
        };
        add(&self.c.requests, t.requests);
        add(&self.c.covered, t.covered);
        add(&self.c.acquired, t.acquired);
        add(&self.c.upgrades, t.upgrades);
        add(&self.c.released, t.released);
        add(&self.c.inherited, t.inherited);
    }

    pub fn stats(&self) -> LockStats {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LockStats {
            requests: g(&self.c.requests),
            covered: g(&self.c.covered),
            acquired: g(&self.c.acquired),
            upgrades: g(&self.c.upgrades),
            released: g(&self.c.released),
            waits: g(&self.c.waits),
            wait_ns: g(&self.c.wait_ns),
            latch_contended: g(&self.table.contended),
            latch_wait_ns: g(&self.table.contended_ns),
            deadlocks: g(&self.c.deadlocks),
            late_deadlocks: g(&self.c.late_deadlocks),
            timeouts: g(&self.c.timeouts),
            escalations: g(&self.c.escalations),
            escalation_failures: g(&self.c.escalation_failures),
            inherited: g(&self.c.inherited),
            revoked: self.table.revoked(),
        }
    }

    /// Every lock head and its queue as text, one resource a line (`txn:mode` holders,
    /// `txn?mode` waiters, `->mode` pending upgrades): for diagnosing a stuck run.
    pub fn dump(&self) -> String {
        self.table.dump()
    }

    /// Lock heads in the table: 0 when no transaction holds or waits for any lock.
    pub fn active_heads(&self) -> usize {
        self.table.heads()
    }

    /// Get (or upgrade to) `mode` on `id` alone; `held` is what `txn` holds there now.
    /// Returns the mode then held, or `None` when `nowait` and not free at once.
    fn acquire(
        &self,
        txn: &mut TxnLocks,
        id: LockId,
        held: Option<LockMode>,
        mode: LockMode,
        nowait: bool,
    ) -> api::Result<Option<LockMode>> {
        debug_assert_eq!(held, txn.held(id), "lock: caller passed a stale held mode");
        let target = held.map_or(mode, |h| h.supremum(mode));
        // An upgrade never gives up what was held.
        debug_assert!(target.covers(mode) && held.is_none_or(|h| target.covers(h)));
        if held == Some(target) {
            return Ok(held);
        }
        // A new intention lock on a table or the database may be kept for inheritance.
        let slot = (self.cfg.inherit
            && held.is_none()
            && inheritable(id)
            && matches!(target, LockMode::IS | LockMode::IX))
        .then(|| Arc::new(AtomicU8::new(IN_USE)));
        let mut b = self.table.latch(id);
        // Reset before the waiter can be queued; only this thread writes WAITING.
        txn.waiter.state.store(WAITING, Ordering::Relaxed);
        let out = b.acquire(
            txn.owner,
            id,
            held,
            target,
            &txn.waiter,
            nowait,
            slot.as_ref(),
        );
        drop(b);
        match out {
            Outcome::Granted => {}
            Outcome::WouldBlock => return Ok(None),
            Outcome::Wait => {
                txn.counts.waits += 1;
                self.wait(txn, id)?;
                if txn.waited.len() < WAITED_MAX {
                    txn.waited.push(id);
                }
            }
        }
        if let Some(slot) = slot {
            txn.kept.insert(id, Kept { mode: target, slot });
        }
        let was = txn.held.insert(id, target);
        assert_eq!(was, held, "lock: {id:?} changed hands while being acquired");
        txn.counters.acquired += 1;
        if held.is_some() {
            txn.counters.upgrades += 1;
        } else if id.is_fine() {
            txn.counts.fine += 1;
        } else {
            txn.counts.coarse += 1;
        }
        Ok(Some(target))
    }

    /// Wait for the queued request of `txn` on `id`: deadlock check first, then sleep on
    /// the transaction's event, re-checking for deadlock every `deadlock_recheck`.
    fn wait(&self, txn: &mut TxnLocks, id: LockId) -> api::Result<()> {
        self.c.waits.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let deadline = self.cfg.timeout.map(|t| start + t);
        txn.registered = true;
        let mut recheck = false;
        let res = loop {
            match self.detector.check(txn.owner, id, &self.table) {
                Verdict::Wait => {}
                Verdict::Granted => break Ok(()),
                Verdict::Victim => {
                    self.c.deadlocks.fetch_add(1, Ordering::Relaxed);
                    if recheck {
                        self.c.late_deadlocks.fetch_add(1, Ordering::Relaxed);
                    }
                    break Err(api::Error::Conflict("deadlock"));
                }
            }
            recheck = true;
            let mut slice = self.cfg.deadlock_recheck;
            if let Some(d) = deadline {
                slice = slice.min(d.saturating_duration_since(Instant::now()));
            }
            let w = &txn.waiter;
            if w.event
                .wait(rt::WaitKind::Lock, Some(slice), || w.granted())
            {
                break Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                if self.detector.withdraw(txn.owner, id, &self.table) {
                    break Ok(());
                }
                self.c.timeouts.fetch_add(1, Ordering::Relaxed);
                break Err(api::Error::Conflict("lock timeout"));
            }
        };
        self.c
            .wait_ns
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        res
    }

    /// Replace `txn`'s record/key locks in `table` by one table lock (S, or X if the
    /// transaction writes there) if that lock is free at once; otherwise try again after
    /// another `escalation_threshold` fine locks. Never waits, so never deadlocks.
    fn escalate(&self, txn: &mut TxnLocks, table: u32) {
        let tid = LockId::Table(table);
        let cur = txn.held(tid).expect(
            "escalation: a transaction with record locks holds an intention lock on the table",
        );
        let cover = match cur {
            LockMode::IS | LockMode::S => LockMode::S,
            LockMode::IX | LockMode::SIX | LockMode::X => LockMode::X,
        };
        let target = cur.supremum(cover);
        let threshold = self.cfg.escalation_threshold;
        // The database intention held for `cur` also covers `target` (same IS/IX class).
        let granted = target == cur
            || self
                .acquire(txn, tid, Some(cur), target, true)
                .expect("a no-wait acquire never waits, so it cannot fail")
                .is_some();
        if !granted {
            self.c.escalation_failures.fetch_add(1, Ordering::Relaxed);
            let e = txn
                .tables
                .get_mut(&table)
                .expect("escalation: table counted");
            e.retry_at = e.fine.saturating_add(threshold);
            return;
        }
        self.c.escalations.fetch_add(1, Ordering::Relaxed);
        txn.counts.escalations += 1;
        // Drop the finer locks the table lock now implies.
        let mut drop_list = std::mem::take(&mut txn.scratch);
        drop_list.extend(txn.held.iter().filter_map(|(&l, &m)| {
            (l != tid && l.table() == Some(table) && target.implies_below(m)).then_some((l, m))
        }));
        let mut fine_dropped = 0;
        for &(l, _) in &drop_list {
            if l.is_fine() {
                fine_dropped += 1;
            }
            self.release_one(txn, l);
        }
        drop_list.clear();
        txn.scratch = drop_list;
        let e = txn
            .tables
            .get_mut(&table)
            .expect("escalation: table counted");
        e.fine -= fine_dropped;
        e.retry_at = e.fine.saturating_add(threshold);
        // The table lock now covers every lock dropped; what stays was not implied.
        debug_assert!(txn.held(tid).is_some_and(|m| m == target));
        debug_assert!(!txn
            .held
            .iter()
            .any(|(&l, &m)| { l != tid && l.table() == Some(table) && target.implies_below(m) }));
    }
}

/// Locks that may be kept across transactions: tables and the database (their intention
/// locks are the hot ones every transaction takes; finer locks are rarely reused).
#[inline]
fn inheritable(id: LockId) -> bool {
    matches!(id, LockId::Table(_) | LockId::Database)
}
