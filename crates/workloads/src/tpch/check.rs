//! TPC-H data checks: the cardinalities of clause 4.2.5 and the population's
//! invariants (every foreign key resolves, the derived columns follow their formulas,
//! the dates are ordered). Reads every table through the transactional API, a page of
//! rows per read-only transaction, so every engine is checked the same way; never
//! writes.

use super::gen::*;
use super::load::order_status;
use super::refresh;
use super::schema::*;
use super::Tpch;
use crate::{Check, Cond};
use api::key::Key;
use api::row::{self, Pod};
use api::{Database, Dir, IndexId, Result, Session, Worker};
use std::collections::HashSet;
use std::ops::Bound;

/// Transaction type number of the checker's read-only transactions.
const CHECK_TXN: u32 = u32::MAX;
/// Rows per read-only transaction.
const PAGE: usize = 2_000;

type Page<T> = Vec<(Key, T)>;

/// One read-only transaction: up to `limit` rows of `index` in `lo..hi`.
fn page<W: Worker, T: Pod>(
    s: &mut Session<W>,
    index: IndexId,
    lo: Bound<&Key>,
    hi: Bound<&Key>,
    limit: usize,
) -> Result<Page<T>> {
    s.run_retry(CHECK_TXN, 100, |s| page_in(s, index, lo, hi, limit))
}

/// Every row of `index` in key order, a page per transaction; returns the row count.
fn each_row<W: Worker, T: Pod>(
    s: &mut Session<W>,
    index: IndexId,
    mut f: impl FnMut(&[u8], &T),
) -> Result<u64> {
    let mut after: Option<Key> = None;
    let mut n = 0;
    loop {
        let lo = after.as_ref().map_or(Bound::Unbounded, Bound::Excluded);
        let rows = page::<W, T>(s, index, lo, Bound::Unbounded, PAGE)?;
        for (k, r) in &rows {
            f(k.as_bytes(), r);
        }
        n += rows.len() as u64;
        match rows.into_iter().last() {
            Some((k, _)) => after = Some(k),
            None => return Ok(n),
        }
    }
}

/// What the small tables leave for the checks of ORDERS and LINEITEM.
struct Dims {
    /// P_RETAILPRICE by part key (0: absent).
    price: Vec<i64>,
    customers: Vec<bool>,
    partsupp: HashSet<u64>,
}

pub fn check(t: &Tpch, engine: &dyn Database) -> Result<Vec<Check>> {
    let mut s = Session::new(engine.worker(0));
    let z = t.sizes();
    let (done, paired) = refreshed(t, &mut s)?;
    let mut card = Cond::new("cardinalities (clause 4.2.5)", "tables");
    let mut keys = Cond::new("S_NATIONKEY, C_NATIONKEY and N_REGIONKEY resolve", "rows");
    let mut parts = Cond::new("P_RETAILPRICE follows its formula", "parts");
    let mut ps = Cond::new("four PARTSUPP rows per part, PS_SUPPKEY resolves", "parts");

    let mut count = |name: &str, got: u64, want: u64| {
        card.record(got == want, || format!("{name} has {got} rows, not {want}"));
    };
    let mut regions = [false; 5];
    let n = each_row::<_, Region>(&mut s, REGION.primary(), |_, r| {
        if let Some(x) = regions.get_mut(r.r_regionkey as usize) {
            *x = true;
        }
    })?;
    count("REGION", n, 5);
    let mut nations = [false; 25];
    let n = each_row::<_, Nation>(&mut s, NATION.primary(), |_, r| {
        keys.record(regions.get(r.n_regionkey as usize) == Some(&true), || {
            format!("nation {} names region {}", r.n_nationkey, r.n_regionkey)
        });
        if let Some(x) = nations.get_mut(r.n_nationkey as usize) {
            *x = true;
        }
    })?;
    count("NATION", n, 25);
    let (n, suppliers) = parties::<_, Supplier>(
        &mut s,
        (SUPPLIER, "supplier", z.suppliers),
        &nations,
        &mut keys,
        |r| (r.s_suppkey, r.s_nationkey),
    )?;
    count("SUPPLIER", n, z.suppliers as u64);
    let (n, customers) = parties::<_, Customer>(
        &mut s,
        (CUSTOMER, "customer", z.customers),
        &nations,
        &mut keys,
        |r| (r.c_custkey, r.c_nationkey),
    )?;
    count("CUSTOMER", n, z.customers as u64);
    let mut price = vec![0i64; z.parts as usize + 1];
    let n = each_row::<_, Part>(&mut s, PART.primary(), |_, r| {
        parts.record(r.p_retailprice == retail_price(r.p_partkey), || {
            format!("part {} costs {} cents", r.p_partkey, r.p_retailprice)
        });
        if let Some(x) = price.get_mut(r.p_partkey as usize) {
            *x = r.p_retailprice;
        }
    })?;
    count("PART", n, z.parts as u64);
    let mut partsupp = HashSet::with_capacity(4 * z.parts as usize);
    let mut per_part = vec![0u8; z.parts as usize + 1];
    let n = each_row::<_, PartSupp>(&mut s, PARTSUPP.primary(), |_, r| {
        partsupp.insert((r.ps_partkey as u64) << 32 | r.ps_suppkey as u64);
        match per_part.get_mut(r.ps_partkey as usize) {
            Some(c) if price[r.ps_partkey as usize] != 0 => *c += 1,
            _ => ps.record(false, || format!("PARTSUPP names part {}", r.ps_partkey)),
        }
        if suppliers.get(r.ps_suppkey as usize) != Some(&true) {
            ps.record(false, || {
                format!("PARTSUPP names supplier {}", r.ps_suppkey)
            });
        }
    })?;
    count("PARTSUPP", n, 4 * z.parts as u64);
    for (p, &c) in per_part.iter().enumerate().skip(1) {
        ps.record(c == 4, || format!("part {p} has {c} PARTSUPP rows"));
    }
    let dims = Dims {
        price,
        customers,
        partsupp,
    };
    let (orders, lines, mut conds) = orders_and_lines(t, &mut s, &dims, &done)?;
    count("ORDERS", orders, done.orders(t));
    count("LINEITEM", lines, done.lineitems(t));
    let idx = orders_index(&mut s, orders)?;
    let mut out = vec![card.finish(), keys.finish(), parts.finish(), ps.finish()];
    let mut p = paired.finish();
    p.detail = format!("{} refresh pairs applied; {}", done.rf2, p.detail);
    out.push(p);
    out.append(&mut conds);
    out.push(idx);
    Ok(out)
}

/// The refresh pairs applied, read from the keys, and the condition that they are in
/// step: the expected ORDERS and LINEITEM follow from them (none found in step:
/// compared as if none ran, so the counts fail too).
fn refreshed<W: Worker>(t: &Tpch, s: &mut Session<W>) -> Result<(refresh::Done, Cond)> {
    let mut paired = Cond::new(
        "refresh functions in step: RF1 and RF2 ran as often, on whole key sets",
        "databases",
    );
    let done = match refresh::done(t, s)? {
        Ok(d) => {
            paired.record(d.rf1 == d.rf2, || {
                format!("RF1 ran {} times, RF2 {} times", d.rf1, d.rf2)
            });
            d
        }
        Err(why) => {
            paired.record(false, || why);
            refresh::Done::default()
        }
    };
    Ok((done, paired))
}

/// SUPPLIER or CUSTOMER (`table`, its name, its expected size): each row's nation key
/// must name a nation; returns the row count and which keys are present.
fn parties<W: Worker, T: Pod>(
    s: &mut Session<W>,
    (table, what, n): (api::TableId, &str, u32),
    nations: &[bool; 25],
    keys: &mut Cond,
    of: impl Fn(&T) -> (u32, u32),
) -> Result<(u64, Vec<bool>)> {
    let mut seen = vec![false; n as usize + 1];
    let rows = each_row::<_, T>(s, table.primary(), |_, r| {
        let (k, nation) = of(r);
        keys.record(nations.get(nation as usize) == Some(&true), || {
            format!("{what} {k} names nation {nation}")
        });
        if let Some(x) = seen.get_mut(k as usize) {
            *x = true;
        }
    })?;
    Ok((rows, seen))
}

/// The conditions on ORDERS and LINEITEM, evaluated a page of orders (with their
/// lines) per transaction; returns the row counts of both tables.
fn orders_and_lines<W: Worker>(
    t: &Tpch,
    s: &mut Session<W>,
    d: &Dims,
    refreshed: &refresh::Done,
) -> Result<(u64, u64, Vec<Check>)> {
    let mut c = OrderConds::new();
    let (mut orders, mut lines) = (0u64, 0u64);
    // Order keys already checked: lines at or below it belong to checked orders.
    let mut done: u64 = 0;
    loop {
        let lo = orders_key(done + 1);
        let (ords, lns) = s.run_retry(CHECK_TXN, 100, |s| {
            let ords = page_in::<W, Orders>(
                s,
                ORDERS.primary(),
                Bound::Included(&lo),
                Bound::Unbounded,
                PAGE,
            )?;
            // The lines of these orders and of any order key between them.
            let hi = match ords.last() {
                Some((_, o)) => lineitem_key(o.o_orderkey + 1, 0),
                None => lineitem_key(u64::MAX, u32::MAX),
            };
            let lo = lineitem_key(done + 1, 0);
            let lns = page_in::<W, Lineitem>(
                s,
                LINEITEM.primary(),
                Bound::Included(&lo),
                Bound::Excluded(&hi),
                usize::MAX,
            )?;
            Ok((ords, lns))
        })?;
        orders += ords.len() as u64;
        lines += lns.len() as u64;
        let mut at = 0;
        for (_, o) in &ords {
            // Lines before this order's: orphans.
            while at < lns.len() && lns[at].1.l_orderkey < o.o_orderkey {
                c.orphan(&lns[at].1);
                at += 1;
            }
            let from = at;
            while at < lns.len() && lns[at].1.l_orderkey == o.o_orderkey {
                at += 1;
            }
            let mine: Vec<&Lineitem> = lns[from..at].iter().map(|(_, l)| l).collect();
            c.order((t, refreshed), d, o, &mine);
        }
        for (_, l) in &lns[at..] {
            c.orphan(l);
        }
        match ords.last() {
            Some((_, o)) => done = o.o_orderkey,
            None => break,
        }
    }
    Ok((orders, lines, c.finish()))
}

/// Up to `limit` rows of `index` in `lo..hi`, inside the caller's transaction.
fn page_in<W: Worker, T: Pod>(
    s: &mut Session<W>,
    index: IndexId,
    lo: Bound<&Key>,
    hi: Bound<&Key>,
    limit: usize,
) -> Result<Page<T>> {
    let mut v = Vec::new();
    s.scan(
        index,
        lo.map(Key::as_bytes),
        hi.map(Key::as_bytes),
        Dir::Forward,
        limit,
        |k, r| {
            v.push((Key::from_bytes(k), row::read::<T>(r)));
            true
        },
    )?;
    Ok(v)
}

struct OrderConds {
    okey: Cond,
    cust: Cond,
    lines: Cond,
    lfk: Cond,
    ext: Cond,
    total: Cond,
    status: Cond,
    dates: Cond,
    flags: Cond,
}

impl OrderConds {
    fn new() -> Self {
        OrderConds {
            okey: Cond::new(
                "O_ORDERKEY: a loaded key (the first 8 of each 32) not yet deleted by RF2, or a key RF1 inserted (the other 24)",
                "orders",
            ),
            cust: Cond::new(
                "O_CUSTKEY resolves to a customer whose key is not a multiple of 3",
                "orders",
            ),
            lines: Cond::new(
                "1 to 7 line items per order, numbered from 1, none without its order",
                "orders",
            ),
            lfk: Cond::new("(L_PARTKEY, L_SUPPKEY) resolves to PARTSUPP", "line items"),
            ext: Cond::new(
                "L_EXTENDEDPRICE = L_QUANTITY x P_RETAILPRICE",
                "line items",
            ),
            total: Cond::new(
                "O_TOTALPRICE = sum(L_EXTENDEDPRICE x (1 + L_TAX) x (1 - L_DISCOUNT))",
                "orders",
            ),
            status: Cond::new(
                "O_ORDERSTATUS agrees with its lines' L_LINESTATUS (F, O or P)",
                "orders",
            ),
            dates: Cond::new(
                "dates: O_ORDERDATE in range, ship > order, receipt > ship, commit 30-90 days after the order",
                "line items",
            ),
            flags: Cond::new(
                "L_LINESTATUS and L_RETURNFLAG agree with the dates and CURRENTDATE",
                "line items",
            ),
        }
    }

    fn orphan(&mut self, l: &Lineitem) {
        self.lines.record(false, || {
            format!(
                "line item ({}, {}) has no order",
                l.l_orderkey, l.l_linenumber
            )
        });
    }

    fn order(
        &mut self,
        (t, done): (&Tpch, &refresh::Done),
        d: &Dims,
        o: &Orders,
        lines: &[&Lineitem],
    ) {
        let k = o.o_orderkey;
        self.okey
            .record(done.holds(t, k), || format!("order key {k}"));
        let c = o.o_custkey as usize;
        self.cust.record(
            d.customers.get(c) == Some(&true) && !c.is_multiple_of(3),
            || format!("order {k} names customer {c}"),
        );
        let numbered = lines
            .iter()
            .enumerate()
            .all(|(i, l)| l.l_linenumber == i as u32 + 1);
        self.lines
            .record((1..=7).contains(&lines.len()) && numbered, || {
                format!(
                    "order {k} has {} lines, numbered in order: {numbered}",
                    lines.len()
                )
            });
        let total = total_price(
            lines
                .iter()
                .map(|l| (l.l_extendedprice, l.l_discount, l.l_tax)),
        );
        self.total.record(o.o_totalprice == total, || {
            format!(
                "order {k}: O_TOTALPRICE {} cents, its lines give {total}",
                o.o_totalprice
            )
        });
        let want = order_status(lines.iter().map(|l| l.l_linestatus[0]));
        self.status
            .record(lines.is_empty() || o.o_orderstatus == want, || {
                format!(
                    "order {k}: O_ORDERSTATUS {}, its lines give {}",
                    o.o_orderstatus[0] as char, want[0] as char
                )
            });
        let od = o.o_orderdate;
        for l in lines {
            self.line(t, d, od, l);
        }
    }

    fn line(&mut self, _t: &Tpch, d: &Dims, od: u32, l: &Lineitem) {
        let at = || format!("line item ({}, {})", l.l_orderkey, l.l_linenumber);
        let pair = (l.l_partkey as u64) << 32 | l.l_suppkey as u64;
        self.lfk.record(d.partsupp.contains(&pair), || {
            format!("{}: part {} supplier {}", at(), l.l_partkey, l.l_suppkey)
        });
        let p = d.price.get(l.l_partkey as usize).copied().unwrap_or(0);
        self.ext.record(
            l.l_quantity % 100 == 0 && l.l_extendedprice == l.l_quantity / 100 * p,
            || {
                format!(
                    "{}: {} x {p} is not {}",
                    at(),
                    l.l_quantity,
                    l.l_extendedprice
                )
            },
        );
        let ok = (START_DATE..=END_DATE - 151).contains(&od)
            && l.l_shipdate > od
            && l.l_receiptdate > l.l_shipdate
            && (30..=90).contains(&(l.l_commitdate.wrapping_sub(od)));
        self.dates.record(ok, || {
            format!(
                "{}: ordered {}, shipped {}, committed {}, received {}",
                at(),
                date_string(od),
                date_string(l.l_shipdate),
                date_string(l.l_commitdate),
                date_string(l.l_receiptdate)
            )
        });
        let status = if l.l_shipdate > CURRENT_DATE {
            b'O'
        } else {
            b'F'
        };
        let flag = match l.l_returnflag[0] {
            b'R' | b'A' => l.l_receiptdate <= CURRENT_DATE,
            b'N' => l.l_receiptdate > CURRENT_DATE,
            _ => false,
        };
        self.flags.record(l.l_linestatus[0] == status && flag, || {
            format!(
                "{}: status {} flag {} for ship date {} and receipt date {}",
                at(),
                l.l_linestatus[0] as char,
                l.l_returnflag[0] as char,
                date_string(l.l_shipdate),
                date_string(l.l_receiptdate)
            )
        });
    }

    fn finish(self) -> Vec<Check> {
        vec![
            self.okey.finish(),
            self.cust.finish(),
            self.lines.finish(),
            self.lfk.finish(),
            self.ext.finish(),
            self.total.finish(),
            self.status.finish(),
            self.dates.finish(),
            self.flags.finish(),
        ]
    }
}

/// The orders-by-customer index: one entry per order, keyed by the order's O_CUSTKEY
/// followed by its O_ORDERKEY.
fn orders_index<W: Worker>(s: &mut Session<W>, orders: u64) -> Result<Check> {
    let mut c = Cond::new(
        "the orders-by-customer index holds each order under its O_CUSTKEY",
        "index entries",
    );
    let n = each_row::<_, Orders>(s, ORDERS.secondary(ORDERS_BY_CUSTOMER), |k, o| {
        let mut want = orders_by_customer_prefix(o.o_custkey);
        want.push_bytes(orders_key(o.o_orderkey).as_bytes());
        c.record(k == want.as_bytes(), || {
            format!("order {} filed under another key", o.o_orderkey)
        });
    })?;
    c.record(n == orders, || {
        format!("{n} index entries for {orders} orders")
    });
    Ok(c.finish())
}
