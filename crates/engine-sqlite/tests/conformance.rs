//! The engine-generic conformance tests (the `conformance` crate) against SQLite, with
//! B+tree and hash primary indexes (a hash primary is a plain primary key in SQL, but
//! a scan over it must still be refused). Threads only: under coroutines on one thread
//! a connection waiting for SQLite's write lock would block the coroutine holding it.

use api::{EngineOptions, IndexKind};
use conformance::*;
use engine_sqlite::SqliteEngine;

const KINDS: [IndexKind; 2] = [IndexKind::BTree, IndexKind::Hash];

#[test]
fn transfers_keep_total_sqlite() {
    for k in KINDS {
        transfers_keep_total::<SqliteEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn scans_never_see_partial_txn_sqlite() {
    for k in KINDS {
        scans_never_see_partial_txn::<SqliteEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn write_skew_prevented_sqlite() {
    for k in KINDS {
        write_skew_prevented::<SqliteEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn phantom_insert_detected_sqlite() {
    for k in KINDS {
        phantom_insert_detected::<SqliteEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn crud_matches_serial_sqlite() {
    for k in KINDS {
        crud_matches_serial::<SqliteEngine>(&EngineOptions::default(), k);
    }
}
