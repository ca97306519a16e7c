//! Deadlock detection: a registry of which lock each waiting transaction waits for, and a
//! waits-for cycle search run (serialized, under the registry latch) by every transaction
//! that is about to wait. The edges are read live from the lock heads.
//!
//! Policy: the requester whose wait would close a cycle is the victim; it withdraws its
//! request while still holding the registry latch, so a cycle yields exactly one victim.
//! This module must never wait for a lock itself; latch order is registry, then partition.

use super::id::LockId;
use super::table::{latch, wake_all, LockTable, Waiter};
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

/// What the check decided for the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// No cycle: wait.
    Wait,
    /// A cycle through the requester: its request was withdrawn.
    Victim,
    /// The request was granted meanwhile (no cycle after all).
    Granted,
}

#[derive(Default)]
pub(super) struct Detector {
    waits: Mutex<FxHashMap<u64, LockId>>,
}

impl Detector {
    /// Register `txn` as waiting for `id` and search for a cycle through it. Because
    /// registrations and searches are serialized, the last transaction to join a cycle
    /// always sees all of it (earlier members are registered and their requests queued).
    pub fn check(&self, txn: u64, id: LockId, table: &LockTable) -> Verdict {
        let (mut waits, _) = latch(&self.waits);
        waits.insert(txn, id);
        if !cycle_through(txn, &waits, table) {
            return Verdict::Wait;
        }
        waits.remove(&txn);
        let mut wake: Vec<Arc<Waiter>> = Vec::new();
        let granted = { table.latch(id).cancel(txn, id, &mut wake) };
        drop(waits);
        wake_all(&mut wake);
        if granted {
            Verdict::Granted
        } else {
            Verdict::Victim
        }
    }

    /// Withdraw `txn`'s waiting request on `id` (timeout), under the registry latch so a
    /// concurrent cycle search never sees it half gone. True if it was granted meanwhile.
    pub fn withdraw(&self, txn: u64, id: LockId, table: &LockTable) -> bool {
        let (mut waits, _) = latch(&self.waits);
        waits.remove(&txn);
        let mut wake: Vec<Arc<Waiter>> = Vec::new();
        let granted = table.latch(id).cancel(txn, id, &mut wake);
        drop(waits);
        wake_all(&mut wake);
        granted
    }

    /// Forget `txn` (it stopped waiting for good: committed, aborted or timed out).
    pub fn forget(&self, txn: u64) {
        latch(&self.waits).0.remove(&txn);
    }

    #[cfg(test)]
    pub fn registered(&self) -> usize {
        self.waits.lock().len()
    }
}

/// Depth-first search of the waits-for graph from `start`; true if it leads back.
fn cycle_through(start: u64, waits: &FxHashMap<u64, LockId>, table: &LockTable) -> bool {
    let mut stack = vec![start];
    let mut seen: FxHashSet<u64> = FxHashSet::default();
    let mut out = Vec::new();
    // Bounded: each registered transaction is expanded at most once.
    while let Some(u) = stack.pop() {
        let Some(&l) = waits.get(&u) else { continue };
        out.clear();
        table.latch(l).blockers(u, l, &mut out);
        for &v in &out {
            // A request never waits for its own transaction.
            debug_assert_ne!(v, u, "txn {u} blocks itself on {l:?}");
            if v == start {
                return true;
            }
            if seen.insert(v) {
                stack.push(v);
            }
        }
    }
    false
}
