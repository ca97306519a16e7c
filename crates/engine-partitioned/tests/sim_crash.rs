//! The partitioned engine on the simulated disk: `api::crash_suite` over many seeds
//! (faults, then a process kill or a power loss, then recovery, which replays the
//! logged commands; then a clean stop and a power loss). A failure names its seed;
//! `OLTPSCOPE_SIM_SEEDS=N` runs more seeds, `OLTPSCOPE_SIM_FIRST` moves the first.

use api::{EngineOptions, LogMode};
use engine_partitioned::PartitionedEngine;
use std::sync::Arc;

fn opts(st: Arc<dyn storage::Storage>, create: bool) -> EngineOptions {
    EngineOptions {
        storage: st,
        db_dir: Some("/db".into()),
        log: if create { LogMode::Sync } else { LogMode::Off },
        create,
        read_only: !create,
        ..EngineOptions::default()
    }
}

#[test]
fn crashes_on_the_simulated_disk_lose_no_acknowledged_commit() {
    let (first, n) = api::crash_suite::seeds_from_env(1000);
    let s = api::crash_suite::run_seeds::<PartitionedEngine>(first, n, opts);
    println!("partitioned: {n} seeds: {s:?}");
    assert!(s.faults > 0 && s.power_losses > n && s.kills > 0, "{s:?}");
}
