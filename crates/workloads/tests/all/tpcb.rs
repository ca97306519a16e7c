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
                    let mut s = Session::new(e.worker(w));
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
