//! Q16: for the items whose I_DATA does not begin with `zz`, grouped by name, brand
//! (I_DATA's first three characters) and price, how many distinct suppliers without a
//! `bad` comment supply their stock.

use super::{i64c, strc, supplier_of, u32c, Sql};
use crate::chbench::schema::{Supplier, SUPPLIER};
use crate::tpcc::schema::{Item, Stock, ITEM, STOCK};
use api::{Reader, Result};
use exec::{Datum, Row, SortKey};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: i_name, brand, i_price (cents), supplier_cnt; by supplier_cnt descending, ties
/// by the other columns.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    // The NOT IN's suppliers: a comment containing `bad`.
    let mut bad: HashSet<i64> = HashSet::new();
    exec::scan_each(s, SUPPLIER.primary(), Unbounded, Unbounded, |r| {
        let c = strc(r, offset_of!(Supplier, su_comment), 101);
        if c.windows(3).any(|w| w == b"bad") {
            bad.insert(u32c(r, offset_of!(Supplier, su_suppkey)));
        }
    })?;
    // Items: id -> their group's place; the groups' keys.
    let mut group_of: HashMap<i64, usize> = HashMap::new();
    let mut keys: Vec<[Datum; 3]> = Vec::new();
    let mut place: HashMap<[Datum; 3], usize> = HashMap::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        let data = strc(r, offset_of!(Item, i_data), 50);
        if data.starts_with(b"zz") {
            return;
        }
        let key = [
            Datum::Str(strc(r, offset_of!(Item, i_name), 24).to_vec()),
            Datum::Str(data[..data.len().min(3)].to_vec()),
            Datum::Int(i64c(r, offset_of!(Item, i_price))),
        ];
        let g = *place.entry(key.clone()).or_insert_with(|| {
            keys.push(key);
            keys.len() - 1
        });
        group_of.insert(u32c(r, offset_of!(Item, i_id)), g);
    })?;
    drop(place);
    // (group, supplier) pairs of the stock rows, deduplicated: COUNT(DISTINCT).
    let mut pairs: Vec<(usize, i64)> = Vec::new();
    exec::scan_each(s, STOCK.primary(), Unbounded, Unbounded, |r| {
        let i = u32c(r, offset_of!(Stock, s_i_id));
        let Some(&g) = group_of.get(&i) else { return };
        let su = supplier_of(u32c(r, offset_of!(Stock, s_w_id)), i);
        if !bad.contains(&su) {
            pairs.push((g, su));
        }
    })?;
    pairs.sort_unstable();
    pairs.dedup();
    let mut count = vec![0i64; keys.len()];
    for (g, _) in pairs {
        count[g] += 1;
    }
    let mut rows: Vec<Row> = keys
        .into_iter()
        .zip(count)
        .filter(|&(_, n)| n > 0)
        .map(|([name, brand, price], n)| vec![name, brand, price, Datum::Int(n)])
        .collect();
    let asc = |col| SortKey { col, asc: true };
    exec::sort(
        &mut rows,
        &[SortKey { col: 3, asc: false }, asc(0), asc(1), asc(2)],
    );
    Ok(rows)
}

pub fn sql(q: Sql) -> String {
    format!(
        "SELECT i_name, substr(i_data, 1, 3) AS brand, {} AS price, \
         count(DISTINCT (s_w_id * s_i_id) % 10000) AS supplier_cnt \
         FROM stock, item WHERE i_id = s_i_id AND substr(i_data, 1, 2) <> 'zz' \
         AND (s_w_id * s_i_id) % 10000 NOT IN \
         (SELECT su_suppkey FROM supplier WHERE {}) \
         GROUP BY i_name, substr(i_data, 1, 3), {0} \
         ORDER BY supplier_cnt DESC, i_name, brand, price",
        q.m("i_price"),
        q.like("su_comment", "%bad%")
    )
}
