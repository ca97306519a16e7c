//! TPC-B and TPC-C through the driver with each worker thread's transactions run as
//! coroutines (`--coroutines`), on every engine: under the round-robin scheduler of
//! `run`, and under many seeds of the deterministic one (each seed one interleaving at
//! waits and operation entries). The workloads' consistency checks must pass; a failure
//! names its seed, and `OLTPSCOPE_SCHED_SEED=N` runs that seed alone.

use api::IndexKind;
use api::{Engine, EngineOptions, LogMode};
use driver::{RunConfig, Stop};
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::Workload;

fn cfg(threads: usize, coroutines: usize, seed: Option<u64>, log: LogMode, txns: u64) -> RunConfig {
    RunConfig {
        engine: EngineOptions {
            threads,
            log,
            ..EngineOptions::default()
        },
        threads,
        warmup_s: 0.0,
        stop: Stop::Txns(txns),
        seed: seed.unwrap_or(5),
        pin: false,
        no_load: false,
        interactive: false,
        trace_measured: false,
        acked_file: None,
        check: true,
        progress_file: None,
        rate: None,
        timeseries: false,
        coroutines,
        coroutine_seed: seed,
        steps_team: None,
        interleave: false,
        interleave_group: 1,
        stats: false,
    }
}

fn run_ok<E: Engine, W: Workload>(wl: &W, c: &RunConfig) -> driver::Report {
    let r =
        driver::run::<E, W>(wl, c).unwrap_or_else(|e| panic!("{} on {}: {e}", wl.name(), E::NAME));
    assert!(
        r.checks.passed,
        "{} on {} (seed {:?}): {:#?}",
        wl.name(),
        E::NAME,
        c.coroutine_seed,
        r.checks
    );
    assert_eq!(
        r.committed + r.user_aborts,
        match c.stop {
            Stop::Txns(n) => n,
            Stop::Seconds(_) => unreachable!(),
        }
    );
    assert_eq!(r.coroutines, c.coroutines);
    r
}

fn tpcb() -> Tpcb {
    // One branch, no affinity: every transaction updates the same branch row.
    Tpcb::new(
        TpcbConfig {
            scale: 1,
            pad: false,
            affinity: false,
        },
        4,
    )
    .unwrap()
}

fn tpcc() -> Tpcc {
    Tpcc::new(TpccConfig {
        warehouses: 1,
        affinity: false,
        items: 2_000,
        ..TpccConfig::default()
    })
    .unwrap()
}

/// Each seed on a fresh database (the checks then also compare row counts with the
/// committed transactions), or, for durable engines, on one database loaded once and
/// reopened per seed (`--no-load`: loading costs far more than the seeded run).
fn seeded<E: Engine>(log: LogMode, seeds: u64, reuse: bool) {
    let (b, c) = (tpcb(), tpcc());
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let with_dir = |mut k: RunConfig, i: usize, no_load: bool| {
        if reuse {
            k.engine.db_dir = Some(dirs[i].path().to_path_buf());
            k.engine.log_dir = Some(dirs[i].path().to_path_buf());
            k.no_load = no_load;
        }
        k
    };
    if reuse {
        run_ok::<E, _>(&b, &with_dir(cfg(1, 1, None, log, 1), 0, false));
        run_ok::<E, _>(&c, &with_dir(cfg(1, 1, None, log, 1), 1, false));
    }
    rt::coro::each_seed(&format!("{} coroutines", E::NAME), seeds, |seed| {
        // A new run id per run: History keys (run, worker, seq) stay unique.
        let b = tpcb();
        let r = run_ok::<E, _>(&b, &with_dir(cfg(1, 4, Some(seed), log, 200), 0, true));
        assert!(
            r.coroutine_switches > 200,
            "seeded runs switch at every operation"
        );
        run_ok::<E, _>(&c, &with_dir(cfg(1, 4, Some(seed), log, 60), 1, true));
    });
}

#[test]
fn serial_engine_under_seeded_coroutines() {
    seeded::<engine_serial::SerialEngine>(LogMode::Off, 4, false);
}

#[test]
fn memory_engine_under_seeded_coroutines() {
    seeded::<engine_memory::MemoryEngine>(LogMode::Async, 6, true);
}

#[test]
fn partitioned_engine_under_seeded_coroutines() {
    seeded::<engine_partitioned::PartitionedEngine>(LogMode::Off, 4, false);
}

#[test]
fn disk_engine_under_seeded_coroutines() {
    seeded::<engine_disk::DiskEngine>(LogMode::Async, 5, true);
}

/// `run --threads 2 --coroutines 4`: the round-robin scheduler (switch on waits only),
/// every engine on the micro-benchmark and TPC-B, and TPC-C with a synchronous log
/// (commits wait for flushes).
#[test]
fn every_engine_runs_with_coroutines() {
    fn tpcb_on<E: Engine>(log: LogMode) {
        let micro = Micro::new(MicroConfig {
            keys: 20_000,
            rows_per_txn: 10,
            mode: Mode::Update,
            columns: Columns::Long,
            distribution: Distribution::Zipf { theta: 0.9 },
            index: IndexKind::BTree,
        })
        .unwrap();
        run_ok::<E, _>(&micro, &cfg(2, 4, None, log, 400));
        let r = run_ok::<E, _>(&tpcb(), &cfg(2, 4, None, log, 400));
        assert!(r.coroutine_switches > 0);
    }
    tpcb_on::<engine_serial::SerialEngine>(LogMode::Off);
    tpcb_on::<engine_memory::MemoryEngine>(LogMode::Sync);
    tpcb_on::<engine_disk::DiskEngine>(LogMode::Sync);
    tpcb_on::<engine_partitioned::PartitionedEngine>(LogMode::Off);
    let r = run_ok::<engine_memory::MemoryEngine, _>(&tpcc(), &cfg(2, 4, None, LogMode::Sync, 100));
    let flushes = r.waits.iter().find(|w| w.kind == "log_flush").unwrap();
    assert!(
        flushes.count > 0,
        "sync commits wait for the log: {:?}",
        r.waits
    );
}

/// STEPS (`--steps-team`): TPC-B and TPC-C with their consistency checks on every
/// engine, one thread of 4 coroutines in teams of at most 4 (and 1: a team of one runs
/// its operation alone, with no CTX switch). Durable engines load once and reopen.
fn steps_on<E: Engine>(log: LogMode, reuse: bool) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let with = |team: Option<usize>, i: usize, no_load: bool, txns: u64| {
        let mut k = cfg(1, 4, None, log, txns);
        k.steps_team = team;
        if reuse {
            k.engine.db_dir = Some(dirs[i].path().to_path_buf());
            k.engine.log_dir = Some(dirs[i].path().to_path_buf());
            k.no_load = no_load;
        }
        k
    };
    if reuse {
        run_ok::<E, _>(&tpcb(), &with(None, 0, false, 1));
        run_ok::<E, _>(&tpcc(), &with(None, 1, false, 1));
    }
    for team in [1, 4] {
        let b = run_ok::<E, _>(&tpcb(), &with(Some(team), 0, reuse, 200));
        let c = run_ok::<E, _>(&tpcc(), &with(Some(team), 1, reuse, 60));
        for r in [&b, &c] {
            let s = r.steps.as_ref().expect("a STEPS run reports its teams");
            assert_eq!(s.team_cap, team);
            assert!(s.teams > 0 && s.operations >= r.committed, "{s:?}");
            assert_eq!(s.team_sizes.len(), team);
            if team == 1 {
                assert_eq!(s.ctx_switches, 0, "{} {}: {s:?}", E::NAME, r.workload);
                assert_eq!(s.in_teams_share, 0.0);
            }
        }
        if team == 4 {
            // TPC-C's operations pass CTX points (index descents, record reads) in
            // teams of more than one.
            let s = c.steps.as_ref().unwrap();
            assert!(s.avg_team_size > 1.0, "{} tpcc: {s:?}", E::NAME);
            // The serial and partitioned engines have no CTX points in their code
            // (std maps as indexes): teams form at operation entries only.
            if !matches!(E::NAME, "serial" | "partitioned") {
                assert!(s.ctx_switches > 0, "{} tpcc: {s:?}", E::NAME);
            }
        }
    }
}

#[test]
fn serial_engine_under_steps() {
    steps_on::<engine_serial::SerialEngine>(LogMode::Off, false);
}

#[test]
fn memory_engine_under_steps() {
    steps_on::<engine_memory::MemoryEngine>(LogMode::Async, true);
}

#[test]
fn partitioned_engine_under_steps() {
    steps_on::<engine_partitioned::PartitionedEngine>(LogMode::Off, false);
}

#[test]
fn disk_engine_under_steps() {
    steps_on::<engine_disk::DiskEngine>(LogMode::Async, true);
}

/// `driver::run_phases` (`simulate --steps-team 1,4`'s child): one load, then a measured
/// phase per team size on the same database, each with its own report; the check after
/// the last phase counts every phase's commits (TPC-C's order and History counts).
#[test]
fn phases_measure_each_team_size_on_one_load() {
    let mut k = cfg(1, 4, None, LogMode::Async, 60);
    k.steps_team = Some(1);
    let dir = tempfile::tempdir().unwrap();
    k.engine.db_dir = Some(dir.path().to_path_buf());
    k.engine.log_dir = Some(dir.path().to_path_buf());
    let open = api::database::open::<engine_disk::DiskEngine>;
    let wl = tpcc();
    let reports = driver::run_phases(open, &wl, &k, &[4], None, &driver::Limits::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reports.len(), 2);
    for (r, team) in reports.iter().zip([1, 4]) {
        assert!(r.checks.passed, "{:#?}", r.checks);
        assert_eq!(r.committed + r.user_aborts, 60);
        assert_eq!(r.steps.as_ref().unwrap().team_cap, team);
    }
    assert!(reports[0].load_s.is_some());
    assert!(reports[1].steps.as_ref().unwrap().avg_team_size > 1.0);
    // Team sizes the coroutines cannot hold are refused before anything is loaded.
    let err = driver::run_phases(open, &wl, &k, &[8], None, &driver::Limits::default())
        .map(|_| ())
        .unwrap_err();
    assert!(err.to_string().contains("team sizes of 1 to 4"), "{err}");
}

/// `run --interleave 4`: the memory engine's transactions switch at index probes too
/// (`rt::coro::Policy::Interleave`; at every probe, small tables' included:
/// `probe_min_bytes` 0); micro-benchmark (string keys, both index kinds, reads and
/// updates), TPC-B and TPC-C keep their checks, on two threads.
#[test]
fn memory_engine_runs_interleaved() {
    let interleaved = |threads, log, txns| {
        let c = cfg(threads, 4, None, log, txns);
        RunConfig {
            interleave: true,
            interleave_group: 1,
            stats: false,
            engine: c.engine.clone().with_own(engine_memory::MemoryOptions {
                probe_min_bytes: Some(0),
                ..Default::default()
            }),
            ..c
        }
    };
    for (mode, columns, index) in [
        (Mode::Read, Columns::String, IndexKind::Hash),
        (Mode::Update, Columns::String, IndexKind::BTree),
        (Mode::Update, Columns::Long, IndexKind::Hash),
    ] {
        let micro = Micro::new(MicroConfig {
            keys: 20_000,
            rows_per_txn: 4,
            mode,
            columns,
            distribution: Distribution::Zipf { theta: 0.9 },
            index,
        })
        .unwrap();
        let r =
            run_ok::<engine_memory::MemoryEngine, _>(&micro, &interleaved(2, LogMode::Off, 800));
        assert!(
            r.coroutine_switches > 800,
            "{mode:?} {columns:?} {index:?}: probes switch ({} switches)",
            r.coroutine_switches
        );
    }
    run_ok::<engine_memory::MemoryEngine, _>(&tpcb(), &interleaved(2, LogMode::Async, 400));
    run_ok::<engine_memory::MemoryEngine, _>(&tpcc(), &interleaved(1, LogMode::Sync, 100));
}

/// `--interleave 4` on TPC-C with one warehouse and one thread: every input has the
/// same conflict class (the warehouse), so the thread never has two transactions in
/// flight that could abort each other: no conflict abort at all (without the classes,
/// New-Order and Payment of one warehouse abort each other), and the streams held
/// their inputs back instead.
#[test]
fn interleaved_tpcc_keeps_one_warehouse_apart() {
    let c = RunConfig {
        interleave: true,
        interleave_group: 1,
        stats: false,
        ..cfg(1, 4, None, LogMode::Off, 2_000)
    };
    let r = run_ok::<engine_memory::MemoryEngine, _>(&tpcc(), &c);
    assert_eq!(r.aborted, 0, "conflict aborts under keyed interleaving");
    assert!(r.keyed_held > 0, "no input was held back");
    assert!(r.coroutine_switches > 0);
}

/// Two warehouses, New-Order and Delivery only: Delivery drains the New-Order table
/// faster than New-Order fills it, so districts hold few new orders or none, and
/// Delivery's scan of one warehouse's district reads leaves where the other
/// warehouse's New-Order inserts and its Delivery deletes (a phantom at validation).
/// TPC-C's classes give Delivery its neighbours' New-Order class, so a thread never
/// runs those together: no conflict abort (with the home warehouse alone, `run tpcc
/// --warehouses 2 --mix new-order=50,delivery=50 --interleave 4 --txns 20000` aborted
/// 4,860 Deliveries on 2026-12-03).
#[test]
fn interleaved_tpcc_keeps_neighbouring_warehouses_apart() {
    let tpcc = Tpcc::new(TpccConfig {
        warehouses: 2,
        affinity: false,
        items: 2_000,
        mix: [50, 0, 0, 50, 0],
        ..TpccConfig::default()
    })
    .unwrap();
    let c = RunConfig {
        interleave: true,
        interleave_group: 1,
        stats: false,
        ..cfg(1, 4, None, LogMode::Off, 4_000)
    };
    let r = run_ok::<engine_memory::MemoryEngine, _>(&tpcc, &c);
    assert_eq!(r.aborted, 0, "conflict aborts under interleaving");
    assert!(
        r.keyed_held + r.keyed_reordered > 0,
        "nothing was held back"
    );
}
