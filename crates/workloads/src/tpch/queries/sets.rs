//! What queries 15 to 22 share beyond `mod.rs`'s helpers: a scan that folds every row
//! into the caller's state (hash maps and sets built inside the engine's scan, where a
//! `Vec` per row would cost more than the row's use), a nation's key by name, a
//! projection of rows, and `LIKE '%a%b%'`.

use api::{Reader, Result, TableId};
use exec::Row;
use std::ops::Bound;

/// Call `f` on every row of `table` (a full scan of its primary index, the rows handed
/// over inside the engine's scan: `exec::scan_each`).
pub(super) fn each(s: &mut dyn Reader, table: TableId, f: impl FnMut(&[u8])) -> Result<()> {
    exec::scan_each(s, table.primary(), Bound::Unbounded, Bound::Unbounded, f)
}

/// Sums by key over every row of `table`: `f` gives a row's (key, addend), or `None`
/// for a row that does not count (on several query threads: a map per part, added up;
/// `exec::scan_fold`).
pub(super) fn sum_by(
    s: &mut dyn Reader,
    table: TableId,
    f: impl Fn(&[u8]) -> Option<(i64, i64)> + Sync,
) -> Result<super::HashMap<i64, i64>> {
    super::fold(
        s,
        table,
        |m: &mut super::HashMap<i64, i64>, r| {
            if let Some((k, v)) = f(r) {
                *m.entry(k).or_default() += v;
            }
        },
        |m, part| {
            for (k, v) in part {
                *m.entry(k).or_default() += v;
            }
        },
    )
}

/// The key of the nation named `name` (`None`: no such nation).
pub(super) fn nation_key(s: &mut dyn Reader, name: &str) -> Result<Option<i64>> {
    let named = super::nations_named(s, std::slice::from_ref(&name.to_string()))?;
    Ok(named.into_keys().next())
}

/// Each row's columns `cols`, in that order (a projection after a join).
pub(super) fn columns(rows: Vec<Row>, cols: &[usize]) -> Vec<Row> {
    rows.into_iter()
        .map(|r| cols.iter().map(|&c| r[c].clone()).collect())
        .collect()
}

/// `s LIKE '%a%b%'`: `a` occurs, and `b` after the end of it (the first `a` leaves the
/// most room).
pub(super) fn contains_in_order(s: &[u8], a: &[u8], b: &[u8]) -> bool {
    let find = |h: &[u8], n: &[u8]| h.windows(n.len()).position(|w| w == n);
    match find(s, a) {
        Some(i) => find(&s[i + a.len()..], b).is_some(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::contains_in_order;

    #[test]
    fn like_percent_a_percent_b_percent() {
        let t = |s: &str| contains_in_order(s.as_bytes(), b"Customer", b"Complaints");
        assert!(t("x Customer y Complaints z"));
        assert!(t("CustomerComplaints"));
        assert!(!t("Complaints Customer"));
        assert!(!t("customer Complaints"));
        assert!(!t("CustomComplaints"));
        assert!(t("Complaints Customer Complaints"));
        // Q13's `o_comment NOT LIKE '%special%requests%'`.
        let m = |s: &str| contains_in_order(s.as_bytes(), b"special", b"requests");
        assert!(m("a special x requests") && m("specialrequests"));
        assert!(!m("requests special") && !m("specialrequest"));
        assert!(m("requests special special requests"));
    }
}
