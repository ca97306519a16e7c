//! `--interleave`: index probes prefetch the line they need next and reach
//! `rt::Point::Probe`, where `rt::coro::Policy::Interleave` switches to another
//! transaction. The switches happen (counted) with company, never for a lone
//! transaction, and interleaved transactions still read exactly what was written; the
//! concurrent conformance tests pass with their streams interleaved at probes.

use api::{Engine, EngineOptions, IndexKind, Schema, Session, TableDef, TableId};
use conformance::Concurrency;
use engine_memory::{MemoryEngine, MemoryOptions};
use std::sync::Arc;

const KEYS: u64 = 5_000;

/// Every lookup switches (`probe_min_bytes` 0): the tests' table is small.
fn every_probe() -> MemoryOptions {
    MemoryOptions {
        probe_min_bytes: Some(0),
        ..MemoryOptions::default()
    }
}

fn loaded(kind: IndexKind, workers: usize) -> (MemoryEngine, TableId) {
    loaded_with(kind, workers, every_probe(), KEYS)
}

/// `KEYS` rows of 100 bytes in a table declared to expect `expected` rows.
fn loaded_with(
    kind: IndexKind,
    workers: usize,
    own: MemoryOptions,
    expected: u64,
) -> (MemoryEngine, TableId) {
    let mut s = Schema::new();
    let t = s.add(TableDef::new("t", 100, kind, expected));
    let opts = EngineOptions {
        threads: workers,
        ..EngineOptions::default()
    }
    .with_own(own);
    let e = MemoryEngine::open(Arc::new(s), &opts).unwrap();
    let mut ses = Session::new(e.worker(0));
    ses.run(0, |s| {
        for k in 0..KEYS {
            s.insert(t, &k.to_be_bytes(), &[k as u8; 100])?;
        }
        Ok(())
    })
    .unwrap();
    drop(ses);
    (e, t)
}

/// `n` transaction streams on this thread, each reading 200 keys one transaction at a
/// time and checking every row; returns the scheduler's statistics.
fn read_interleaved(e: &MemoryEngine, t: TableId, n: usize) -> rt::coro::Stats {
    let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..n)
        .map(|c| {
            Box::new(move || {
                let mut s = Session::new(e.worker(c));
                for i in 0..200u64 {
                    let k = (i * 37 + c as u64 * 1009) % KEYS;
                    let found = s
                        .run(0, |s| {
                            s.get(t, &k.to_be_bytes(), |r| assert_eq!(r, [k as u8; 100]))
                        })
                        .unwrap();
                    assert!(found, "key {k} missing");
                }
                let absent = s.run(0, |s| s.get(t, &KEYS.to_be_bytes(), |_| {})).unwrap();
                assert!(!absent);
            }) as Box<dyn FnOnce() + '_>
        })
        .collect();
    rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies)
}

#[test]
fn probes_switch_with_company_and_never_alone() {
    for kind in [IndexKind::Hash, IndexKind::BTree] {
        let (e, t) = loaded(kind, 4);
        let st = read_interleaved(&e, t, 4);
        // Hash: the bucket, then the entry (with the record); B+tree: the record (the
        // tree is too small for a node below its top two levels).
        let per_get = if kind == IndexKind::Hash { 2 } else { 1 };
        assert!(
            st.probe_switches >= (4 * 200 * per_get - 4 * per_get) as u64,
            "{kind:?}: {st:?}"
        );
        let st = read_interleaved(&e, t, 1);
        assert_eq!(
            st.probe_switches, 0,
            "{kind:?}: a lone transaction never switches"
        );
        assert_eq!(st.switches, 1);
    }
}

#[test]
fn conformance_with_streams_interleaved_at_probes() {
    for kind in [IndexKind::BTree, IndexKind::Hash] {
        conformance::all_under::<MemoryEngine>(
            &EngineOptions::default().with_own(every_probe()),
            kind,
            Concurrency::Interleave,
        );
    }
}

/// 4 streams of 50 transactions on this thread, each hinting 10 keys
/// (`Session::prefetch`) and then reading them, checking every row.
const HINTS: u64 = 10;
const HINTED_TXNS: u64 = 4 * 50;

fn hinted_reads(e: &MemoryEngine, t: TableId) -> rt::coro::Stats {
    let bodies: Vec<Box<dyn FnOnce() + '_>> = (0..4usize)
        .map(|c| {
            Box::new(move || {
                let mut s = Session::new(e.worker(c));
                for i in 0..50u64 {
                    s.run(0, |s| {
                        let keys: Vec<u64> = (0..HINTS)
                            .map(|j| (i * 97 + j * 13 + c as u64 * 1009) % KEYS)
                            .collect();
                        for k in &keys {
                            s.prefetch(t, &k.to_be_bytes());
                        }
                        for &k in &keys {
                            let found =
                                s.get(t, &k.to_be_bytes(), |r| assert_eq!(r, [k as u8; 100]))?;
                            assert!(found, "key {k} missing");
                        }
                        Ok(())
                    })
                    .unwrap();
                }
            }) as Box<dyn FnOnce() + '_>
        })
        .collect();
    rt::coro::run(rt::coro::Policy::INTERLEAVE, bodies)
}

/// Hash lookups a transaction hinted take no probe point: the switches come once per
/// hint burst (`fetch_hinted`: before its bucket lines, after its records), not twice
/// per lookup; the rows read are still the right ones.
#[test]
fn hinted_lookups_switch_once_per_burst() {
    let (e, t) = loaded(IndexKind::Hash, 4);
    let st = hinted_reads(&e, t);
    // 2 switches per transaction, against 2 per lookup (2 x 10) without quiet lookups.
    assert!(st.probe_switches >= 2 * HINTED_TXNS - 8, "{st:?}");
    assert!(st.probe_switches <= 2 * HINTED_TXNS, "{st:?}");
}

/// `MemoryOptions::ignore_hints` (`--no-prefetch-hints`): the hints are dropped, so each
/// lookup asks for its own lines and takes its own two probe points (bucket, record), as
/// an unhinted one does; the rows read are the same.
#[test]
fn ignored_hints_leave_each_lookup_its_own_points() {
    let own = MemoryOptions {
        ignore_hints: true,
        ..every_probe()
    };
    let (e, t) = loaded_with(IndexKind::Hash, 4, own, KEYS);
    let st = hinted_reads(&e, t);
    let lookups = HINTS * HINTED_TXNS;
    assert!(st.probe_switches >= 2 * lookups - 8, "{st:?}");
}

/// `MemoryOptions::probe_min_bytes`: by default (`PROBE_MIN_BYTES`) lookups in a table
/// expected to stay small (5,000 rows of 100 bytes, under 1 MiB) reach no probe point,
/// so interleaved transactions never switch inside them, and still read every row
/// right; the same rows in a table declared to expect 100,000 (over 4 MiB) switch.
#[test]
fn small_tables_take_no_probe_points() {
    for kind in [IndexKind::Hash, IndexKind::BTree] {
        let (e, t) = loaded_with(kind, 4, MemoryOptions::default(), KEYS);
        let st = read_interleaved(&e, t, 4);
        assert_eq!(st.probe_switches, 0, "{kind:?}: {st:?}");
        drop(e);
        let (e, t) = loaded_with(kind, 4, MemoryOptions::default(), 100_000);
        let st = read_interleaved(&e, t, 4);
        let per_get = if kind == IndexKind::Hash { 2 } else { 1 };
        assert!(
            st.probe_switches >= (4 * 200 * per_get - 4 * per_get) as u64,
            "{kind:?}: {st:?}"
        );
    }
}
