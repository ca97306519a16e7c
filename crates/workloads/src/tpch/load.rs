//! TPC-H population (clause 4.2.3): the rows of each table as pure functions of the
//! population salt and their keys, and the parallel load that inserts them in units
//! (NATION and REGION; chunks of parts with their PARTSUPP rows; of suppliers; of
//! customers; of orders with their line items). Owns the initial values; it never runs
//! queries.

use super::gen::*;
use super::schema::*;
use super::Tpch;
use api::row::{self, Zeroable};
use api::{Database, Result, Session, Worker};
use rand::Rng;
use smallvec::SmallVec;

/// Keys per loading unit (a unit is one thread's share of a table at a time).
const UNIT: u64 = 5_000;
/// Parts, suppliers or customers per loading transaction.
const BATCH_ROWS: u64 = 200;
/// Orders per loading transaction (each with 1 to 7 line items).
const BATCH_ORDERS: u64 = 100;

/// Table numbers of `gen::row_rng`'s streams.
const T_PART: u32 = 0;
const T_SUPPLIER: u32 = 1;
const T_PARTSUPP: u32 = 2;
const T_CUSTOMER: u32 = 3;
const T_ORDERS: u32 = 4;
const T_NATION: u32 = 6;
const T_NEW_ORDERS: u32 = 7;
const T_BBB: u32 = 9;

pub fn part_row(salt: u64, p: u32) -> Part {
    let mut rng = row_rng(salt, T_PART, p as u64);
    let mut r = Part::zeroed();
    r.p_partkey = p;
    // Five distinct words of the 92 (clause 4.2.3's P_NAME).
    let mut words: SmallVec<[&str; 5]> = SmallVec::new();
    while words.len() < 5 {
        let w = P_NAME_WORDS[rng.gen_range(0..P_NAME_WORDS.len())];
        if !words.contains(&w) {
            words.push(w);
        }
    }
    row::set_str(&mut r.p_name, words.join(" ").as_bytes());
    let m = rng.gen_range(1..=5);
    row::set_str(&mut r.p_mfgr, format!("Manufacturer#{m}").as_bytes());
    let n = rng.gen_range(1..=5);
    row::set_str(&mut r.p_brand, format!("Brand#{m}{n}").as_bytes());
    let ty = format!(
        "{} {} {}",
        TYPE_S1[rng.gen_range(0..6)],
        TYPE_S2[rng.gen_range(0..5)],
        TYPE_S3[rng.gen_range(0..5)]
    );
    row::set_str(&mut r.p_type, ty.as_bytes());
    r.p_size = rng.gen_range(1..=50);
    let c = format!(
        "{} {}",
        CONTAINER_S1[rng.gen_range(0..5)],
        CONTAINER_S2[rng.gen_range(0..8)]
    );
    row::set_str(&mut r.p_container, c.as_bytes());
    r.p_retailprice = retail_price(p);
    text(&mut rng, 5, 22, &mut r.p_comment);
    r
}

/// Part `p`'s `i`-th (0..4) PARTSUPP row among `suppliers`.
pub fn partsupp_row(salt: u64, p: u32, i: u32, suppliers: u32) -> PartSupp {
    let mut rng = row_rng(salt, T_PARTSUPP, p as u64 * 4 + i as u64);
    let mut r = PartSupp::zeroed();
    r.ps_partkey = p;
    r.ps_suppkey = part_supplier(p, i, suppliers);
    r.ps_availqty = rng.gen_range(1..=9_999);
    r.ps_supplycost = cents(&mut rng, 100, 100_000);
    text(&mut rng, 49, 198, &mut r.ps_comment);
    r
}

/// Which suppliers' comments carry the Better Business Bureau's words (clause 4.2.3:
/// SF x 5 each of complaints and recommendations; here each supplier has a 1 in 2,000
/// chance of either, by a hash of its key, so SF x 5 of each is the expected count).
fn bbb(salt: u64, s: u32) -> Option<&'static str> {
    match row_rng(salt, T_BBB, s as u64).gen_range(0..2000u32) {
        0 => Some("Complaints"),
        1 => Some("Recommends"),
        _ => None,
    }
}

/// What suppliers and customers share: the numbered name, a v-string address, a nation,
/// its phone and an account balance in -999.99..9,999.99; returns (nation, balance).
fn party(
    rng: &mut crate::util::KitRng,
    (prefix, key): (&str, u32),
    (name, address, tel): (&mut [u8], &mut [u8], &mut [u8]),
) -> (u32, i64) {
    numbered(prefix, key as u64, name);
    v_string(rng, 10, 40, address);
    let nation = rng.gen_range(0..25);
    phone(rng, nation, tel);
    (nation, cents(rng, -99_999, 999_999))
}

pub fn supplier_row(salt: u64, s: u32) -> Supplier {
    let mut rng = row_rng(salt, T_SUPPLIER, s as u64);
    let mut r = Supplier::zeroed();
    r.s_suppkey = s;
    (r.s_nationkey, r.s_acctbal) = party(
        &mut rng,
        ("Supplier#", s),
        (&mut r.s_name, &mut r.s_address, &mut r.s_phone),
    );
    text(&mut rng, 25, 100, &mut r.s_comment);
    if let Some(word) = bbb(salt, s) {
        // "Customer", some of the comment's own text, then the word (clause 4.2.3).
        let len = row::get_str(&r.s_comment).len();
        let insert = format!("Customer {word}");
        let mid = rng.gen_range(0..=6usize);
        let at = rng.gen_range(0..=len - insert.len() - mid);
        let mut b = row::get_str(&r.s_comment).to_vec();
        b[at..at + 8].copy_from_slice(b"Customer");
        let w = at + 8 + mid;
        b[w..w + 1].copy_from_slice(b" ");
        b[w + 1..w + 1 + word.len()].copy_from_slice(word.as_bytes());
        row::set_str(&mut r.s_comment, &b);
    }
    r
}

pub fn customer_row(salt: u64, c: u32) -> Customer {
    let mut rng = row_rng(salt, T_CUSTOMER, c as u64);
    let mut r = Customer::zeroed();
    r.c_custkey = c;
    (r.c_nationkey, r.c_acctbal) = party(
        &mut rng,
        ("Customer#", c),
        (&mut r.c_name, &mut r.c_address, &mut r.c_phone),
    );
    row::set_str(
        &mut r.c_mktsegment,
        SEGMENTS[rng.gen_range(0..5)].as_bytes(),
    );
    text(&mut rng, 29, 116, &mut r.c_comment);
    r
}

/// The `i`-th order (1-based) with its line items.
pub fn order_rows(t: &Tpch, i: u64) -> (Orders, SmallVec<[Lineitem; 7]>) {
    let salt = t.cfg.load_salt;
    let rng = row_rng(salt, T_ORDERS, i);
    generate_order(t, rng, order_key_of(i), lines_of_order(salt, i))
}

/// The `m`-th order the refresh functions insert (1-based over all refresh pairs,
/// `refresh::new_order_key`), with its line items: generated by the same rules as a
/// loaded order, from a stream of its own.
pub fn new_order_rows(t: &Tpch, m: u64) -> (Orders, SmallVec<[Lineitem; 7]>) {
    let salt = t.cfg.load_salt;
    let rng = row_rng(salt, T_NEW_ORDERS, m);
    generate_order(
        t,
        rng,
        super::refresh::new_order_key(m),
        lines_of_new_order(salt, m),
    )
}

/// An order of key `key` with `n` line items, drawn from `rng` (clause 4.2.3).
fn generate_order(
    t: &Tpch,
    mut rng: crate::util::KitRng,
    key: u64,
    n: u32,
) -> (Orders, SmallVec<[Lineitem; 7]>) {
    let z = t.sizes();
    let mut o = Orders::zeroed();
    o.o_orderkey = key;
    // One customer in three (keys divisible by 3) has no order (clause 4.2.3).
    let mut c = rng.gen_range(1..=z.customers);
    if c.is_multiple_of(3) {
        c -= 1;
    }
    o.o_custkey = c;
    o.o_orderdate = rng.gen_range(START_DATE..=END_DATE - 151);
    row::set_str(
        &mut o.o_orderpriority,
        PRIORITIES[rng.gen_range(0..5)].as_bytes(),
    );
    numbered(
        "Clerk#",
        rng.gen_range(1..=t.clerks()) as u64,
        &mut o.o_clerk,
    );
    o.o_shippriority = 0;
    text(&mut rng, 19, 78, &mut o.o_comment);
    let mut lines: SmallVec<[Lineitem; 7]> = SmallVec::new();
    for j in 1..=n {
        let mut l = Lineitem::zeroed();
        l.l_orderkey = key;
        l.l_linenumber = j;
        l.l_partkey = rng.gen_range(1..=z.parts);
        l.l_suppkey = part_supplier(l.l_partkey, rng.gen_range(0..4), z.suppliers);
        let qty = rng.gen_range(1..=50i64);
        l.l_quantity = qty * 100;
        l.l_extendedprice = qty * retail_price(l.l_partkey);
        l.l_discount = rng.gen_range(0..=10);
        l.l_tax = rng.gen_range(0..=8);
        l.l_shipdate = o.o_orderdate + rng.gen_range(1..=121);
        l.l_commitdate = o.o_orderdate + rng.gen_range(30..=90);
        l.l_receiptdate = l.l_shipdate + rng.gen_range(1..=30);
        let flag = if l.l_receiptdate <= CURRENT_DATE {
            if rng.gen_bool(0.5) {
                b"R"
            } else {
                b"A"
            }
        } else {
            b"N"
        };
        l.l_returnflag = *flag;
        l.l_linestatus = if l.l_shipdate > CURRENT_DATE {
            *b"O"
        } else {
            *b"F"
        };
        row::set_str(
            &mut l.l_shipinstruct,
            INSTRUCTIONS[rng.gen_range(0..4)].as_bytes(),
        );
        row::set_str(&mut l.l_shipmode, MODES[rng.gen_range(0..7)].as_bytes());
        text(&mut rng, 10, 43, &mut l.l_comment);
        lines.push(l);
    }
    o.o_totalprice = total_price(
        lines
            .iter()
            .map(|l| (l.l_extendedprice, l.l_discount, l.l_tax)),
    );
    o.o_orderstatus = order_status(lines.iter().map(|l| l.l_linestatus[0]));
    (o, lines)
}

/// O_ORDERSTATUS from the lines' L_LINESTATUS: F if all are F, O if all are O, else P.
pub fn order_status(mut statuses: impl Iterator<Item = u8> + Clone) -> [u8; 1] {
    if statuses.clone().all(|s| s == b'F') {
        *b"F"
    } else if statuses.all(|s| s == b'O') {
        *b"O"
    } else {
        *b"P"
    }
}

pub fn nation_row(salt: u64, n: u32) -> Nation {
    let mut rng = row_rng(salt, T_NATION, n as u64);
    let mut r = Nation::zeroed();
    r.n_nationkey = n;
    row::set_str(&mut r.n_name, NATIONS[n as usize].0.as_bytes());
    r.n_regionkey = NATIONS[n as usize].1;
    text(&mut rng, 31, 114, &mut r.n_comment);
    r
}

pub fn region_row(salt: u64, n: u32) -> Region {
    let mut rng = row_rng(salt, T_NATION, 100 + n as u64);
    let mut r = Region::zeroed();
    r.r_regionkey = n;
    row::set_str(&mut r.r_name, REGIONS[n as usize].as_bytes());
    text(&mut rng, 31, 115, &mut r.r_comment);
    r
}

/// A loading unit: a table's chunk of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// NATION and REGION.
    Fixed,
    /// Parts `lo..hi` (1-based) with their PARTSUPP rows.
    Parts(u64, u64),
    Suppliers(u64, u64),
    Customers(u64, u64),
    /// Orders `lo..hi` (their numbers, not their sparse keys) with their line items.
    Orders(u64, u64),
}

fn units(t: &Tpch) -> Vec<Unit> {
    let z = t.sizes();
    let mut v = vec![Unit::Fixed];
    let mut chunks = |n: u64, f: fn(u64, u64) -> Unit| {
        let mut lo = 1;
        while lo <= n {
            let hi = (lo + UNIT).min(n + 1);
            v.push(f(lo, hi));
            lo = hi;
        }
    };
    // The largest tables first, so threads finish together.
    chunks(z.orders, Unit::Orders);
    chunks(z.parts as u64, Unit::Parts);
    chunks(z.customers as u64, Unit::Customers);
    chunks(z.suppliers as u64, Unit::Suppliers);
    v
}

pub fn load(
    t: &Tpch,
    engine: &dyn Database,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    let units = units(t);
    crate::util::parallel_units(engine, threads, units.len() as u64, |s, i| {
        load_unit(t, s, units[i as usize], progress)
    })
}

fn load_unit<W: Worker>(
    t: &Tpch,
    s: &mut Session<W>,
    unit: Unit,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    let salt = t.cfg.load_salt;
    let suppliers = t.sizes().suppliers;
    match unit {
        Unit::Fixed => batched(s, 0, 25, 25, progress, |s, n| {
            let n = n as u32;
            s.insert_row(NATION, &id_key(n), &nation_row(salt, n))?;
            if n < 5 {
                s.insert_row(REGION, &id_key(n), &region_row(salt, n))?;
                return Ok(2);
            }
            Ok(1)
        }),
        Unit::Parts(lo, hi) => batched(s, lo, hi, BATCH_ROWS / 5, progress, |s, p| {
            let p = p as u32;
            s.insert_row(PART, &id_key(p), &part_row(salt, p))?;
            for i in 0..4 {
                let ps = partsupp_row(salt, p, i, suppliers);
                s.insert_row(PARTSUPP, &partsupp_key(p, ps.ps_suppkey), &ps)?;
            }
            Ok(5)
        }),
        Unit::Suppliers(lo, hi) => batched(s, lo, hi, BATCH_ROWS, progress, |s, k| {
            let k = k as u32;
            s.insert_row(SUPPLIER, &id_key(k), &supplier_row(salt, k))?;
            Ok(1)
        }),
        Unit::Customers(lo, hi) => batched(s, lo, hi, BATCH_ROWS, progress, |s, k| {
            let k = k as u32;
            s.insert_row(CUSTOMER, &id_key(k), &customer_row(salt, k))?;
            Ok(1)
        }),
        Unit::Orders(lo, hi) => batched(s, lo, hi, BATCH_ORDERS, progress, |s, i| {
            let (o, lines) = order_rows(t, i);
            s.insert_row(ORDERS, &orders_key(o.o_orderkey), &o)?;
            for l in &lines {
                s.insert_row(LINEITEM, &lineitem_key(l.l_orderkey, l.l_linenumber), l)?;
            }
            Ok(1 + lines.len() as u64)
        }),
    }
}

/// Insert rows `lo..hi` in transactions of `batch` rows, retrying conflicts; `row`
/// returns how many table rows it inserted, which is what `progress` counts.
fn batched<W: Worker>(
    s: &mut Session<W>,
    lo: u64,
    hi: u64,
    batch: u64,
    progress: &(dyn Fn(u64) + Sync),
    mut row: impl FnMut(&mut Session<W>, u64) -> Result<u64>,
) -> Result<()> {
    let mut at = lo;
    while at < hi {
        let end = (at + batch).min(hi);
        let rows = s.run_retry(u32::MAX, 100, |s| {
            let mut n = 0;
            for i in at..end {
                n += row(s, i)?;
            }
            Ok(n)
        })?;
        progress(rows);
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpch::TpchConfig;

    #[test]
    fn units_cover_every_key_once() {
        let t = Tpch::new(TpchConfig {
            scale_factor: 0.07,
            ..TpchConfig::default()
        })
        .unwrap();
        let z = t.sizes();
        let (mut o, mut p, mut c, mut s) = (0, 0, 0, 0);
        for u in units(&t) {
            match u {
                Unit::Orders(lo, hi) => o += hi - lo,
                Unit::Parts(lo, hi) => p += hi - lo,
                Unit::Customers(lo, hi) => c += hi - lo,
                Unit::Suppliers(lo, hi) => s += hi - lo,
                Unit::Fixed => {}
            }
        }
        assert_eq!(
            (o, p, c, s),
            (
                z.orders,
                z.parts as u64,
                z.customers as u64,
                z.suppliers as u64
            )
        );
    }

    #[test]
    fn rows_are_pure_functions_of_their_keys() {
        let t = Tpch::new(TpchConfig::default()).unwrap();
        let a = order_rows(&t, 77);
        let b = order_rows(&t, 77);
        assert_eq!(row::bytes(&a.0), row::bytes(&b.0));
        assert_eq!(a.1.len(), lines_of_order(t.cfg.load_salt, 77) as usize);
        assert_eq!(row::bytes(&part_row(1, 5)), row::bytes(&part_row(1, 5)));
        assert_ne!(row::bytes(&part_row(1, 5)), row::bytes(&part_row(2, 5)));
    }
}
