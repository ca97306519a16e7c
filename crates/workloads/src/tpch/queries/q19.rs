//! Q19, the discounted revenue query (clause 2.4.19): the revenue of air-shipped,
//! hand-delivered line items of three brand, container, size and quantity classes.

use super::HashMap;
use super::{i64c, lit, scan_all, strc, u32c, Sql};
use crate::tpch::schema::{Lineitem, Part, LINEITEM, PART};
use api::{Reader, Result};
use exec::{Agg, Datum, Expr, Row};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// QUANTITY1..3: 1..=10, 10..=20, 20..=30.
    pub quantity: [i64; 3],
    /// BRAND1..3: `Brand#MN`, M and N in 1..=5.
    pub brand: [String; 3],
}

/// The three classes' containers and largest size.
const CLASSES: [([&str; 4], i64); 3] = [
    (["SM CASE", "SM BOX", "SM PACK", "SM PKG"], 5),
    (["MED BAG", "MED BOX", "MED PKG", "MED PACK"], 10),
    (["LG CASE", "LG BOX", "LG PACK", "LG PKG"], 15),
];

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let mut brand = || format!("Brand#{}{}", r.gen_range(1..=5), r.gen_range(1..=5));
        let brand = [brand(), brand(), brand()];
        Params {
            quantity: [
                r.gen_range(1..=10),
                r.gen_range(10..=20),
                r.gen_range(20..=30),
            ],
            brand,
        }
    }

    pub fn validation() -> Params {
        Params {
            quantity: [1, 10, 20],
            brand: ["Brand#12".into(), "Brand#23".into(), "Brand#34".into()],
        }
    }
}

/// The class (0..3) of a part, if any: brand, container and size.
fn class(p: &Params, brand: &[u8], container: &[u8], size: i64) -> Option<i64> {
    (0..3).find_map(|i| {
        let (containers, max) = CLASSES[i];
        (brand == p.brand[i].as_bytes()
            && containers.iter().any(|c| c.as_bytes() == container)
            && (1..=max).contains(&size))
        .then_some(i as i64)
    })
}

/// Raw row: the revenue (10^-4).
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    // (p_partkey, class)
    let parts = scan_all(
        s,
        PART,
        |r| {
            class(
                p,
                strc(r, offset_of!(Part, p_brand), 10),
                strc(r, offset_of!(Part, p_container), 10),
                u32c(r, offset_of!(Part, p_size)),
            )
            .is_some()
        },
        |r| {
            let c = class(
                p,
                strc(r, offset_of!(Part, p_brand), 10),
                strc(r, offset_of!(Part, p_container), 10),
                u32c(r, offset_of!(Part, p_size)),
            );
            vec![
                Datum::Int(u32c(r, offset_of!(Part, p_partkey))),
                Datum::Int(c.expect("kept parts have a class")),
            ]
        },
    )?;
    let pk: HashMap<i64, i64> = parts.iter().map(|r| (r[0].int(), r[1].int())).collect();
    let qty: Vec<(i64, i64)> = p
        .quantity
        .iter()
        .map(|q| (q * 100, (q + 10) * 100))
        .collect();
    // The revenue of the line items in their part's class's quantity range, summed
    // inside LINEITEM's scan.
    super::scan_agg(
        s,
        LINEITEM,
        |r| {
            let Some(&c) = pk.get(&u32c(r, offset_of!(Lineitem, l_partkey))) else {
                return false;
            };
            let q = i64c(r, offset_of!(Lineitem, l_quantity));
            let (lo, hi) = qty[c as usize];
            (lo..=hi).contains(&q)
                && matches!(
                    strc(r, offset_of!(Lineitem, l_shipmode), 10),
                    b"AIR" | b"AIR REG"
                )
                && strc(r, offset_of!(Lineitem, l_shipinstruct), 25) == b"DELIVER IN PERSON"
        },
        |r| vec![super::line_revenue(r)],
        0,
        &[Agg::Sum(Expr::col(0))],
    )
}

pub fn sql(q: Sql, p: &Params) -> String {
    let branch = |i: usize| {
        let (containers, max) = CLASSES[i];
        let list: Vec<String> = containers.iter().map(|c| lit(c)).collect();
        format!(
            "(p_partkey = l_partkey AND p_brand = {} AND p_container IN ({}) \
             AND {qty} >= {} AND {qty} <= {} AND p_size BETWEEN 1 AND {max} \
             AND l_shipmode IN ('AIR', 'AIR REG') AND l_shipinstruct = 'DELIVER IN PERSON')",
            lit(&p.brand[i]),
            list.join(", "),
            p.quantity[i] * 100,
            (p.quantity[i] + 10) * 100,
            qty = q.m("l_quantity"),
        )
    };
    format!(
        "SELECT {} FROM lineitem, part WHERE {} OR {} OR {}",
        q.sum(&q.revenue()),
        branch(0),
        branch(1),
        branch(2),
    )
}

/// The reported row: revenue in cents.
pub fn finish(raw: Vec<Row>) -> Vec<Row> {
    super::round_revenue(raw, &[0])
}
