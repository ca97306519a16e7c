//! The partitioned engine on the simulated disk: `conformance::crash` over many seeds
//! (faults, then a process kill or a power loss, then recovery, which replays the
//! logged commands; then a clean stop and a power loss), without and with checkpoints.
//! A failure names its seed;
//! `OLTPSCOPE_SIM_SEEDS=N` runs more seeds, `OLTPSCOPE_SIM_FIRST` moves the first.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

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
    let (first, n) = conformance::crash::seeds_from_env(1000);
    let s = conformance::crash::run_seeds::<PartitionedEngine>(first, n, opts);
    println!("partitioned: {n} seeds: {s:?}");
    assert!(s.faults > 0 && s.power_losses > n && s.kills > 0, "{s:?}");
}

/// The same with a checkpoint taken at a seed-chosen step (crashes land inside its
/// copy, its file, its rename, the mark and the freeing of the log) and after
/// recovery (which then starts from it).
#[test]
fn crashes_through_checkpoints_lose_no_acknowledged_commit() {
    fn ckpt_opts(st: Arc<dyn storage::Storage>, create: bool) -> EngineOptions {
        opts(st, create).with_own(engine_partitioned::PartitionedOptions {
            // Only the hook's checkpoints: the thread's would depend on timing.
            checkpoint_log_bytes: Some(u64::MAX),
            ..Default::default()
        })
    }
    let (first, n) = conformance::crash::seeds_from_env(1000);
    let s = conformance::crash::run_seeds_with::<PartitionedEngine>(first, n, ckpt_opts, |e| {
        if let Some(c) = e.checkpointer() {
            let _ = c.take();
        }
    });
    println!("partitioned with checkpoints: {n} seeds: {s:?}");
    assert!(s.faults > 0 && s.power_losses > n && s.kills > 0, "{s:?}");
}

/// A log long enough that a checkpoint frees whole pages of it, and a crash (power
/// loss or kill, seed-chosen) at every storage operation of that checkpoint: the
/// reopened database holds every acknowledged command, whatever of the new snapshot,
/// its rename, the mark and the hole survived.
#[test]
fn a_crash_at_every_step_of_a_checkpoint_loses_nothing() {
    use api::{Engine, IndexKind, Partitioning, Schema, Session, TableDef, TableId, Worker};
    use storage::sim::{Faults, SimStorage};
    const T: TableId = TableId(0);
    const N: u64 = 300;
    fn schema() -> Arc<Schema> {
        let mut s = Schema::new();
        s.add(
            TableDef::new("ledger", 8, IndexKind::BTree, 1000).partitioned(Partitioning {
                values: 1 << 16,
                of_key: |_, k| (k.len() >= 8).then(|| api::key::read_u64(k, 0) % (1 << 16)),
                of_row: None,
            }),
        );
        Arc::new(s)
    }
    // One command: insert the ledger row of `id` (a 100-byte input, so the log grows).
    fn run<W: Worker>(s: &mut Session<W>, id: u64) -> api::Result<()> {
        let mut input = id.to_le_bytes().to_vec();
        input.resize(100, 7);
        s.run(0, |s| {
            s.insert(T, &id.to_be_bytes(), &id.to_le_bytes())?;
            s.command(0, &input);
            Ok(())
        })
    }
    let open = |sim: &SimStorage| {
        PartitionedEngine::open_with(
            schema(),
            &opts(sim.as_storage(), true),
            engine_partitioned::PartitionedOptions {
                partitions: Some(2),
                checkpoint_log_bytes: Some(u64::MAX),
                ..Default::default()
            },
        )
    };
    // Returns the storage operations the checkpoint made, or the recovered ids.
    let trial = |seed: u64, crash_at: Option<u64>| -> Result<(u64, u64), String> {
        let sim = SimStorage::new(seed);
        let e = open(&sim).map_err(|e| e.to_string())?;
        e.load_done().map_err(|e| e.to_string())?;
        e.replay_done().map_err(|e| e.to_string())?;
        {
            let mut s = Session::new(e.worker(0));
            for id in 0..N {
                run(&mut s, id).map_err(|e| format!("command {id}: {e}"))?;
            }
        }
        let before = sim.stats().mutations;
        if let Some(k) = crash_at {
            sim.set_faults(Faults {
                crash_after_writes: Some(k),
                ..Faults::default()
            });
        }
        let done = e.checkpointer().unwrap().take();
        let ops = sim.stats().mutations - before;
        if crash_at.is_none() {
            let d = done?.expect("a checkpoint");
            assert!(d.position.offset > 2 * 4096, "{d:?}");
            assert!(sim.stats().punched_bytes >= 4096, "nothing freed");
        }
        sim.set_faults(Faults {
            crash_after_writes: Some(0),
            ..Faults::default()
        });
        drop(e);
        if seed.is_multiple_of(2) {
            sim.crash();
        } else {
            sim.kill();
        }
        sim.set_faults(Faults::default());
        let e = open(&sim).map_err(|e| format!("reopen refused: {e}"))?;
        let cmds = e.recovered_commands().map_err(|e| e.to_string())?;
        let mut s = Session::new(e.worker(0));
        for c in &cmds {
            let id = u64::from_le_bytes(c.input[..8].try_into().unwrap());
            s.run(0, |s| s.insert(T, &id.to_be_bytes(), &id.to_le_bytes()))
                .map_err(|e| format!("replay of {id}: {e}"))?;
        }
        e.replay_done().map_err(|e| e.to_string())?;
        let mut got = 0u64;
        s.run(0, |s| {
            got = 0;
            s.scan(
                T.primary(),
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                api::Dir::Forward,
                usize::MAX,
                |k, _| {
                    assert_eq!(api::key::read_u64(k, 0), got, "ids in order, none missing");
                    got += 1;
                    true
                },
            )?;
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok((ops, got))
    };
    let (ops, got) = trial(1, None).unwrap();
    assert_eq!(got, N);
    assert!(ops > 5, "a checkpoint of {ops} storage operations");
    for k in 0..=ops {
        for seed in [2 * k, 2 * k + 1] {
            let (_, got) = trial(seed, Some(k)).unwrap_or_else(|e| panic!("crash at {k}: {e}"));
            assert_eq!(
                got, N,
                "crash at operation {k} of the checkpoint (seed {seed})"
            );
        }
    }
}
