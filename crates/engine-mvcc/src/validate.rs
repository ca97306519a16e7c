//! `validate`: commit and abort. A writer marks its versions committing, takes its
//! commit timestamp from the global clock (in that order, so no reader can hold a read
//! timestamp at or above it and miss these versions: it finds them committing and
//! waits), then checks that every version it read is still the newest committed one as
//! of its commit timestamp and that no index leaf or bucket it depended on changed
//! (phantoms), and stamps its versions with the timestamp. A read-only transaction read
//! one consistent snapshot and commits without any check. Abort takes the transaction's
//! versions off their chains (and its new objects out of the indexes).
//!
//! This module must never stamp a version before validation succeeded, and never wait
//! for a transaction that is not committing (so waits cannot form a cycle: a committer
//! waits only for committers with a smaller timestamp).

use crate::version::{
    committing_ts, is_committed, owner, retire, Obj, ABORTED, COMMITTING, MAX_TS, PENDING, TS_SHIFT,
};
use crate::xct::{unindex, GcEntry, MvccWorker};
use crate::{AbortReason, WorkerStats, IDLE};
use api::{Error, Result};
use std::sync::atomic::{fence, Ordering::*};

impl MvccWorker<'_> {
    /// Every version read is still the newest committed one as of commit timestamp `ts`
    /// (versions above it are this transaction's own, aborted, or committed later).
    fn validate_reads(&self, ts: u64) -> bool {
        // The snapshot was read below the commit timestamp, while pinned.
        debug_assert!(
            self.rts < ts && self.guard.is_some(),
            "validating at {ts}, read at {}",
            self.rts
        );
        self.reads.iter().all(|r| {
            // SAFETY: the transaction is still pinned; objects are retired via the epoch.
            let o: &Obj = unsafe { &*r.obj };
            let mut v = o.head.load(Acquire);
            loop {
                if v == r.seen {
                    return true;
                }
                if v.is_null() {
                    return false;
                }
                // SAFETY: reached while pinned.
                let ver = unsafe { &*v };
                let b = ver.begin.load(Acquire);
                let skip = if b == ABORTED {
                    true
                } else if is_committed(b) {
                    if b < ts {
                        return false;
                    }
                    true
                } else if owner(b) == self.me || b & COMMITTING == 0 {
                    // Own, or another's not yet committing (its timestamp will be larger).
                    true
                } else {
                    let cts = committing_ts(b);
                    if cts != 0 && cts > ts {
                        true
                    } else {
                        // Committing below this timestamp (or not stamped yet): wait for
                        // its outcome, then look at the same version again.
                        rt::wait_until(rt::WaitKind::Other, None, || ver.begin.load(Acquire) != b);
                        false
                    }
                };
                if skip {
                    v = ver.next.load(Acquire);
                }
            }
        })
    }

    fn validate_nodes(&self) -> bool {
        // SAFETY: version words of B+tree nodes (never freed while the tree is shared)
        // and hash buckets (never freed).
        unsafe { self.nodes.unchanged() }
    }

    /// Clear per-transaction state, leave the active set and unpin.
    fn finish(&mut self) {
        self.reads.clear();
        self.nodes.clear();
        self.writes.clear();
        self.abort_reason = None;
        self.e.active[self.id].store(IDLE, Release);
        self.guard = None;
    }

    pub(crate) fn commit_txn(&mut self) -> Result<()> {
        assert!(self.guard.is_some(), "commit outside a transaction");
        let st = self.stats();
        if self.writes.is_empty() {
            // A snapshot read: consistent as of its read timestamp, nothing to check.
            WorkerStats::add(&st.read_only_commits, 1);
            WorkerStats::add(&st.commits, 1);
            self.finish();
            return Ok(());
        }
        let e = self.e;
        // Once the log cannot be written nothing more can become durable: refuse
        // (an `Async` commit would otherwise be acknowledged and then lost).
        if let Some(l) = e.logger.as_ref().filter(|l| l.has_failed()) {
            return Err(Error::Fatal(l.error().unwrap_or_default()));
        }
        let committing = PENDING | COMMITTING | self.me;
        for w in &self.writes {
            // SAFETY: this transaction's own versions, pinned.
            let (o, v) = unsafe { (&*w.obj, &*w.ver) };
            // First writer wins: each version written is still its object's head,
            // pending and this transaction's (no other writer can replace it).
            debug_assert_eq!(
                v.begin.load(Relaxed),
                PENDING | self.me,
                "a version not pending and own"
            );
            debug_assert_eq!(
                o.head.load(Relaxed),
                w.ver,
                "a version written is not its chain's head"
            );
            v.begin.store(committing, SeqCst);
        }
        // Announced to the flusher before the timestamp is taken: it states no durable
        // timestamp at or above this commit's until the records below are appended (or
        // validation failed). Dropped on every return.
        let flight = e.logger.as_ref().map(|l| l.commit_start(self.id));
        let ts = e.clock.fetch_add(1, SeqCst) + 1;
        // The clock only grows, and this transaction's snapshot was read from it before.
        assert!(
            ts > self.rts,
            "commit timestamp {ts} not above the read timestamp {}",
            self.rts
        );
        if let Some(f) = &flight {
            f.set(ts);
        }
        if ts >= MAX_TS {
            return Err(Error::fatal("the mvcc engine's timestamps are used up"));
        }
        let stamped = committing | ts << TS_SHIFT;
        debug_assert_eq!(committing_ts(stamped), ts, "the timestamp fits its field");
        for w in &self.writes {
            // SAFETY: as above.
            unsafe { (*w.ver).begin.store(stamped, SeqCst) };
        }
        fence(SeqCst);
        let why = if !self.validate_reads(ts) {
            Some((
                AbortReason::ReadValidation,
                "read set changed before commit",
            ))
        } else if !self.validate_nodes() {
            Some((AbortReason::NodeValidation, "index node changed (phantom)"))
        } else {
            None
        };
        if let Some((r, msg)) = why {
            // The caller (`Session::commit`) aborts, which takes the versions off.
            return Err(self.conflict(r, msg));
        }
        for w in &self.writes {
            // SAFETY: as above; from here on the version is immutable.
            let v = unsafe { &*w.ver };
            // Still ours and committing: nobody else stamps or aborts another's version.
            debug_assert_eq!(
                v.begin.load(Relaxed),
                stamped,
                "a version changed while committing"
            );
            v.begin.store(ts, Release);
            self.gcq.push_back(GcEntry {
                obj: w.obj,
                table: w.table,
                ts,
            });
        }
        // The log records; then the commit is no longer in flight.
        let full = self.append_log(ts);
        drop(flight);
        WorkerStats::add(&st.commits, 1);
        self.finish();
        self.commits_since_gc += 1;
        if self.commits_since_gc >= crate::gc::GC_EVERY {
            self.collect();
        }
        // A full buffer: the log is behind; wait until the flusher took it, with no
        // commit in flight and nothing held (the flusher waits for commits in flight).
        if let (Some(seen), Some(l)) = (full, &e.logger) {
            l.wait_drained(self.id, seen).map_err(api::Error::Fatal)?;
        }
        // `Sync`: acknowledged only once a block stating a durable timestamp at or
        // above this one is fsync'd (other commits' records share the block: group
        // commit).
        if e.log_mode == api::LogMode::Sync {
            if let Some(l) = &e.logger {
                l.wait_durable(ts).map_err(api::Error::Fatal)?;
            }
        }
        Ok(())
    }

    /// The commit's log records (timestamp `ts`), all under one short hold of this
    /// worker's buffer lock (the flusher drains whole transactions). With the buffer
    /// full, the drain count to wait past once the commit is over (`Logger::full`).
    fn append_log(&self, ts: u64) -> Option<u64> {
        let l = self.e.logger.as_ref()?;
        rt::point(rt::Point::Ctx(rt::Component::LogInsert));
        let mut b = l.buffer(self.id);
        for w in &self.writes {
            // SAFETY: this transaction's versions and objects, stamped, still pinned.
            let (o, v) = unsafe { (&*w.obj, &*w.ver) };
            let row = (!v.tomb.load(Relaxed)).then(|| v.row());
            crate::log::append(&mut b, ts, w.table, o.key(), row);
        }
        debug_assert!(
            b.len() >= self.writes.len() * crate::log::RECORD_HEADER_BYTES,
            "a write without its log record"
        );
        l.full(self.id, &b)
    }

    pub(crate) fn abort_txn(&mut self) {
        let Some(g) = self.guard.as_ref() else {
            return;
        };
        let e = self.e;
        // Newest first: a version this transaction wrote is always its object's head.
        for w in self.writes.iter().rev() {
            // SAFETY: this transaction's own version and object, pinned.
            let (o, v) = unsafe { (&*w.obj, &*w.ver) };
            // Never stamped: a commit that stamped its versions returned `Ok`.
            debug_assert!(
                !is_committed(v.begin.load(Relaxed)),
                "aborting a committed version"
            );
            let next = v.next.load(Acquire);
            let took = o.head.compare_exchange(w.ver, next, AcqRel, Acquire);
            assert!(
                took.is_ok(),
                "mvcc: another writer replaced an uncommitted version"
            );
            // Readers that already hold it (waiting while it was committing) skip it.
            v.begin.store(ABORTED, SeqCst);
            if w.created {
                let t = &e.catalog.tables[w.table as usize];
                unindex(t, o.key(), v.row(), w.obj, false, g, |_| {});
            }
            retire(w.ver, g);
            Obj::release(w.obj, g);
        }
        let r = self.abort_reason.unwrap_or(AbortReason::User);
        WorkerStats::add(&self.stats().aborts[r as usize], 1);
        self.finish();
        // A conflict may be with a deleted key only collection removes (an insert over
        // it): collect now, so a retry can succeed even if no commit follows.
        if r == AbortReason::WriteConflict && !self.gcq.is_empty() {
            self.collect();
        }
    }
}
