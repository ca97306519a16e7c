//! The scan operators (`q-scan` in reports): rows out of an engine's scan
//! (`api::Reader::scan`), the plan's predicate and projection applied inside the
//! engine's scan callback so rejected rows are never copied out; [`scan_aggregate`]
//! folds the kept rows into a hash aggregation inside the same callback.
//!
//! With more than one query thread (`Reader::query_threads`), [`scan`] and
//! [`scan_aggregate`] split the key range into that many parts and have the engine
//! scan them on a thread each (`Reader::scan_parts`): each part keeps its own rows or
//! partial aggregation, merged in key order afterwards, so the answer is the serial
//! scan's row for row. An engine that cannot scan on several threads within the
//! transaction says so, and the scan runs serially.

use crate::aggregate::{Agg, Aggregator};
use crate::expr::Row;
use api::engine::ScanSink;
use api::session::Padded;
use api::{Dir, IndexId, Reader, Result};
use std::ops::Bound;

/// Rows of `index` in `lo..hi` that `keep` accepts, as `project` makes them; the
/// predicate and projection run inside the engine's scan callback, on the row bytes.
pub fn scan(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    keep: impl Fn(&[u8]) -> bool + Sync,
    project: impl Fn(&[u8]) -> Row + Sync,
) -> Result<Vec<Row>> {
    let keep_row = |out: &mut Vec<Row>, r: &[u8]| {
        if keep(r) {
            out.push(project(r));
        }
    };
    // Parts in key order: their rows concatenated are the serial scan's.
    scan_fold(s, index, lo, hi, Vec::new, keep_row, |out, p| out.extend(p))
}

/// Hand each row of `index` in `lo..hi` to `f`, inside the engine's scan callback:
/// nothing is copied out unless `f` keeps it (a consumer folding rows as they pass).
/// Always on the caller's thread (`f` is one consumer).
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

/// Fold each row of `index` in `lo..hi` into a state (`init`, then `fold` per row,
/// inside the engine's scan callback). With several query threads each part folds into
/// its own state and `merge` folds the later parts' states into the first, in key
/// order: the caller's `merge` must make that the serial fold's state (sums, counts,
/// sets).
pub fn scan_fold<S: Send>(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    init: impl Fn() -> S,
    fold: impl Fn(&mut S, &[u8]) + Sync,
    mut merge: impl FnMut(&mut S, S),
) -> Result<S> {
    if let Some(parts) = scan_split(s, index, lo, hi, &init, &fold)? {
        let mut parts = parts.into_iter();
        let mut st = parts.next().expect("at least two parts");
        parts.for_each(|p| merge(&mut st, p));
        return Ok(st);
    }
    let mut st = init();
    scan_each(s, index, lo, hi, |r| fold(&mut st, r))?;
    Ok(st)
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
    keep: impl Fn(&[u8]) -> bool + Sync,
    project: impl Fn(&[u8]) -> Row + Sync,
    group: usize,
    aggs: &[Agg],
) -> Result<Vec<Row>> {
    let fold = |a: &mut Aggregator<'_>, r: &[u8]| {
        if keep(r) {
            let row = project(r);
            a.add(&row[..group], &row);
        }
    };
    // Parts in key order: groups then appear in the serial scan's order.
    let init = || Aggregator::new(group, aggs);
    let a = scan_fold(s, index, lo, hi, init, fold, |a, p| a.merge(p))?;
    Ok(a.finish())
}

/// The scan of `lo..hi` on `s.query_threads()` threads: a state per part (`start`),
/// each row of the part folded into it by `each`, the states in key order. `None`:
/// one thread, fewer than two keys, or an engine that cannot (the caller scans
/// serially).
fn scan_split<S: Send>(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    start: impl Fn() -> S,
    each: impl Fn(&mut S, &[u8]) + Sync,
) -> Result<Option<Vec<S>>> {
    let n = s.query_threads();
    if n <= 1 {
        return Ok(None);
    }
    let Some(cuts) = split_points(s, index, lo, hi, n)? else {
        return Ok(None);
    };
    let mut parts = Vec::with_capacity(cuts.len() + 1);
    let mut from = lo;
    for c in &cuts {
        parts.push((from, Bound::Excluded(&c[..])));
        from = Bound::Included(&c[..]);
    }
    parts.push((from, hi));
    let mut states: Vec<Padded<S>> = parts.iter().map(|_| Padded(start())).collect();
    let each = &each;
    let mut sinks: Vec<Box<ScanSink<'_>>> = states
        .iter_mut()
        .map(|st| Box::new(move |_: &[u8], r: &[u8]| each(&mut st.0, r)) as Box<_>)
        .collect();
    let mut refs: Vec<&mut ScanSink<'_>> = sinks.iter_mut().map(|b| &mut **b as _).collect();
    let ran = s.scan_parts(index, &parts, &mut refs)?;
    drop(refs);
    drop(sinks);
    Ok(ran.then(|| states.into_iter().map(|s| s.0).collect()))
}

/// The first and last keys of `index` in `lo..hi`.
fn key_range(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut ends = [None, None];
    for (end, dir) in ends.iter_mut().zip([Dir::Forward, Dir::Backward]) {
        s.scan(index, lo, hi, dir, 1, &mut |k, _| {
            *end = Some(k.to_vec());
            false
        })?;
    }
    Ok(match ends {
        [Some(a), Some(b)] => Some((a, b)),
        _ => None,
    })
}

/// Up to `n - 1` ascending keys cutting the keys of `lo..hi` into `n` parts, evenly
/// spaced between its first and last keys read as numbers (their first 16 bytes, big
/// endian: the kits' keys are fixed-width big-endian integers first, so parts get
/// about as many rows each). Any cuts would be correct: a part is the keys from one
/// cut up to the next. `None`: fewer than two keys apart.
fn split_points(
    s: &mut dyn Reader,
    index: IndexId,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    n: usize,
) -> Result<Option<Vec<[u8; 16]>>> {
    let Some((first, last)) = key_range(s, index, lo, hi)? else {
        return Ok(None);
    };
    let num = |k: &[u8]| {
        let mut b = [0u8; 16];
        let m = k.len().min(16);
        b[..m].copy_from_slice(&k[..m]);
        u128::from_be_bytes(b)
    };
    let (a, b) = (num(&first), num(&last));
    let step = (b - a) / n as u128;
    if step == 0 {
        return Ok(None);
    }
    // Each cut above `first` (part 0 non-empty) and at most `last`.
    Ok(Some(
        (1..n as u128)
            .map(|i| (a + step * i).to_be_bytes())
            .collect(),
    ))
}
