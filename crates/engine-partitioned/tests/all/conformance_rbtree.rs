//! The conformance tests (the `conformance` crate) against the partitioned engine with
//! red-black trees as its ordered indexes (`--ordered-index rbtree`): B+tree-kind
//! primary indexes and every secondary index are then red-black trees.

use api::{EngineOptions, IndexKind};
use conformance::*;
use engine_partitioned::{OrderedKind, PartitionedEngine, PartitionedOptions};

fn rb() -> EngineOptions {
    EngineOptions::default().with_own(PartitionedOptions {
        partitions: None,
        ordered: OrderedKind::RbTree,
        ..Default::default()
    })
}

#[test]
fn conformance_with_rbtrees() {
    let o = rb();
    transfers_keep_total::<PartitionedEngine>(&o, IndexKind::BTree);
    scans_never_see_partial_txn::<PartitionedEngine>(&o, IndexKind::BTree);
    write_skew_prevented::<PartitionedEngine>(&o, IndexKind::BTree);
    phantom_insert_detected::<PartitionedEngine>(&o, IndexKind::BTree);
    crud_matches_serial::<PartitionedEngine>(&o, IndexKind::BTree);
    crud_matches_serial::<PartitionedEngine>(&o, IndexKind::Hash);
}

#[test]
fn conformance_with_rbtrees_under_seeded_coroutines() {
    let o = rb();
    rt::coro::each_seed("partitioned rbtree conformance", 8, |seed| {
        all_under_seed::<PartitionedEngine>(&o, IndexKind::BTree, seed);
    });
}
