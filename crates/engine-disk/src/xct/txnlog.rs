//! `xct::txnlog`: a transaction's logging context, the small interface the access
//! methods (`btree`, `heap`) log their changes through: the prev-LSN chain, the
//! in-memory undo copy and the CLR mode of rollback. Below `xct`, so an access method
//! never imports the transaction layer that calls it.

use crate::bpool::PageGuard;
use crate::log::{Kind, Log, Rec};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A transaction's entry in the active transaction table (read by checkpoints).
#[derive(Default)]
pub struct TxnSlot {
    pub txn: AtomicU64,
    /// The transaction's first and last log records (0: none yet); the checkpoint keeps
    /// the log from `first` on while the transaction is active.
    pub first: AtomicU64,
    pub last: AtomicU64,
}

/// Logging context of one transaction.
pub struct TxnLog {
    pub txn: u64,
    pub slot: Arc<TxnSlot>,
    /// Copies of this transaction's undoable records, for rollback without log reads.
    pub undo: Vec<u8>,
    pub offs: Vec<u32>,
    /// Some(undo_next): records are logged as CLRs and not kept for undo.
    pub clr: Option<u64>,
}

impl TxnLog {
    pub fn new(slot: Arc<TxnSlot>) -> TxnLog {
        TxnLog {
            txn: 0,
            slot,
            undo: Vec::new(),
            offs: Vec::new(),
            clr: None,
        }
    }

    pub fn last(&self) -> u64 {
        self.slot.last.load(Ordering::Relaxed)
    }

    /// Log `rec` as this transaction's change of page `g`.
    pub fn log(&mut self, log: &Log, g: &mut PageGuard<'_>, mut rec: Rec<'_>) -> u64 {
        assert!(
            self.txn != 0,
            "transactional log record outside a transaction"
        );
        rec.txn = self.txn;
        rec.prev = self.last();
        if let Some(un) = self.clr {
            rec.clr = true;
            rec.undo_next = un;
        }
        let lsn = g.log(log, &rec, Some((&self.slot.first, &self.slot.last)));
        if self.clr.is_none() {
            let at = self.undo.len();
            self.undo.resize(at + rec.len(), 0);
            rec.encode(lsn, &mut self.undo[at..]);
            self.offs.push(at as u32);
        }
        lsn
    }

    /// Log a record that changes no page (commit, end).
    pub fn log_txn_end(&mut self, log: &Log, kind: Kind) -> u64 {
        let mut r = Rec::new(kind);
        r.txn = self.txn;
        r.prev = self.last();
        log.append(&r, Some((&self.slot.first, &self.slot.last)))
    }
}
