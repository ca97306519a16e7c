//! The operators' properties against naive computations.

use crate::*;
use proptest::prelude::*;

fn rows(max_key: i64) -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (0..max_key, -50i64..50, "[ab]{0,2}")
            .prop_map(|(k, v, s)| vec![Datum::Int(k), Datum::Int(v), Datum::Str(s.into_bytes())]),
        0..40,
    )
}

proptest! {
    #[test]
    fn hash_join_equals_nested_loops(b in rows(6), p in rows(6)) {
        let got = hash_join(&b, &[0, 2], &p, &[0, 2]);
        let mut want = Vec::new();
        for x in &p {
            for y in &b {
                if x[0] == y[0] && x[2] == y[2] {
                    let mut r = x.clone();
                    r.extend(y.iter().cloned());
                    want.push(r);
                }
            }
        }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn hash_aggregate_equals_a_naive_grouping(r in rows(5)) {
        let got = hash_aggregate(
            &r,
            &[0],
            &[Agg::Sum(Expr::col(1)), Agg::Count, Agg::Min(Expr::col(2)), Agg::Max(Expr::col(1)), Agg::SumCount(Expr::col(1))],
        );
        let mut keys: Vec<Datum> = Vec::new();
        for x in &r {
            if !keys.contains(&x[0]) {
                keys.push(x[0].clone());
            }
        }
        let want: Vec<Row> = keys
            .into_iter()
            .map(|k| {
                let g: Vec<&Row> = r.iter().filter(|x| x[0] == k).collect();
                let sum: i64 = g.iter().map(|x| x[1].int()).sum();
                vec![
                    k,
                    Datum::Int(sum),
                    Datum::Int(g.len() as i64),
                    g.iter().map(|x| x[2].clone()).min().unwrap(),
                    g.iter().map(|x| x[1].clone()).max().unwrap(),
                    Datum::Int(sum),
                    Datum::Int(g.len() as i64),
                ]
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn merged_partial_aggregations_equal_one(r in rows(5), cuts in prop::collection::vec(0usize..40, 0..3)) {
        // The rows cut in consecutive parts (as a scan on several threads cuts its key
        // range), each aggregated alone, merged in order: the one aggregation's rows.
        let aggs = [Agg::Sum(Expr::col(1)), Agg::Count, Agg::Min(Expr::col(2)), Agg::Max(Expr::col(1)), Agg::SumCount(Expr::col(1))];
        let want = hash_aggregate(&r, &[0], &aggs);
        let mut at: Vec<usize> = cuts.into_iter().map(|c| c.min(r.len())).collect();
        at.sort_unstable();
        at.push(r.len());
        let (mut from, mut whole) = (0, None::<Aggregator>);
        for to in at {
            let mut a = Aggregator::new(1, &aggs);
            for x in &r[from..to] {
                a.add(&x[..1], x);
            }
            from = to;
            match &mut whole {
                Some(w) => w.merge(a),
                None => whole = Some(a),
            }
        }
        prop_assert_eq!(whole.unwrap().finish(), want);
    }

    #[test]
    fn sort_and_top_n_agree_with_std(r in rows(5), n in 0usize..50) {
        let keys = [SortKey { col: 0, asc: false }, SortKey { col: 2, asc: true }];
        let mut want = r.clone();
        want.sort_by(|a, b| b[0].cmp(&a[0]).then(a[2].cmp(&b[2])));
        let mut got = r.clone();
        sort(&mut got, &keys);
        prop_assert_eq!(&got, &want);
        want.truncate(n);
        prop_assert_eq!(top_n(r, &keys, n), want);
    }
}

#[test]
fn a_global_aggregate_of_nothing_is_one_row() {
    let got = hash_aggregate(&[], &[], &[Agg::Sum(Expr::col(0)), Agg::Count]);
    assert_eq!(got, vec![vec![Datum::Int(0), Datum::Int(0)]]);
}
