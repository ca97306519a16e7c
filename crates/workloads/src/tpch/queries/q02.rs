//! Q2, the minimum cost supplier query (clause 2.4.2): for each part of a size and type,
//! the suppliers of a region offering it at the region's lowest supply cost, the
//! hundred with the largest account balances.

use super::HashMap;
use super::{i64c, lit, pick, scan_all, strc, text, u32c, Sql};
use crate::tpch::gen::{REGIONS, TYPE_S3};
use crate::tpch::schema::*;
use api::{Reader, Result};
use exec::{top_n, Datum, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// SIZE: 1..=50.
    pub size: u32,
    /// TYPE: a third syllable of P_TYPE (`BRASS`, ...).
    pub type_: String,
    /// REGION: one of the five R_NAMEs.
    pub region: String,
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        Params {
            size: r.gen_range(1..=50),
            type_: pick(r, &TYPE_S3).to_string(),
            region: pick(r, &REGIONS).to_string(),
        }
    }

    pub fn validation() -> Params {
        Params {
            size: 15,
            type_: "BRASS".into(),
            region: "EUROPE".into(),
        }
    }
}

/// Raw rows: s_acctbal, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone,
/// s_comment; s_acctbal descending, then n_name, s_name, p_partkey; a hundred.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let nations = super::by_key(super::region_nations(s, &p.region)?);
    // s_suppkey -> (s_acctbal, s_name, n_name, s_address, s_phone, s_comment)
    let supps: HashMap<i64, Row> = scan_all(
        s,
        SUPPLIER,
        |r| nations.contains_key(&u32c(r, offset_of!(Supplier, s_nationkey))),
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Supplier, s_suppkey))),
                Datum::Int(i64c(r, offset_of!(Supplier, s_acctbal))),
                text(r, offset_of!(Supplier, s_name), 25),
                nations[&u32c(r, offset_of!(Supplier, s_nationkey))].clone(),
                text(r, offset_of!(Supplier, s_address), 40),
                text(r, offset_of!(Supplier, s_phone), 15),
                text(r, offset_of!(Supplier, s_comment), 101),
            ]
        },
    )?
    .into_iter()
    .map(|mut r| (r.remove(0).int(), r))
    .collect();
    // p_partkey -> p_mfgr
    let ty = p.type_.as_bytes();
    let parts: HashMap<i64, Datum> = scan_all(
        s,
        PART,
        |r| {
            u32c(r, offset_of!(Part, p_size)) == i64::from(p.size)
                && strc(r, offset_of!(Part, p_type), 25).ends_with(ty)
        },
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(Part, p_partkey))),
                text(r, offset_of!(Part, p_mfgr), 25),
            ]
        },
    )?
    .into_iter()
    .map(|r| (r[0].int(), r[1].clone()))
    .collect();
    // (ps_partkey, ps_suppkey, ps_supplycost) of the parts from the region's suppliers.
    let offers = scan_all(
        s,
        PARTSUPP,
        |r| {
            parts.contains_key(&u32c(r, offset_of!(PartSupp, ps_partkey)))
                && supps.contains_key(&u32c(r, offset_of!(PartSupp, ps_suppkey)))
        },
        |r| {
            vec![
                Datum::Int(u32c(r, offset_of!(PartSupp, ps_partkey))),
                Datum::Int(u32c(r, offset_of!(PartSupp, ps_suppkey))),
                Datum::Int(i64c(r, offset_of!(PartSupp, ps_supplycost))),
            ]
        },
    )?;
    let mut min: HashMap<i64, i64> = HashMap::default();
    for o in &offers {
        let m = min.entry(o[0].int()).or_insert(i64::MAX);
        *m = (*m).min(o[2].int());
    }
    let rows: Vec<Row> = offers
        .iter()
        .filter(|o| min[&o[0].int()] == o[2].int())
        .map(|o| {
            let sp = &supps[&o[1].int()];
            vec![
                sp[0].clone(),
                sp[1].clone(),
                sp[2].clone(),
                o[0].clone(),
                parts[&o[0].int()].clone(),
                sp[3].clone(),
                sp[4].clone(),
                sp[5].clone(),
            ]
        })
        .collect();
    let by = |col, asc| SortKey { col, asc };
    Ok(top_n(
        rows,
        &[by(0, false), by(2, true), by(1, true), by(3, true)],
        100,
    ))
}

pub fn sql(q: Sql, p: &Params) -> String {
    let region = format!(
        "s_suppkey = ps_suppkey AND s_nationkey = n_nationkey \
         AND n_regionkey = r_regionkey AND r_name = {}",
        lit(&p.region)
    );
    format!(
        "SELECT {}, s_name, n_name, p_partkey, p_mfgr, s_address, s_phone, s_comment \
         FROM part, supplier, partsupp, nation, region \
         WHERE p_partkey = ps_partkey AND p_size = {} AND {} AND {region} \
         AND ps_supplycost = (SELECT min(ps_supplycost) \
         FROM partsupp, supplier, nation, region WHERE p_partkey = ps_partkey AND {region}) \
         ORDER BY s_acctbal DESC, n_name, s_name, p_partkey LIMIT 100",
        q.m("s_acctbal"),
        p.size,
        q.like("p_type", &format!("%{}", p.type_)),
    )
}
