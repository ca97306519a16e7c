//! The scan operators (`q-scan` in reports): rows out of an engine's scan
//! (`api::Reader::scan`), the plan's predicate and projection applied inside the
//! engine's scan callback so rejected rows are never copied out; [`scan_aggregate`]
//! folds the kept rows into a hash aggregation inside the same callback.

use crate::aggregate::{Agg, Aggregator};
use crate::expr::Row;
use api::{Dir, IndexId, Reader, Result};
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

/// [`scan`] then [`crate::hash_aggregate`] grouped by the projection's first `group` columns,
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
