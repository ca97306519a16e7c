//! The hash join (`hash-join` in reports).

use crate::expr::{Datum, Row};
use rustc_hash::FxHashMap;

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
    let mut table: FxHashMap<Vec<&Datum>, Vec<usize>> =
        FxHashMap::with_capacity_and_hasher(build.len(), Default::default());
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
