//! The engine-generic conformance tests (the `conformance` crate) against the memory engine,
//! with B+tree and with hash primary indexes.

use api::{EngineOptions, IndexKind};
use conformance::*;
use engine_memory::MemoryEngine;

const KINDS: [IndexKind; 2] = [IndexKind::BTree, IndexKind::Hash];

#[test]
fn transfers_keep_total_memory() {
    for k in KINDS {
        transfers_keep_total::<MemoryEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn scans_never_see_partial_txn_memory() {
    for k in KINDS {
        scans_never_see_partial_txn::<MemoryEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn write_skew_prevented_memory() {
    for k in KINDS {
        write_skew_prevented::<MemoryEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn phantom_insert_detected_memory() {
    for k in KINDS {
        phantom_insert_detected::<MemoryEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn crud_matches_serial_memory() {
    for k in KINDS {
        crud_matches_serial::<MemoryEngine>(&EngineOptions::default(), k);
    }
}

/// Longer: the whole suite many times with more worker threads' interleavings.
/// `cargo test -p engine_memory --test conformance -- --ignored`
#[test]
#[ignore]
fn conformance_repeated() {
    for _ in 0..30 {
        for k in KINDS {
            let o = EngineOptions::default();
            transfers_keep_total::<MemoryEngine>(&o, k);
            scans_never_see_partial_txn::<MemoryEngine>(&o, k);
            write_skew_prevented::<MemoryEngine>(&o, k);
            phantom_insert_detected::<MemoryEngine>(&o, k);
        }
    }
}

/// The concurrent tests with their transactions as coroutines on one thread, under many
/// seeds (each seed one interleaving at waits and operation entries). A failure names
/// its seed; `OLTPSCOPE_SCHED_SEED=N` runs that seed alone.
#[test]
fn conformance_under_seeded_coroutines_memory() {
    rt::coro::each_seed("memory conformance", 16, |seed| {
        let k = KINDS[seed as usize % 2];
        all_under_seed::<MemoryEngine>(&EngineOptions::default(), k, seed);
    });
}

/// The concurrent tests under STEPS (teams of 1, 2, 4, 8 coroutines on one thread, every
/// CTX point of the engine passing control to the next team member).
#[test]
fn conformance_under_steps_memory() {
    for (i, team) in [1, 2, 4, 8].into_iter().enumerate() {
        all_under_steps::<MemoryEngine>(&EngineOptions::default(), KINDS[i % 2], team);
    }
}

/// Optimistic engines only: a locking engine's scan would block the other inserter.
#[test]
fn own_splits_keep_phantom_checks_memory() {
    own_splits_keep_phantom_checks::<MemoryEngine>(&EngineOptions::default(), IndexKind::BTree);
}
