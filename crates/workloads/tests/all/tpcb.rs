//! TPC-B on the serial reference engine: the consistency check passes after a
//! multi-threaded run and fails on a database where one balance was altered.

use api::{Engine, EngineOptions, Session, TableId};
use engine_serial::SerialEngine;
use std::sync::Arc;
use workloads::tpcb::{Account, Tpcb, TpcbConfig};
use workloads::{RunInfo, Workload};

fn load(scale: u64, threads: usize) -> (Tpcb, SerialEngine) {
    let wl = Tpcb::new(
        TpcbConfig {
            scale,
            pad: true,
            affinity: false,
        },
        threads,
    )
    .unwrap();
    let e = SerialEngine::open(Arc::new(wl.schema()), &EngineOptions::default()).unwrap();
    wl.load(&e, threads, 7, &|_| {}).unwrap();
    (wl, e)
}

/// Run `per_thread` transactions on each of `threads` threads; returns commits.
fn run(wl: &Tpcb, e: &SerialEngine, threads: usize, per_thread: u64) -> u64 {
    std::thread::scope(|sc| {
        let hs: Vec<_> = (0..threads)
            .map(|w| {
                sc.spawn(move || {
                    let mut st = wl.worker_state(w, threads, 11);
                    let mut s = Session::new(api::Database::worker(e, w));
                    for _ in 0..per_thread {
                        let (ty, input) = wl.next(&mut st);
                        s.run_retry(ty, 1000, |s| wl.execute(s, &mut st, &input))
                            .unwrap();
                    }
                    per_thread
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

#[test]
fn check_passes_after_concurrent_run_and_catches_a_changed_balance() {
    let (wl, e) = load(2, 2);
    let committed = run(&wl, &e, 2, 2000);
    let checks = wl
        .check(
            &e,
            &RunInfo {
                committed: Some(vec![committed]),
                acked: None,
            },
        )
        .unwrap();
    assert!(checks.iter().all(|c| c.passed), "{checks:?}");
    assert_eq!(checks.len(), 3);

    // A wrong committed count is caught.
    let checks = wl
        .check(
            &e,
            &RunInfo {
                committed: Some(vec![committed + 1]),
                acked: None,
            },
        )
        .unwrap();
    assert!(!checks.iter().all(|c| c.passed));

    // Alter one account's balance behind the workload's back.
    let mut s = Session::new(e.worker(0));
    let mut key = api::Key::new();
    key.push_u64(12345);
    s.run(0, |s| {
        s.update_row(TableId(2), &key, |a: &mut Account| a.balance += 1)
    })
    .unwrap();
    drop(s);
    let checks = wl
        .check(
            &e,
            &RunInfo {
                committed: Some(vec![committed]),
                acked: None,
            },
        )
        .unwrap();
    let bal = checks.iter().find(|c| c.name == "balances agree").unwrap();
    assert!(!bal.passed, "the altered balance must be detected: {bal:?}");
}

#[test]
fn account_branch_locality_follows_the_specification() {
    let wl = Tpcb::new(
        TpcbConfig {
            scale: 4,
            pad: false,
            affinity: false,
        },
        1,
    )
    .unwrap();
    let mut st = wl.worker_state(0, 1, 3);
    let n = 20_000;
    let mut local = 0;
    for _ in 0..n {
        let (_, i) = wl.next(&mut st);
        assert_eq!(
            (i.teller - 1) / 10 + 1,
            i.branch,
            "teller belongs to its branch"
        );
        if (i.account - 1) / 100_000 + 1 == i.branch {
            local += 1;
        }
        assert!(i.delta.abs() <= 999_999);
    }
    let frac = local as f64 / n as f64;
    assert!(
        (0.83..0.87).contains(&frac),
        "{frac} of accounts from the teller's branch, want 0.85"
    );

    let wl = Tpcb::new(
        TpcbConfig {
            scale: 4,
            pad: false,
            affinity: true,
        },
        2,
    )
    .unwrap();
    let mut st = wl.worker_state(1, 2, 3);
    for _ in 0..100 {
        assert_eq!(wl.next(&mut st).1.branch, 2, "worker 1's home branch is 2");
    }
}

/// Each run numbers itself past every run the database and the acknowledgement file
/// hold, and its History rows carry that number.
#[test]
fn runs_are_numbered_past_the_database_and_the_acknowledgements() {
    let (wl, e) = load(1, 1);
    wl.begin_run(&e, &[]).unwrap();
    assert_eq!(wl.run_id(), 1, "a fresh database");
    run(&wl, &e, 1, 10);
    // The same process again (a second run on the database): past run 1's rows.
    wl.begin_run(&e, &[]).unwrap();
    assert_eq!(wl.run_id(), 2);
    // A run 7 that acknowledged commits but left no rows (a lost commit) is not reused.
    let acked = vec!["7 0 1".to_string(), "7 0".to_string()];
    wl.begin_run(&e, &acked).unwrap();
    assert_eq!(wl.run_id(), 8);
    run(&wl, &e, 1, 5);
    let mut s = Session::new(e.worker(0));
    let mut runs = std::collections::BTreeMap::new();
    s.run(0, |s| {
        s.scan(
            api::TableId(3).primary(),
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |k, _| {
                *runs.entry(Tpcb::history_parts(k).0).or_insert(0) += 1;
                true
            },
        )?;
        Ok(())
    })
    .unwrap();
    assert_eq!(runs.into_iter().collect::<Vec<_>>(), [(1, 10), (8, 5)]);
}

#[test]
fn history_keys_keep_their_order_and_refuse_what_does_not_fit() {
    let k = |r, w, s| Tpcb::history_key(r, w, s).unwrap();
    assert_eq!(Tpcb::history_parts(k(5, 3, 9).as_bytes()), (5, 3, 9));
    let max = ((1 << 17) - 1, (1 << 12) - 1, (1 << 34) - 1);
    assert_eq!(Tpcb::history_parts(k(max.0, max.1, max.2).as_bytes()), max);
    // Within a worker, by sequence; then by worker; then by run.
    assert!(k(5, 3, 9) < k(5, 3, 10) && k(5, 3, 10) < k(5, 4, 1) && k(5, 4, 1) < k(6, 0, 1));
    // Below 2^63: an SQLite rowid.
    assert!(u64::from_be_bytes(k(max.0, max.1, max.2).as_bytes().try_into().unwrap()) < 1 << 63);
    for (r, w, s) in [(1 << 17, 0, 1), (1, 1 << 12, 1), (1, 0, 1 << 34)] {
        let e = Tpcb::history_key(r, w, s).unwrap_err().to_string();
        assert!(e.contains("out of range"), "{e}");
    }
}
