//! The memory engine on the simulated disk: `conformance::crash` over many seeds (faults,
//! then a process kill or a power loss, then recovery; then a clean stop and a power
//! loss). A failure names its seed; `OLTPSCOPE_SIM_SEEDS=N` runs more seeds,
//! `OLTPSCOPE_SIM_FIRST` moves the first.

use api::{EngineOptions, LogMode};
use engine_memory::MemoryEngine;
use std::sync::Arc;

fn opts(st: Arc<dyn storage::Storage>, create: bool) -> EngineOptions {
    EngineOptions {
        storage: st,
        log_dir: Some("/db".into()),
        log: if create { LogMode::Sync } else { LogMode::Off },
        create,
        read_only: !create,
        ..EngineOptions::default()
    }
}

#[test]
fn crashes_on_the_simulated_disk_lose_no_acknowledged_commit() {
    let (first, n) = conformance::crash::seeds_from_env(1000);
    let s = conformance::crash::run_seeds::<MemoryEngine>(first, n, opts);
    println!("memory: {n} seeds: {s:?}");
    assert!(s.faults > 0 && s.power_losses > n && s.kills > 0, "{s:?}");
}

/// The same with a checkpoint taken at a seed-chosen step (crashes land inside its
/// scan, its file, its rename and the freeing of the log) and after recovery.
#[test]
fn crashes_through_checkpoints_lose_no_acknowledged_commit() {
    fn ckpt_opts(st: Arc<dyn storage::Storage>, create: bool) -> EngineOptions {
        opts(st, create).with_own(engine_memory::MemoryOptions {
            // Only the hook's checkpoints: the thread's would depend on timing.
            checkpoint_log_bytes: Some(u64::MAX),
            ..engine_memory::MemoryOptions::default()
        })
    }
    let (first, n) = conformance::crash::seeds_from_env(1000);
    let s = conformance::crash::run_seeds_with::<MemoryEngine>(first, n, ckpt_opts, |e| {
        if let Some(c) = e.checkpointer() {
            let _ = c.take();
        }
    });
    println!("memory with checkpoints: {n} seeds: {s:?}");
    assert!(s.faults > 0 && s.power_losses > n && s.kills > 0, "{s:?}");
}
