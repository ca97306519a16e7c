//! Q21, the suppliers who kept orders waiting query (clause 2.4.21): a nation's
//! suppliers that alone were late on a multi-supplier order that was completed.

use super::sets::{each, nation_key};
use super::{i64c, lit, strc, text, u32c, Sql};
use super::{HashMap, HashSet};
use crate::tpch::gen::NATIONS;
use crate::tpch::schema::{Lineitem, Orders, Supplier, LINEITEM, ORDERS, SUPPLIER};
use api::{Reader, Result};
use exec::{top_n, Datum, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// NATION: one of the 25 N_NAMEs.
    pub nation: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            nation: NATIONS[r.gen_range(0..NATIONS.len())].0.to_string(),
        }
    }

    pub fn validation() -> Params {
        Params {
            nation: "SAUDI ARABIA".into(),
        }
    }
}

/// What an order's lines say about Q21, folded line by line.
#[derive(Default)]
struct Order {
    /// A supplier of a line, and whether another supplier has a line too (EXISTS l2).
    supplier: Option<i64>,
    several: bool,
    /// The supplier of a late line, whether another supplier was late too (then no
    /// line passes NOT EXISTS l3), and the first's late lines.
    late: Option<i64>,
    late_several: bool,
    late_lines: i64,
}

impl Order {
    fn add(&mut self, supplier: i64, late: bool) {
        if *self.supplier.get_or_insert(supplier) != supplier {
            self.several = true;
        }
        if late {
            if *self.late.get_or_insert(supplier) == supplier {
                self.late_lines += 1;
            } else {
                self.late_several = true;
            }
        }
    }
}

/// Raw (and reported) rows: s_name, numwait; numwait descending, then name; a hundred.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let Some(nation) = nation_key(s, &p.nation)? else {
        return Ok(Vec::new());
    };
    // s_suppkey -> s_name, the nation's suppliers.
    let mut names: HashMap<i64, Datum> = HashMap::default();
    each(s, SUPPLIER, |r| {
        if u32c(r, offset_of!(Supplier, s_nationkey)) == nation {
            names.insert(
                u32c(r, offset_of!(Supplier, s_suppkey)),
                text(r, offset_of!(Supplier, s_name), 25),
            );
        }
    })?;
    let mut finished = HashSet::default();
    each(s, ORDERS, |r| {
        if strc(r, offset_of!(Orders, o_orderstatus), 1) == b"F" {
            finished.insert(i64c(r, offset_of!(Orders, o_orderkey)));
        }
    })?;
    let mut orders: HashMap<i64, Order> = HashMap::default();
    each(s, LINEITEM, |r| {
        let key = i64c(r, offset_of!(Lineitem, l_orderkey));
        if finished.contains(&key) {
            let late = u32c(r, offset_of!(Lineitem, l_receiptdate))
                > u32c(r, offset_of!(Lineitem, l_commitdate));
            orders
                .entry(key)
                .or_default()
                .add(u32c(r, offset_of!(Lineitem, l_suppkey)), late);
        }
    })?;
    // s_suppkey -> numwait: the late lines of an order's only late supplier, when the
    // order has another supplier.
    let mut wait: HashMap<i64, i64> = HashMap::default();
    for o in orders.values() {
        match o.late {
            Some(supp) if o.several && !o.late_several && names.contains_key(&supp) => {
                *wait.entry(supp).or_default() += o.late_lines;
            }
            _ => {}
        }
    }
    let rows = wait
        .into_iter()
        .map(|(supp, n)| vec![names[&supp].clone(), Datum::Int(n)])
        .collect();
    Ok(top_n(
        rows,
        &[
            SortKey { col: 1, asc: false },
            SortKey { col: 0, asc: true },
        ],
        100,
    ))
}

pub fn sql(_q: Sql, p: &Params) -> String {
    format!(
        "SELECT s_name, count(*) AS numwait FROM supplier, lineitem l1, orders, nation \
         WHERE s_suppkey = l1.l_suppkey AND o_orderkey = l1.l_orderkey \
         AND o_orderstatus = 'F' AND l1.l_receiptdate > l1.l_commitdate \
         AND EXISTS (SELECT * FROM lineitem l2 WHERE l2.l_orderkey = l1.l_orderkey \
         AND l2.l_suppkey <> l1.l_suppkey) \
         AND NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey = l1.l_orderkey \
         AND l3.l_suppkey <> l1.l_suppkey AND l3.l_receiptdate > l3.l_commitdate) \
         AND s_nationkey = n_nationkey AND n_name = {} \
         GROUP BY s_name ORDER BY numwait DESC, s_name LIMIT 100",
        lit(&p.nation),
    )
}
