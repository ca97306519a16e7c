//! Command logging on the partitioned engine, for every kit: the commands of a
//! two-threaded run, replayed in log order after the snapshot, rebuild exactly the
//! database the run left (same digest of every row), and its consistency checks pass;
//! through the driver, `run` loads and logs, `run --no-load` and `check` replay.

use api::{Engine, EngineOptions, Error, LogMode, Session};
use driver::{RunConfig, Stop};
use engine_partitioned::PartitionedEngine;
use std::path::Path;
use std::sync::Arc;
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::tpce::{Tpce, TpceConfig};
use workloads::{RunInfo, Workload};

const SEED: u64 = 5;

fn opts(dir: &Path, threads: usize, log: LogMode) -> EngineOptions {
    EngineOptions {
        threads,
        log,
        db_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
}

fn check_opts(dir: &Path) -> EngineOptions {
    EngineOptions {
        create: false,
        read_only: true,
        ..opts(dir, 1, LogMode::Off)
    }
}

fn assert_checks<W: Workload>(wl: &W, e: &PartitionedEngine, what: &str) {
    let checks = wl.check(e, &RunInfo::default()).unwrap();
    assert!(
        checks.iter().all(|c| c.passed),
        "{} {what}: {checks:#?}",
        wl.name()
    );
}

/// Load, run `txns` transactions on each of two threads (handing each commit its
/// command, as the driver does), then recover the directory and replay: the same rows.
fn replay_rebuilds_the_database<W: Workload>(wl: &W, txns: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let threads = 2;
    let e = PartitionedEngine::open(Arc::new(wl.schema()), &opts(dir, threads, LogMode::Async))
        .unwrap();
    assert!(!e.has_data());
    wl.load(&e, 1, SEED, &|_| {}).unwrap();
    e.load_done().unwrap();
    std::thread::scope(|sc| {
        for w in 0..threads {
            let e = &e;
            sc.spawn(move || {
                let mut st = wl.worker_state(w, threads, SEED);
                let mut s = Session::new(api::Database::worker(e, w));
                assert!(s.wants_commands());
                let mut buf = Vec::new();
                for _ in 0..txns {
                    let (ty, input) = wl.next(&mut st);
                    loop {
                        let r = s.run(ty, |s| {
                            wl.execute(s, &mut st, &input)?;
                            buf.clear();
                            wl.encode_input(&st, &input, &mut buf);
                            s.command(ty, &buf);
                            Ok(())
                        });
                        match r {
                            Err(Error::Conflict(_)) => continue,
                            Ok(()) | Err(Error::UserAbort) => break,
                            Err(e) => panic!("{}: {e}", wl.name()),
                        }
                    }
                }
            });
        }
    });
    let before = e.digest();
    assert_checks(wl, &e, "before the restart");
    e.shutdown().unwrap();
    drop(e);

    let e = PartitionedEngine::open(Arc::new(wl.schema()), &check_opts(dir)).unwrap();
    assert!(e.has_data());
    let n = driver::replay(&e, wl, SEED).unwrap();
    assert!(n > 0, "{}: no command logged", wl.name());
    assert_eq!(
        e.digest(),
        before,
        "{}: replaying {n} commands gave another database",
        wl.name()
    );
    assert_checks(wl, &e, "after recovery");
}

#[test]
fn micro_commands_replay_to_the_same_database() {
    for columns in [Columns::Long, Columns::String] {
        let wl = Micro::new(MicroConfig {
            keys: 5_000,
            rows_per_txn: 10,
            mode: Mode::Update,
            columns,
            distribution: Distribution::Zipf { theta: 0.9 },
            index: api::IndexKind::BTree,
        })
        .unwrap();
        replay_rebuilds_the_database(&wl, 300);
    }
}

#[test]
fn tpcb_commands_replay_to_the_same_database() {
    let wl = Tpcb::new(
        TpcbConfig {
            scale: 2,
            pad: false,
            affinity: false,
        },
        2,
    )
    .unwrap();
    replay_rebuilds_the_database(&wl, 500);
}

#[test]
fn tpcc_commands_replay_to_the_same_database() {
    let wl = Tpcc::new(TpccConfig {
        warehouses: 2,
        ..TpccConfig::default()
    })
    .unwrap();
    replay_rebuilds_the_database(&wl, 300);
}

#[test]
fn tpce_commands_replay_to_the_same_database() {
    let wl = Tpce::new(TpceConfig {
        customers: 1000,
        trade_hours: 1,
        daily_market_days: 20,
        data_maintenance_s: 3600,
        ..TpceConfig::default()
    })
    .unwrap();
    replay_rebuilds_the_database(&wl, 300);
}

fn cfg(dir: &Path, log: LogMode, no_load: bool) -> RunConfig {
    RunConfig {
        engine: opts(dir, 2, log),
        threads: 2,
        warmup_s: 0.0,
        stop: Stop::Txns(400),
        seed: SEED,
        pin: false,
        no_load,
        interactive: false,
        trace_measured: false,
        acked_file: None,
        check: true,
        progress_file: None,
        rate: None,
        coroutines: 1,
        coroutine_seed: None,
        interleave: false,
        interleave_group: 1,
        stats: false,
        timeseries: false,
        steps_team: None,
    }
}

#[test]
fn the_driver_logs_runs_and_replays_them_before_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let wl = Tpcc::new(TpccConfig {
        warehouses: 1,
        ..TpccConfig::default()
    })
    .unwrap();
    let r = driver::run::<PartitionedEngine, _>(&wl, &cfg(dir, LogMode::Sync, false)).unwrap();
    assert!(r.committed > 0 && r.checks.passed, "{:#?}", r.checks);
    assert!(r.engine_stats["log"]["commands_durable"].as_u64().unwrap() > 0);
    let r = driver::run::<PartitionedEngine, _>(&wl, &cfg(dir, LogMode::Async, true)).unwrap();
    assert!(r.committed > 0 && r.checks.passed, "{:#?}", r.checks);
    let checks = driver::check_only(
        api::database::open::<PartitionedEngine>,
        &wl,
        &check_opts(dir),
        &RunInfo::default(),
    )
    .unwrap();
    assert!(checks.iter().all(|c| c.passed), "{checks:#?}");
    // The New-Orders of both runs are in the recovered database.
    let e = PartitionedEngine::open(Arc::new(wl.schema()), &check_opts(dir)).unwrap();
    let n = driver::replay(&e, &wl, 0).unwrap();
    assert!(n >= 400, "{n} commands for two runs of 400 transactions");
}
