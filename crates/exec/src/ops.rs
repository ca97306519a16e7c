//! The operators: scan, hash join, hash aggregation, sort, top-N. Each takes and gives
//! materialized rows, except [`scan_each`] and [`scan_aggregate`], which fold rows as
//! the engine's scan passes them; a plan is a function calling them in order.

use crate::expr::{Datum, Expr, Row};
use api::{Dir, IndexId, Reader, Result};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::ops::Bound;

/// Rows of `index` in `lo..hi` that `keep` accepts, as `project` makes them; the
/// predicate and projection run inside the engine's scan callback, on the row bytes.
pub fn scan(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    keep: impl Fn(&[u8]) -> bool,
    project: impl Fn(&[u8]) -> Row,
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    scan_each(s, index, lo, hi, |r| {
        if keep(r) {
            out.push(project(r));
        }
    })?;
    Ok(out)
}

/// The rows `sql` gives on an engine that runs SQL ([`Reader::query`]), as datums: how
/// a query's SQL text answers where the built-in engines run its plan.
pub fn query_rows(s: &mut dyn Reader, sql: &str) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    s.query(sql, &mut |vals| {
        out.push(vals.iter().map(Datum::from).collect())
    })?;
    Ok(out)
}

/// Hand each row of `index` in `lo..hi` to `f`, inside the engine's scan callback:
/// nothing is copied out unless `f` keeps it (a consumer folding rows as they pass).
pub fn scan_each(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    mut f: impl FnMut(&[u8]),
) -> Result<()> {
    s.scan(index, lo, hi, Dir::Forward, usize::MAX, &mut |_, r| {
        f(r);
        true
    })?;
    Ok(())
}

/// [`scan`] then [`hash_aggregate`] grouped by the projection's first `group` columns,
/// without materializing the scanned rows: each kept row is projected and folded into
/// its group inside the engine's scan callback, then dropped. The same rows as the
/// two steps give.
#[allow(clippy::too_many_arguments)] // a scan's four and an aggregation's three
pub fn scan_aggregate(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    keep: impl Fn(&[u8]) -> bool,
    project: impl Fn(&[u8]) -> Row,
    group: usize,
    aggs: &[Agg],
) -> Result<Vec<Row>> {
    let mut a = Aggregator::new(group, aggs);
    scan_each(s, index, lo, hi, |r| {
        if keep(r) {
            let row = project(r);
            a.add(&row[..group], &row);
        }
    })?;
    Ok(a.finish())
}

/// Inner equi-join: for each probe row, each build row with equal key columns, output
/// `probe ++ build`, in probe order (build rows in their order).
pub fn hash_join(
    build: &[Row],
    build_key: &[usize],
    probe: &[Row],
    probe_key: &[usize],
) -> Vec<Row> {
    assert_eq!(
        build_key.len(),
        probe_key.len(),
        "join keys of different lengths"
    );
    let mut table: HashMap<Vec<&Datum>, Vec<usize>> = HashMap::with_capacity(build.len());
    for (i, r) in build.iter().enumerate() {
        table
            .entry(build_key.iter().map(|&c| &r[c]).collect())
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for p in probe {
        let k: Vec<&Datum> = probe_key.iter().map(|&c| &p[c]).collect();
        if let Some(matches) = table.get(&k) {
            for &i in matches {
                let mut r = p.clone();
                r.extend(build[i].iter().cloned());
                out.push(r);
            }
        }
    }
    out
}

/// An aggregate over a group's rows.
#[derive(Debug, Clone)]
pub enum Agg {
    Sum(Expr),
    Count,
    Min(Expr),
    Max(Expr),
    /// The sum and the count, for an average the plan rounds at its own scale.
    SumCount(Expr),
}

fn fold(state: &mut [Datum], aggs: &[Agg], r: &[Datum], first: bool) {
    let mut at = 0;
    for a in aggs {
        match a {
            Agg::Sum(e) => {
                let v = e.int(r);
                state[at] = Datum::Int(if first { v } else { state[at].int() + v });
            }
            Agg::Count => state[at] = Datum::Int(if first { 1 } else { state[at].int() + 1 }),
            Agg::Min(e) => {
                let v = e.eval(r);
                if first || v < state[at] {
                    state[at] = v;
                }
            }
            Agg::Max(e) => {
                let v = e.eval(r);
                if first || v > state[at] {
                    state[at] = v;
                }
            }
            Agg::SumCount(e) => {
                let v = e.int(r);
                state[at] = Datum::Int(if first { v } else { state[at].int() + v });
                at += 1;
                state[at] = Datum::Int(if first { 1 } else { state[at].int() + 1 });
            }
        }
        at += 1;
    }
}

fn width(aggs: &[Agg]) -> usize {
    aggs.iter()
        .map(|a| if matches!(a, Agg::SumCount(_)) { 2 } else { 1 })
        .sum()
}

/// A hash aggregation fed one row at a time ([`hash_aggregate`] over a batch,
/// [`scan_aggregate`] inside a scan): groups in the order they first appear.
#[derive(Debug)]
pub struct Aggregator<'a> {
    aggs: &'a [Agg],
    group: usize,
    width: usize,
    index: HashMap<Vec<Datum>, usize>,
    out: Vec<(Row, Vec<Datum>)>,
}

impl<'a> Aggregator<'a> {
    /// An aggregation of `aggs` over groups of `group` key columns.
    pub fn new(group: usize, aggs: &'a [Agg]) -> Aggregator<'a> {
        Aggregator {
            aggs,
            group,
            width: width(aggs),
            index: HashMap::new(),
            out: Vec::new(),
        }
    }

    /// Fold row `r` into the group `key` (a key is copied only when its group is new).
    pub fn add(&mut self, key: &[Datum], r: &[Datum]) {
        debug_assert_eq!(key.len(), self.group, "a group key of the wrong width");
        let (i, first) = match self.index.get(key) {
            Some(&i) => (i, false),
            None => {
                self.index.insert(key.to_vec(), self.out.len());
                self.out
                    .push((key.to_vec(), vec![Datum::Int(0); self.width]));
                (self.out.len() - 1, true)
            }
        };
        fold(&mut self.out[i].1, self.aggs, r, first);
    }

    /// The groups' rows: key columns, then the aggregates. No key columns: one row,
    /// even for no input (sums and counts 0, min/max `Int(0)`).
    pub fn finish(mut self) -> Vec<Row> {
        if self.group == 0 && self.out.is_empty() {
            self.out.push((Vec::new(), vec![Datum::Int(0); self.width]));
        }
        self.out
            .into_iter()
            .map(|(mut k, a)| {
                k.extend(a);
                k
            })
            .collect()
    }
}

/// Group `rows` by the `group` columns and compute `aggs` per group: output rows are
/// the group's columns followed by the aggregates (`SumCount`: two columns), in the
/// order groups first appear. No group columns: one row, even for no input (then
/// sums and counts are 0 and min/max are `Int(0)`, as a plan must know).
pub fn hash_aggregate(rows: &[Row], group: &[usize], aggs: &[Agg]) -> Vec<Row> {
    let mut a = Aggregator::new(group.len(), aggs);
    let mut key = Vec::with_capacity(group.len());
    for r in rows {
        key.clear();
        key.extend(group.iter().map(|&c| r[c].clone()));
        a.add(&key, r);
    }
    a.finish()
}

/// A sort key: a column, ascending or not.
#[derive(Debug, Clone, Copy)]
pub struct SortKey {
    pub col: usize,
    pub asc: bool,
}

fn compare(keys: &[SortKey], a: &[Datum], b: &[Datum]) -> Ordering {
    for k in keys {
        let o = a[k.col].cmp(&b[k.col]);
        let o = if k.asc { o } else { o.reverse() };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Sort by `keys` (stable: equal rows keep their order).
pub fn sort(rows: &mut [Row], keys: &[SortKey]) {
    rows.sort_by(|a, b| compare(keys, a, b));
}

/// The first `n` rows in `keys` order, as [`sort`] then truncate would give, with a
/// heap of `n` rows (ties broken by input order, as the stable sort does).
pub fn top_n(rows: Vec<Row>, keys: &[SortKey], n: usize) -> Vec<Row> {
    struct Entry<'k> {
        keys: &'k [SortKey],
        seq: usize,
        row: Row,
    }
    impl Ord for Entry<'_> {
        fn cmp(&self, o: &Self) -> Ordering {
            compare(self.keys, &self.row, &o.row).then(self.seq.cmp(&o.seq))
        }
    }
    impl PartialOrd for Entry<'_> {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl PartialEq for Entry<'_> {
        fn eq(&self, o: &Self) -> bool {
            self.cmp(o) == Ordering::Equal
        }
    }
    impl Eq for Entry<'_> {}
    if n == 0 {
        return Vec::new();
    }
    // A max-heap of the best n so far: its top is the worst of them.
    let mut heap = BinaryHeap::with_capacity(n + 1);
    for (seq, row) in rows.into_iter().enumerate() {
        heap.push(Entry { keys, seq, row });
        if heap.len() > n {
            heap.pop();
        }
    }
    heap.into_sorted_vec().into_iter().map(|e| e.row).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rows(max_key: i64) -> impl Strategy<Value = Vec<Row>> {
        prop::collection::vec(
            (0..max_key, -50i64..50, "[ab]{0,2}").prop_map(|(k, v, s)| {
                vec![Datum::Int(k), Datum::Int(v), Datum::Str(s.into_bytes())]
            }),
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
}
