//! Hash aggregation (`hash-agg` in reports): [`Aggregator`] fed a row at a time,
//! [`hash_aggregate`] over a batch.

use crate::expr::{Datum, Expr, Row};
use rustc_hash::FxHashMap;

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

/// Fold the states `b` of a group into its states `a` (both of `aggs`).
fn combine(a: &mut [Datum], aggs: &[Agg], b: &[Datum]) {
    let mut at = 0;
    for g in aggs {
        match g {
            Agg::Sum(_) | Agg::Count => a[at] = Datum::Int(a[at].int() + b[at].int()),
            Agg::Min(_) => {
                if b[at] < a[at] {
                    a[at] = b[at].clone();
                }
            }
            Agg::Max(_) => {
                if b[at] > a[at] {
                    a[at] = b[at].clone();
                }
            }
            Agg::SumCount(_) => {
                a[at] = Datum::Int(a[at].int() + b[at].int());
                at += 1;
                a[at] = Datum::Int(a[at].int() + b[at].int());
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
/// [`crate::scan_aggregate`] inside a scan): groups in the order they first appear.
#[derive(Debug)]
pub struct Aggregator<'a> {
    aggs: &'a [Agg],
    group: usize,
    width: usize,
    index: FxHashMap<Vec<Datum>, usize>,
    out: Vec<(Row, Vec<Datum>)>,
}

impl<'a> Aggregator<'a> {
    /// An aggregation of `aggs` over groups of `group` key columns.
    pub fn new(group: usize, aggs: &'a [Agg]) -> Aggregator<'a> {
        Aggregator {
            aggs,
            group,
            width: width(aggs),
            index: FxHashMap::default(),
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

    /// Fold in `other`'s groups (an aggregation of later rows over the same `aggs`):
    /// its new groups after this one's, in their order, as if its rows had come here.
    pub fn merge(&mut self, other: Aggregator<'_>) {
        for (key, st) in other.out {
            match self.index.get(&key) {
                Some(&i) => combine(&mut self.out[i].1, self.aggs, &st),
                None => {
                    self.index.insert(key.clone(), self.out.len());
                    self.out.push((key, st));
                }
            }
        }
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
