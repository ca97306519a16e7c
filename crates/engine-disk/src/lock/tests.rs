//! Lock-manager tests: matrix, upgrades, hierarchy, escalation, deadlocks, and a
//! real-thread stress test that checks mutual exclusion with per-resource counters.

// Test code: a test walks through its scenario step by step; the function-length lint
// (clippy.toml) is for library code.
#![allow(clippy::too_many_lines)]

use super::*;
use std::sync::atomic::{AtomicI64, AtomicUsize};
use std::sync::{Barrier, Mutex as StdMutex};
use LockMode::*;

/// A manager without lock inheritance: after `release_all` the table is empty.
fn mgr() -> LockManager {
    LockManager::new(LockConfig {
        partitions: 64,
        inherit: false,
        ..LockConfig::default()
    })
}

/// A manager with lock inheritance (the default).
fn mgr_inherit() -> LockManager {
    LockManager::new(LockConfig {
        partitions: 64,
        ..LockConfig::default()
    })
}

fn rec(table: u32, slot: u16) -> LockId {
    LockId::Record {
        table,
        page: slot as u64 / 8,
        slot,
    }
}

/// One lock on `id` alone (no intention locks), granted only if free at once.
fn try_lock(m: &LockManager, t: &mut TxnLocks, id: LockId, mode: LockMode) -> bool {
    let held = t.held(id);
    m.acquire(t, id, held, mode, true).unwrap().is_some()
}

/// Block until `n` lock waits have started (the waiter is queued before it is counted as
/// waiting for deadlock purposes, and `waits` is incremented before it sleeps).
fn until_waits(m: &LockManager, n: u64) {
    rt::wait_until(rt::WaitKind::Other, None, || m.stats().waits >= n);
}

#[test]
fn matrix_is_the_standard_one() {
    // Compatible pairs, written out independently of mode.rs.
    let ok = [(IS, IS), (IS, IX), (IS, S), (IS, SIX), (IX, IX), (S, S)];
    for a in LockMode::ALL {
        for b in LockMode::ALL {
            let want = ok.contains(&(a, b)) || ok.contains(&(b, a));
            assert_eq!(a.compatible(b), want, "{a:?} vs {b:?}");
            let mask = b.bit();
            assert_eq!(a.compatible_with_mask(mask), want);
        }
    }
}

#[test]
fn supremum_is_the_least_upper_bound() {
    let order = |a: LockMode, b: LockMode| a.covers(b);
    // covers is a partial order with IS < IX, IS < S, IX < SIX, S < SIX, SIX < X.
    assert!(IX.covers(IS) && S.covers(IS) && SIX.covers(IX) && SIX.covers(S) && X.covers(SIX));
    assert!(!IX.covers(S) && !S.covers(IX) && !SIX.covers(X));
    for a in LockMode::ALL {
        for b in LockMode::ALL {
            let s = a.supremum(b);
            assert_eq!(s, b.supremum(a));
            assert!(
                order(s, a) && order(s, b),
                "sup({a:?},{b:?})={s:?} covers both"
            );
            for m in LockMode::ALL {
                if order(m, a) && order(m, b) {
                    assert!(order(m, s), "sup({a:?},{b:?})={s:?} is least (vs {m:?})");
                }
            }
        }
    }
    assert_eq!(IX.supremum(S), SIX);
}

#[test]
fn two_transactions_conflict_exactly_per_matrix() {
    let m = mgr();
    let id = LockId::Table(7);
    for a in LockMode::ALL {
        for b in LockMode::ALL {
            let mut t1 = TxnLocks::new(1);
            let mut t2 = TxnLocks::new(2);
            m.lock(&mut t1, id, a).unwrap();
            let got = try_lock(&m, &mut t2, id, b);
            assert_eq!(got, a.compatible(b), "held {a:?}, requested {b:?}");
            m.release_all(&mut t1);
            m.release_all(&mut t2);
            assert_eq!(m.active_heads(), 0);
        }
    }
}

#[test]
fn conflicting_request_times_out_and_leaves_no_trace() {
    let m = LockManager::new(LockConfig {
        timeout: Some(Duration::from_millis(1)),
        partitions: 64,
        ..LockConfig::default()
    });
    let (mut t1, mut t2) = (TxnLocks::new(1), TxnLocks::new(2));
    m.lock(&mut t1, rec(1, 1), X).unwrap();
    assert_eq!(
        m.lock(&mut t2, rec(1, 1), S),
        Err(api::Error::Conflict("lock timeout"))
    );
    assert_eq!(m.stats().timeouts, 1);
    // t2 keeps its intention locks; the failed request is gone.
    assert_eq!(t2.held(rec(1, 1)), None);
    assert_eq!(t2.held(LockId::Table(1)), Some(IS));
    m.release_all(&mut t1);
    m.lock(&mut t2, rec(1, 1), X).unwrap();
    m.release_all(&mut t2);
    // Both keep their intention locks for inheritance until they stop.
    m.release_kept(&mut t1);
    m.release_kept(&mut t2);
    assert_eq!(m.active_heads(), 0);
}

#[test]
fn intention_locks_are_taken_top_down() {
    let m = mgr();
    let mut t = TxnLocks::new(1);
    let r = LockId::Record {
        table: 3,
        page: 9,
        slot: 4,
    };
    m.lock(&mut t, r, S).unwrap();
    assert_eq!(t.held(LockId::Database), Some(IS));
    assert_eq!(t.held(LockId::Table(3)), Some(IS));
    assert_eq!(t.held(LockId::Page { table: 3, page: 9 }), Some(IS));
    assert_eq!(t.held(r), Some(S));
    m.lock(&mut t, r, X).unwrap();
    assert_eq!(t.held(LockId::Database), Some(IX));
    assert_eq!(t.held(LockId::Table(3)), Some(IX));
    assert_eq!(t.held(LockId::Page { table: 3, page: 9 }), Some(IX));
    assert_eq!(t.held(r), Some(X));
    let k = LockId::Key {
        table: 3,
        index: 1,
        hash: 77,
    };
    m.lock(&mut t, k, S).unwrap();
    assert_eq!(t.held(k), Some(S));
    assert_eq!(t.len(), 5);
    assert_eq!(
        t.counts(),
        TxnLockCounts {
            fine: 2,
            coarse: 3,
            waits: 0,
            escalations: 0,
        }
    );
    // A table S on top of IX gives SIX; reads below are then implied.
    m.lock(&mut t, LockId::Table(3), S).unwrap();
    assert_eq!(t.held(LockId::Table(3)), Some(SIX));
    let before = t.len();
    m.lock(&mut t, rec(3, 100), S).unwrap();
    assert_eq!(t.len(), before, "S record under SIX table is implied");
    m.release_all(&mut t);
    assert!(t.is_empty());
    assert_eq!(m.active_heads(), 0);
    let s = m.stats();
    assert_eq!(s.acquired - s.upgrades, s.released);
    assert_eq!(s.requests, 5);
    assert_eq!(s.covered, 1);
}

#[test]
fn a_coarse_lock_makes_finer_requests_no_ops() {
    let m = mgr();
    let mut t = TxnLocks::new(1);
    m.lock(&mut t, LockId::Table(2), X).unwrap();
    let heads = m.active_heads();
    m.lock(&mut t, rec(2, 1), X).unwrap();
    m.lock(
        &mut t,
        LockId::Key {
            table: 2,
            index: 0,
            hash: 5,
        },
        S,
    )
    .unwrap();
    assert_eq!(m.active_heads(), heads);
    assert_eq!(t.len(), 2);
    // Another transaction can't get under it.
    let mut u = TxnLocks::new(2);
    assert!(!try_lock(&m, &mut u, LockId::Table(2), IS));
    m.release_all(&mut t);
    m.release_all(&mut u);
}

#[test]
fn upgrade_waits_for_other_holders_only() {
    let m = Arc::new(mgr());
    let id = rec(1, 1);
    let (mut t1, mut t2) = (TxnLocks::new(1), TxnLocks::new(2));
    m.lock(&mut t1, id, S).unwrap();
    m.lock(&mut t2, id, S).unwrap();
    // A waiter for X queues behind both.
    let m3 = m.clone();
    let h3 = std::thread::spawn(move || {
        let mut t3 = TxnLocks::new(3);
        m3.lock(&mut t3, id, X).unwrap();
        assert_eq!(t3.held(id), Some(X));
        m3.release_all(&mut t3);
    });
    until_waits(&m, 1);
    // t1's upgrade has priority over t3 but must wait for t2's S.
    let m1 = m.clone();
    let h1 = std::thread::spawn(move || {
        m1.lock(&mut t1, id, X).unwrap();
        assert_eq!(t1.held(id), Some(X));
        t1
    });
    until_waits(&m, 2);
    m.release_all(&mut t2);
    let mut t1 = h1.join().unwrap();
    m.release_all(&mut t1);
    h3.join().unwrap();
    assert_eq!(m.active_heads(), 0);
    assert_eq!(m.stats().deadlocks, 0);
}

#[test]
fn upgrade_of_sole_holder_skips_the_queue() {
    let m = Arc::new(mgr());
    let id = rec(1, 1);
    let mut t1 = TxnLocks::new(1);
    m.lock(&mut t1, id, S).unwrap();
    let m2 = m.clone();
    let h2 = std::thread::spawn(move || {
        let mut t2 = TxnLocks::new(2);
        m2.lock(&mut t2, id, X).unwrap();
        m2.release_all(&mut t2);
    });
    until_waits(&m, 1);
    // Only other holders block a conversion: granted at once despite the waiter.
    assert!(try_lock(&m, &mut t1, id, X));
    m.release_all(&mut t1);
    h2.join().unwrap();
    assert_eq!(m.active_heads(), 0);
}

#[test]
fn escalation_at_threshold_covers_later_record_locks() {
    let m = mgr();
    let mut t = TxnLocks::new(1);
    for s in 0..25 {
        m.lock(&mut t, rec(4, s), S).unwrap();
    }
    assert_eq!(m.stats().escalations, 0);
    assert_eq!(t.fine_locks(4), 25);
    assert_eq!(t.counts().escalations, 0);
    m.lock(&mut t, rec(4, 25), S).unwrap();
    assert_eq!(m.stats().escalations, 1);
    assert_eq!(
        t.counts().escalations,
        1,
        "the transaction's own count (--stats)"
    );
    assert_eq!(t.held(LockId::Table(4)), Some(S));
    assert_eq!(t.fine_locks(4), 0, "finer locks dropped");
    assert_eq!(t.len(), 2, "database IS and table S remain");
    let heads = m.active_heads();
    m.lock(&mut t, rec(4, 99), S).unwrap();
    assert_eq!(m.active_heads(), heads, "later record locks are no-ops");
    // A write below an escalated S table needs SIX, then counts towards X escalation.
    for s in 100..126 {
        m.lock(&mut t, rec(4, s), X).unwrap();
    }
    assert_eq!(t.held(LockId::Table(4)), Some(X));
    assert_eq!(m.stats().escalations, 2);
    assert_eq!(t.len(), 2);
    m.release_all(&mut t);
    assert_eq!(m.active_heads(), 0);
    // Other transactions' view: a reader is blocked by an escalated writer.
    let mut w = TxnLocks::new(2);
    for s in 0..26 {
        m.lock(&mut w, rec(5, s), X).unwrap();
    }
    assert_eq!(w.held(LockId::Table(5)), Some(X));
    let mut r = TxnLocks::new(3);
    assert!(!try_lock(&m, &mut r, LockId::Table(5), IS));
    m.release_all(&mut w);
    m.release_all(&mut r);
}

#[test]
fn escalation_that_would_conflict_is_deferred() {
    let m = mgr();
    let (mut a, mut b) = (TxnLocks::new(1), TxnLocks::new(2));
    m.lock(&mut b, rec(4, 1000), X).unwrap(); // b holds IX on table 4
    for s in 0..26 {
        m.lock(&mut a, rec(4, s), S).unwrap();
    }
    let st = m.stats();
    assert_eq!((st.escalations, st.escalation_failures), (0, 1));
    assert_eq!(a.held(LockId::Table(4)), Some(IS));
    assert_eq!(a.fine_locks(4), 26);
    // Retried after another threshold's worth of locks, once b is gone.
    m.release_all(&mut b);
    for s in 26..50 {
        m.lock(&mut a, rec(4, s), S).unwrap();
    }
    assert_eq!(m.stats().escalations, 0);
    m.lock(&mut a, rec(4, 50), S).unwrap();
    assert_eq!(m.stats().escalations, 1);
    assert_eq!(a.held(LockId::Table(4)), Some(S));
    m.release_all(&mut a);
    assert_eq!(m.active_heads(), 0);
}

/// Run `n` transactions that each first lock `first[i]` then `second[i]` in X, all
/// holding their first lock before any asks for its second. Returns the victims.
fn cycle(n: usize, first: Vec<LockId>, second: Vec<LockId>, mode2: LockMode) -> Vec<usize> {
    let m = Arc::new(mgr());
    let bar = Arc::new(Barrier::new(n));
    let victims = Arc::new(StdMutex::new(Vec::new()));
    let done = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (m, bar, victims, done) = (m.clone(), bar.clone(), victims.clone(), done.clone());
            let (f, s) = (first[i], second[i]);
            std::thread::spawn(move || {
                let mut t = TxnLocks::new(i as u64 + 1);
                m.lock(&mut t, f, S).unwrap();
                bar.wait();
                match m.lock(&mut t, s, mode2) {
                    Ok(()) => {
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => {
                        assert_eq!(e, api::Error::Conflict("deadlock"));
                        victims.lock().unwrap().push(i);
                    }
                }
                m.release_all(&mut t);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(m.active_heads(), 0);
    assert_eq!(m.detector.registered(), 0);
    let v = victims.lock().unwrap().clone();
    assert_eq!(m.stats().deadlocks, v.len() as u64);
    assert_eq!(done.load(Ordering::SeqCst) + v.len(), n);
    v
}

#[test]
fn two_transaction_deadlock_has_exactly_one_victim() {
    for _ in 0..20 {
        let v = cycle(2, vec![rec(1, 1), rec(1, 2)], vec![rec(1, 2), rec(1, 1)], X);
        assert_eq!(v.len(), 1, "victims {v:?}");
    }
}

#[test]
fn three_transaction_deadlock_has_exactly_one_victim() {
    for _ in 0..20 {
        let (a, b, c) = (
            rec(1, 1),
            rec(2, 2),
            LockId::Key {
                table: 3,
                index: 0,
                hash: 3,
            },
        );
        let v = cycle(3, vec![a, b, c], vec![b, c, a], X);
        assert_eq!(v.len(), 1, "victims {v:?}");
    }
}

#[test]
fn conversion_deadlock_has_exactly_one_victim() {
    for _ in 0..20 {
        // Both hold S on the same record and both upgrade to X.
        let v = cycle(2, vec![rec(1, 1), rec(1, 1)], vec![rec(1, 1), rec(1, 1)], X);
        assert_eq!(v.len(), 1, "victims {v:?}");
    }
}

#[test]
fn shared_requests_do_not_deadlock() {
    let v = cycle(
        3,
        vec![rec(1, 1), rec(1, 2), rec(1, 3)],
        vec![rec(1, 2), rec(1, 3), rec(1, 1)],
        S,
    );
    assert!(v.is_empty());
}

/// Per-resource occupancy: >0 readers, -1 one writer. Violations panic.
struct Occupancy(Vec<AtomicI64>);

impl Occupancy {
    fn enter(&self, r: usize, mode: LockMode, prev: Option<LockMode>) {
        let c = &self.0[r];
        match (mode, prev) {
            (_, Some(X)) | (S, Some(S)) => {}
            (S, None) => {
                let old = c.fetch_add(1, Ordering::SeqCst);
                assert!(
                    old >= 0,
                    "S granted on resource {r} while an X holder exists"
                );
            }
            (X, Some(S)) => {
                let old = c.compare_exchange(1, -1, Ordering::SeqCst, Ordering::SeqCst);
                assert!(old.is_ok(), "X upgrade on {r} with other holders: {old:?}");
            }
            (X, None) => {
                let old = c.compare_exchange(0, -1, Ordering::SeqCst, Ordering::SeqCst);
                assert!(old.is_ok(), "X granted on {r} with other holders: {old:?}");
            }
            other => unreachable!("test uses S and X only: {other:?}"),
        }
    }
    fn leave(&self, r: usize, mode: LockMode) {
        let c = &self.0[r];
        match mode {
            S => assert!(c.fetch_sub(1, Ordering::SeqCst) > 0),
            _ => assert_eq!(c.swap(0, Ordering::SeqCst), -1),
        }
    }
}

fn stress(threads: usize, txns: usize, cfg: LockConfig, seed: u64) -> LockStats {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    const TABLES: u32 = 2;
    const PER_TABLE: u16 = 12;
    let m = Arc::new(LockManager::new(cfg));
    let occ = Arc::new(Occupancy(
        (0..2 * TABLES as usize * PER_TABLE as usize)
            .map(|_| AtomicI64::new(0))
            .collect(),
    ));
    let next_id = Arc::new(AtomicU64::new(1));
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = Instant::now();
    {
        // A hang must fail the run, not stall it: abort if nothing finishes in 5 minutes
        // (the test takes well under a second).
        let finished = finished.clone();
        let m = m.clone();
        std::thread::spawn(move || {
            for _ in 0..3000 {
                std::thread::sleep(Duration::from_millis(100));
                if finished.load(Ordering::Relaxed) {
                    return;
                }
            }
            eprintln!(
                "lock stress: no progress for 5 minutes: a hang\n{}",
                m.dump()
            );
            std::process::abort();
        });
    }
    let hs: Vec<_> = (0..threads)
        .map(|th| {
            let (m, occ, next_id) = (m.clone(), occ.clone(), next_id.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ (th as u64 * 7919));
                // Owner ids must differ between threads (kept locks are named by them).
                let mut t = TxnLocks::new(next_id.fetch_add(1, Ordering::Relaxed));
                let mut mine: Vec<(usize, LockMode)> = Vec::new();
                let mut committed = 0;
                while committed < txns {
                    t.reset(next_id.fetch_add(1, Ordering::Relaxed));
                    let ops = rng.gen_range(1..8);
                    let mut ok = true;
                    for _ in 0..ops {
                        let table = rng.gen_range(0..TABLES);
                        let slot = rng.gen_range(0..PER_TABLE);
                        let mode = if rng.gen_bool(0.4) { X } else { S };
                        let id = if rng.gen_bool(0.5) {
                            rec(table, slot)
                        } else {
                            LockId::Key {
                                table,
                                index: 0,
                                hash: slot as u64,
                            }
                        };
                        // One occupancy cell per record and one per key.
                        let cells = TABLES as usize * PER_TABLE as usize;
                        let kind = if matches!(id, LockId::Key { .. }) {
                            cells
                        } else {
                            0
                        };
                        let r = kind + table as usize * PER_TABLE as usize + slot as usize;
                        // Mostly blocking locks; some no-wait (a refusal aborts, as a
                        // B-tree under a latch would retry) and some instant ones.
                        let how = rng.gen_range(0..10);
                        let res = match how {
                            0 => m.try_lock(&mut t, id, mode).map(|g| g.then_some(true)),
                            1 => m.lock_instant(&mut t, id, mode).map(|_| Some(false)),
                            _ => m.lock(&mut t, id, mode).map(|_| Some(true)),
                        };
                        match res {
                            Ok(Some(true)) => {
                                let prev = mine.iter().find(|(x, _)| *x == r).map(|p| p.1);
                                occ.enter(r, mode, prev);
                                let newm = prev.map_or(mode, |p| p.supremum(mode));
                                match mine.iter_mut().find(|(x, _)| *x == r) {
                                    Some(e) => e.1 = newm,
                                    None => mine.push((r, newm)),
                                }
                            }
                            // Instant: granted and already gone from the table (unless it
                            // upgraded a held lock), so there is no occupancy to check.
                            Ok(Some(false)) => {}
                            Ok(None) => {
                                ok = false;
                                break;
                            }
                            Err(e) => {
                                assert!(e.is_conflict(), "{e:?}");
                                ok = false;
                                break;
                            }
                        }
                        if rng.gen_bool(0.3) {
                            std::thread::yield_now();
                        }
                    }
                    for (r, md) in mine.drain(..) {
                        occ.leave(r, md);
                    }
                    m.release_all(&mut t);
                    if ok {
                        committed += 1;
                    }
                }
                m.release_kept(&mut t);
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    finished.store(true, Ordering::Relaxed);
    assert_eq!(m.active_heads(), 0, "lock table empty at the end");
    assert_eq!(m.detector.registered(), 0);
    assert!(occ.0.iter().all(|c| c.load(Ordering::SeqCst) == 0));
    let s = m.stats();
    // A lock kept across transactions is acquired once, then released or revoked.
    assert_eq!(s.acquired - s.upgrades, s.released + s.revoked);
    assert_eq!(
        s.late_deadlocks, 0,
        "every cycle is found when its last wait begins"
    );
    eprintln!("stress: {s:?} in {:?}", started.elapsed());
    s
}

#[test]
fn stress_random_locks_keep_mutual_exclusion_and_never_hang() {
    for seed in 0..8 {
        let s = stress(
            4,
            300,
            LockConfig {
                partitions: 16,
                ..LockConfig::default()
            },
            seed,
        );
        assert!(s.requests > 0);
    }
}

#[test]
fn stress_with_escalation_and_timeouts() {
    let mut escalations = 0;
    for seed in 100..108 {
        let cfg = LockConfig {
            partitions: 4,
            escalation_threshold: 3,
            timeout: Some(Duration::from_micros(50)),
            ..LockConfig::default()
        };
        escalations += stress(4, 300, cfg, seed).escalations;
    }
    assert!(escalations > 0, "the escalation path was exercised");
}

#[test]
#[ignore = "long stress: cargo test -p engine_disk lock -- --ignored"]
fn stress_long() {
    for seed in 0..20 {
        stress(
            8,
            2000,
            LockConfig {
                partitions: 8,
                ..LockConfig::default()
            },
            seed,
        );
        let cfg = LockConfig {
            partitions: 2,
            escalation_threshold: 2,
            ..LockConfig::default()
        };
        stress(8, 2000, cfg, seed + 100);
    }
}

/// Deterministic randomized schedules (in the spirit of shuttle, without threads): many
/// virtual transactions drive the lock table and the deadlock detector directly, a seeded
/// scheduler picks who runs next. Checks after every step that granted modes of different
/// transactions are compatible, and that whenever every live transaction is blocked the
/// detector had found the cycle (so no schedule can hang). Odd seeds also keep IS/IX locks
/// across transactions (speculative inheritance, as `LockManager` does for tables): a
/// parked lock counts as granted in the compatibility check, and a transaction must never
/// be left waiting behind a parked lock (that too shows as "every live transaction
/// blocked", since its owner may have finished).
#[test]
fn model_random_schedules_keep_invariants_and_never_hang() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    use rustc_hash::FxHashMap;
    use std::sync::atomic::AtomicU8;
    use table::{LockTable, Outcome, Slot, Waiter, GRANTED, IN_USE, PARKED, REVOKED, WAITING};

    struct V {
        id: u64,
        plan: Vec<(LockId, LockMode)>,
        pc: usize,
        held: FxHashMap<LockId, LockMode>,
        waiting: Option<(LockId, LockMode)>,
        /// The inheritance slot of the waiting request, if it has one.
        waiting_slot: Option<Slot>,
        waiter: Arc<Waiter>,
        restarts: u32,
        /// Locks with an inheritance slot (in use, parked, or revoked and not yet noticed).
        kept: FxHashMap<LockId, (LockMode, Slot)>,
    }

    /// End the transaction (commit or abort): park what may be kept, release the rest.
    fn end(v: &mut V, table: &LockTable, det: &deadlock::Detector) {
        let mut wake = Vec::new();
        for (l, m) in v.held.drain() {
            if let Some(k) = v.kept.get_mut(&l) {
                if matches!(m, IS | IX)
                    && k.1
                        .compare_exchange(IN_USE, PARKED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                {
                    k.0 = m;
                    continue;
                }
                v.kept.remove(&l);
            }
            table.latch(l).release(v.id, l, &mut wake);
            table::wake_all(&mut wake);
        }
        det.forget(v.id);
    }

    let (mut victims, mut withdrawn, mut conversions_waited) = (0u64, 0u64, 0u64);
    let (mut claims, mut revoked) = (0u64, 0u64);
    let seeds: u64 = std::env::var("LOCK_MODEL_SEEDS").map_or(1500, |v| v.parse().unwrap());
    for seed in 0..seeds {
        let inherit = seed % 2 == 1;
        let mut rng = SmallRng::seed_from_u64(seed);
        let table = LockTable::new(2);
        let det = deadlock::Detector::default();
        let n = rng.gen_range(2..6);
        let resources = rng.gen_range(1..5u16);
        let mut next_id = 1u64;
        let mut vs: Vec<V> = (0..n)
            .map(|_| {
                let len = rng.gen_range(1..6);
                let plan = (0..len)
                    .map(|_| {
                        let r = LockId::Record {
                            table: 0,
                            page: 0,
                            slot: rng.gen_range(0..resources),
                        };
                        (r, LockMode::ALL[rng.gen_range(0..5)])
                    })
                    .collect();
                next_id += 1;
                V {
                    id: next_id,
                    plan,
                    pc: 0,
                    held: FxHashMap::default(),
                    waiting: None,
                    waiting_slot: None,
                    waiter: Arc::new(Waiter::new()),
                    restarts: 0,
                    kept: FxHashMap::default(),
                }
            })
            .collect();
        let mut wake = Vec::new();
        let mut steps = 0;
        loop {
            steps += 1;
            assert!(steps < 10_000, "seed {seed}: schedule does not terminate");
            // Observe grants.
            for v in vs.iter_mut() {
                if let Some((l, m)) = v.waiting {
                    if v.waiter.granted() {
                        v.held.insert(l, m);
                        if let Some(s) = v.waiting_slot.take() {
                            v.kept.insert(l, (m, s));
                        }
                        v.waiting = None;
                        v.pc += 1;
                    }
                }
            }
            // Invariant: granted modes of different transactions are compatible, parked
            // (inherited) locks included.
            let granted: Vec<Vec<(LockId, LockMode)>> = vs
                .iter()
                .map(|v| {
                    let parked = v.kept.iter().filter_map(|(l, (m, s))| {
                        (s.load(Ordering::Acquire) == PARKED).then_some((*l, *m))
                    });
                    v.held.iter().map(|(l, m)| (*l, *m)).chain(parked).collect()
                })
                .collect();
            for (i, a) in granted.iter().enumerate() {
                for b in &granted[i + 1..] {
                    for (l, ma) in a {
                        for (_, mb) in b.iter().filter(|(lb, _)| lb == l) {
                            assert!(ma.compatible(*mb), "seed {seed}: {l:?} {ma:?} and {mb:?}");
                        }
                    }
                }
            }
            let live: Vec<usize> = (0..vs.len())
                .filter(|&i| vs[i].pc < vs[i].plan.len() || !vs[i].held.is_empty())
                .collect();
            if live.is_empty() {
                break;
            }
            let runnable: Vec<usize> = live
                .iter()
                .copied()
                .filter(|&i| vs[i].waiting.is_none())
                .collect();
            assert!(
                !runnable.is_empty(),
                "seed {seed}: every live transaction blocked: missed deadlock, or a waiter \
                 behind a parked lock\n{}",
                table.dump()
            );
            // Now and then a waiter times out: withdraws its request and aborts.
            let blocked: Vec<usize> = live
                .iter()
                .copied()
                .filter(|&i| vs[i].waiting.is_some())
                .collect();
            if !blocked.is_empty() && rng.gen_bool(0.05) {
                let v = &mut vs[blocked[rng.gen_range(0..blocked.len())]];
                let (l, m) = v.waiting.take().expect("blocked");
                let slot = v.waiting_slot.take();
                if det.withdraw(v.id, l, &table) {
                    v.held.insert(l, m);
                    if let Some(s) = slot {
                        v.kept.insert(l, (m, s));
                    }
                    v.pc += 1;
                } else {
                    withdrawn += 1;
                    end(v, &table, &det);
                    if !inherit {
                        // Without inheritance a retry may take a new id; with it the owner
                        // id stays (its parked locks are named by it).
                        next_id += 1;
                        v.id = next_id;
                    }
                    v.pc = 0;
                }
                continue;
            }
            let v = &mut vs[runnable[rng.gen_range(0..runnable.len())]];
            let commit = v.pc == v.plan.len();
            if commit {
                end(v, &table, &det);
                continue;
            }
            let (l, m) = v.plan[v.pc];
            // Claim a parked lock back, unless it was revoked meanwhile.
            if !v.held.contains_key(&l) {
                if let Some((km, s)) = v.kept.get(&l) {
                    match s.compare_exchange(PARKED, IN_USE, Ordering::AcqRel, Ordering::Acquire) {
                        Ok(_) => {
                            claims += 1;
                            v.held.insert(l, *km);
                        }
                        Err(st) => {
                            assert_eq!(st, REVOKED, "seed {seed}: kept lock in use while idle");
                            v.kept.remove(&l);
                        }
                    }
                }
            }
            let held = v.held.get(&l).copied();
            let target = held.map_or(m, |h| h.supremum(m));
            if held == Some(target) {
                v.pc += 1;
                continue;
            }
            let slot = (inherit && held.is_none() && matches!(target, IS | IX))
                .then(|| Arc::new(AtomicU8::new(IN_USE)));
            v.waiter.state.store(WAITING, Ordering::Relaxed);
            let out =
                table
                    .latch(l)
                    .acquire(v.id, l, held, target, &v.waiter, false, slot.as_ref());
            match out {
                Outcome::Granted => {
                    v.held.insert(l, target);
                    if let Some(s) = slot {
                        v.kept.insert(l, (target, s));
                    }
                    v.pc += 1;
                }
                Outcome::WouldBlock => unreachable!("no nowait requests in the model"),
                Outcome::Wait => {
                    conversions_waited += held.is_some() as u64;
                    let verdict = det.check(v.id, l, &table);
                    match verdict {
                        Verdict::Wait => {
                            v.waiting = Some((l, target));
                            v.waiting_slot = slot;
                        }
                        Verdict::Granted => {
                            assert_eq!(v.waiter.state.load(Ordering::Acquire), GRANTED);
                            v.held.insert(l, target);
                            if let Some(s) = slot {
                                v.kept.insert(l, (target, s));
                            }
                            v.pc += 1;
                        }
                        Verdict::Victim => {
                            victims += 1;
                            // Abort and restart (under a new id unless it keeps locks).
                            end(v, &table, &det);
                            if !inherit {
                                next_id += 1;
                                v.id = next_id;
                            }
                            v.pc = 0;
                            v.restarts += 1;
                            assert!(v.restarts < 1000, "seed {seed}: livelock");
                        }
                    }
                }
            }
        }
        // The owners stop: give up every parked lock (revoked ones are gone already).
        for v in vs.iter_mut() {
            for (l, (_, s)) in v.kept.drain() {
                table.latch(l).release_parked(v.id, l, &s, &mut wake);
                table::wake_all(&mut wake);
            }
        }
        revoked += table.revoked();
        assert_eq!(table.heads(), 0, "seed {seed}: lock table empty at the end");
        assert!(
            table.shape().iter().all(|&(n, _)| n >= table::BUILT_HEADS),
            "seed {seed}: a partition lost a head it was built with"
        );
        assert_eq!(det.registered(), 0);
    }
    // The schedules are deterministic: these show the interesting paths were taken.
    assert!(victims > 0 && withdrawn > 0 && conversions_waited > 0);
    assert!(
        claims > 0 && revoked > 0,
        "inheritance exercised: {claims} claims, {revoked} revocations"
    );
}

#[test]
fn try_lock_never_waits_and_keeps_granted_intentions() {
    let m = mgr();
    let (mut t1, mut t2) = (TxnLocks::new(1), TxnLocks::new(2));
    m.lock(&mut t1, rec(1, 1), X).unwrap();
    assert!(!m.try_lock(&mut t2, rec(1, 1), S).unwrap());
    assert_eq!(t2.held(LockId::Table(1)), Some(IS));
    assert_eq!(t2.held(rec(1, 1)), None);
    assert!(m.try_lock(&mut t2, rec(1, 2), S).unwrap());
    // Blocked on an intention lock: nothing below it is requested.
    let mut t3 = TxnLocks::new(3);
    m.lock(&mut t3, LockId::Table(2), X).unwrap();
    assert!(!m.try_lock(&mut t2, rec(2, 1), S).unwrap());
    assert_eq!(t2.held(LockId::Table(2)), None);
    m.release_all(&mut t1);
    m.release_all(&mut t3);
    assert!(m.try_lock(&mut t2, rec(1, 1), X).unwrap());
    m.release_all(&mut t2);
    assert_eq!(m.active_heads(), 0);
    assert_eq!(m.stats().waits, 0);
}

#[test]
fn instant_lock_waits_for_conflicts_but_keeps_nothing() {
    let m = Arc::new(mgr());
    let next = LockId::Key {
        table: 1,
        index: 0,
        hash: 42,
    };
    // Free: granted and released at once; only the intention locks remain.
    let mut t = TxnLocks::new(1);
    m.lock_instant(&mut t, next, IX).unwrap();
    assert_eq!(t.held(next), None);
    assert_eq!(t.held(LockId::Table(1)), Some(IX));
    m.release_all(&mut t);
    // A scanner's S on the next key holds an inserter's instant IX back until it ends.
    let mut scanner = TxnLocks::new(2);
    m.lock(&mut scanner, next, S).unwrap();
    let mut ins = TxnLocks::new(3);
    assert!(!m.try_lock_instant(&mut ins, next, IX).unwrap());
    let m2 = m.clone();
    let h = std::thread::spawn(move || {
        m2.lock_instant(&mut ins, next, IX).unwrap();
        assert_eq!(ins.held(next), None);
        m2.release_all(&mut ins);
    });
    until_waits(&m, 1);
    m.release_all(&mut scanner);
    h.join().unwrap();
    assert_eq!(m.active_heads(), 0);
    let s = m.stats();
    assert_eq!(s.acquired - s.upgrades, s.released);
}

/// Rough cost of the uncontended path (not an assertion; numbers only for a sanity look:
/// `cargo test -p engine_disk --release lock::tests::cost -- --ignored --nocapture`).
/// "hot": few resources, lock table in cache; "spread": records drawn from 10M, partitions
/// and heads mostly not in cache, like in an engine whose buffer pool evicts them.
#[test]
#[ignore = "prints a rough timing"]
fn cost_of_uncontended_locking() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    for spread in [false, true] {
        let m = LockManager::new(LockConfig::default());
        let mut t = TxnLocks::new(0);
        let mut rng = SmallRng::seed_from_u64(1);
        let rounds: u64 = std::env::var("LOCK_COST_ROUNDS").map_or(200_000, |v| v.parse().unwrap());
        let start = Instant::now();
        for i in 0..rounds {
            t.reset(i + 1);
            for s in 0..10u16 {
                let id = if spread {
                    let r: u64 = rng.gen_range(0..10_000_000);
                    LockId::Record {
                        table: (r % 4) as u32,
                        page: r / 64,
                        slot: (r % 64) as u16,
                    }
                } else {
                    rec((i % 4) as u32, s + (i % 97) as u16 * 16)
                };
                m.lock(&mut t, id, if s % 3 == 0 { X } else { S }).unwrap();
            }
            m.release_all(&mut t);
        }
        let ns = start.elapsed().as_nanos() as u64 / (rounds * 10);
        let what = if spread { "spread" } else { "hot" };
        eprintln!("uncontended {what}: {ns} ns per record lock (incl. intention locks, release)");
    }
}

#[test]
fn unlock_releases_one_lock_and_wakes_its_waiter() {
    let m = Arc::new(mgr());
    let id = rec(1, 1);
    let mut t1 = TxnLocks::new(1);
    m.lock(&mut t1, id, S).unwrap();
    assert_eq!(t1.fine_locks(1), 1);
    let m2 = m.clone();
    let h = std::thread::spawn(move || {
        let mut t2 = TxnLocks::new(2);
        m2.lock(&mut t2, id, X).unwrap();
        m2.release_all(&mut t2);
    });
    until_waits(&m, 1);
    assert!(m.unlock(&mut t1, id));
    assert!(!m.unlock(&mut t1, id));
    assert_eq!(t1.fine_locks(1), 0);
    assert_eq!(t1.held(LockId::Table(1)), Some(IS), "intention locks stay");
    h.join().unwrap();
    m.release_all(&mut t1);
    assert_eq!(m.active_heads(), 0);
}

#[test]
fn key_locks_name_keys_and_keep_end_of_index_apart() {
    let a = LockId::key(1, 0, b"customer:000042");
    assert_eq!(a, LockId::key(1, 0, b"customer:000042"));
    assert_ne!(a, LockId::key(1, 0, b"customer:000043"));
    assert_ne!(a, LockId::key(1, 1, b"customer:000042"));
    assert_ne!(LockId::key(1, 0, b""), LockId::key(1, 0, b"\0"));
    let mut seen = std::collections::HashSet::new();
    for i in 0u32..10_000 {
        let k = LockId::key(1, 0, &i.to_be_bytes());
        assert_ne!(k, LockId::end_of_index(1, 0));
        assert!(seen.insert(k), "hash collision among 10k small keys at {i}");
    }
    assert_eq!(LockId::end_of_index(2, 3).parent(), Some(LockId::Table(2)));
}

#[test]
#[should_panic(expected = "holds locks below it")]
fn unlocking_an_ancestor_of_held_locks_is_a_programmer_error() {
    let m = mgr();
    let mut t = TxnLocks::new(1);
    m.lock(&mut t, rec(1, 1), S).unwrap();
    m.unlock(&mut t, LockId::Table(1));
}

/// Rough look at physical contention: threads locking disjoint keys of one table, so they
/// meet only on the database and table heads (prints numbers, asserts nothing timing-based:
/// `cargo test -p engine_disk --release lock::tests::hot -- --ignored --nocapture`).
#[test]
#[ignore = "prints a rough timing"]
fn hot_intention_locks_under_threads() {
    let m = Arc::new(LockManager::new(LockConfig::default()));
    let threads = 8u64;
    let txns: u64 = std::env::var("LOCK_COST_ROUNDS").map_or(100_000, |v| v.parse().unwrap());
    let start = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|th| {
            let m = m.clone();
            std::thread::spawn(move || {
                let mut t = TxnLocks::new(u64::MAX - th);
                for i in 0..txns {
                    t.reset(th * txns + i + 1);
                    for k in 0..5u64 {
                        let id = LockId::Key {
                            table: 1,
                            index: 0,
                            hash: (th << 32) | ((i % 1000) * 8 + k),
                        };
                        m.lock(&mut t, id, X).unwrap();
                    }
                    m.release_all(&mut t);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let el = start.elapsed();
    let s = m.stats();
    eprintln!(
        "{} txns in {el:?} ({:.0} txn/s); latch contended {} times, {} us waiting; waits {}",
        threads * txns,
        (threads * txns) as f64 / el.as_secs_f64(),
        s.latch_contended,
        s.latch_wait_ns / 1000,
        s.waits
    );
    assert_eq!(s.waits, 0, "disjoint keys never conflict logically");
}

#[test]
fn dump_shows_holders_waiters_and_upgrades() {
    let m = Arc::new(mgr());
    let id = rec(1, 1);
    let (mut t1, mut t2) = (TxnLocks::new(1), TxnLocks::new(2));
    m.lock(&mut t1, id, S).unwrap();
    m.lock(&mut t2, id, S).unwrap();
    let m1 = m.clone();
    let h = std::thread::spawn(move || {
        m1.lock(&mut t1, id, X).unwrap();
        t1
    });
    until_waits(&m, 1);
    let d = m.dump();
    assert!(
        d.contains("Record { table: 1, page: 0, slot: 1 }: 1:S->X 2:S"),
        "{d}"
    );
    assert!(
        d.contains("Table(1): 1:IX 2:IS") || d.contains("Table(1): 2:IS 1:IX"),
        "{d}"
    );
    m.release_all(&mut t2);
    let mut t1 = h.join().unwrap();
    m.release_all(&mut t1);
    assert_eq!(m.dump(), "");
}

#[test]
fn competing_escalations_neither_wait_nor_deadlock() {
    let m = mgr();
    let (mut r, mut w) = (TxnLocks::new(1), TxnLocks::new(2));
    // Interleaved: each one's escalation would conflict with the other's intention lock.
    for s in 0..40 {
        m.lock(&mut r, rec(4, s), S).unwrap();
        m.lock(&mut w, rec(4, 100 + s), X).unwrap();
    }
    let st = m.stats();
    assert_eq!((st.escalations, st.waits, st.deadlocks), (0, 0, 0));
    assert!(st.escalation_failures >= 2, "{st:?}");
    assert_eq!((r.fine_locks(4), w.fine_locks(4)), (40, 40));
    m.release_all(&mut w);
    // Alone now: the next retry succeeds.
    for s in 40..80 {
        m.lock(&mut r, rec(4, s), S).unwrap();
    }
    assert_eq!(r.held(LockId::Table(4)), Some(S));
    m.release_all(&mut r);
    assert_eq!(m.active_heads(), 0);
}

/// Speculative lock inheritance: the table and database intention locks of a committed
/// transaction stay in the table, parked; the owner's next transaction (new transaction id,
/// same owner) takes them back without touching the table; a conflicting request revokes
/// them, after which the owner requests them anew.
#[test]
fn inherited_intention_locks_are_kept_claimed_and_revoked() {
    let m = Arc::new(mgr_inherit());
    let mut t1 = TxnLocks::new(1);
    m.lock(&mut t1, rec(1, 1), X).unwrap();
    m.release_all(&mut t1);
    let acquired = m.stats().acquired; // counted at release_all
                                       // Database IX and table IX are parked; the page and record locks are gone.
    assert_eq!(t1.kept(), 2);
    assert_eq!(m.active_heads(), 2);
    let d = m.dump();
    assert!(d.contains("Database: 1:IX(kept)"), "{d}");
    assert!(d.contains("Table(1): 1:IX(kept)"), "{d}");

    // The next transaction of the same owner claims them: only page and record are new.
    t1.reset(100);
    m.lock(&mut t1, rec(1, 2), X).unwrap();
    assert_eq!(t1.held(LockId::Table(1)), Some(IX));
    assert_eq!(t1.held(LockId::Database), Some(IX));
    m.release_all(&mut t1);
    let s = m.stats();
    assert_eq!(s.inherited, 2);
    assert_eq!(s.acquired - acquired, 2, "page and record only");
    assert_eq!(s.revoked, 0);

    // A table S conflicts with the parked IX: revoked, and S is granted at once (the
    // parked database IX stays: IS is compatible with it).
    let mut t2 = TxnLocks::new(2);
    m.lock(&mut t2, LockId::Table(1), S).unwrap();
    assert_eq!(m.stats().revoked, 1);
    let d = m.dump();
    assert!(d.contains("Table(1): 2:S\n"), "{d}");
    assert!(d.contains("Database: 1:IX(kept) 2:IS\n"), "{d}");

    // The owner's next write there finds its lock revoked and must wait for t2's S.
    let m1 = m.clone();
    let h1 = std::thread::spawn(move || {
        t1.reset(101);
        m1.lock(&mut t1, rec(1, 3), X).unwrap();
        assert_eq!(t1.held(LockId::Table(1)), Some(IX));
        m1.release_all(&mut t1);
        t1
    });
    until_waits(&m, 1);
    assert!(m.dump().contains("Table(1): 2:S 1?IX"), "{}", m.dump());
    m.release_all(&mut t2);
    let mut t1 = h1.join().unwrap();
    assert_eq!(m.stats().inherited, 3, "the database IX was claimed again");
    // Nothing is left once both owners stop.
    m.release_kept(&mut t1);
    m.release_kept(&mut t2);
    assert_eq!(m.active_heads(), 0);
    let s = m.stats();
    assert_eq!(s.acquired - s.upgrades, s.released + s.revoked);
}

/// A kept lock in use by a transaction that another one waits behind is released at that
/// transaction's end, not parked (else the waiter would wait for an idle owner forever).
#[test]
fn kept_lock_with_a_waiter_is_released_not_parked() {
    let m = Arc::new(mgr_inherit());
    let mut t1 = TxnLocks::new(1);
    m.lock(&mut t1, rec(1, 1), X).unwrap();
    m.release_all(&mut t1);
    t1.reset(10);
    m.lock(&mut t1, rec(1, 2), X).unwrap(); // claims the kept table IX: in use
    let m2 = m.clone();
    let h2 = std::thread::spawn(move || {
        let mut t2 = TxnLocks::new(2);
        m2.lock(&mut t2, LockId::Table(1), X).unwrap();
        m2.release_all(&mut t2);
        m2.release_kept(&mut t2);
    });
    until_waits(&m, 1);
    m.release_all(&mut t1);
    // The table IX went back to the table (t2 got its X); the database IX stays kept.
    assert_eq!(t1.kept(), 1);
    h2.join().unwrap();
    m.release_kept(&mut t1);
    assert_eq!(m.active_heads(), 0);
    assert_eq!(m.stats().revoked, 0, "nothing parked was in the way");
}

/// Deadlock detection sees a kept lock as held by its owner, whichever of the owner's
/// transactions took it: the owner's next transaction closes a cycle through it.
#[test]
fn deadlock_through_an_inherited_lock_is_detected() {
    let m = Arc::new(mgr_inherit());
    let mut t1 = TxnLocks::new(1);
    m.lock(&mut t1, rec(1, 1), S).unwrap(); // IS on table 1, kept below
    m.release_all(&mut t1);
    t1.reset(50);
    m.lock(&mut t1, rec(1, 1), X).unwrap(); // claims IS, upgrades it to IX
    let mut t2 = TxnLocks::new(2);
    m.lock(&mut t2, rec(2, 1), X).unwrap();
    let m2 = m.clone();
    let h2 = std::thread::spawn(move || {
        // Waits for t1's table IX (taken by t1's earlier transaction, upgraded by this one).
        let r = m2.lock(&mut t2, LockId::Table(1), X);
        m2.release_all(&mut t2);
        m2.release_kept(&mut t2);
        r
    });
    // t2 is queued and registered as waiting before t1 joins, so t1 closes the cycle.
    rt::wait_until(rt::WaitKind::Other, None, || m.detector.registered() == 1);
    // t1 now waits for t2: the cycle closes through the inherited lock; t1 is the victim.
    assert_eq!(
        m.lock(&mut t1, rec(2, 1), S),
        Err(api::Error::Conflict("deadlock"))
    );
    m.release_all(&mut t1);
    h2.join().unwrap().unwrap();
    m.release_kept(&mut t1);
    assert_eq!(m.active_heads(), 0);
    assert_eq!(m.stats().deadlocks, 1);
    assert_eq!(m.detector.registered(), 0);
}

/// Escalation (a no-wait table upgrade) revokes other owners' parked intention locks
/// instead of failing on them.
#[test]
fn escalation_revokes_parked_intention_locks() {
    let m = LockManager::new(LockConfig {
        partitions: 64,
        escalation_threshold: 2,
        ..LockConfig::default()
    });
    let mut t1 = TxnLocks::new(1);
    m.lock(&mut t1, rec(3, 1), X).unwrap();
    m.release_all(&mut t1);
    let mut t2 = TxnLocks::new(2);
    for s in 10..13 {
        m.lock(&mut t2, rec(3, s), X).unwrap();
    }
    assert_eq!(t2.held(LockId::Table(3)), Some(X));
    let s = m.stats();
    assert_eq!((s.escalations, s.escalation_failures, s.revoked), (1, 0, 1));
    m.release_all(&mut t2);
    m.release_kept(&mut t2);
    m.release_kept(&mut t1);
    assert_eq!(m.active_heads(), 0);
}

/// A partition is built holding the heads a first lock there would otherwise allocate:
/// one lock at a time, over every partition, leaves the table as it was built (the state
/// a load leaves, which a reopened engine must start in: issue 41), and more heads at once
/// are trimmed back to `IDLE_HEADS_MAX`, never below the built ones.
#[test]
fn partitions_start_as_a_history_of_single_locks_leaves_them() {
    use table::{BUILT_HEADS, IDLE_HEADS_MAX};
    let table = LockTable::new(8);
    let built = table.shape();
    assert!(
        built
            .iter()
            .all(|&(n, cap)| n == BUILT_HEADS && n >= 1 && cap >= IDLE_HEADS_MAX),
        "a partition built without its idle head or room: {built:?}"
    );
    let w = Arc::new(Waiter::new());
    let mut wake = Vec::new();
    // One resource at a time, 50 per partition on average: no partition needs a second
    // head, so nothing is allocated or renamed into a new head.
    for slot in 0..400u16 {
        let id = rec(1, slot);
        let mut b = table.latch(id);
        assert_eq!(b.acquire(7, id, None, X, &w, true, None), Outcome::Granted);
        b.release(7, id, &mut wake);
    }
    assert_eq!(
        table.shape(),
        built,
        "single locks changed the table's shape"
    );
    // Many at once: partitions grow, then give back all but IDLE_HEADS_MAX.
    let ids: Vec<LockId> = (0..400u16).map(|s| rec(2, s)).collect();
    for &id in &ids {
        let mut b = table.latch(id);
        assert_eq!(b.acquire(9, id, None, S, &w, true, None), Outcome::Granted);
    }
    assert_eq!(table.heads(), ids.len());
    assert!(table.shape().iter().all(|&(n, _)| n > IDLE_HEADS_MAX));
    for &id in &ids {
        table.latch(id).release(9, id, &mut wake);
    }
    assert_eq!(table.heads(), 0);
    assert!(
        table.shape().iter().all(|&(n, _)| n == IDLE_HEADS_MAX),
        "emptied partitions keep IDLE_HEADS_MAX heads: {:?}",
        table.shape()
    );
    assert!(wake.is_empty());
}
