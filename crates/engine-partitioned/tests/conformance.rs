//! The engine-generic conformance tests (the `conformance` crate) against the partitioned
//! engine, with B+tree and with hash primary indexes. Their tables declare no partition
//! key, so they exercise the shared tables (read under one partition, written under
//! all); tests/engine.rs covers partitioned tables.

use api::{EngineOptions, IndexKind};
use conformance::*;
use engine_partitioned::PartitionedEngine;

const KINDS: [IndexKind; 2] = [IndexKind::BTree, IndexKind::Hash];

#[test]
fn transfers_keep_total_partitioned() {
    for k in KINDS {
        transfers_keep_total::<PartitionedEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn scans_never_see_partial_txn_partitioned() {
    for k in KINDS {
        scans_never_see_partial_txn::<PartitionedEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn write_skew_prevented_partitioned() {
    for k in KINDS {
        write_skew_prevented::<PartitionedEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn phantom_insert_detected_partitioned() {
    for k in KINDS {
        phantom_insert_detected::<PartitionedEngine>(&EngineOptions::default(), k);
    }
}

#[test]
fn crud_matches_serial_partitioned() {
    for k in KINDS {
        crud_matches_serial::<PartitionedEngine>(&EngineOptions::default(), k);
    }
}

/// Longer: the whole suite many times with more worker threads' interleavings.
/// `cargo test -p engine_partitioned --test conformance -- --ignored`
#[test]
#[ignore]
fn conformance_repeated() {
    for _ in 0..30 {
        for k in KINDS {
            let o = EngineOptions::default();
            transfers_keep_total::<PartitionedEngine>(&o, k);
            scans_never_see_partial_txn::<PartitionedEngine>(&o, k);
            write_skew_prevented::<PartitionedEngine>(&o, k);
            phantom_insert_detected::<PartitionedEngine>(&o, k);
        }
    }
}

/// The concurrent tests with their transactions as coroutines on one thread, under many
/// seeds (each seed one interleaving at waits and operation entries). A failure names
/// its seed; `OLTPSCOPE_SCHED_SEED=N` runs that seed alone.
#[test]
fn conformance_under_seeded_coroutines_partitioned() {
    rt::coro::each_seed("partitioned conformance", 16, |seed| {
        let k = KINDS[seed as usize % 2];
        all_under_seed::<PartitionedEngine>(&EngineOptions::default(), k, seed);
    });
}

/// The concurrent tests under STEPS (teams of 1, 2, 4, 8 coroutines on one thread, every
/// CTX point of the engine passing control to the next team member).
#[test]
fn conformance_under_steps_partitioned() {
    for (i, team) in [1, 2, 4, 8].into_iter().enumerate() {
        all_under_steps::<PartitionedEngine>(&EngineOptions::default(), KINDS[i % 2], team);
    }
}

// `own_splits_keep_phantom_checks` is for optimistic engines only: here the scanning
// transaction owns the partitions, so the other inserter waits for it (the test's
// barrier would never be passed).
