//! `exec::scan` over a real engine: the predicate and projection run in the scan's
//! callback, and a small plan (scan, join, aggregate, sort) gives what a naive
//! computation over the same rows gives.

use api::{Engine, EngineOptions, IndexKind, Schema, Session, TableDef, TableId};
use engine_serial::SerialEngine;
use exec::{hash_aggregate, hash_join, scan, scan_aggregate, sort, Agg, Datum, Expr, SortKey};
use std::ops::Bound;
use std::sync::Arc;

fn key(k: u32) -> api::Key {
    let mut x = api::Key::new();
    x.push_u32(k);
    x
}

#[test]
fn a_plan_over_two_tables_agrees_with_a_naive_computation() {
    let mut schema = Schema::new();
    let a = schema.add(TableDef::new("a", 8, IndexKind::BTree, 100));
    let b = schema.add(TableDef::new("b", 8, IndexKind::BTree, 10));
    let e = SerialEngine::open(Arc::new(schema), &EngineOptions::default()).unwrap();
    let mut s = Session::new(e.worker(0));
    s.begin(0).unwrap();
    // a: (id, group = id % 10); b: (group, weight = group * 3).
    for i in 0..100u32 {
        let row = [i.to_le_bytes(), (i % 10).to_le_bytes()].concat();
        s.insert(a, &key(i), &row).unwrap();
    }
    for g in 0..10u32 {
        let row = [g.to_le_bytes(), (g * 3).to_le_bytes()].concat();
        s.insert(b, &key(g), &row).unwrap();
    }
    let u32_at = |r: &[u8], at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap()) as i64;
    let read = |s: &mut Session<_>, t: TableId, keep: &(dyn Fn(&[u8]) -> bool + Sync)| {
        scan(
            s,
            t.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            keep,
            |r| vec![Datum::Int(u32_at(r, 0)), Datum::Int(u32_at(r, 4))],
        )
        .unwrap()
    };
    // a.id >= 50, joined to b on the group, summed weight per group, heaviest first.
    let ra = read(&mut s, a, &|r| u32_at(r, 0) >= 50);
    assert_eq!(ra.len(), 50);
    let rb = read(&mut s, b, &|_| true);
    s.commit().unwrap();
    let joined = hash_join(&rb, &[0], &ra, &[1]);
    let mut agg = hash_aggregate(&joined, &[1], &[Agg::Sum(Expr::col(3)), Agg::Count]);
    sort(&mut agg, &[SortKey { col: 1, asc: false }]);
    let want: Vec<Vec<Datum>> = (0..10i64)
        .rev()
        .map(|g| vec![Datum::Int(g), Datum::Int(5 * g * 3), Datum::Int(5)])
        .collect();
    assert_eq!(agg, want);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// `scan_aggregate` (rows folded inside the engine's scan, none materialized) gives
    /// the rows of the materializing path, `scan` then `hash_aggregate`, for any data,
    /// predicate and grouping width.
    #[test]
    fn scan_aggregate_equals_scan_then_hash_aggregate(
        rows in proptest::collection::vec((0u32..6, 0u32..100, 0u32..3), 0..60),
        cut in 0u32..100,
        group in 0usize..3,
    ) {
        let mut schema = Schema::new();
        let t = schema.add(TableDef::new("t", 12, IndexKind::BTree, 100));
        let e = SerialEngine::open(Arc::new(schema), &EngineOptions::default()).unwrap();
        let mut s = Session::new(e.worker(0));
        s.begin(0).unwrap();
        for (i, (g, v, h)) in rows.iter().enumerate() {
            let row = [g.to_le_bytes(), v.to_le_bytes(), h.to_le_bytes()].concat();
            s.insert(t, &key(i as u32), &row).unwrap();
        }
        let at = |r: &[u8], o: usize| i64::from(u32::from_le_bytes(r[o..o + 4].try_into().unwrap()));
        let keep = |r: &[u8]| at(r, 4) >= i64::from(cut);
        // (g, "h" as a string, v): grouped by the first `group` columns.
        let project = |r: &[u8]| {
            vec![
                Datum::Int(at(r, 0)),
                Datum::Str(at(r, 8).to_string().into_bytes()),
                Datum::Int(at(r, 4)),
            ]
        };
        let aggs = [
            Agg::Sum(Expr::col(2)),
            Agg::Count,
            Agg::Min(Expr::col(1)),
            Agg::Max(Expr::col(2)),
            Agg::SumCount(Expr::col(0)),
        ];
        let (lo, hi) = (Bound::Unbounded, Bound::Unbounded);
        let got = scan_aggregate(&mut s, t.primary(), lo, hi, keep, project, group, &aggs).unwrap();
        let rows = scan(&mut s, t.primary(), lo, hi, keep, project).unwrap();
        s.commit().unwrap();
        let cols: Vec<usize> = (0..group).collect();
        proptest::prop_assert_eq!(got, hash_aggregate(&rows, &cols, &aggs));
    }
}
