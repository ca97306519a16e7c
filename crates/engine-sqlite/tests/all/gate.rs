//! The writer gate (`engine_sqlite::gate`): writers behind it lose no update and never
//! deadlock, checkpoints still run, a holder that waits too long is refused, and a
//! worker dropped inside its transaction (a panic) does not wedge the others.

use api::{Engine, EngineOptions, Worker};
use engine_sqlite::gate::{Writer, WriterGate};
use engine_sqlite::{SqliteEngine, SqliteOptions, SyncMode};
use rusqlite::Connection;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn conn(db: &Path) -> Connection {
    let c = Connection::open(db).unwrap();
    c.busy_timeout(engine_sqlite::BUSY_TIMEOUT).unwrap();
    // A small threshold, so that the hook's checkpoints run many times.
    c.execute_batch("PRAGMA synchronous=OFF; PRAGMA wal_autocheckpoint=4;")
        .unwrap();
    c
}

fn counter_db(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("gate.sqlite");
    let c = conn(&db);
    c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    c.execute_batch(
        "CREATE TABLE c (id INTEGER PRIMARY KEY, v INTEGER NOT NULL, pad TEXT NOT NULL);
         INSERT INTO c VALUES (1, 0, '');",
    )
    .unwrap();
    db
}

/// One increment behind the gate, as a worker's transaction: enter, `BEGIN IMMEDIATE`,
/// the read and the write of the new value (a lost update shows if two overlap), commit.
fn increment(c: &Connection, w: &Writer<'_>, pad: &str) {
    assert!(w.enter(Duration::from_secs(10)), "the gate stayed taken");
    c.execute_batch("BEGIN IMMEDIATE").unwrap();
    let v: i64 = c
        .query_row("SELECT v FROM c WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    c.execute("UPDATE c SET v = ?1, pad = ?2 WHERE id = 1", (v + 1, pad))
        .unwrap();
    c.execute_batch("COMMIT").unwrap();
    w.committed();
}

#[test]
fn two_writers_lose_no_update_and_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let db = counter_db(tmp.path());
    let gate = Arc::new(WriterGate::default());
    const N: i64 = 300;
    // Open throughout: the last connection to close would checkpoint the WAL itself.
    let c = conn(&db);
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (db, gate) = (&db, gate.clone());
            s.spawn(move || {
                let c = conn(db);
                let w = Writer::install(&c, gate).unwrap();
                // Rows of a few pages, so that commits pass the checkpoint threshold.
                let pad = "p".repeat(9000);
                for _ in 0..N {
                    increment(&c, &w, &pad);
                }
            });
        }
    });
    let v: i64 = c
        .query_row("SELECT v FROM c WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 2 * N);
    // The hook checkpointed: the WAL was restarted, not left to grow by every commit's
    // pages (about 3 per commit, 1,800 in all).
    let (_, frames, _): (i64, i64, i64) = c
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert!(frames < 200, "the WAL holds {frames} frames");
}

#[test]
fn a_taken_gate_refuses_after_its_limit_and_a_dropped_holder_frees_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = counter_db(tmp.path());
    let gate = Arc::new(WriterGate::default());
    let c1 = conn(&db);
    let c2 = conn(&db);
    let w2 = Writer::install(&c2, gate.clone()).unwrap();
    {
        let w1 = Writer::install(&c1, gate.clone()).unwrap();
        assert!(w1.enter(Duration::ZERO));
        c1.execute_batch("BEGIN IMMEDIATE; UPDATE c SET v = 99 WHERE id = 1;")
            .unwrap();
        let t = Instant::now();
        assert!(!w2.enter(Duration::from_millis(30)));
        assert!(t.elapsed() >= Duration::from_millis(30));
        // w1 goes inside its transaction (as in a panic's unwinding).
    }
    drop(c1);
    increment(&c2, &w2, "");
    let v: i64 = c2
        .query_row("SELECT v FROM c WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 1, "the dropped holder's update was rolled back");
}

/// Through the engine: a worker dropped inside its transaction lets a worker waiting at
/// the gate go on at once, not after the busy timeout.
#[test]
fn an_engine_worker_dropped_in_its_transaction_frees_the_gate() {
    let tmp = tempfile::tempdir().unwrap();
    let schema = Arc::new(workloads::Workload::schema(
        &workloads::tpcb::Tpcb::new(
            workloads::tpcb::TpcbConfig {
                scale: 1,
                pad: false,
                affinity: false,
            },
            1,
        )
        .unwrap(),
    ));
    let e = SqliteEngine::open(
        schema,
        &EngineOptions {
            db_dir: Some(tmp.path().to_path_buf()),
            ..EngineOptions::default()
        }
        .with_own(SqliteOptions {
            sync: SyncMode::Off,
        }),
    )
    .unwrap();
    let mut w1 = e.worker(0);
    w1.begin().unwrap();
    let t = Instant::now();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut w2 = e.worker(1);
            w2.begin()?;
            w2.commit()
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(w1);
        waiter.join().unwrap().unwrap();
    });
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "the waiter waited {:?}",
        t.elapsed()
    );
}
