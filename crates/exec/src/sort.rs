//! Sort and top-N (`sort` in reports).

use crate::expr::{Datum, Row};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
