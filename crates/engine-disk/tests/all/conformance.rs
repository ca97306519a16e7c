//! The engine-generic conformance tests (the `conformance` crate) against the disk engine,
//! with a small buffer pool (so pages are evicted and read back) and frequent
//! checkpoints, with B+tree and hash-declared primary indexes, on threads, as seeded
//! coroutines and under STEPS.

use api::{EngineOptions, LogMode};
use engine_disk::DiskEngine;

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
        ..Default::default()
    })
}

// Coroutine seeds: page I/O runs on `rt`'s I/O threads meanwhile.
conformance::tests!(DiskEngine, opts(), "disk"; threads, coroutines(8), steps);
