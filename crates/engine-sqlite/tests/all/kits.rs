//! The kits end to end through the driver on SQLite: short two-thread runs whose
//! consistency checks must pass; and the database directory's life cycle (a second
//! open finds the loaded data, a cut-short load is refused, --reload starts empty,
//! a read-only open writes nothing).

use api::{Engine, EngineOptions, IndexKind, Session};
use driver::{RunConfig, Stop};
use engine_sqlite::{SqliteEngine, SqliteOptions, SyncMode};
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::tpcc::{Tpcc, TpccConfig};
use workloads::Workload;

fn cfg(threads: usize) -> RunConfig {
    RunConfig {
        engine: EngineOptions {
            threads,
            ..EngineOptions::default()
        }
        .with_own(SqliteOptions {
            sync: SyncMode::Off,
        }),
        threads,
        warmup_s: 0.05,
        stop: Stop::Seconds(0.5),
        seed: 3,
        pin: false,
        no_load: false,
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
        stats: true,
        timeseries: false,
        steps_team: None,
    }
}

fn run_ok<W: Workload>(wl: &W, c: &RunConfig) {
    let r = driver::run::<SqliteEngine, W>(wl, c)
        .unwrap_or_else(|e| panic!("{} on sqlite: {e}", wl.name()));
    assert!(
        r.committed > 0,
        "{} on sqlite: nothing committed",
        wl.name()
    );
    assert!(r.checks.passed, "{} on sqlite: {:#?}", wl.name(), r.checks);
}

#[test]
fn tpcb_runs_and_checks_on_sqlite() {
    let wl = tpcb(2);
    run_ok(&wl, &cfg(2));
}

#[test]
fn tpcc_runs_and_checks_on_sqlite() {
    let wl = Tpcc::new(TpccConfig {
        warehouses: 1,
        affinity: false,
        ..TpccConfig::default()
    })
    .unwrap();
    run_ok(&wl, &cfg(2));
}

#[test]
fn micro_runs_and_checks_on_sqlite() {
    for (columns, index) in [
        (Columns::Long, IndexKind::BTree),
        (Columns::String, IndexKind::Hash),
    ] {
        let wl = Micro::new(MicroConfig {
            keys: 5_000,
            rows_per_txn: 10,
            mode: Mode::Update,
            columns,
            distribution: Distribution::Zipf { theta: 0.9 },
            index,
        })
        .unwrap();
        run_ok(&wl, &cfg(2));
    }
}

fn small() -> Tpcb {
    Tpcb::new(
        TpcbConfig {
            scale: 1,
            pad: false,
            affinity: false,
        },
        1,
    )
    .unwrap()
}

fn opts(dir: &std::path::Path) -> EngineOptions {
    EngineOptions {
        db_dir: Some(dir.to_path_buf()),
        ..EngineOptions::default()
    }
}

#[test]
fn database_directory_life_cycle() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let wl = small();
    let schema = std::sync::Arc::new(wl.schema());
    // A load cut short (no load_done) is refused, not taken for data.
    {
        let e = SqliteEngine::open(schema.clone(), &opts(&dir)).unwrap();
        assert!(!e.has_data());
        let mut s = Session::new(e.worker(0));
        let t = schema.table_by_name("branch").unwrap();
        let row = vec![0u8; schema.table(t).row_size];
        let mut k = api::Key::new();
        k.push_u64(0);
        s.run(0, |s| s.insert(t, &k, &row)).unwrap();
    }
    let err = SqliteEngine::open(schema.clone(), &opts(&dir))
        .err()
        .expect("an unfinished load must be refused");
    assert!(err.to_string().contains("did not finish"), "{err}");
    // --reload starts empty; a finished load is found by the next open.
    let reload = EngineOptions {
        reload: true,
        ..opts(&dir)
    };
    let e = SqliteEngine::open(schema.clone(), &reload).unwrap();
    assert!(!e.has_data());
    e.load_done().unwrap();
    e.shutdown().unwrap();
    drop(e);
    let e = SqliteEngine::open(schema.clone(), &opts(&dir)).unwrap();
    assert!(e.has_data());
    drop(e);
    // Read-only: opens, refuses writes, and refuses a directory without a database.
    let ro = EngineOptions {
        read_only: true,
        create: false,
        ..opts(&dir)
    };
    let e = SqliteEngine::open(schema.clone(), &ro).unwrap();
    let mut s = Session::new(e.worker(0));
    let t = schema.table_by_name("branch").unwrap();
    let row = vec![0u8; schema.table(t).row_size];
    let mut k = api::Key::new();
    k.push_u64(9);
    assert!(s.run(0, |s| s.insert(t, &k, &row)).is_err());
    drop(s);
    drop(e);
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let ro = EngineOptions {
        read_only: true,
        create: false,
        ..opts(&empty)
    };
    assert!(SqliteEngine::open(schema.clone(), &ro).is_err());
    // Another workload's schema is refused.
    let other = std::sync::Arc::new(
        Tpcc::new(TpccConfig {
            warehouses: 1,
            ..TpccConfig::default()
        })
        .unwrap()
        .schema(),
    );
    let err = SqliteEngine::open(other, &opts(&dir)).err().unwrap();
    assert!(err.to_string().contains("another workload"), "{err}");
}

#[test]
fn an_undeclared_table_is_refused() {
    let mut s = api::Schema::new();
    s.add(api::TableDef::new("opaque", 8, IndexKind::BTree, 1));
    let err = SqliteEngine::open(std::sync::Arc::new(s), &EngineOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("no typed declaration"), "{err}");
}

/// `add_i64` is one `UPDATE .. RETURNING` of the balance (its new value back, `None` for
/// an absent row); `add_i64_blind` changes the row at once and refuses an absent one.
#[test]
fn adds_return_the_new_value_and_refuse_an_absent_row() {
    use api::Worker;
    let wl = tpcb(1);
    let e = SqliteEngine::open(
        std::sync::Arc::new(wl.schema()),
        &EngineOptions::default().with_own(SqliteOptions {
            sync: SyncMode::Off,
        }),
    )
    .unwrap();
    wl.load(&e, 1, 3, &|_| {}).unwrap();
    e.load_done().unwrap();
    let (branch, teller) = (api::TableId(0), api::TableId(1));
    let key = |id: u64| {
        let mut k = api::Key::new();
        k.push_u64(id);
        k
    };
    let bal = std::mem::offset_of!(workloads::tpcb::Branch, balance);
    let tbal = std::mem::offset_of!(workloads::tpcb::Teller, balance);
    let mut w = e.worker(0);
    w.begin().unwrap();
    assert_eq!(w.add_i64(branch, &key(1), bal, 1_234).unwrap(), Some(1_234));
    assert_eq!(w.add_i64(branch, &key(1), bal, -34).unwrap(), Some(1_200));
    assert_eq!(w.add_i64(branch, &key(99), bal, 1).unwrap(), None);
    w.add_i64_blind(teller, &key(3), tbal, 500).unwrap();
    let err = w.add_i64_blind(teller, &key(99), tbal, 1).unwrap_err();
    assert!(
        err.to_string().contains("not there"),
        "unexpected error: {err}"
    );
    w.commit().unwrap();
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    let read = |s: &mut Session<_>, t, id, at: usize| {
        let mut v = 0;
        assert!(s
            .get(t, &key(id), |r| v =
                i64::from_le_bytes(r[at..at + 8].try_into().unwrap()))
            .unwrap());
        v
    };
    assert_eq!(read(&mut s, branch, 1, bal), 1_200);
    assert_eq!(read(&mut s, teller, 3, tbal), 500);
    s.commit().unwrap();
}

/// TPC-B at scale 1, padded rows, for `threads` workers.
fn tpcb(threads: usize) -> Tpcb {
    Tpcb::new(
        TpcbConfig {
            scale: 1,
            pad: true,
            affinity: false,
        },
        threads,
    )
    .unwrap()
}
