//! The engine-generic conformance tests (the `conformance` crate) against the disk engine,
//! with a small buffer pool (so pages are evicted and read back) and frequent
//! checkpoints, with B+tree and hash-declared primary indexes.

use api::{EngineOptions, IndexKind, LogMode};
use conformance::*;
use engine_disk::DiskEngine;

const KINDS: [IndexKind; 2] = [IndexKind::BTree, IndexKind::Hash];

fn opts() -> EngineOptions {
    EngineOptions {
        threads: 8,
        log: LogMode::Async,
        ..EngineOptions::default()
    }
    .with_own(engine_disk::DiskOptions {
        bpool_bytes: Some(200 * 8192),
        checkpoint_ms: Some(20),
        escalation: None,
    })
}

#[test]
fn transfers_keep_total_disk() {
    for k in KINDS {
        transfers_keep_total::<DiskEngine>(&opts(), k);
    }
}

#[test]
fn scans_never_see_partial_txn_disk() {
    for k in KINDS {
        scans_never_see_partial_txn::<DiskEngine>(&opts(), k);
    }
}

#[test]
fn write_skew_prevented_disk() {
    for k in KINDS {
        write_skew_prevented::<DiskEngine>(&opts(), k);
    }
}

#[test]
fn phantom_insert_detected_disk() {
    for k in KINDS {
        phantom_insert_detected::<DiskEngine>(&opts(), k);
    }
}

#[test]
fn crud_matches_serial_disk() {
    for k in KINDS {
        crud_matches_serial::<DiskEngine>(&opts(), k);
    }
}

/// The concurrent tests with their transactions as coroutines on one thread, under many
/// seeds (each seed one interleaving at waits and operation entries; page I/O runs on
/// `rt`'s I/O threads meanwhile). A failure names its seed; `OLTPSCOPE_SCHED_SEED=N`
/// runs that seed alone.
#[test]
fn conformance_under_seeded_coroutines_disk() {
    rt::coro::each_seed("disk conformance", 8, |seed| {
        let k = KINDS[seed as usize % 2];
        all_under_seed::<DiskEngine>(&opts(), k, seed);
    });
}

/// The concurrent tests under STEPS (teams of 1, 2, 4, 8 coroutines on one thread, every
/// CTX point of the engine passing control to the next team member).
#[test]
fn conformance_under_steps_disk() {
    for (i, team) in [1, 2, 4, 8].into_iter().enumerate() {
        all_under_steps::<DiskEngine>(&opts(), KINDS[i % 2], team);
    }
}
