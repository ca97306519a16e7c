//! Q16, the parts/supplier relationship query (clause 2.4.16): how many suppliers,
//! none with complaints against it, offer parts of eight sizes, by brand, type and
//! size, leaving out one brand and one type prefix.

use super::fold;
use super::sets::{contains_in_order, each};
use super::{lit, pick, strc, u32c, Sql};
use super::{HashMap, HashSet};
use crate::tpch::gen::{TYPE_S1, TYPE_S2};
use crate::tpch::schema::{Part, PartSupp, Supplier, PART, PARTSUPP, SUPPLIER};
use api::{Reader, Result, SqlDialect};
use exec::{sort, Datum, Row, SortKey};
use std::mem::offset_of;

#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// BRAND: `Brand#MN`, M and N in 1..=5.
    pub brand: String,
    /// TYPE: the first two syllables of a P_TYPE (`MEDIUM POLISHED`).
    pub type_prefix: String,
    /// SIZE1..8: eight different sizes in 1..=50.
    pub sizes: [i64; 8],
}

impl Params {
    pub fn draw<R: rand::Rng>(r: &mut R) -> Params {
        let brand = format!("Brand#{}{}", r.gen_range(1..=5), r.gen_range(1..=5));
        let type_prefix = format!("{} {}", pick(r, &TYPE_S1), pick(r, &TYPE_S2));
        let mut sizes = [0; 8];
        for (s, i) in sizes.iter_mut().zip(rand::seq::index::sample(r, 50, 8)) {
            *s = i as i64 + 1;
        }
        Params {
            brand,
            type_prefix,
            sizes,
        }
    }

    pub fn validation() -> Params {
        Params {
            brand: "Brand#45".into(),
            type_prefix: "MEDIUM POLISHED".into(),
            sizes: [49, 14, 23, 45, 19, 3, 36, 9],
        }
    }
}

/// A group: p_brand, p_type, p_size.
type Group = (Vec<u8>, Vec<u8>, i64);

/// `s_comment LIKE '%Customer%Complaints%'`.
fn complains(comment: &[u8]) -> bool {
    contains_in_order(comment, b"Customer", b"Complaints")
}

/// Raw (and reported) rows: p_brand, p_type, p_size, supplier_cnt; supplier_cnt
/// descending, then brand, type and size.
pub fn plan(s: &mut dyn Reader, p: &Params) -> Result<Vec<Row>> {
    let mut bad = HashSet::default();
    each(s, SUPPLIER, |r| {
        if complains(strc(r, offset_of!(Supplier, s_comment), 101)) {
            bad.insert(u32c(r, offset_of!(Supplier, s_suppkey)));
        }
    })?;
    // p_partkey -> (p_brand, p_type, p_size)
    let mut parts: HashMap<i64, Group> = HashMap::default();
    each(s, PART, |r| {
        let brand = strc(r, offset_of!(Part, p_brand), 10);
        let ty = strc(r, offset_of!(Part, p_type), 25);
        let size = u32c(r, offset_of!(Part, p_size));
        if brand != p.brand.as_bytes()
            && !ty.starts_with(p.type_prefix.as_bytes())
            && p.sizes.contains(&size)
        {
            parts.insert(
                u32c(r, offset_of!(Part, p_partkey)),
                (brand.to_vec(), ty.to_vec(), size),
            );
        }
    })?;
    // (brand, type, size) -> distinct suppliers
    // (on the query's threads: the sets of a group from each part, united)
    let groups = fold(
        s,
        PARTSUPP,
        |groups: &mut HashMap<&Group, HashSet<i64>>, r| {
            let supp = u32c(r, offset_of!(PartSupp, ps_suppkey));
            if let Some(g) = parts.get(&u32c(r, offset_of!(PartSupp, ps_partkey))) {
                if !bad.contains(&supp) {
                    groups.entry(g).or_default().insert(supp);
                }
            }
        },
        |groups, part| {
            for (g, supps) in part {
                groups.entry(g).or_default().extend(supps);
            }
        },
    )?;
    let mut rows: Vec<Row> = groups
        .into_iter()
        .map(|((b, t, z), supps)| {
            vec![
                Datum::Str(b.clone()),
                Datum::Str(t.clone()),
                Datum::Int(*z),
                Datum::Int(supps.len() as i64),
            ]
        })
        .collect();
    sort(
        &mut rows,
        &[
            SortKey { col: 3, asc: false },
            SortKey { col: 0, asc: true },
            SortKey { col: 1, asc: true },
            SortKey { col: 2, asc: true },
        ],
    );
    Ok(rows)
}

pub fn sql(q: Sql, p: &Params) -> String {
    // SQLite's LIKE ignores ASCII case; its GLOB does not, as PostgreSQL's LIKE.
    let complaint = match q.0 {
        SqlDialect::Sqlite => "s_comment GLOB '*Customer*Complaints*'",
        SqlDialect::Postgres => "s_comment LIKE '%Customer%Complaints%'",
    };
    let sizes: Vec<String> = p.sizes.iter().map(i64::to_string).collect();
    format!(
        "SELECT p_brand, p_type, p_size, count(DISTINCT ps_suppkey) AS supplier_cnt \
         FROM partsupp, part WHERE p_partkey = ps_partkey AND p_brand <> {} \
         AND substr(p_type, 1, {}) <> {} AND p_size IN ({}) \
         AND ps_suppkey NOT IN (SELECT s_suppkey FROM supplier WHERE {complaint}) \
         GROUP BY p_brand, p_type, p_size \
         ORDER BY supplier_cnt DESC, p_brand, p_type, p_size",
        lit(&p.brand),
        p.type_prefix.len(),
        lit(&p.type_prefix),
        sizes.join(", "),
    )
}
