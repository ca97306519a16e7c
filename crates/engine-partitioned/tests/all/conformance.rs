//! The engine-generic conformance tests (the `conformance` crate) against the partitioned
//! engine, with B+tree and with hash primary indexes. Their tables declare no partition
//! key, so they exercise the shared tables (read under one partition, written under
//! all); the `engine` module covers partitioned tables. `conformance_repeated` is the
//! soak (`-- --ignored`).
//!
//! Not `optimistic` (`own_splits_keep_phantom_checks`): here the scanning transaction
//! owns the partitions, so the other inserter waits for it (the test's barrier would
//! never be passed).

use api::EngineOptions;
use engine_partitioned::PartitionedEngine;

conformance::tests!(PartitionedEngine, EngineOptions::default(), "partitioned";
    threads, repeated, coroutines(16), steps);
