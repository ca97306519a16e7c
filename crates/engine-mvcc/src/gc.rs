//! `gc`: cooperative garbage collection. Each worker queues its committed writes (object
//! and commit timestamp, in timestamp order); every few commits it takes the smallest
//! read timestamp of the running transactions (or the clock, if none) and, for every
//! queued write at or below it, cuts the object's chain below the newest version
//! visible at that timestamp (nobody can reach older ones) and, when that version is a
//! deletion at the head, takes the key out of the indexes. Unlinked versions and
//! objects are freed through crossbeam-epoch (pinned readers may still hold them).
//!
//! This module must never unlink a version a running transaction can see.

use crate::version::{is_committed, retire_chain, Obj};
use crate::xct::{unindex, MvccWorker};
use crate::WorkerStats;
use std::sync::atomic::Ordering::*;

/// Commits between two collections by a worker.
pub const GC_EVERY: u32 = 16;

impl MvccWorker<'_> {
    /// The smallest read timestamp any transaction may hold: the clock is read before
    /// the slots, and a transaction publishes its slot before checking the clock again
    /// (see `begin`), so one whose slot this misses reads at least this clock value.
    fn min_active(&self) -> u64 {
        let mut m = self.e.clock.load(SeqCst);
        for s in self.e.active.iter() {
            m = m.min(s.load(SeqCst));
        }
        m
    }

    /// Collect what the queued writes left behind, as far as running transactions allow.
    pub(crate) fn collect(&mut self) {
        self.commits_since_gc = 0;
        let min = self.min_active();
        let g = self.epoch.pin();
        let st = self.stats();
        let (mut freed, mut removed) = (0, 0);
        while let Some(&w) = self.gcq.front() {
            if w.ts > min {
                break;
            }
            self.gcq.pop_front();
            // SAFETY: this entry holds a reference: the object is allocated.
            let o = unsafe { &*w.obj };
            // The newest version visible at `min`: uncommitted ones (and committing
            // ones, whose read timestamps are at least `min`) carry larger timestamps.
            let head = o.head.load(Acquire);
            let mut v = head;
            while !v.is_null() {
                // SAFETY: pinned.
                let b = unsafe { (*v).begin.load(Acquire) };
                if is_committed(b) && b <= min {
                    break;
                }
                v = unsafe { (*v).next.load(Acquire) };
            }
            if !v.is_null() {
                // SAFETY: pinned.
                let ver = unsafe { &*v };
                if v == head && ver.tomb.load(Relaxed) {
                    // Every transaction sees the key deleted: it leaves the indexes (an
                    // insert racing for the head makes this fail, and keeps the object).
                    if o.head
                        .compare_exchange(v, std::ptr::null_mut(), AcqRel, Acquire)
                        .is_ok()
                    {
                        let t = &self.e.catalog.tables[w.table as usize];
                        unindex(t, o.key(), ver.row(), w.obj, true, &g, |_| {});
                        freed += retire_chain(v, &g);
                        removed += 1;
                    }
                } else {
                    let older = ver.next.swap(std::ptr::null_mut(), AcqRel);
                    freed += retire_chain(older, &g);
                }
            }
            Obj::release(w.obj, &g);
        }
        WorkerStats::add(&st.versions_freed, freed);
        WorkerStats::add(&st.objects_removed, removed);
    }

    /// Let go of the queued writes (worker drop): collect what can be, and leave the
    /// rest (still linked) to the next collection of the object or the engine's drop.
    pub(crate) fn release_gc_queue(&mut self) {
        self.collect();
        let g = self.epoch.pin();
        for w in self.gcq.drain(..) {
            Obj::release(w.obj, &g);
        }
    }
}
