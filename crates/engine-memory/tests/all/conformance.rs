//! The engine-generic conformance tests (the `conformance` crate) against the memory engine,
//! with B+tree and with hash primary indexes, on threads, as seeded coroutines and under
//! STEPS; `conformance_repeated` is the soak (`-- --ignored`).

use api::EngineOptions;
use engine_memory::{MemoryEngine, MemoryOptions};

// Every lookup reaches its probe points (`probe_min_bytes` 0), so the seeded schedules
// cut into the small test tables' probes too.
conformance::tests!(MemoryEngine, EngineOptions::default().with_own(MemoryOptions {
        probe_min_bytes: Some(0),
        ..MemoryOptions::default()
    }), "memory";
    threads, repeated, coroutines(16), steps, optimistic);
