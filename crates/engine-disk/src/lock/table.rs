//! The lock table: a fixed array of cache-line-sized partitions, each a short latch over a
//! few lock heads; a head holds the request queue of one resource (granted group first in
//! arrival order, then FIFO waiters; a granted request may carry a pending conversion).
//!
//! Owns the grant rules (who gets a lock, in which order). It must never block while a
//! partition latch is held, never allocate on the uncontended path (heads and queues are
//! reused in place, short queues are inline), and never wake a waiter while holding a latch.
//!
//! Speculative lock inheritance: a granted request may carry a `Slot` shared with its
//! owner, who parks it between transactions instead of releasing it (see `PARKED`). The
//! head keeps one invariant for it: while any request waits (or a conversion is pending),
//! no granted request with a slot is `IN_USE` or `PARKED`; they are all `WANTED`, so their
//! owners release them through the table at commit and a waiter is never stuck behind a
//! parked lock.

use super::id::LockId;
use super::mode::LockMode;
use parking_lot::{Mutex, MutexGuard};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// Waiter state: still waiting.
pub(super) const WAITING: u8 = 0;
/// Waiter state: the request (or conversion) was granted by another transaction.
pub(super) const GRANTED: u8 = 1;

/// Slot state: the owner's running transaction holds the lock.
pub(super) const IN_USE: u8 = 0;
/// Slot state: between the owner's transactions, kept in the table (inherited): the owner
/// may claim it back (`PARKED -> IN_USE`, no latch) or anyone may revoke it under the
/// partition latch (`PARKED -> REVOKED`, and the request leaves the queue).
pub(super) const PARKED: u8 = 1;
/// Slot state: revoked; the request is gone from the queue (the owner forgets the slot).
pub(super) const REVOKED: u8 = 2;
/// Slot state: in use while others wait on the head: the owner must release it at the end
/// of the transaction instead of parking it.
pub(super) const WANTED: u8 = 3;

/// The inheritance state shared by a kept lock's owner and its request in the table.
pub(super) type Slot = Arc<AtomicU8>;

/// Emptied heads a partition keeps in place for reuse (bounds memory of idle partitions).
pub(super) const IDLE_HEADS_MAX: usize = 4;
/// Idle heads every partition is built with (room for `IDLE_HEADS_MAX`): a partition
/// always holds at least this many, so a table's first use of a partition finds a head as
/// every later use does. A load leaves one head in nearly every partition (its
/// transactions hold about 25 key locks before escalating, against 4096 partitions); a
/// table that started empty after a reopen instead allocated a head on each partition's
/// first lock, which moved a traced run's figures (docs/design/disk-engine.md).
pub(super) const BUILT_HEADS: usize = 1;
const _: () = assert!(BUILT_HEADS <= IDLE_HEADS_MAX);
/// The resource a built, never used head is named by: any name serves (an idle head's
/// name is only a reuse hint: the last resource that used it), and a partition holding
/// `Database`'s live head is the only one where the hint can match.
const BUILT_ID: LockId = LockId::Database;
/// Queue capacity above which an emptied head's spilled queue is freed.
const QUEUE_KEEP_MAX: usize = 16;
/// Requests stored inline in a head (no allocation until more wait or share).
const QUEUE_INLINE: usize = 2;

/// One per transaction: what a granting thread sets and signals.
pub(super) struct Waiter {
    pub state: AtomicU8,
    pub event: rt::Event,
}

impl Waiter {
    pub fn new() -> Self {
        Waiter {
            state: AtomicU8::new(GRANTED),
            event: rt::Event::new(),
        }
    }
    pub fn granted(&self) -> bool {
        self.state.load(Ordering::Acquire) == GRANTED
    }
}

struct Request {
    txn: u64,
    /// Granted mode (or requested mode while not granted).
    mode: LockMode,
    /// Upgrade target waiting to be granted (only on a granted request).
    convert: Option<LockMode>,
    granted: bool,
    /// Set only while the request (or its conversion) waits.
    waiter: Option<Arc<Waiter>>,
    /// Inheritance state, for a lock its owner may keep across transactions.
    slot: Option<Slot>,
}

struct Head {
    id: LockId,
    queue: SmallVec<[Request; QUEUE_INLINE]>,
    /// Granted requests per mode, and a bit per mode with a nonzero count.
    counts: [u32; 5],
    mask: u8,
    /// Ungranted requests, and granted requests with a pending conversion.
    waiting: u32,
    converting: u32,
}

impl Head {
    fn empty(id: LockId) -> Head {
        Head {
            id,
            queue: SmallVec::new(),
            counts: [0; 5],
            mask: 0,
            waiting: 0,
            converting: 0,
        }
    }

    fn add_granted(&mut self, m: LockMode) {
        // Granted only where it is compatible with the others (conversions: with the
        // others but the converting holder, whose old mode is removed first).
        debug_assert!(
            m.compatible_with_mask(self.mask),
            "lock head: {} granted over {:#b}",
            m.name(),
            self.mask
        );
        self.counts[m.index()] += 1;
        self.mask |= m.bit();
    }

    fn remove_granted(&mut self, m: LockMode) {
        debug_assert!(
            self.mask & m.bit() != 0,
            "lock head: {} removed but not granted",
            m.name()
        );
        let c = &mut self.counts[m.index()];
        assert!(
            *c > 0,
            "lock head: granted count of {} underflows",
            m.name()
        );
        *c -= 1;
        if *c == 0 {
            self.mask &= !m.bit();
        }
    }

    /// Granted modes of everyone but one holder of `m`.
    fn mask_without(&self, m: LockMode) -> u8 {
        if self.counts[m.index()] == 1 {
            self.mask & !m.bit()
        } else {
            self.mask
        }
    }

    /// Bits of the pending conversion targets (they have priority over new waiters).
    fn convert_mask(&self) -> u8 {
        if self.converting == 0 {
            return 0;
        }
        self.queue
            .iter()
            .filter_map(|r| r.convert)
            .fold(0, |m, c| m | c.bit())
    }

    fn pos(&self, txn: u64) -> Option<usize> {
        self.queue.iter().position(|r| r.txn == txn)
    }

    /// Grant what can be granted: pending conversions first (upgrade priority), then
    /// waiters in FIFO order up to the first that cannot be granted.
    fn grant_waiters(&mut self, wake: &mut Vec<Arc<Waiter>>) {
        if self.converting > 0 {
            for i in 0..self.queue.len() {
                let (mode, conv) = (self.queue[i].mode, self.queue[i].convert);
                let Some(c) = conv else { continue };
                if c.compatible_with_mask(self.mask_without(mode)) {
                    self.remove_granted(mode);
                    self.add_granted(c);
                    self.converting -= 1;
                    let r = &mut self.queue[i];
                    r.mode = c;
                    r.convert = None;
                    grant(r, wake);
                }
            }
        }
        if self.waiting > 0 {
            let cmask = self.convert_mask();
            for i in 0..self.queue.len() {
                if self.queue[i].granted {
                    continue;
                }
                let m = self.queue[i].mode;
                if !(m.compatible_with_mask(self.mask) && m.compatible_with_mask(cmask)) {
                    break;
                }
                self.add_granted(m);
                self.waiting -= 1;
                let r = &mut self.queue[i];
                r.granted = true;
                grant(r, wake);
            }
        }
        // Waiters were there before this grant, so nothing can be parked (the invariant):
        // only newly granted slotted requests are marked wanted.
        let revoked = self.settle_if_waiters();
        debug_assert_eq!(revoked, 0, "lock head: a parked request beside a waiter");
    }

    /// Revoke the parked inherited requests of others that conflict with `target`
    /// (holders that would otherwise block it though no transaction uses them).
    fn revoke_conflicting(&mut self, txn: u64, target: LockMode) -> u64 {
        let mut n = 0;
        let mut i = 0;
        while i < self.queue.len() {
            let r = &self.queue[i];
            let revoke = r.granted
                && r.txn != txn
                && !target.compatible(r.mode)
                && r.slot.as_ref().is_some_and(|s| {
                    s.compare_exchange(PARKED, REVOKED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                });
            if revoke {
                let r = self.queue.remove(i);
                self.remove_granted(r.mode);
                n += 1;
            } else {
                i += 1;
            }
        }
        n
    }

    /// Keep the head's inheritance invariant when requests wait: every granted request
    /// with a slot becomes `WANTED` (its owner releases it at commit), and a parked one is
    /// revoked (removed) at once. Returns the number revoked.
    fn settle_if_waiters(&mut self) -> u64 {
        if self.waiting == 0 && self.converting == 0 {
            return 0;
        }
        let mut n = 0;
        let mut i = 0;
        while i < self.queue.len() {
            let revoke = match (&self.queue[i].slot, self.queue[i].granted) {
                (Some(s), true) => want(s),
                _ => false,
            };
            if revoke {
                let r = self.queue.remove(i);
                self.remove_granted(r.mode);
                n += 1;
            } else {
                i += 1;
            }
        }
        n
    }

    /// Queue invariants (debug builds only; compiled out in release).
    #[inline]
    fn check(&self) {
        debug_assert!(
            self.queue.windows(2).all(|w| w[0].granted || !w[1].granted),
            "lock head: granted requests must form a prefix of the queue (FIFO grants)"
        );
        debug_assert_eq!(
            self.queue.iter().filter(|r| !r.granted).count() as u32,
            self.waiting,
            "lock head: waiting count disagrees with the queue"
        );
        debug_assert_eq!(
            self.queue.iter().filter(|r| r.convert.is_some()).count() as u32,
            self.converting,
            "lock head: converting count disagrees with the queue"
        );
        debug_assert!(
            LockMode::ALL
                .iter()
                .all(|m| (self.mask & m.bit() != 0) == (self.counts[m.index()] > 0)),
            "lock head: the mask disagrees with the granted counts"
        );
        debug_assert_eq!(
            self.counts.iter().sum::<u32>() as usize,
            self.queue.iter().filter(|r| r.granted).count(),
            "lock head: granted counts disagree with the queue"
        );
        // The lock manager's one promise: the modes granted to different transactions
        // are compatible.
        debug_assert!(
            self.queue.iter().filter(|r| r.granted).all(|a| self
                .queue
                .iter()
                .filter(|b| b.granted && b.txn != a.txn)
                .all(|b| a.mode.compatible(b.mode))),
            "lock head {:?}: incompatible modes granted",
            self.id
        );
    }
}

/// Mark an inherited request wanted: `IN_USE -> WANTED`, or `PARKED -> REVOKED` (returns
/// true: the caller removes the request). Races with the owner's park and claim CASes.
fn want(s: &Slot) -> bool {
    let mut cur = s.load(Ordering::Acquire);
    loop {
        let next = match cur {
            IN_USE => WANTED,
            PARKED => REVOKED,
            _ => return false,
        };
        match s.compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return next == REVOKED,
            Err(now) => cur = now,
        }
    }
}

fn grant(r: &mut Request, wake: &mut Vec<Arc<Waiter>>) {
    debug_assert!(
        r.granted && r.convert.is_none(),
        "a waiter woken before its request is granted"
    );
    let w = r
        .waiter
        .take()
        .expect("lock head: a waiting request has no waiter");
    w.state.store(GRANTED, Ordering::Release);
    wake.push(w);
}

/// What an acquire did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Granted,
    /// Enqueued (or conversion marked pending): the caller must wait on its waiter.
    Wait,
    /// `nowait` and not grantable: nothing changed.
    WouldBlock,
}

/// The heads of one partition. At most one head per resource; a head with an empty queue
/// is idle and is reused in place (by any resource), so locking does not move heads. A
/// partition holds at least `BUILT_HEADS` heads (built with it, never removed).
pub(super) struct Bucket {
    heads: Vec<Head>,
    /// Inherited requests revoked in this partition (summed by `LockTable::revoked`).
    revoked: u64,
}

impl Bucket {
    /// `BUILT_HEADS` idle heads in room for `IDLE_HEADS_MAX`: the state a partition is in
    /// after any history that never held more than `BUILT_HEADS` heads there at once.
    fn new() -> Bucket {
        let mut heads = Vec::with_capacity(IDLE_HEADS_MAX);
        heads.resize_with(BUILT_HEADS, || Head::empty(BUILT_ID));
        Bucket { heads, revoked: 0 }
    }

    fn find(&self, id: LockId) -> Option<usize> {
        self.heads.iter().position(|h| h.id == id)
    }

    /// The head of `id`, or an idle head (or a new one) renamed to `id`.
    fn find_or_add(&mut self, id: LockId) -> usize {
        let mut idle = None;
        for (i, h) in self.heads.iter().enumerate() {
            if h.id == id {
                return i;
            }
            if idle.is_none() && h.queue.is_empty() {
                idle = Some(i);
            }
        }
        match idle {
            Some(i) => {
                self.heads[i].id = id;
                i
            }
            None => {
                self.heads.push(Head::empty(id));
                self.heads.len() - 1
            }
        }
    }

    fn head_mut(&mut self, id: LockId, what: &str) -> &mut Head {
        let i = self
            .find(id)
            .unwrap_or_else(|| panic!("lock table: {what} on {id:?} which has no lock head"));
        &mut self.heads[i]
    }

    /// Request `target` on `id` for `txn`, which holds `held` there already (an upgrade)
    /// or nothing. On `Wait`, `waiter` (already reset to WAITING) is in the queue. `slot`
    /// (new requests only, in state `IN_USE`) makes the request one its owner may keep
    /// across transactions. Parked inherited requests of others that conflict are revoked.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &mut self,
        txn: u64,
        id: LockId,
        held: Option<LockMode>,
        target: LockMode,
        waiter: &Arc<Waiter>,
        nowait: bool,
        slot: Option<&Slot>,
    ) -> Outcome {
        let (out, revoked) = self.acquire_in(txn, id, held, target, waiter, nowait, slot);
        self.revoked += revoked;
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn acquire_in(
        &mut self,
        txn: u64,
        id: LockId,
        held: Option<LockMode>,
        target: LockMode,
        waiter: &Arc<Waiter>,
        nowait: bool,
        slot: Option<&Slot>,
    ) -> (Outcome, u64) {
        let mut revoked = 0;
        match held {
            None => {
                let i = self.find_or_add(id);
                let h = &mut self.heads[i];
                debug_assert!(
                    h.pos(txn).is_none(),
                    "lock table: txn {txn} requests {id:?} twice"
                );
                if !target.compatible_with_mask(h.mask) {
                    revoked += h.revoke_conflicting(txn, target);
                }
                let free = h.waiting == 0
                    && target.compatible_with_mask(h.mask)
                    && target.compatible_with_mask(h.convert_mask());
                if free {
                    h.add_granted(target);
                    h.queue.push(Request {
                        txn,
                        mode: target,
                        convert: None,
                        granted: true,
                        waiter: None,
                        slot: slot.cloned(),
                    });
                    revoked += h.settle_if_waiters(); // a conversion may be pending
                    h.check();
                    return (Outcome::Granted, revoked);
                }
                if nowait {
                    if h.queue.is_empty() {
                        self.recycle(i); // emptied by revocations
                    }
                    return (Outcome::WouldBlock, revoked);
                }
                h.waiting += 1;
                h.queue.push(Request {
                    txn,
                    mode: target,
                    convert: None,
                    granted: false,
                    waiter: Some(waiter.clone()),
                    slot: slot.cloned(),
                });
                revoked += h.settle_if_waiters();
                h.check();
                (Outcome::Wait, revoked)
            }
            Some(cur) => {
                let h = self.head_mut(id, "upgrade");
                let p = h.pos(txn).unwrap_or_else(|| {
                    panic!("lock table: txn {txn} upgrades {id:?} it does not hold")
                });
                assert!(
                    h.queue[p].granted && h.queue[p].mode == cur && h.queue[p].convert.is_none(),
                    "lock table: txn {txn} upgrades {id:?} but its request is not granted in {}",
                    cur.name()
                );
                // Upgrade priority: only other holders can block a conversion.
                if !target.compatible_with_mask(h.mask_without(cur)) {
                    revoked += h.revoke_conflicting(txn, target);
                }
                let p = h
                    .pos(txn)
                    .expect("revocation removes other transactions only");
                if target.compatible_with_mask(h.mask_without(cur)) {
                    h.remove_granted(cur);
                    h.add_granted(target);
                    h.queue[p].mode = target;
                    revoked += h.settle_if_waiters();
                    h.check();
                    return (Outcome::Granted, revoked);
                }
                if nowait {
                    return (Outcome::WouldBlock, revoked);
                }
                h.converting += 1;
                h.queue[p].convert = Some(target);
                h.queue[p].waiter = Some(waiter.clone());
                revoked += h.settle_if_waiters();
                h.check();
                (Outcome::Wait, revoked)
            }
        }
    }

    /// Release `txn`'s granted lock on `id`, granting what that unblocks.
    pub fn release(&mut self, txn: u64, id: LockId, wake: &mut Vec<Arc<Waiter>>) {
        let i = self
            .find(id)
            .unwrap_or_else(|| panic!("lock table: release of {id:?} which has no lock head"));
        let h = &mut self.heads[i];
        let p = h
            .pos(txn)
            .unwrap_or_else(|| panic!("lock table: txn {txn} releases {id:?} it does not hold"));
        let r = h.queue.remove(p);
        assert!(
            r.granted && r.convert.is_none(),
            "lock table: txn {txn} releases {id:?} while its request still waits"
        );
        h.remove_granted(r.mode);
        if h.queue.is_empty() {
            self.recycle(i);
        } else {
            h.grant_waiters(wake);
            h.check();
        }
    }

    /// Withdraw `txn`'s waiting request (or pending conversion) on `id`. Returns true when
    /// it had been granted in the meantime (then nothing is withdrawn).
    pub fn cancel(&mut self, txn: u64, id: LockId, wake: &mut Vec<Arc<Waiter>>) -> bool {
        let i = self
            .find(id)
            .unwrap_or_else(|| panic!("lock table: cancel on {id:?} which has no lock head"));
        let h = &mut self.heads[i];
        let p = h
            .pos(txn)
            .unwrap_or_else(|| panic!("lock table: txn {txn} cancels {id:?} it never requested"));
        let r = &mut h.queue[p];
        if !r.granted {
            h.queue.remove(p);
            h.waiting -= 1;
        } else if r.convert.is_some() {
            r.convert = None;
            r.waiter = None;
            h.converting -= 1;
        } else {
            return true;
        }
        if h.queue.is_empty() {
            self.recycle(i);
        } else {
            h.grant_waiters(wake);
            h.check();
        }
        false
    }

    /// The owner gives up its parked inherited request on `id` (it stops running
    /// transactions). Returns false when it had been revoked already (then it is gone).
    pub fn release_parked(
        &mut self,
        txn: u64,
        id: LockId,
        slot: &Slot,
        wake: &mut Vec<Arc<Waiter>>,
    ) -> bool {
        if slot
            .compare_exchange(PARKED, REVOKED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            assert_eq!(
                slot.load(Ordering::Acquire),
                REVOKED,
                "lock table: txn {txn} gives up {id:?} which is not parked"
            );
            return false;
        }
        self.release(txn, id, wake);
        true
    }

    /// The transactions `txn`'s request on `id` waits for (empty when it does not wait).
    pub fn blockers(&self, txn: u64, id: LockId, out: &mut Vec<u64>) {
        let Some(i) = self.find(id) else { return };
        let h = &self.heads[i];
        let Some(p) = h.pos(txn) else { return };
        let me = &h.queue[p];
        if !me.granted {
            let m = me.mode;
            for (j, o) in h.queue.iter().enumerate() {
                let blocks = if o.granted {
                    !m.compatible(o.mode) || o.convert.is_some_and(|c| !m.compatible(c))
                } else {
                    j < p // FIFO: everyone ahead is granted first
                };
                if blocks && j != p {
                    out.push(o.txn);
                }
            }
        } else if let Some(c) = me.convert {
            for (j, o) in h.queue.iter().enumerate() {
                if j != p && o.granted && !c.compatible(o.mode) {
                    out.push(o.txn);
                }
            }
        }
    }

    /// Head `i` became empty: leave it idle in place, freeing a large spilled queue and
    /// trailing idle heads beyond `IDLE_HEADS_MAX`.
    fn recycle(&mut self, i: usize) {
        let h = &mut self.heads[i];
        debug_assert!(h.queue.is_empty() && h.mask == 0 && h.waiting == 0 && h.converting == 0);
        if h.queue.capacity() > QUEUE_KEEP_MAX {
            h.queue = SmallVec::new();
        }
        while self.heads.len() > IDLE_HEADS_MAX
            && self.heads.last().is_some_and(|h| h.queue.is_empty())
        {
            self.heads.pop();
        }
    }

    /// One line per live head: resource, then `txn:mode` for holders (`->target` for a
    /// pending conversion) and `txn?mode` for waiters.
    fn dump(&self, out: &mut String) {
        use std::fmt::Write;
        for h in self.heads.iter().filter(|h| !h.queue.is_empty()) {
            let _ = write!(out, "{:?}:", h.id);
            for r in &h.queue {
                let sep = if r.granted { ':' } else { '?' };
                let _ = write!(out, " {}{sep}{}", r.txn, r.mode.name());
                if let Some(c) = r.convert {
                    let _ = write!(out, "->{}", c.name());
                }
                if r.slot
                    .as_ref()
                    .is_some_and(|s| s.load(Ordering::Acquire) == PARKED)
                {
                    out.push_str("(kept)");
                }
            }
            out.push('\n');
        }
    }

    /// Heads with requests.
    fn live(&self) -> usize {
        self.heads.iter().filter(|h| !h.queue.is_empty()).count()
    }
}

/// One partition on its own cache line.
#[repr(align(64))]
struct Partition {
    latch: Mutex<Bucket>,
}

/// The partitioned hash table of lock heads.
pub(super) struct LockTable {
    parts: Box<[Partition]>,
    mask: u64,
    /// Partition latches found taken (physical contention), on every path.
    pub contended: AtomicU64,
    /// Time spent waiting for those latches, in nanoseconds.
    pub contended_ns: AtomicU64,
}

impl LockTable {
    pub fn new(partitions: usize) -> LockTable {
        assert!(
            partitions.is_power_of_two(),
            "lock table: partition count {partitions} must be a power of two"
        );
        let parts = (0..partitions)
            .map(|_| Partition {
                latch: Mutex::new(Bucket::new()),
            })
            .collect();
        LockTable {
            parts,
            mask: partitions as u64 - 1,
            contended: AtomicU64::new(0),
            contended_ns: AtomicU64::new(0),
        }
    }

    /// Latch the partition of `id`; a contended latch is counted and waited for
    /// through `rt` as a latch wait.
    #[inline]
    pub fn latch(&self, id: LockId) -> MutexGuard<'_, Bucket> {
        let m = &self.parts[(id.hash64() & self.mask) as usize].latch;
        if let Some(g) = m.try_lock() {
            return g;
        }
        let start = std::time::Instant::now();
        let (g, _) = latch(m);
        self.contended.fetch_add(1, Ordering::Relaxed);
        self.contended_ns
            .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        g
    }

    /// The whole table as text (for diagnosing a hang; latches one partition at a time).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for p in self.parts.iter() {
            p.latch.lock().dump(&mut out);
        }
        out
    }

    /// Inherited requests revoked so far (latches every partition in turn).
    pub fn revoked(&self) -> u64 {
        self.parts.iter().map(|p| p.latch.lock().revoked).sum()
    }

    /// Each partition's heads, idle ones included, and the room for them (tests: the
    /// table's shape, which its history should not change).
    #[cfg(test)]
    pub fn shape(&self) -> Vec<(usize, usize)> {
        self.parts
            .iter()
            .map(|p| {
                let b = p.latch.lock();
                (b.heads.len(), b.heads.capacity())
            })
            .collect()
    }

    /// Lock heads currently in the table (0 when no lock is held or requested).
    pub fn heads(&self) -> usize {
        self.parts.iter().map(|p| p.latch.lock().live()).sum()
    }
}

/// Take a short latch: one try, then wait through `rt` (counted as a latch wait).
#[inline]
pub(super) fn latch<T>(m: &Mutex<T>) -> (MutexGuard<'_, T>, bool) {
    if let Some(g) = m.try_lock() {
        return (g, false);
    }
    let mut got = None;
    rt::wait_until(rt::WaitKind::Latch, None, || {
        got = m.try_lock();
        got.is_some()
    });
    (
        got.expect("rt::wait_until without timeout returned before the latch was taken"),
        true,
    )
}

/// Wake the waiters a grant collected (after the latch is released).
#[inline]
pub(super) fn wake_all(wake: &mut Vec<Arc<Waiter>>) {
    if wake.is_empty() {
        return;
    }
    for w in wake.drain(..) {
        w.event.notify_all();
    }
}
