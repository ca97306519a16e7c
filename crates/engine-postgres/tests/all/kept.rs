//! A cluster kept in `--db DIR`: loaded once, run on again with `--no-load` (the rows
//! found, the checks passing), refused when it is not ours or holds another shape.
//! Without PostgreSQL each test prints one `SKIPPED:` line and returns.

use api::{Engine, EngineOptions, IndexKind};
use driver::RunConfig;
use engine_postgres::{PostgresEngine, PostgresOptions};
use std::path::{Path, PathBuf};
use workloads::micro::{Columns, Distribution, Micro, MicroConfig, Mode};
use workloads::tpcb::{Tpcb, TpcbConfig};
use workloads::Workload;

/// A fresh directory for one test's cluster (its parent reachable by the `postgres`
/// account when the tests run as root); removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("pgkept-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn missing(test: &str) -> bool {
    if pgserver::find_bindir().is_some() {
        return false;
    }
    skipped!("{test}: no PostgreSQL installed (scripts/install-postgres.sh)");
    true
}

fn micro(keys: u64, mode: Mode) -> Micro {
    Micro::new(MicroConfig {
        keys,
        rows_per_txn: 2,
        mode,
        columns: Columns::String,
        distribution: Distribution::Uniform,
        index: IndexKind::BTree,
    })
    .unwrap()
}

/// The engine's options on the cluster in `dir`.
fn on(dir: &Path, create: bool, reload: bool, prewarm: bool) -> EngineOptions {
    EngineOptions {
        threads: 1,
        db_dir: Some(dir.to_path_buf()),
        create,
        reload,
        ..EngineOptions::default()
    }
    .with_own(PostgresOptions {
        prewarm,
        ..PostgresOptions::default()
    })
}

fn no_load_run(dir: &Path, prewarm: bool) -> RunConfig {
    RunConfig {
        engine: on(dir, false, false, prewarm),
        no_load: true,
        ..crate::postgres::cfg(1, PostgresOptions::default())
    }
}

#[test]
fn a_load_into_db_then_runs_with_no_load_on_it() {
    if missing("a_load_into_db_then_runs_with_no_load_on_it") {
        return;
    }
    let d = Dir::new("loadrun");
    let open = api::database::open::<PostgresEngine>;
    let reads = micro(3_000, Mode::Read);
    driver::load_only(open, &reads, &on(&d.0, true, false, false), 1, false).unwrap();
    let marker = std::fs::read_to_string(d.0.join(pgserver::kept::MARKER)).unwrap();
    assert!(marker.contains("loaded yes"), "{marker}");
    assert!(d.0.join("data").join("PG_VERSION").is_file());
    // Read, then update, then read again with the server's buffers prewarmed: each
    // finds the rows, and its checks (every row there, both columns agreeing) pass.
    for (wl, prewarm) in [
        (&reads, false),
        (&micro(3_000, Mode::Update), false),
        (&reads, true),
    ] {
        let r = driver::run::<PostgresEngine, Micro>(wl, &no_load_run(&d.0, prewarm)).unwrap();
        assert!(r.committed > 0, "nothing committed");
        assert!(r.checks.passed, "{:?}", r.checks);
        assert!(r.checks.skipped.is_none(), "{:?}", r.checks);
    }
    // `oltpscope check --db DIR` (a sweep's shape checked once after its runs) opens it
    // read-only: the checks pass.
    let read_only = EngineOptions {
        read_only: true,
        ..on(&d.0, false, false, false)
    };
    let info = workloads::RunInfo {
        committed: None,
        acked: None,
    };
    let list = driver::check_only(open, &reads, &read_only, &info).unwrap();
    assert!(
        !list.is_empty() && list.iter().all(|c| c.passed),
        "{list:?}"
    );
    // Read-only, an empty directory is refused, never made a cluster.
    let empty = Dir::new("loadrun-empty");
    std::fs::create_dir_all(&empty.0).unwrap();
    let ro_empty = EngineOptions {
        read_only: true,
        ..on(&empty.0, false, false, false)
    };
    assert!(driver::check_only(open, &reads, &ro_empty, &info).is_err());
    assert_eq!(std::fs::read_dir(&empty.0).unwrap().count(), 0);
    // Another size: the driver's check of the rows' extent refuses it.
    let e =
        driver::run::<PostgresEngine, Micro>(&micro(5_000, Mode::Read), &no_load_run(&d.0, false))
            .unwrap_err()
            .to_string();
    assert!(
        e.contains("micro") || e.contains("another workload or scale"),
        "{e}"
    );
    // Loading again over it needs --reload, which loads it afresh.
    let e = driver::load_only(open, &reads, &on(&d.0, true, false, false), 1, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("already holds data"), "{e}");
    driver::load_only(
        open,
        &micro(4_000, Mode::Read),
        &on(&d.0, true, true, false),
        1,
        false,
    )
    .unwrap();
    let r =
        driver::run::<PostgresEngine, Micro>(&micro(4_000, Mode::Read), &no_load_run(&d.0, false))
            .unwrap();
    assert!(r.checks.passed, "{:?}", r.checks);
}

#[test]
fn a_foreign_directory_is_refused_and_left_untouched() {
    if missing("a_foreign_directory_is_refused_and_left_untouched") {
        return;
    }
    let d = Dir::new("foreign");
    std::fs::create_dir_all(&d.0).unwrap();
    std::fs::write(d.0.join("notes.txt"), "someone's").unwrap();
    let schema = std::sync::Arc::new(Workload::schema(&micro(100, Mode::Read)));
    for (create, reload) in [(true, false), (true, true), (false, false)] {
        let e = PostgresEngine::open(schema.clone(), &on(&d.0, create, reload, false))
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("holds no oltpscope PostgreSQL cluster"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let left: Vec<_> = std::fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"], "nothing added or removed");
    assert_eq!(
        std::fs::read_to_string(d.0.join("notes.txt")).unwrap(),
        "someone's"
    );
    // --no-load on an empty directory: nothing to run on, nothing made there.
    let empty = Dir::new("empty");
    let e = PostgresEngine::open(schema, &on(&empty.0, false, false, false))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("holds no PostgreSQL cluster"), "{e}");
    assert!(!empty.0.exists());
}

#[test]
fn a_cluster_of_another_shape_is_refused() {
    if missing("a_cluster_of_another_shape_is_refused") {
        return;
    }
    let d = Dir::new("shape");
    let open = api::database::open::<PostgresEngine>;
    driver::load_only(
        open,
        &micro(500, Mode::Read),
        &on(&d.0, true, false, false),
        1,
        false,
    )
    .unwrap();
    let before = std::fs::read(d.0.join(pgserver::kept::MARKER)).unwrap();
    let tpcb = Tpcb::new(
        TpcbConfig {
            scale: 1,
            pad: false,
            affinity: false,
        },
        1,
    )
    .unwrap();
    let schema = std::sync::Arc::new(Workload::schema(&tpcb));
    let e = PostgresEngine::open(schema, &on(&d.0, false, false, false))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("another workload or scale"), "{e}");
    assert_eq!(
        std::fs::read(d.0.join(pgserver::kept::MARKER)).unwrap(),
        before
    );
    // A marker that does not parse: damaged, refused, left as it is.
    std::fs::write(
        d.0.join(pgserver::kept::MARKER),
        "oltpscope postgres cluster 1\n",
    )
    .unwrap();
    let schema = std::sync::Arc::new(Workload::schema(&micro(500, Mode::Read)));
    let e = PostgresEngine::open(schema, &on(&d.0, false, false, false))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("damaged or not oltpscope's"), "{e}");
    assert!(d.0.join("data").join("PG_VERSION").is_file());
    // `oltpscope drop`: the marker names the engine, which removes its three names.
    let st = storage::os();
    assert!(PostgresEngine::owns_dir(&*st, &d.0));
    let files = PostgresEngine::db_files(&*st, &d.0, None).unwrap();
    assert_eq!(files.len(), 3, "{files:?}");
    PostgresEngine::remove_db(&*st, &d.0, &files).unwrap();
    assert_eq!(std::fs::read_dir(&d.0).unwrap().count(), 0);
    assert!(!PostgresEngine::owns_dir(&*st, &d.0));
}
