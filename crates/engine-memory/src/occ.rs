//! `occ`: Silo's commit protocol and abort. Commit: lock the write set in address order
//! (checking that each record updated or deleted still has the TID it was read at), read
//! the global epoch, validate the read set (TID unchanged, not locked by another,
//! not unlinked) and the node set (index versions unchanged), pick a TID above every TID
//! read or written and the worker's last one, in the current epoch, install the writes
//! and release the locks. Read-only transactions only validate (no lock, no shared write).
//!
//! This module must never install a write before validation succeeded, and never leave
//! a record locked when it returns.

use crate::log;
use crate::record::{epoch_of, ABSENT, EPOCH_SHIFT, FLAGS, LOCK, SEQ_ONE, UNLINKED};
use crate::xct::{retire, still_as_read, unlink, MemoryWorker, WKind};
use crate::{AbortReason, WorkerStats};
use api::{Error, LogMode, Result};
use std::sync::atomic::{fence, Ordering::*};

impl MemoryWorker<'_> {
    pub(crate) fn validate_reads(&self) -> bool {
        self.reads.iter().all(|r| {
            let cur = r.rec.tid().load(Acquire);
            if !still_as_read(cur & !LOCK, r.tid) {
                return false;
            }
            // Locked: fine only if we hold the lock (our write set is sorted by address).
            cur & LOCK == 0 || self.writes.binary_search_by_key(&r.rec, |w| w.rec).is_ok()
        })
    }

    pub(crate) fn validate_nodes(&self) -> bool {
        // SAFETY: version words belong to index nodes/buckets, which outlive the engine's
        // workers (B+tree nodes are never freed while shared; hash buckets never).
        self.nodes
            .iter()
            .all(|n| unsafe { (*n.ver).load(Acquire) } == n.v)
    }

    /// Clear per-transaction state and unpin.
    fn finish(&mut self) {
        self.read_committed = false;
        self.reads.clear();
        self.nodes.clear();
        self.writes.clear();
        self.wmap.clear();
        self.arena.clear();
        self.abort_reason = None;
        self.guard = None;
    }

    pub(crate) fn commit_txn(&mut self) -> Result<()> {
        assert!(self.guard.is_some(), "commit outside a transaction");
        let st = self.stats();
        self.writes.retain(|w| w.kind != WKind::Dead);
        if self.writes.is_empty() {
            fence(Acquire);
            let why = if !self.validate_reads() {
                Some((AbortReason::ReadValidation, "read set changed"))
            } else if !self.validate_nodes() {
                Some((AbortReason::NodeValidation, "index node changed (phantom)"))
            } else {
                None
            };
            if let Some((r, msg)) = why {
                self.abort_reason = Some(r);
                return Err(Error::Conflict(msg));
            }
            WorkerStats::bump(&st.read_only_commits);
            WorkerStats::bump(&st.commits);
            self.finish();
            return Ok(());
        }

        let e = self.e;
        // Once the log cannot be written nothing more can become durable: refuse
        // (an `Async` commit would otherwise be acknowledged and then lost).
        if let Some(l) = e.logger.as_ref().filter(|l| l.has_failed()) {
            return Err(Error::Fatal(l.error().unwrap_or_default()));
        }

        // Phase 1: lock the write set in a global order (record address). A record
        // written after it was read (update, delete) is validated as it is locked: its
        // read left no read-set entry (`xct`), and once locked its TID cannot change, so
        // checking it now is checking it at the serialization point. A stale one stops
        // the locking there.
        self.writes.sort_unstable_by_key(|w| w.rec);
        let mut locked = 0;
        let mut stale = false;
        for w in self.writes.iter_mut() {
            rt::point(rt::Point::Ctx(rt::Component::LockAcquire));
            let read = w.locked_tid;
            w.locked_tid = w.rec.lock();
            locked += 1;
            if w.kind.was_read() && !still_as_read(w.locked_tid, read) {
                stale = true;
                break;
            }
        }
        if stale {
            for w in &self.writes[..locked] {
                w.rec.unlock_with(w.locked_tid);
            }
            self.abort_reason = Some(AbortReason::ReadValidation);
            return Err(Error::Conflict("read set changed"));
        }
        // `--stats`: Silo's only locks, one per record written, taken at commit.
        txnstats::add(txnstats::Counter::RowLocks, self.writes.len() as u64);
        // Announced to the logger before the epoch read (after the record locks, which
        // may wait): the logger does not flush past this commit's epoch until its
        // records are appended (`log::Logger::commit_start`). No lock is held for it.
        let flight = e.logger.as_ref().map(|l| l.commit_start(self.id));
        // Inserts commit above any delete that unlinked an earlier record of their key
        // (see `TableData::deleted_tid`). Read before the epoch: a delete seen here read
        // its epoch earlier, so its TID's epoch is never above the one read below.
        let mut delete_floor = 0;
        for w in self.writes.iter().filter(|w| w.kind.is_insert()) {
            delete_floor =
                delete_floor.max(e.catalog.tables[w.table as usize].deleted_tid.load(SeqCst));
        }
        // The serialization point: the epoch read after every lock is held.
        fence(SeqCst);
        let epoch = e.epochs.current();
        if let Some(f) = &flight {
            f.set_epoch(epoch);
        }

        // Phase 2: validate.
        let why = if !self.validate_reads() {
            Some((AbortReason::ReadValidation, "read set changed"))
        } else if !self.validate_nodes() {
            Some((AbortReason::NodeValidation, "index node changed (phantom)"))
        } else {
            None
        };
        if let Some((r, msg)) = why {
            for w in &self.writes {
                w.rec.unlock_with(w.locked_tid);
            }
            drop(flight);
            self.abort_reason = Some(r);
            return Err(Error::Conflict(msg));
        }

        // Phase 3: a TID above everything this transaction saw, in the current epoch.
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

        // Phase 4: install and unlock, and with a log, write each write's record to this
        // worker's staging buffer (it stays in cache): an update's record holds only the
        // bytes it changed (`log::append_update` installs the row as it compares).
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
        // The records go to the log buffer under one short hold of its lock (the logger
        // drains whole transactions); then the commit is no longer in flight. Plain
        // stores: streaming ones (and the `sfence` they need before the unlock) stalled
        // the stores after them (`docs/design/memory-engine.md`).
        let mut full = None;
        if let Some(l) = &e.logger {
            rt::point(rt::Point::Ctx(rt::Component::LogInsert));
            let mut b = l.buffer(self.id);
            b.extend_from_slice(stage);
            full = l.full(self.id, &b);
        }
        drop(flight);
        self.last_tid = tid;
        WorkerStats::bump(&st.commits);
        self.finish();
        // A full buffer: the log is behind; wait for it, with nothing held.
        if let (Some(seen), Some(l)) = (full, &e.logger) {
            l.wait_drained(self.id, seen)?;
        }
        if e.log_mode == LogMode::Sync {
            if let Some(l) = &e.logger {
                l.wait_durable(epoch, &e.epochs)?;
            }
        }
        Ok(())
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
