//! `occ`: Silo's commit protocol and abort. Commit: lock the write set (in the order
//! written while no lock is held by another, else in address order; checking that each
//! record updated or deleted still has the TID it was read at), read the global epoch,
//! validate the read set (TID unchanged, not locked by another, not unlinked) and the
//! node set (index versions unchanged), pick a TID above every TID read or written and
//! the worker's last one, in the current epoch, install the writes and release the
//! locks. Read-only transactions only validate (no lock, no shared write).
//!
//! This module must never install a write before validation succeeded, and never leave
//! a record locked when it returns.

use crate::log;
use crate::record::{epoch_of, ABSENT, EPOCH_SHIFT, FLAGS, LOCK, SEQ_ONE, UNLINKED};
use crate::xct::{find_write, retire, still_as_read, unlink, MemoryWorker, WKind};
use crate::{AbortReason, WorkerStats};
use api::{Error, LogMode, Result};
use std::sync::atomic::{fence, Ordering::*};

/// How `lock_in_turn` ended.
enum Locking {
    Done,
    /// A record was held by another (nothing left locked).
    Busy,
    /// A record read had changed since (nothing left locked).
    Stale,
}

impl MemoryWorker<'_> {
    pub(crate) fn validate_reads(&self) -> bool {
        // The records read are reachable only while pinned (freed through the epoch).
        debug_assert!(
            self.guard.is_some(),
            "validating reads outside a transaction"
        );
        self.reads.iter().all(|r| {
            let cur = r.rec.tid().load(Acquire);
            if !still_as_read(cur & !LOCK, r.tid) {
                return false;
            }
            // Locked: fine only if we hold the lock (the record is in our write set).
            cur & LOCK == 0 || self.holds_lock(r.rec)
        })
    }

    /// Is `rec` in the write set (locked by this commit)? The write set is in address
    /// order if commit had to sort it, else in the order written, with `wmap` current.
    #[cold]
    fn holds_lock(&self, rec: crate::record::Rec) -> bool {
        if self.writes_sorted {
            self.writes.binary_search_by_key(&rec, |w| w.rec).is_ok()
        } else {
            find_write(&self.writes, &self.wmap, rec).is_some()
        }
    }

    /// Commit's first phase: lock every record written, checking that each one written
    /// after it was read still has the TID it was read at. Locks are taken in the order
    /// written, each only if free; if one is held by another transaction, those taken
    /// are released and all are taken again in address order, waiting where held (the
    /// one global order keeps waiting committers free of deadlock, and a committer that
    /// never waits cannot be part of one). `Err` (nothing left locked): a stale record.
    fn lock_writes(&mut self) -> std::result::Result<(), ()> {
        assert!(!self.writes.is_empty(), "a read-only commit takes no locks");
        debug_assert!(!self.writes_sorted, "the write set is sorted only here");
        match self.lock_in_turn::<false>() {
            Locking::Done => Ok(()),
            Locking::Stale => Err(()),
            Locking::Busy => {
                self.writes.sort_unstable_by_key(|w| w.rec);
                self.writes_sorted = true;
                // One entry per record: a record twice in the write set would wait for
                // its own lock.
                debug_assert!(
                    self.writes.windows(2).all(|p| p[0].rec < p[1].rec),
                    "a record twice in the write set"
                );
                match self.lock_in_turn::<true>() {
                    Locking::Done => Ok(()),
                    _ => Err(()),
                }
            }
        }
    }

    /// Lock the write set's records in its order: waiting where held (`WAIT`), or
    /// stopping at the first one held. Each entry's `locked_tid` becomes the TID found,
    /// checked first against the one it was read at (for a record read, so equal to it
    /// when the check passes). Unless all are locked, those taken are released.
    fn lock_in_turn<const WAIT: bool>(&mut self) -> Locking {
        // Waiting is deadlock-free only in the one global (address) order.
        assert!(
            !WAIT || self.writes_sorted,
            "waiting for locks out of address order"
        );
        let mut locked = 0;
        let mut end = Locking::Done;
        for w in self.writes.iter_mut() {
            rt::point(rt::Point::Ctx(rt::Component::LockAcquire));
            let t = if WAIT {
                w.rec.lock()
            } else {
                let Some(t) = w.rec.try_lock() else {
                    end = Locking::Busy;
                    break;
                };
                t
            };
            locked += 1;
            let read = std::mem::replace(&mut w.locked_tid, t);
            if w.kind.was_read() && !still_as_read(t, read) {
                end = Locking::Stale;
                break;
            }
        }
        if !matches!(end, Locking::Done) {
            for w in &self.writes[..locked] {
                w.rec.unlock_with(w.locked_tid);
            }
        } else {
            debug_assert_eq!(locked, self.writes.len(), "all locked when done");
        }
        end
    }

    pub(crate) fn validate_nodes(&self) -> bool {
        // SAFETY: version words belong to index nodes/buckets, which outlive the engine's
        // workers (B+tree nodes are never freed while shared; hash buckets never).
        unsafe { self.nodes.unchanged() }
    }

    /// Clear per-transaction state and unpin.
    fn finish(&mut self) {
        self.read_committed = false;
        self.writes_sorted = false;
        self.reads.clear();
        self.nodes.clear();
        self.writes.clear();
        self.wmap.clear();
        self.arena.clear();
        self.abort_reason = None;
        self.guard = None;
    }

    /// Commit by Silo's protocol, one phase per function: lock the write set, read the
    /// epoch (the serialization point), validate, pick the TID, install and unlock, hand
    /// the log records over, wait as the log mode says.
    pub(crate) fn commit_txn(&mut self) -> Result<()> {
        assert!(self.guard.is_some(), "commit outside a transaction");
        let n = self.writes.len();
        self.writes.retain(|w| w.kind != WKind::Dead);
        if self.writes.len() != n {
            // Indexes moved: `wmap` (used by `holds_lock`) must name the entries anew.
            self.rebuild_wmap();
        }
        if self.writes.is_empty() {
            return self.commit_read_only();
        }
        let e = self.e;
        // Once the log cannot be written nothing more can become durable: refuse
        // (an `Async` commit would otherwise be acknowledged and then lost).
        if let Some(l) = e.logger.as_ref().filter(|l| l.has_failed()) {
            return Err(Error::Fatal(l.error().unwrap_or_default()));
        }

        // Phase 1: lock the write set (`lock_writes`). A record written after it was
        // read (update, delete) is validated as it is locked: its read left no read-set
        // entry (`xct`), and once locked its TID cannot change, so checking it now is
        // checking it at the serialization point. A stale one stops the locking there.
        if self.lock_writes().is_err() {
            self.abort_reason = Some(AbortReason::ReadValidation);
            return Err(Error::Conflict("read set changed"));
        }
        debug_assert!(
            self.writes
                .iter()
                .all(|w| w.rec.tid().load(Relaxed) & LOCK != 0),
            "every record written is locked before the epoch is read"
        );
        // `--stats`: Silo's only locks, one per record written, taken at commit.
        txnstats::add(txnstats::Counter::RowLocks, self.writes.len() as u64);
        // Announced to the logger before the epoch read (after the record locks, which
        // may wait): the logger does not flush past this commit's epoch until its
        // records are appended (`log::Logger::commit_start`). No lock is held for it.
        let flight = e.logger.as_ref().map(|l| l.commit_start(self.id));
        let delete_floor = self.delete_floor();
        // The serialization point: the epoch read after every lock is held.
        fence(SeqCst);
        let epoch = e.epochs.current();
        if let Some(f) = &flight {
            f.set(epoch);
        }

        // Phase 2: validate (every record written still locked by this commit).
        debug_assert!(epoch >= epoch_of(self.last_tid), "the epoch went back");
        if let Err(err) = self.validate() {
            for w in &self.writes {
                w.rec.unlock_with(w.locked_tid);
            }
            drop(flight);
            return Err(err);
        }

        // Phase 3: the TID. Phase 4: install, unlock, stage the log records.
        let tid = self.commit_tid(delete_floor, epoch);
        self.install(tid);
        // With a log, every write staged a record (at least its header).
        debug_assert!(
            e.logger.is_none()
                || self.log_stage.len() >= self.writes.len() * log::RECORD_HEADER_BYTES,
            "a write without its log record"
        );

        // The records go to the log buffer under one short hold of its lock (the logger
        // drains whole transactions); then the commit is no longer in flight. Plain
        // stores: streaming ones (and the `sfence` they need before the unlock) stalled
        // the stores after them (`docs/design/memory-engine.md`).
        let mut full = None;
        if let Some(l) = &e.logger {
            rt::point(rt::Point::Ctx(rt::Component::LogInsert));
            let mut b = l.buffer(self.id);
            b.extend_from_slice(&self.log_stage);
            full = l.full(self.id, &b);
        }
        drop(flight);
        self.last_tid = tid;
        WorkerStats::bump(&self.stats().commits);
        self.finish();
        // A full buffer: the log is behind; wait for it, with nothing held.
        if let (Some(seen), Some(l)) = (full, &e.logger) {
            l.wait_drained(self.id, seen).map_err(Error::Fatal)?;
        }
        if e.log_mode == LogMode::Sync {
            if let Some(l) = &e.logger {
                l.wait_durable(epoch).map_err(Error::Fatal)?;
            }
        }
        Ok(())
    }

    /// A transaction that wrote nothing only validates: no lock, no shared write.
    fn commit_read_only(&mut self) -> Result<()> {
        debug_assert!(self.writes.is_empty());
        debug_assert!(self.guard.is_some(), "commit outside a transaction");
        fence(Acquire);
        self.validate()?;
        let st = self.stats();
        WorkerStats::bump(&st.read_only_commits);
        WorkerStats::bump(&st.commits);
        self.finish();
        Ok(())
    }

    /// The read set and then the node set unchanged since read; else the conflict, with
    /// its reason kept for the statistics.
    #[inline]
    fn validate(&mut self) -> Result<()> {
        let why = if !self.validate_reads() {
            Some((AbortReason::ReadValidation, "read set changed"))
        } else if !self.validate_nodes() {
            Some((AbortReason::NodeValidation, "index node changed (phantom)"))
        } else {
            None
        };
        match why {
            None => Ok(()),
            Some((r, msg)) => {
                self.abort_reason = Some(r);
                Err(Error::Conflict(msg))
            }
        }
    }

    /// Inserts commit above any delete that unlinked an earlier record of their key
    /// (see `TableData::deleted_tid`). Read before the epoch: a delete seen here read
    /// its epoch earlier, so its TID's epoch is never above the one read after.
    #[inline]
    fn delete_floor(&self) -> u64 {
        let tables = &self.e.catalog.tables;
        self.writes
            .iter()
            .filter(|w| w.kind.is_insert())
            .map(|w| tables[w.table as usize].deleted_tid.load(SeqCst))
            .max()
            .unwrap_or(0)
    }

    /// A TID above everything this transaction saw (and the worker's last), in `epoch`.
    #[inline]
    fn commit_tid(&self, delete_floor: u64, epoch: u64) -> u64 {
        let mut max = self.last_tid.max(delete_floor);
        for r in &self.reads {
            max = max.max(r.tid & !FLAGS);
        }
        for w in &self.writes {
            max = max.max(w.locked_tid & !FLAGS);
        }
        let mut tid = max + SEQ_ONE;
        if epoch_of(tid) < epoch {
            tid = (epoch << EPOCH_SHIFT) + SEQ_ONE;
        }
        assert_eq!(
            epoch_of(tid),
            epoch,
            "TID epoch must be the commit epoch (a record carries a future epoch?)"
        );
        assert!(tid > self.last_tid, "a worker's TIDs grow");
        assert_eq!(tid & FLAGS, 0, "a TID carries no flag");
        tid
    }

    /// Install every write under `tid` and unlock it; with a log, write each write's
    /// record to this worker's staging buffer (it stays in cache): an update's record
    /// holds only the bytes it changed (`log::append_update` installs the row as it
    /// compares). Validation has passed: nothing here may fail.
    fn install(&mut self, tid: u64) {
        assert_eq!(tid & FLAGS, 0, "installing a TID with flag bits");
        debug_assert!(
            self.writes
                .iter()
                .all(|w| w.rec.tid().load(Relaxed) & LOCK != 0 && w.kind != WKind::Dead),
            "install: every write live and locked by this commit"
        );
        let e = self.e;
        let st = self.stats();
        let g = self.guard.as_ref().expect("pinned during commit");
        let logging = e.logger.is_some();
        let stage = &mut self.log_stage;
        stage.clear();
        for w in &self.writes {
            let t = &e.catalog.tables[w.table as usize];
            let key = &self.arena[w.key_off as usize..w.key_off as usize + w.key_len as usize];
            let row = &self.arena[w.data_off as usize..w.data_off as usize + t.row_size];
            match w.kind {
                WKind::Insert | WKind::InsertChanged | WKind::Update => {
                    // An update of a present version is logged as its changes; anything
                    // else (an insert, a row taking the place of a deleted one) whole.
                    let words = [w.words[0] as usize, w.words[1] as usize];
                    if logging && w.kind == WKind::Update && w.locked_tid & ABSENT == 0 {
                        let prev = w.locked_tid & !FLAGS;
                        log::append_update(
                            stage,
                            tid,
                            w.table as u32,
                            key,
                            prev,
                            w.rec,
                            row,
                            words,
                        );
                    } else if words != [0, t.words] {
                        // Part of a row (`update_part`): validation passed, so the record
                        // is still the present version those words were read from.
                        debug_assert!(w.kind == WKind::Update && w.locked_tid & ABSENT == 0);
                        w.rec.store_words(row, words[0], words[1]);
                    } else {
                        // A new record holds its row since the insert, unless changed.
                        if w.kind != WKind::Insert {
                            w.rec.store_row(row);
                        }
                        if logging {
                            log::append_put(stage, tid, w.table as u32, key, row);
                        }
                    }
                    w.rec.unlock_with(tid);
                    if w.kind.is_insert() {
                        WorkerStats::bump(&st.records_inserted);
                    }
                }
                WKind::Delete => {
                    if logging {
                        log::append_delete(stage, tid, w.table as u32, key);
                    }
                    // Absent (and still locked) before leaving the indexes; unlinked after.
                    w.rec.tid().store(tid | ABSENT | LOCK, Release);
                    t.deleted_tid.fetch_max(tid, SeqCst);
                    // The lookup that found the row left its leaf as the hint.
                    let hints = &mut self.look_hints[w.table as usize];
                    unlink(t, key, row, w.rec, Some(hints), g, |_| {});
                    w.rec.unlock_with(tid | ABSENT | UNLINKED);
                    retire(w.rec, t, g);
                    WorkerStats::bump(&st.records_deleted);
                }
                WKind::Dead => unreachable!("dead writes were dropped"),
            }
        }
    }

    pub(crate) fn abort_txn(&mut self) {
        let Some(g) = self.guard.as_ref() else {
            return;
        };
        let e = self.e;
        for w in &self.writes {
            if !w.kind.is_insert() {
                continue;
            }
            let t = &e.catalog.tables[w.table as usize];
            let key = &self.arena[w.key_off as usize..w.key_off as usize + w.key_len as usize];
            let row = &self.arena[w.data_off as usize..w.data_off as usize + t.row_size];
            unlink(t, key, row, w.rec, None, g, |_| {});
            // Readers that saw the absent record must re-read the index.
            w.rec.tid().store(ABSENT | UNLINKED, Release);
            retire(w.rec, t, g);
        }
        let r = self.abort_reason.unwrap_or(AbortReason::User);
        WorkerStats::bump(&self.stats().aborts[r as usize]);
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use crate::record::{Rec, LOCK};
    use crate::MemoryEngine;
    use api::{Engine, EngineOptions, IndexKind, Schema, Session, TableDef};
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// A commit that finds one of its records locked by another releases what it took,
    /// locks all again in address order, waits, and commits once the record is free:
    /// every row written, every record unlocked. Its write set is written in descending
    /// key order and holds a record it also read (the read set's "locked by me?" check),
    /// and more than `LINEAR_WRITES` entries (the write map). Uncontended commits of the
    /// same shape, with and without an insert deleted again (an entry dropped, the map
    /// rebuilt), and of only a few writes (no map) commit without sorting.
    #[test]
    fn a_contended_commit_locks_again_in_address_order() {
        let mut s = Schema::new();
        let t = s.add(TableDef::new("t", 8, IndexKind::Hash, 64));
        let opts = EngineOptions {
            threads: 2,
            ..EngineOptions::default()
        };
        let e = MemoryEngine::open(Arc::new(s), &opts).unwrap();
        let n = 20u8;
        let mut s0 = Session::new(e.worker(0));
        s0.run(0, |s| {
            for k in 0..n {
                s.insert(t, &[k], &[0; 8])?;
            }
            Ok(())
        })
        .unwrap();
        // Uncontended: read key 5, then write keys in descending order.
        for (round, writes, churn) in [(1u8, n, false), (2, n, true), (3, 4, false)] {
            s0.run(0, |s| {
                assert!(s.get(t, &[5], |_| {})?);
                if churn {
                    s.insert(t, &[200], &[9; 8])?;
                    assert!(s.delete(t, &[200])?);
                }
                for k in (0..writes).rev() {
                    assert!(s.update(t, &[k], |r| r[0] = round)?);
                }
                Ok(())
            })
            .unwrap();
        }
        let rec_of = |k: u8| {
            let g = crossbeam_epoch::pin();
            let v = e.catalog.tables[t.0 as usize].primary.get(&[k], &g).0;
            // SAFETY: an indexed record read while pinned (freed only through the epoch).
            unsafe { Rec::from_u64(v.expect("loaded key")) }
        };
        let held = rec_of(7);
        let (ready_tx, ready_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::scope(|sc| {
            let e = &e;
            sc.spawn(move || {
                let mut s1 = Session::new(e.worker(1));
                s1.begin(0).unwrap();
                assert!(s1.get(t, &[5], |_| {}).unwrap());
                for k in (0..n).rev() {
                    assert!(s1.update(t, &[k], |r| r[0] = 9).unwrap());
                }
                ready_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                done_tx.send(s1.commit()).unwrap();
            });
            ready_rx.recv().unwrap();
            let t7 = held.try_lock().expect("no one holds key 7 yet");
            go_tx.send(()).unwrap();
            assert!(
                done_rx.recv_timeout(Duration::from_millis(200)).is_err(),
                "the commit must wait for key 7"
            );
            held.unlock_with(t7);
            done_rx
                .recv_timeout(Duration::from_secs(20))
                .expect("the commit goes on once key 7 is free")
                .expect("and commits");
        });
        for k in 0..n {
            assert_eq!(
                rec_of(k).tid().load(Relaxed) & LOCK,
                0,
                "key {k} left locked"
            );
        }
        s0.run(0, |s| {
            for k in 0..n {
                assert!(s.get(t, &[k], |r| assert_eq!(r[0], 9, "key {k}"))?);
            }
            Ok(())
        })
        .unwrap();
        drop(s0);
        e.shutdown().unwrap();
    }
}
