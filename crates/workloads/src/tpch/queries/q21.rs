//! Q21, the suppliers who kept orders waiting query (clause 2.4.21): a nation's
//! suppliers that alone were late on a multi-supplier order that was completed.

use super::fold;
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
    /// The same order's lines folded on another query thread (a scan part may end
    /// inside an order).
    fn merge(&mut self, o: Order) {
        if let Some(supp) = o.supplier {
            if *self.supplier.get_or_insert(supp) != supp {
                self.several = true;
            }
        }
        self.several |= o.several;
        match (self.late, o.late) {
            (_, None) => {}
            (None, Some(_)) => {
                self.late = o.late;
                self.late_lines = o.late_lines;
            }
            (Some(a), Some(b)) if a == b => self.late_lines += o.late_lines,
            (Some(_), Some(_)) => self.late_several = true,
        }
        self.late_several |= o.late_several;
    }

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
    // ORDERS and LINEITEM fold on the query's threads (`exec::scan_fold`).
    let finished = fold(
        s,
        ORDERS,
        |set: &mut HashSet<i64>, r| {
            if strc(r, offset_of!(Orders, o_orderstatus), 1) == b"F" {
                set.insert(i64c(r, offset_of!(Orders, o_orderkey)));
            }
        },
        |set, part| set.extend(part),
    )?;
    let orders = fold(
        s,
        LINEITEM,
        |orders: &mut HashMap<i64, Order>, r| {
            let key = i64c(r, offset_of!(Lineitem, l_orderkey));
            if finished.contains(&key) {
                let late = u32c(r, offset_of!(Lineitem, l_receiptdate))
                    > u32c(r, offset_of!(Lineitem, l_commitdate));
                orders
                    .entry(key)
                    .or_default()
                    .add(u32c(r, offset_of!(Lineitem, l_suppkey)), late);
            }
        },
        |orders, part| {
            for (key, o) in part {
                orders.entry(key).or_default().merge(o);
            }
        },
    )?;
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

#[cfg(test)]
mod tests {
    use super::Order;

    /// What the query reads of an order: with two late suppliers, neither counts.
    fn summary(o: &Order) -> (bool, bool, Option<(Option<i64>, i64)>) {
        let single = (!o.late_several).then_some((o.late, o.late_lines));
        (o.several, o.late_several, single)
    }

    /// An order's lines folded in two pieces split anywhere, then merged, say what
    /// folding them in one piece says (a query thread's part may end inside an order).
    #[test]
    fn an_order_split_between_two_parts_merges_to_the_whole() {
        let orders: [&[(i64, bool)]; 7] = [
            &[(1, true), (1, false), (2, false)],
            &[(1, true), (2, true)],
            &[(3, false), (3, true), (3, true)],
            &[(4, false), (5, false)],
            &[(6, true), (6, true), (7, false), (6, true)],
            &[(8, false), (9, true), (8, true)],
            &[(1, true), (2, true), (1, true)],
        ];
        for lines in orders {
            let mut whole = Order::default();
            lines.iter().for_each(|&(s, l)| whole.add(s, l));
            for cut in 0..=lines.len() {
                let (mut a, mut b) = (Order::default(), Order::default());
                lines[..cut].iter().for_each(|&(s, l)| a.add(s, l));
                lines[cut..].iter().for_each(|&(s, l)| b.add(s, l));
                a.merge(b);
                assert_eq!(summary(&a), summary(&whole), "{lines:?} cut at {cut}");
            }
        }
    }
}
