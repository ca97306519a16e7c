//! Q2: for each item whose I_DATA ends in `b`, its stock rows supplied from Europe
//! that hold the fewest units among the item's stock rows supplied from Europe, with
//! the supplier and its nation.

use super::{i32c, strc, supplier_of, suppliers_where, u32c, Sql};
use crate::chbench::schema::{Supplier, SUPPLIER};
use crate::tpcc::schema::{Item, Stock, ITEM, STOCK};
use api::{Reader, Result};
use exec::{Datum, Row, SortKey};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::ops::Bound::Unbounded;

/// Rows: su_suppkey, su_name, n_name, i_id, i_name, su_address, su_phone, su_comment;
/// by n_name, su_name, i_id.
pub fn plan(s: &mut dyn Reader) -> Result<Vec<Row>> {
    let europe = super::q05::region_nations(s, "Europe")?;
    let suppliers = suppliers_where(s, |n| europe.contains_key(&n))?;
    // Items ending in `b`: id -> I_NAME.
    let mut items: HashMap<i64, Datum> = HashMap::new();
    exec::scan_each(s, ITEM.primary(), Unbounded, Unbounded, |r| {
        if strc(r, offset_of!(Item, i_data), 50).last() == Some(&b'b') {
            let name = strc(r, offset_of!(Item, i_name), 24).to_vec();
            items.insert(u32c(r, offset_of!(Item, i_id)), Datum::Str(name));
        }
    })?;
    // The subquery decorrelated, its grouped minimum kept with the stock rows at it:
    // item -> (fewest units, the suppliers of the stock rows holding that many).
    let mut fewest: HashMap<i64, (i64, Vec<i64>)> = HashMap::new();
    exec::scan_each(s, STOCK.primary(), Unbounded, Unbounded, |r| {
        let i = u32c(r, offset_of!(Stock, s_i_id));
        if !items.contains_key(&i) {
            return;
        }
        let su = supplier_of(u32c(r, offset_of!(Stock, s_w_id)), i);
        if !suppliers.contains_key(&su) {
            return;
        }
        let q = i32c(r, offset_of!(Stock, s_quantity));
        let e = fewest.entry(i).or_insert((q, Vec::new()));
        if q < e.0 {
            *e = (q, Vec::new());
        }
        if q == e.0 {
            e.1.push(su);
        }
    })?;
    // The suppliers' columns, for those named.
    let mut cols: HashMap<i64, [Datum; 4]> = HashMap::new();
    let wanted: HashSet<i64> = fewest
        .values()
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    exec::scan_each(s, SUPPLIER.primary(), Unbounded, Unbounded, |r| {
        let k = u32c(r, offset_of!(Supplier, su_suppkey));
        if wanted.contains(&k) {
            let text = |off, len| Datum::Str(strc(r, off, len).to_vec());
            cols.insert(
                k,
                [
                    text(offset_of!(Supplier, su_name), 25),
                    text(offset_of!(Supplier, su_address), 40),
                    text(offset_of!(Supplier, su_phone), 15),
                    text(offset_of!(Supplier, su_comment), 101),
                ],
            );
        }
    })?;
    let mut rows: Vec<Row> = Vec::new();
    for (i, (_, sus)) in &fewest {
        for su in sus {
            let [name, address, phone, comment] = cols[su].clone();
            rows.push(vec![
                Datum::Int(*su),
                name,
                europe[&suppliers[su]].clone(),
                Datum::Int(*i),
                items[i].clone(),
                address,
                phone,
                comment,
            ]);
        }
    }
    let asc = |col| SortKey { col, asc: true };
    exec::sort(&mut rows, &[asc(2), asc(1), asc(3)]);
    Ok(rows)
}

pub fn sql(q: Sql) -> String {
    let europe = "(s_w_id * s_i_id) % 10000 = su_suppkey AND su_nationkey = n_nationkey \
                  AND n_regionkey = r_regionkey AND r_name = 'Europe'";
    format!(
        "SELECT su_suppkey, su_name, n_name, i_id, i_name, su_address, su_phone, su_comment \
         FROM item, supplier, stock, nation, region, \
         (SELECT s_i_id AS m_i_id, min(s_quantity) AS m_s_quantity \
         FROM stock, supplier, nation, region WHERE {europe} GROUP BY s_i_id) m \
         WHERE i_id = s_i_id AND {europe} AND {} \
         AND i_id = m_i_id AND s_quantity = m_s_quantity \
         ORDER BY n_name, su_name, i_id",
        q.like("i_data", "%b")
    )
}
