//! TPC-C consistency conditions (clause 3.3.2): 1-12 (11 only before any Delivery), plus
//! row counts against the committed transactions when the driver knows them. Reads
//! through read-only transactions of one warehouse or one district each; never writes.

use super::schema::*;
use super::Tpcc;
use crate::{Check, Cond, RunInfo};
use api::row;
use api::{Database, Dir, Error, Result, Session, Worker};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;

/// Transaction type number of the checker's read-only transactions.
const CHECK_TXN: u32 = u32::MAX;

fn prefix_range(k: &api::Key) -> (api::Key, api::Key) {
    (*k, k.prefix_end().expect("prefix is never all 0xff"))
}

/// Scan every row of `index` under `prefix` in key order.
fn scan_prefix<W: Worker>(
    s: &mut Session<W>,
    index: api::IndexId,
    prefix: &api::Key,
    mut f: impl FnMut(&[u8], &[u8]),
) -> Result<()> {
    let (lo, hi) = prefix_range(prefix);
    s.scan(
        index,
        Bound::Included(&lo),
        Bound::Excluded(&hi),
        Dir::Forward,
        usize::MAX,
        |k, r| {
            f(k, r);
            true
        },
    )?;
    Ok(())
}

pub fn check(t: &Tpcc, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
    let nw = t.cfg.warehouses;
    let nd = DISTRICTS as usize;
    let nc = CUSTOMERS as usize;
    let mut s = Session::new(engine.worker(0));

    let mut c1 = Cond::new("1: W_YTD = sum(D_YTD)", "warehouses");
    let mut c2 = Cond::new("2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", "districts");
    let mut c3 = Cond::new(
        "3: max(NO_O_ID) - min(NO_O_ID) + 1 = count(New-Order)",
        "districts",
    );
    let mut c4 = Cond::new("4: sum(O_OL_CNT) = count(Order-Line)", "districts");
    let mut c5 = Cond::new("5: O_CARRIER_ID null iff order in New-Order", "orders");
    let mut c6 = Cond::new("6: O_OL_CNT = count(Order-Line) per order", "orders");
    let mut c7 = Cond::new("7: OL_DELIVERY_D null iff O_CARRIER_ID null", "order lines");
    let mut c8 = Cond::new("8: W_YTD = sum(H_AMOUNT) per warehouse", "warehouses");
    let mut c9 = Cond::new("9: D_YTD = sum(H_AMOUNT) per district", "districts");
    let mut c10 = Cond::new(
        "10: C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)",
        "customers",
    );
    let mut c11 = Cond::new(
        "11: count(Order) - count(New-Order) = 2100 (no Delivery committed yet)",
        "districts",
    );
    let mut c12 = Cond::new(
        "12: C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)",
        "customers",
    );

    // Pass 1: History, by (warehouse, district) of the payment.
    let hs = history_pass(&mut s, nw, info.acked.is_some(), &mut c10)?;
    let (cust_hist, history_rows, history_keys) = (hs.cust, hs.rows, hs.keys);
    // Pass 2: Warehouse and District YTD (conditions 1, 8, 9).
    let next_o = ytd_pass(&mut s, nw, &hs.dist, [&mut c1, &mut c8, &mut c9])?;

    // Pass 3: one district at a time: Order, New-Order, Order-Line, Customer.
    let mut order_rows = 0u64;
    for w in 1..=nw {
        for d in 1..=DISTRICTS {
            let next = next_o[(w - 1) as usize * nd + (d - 1) as usize];
            let hist = &cust_hist[cust_index(nw, w, d, 1).unwrap()..][..nc];
            s.run(CHECK_TXN, |s| {
                check_district(
                    s,
                    w,
                    d,
                    next,
                    hist,
                    &mut order_rows,
                    [
                        &mut c2, &mut c3, &mut c4, &mut c5, &mut c6, &mut c7, &mut c10, &mut c11,
                        &mut c12,
                    ],
                )
            })?;
        }
    }

    // Condition 11 holds only until the first Delivery: evaluated only when the driver
    // says none has committed.
    let no_delivery = info
        .committed
        .as_ref()
        .is_some_and(|c| c.get(3).copied().unwrap_or(0) == 0);
    let mut out: Vec<Check> = [c1, c2, c3, c4, c5, c6, c7, c8, c9, c10]
        .into_iter()
        .map(Cond::finish)
        .collect();
    if no_delivery {
        out.push(c11.finish());
    }
    out.push(c12.finish());
    if let (Some(acked), Some(keys)) = (&info.acked, &history_keys) {
        out.push(check_acked(&mut s, &parse_acked(acked), keys)?);
    }
    // Row counts against the committed transactions, when the driver knows them.
    if let Some(committed) = &info.committed {
        out.extend(row_counts(nw, committed, order_rows, history_rows));
    }
    Ok(out)
}

/// The customer `(w, d, c)`'s place in the per-customer vectors (none for a customer the
/// database cannot have).
fn cust_index(nw: u32, w: u32, d: u32, c: u32) -> Option<usize> {
    let (nd, nc) = (DISTRICTS as usize, CUSTOMERS as usize);
    let ok = (1..=nw).contains(&w) && (1..=DISTRICTS).contains(&d);
    (ok && (1..=CUSTOMERS).contains(&c))
        .then(|| ((w - 1) as usize * nd + (d - 1) as usize) * nc + (c - 1) as usize)
}

/// The History table's sums: per paying customer (who may be in another warehouse) and
/// per district of the payment, its row count and, when checking acknowledgements, the
/// (w, d, nonce, worker, seq) of every row.
struct HistorySums {
    cust: Vec<i64>,
    dist: Vec<i64>,
    rows: u64,
    keys: Option<HashSet<PaymentTag>>,
}

/// Pass 1: History, by (warehouse, district) of the payment (condition 10 fails for a
/// row naming no customer).
fn history_pass<W: Worker>(
    s: &mut Session<W>,
    nw: u32,
    acked: bool,
    c10: &mut Cond,
) -> Result<HistorySums> {
    let (nd, nc) = (DISTRICTS as usize, CUSTOMERS as usize);
    let mut cust_hist = vec![0i64; nw as usize * nd * nc];
    let mut dist_hist = vec![0i64; nw as usize * nd];
    let mut history_rows = 0u64;
    let mut history_keys: Option<HashSet<PaymentTag>> = acked.then(HashSet::new);
    for w in 1..=nw {
        for d in 1..=DISTRICTS {
            let dk = district_key(w, d).as_bytes().len();
            s.run(CHECK_TXN, |s| {
                scan_prefix(s, HISTORY.primary(), &district_key(w, d), |k, r| {
                    let h = row::read::<History>(r);
                    history_rows += 1;
                    if let Some(keys) = history_keys.as_mut() {
                        if k.len() == dk + 20 {
                            keys.insert((
                                w,
                                d,
                                u64::from_be_bytes(k[dk..dk + 8].try_into().unwrap()),
                                u32::from_be_bytes(k[dk + 8..dk + 12].try_into().unwrap()),
                                u64::from_be_bytes(k[dk + 12..dk + 20].try_into().unwrap()),
                            ));
                        }
                    }
                    dist_hist[(w - 1) as usize * nd + (d - 1) as usize] += h.h_amount;
                    match cust_index(nw, h.h_c_w_id, h.h_c_d_id, h.h_c_id) {
                        Some(i) => cust_hist[i] += h.h_amount,
                        None => c10.record(false, || {
                            format!(
                                "history row of w={w} d={d} names no customer ({}, {}, {})",
                                h.h_c_w_id, h.h_c_d_id, h.h_c_id
                            )
                        }),
                    }
                })
            })?;
        }
    }
    Ok(HistorySums {
        cust: cust_hist,
        dist: dist_hist,
        rows: history_rows,
        keys: history_keys,
    })
}

/// Pass 2: Warehouse and District YTD (conditions 1, 8, 9) against the History sums
/// per district; returns each district's D_NEXT_O_ID.
fn ytd_pass<W: Worker>(
    s: &mut Session<W>,
    nw: u32,
    dist_hist: &[i64],
    conds: [&mut Cond; 3],
) -> Result<Vec<u32>> {
    let [c1, c8, c9] = conds;
    let nd = DISTRICTS as usize;
    let mut next_o = vec![0u32; nw as usize * nd];
    for w in 1..=nw {
        s.run(CHECK_TXN, |s| {
            let wh: Warehouse = s
                .get_row(WAREHOUSE, &warehouse_key(w))?
                .ok_or_else(|| Error::fatal(format!("tpcc check: warehouse {w} missing")))?;
            let mut d_sum = 0i64;
            let mut h_sum = 0i64;
            for d in 1..=DISTRICTS {
                let di: District = s.get_row(DISTRICT, &district_key(w, d))?.ok_or_else(|| {
                    Error::fatal(format!("tpcc check: district ({w}, {d}) missing"))
                })?;
                let i = (w - 1) as usize * nd + (d - 1) as usize;
                next_o[i] = di.d_next_o_id;
                d_sum += di.d_ytd;
                h_sum += dist_hist[i];
                c9.record(di.d_ytd == dist_hist[i], || {
                    format!(
                        "w={w} d={d}: D_YTD={} sum(H_AMOUNT)={}",
                        di.d_ytd, dist_hist[i]
                    )
                });
            }
            c1.record(wh.w_ytd == d_sum, || {
                format!("w={w}: W_YTD={} sum(D_YTD)={d_sum}", wh.w_ytd)
            });
            c8.record(wh.w_ytd == h_sum, || {
                format!("w={w}: W_YTD={} sum(H_AMOUNT)={h_sum}", wh.w_ytd)
            });
            Ok(())
        })?;
    }
    Ok(next_o)
}

/// Row counts against the committed transactions (`committed`, per type: New-Order
/// first, Payment second): orders and History rows.
fn row_counts(nw: u32, committed: &[u64], order_rows: u64, history_rows: u64) -> [Check; 2] {
    let initial = nw as u64 * DISTRICTS as u64 * INITIAL_ORDERS as u64;
    let new_orders = committed.first().copied().unwrap_or(0);
    let payments = committed.get(1).copied().unwrap_or(0);
    [
        Check::new(
            "orders = initial + committed New-Orders",
            order_rows == initial + new_orders,
            format!("{order_rows} orders; {initial} loaded + {new_orders} committed New-Orders"),
        ),
        Check::new(
            "history = initial + committed Payments",
            history_rows == initial + payments,
            format!(
                "{history_rows} history rows; {initial} loaded + {payments} committed Payments"
            ),
        ),
    ]
}

#[allow(clippy::too_many_arguments)]
fn check_district<W: Worker>(
    s: &mut Session<W>,
    w: u32,
    d: u32,
    next: u32,
    hist: &[i64],
    order_rows: &mut u64,
    conds: [&mut Cond; 9],
) -> Result<()> {
    let [c2, c3, c4, c5, c6, c7, c10, c11, c12] = conds;
    let orders_before = *order_rows;
    let dk = district_key(w, d);
    // Vectors indexed by order id are sized by the largest id present (read first), never
    // by D_NEXT_O_ID, which a damaged database could make huge.
    let slots = top_order_id(s, &dk)? as usize + 1;
    // Per order id: in New-Order, exists, carrier, O_OL_CNT, customer, lines counted.
    let mut in_no = vec![false; slots];
    let mut exists = vec![false; slots];
    let mut carrier = vec![0u32; slots];
    let mut ol_cnt = vec![0u32; slots];
    let mut cust = vec![0u32; slots];
    let mut lines = vec![0u32; slots];

    let (no_count, no_min, no_max) = new_orders(s, &dk, &mut in_no)?;
    let (mut o_max, mut ol_cnt_sum) = (0u32, 0u64);
    scan_prefix(s, ORDER.primary(), &dk, |k, r| {
        let o = row::read::<Order>(r);
        let i = order_id_of_key(k);
        *order_rows += 1;
        o_max = o_max.max(i);
        ol_cnt_sum += o.o_ol_cnt as u64;
        let i = i as usize;
        exists[i] = true;
        carrier[i] = o.o_carrier_id;
        ol_cnt[i] = o.o_ol_cnt;
        cust[i] = o.o_c_id;
    })?;

    let mut delivered = vec![0i64; CUSTOMERS as usize + 1];
    let mut ol_rows = 0u64;
    scan_prefix(s, ORDER_LINE.primary(), &dk, |k, r| {
        let l = row::read::<OrderLine>(r);
        ol_rows += 1;
        let o = order_id_of_key(k) as usize;
        if o >= slots || !exists[o] {
            c6.record(false, || {
                format!("w={w} d={d}: order line of missing order {o}")
            });
            return;
        }
        lines[o] += 1;
        c7.record((l.ol_delivery_d == 0) == (carrier[o] == 0), || {
            format!(
                "w={w} d={d} o={o} ol={}: OL_DELIVERY_D={} O_CARRIER_ID={}",
                l.ol_number, l.ol_delivery_d, carrier[o]
            )
        });
        if l.ol_delivery_d != 0 {
            if let Some(x) = delivered.get_mut(cust[o] as usize) {
                *x += l.ol_amount;
            }
        }
    })?;

    let last = next.saturating_sub(1);
    let no_ok = no_count == 0 || no_max == last;
    c2.record(o_max == last && no_ok, || {
        format!(
            "w={w} d={d}: D_NEXT_O_ID-1={last} max(O_ID)={o_max} max(NO_O_ID)={}",
            if no_count == 0 {
                "none".to_string()
            } else {
                no_max.to_string()
            },
        )
    });
    c3.record(
        no_count == 0 || (no_max - no_min + 1) as u64 == no_count,
        || format!("w={w} d={d}: max={no_max} min={no_min} count={no_count}"),
    );
    let orders = *order_rows - orders_before;
    let undelivered = (INITIAL_ORDERS - FIRST_UNDELIVERED + 1) as u64;
    c11.record(
        orders.checked_sub(no_count) == Some(INITIAL_ORDERS as u64 - undelivered),
        || format!("w={w} d={d}: count(Order)={orders} count(New-Order)={no_count}"),
    );
    c4.record(ol_cnt_sum == ol_rows, || {
        format!("w={w} d={d}: sum(O_OL_CNT)={ol_cnt_sum} order lines={ol_rows}")
    });
    for o in 1..slots {
        if !exists[o] {
            // A hole in the order ids is a condition-5 failure only if New-Order has it.
            if in_no[o] {
                c5.record(false, || format!("w={w} d={d}: new-order {o} has no order"));
            }
            continue;
        }
        c5.record((carrier[o] == 0) == in_no[o], || {
            format!(
                "w={w} d={d} o={o}: O_CARRIER_ID={} in New-Order={}",
                carrier[o], in_no[o]
            )
        });
        c6.record(ol_cnt[o] == lines[o], || {
            format!(
                "w={w} d={d} o={o}: O_OL_CNT={} lines={}",
                ol_cnt[o], lines[o]
            )
        });
    }

    check_customers(s, (w, d), &delivered, hist, [c10, c12])
}

/// The largest order id in district `dk`'s Order and New-Order tables (0: none).
fn top_order_id<W: Worker>(s: &mut Session<W>, dk: &api::Key) -> Result<u32> {
    let mut top = 0u32;
    for t in [ORDER, NEW_ORDER] {
        let (lo, hi) = prefix_range(dk);
        s.scan(
            t.primary(),
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            Dir::Backward,
            1,
            |k, _| {
                top = top.max(order_id_of_key(k));
                false
            },
        )?;
    }
    Ok(top)
}

/// District `dk`'s New-Order rows marked in `in_no` by order id; returns their count,
/// least and largest order id.
fn new_orders<W: Worker>(
    s: &mut Session<W>,
    dk: &api::Key,
    in_no: &mut [bool],
) -> Result<(u64, u32, u32)> {
    let (mut no_count, mut no_min, mut no_max) = (0u64, u32::MAX, 0u32);
    scan_prefix(s, NEW_ORDER.primary(), dk, |k, _| {
        let o = order_id_of_key(k);
        no_count += 1;
        no_min = no_min.min(o);
        no_max = no_max.max(o);
        in_no[o as usize] = true;
    })?;
    Ok((no_count, no_min, no_max))
}

/// Conditions 10 and 12 for each customer of district `(w, d)`: its balance against the
/// delivered order lines' amounts (`delivered`, by customer id) and its payments
/// (`hist`, from customer 1).
fn check_customers<W: Worker>(
    s: &mut Session<W>,
    (w, d): (u32, u32),
    delivered: &[i64],
    hist: &[i64],
    conds: [&mut Cond; 2],
) -> Result<()> {
    let [c10, c12] = conds;
    // The district's customers in one batch of point reads (one round trip where the
    // engine batches: PostgreSQL answered 3,000 reads one by one before).
    let mut rows: Vec<Option<Customer>> = vec![None; CUSTOMERS as usize];
    s.get_batch(
        CUSTOMER,
        CUSTOMERS as usize,
        |i| customer_key(w, d, i as u32 + 1),
        |i, b| rows[i] = Some(row::read::<Customer>(b)),
    )?;
    for (c, cu) in (1..=CUSTOMERS).zip(rows) {
        let cu = cu
            .ok_or_else(|| Error::fatal(format!("tpcc check: customer ({w}, {d}, {c}) missing")))?;
        let del = delivered[c as usize];
        let paid = hist[c as usize - 1];
        c10.record(cu.c_balance == del - paid, || {
            format!(
                "w={w} d={d} c={c}: C_BALANCE={} delivered={del} paid={paid}",
                cu.c_balance
            )
        });
        c12.record(cu.c_balance + cu.c_ytd_payment == del, || {
            format!(
                "w={w} d={d} c={c}: C_BALANCE={} C_YTD_PAYMENT={} delivered={del}",
                cu.c_balance, cu.c_ytd_payment
            )
        });
    }
    Ok(())
}

/// A Payment's acknowledgement tag: its History row's (w, d, nonce, worker, seq).
type PaymentTag = (u32, u32, u64, u32, u64);

/// Tags of acknowledged commits (`Tpcc::txn_tag`), as the driver wrote them.
#[derive(Debug, Default, PartialEq)]
pub struct Acked {
    /// New-Order: (w, d, o_id).
    pub orders: Vec<(u32, u32, u32)>,
    pub payments: Vec<PaymentTag>,
}

/// Parse acknowledgement lines; a line that does not parse whole (a torn last line of a
/// killed run) is not an acknowledgement.
pub fn parse_acked(lines: &[String]) -> Acked {
    let mut a = Acked::default();
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
        match (f.first().copied(), f.len()) {
            (Some("no"), 4) => {
                if let (Some(w), Some(d), Some(o)) = (n(1), n(2), n(3)) {
                    a.orders.push((w as u32, d as u32, o as u32));
                }
            }
            (Some("pay"), 6) => {
                if let (Some(w), Some(d), Some(nonce), Some(wk), Some(seq)) =
                    (n(1), n(2), n(3), n(4), n(5))
                {
                    a.payments.push((w as u32, d as u32, nonce, wk as u32, seq));
                }
            }
            _ => {}
        }
    }
    a
}

/// Every acknowledged New-Order's order row and every acknowledged Payment's History row
/// exist; and no History row of a worker that acknowledged payments is beyond the one
/// payment it may have had in flight (committed, not yet acknowledged).
fn check_acked<W: Worker>(
    s: &mut Session<W>,
    acked: &Acked,
    history: &HashSet<PaymentTag>,
) -> Result<Check> {
    let mut lost = 0u64;
    let mut first: Option<String> = None;
    for chunk in acked.orders.chunks(512) {
        let missing = s.run(CHECK_TXN, |s| {
            let mut missing = Vec::new();
            for &(w, d, o) in chunk {
                if !s.get(ORDER, &order_key(w, d, o), |_| {})? {
                    missing.push((w, d, o));
                }
            }
            Ok(missing)
        })?;
        lost += missing.len() as u64;
        if let (None, Some((w, d, o))) = (&first, missing.first()) {
            first = Some(format!("order ({w}, {d}, {o})"));
        }
    }
    // Highest acknowledged payment sequence per (nonce, worker).
    let mut last: HashMap<(u64, u32), u64> = HashMap::new();
    for p in &acked.payments {
        if !history.contains(p) {
            lost += 1;
            if first.is_none() {
                first = Some(format!("payment {p:?}"));
            }
        }
        let e = last.entry((p.2, p.3)).or_insert(0);
        *e = (*e).max(p.4);
    }
    let unexplained = history
        .iter()
        .filter(|h| last.get(&(h.2, h.3)).is_some_and(|&l| h.4 > l + 1))
        .count();
    let mut detail = format!(
        "{} acknowledged commits ({} New-Orders, {} Payments): {lost} missing; {unexplained} history rows neither acknowledged nor in flight",
        acked.orders.len() + acked.payments.len(),
        acked.orders.len(),
        acked.payments.len()
    );
    if let Some(f) = first {
        detail.push_str("; first missing: ");
        detail.push_str(&f);
    }
    Ok(Check::new(
        "acknowledged commits durable, nothing else",
        lost == 0 && unexplained == 0,
        detail,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgement_lines_parse_and_torn_ones_are_skipped() {
        let lines: Vec<String> = [
            "no 1 2 3001",
            "pay 1 3 99 0 7",
            "no 1 2",
            "pay 1 3 99 0",
            "x",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            parse_acked(&lines),
            Acked {
                orders: vec![(1, 2, 3001)],
                payments: vec![(1, 3, 99, 0, 7)],
            }
        );
    }
}
