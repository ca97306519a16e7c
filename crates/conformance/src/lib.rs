//! `conformance`: engine-generic correctness tests every engine design must pass. Each
//! function builds its own small schema, opens a fresh engine `E` with the given options
//! (its thread count is set by the test), runs real threads, retries conflicts, and
//! panics with a message naming the violated property. `primary` picks the primary
//! index kind of the tables (scans then go through a B+tree secondary index where the
//! primary is a hash index).
//!
//! This crate must never depend on a particular engine under test (the serial oracle
//! aside), and never accept an outcome a
//! serializable engine could not produce.
//!
//! [`crash`]: the engine-generic crash test on the simulated disk. [`logged`]: the
//! fixture of the logging in-memory engines' recovery tests. [`tests!`]: the suite as
//! `#[test]` functions.
//!
//! A crate of its own, a dev-dependency of the engines' tests: the API (`api`) must
//! never know an engine, and this suite needs one (the serial oracle, `engine_serial`).

pub mod crash;
pub mod logged;
mod suite;

// For `tests!`, which expands in the engines' test crates.
pub use suite::KINDS;
#[doc(hidden)]
pub use {api, rt};

use api::key::Key;
use api::typed::{KeyEnc, Part, SqlType};
use api::{
    Dir, Engine, EngineOptions, Error, IndexId, IndexKind, Schema, Session, TableDef, TableId,
};
use engine_serial::SerialEngine;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const TRIES: usize = 100_000;

fn open<E: Engine>(schema: Schema, opts: &EngineOptions, threads: usize) -> E {
    let mut o = opts.clone();
    o.threads = threads;
    match E::open(Arc::new(schema), &o) {
        Ok(e) => e,
        Err(err) => panic!("conformance: {} failed to open: {err}", E::NAME),
    }
}

fn k32(v: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(v);
    k
}
fn k32x2(a: u32, b: u32) -> Key {
    let mut k = Key::new();
    k.push_u32(a).push_u32(b);
    k
}
// Typed declarations (`api::typed`), so that adapters to SQL systems run the suite.
const U32: SqlType = SqlType::Int {
    bytes: 4,
    signed: false,
};
const I64: SqlType = SqlType::Int {
    bytes: 8,
    signed: true,
};

/// A table of one i64 per u32 key (the key held by the key only).
fn counter_table(name: &str, primary: IndexKind, rows: u64) -> TableDef {
    TableDef::new(name, 8, primary, rows)
        .columns(&[("val", I64, 0)])
        .primary_key(&[Part::key_only("id", KeyEnc::U32)])
}

fn get_i64(row: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(row[at..at + 8].try_into().unwrap())
}
fn put_i64(row: &mut [u8], at: usize, v: i64) {
    row[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A small deterministic generator (xorshift), so the api crate needs no RNG dependency.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Widen the window between a transaction's reads and its writes, so concurrent
/// transactions overlap even on few cores (not a timing assumption: only more overlap).
fn pause() {
    for _ in 0..500 {
        std::hint::spin_loop();
    }
    std::thread::yield_now();
}

/// How a test runs its concurrent transaction streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// One thread each.
    Threads,
    /// All as coroutines on the calling thread; the seed picks the coroutine that runs
    /// at every wait and operation entry (`rt::coro::Policy::Seeded`).
    Coroutines(u64),
    /// All as coroutines on the calling thread under STEPS with teams of at most this
    /// many (`rt::coro::Policy::Steps`).
    Steps(usize),
    /// All as coroutines on the calling thread, switching in turn at waits and at index
    /// probes (`rt::coro::Policy::Interleave`, `--interleave`).
    Interleave,
}

type Body<'a> = Box<dyn FnOnce() + Send + 'a>;

fn concurrently(how: Concurrency, bodies: Vec<Body<'_>>) {
    match how {
        Concurrency::Threads => std::thread::scope(|sc| {
            for b in bodies {
                sc.spawn(b);
            }
        }),
        Concurrency::Coroutines(seed) => {
            let bodies = bodies.into_iter().map(|b| b as Box<dyn FnOnce()>).collect();
            rt::coro::run(rt::coro::Policy::Seeded(seed), bodies);
        }
        Concurrency::Steps(team) => {
            let bodies = bodies.into_iter().map(|b| b as Box<dyn FnOnce()>).collect();
            rt::coro::run(rt::coro::Policy::Steps { team }, bodies);
        }
        Concurrency::Interleave => {
            let bodies = bodies.into_iter().map(|b| b as Box<dyn FnOnce()>).collect();
            rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies);
        }
    }
}

/// A barrier that waits through `rt` (a thread's coroutines meet at it without
/// blocking the thread).
struct Barrier {
    n: usize,
    arrived: AtomicUsize,
}

impl Barrier {
    fn new(n: usize) -> Self {
        Barrier {
            n,
            arrived: AtomicUsize::new(0),
        }
    }
    fn wait(&self) {
        // Arrival k (counting from 0) belongs to round k / n, which ends when all n
        // have arrived.
        let k = self.arrived.fetch_add(1, Ordering::AcqRel);
        let end = (k / self.n + 1) * self.n;
        rt::wait_until(rt::WaitKind::Other, None, || {
            self.arrived.load(Ordering::Acquire) >= end
        });
    }
}

/// Every concurrent test, its streams run as coroutines on this thread under `seed`.
pub fn all_under_seed<E: Engine>(opts: &EngineOptions, primary: IndexKind, seed: u64) {
    all_under::<E>(opts, primary, Concurrency::Coroutines(seed));
}

/// Every concurrent test, its streams run as coroutines on this thread under STEPS
/// with teams of at most `team`.
pub fn all_under_steps<E: Engine>(opts: &EngineOptions, primary: IndexKind, team: usize) {
    all_under::<E>(opts, primary, Concurrency::Steps(team));
}

pub fn all_under<E: Engine>(opts: &EngineOptions, primary: IndexKind, how: Concurrency) {
    transfers_keep_total_under::<E>(opts, primary, how);
    scans_never_see_partial_txn_under::<E>(opts, primary, how);
    write_skew_prevented_under::<E>(opts, primary, how);
    phantom_insert_detected_under::<E>(opts, primary, how);
}

fn expect_ok<T>(what: &str, r: api::Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("conformance: {what}: {e}"),
    }
}

fn finish<E: Engine>(e: E) {
    expect_ok("shutdown", e.shutdown());
}

/// Concurrent transfers between accounts never change the total, and every committed
/// read-only transaction that reads all accounts sees the total.
pub fn transfers_keep_total<E: Engine>(opts: &EngineOptions, primary: IndexKind) {
    transfers_keep_total_under::<E>(opts, primary, Concurrency::Threads)
}

/// [`transfers_keep_total`] with its transaction streams run as `how` says.
pub fn transfers_keep_total_under<E: Engine>(
    opts: &EngineOptions,
    primary: IndexKind,
    how: Concurrency,
) {
    const ACCTS: u32 = 16;
    const START: i64 = 1000;
    const THREADS: usize = 4;
    let mut s = Schema::new();
    let t = s.add(counter_table("acct", primary, ACCTS as u64));
    let e: E = open(s, opts, THREADS);
    let mut ses = Session::new(e.worker(0));
    expect_ok(
        "load",
        ses.run(0, |s| {
            for a in 0..ACCTS {
                s.insert(t, &k32(a), &START.to_le_bytes())?;
            }
            Ok(())
        }),
    );
    drop(ses);
    let mut bodies: Vec<Body<'_>> = Vec::new();
    for w in 0..THREADS {
        let e = &e;
        bodies.push(Box::new(move || {
            let mut s = Session::new(e.worker(w));
            let mut rng = Rng::new(w as u64 + 1);
            for i in 0..400 {
                if i % 10 == 0 {
                    let total = expect_ok(
                        "audit",
                        s.run_retry(1, TRIES, |s| {
                            let mut sum = 0;
                            for a in 0..ACCTS {
                                // A missing account shows up as a wrong total.
                                s.get(t, &k32(a), |r| sum += get_i64(r, 0))?;
                            }
                            Ok(sum)
                        }),
                    );
                    assert_eq!(
                        total,
                        START * ACCTS as i64,
                        "conformance: a committed audit saw a partial transfer"
                    );
                    continue;
                }
                let a = rng.below(ACCTS as u64) as u32;
                let b = (a + 1 + rng.below(ACCTS as u64 - 1) as u32) % ACCTS;
                let x = rng.below(50) as i64;
                expect_ok(
                    "transfer",
                    s.run_retry(2, TRIES, |s| {
                        let mut bal = 0;
                        s.get(t, &k32(a), |r| bal = get_i64(r, 0))?;
                        s.update(t, &k32(a), |r| put_i64(r, 0, get_i64(r, 0) - x))?;
                        pause();
                        s.update(t, &k32(b), |r| put_i64(r, 0, get_i64(r, 0) + x))?;
                        let _ = bal;
                        Ok(())
                    }),
                );
            }
        }));
    }
    concurrently(how, bodies);
    let mut s = Session::new(e.worker(0));
    let total = expect_ok(
        "final sum",
        s.run(0, |s| {
            let mut sum = 0;
            for a in 0..ACCTS {
                s.get(t, &k32(a), |r| sum += get_i64(r, 0))?;
            }
            Ok(sum)
        }),
    );
    assert_eq!(
        total,
        START * ACCTS as i64,
        "conformance: transfers changed the total"
    );
    drop(s);
    finish(e);
}

/// Pairs schema: key (pair, half), row (pair u32, group u32 = pair % 4, val i64); a
/// non-unique secondary index on the group.
fn pairs_schema(primary: IndexKind) -> (Schema, TableId) {
    let mut s = Schema::new();
    let t = s.add(
        TableDef::new("pairs", 16, primary, 1024)
            .with_secondary("by_group", false, |row, k| {
                k.push_u32(u32::from_le_bytes(row[4..8].try_into().unwrap()));
            })
            .columns(&[("pair", U32, 0), ("grp", U32, 4), ("val", I64, 8)])
            .primary_key(&[
                Part::col("pair", KeyEnc::U32),
                Part::key_only("half", KeyEnc::U32),
            ])
            .secondary_key("by_group", &[Part::col("grp", KeyEnc::U32)]),
    );
    (s, t)
}

fn pair_row(pair: u32, val: i64) -> [u8; 16] {
    let mut r = [0u8; 16];
    r[0..4].copy_from_slice(&pair.to_le_bytes());
    r[4..8].copy_from_slice(&(pair % 4).to_le_bytes());
    put_i64(&mut r, 8, val);
    r
}

/// Scans (both directions, primary and secondary indexes) in committed transactions
/// never see a transaction's writes partly: writers insert, update and delete rows in
/// pairs whose values sum to zero.
pub fn scans_never_see_partial_txn<E: Engine>(opts: &EngineOptions, primary: IndexKind) {
    scans_never_see_partial_txn_under::<E>(opts, primary, Concurrency::Threads)
}

/// [`scans_never_see_partial_txn`] with its transaction streams run as `how` says.
pub fn scans_never_see_partial_txn_under<E: Engine>(
    opts: &EngineOptions,
    primary: IndexKind,
    how: Concurrency,
) {
    const WRITERS: usize = 2;
    const PAIRS: u64 = 40;
    let (schema, t) = pairs_schema(primary);
    let e: E = open(schema, opts, WRITERS + 1);
    let mut bodies: Vec<Body<'_>> = Vec::new();
    for w in 0..WRITERS {
        let e = &e;
        bodies.push(Box::new(move || {
            let mut s = Session::new(e.worker(w));
            let mut rng = Rng::new(100 + w as u64);
            for _ in 0..600 {
                let p = rng.below(PAIRS) as u32;
                let x = rng.below(1000) as i64;
                let op = rng.below(3);
                let consistent = expect_ok(
                    "pair writer",
                    s.run_retry(1, TRIES, |s| {
                        // OCC engines may show a doomed transaction an inconsistent
                        // view; only a committed one must not have seen one.
                        let dup = |r: api::Result<()>| match r {
                            Err(Error::Duplicate) => Err(Error::Conflict("inconsistent view")),
                            r => r,
                        };
                        let present = s.get(t, &k32x2(p, 0), |_| {})?;
                        let mut consistent = true;
                        if !present {
                            dup(s.insert(t, &k32x2(p, 0), &pair_row(p, x)))?;
                            pause();
                            dup(s.insert(t, &k32x2(p, 1), &pair_row(p, -x)))?;
                        } else if op == 0 {
                            consistent &= s.delete(t, &k32x2(p, 0))?;
                            pause();
                            consistent &= s.delete(t, &k32x2(p, 1))?;
                        } else {
                            s.update(t, &k32x2(p, 0), |r| put_i64(r, 8, get_i64(r, 8) + x))?;
                            consistent &=
                                s.update(t, &k32x2(p, 1), |r| put_i64(r, 8, get_i64(r, 8) - x))?;
                        }
                        Ok(consistent)
                    }),
                );
                assert!(
                    consistent,
                    "conformance: a committed writer saw half of pair {p}"
                );
            }
        }));
    }
    let er = &e;
    bodies.push(Box::new(move || {
        let mut s = Session::new(er.worker(WRITERS));
        for i in 0..300 {
            let dir = if i % 2 == 0 {
                Dir::Forward
            } else {
                Dir::Backward
            };
            let use_secondary = primary == IndexKind::Hash || i % 4 >= 2;
            let index = if use_secondary {
                t.secondary(0)
            } else {
                t.primary()
            };
            let (n, sum, ordered) = expect_ok(
                "pair scanner",
                s.run_retry(2, TRIES, |s| scan_pairs(s, index, dir)),
            );
            assert!(
                ordered,
                "conformance: scan returned keys out of order ({dir:?})"
            );
            assert!(
                n % 2 == 0 && sum == 0,
                "conformance: committed scan saw a partial transaction \
                     ({n} rows, sum {sum}, {dir:?}, secondary {use_secondary})"
            );
        }
    }));
    concurrently(how, bodies);
    finish(e);
}

/// One scan of the pairs table's `index` in direction `dir`: the rows seen, the sum
/// of their values, and whether the keys came in order.
fn scan_pairs<W: api::Worker>(
    s: &mut Session<W>,
    index: IndexId,
    dir: Dir,
) -> api::Result<(u64, i64, bool)> {
    let (mut n, mut sum, mut ordered) = (0u64, 0i64, true);
    let mut prev: Option<Key> = None;
    s.scan(
        index,
        Bound::Unbounded,
        Bound::Unbounded,
        dir,
        usize::MAX,
        |k, r| {
            if let Some(p) = &prev {
                let inorder = match dir {
                    Dir::Forward => p.as_bytes() < k,
                    Dir::Backward => p.as_bytes() > k,
                };
                ordered &= inorder;
            }
            prev = Some(Key::from_bytes(k));
            n += 1;
            sum += get_i64(r, 8);
            true
        },
    )?;
    Ok((n, sum, ordered))
}

/// Two transactions that each read both of two rows and write one of them cannot both
/// commit on a stale view (write skew): "at least one on call" holds after every round.
pub fn write_skew_prevented<E: Engine>(opts: &EngineOptions, primary: IndexKind) {
    write_skew_prevented_under::<E>(opts, primary, Concurrency::Threads)
}

/// [`write_skew_prevented`] with its transaction streams run as `how` says.
pub fn write_skew_prevented_under<E: Engine>(
    opts: &EngineOptions,
    primary: IndexKind,
    how: Concurrency,
) {
    const ROUNDS: usize = 150;
    let mut s = Schema::new();
    let t = s.add(counter_table("oncall", primary, 2));
    let e: E = open(s, opts, 2);
    let violation = parking_lot::Mutex::new(Vec::<String>::new());
    let barrier = Barrier::new(2);
    let mut s0 = Session::new(e.worker(0));
    expect_ok(
        "load",
        s0.run(0, |s| {
            s.insert(t, &k32(0), &1i64.to_le_bytes())?;
            s.insert(t, &k32(1), &1i64.to_le_bytes())
        }),
    );
    drop(s0);
    let mut bodies: Vec<Body<'_>> = Vec::new();
    for w in 0..2u32 {
        let (e, barrier, violation) = (&e, &barrier, &violation);
        bodies.push(Box::new(move || {
            let mut s = Session::new(e.worker(w as usize));
            for round in 0..ROUNDS {
                barrier.wait();
                expect_ok(
                    "go off call",
                    s.run_retry(1, TRIES, |s| {
                        let mut on = 0;
                        s.get(t, &k32(0), |r| on += get_i64(r, 0))?;
                        s.get(t, &k32(1), |r| on += get_i64(r, 0))?;
                        pause();
                        if on >= 2 {
                            s.update(t, &k32(w), |r| put_i64(r, 0, 0))?;
                        }
                        Ok(())
                    }),
                );
                barrier.wait();
                if w == 0 {
                    let on = expect_ok(
                        "check and reset",
                        s.run_retry(2, TRIES, |s| {
                            let mut on = 0;
                            s.get(t, &k32(0), |r| on += get_i64(r, 0))?;
                            s.get(t, &k32(1), |r| on += get_i64(r, 0))?;
                            s.update(t, &k32(0), |r| put_i64(r, 0, 1))?;
                            s.update(t, &k32(1), |r| put_i64(r, 0, 1))?;
                            Ok(on)
                        }),
                    );
                    if on < 1 {
                        // Recorded, not panicked: the other thread waits at the barrier.
                        violation.lock().push(format!(
                            "conformance: write skew in round {round} (nobody on call)"
                        ));
                    }
                }
            }
        }));
    }
    concurrently(how, bodies);
    let violations = violation.into_inner();
    if !violations.is_empty() {
        panic!(
            "{} violations:\n{}",
            violations.len(),
            violations.join("\n")
        );
    }
    finish(e);
}

/// A transaction that scans a range and then inserts into it, splitting the leaves it
/// read, never fails its own phantom check; and the split does not hide a phantom: a
/// row another transaction commits into either half before it commits still makes it
/// abort. B+tree primary index (`primary` must support scans). Optimistic engines: under
/// locking the other inserter would wait for this transaction, which waits for it.
pub fn own_splits_keep_phantom_checks<E: Engine>(opts: &EngineOptions, primary: IndexKind) {
    let (schema, t) = pairs_schema(primary);
    let e: E = open(schema, opts, 2);
    let scan_and_fill = |s: &mut Session<E::Worker<'_>>, pair: u32| -> api::Result<()> {
        let (lo, hi) = (k32(pair), k32(pair + 1));
        let mut n = 0;
        s.scan(
            t.primary(),
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            Dir::Forward,
            10,
            |_, _| {
                n += 1;
                true
            },
        )?;
        assert_eq!(n, 0, "conformance: pair {pair} starts empty");
        // Enough rows to split the leaf the scan read, several times over.
        for i in 0..200u32 {
            s.insert(t, &k32x2(pair, 2 * i), &pair_row(pair, 1))?;
        }
        Ok(())
    };
    // Alone: commits at its first attempt.
    let mut a = Session::new(e.worker(0));
    expect_ok(
        "scan, fill and split alone",
        a.run(0, |s| scan_and_fill(s, 1)),
    );
    // Another transaction commits a row into the left half (odd key 1) or the right half
    // (odd key 397) between the split and the commit: a phantom.
    for (pair, other) in [(2u32, 1u32), (3, 397)] {
        let barrier = Barrier::new(2);
        std::thread::scope(|sc| {
            let (e, barrier) = (&e, &barrier);
            sc.spawn(move || {
                let mut b = Session::new(e.worker(1));
                barrier.wait();
                expect_ok(
                    "insert into the split range",
                    b.run_retry(0, TRIES, |s| {
                        s.insert(t, &k32x2(pair, other), &pair_row(pair, 2))
                    }),
                );
                barrier.wait();
            });
            let r = a.run(0, |s| {
                scan_and_fill(s, pair)?;
                barrier.wait();
                barrier.wait();
                Ok(())
            });
            assert!(
                matches!(r, Err(Error::Conflict(_))),
                "conformance: a row committed into a leaf split by a transaction that \
                 read it (pair {pair}, key {other}) must fail its phantom check; got {r:?}"
            );
        });
    }
    drop(a);
    finish(e);
}

/// Phantoms: "insert if none exists" decided by a range scan (through the secondary index,
/// or the primary B+tree) or by a lookup of an absent key never lets two concurrent
/// transactions both insert.
pub fn phantom_insert_detected<E: Engine>(opts: &EngineOptions, primary: IndexKind) {
    phantom_insert_detected_under::<E>(opts, primary, Concurrency::Threads)
}

/// [`phantom_insert_detected`] with its transaction streams run as `how` says.
pub fn phantom_insert_detected_under<E: Engine>(
    opts: &EngineOptions,
    primary: IndexKind,
    how: Concurrency,
) {
    const ROUNDS: u32 = 150;
    let (schema, t) = pairs_schema(primary);
    let e: E = open(schema, opts, 2);
    let violation = parking_lot::Mutex::new(Vec::<String>::new());
    let barrier = Barrier::new(2);
    let mut bodies: Vec<Body<'_>> = Vec::new();
    for w in 0..2u32 {
        let (e, barrier, violation) = (&e, &barrier, &violation);
        bodies.push(Box::new(move || {
            let mut s = Session::new(e.worker(w as usize));
            for round in 0..ROUNDS {
                let variant = round % 3;
                barrier.wait();
                expect_ok(
                    "insert if none",
                    s.run_retry(1, TRIES, |s| {
                        // Pairs `round` hold this round's rows; group = round % 4.
                        let exists = match variant {
                            0 => {
                                // Lookup of the other thread's (absent) key.
                                s.get(t, &k32x2(round, 1 - w), |_| {})?
                            }
                            1 if primary == IndexKind::BTree => {
                                let lo = k32(round);
                                let hi = k32(round + 1);
                                let mut n = 0;
                                s.scan(
                                    t.primary(),
                                    Bound::Included(&lo),
                                    Bound::Excluded(&hi),
                                    if w == 0 { Dir::Forward } else { Dir::Backward },
                                    10,
                                    |_, _| {
                                        n += 1;
                                        true
                                    },
                                )?;
                                n > 0
                            }
                            _ => {
                                let g = k32(round % 4);
                                let mut n = 0;
                                s.scan(
                                    t.secondary(0),
                                    Bound::Included(&g),
                                    Bound::Included(&g.prefix_end().unwrap()),
                                    Dir::Forward,
                                    usize::MAX,
                                    |_, r| {
                                        let pair = u32::from_le_bytes(r[0..4].try_into().unwrap());
                                        n += (pair == round) as u32;
                                        true
                                    },
                                )?;
                                n > 0
                            }
                        };
                        pause();
                        if !exists {
                            s.insert(t, &k32x2(round, w), &pair_row(round, 1))?;
                        }
                        Ok(())
                    }),
                );
                barrier.wait();
                if w == 0 {
                    let n = expect_ok(
                        "count",
                        s.run_retry(2, TRIES, |s| {
                            let mut n = 0;
                            for h in 0..2 {
                                n += s.get(t, &k32x2(round, h), |_| {})? as u32;
                            }
                            Ok(n)
                        }),
                    );
                    if n != 1 {
                        violation.lock().push(format!(
                            "conformance: phantom in round {round} (variant {variant}): \
                                 {n} inserts"
                        ));
                    }
                }
            }
        }));
    }
    concurrently(how, bodies);
    let violations = violation.into_inner();
    if !violations.is_empty() {
        panic!(
            "{} violations:\n{}",
            violations.len(),
            violations.join("\n")
        );
    }
    finish(e);
}

/// CRUD schema: key u32; row (pk u32, m u32 = pk % 7, val i64, npk u32 = !pk, 4 zero
/// bytes); a non-unique secondary on `m` and a unique one on `npk` (secondary keys
/// never change on update).
fn crud_schema(primary: IndexKind) -> (Schema, TableId) {
    let mut s = Schema::new();
    let t = s.add(
        TableDef::new("crud", 24, primary, 256)
            .with_secondary("by_mod", false, |row, k| {
                k.push_u32(u32::from_le_bytes(row[4..8].try_into().unwrap()));
            })
            .with_secondary("by_not", true, |row, k| {
                k.push_u32(u32::from_le_bytes(row[16..20].try_into().unwrap()));
            })
            .columns(&[
                ("pk", U32, 0),
                ("m", U32, 4),
                ("val", I64, 8),
                ("npk", U32, 16),
            ])
            .primary_key(&[Part::col("pk", KeyEnc::U32)])
            .secondary_key("by_mod", &[Part::col("m", KeyEnc::U32)])
            .secondary_key("by_not", &[Part::col("npk", KeyEnc::U32)]),
    );
    (s, t)
}

fn crud_row(pk: u32, val: i64) -> [u8; 24] {
    let mut r = [0u8; 24];
    r[0..4].copy_from_slice(&pk.to_le_bytes());
    r[4..8].copy_from_slice(&(pk % 7).to_le_bytes());
    put_i64(&mut r, 8, val);
    r[16..20].copy_from_slice(&(!pk).to_le_bytes());
    r
}

#[derive(Clone, Debug)]
enum CrudOp {
    Get(u32),
    Insert(u32, i64),
    Update(u32, i64),
    Delete(u32),
    /// The last flag: through `scan_part` (the value's bytes only).
    Scan(u16, Option<u32>, Option<u32>, bool, usize, bool),
    /// `get_part` of the value's bytes, and of bytes 4..20 (across three words).
    GetPart(u32),
    /// `update_part` of the value's bytes.
    UpdatePart(u32, i64),
    /// `get_batch` of three keys (repeats allowed), and `get_part_batch` of the value's
    /// bytes of the same keys.
    GetBatch([u32; 3]),
    /// `update_row_batch` of three keys (a repeated key is changed twice), then
    /// `update_head_batch` of the same keys.
    UpdateBatch([u32; 3], i64),
}

fn run_crud<W: api::Worker>(
    s: &mut Session<W>,
    t: TableId,
    primary: IndexKind,
    ops: &[CrudOp],
    commit: bool,
) -> api::Result<Vec<String>> {
    let mut out = Vec::new();
    s.begin(0)?;
    let r = (|| {
        for op in ops {
            out.push(crud_op(s, t, primary, op)?);
        }
        Ok(())
    })();
    match r {
        Ok(()) if commit => {
            s.commit()?;
            out.push("commit".into());
        }
        Ok(()) => {
            s.abort();
            out.push("abort".into());
        }
        Err(Error::Duplicate) => {
            s.abort();
            out.push("duplicate, abort".into());
        }
        Err(e) => {
            s.abort();
            return Err(e);
        }
    }
    Ok(out)
}

/// One operation of `run_crud` and what it saw, as a line.
fn crud_op<W: api::Worker>(
    s: &mut Session<W>,
    t: TableId,
    primary: IndexKind,
    op: &CrudOp,
) -> api::Result<String> {
    Ok(match *op {
        CrudOp::Get(k) => {
            let mut v = None;
            let f = s.get(t, &k32(k), |r| v = Some(get_i64(r, 8)))?;
            format!("get {k}: {f} {v:?}")
        }
        CrudOp::Insert(k, v) => {
            s.insert(t, &k32(k), &crud_row(k, v))?;
            format!("insert {k}: ok")
        }
        CrudOp::Update(k, d) => {
            let f = s.update(t, &k32(k), |r| put_i64(r, 8, get_i64(r, 8) + d))?;
            format!("update {k}: {f}")
        }
        CrudOp::Delete(k) => format!("delete {k}: {}", s.delete(t, &k32(k))?),
        CrudOp::GetPart(k) => {
            let mut v = None;
            let f = s.get_part(t, &k32(k), 8..16, |r| v = Some(get_i64(r, 0)))?;
            let mut w = None;
            s.get_part(t, &k32(k), 4..20, |r| w = Some(r.to_vec()))?;
            format!("get_part {k}: {f} {v:?} {w:?}")
        }
        CrudOp::UpdatePart(k, d) => {
            let f = s.update_part(t, &k32(k), 8..16, |r| put_i64(r, 0, get_i64(r, 0) + d))?;
            format!("update_part {k}: {f}")
        }
        CrudOp::GetBatch(ks) => {
            let mut v = Vec::new();
            let n = s.get_batch(
                t,
                ks.len(),
                |i| k32(ks[i]),
                |i, r| v.push((i, get_i64(r, 8))),
            )?;
            let mut w = Vec::new();
            let m = s.get_part_batch(
                t,
                ks.len(),
                |i| k32(ks[i]),
                8..16,
                |i, r| w.push((i, get_i64(r, 0))),
            )?;
            format!("get_batch {ks:?}: {n} {v:?} {m} {w:?}")
        }
        CrudOp::UpdateBatch(ks, d) => {
            let mut seen = Vec::new();
            let n = s.update_row_batch(
                t,
                ks.len(),
                |i| k32(ks[i]),
                |i, r: &mut [u8; 24]| {
                    let v = get_i64(r, 8);
                    seen.push((i, v));
                    put_i64(r, 8, v + d + i as i64);
                },
            )?;
            // And the rows' heads (the key's and the value's bytes).
            let mut heads = Vec::new();
            let m = s.update_head_batch(
                t,
                ks.len(),
                |i| k32(ks[i]),
                |i, h: &mut [u8; 16]| {
                    let v = get_i64(h, 8);
                    heads.push((i, v));
                    put_i64(h, 8, v - 2 * d);
                },
            )?;
            format!("update_batch {ks:?}: {n} {seen:?}; heads {m} {heads:?}")
        }
        CrudOp::Scan(ix, lo, hi, fwd, limit, part) => {
            crud_scan(s, t, primary, (ix, lo, hi, fwd, limit, part))?
        }
    })
}

/// `CrudOp::Scan`: (index, low and high key, forward, limit, values only) as `run_crud`
/// runs it (the primary index of a hash table is scanned through its first secondary).
fn crud_scan<W: api::Worker>(
    s: &mut Session<W>,
    t: TableId,
    primary: IndexKind,
    (ix, lo, hi, fwd, limit, part): (u16, Option<u32>, Option<u32>, bool, usize, bool),
) -> api::Result<String> {
    let ix = if ix == 0 && primary == IndexKind::Hash {
        1
    } else {
        ix
    };
    let index = IndexId {
        table: t,
        index: ix,
    };
    // Bounds as keys of the scanned index (a u32 prefix in all three).
    let (lo_k, hi_k) = (lo.map(k32), hi.map(k32));
    let lo_b = lo_k
        .as_ref()
        .map_or(Bound::Unbounded, |k| Bound::Included(k.as_bytes()));
    let hi_b = hi_k
        .as_ref()
        .map_or(Bound::Unbounded, |k| Bound::Excluded(k.as_bytes()));
    let dir = if fwd { Dir::Forward } else { Dir::Backward };
    let mut seen = Vec::new();
    let n = if part {
        s.scan_part(index, lo_b, hi_b, dir, limit, 8..16, |k, r| {
            seen.push((k.to_vec(), get_i64(r, 0)));
            true
        })?
    } else {
        s.scan(index, lo_b, hi_b, dir, limit, |k, r| {
            seen.push((k.to_vec(), get_i64(r, 8)));
            true
        })?
    };
    Ok(format!(
        "scan ix{ix} {lo:?}..{hi:?} {dir:?} limit {limit}: {n} {seen:?}"
    ))
}

/// A random single-threaded sequence of transactions (gets, inserts, updates, deletes,
/// scans over all indexes both ways with limits, commits and aborts) gives exactly the
/// results it gives on the serial reference engine.
pub fn crud_matches_serial<E: Engine>(opts: &EngineOptions, primary: IndexKind) {
    const KEYS: u64 = 120;
    let (schema, t) = crud_schema(primary);
    let e: E = open(schema.clone(), opts, 1);
    let oracle: SerialEngine = open(schema, &EngineOptions::default(), 1);
    let mut se = Session::new(e.worker(0));
    let mut so = Session::new(oracle.worker(0));
    let mut rng = Rng::new(7);
    for txn in 0..1500 {
        let n = 1 + rng.below(8);
        let ops: Vec<CrudOp> = (0..n)
            .map(|_| {
                let k = rng.below(KEYS) as u32;
                match rng.below(12) {
                    0..=1 => CrudOp::Get(k),
                    2..=4 => CrudOp::Insert(k, rng.below(1000) as i64),
                    5..=6 => CrudOp::Update(k, rng.below(100) as i64 - 50),
                    7 => CrudOp::Delete(k),
                    8 => CrudOp::GetPart(k),
                    9 => CrudOp::UpdatePart(k, rng.below(100) as i64 - 50),
                    10 if rng.below(2) == 0 => {
                        let ks = [k, rng.below(KEYS) as u32, rng.below(KEYS) as u32];
                        if rng.below(2) == 0 {
                            CrudOp::GetBatch(ks)
                        } else {
                            CrudOp::UpdateBatch(ks, rng.below(100) as i64 - 50)
                        }
                    }
                    _ => {
                        let ix = rng.below(3) as u16;
                        // Bounds in each index's key space: pk, pk % 7, or !pk.
                        let b = |rng: &mut Rng| match ix {
                            0 => rng.below(KEYS + 2) as u32,
                            1 => rng.below(9) as u32,
                            _ => u32::MAX - rng.below(KEYS + 2) as u32,
                        };
                        let lo = (rng.below(3) > 0).then(|| b(&mut rng));
                        let hi = (rng.below(3) > 0).then(|| b(&mut rng));
                        // Ordered bounds (the serial engine's BTreeMap rejects inverted ones).
                        let (lo, hi) = match (lo, hi) {
                            (Some(l), Some(h)) if l > h => (Some(h), Some(l)),
                            other => other,
                        };
                        let (fwd, limit) = (rng.below(2) == 0, rng.below(12) as usize);
                        CrudOp::Scan(ix, lo, hi, fwd, limit, rng.below(3) == 0)
                    }
                }
            })
            .collect();
        let commit = rng.below(5) > 0;
        let want = expect_ok("serial oracle", run_crud(&mut so, t, primary, &ops, commit));
        let mut tries = 0;
        let got = loop {
            match run_crud(&mut se, t, primary, &ops, commit) {
                Ok(v) => break v,
                Err(Error::Conflict(_)) if tries < 100 => tries += 1,
                Err(e) => panic!("conformance: {} txn {txn} {ops:?}: {e}", E::NAME),
            }
        };
        assert_eq!(
            got,
            want,
            "conformance: {} differs from serial in txn {txn}",
            E::NAME
        );
    }
    // Final contents through every index.
    let final_ops: Vec<CrudOp> = (0..KEYS as u32)
        .map(CrudOp::Get)
        .chain((0..3).map(|ix| CrudOp::Scan(ix, None, None, true, usize::MAX, false)))
        .collect();
    let want = expect_ok(
        "serial final",
        run_crud(&mut so, t, primary, &final_ops, true),
    );
    let got = expect_ok("final", run_crud(&mut se, t, primary, &final_ops, true));
    assert_eq!(
        got,
        want,
        "conformance: {} final contents differ from serial",
        E::NAME
    );
    drop(se);
    drop(so);
    finish(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_agree_with_rows() {
        for kind in [IndexKind::BTree, IndexKind::Hash] {
            let t = counter_table("acct", kind, 4);
            t.check_declaration().unwrap();
            t.check_row(&k32(3), &(-5i64).to_le_bytes()).unwrap();
            let (s, p) = pairs_schema(kind);
            let p = s.table(p);
            p.check_declaration().unwrap();
            p.check_row(&k32x2(6, 1), &pair_row(6, -9)).unwrap();
            let (s, c) = crud_schema(kind);
            let c = s.table(c);
            c.check_declaration().unwrap();
            c.check_row(&k32(11), &crud_row(11, 40)).unwrap();
            assert!(c.is_typed() && p.is_typed());
            // A row whose key disagrees with it is caught.
            assert!(c.check_row(&k32(12), &crud_row(11, 40)).is_err());
        }
    }

    #[test]
    fn serial_engine_conforms() {
        let o = EngineOptions::default();
        for kind in [IndexKind::BTree, IndexKind::Hash] {
            transfers_keep_total::<SerialEngine>(&o, kind);
            scans_never_see_partial_txn::<SerialEngine>(&o, kind);
            write_skew_prevented::<SerialEngine>(&o, kind);
            phantom_insert_detected::<SerialEngine>(&o, kind);
            crud_matches_serial::<SerialEngine>(&o, kind);
        }
    }

    #[test]
    fn serial_engine_conforms_under_seeded_coroutines() {
        let o = EngineOptions::default();
        rt::coro::each_seed("serial conformance", 16, |seed| {
            let kind = if seed % 2 == 0 {
                IndexKind::BTree
            } else {
                IndexKind::Hash
            };
            all_under_seed::<SerialEngine>(&o, kind, seed);
        });
    }

    #[test]
    fn serial_engine_conforms_under_steps() {
        let o = EngineOptions::default();
        for (i, team) in [1, 2, 4, 8].into_iter().enumerate() {
            let kind = [IndexKind::BTree, IndexKind::Hash][i % 2];
            all_under_steps::<SerialEngine>(&o, kind, team);
        }
    }
}
