//! TPC-C population (clause 4.3.3.1): Item once, then every warehouse with its stock,
//! districts, customers, history, orders, order lines and new orders, one warehouse per
//! loader unit. Owns the initial values; it must never run the benchmark transactions.

use super::gen::{self, a_string, n_string, nurand};
use super::schema::*;
use super::Tpcc;
use api::row::{self, Zeroable};
use api::{Database, Result, Session, Worker};
use rand::seq::SliceRandom;
use rand::Rng;

/// Rows per loading transaction (a few hundred kilobytes of rows at most).
const BATCH_ROWS: u32 = 500;
/// Orders per loading transaction (each brings 5-15 order lines).
const BATCH_ORDERS: u32 = 100;

/// O_OL_CNT of initial order `o` of district (w, d): uniform in 5..=15, a pure function
/// of the configuration so `load_rows` can count order lines exactly before loading and
/// a retried loading transaction produces the same count.
pub fn initial_ol_cnt(salt: u64, w: u32, d: u32, o: u32) -> u32 {
    let mut z = salt ^ ((w as u64) << 32 | (d as u64) << 16 | o as u64);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    5 + (z % 11) as u32
}

/// Rows one warehouse's load inserts (everything but Item).
pub fn warehouse_rows(t: &Tpcc, w: u32) -> u64 {
    let mut n = 1 + DISTRICTS as u64 + t.cfg.items as u64;
    for d in 1..=DISTRICTS {
        n += 2 * CUSTOMERS as u64; // customers and their history rows
        n += INITIAL_ORDERS as u64 + (INITIAL_ORDERS - FIRST_UNDELIVERED + 1) as u64;
        n += (1..=INITIAL_ORDERS)
            .map(|o| initial_ol_cnt(t.ol_salt(), w, d, o) as u64)
            .sum::<u64>();
    }
    n
}

pub fn load(
    t: &Tpcc,
    engine: &dyn Database,
    threads: usize,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    let now = gen::now_us();
    // Unit 0 loads Item; unit w loads warehouse w.
    crate::util::parallel_units(engine, threads, t.cfg.warehouses as u64 + 1, |s, unit| {
        let mut rng = crate::util::rng_for(seed, 0x7CC0_0000 + unit);
        if unit == 0 {
            load_items(t, s, &mut rng, progress)
        } else {
            load_warehouse(t, s, unit as u32, &mut rng, now, progress)
        }
    })
}

/// Insert rows `lo..=hi` in transactions of `batch` rows, retrying conflicts; `row`
/// returns how many table rows it inserted, which is what `progress` counts.
fn batched<W: Worker>(
    s: &mut Session<W>,
    lo: u32,
    hi: u32,
    batch: u32,
    progress: &(dyn Fn(u64) + Sync),
    mut row: impl FnMut(&mut Session<W>, u32) -> Result<u64>,
) -> Result<()> {
    let mut at = lo;
    while at <= hi {
        let end = (at + batch - 1).min(hi);
        let rows = s.run_retry(u32::MAX, 100, |s| {
            let mut n = 0;
            for i in at..=end {
                n += row(s, i)?;
            }
            Ok(n)
        })?;
        progress(rows);
        at = end + 1;
    }
    Ok(())
}

fn load_items<W: Worker>(
    t: &Tpcc,
    s: &mut Session<W>,
    rng: &mut impl Rng,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    batched(s, 1, t.cfg.items, BATCH_ROWS, progress, |s, i| {
        let mut r = Item::zeroed();
        r.i_id = i;
        r.i_im_id = rng.gen_range(1..=10_000);
        a_string(rng, 14, 24, &mut r.i_name);
        r.i_price = rng.gen_range(100..=10_000);
        gen::data_50(rng, &mut r.i_data);
        s.insert_row(ITEM, &item_key(i), &r)?;
        Ok(1)
    })
}

fn load_warehouse<W: Worker>(
    t: &Tpcc,
    s: &mut Session<W>,
    w: u32,
    rng: &mut impl Rng,
    now: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    batched(s, 0, 0, 1, progress, |s, _| {
        let mut r = Warehouse::zeroed();
        r.w_id = w;
        a_string(rng, 6, 10, &mut r.w_name);
        a_string(rng, 10, 20, &mut r.w_street_1);
        a_string(rng, 10, 20, &mut r.w_street_2);
        a_string(rng, 10, 20, &mut r.w_city);
        gen::state(rng, &mut r.w_state);
        gen::zip(rng, &mut r.w_zip);
        r.w_tax = rng.gen_range(0..=2000);
        r.w_ytd = 30_000_000;
        s.insert_row(WAREHOUSE, &warehouse_key(w), &r)?;
        for d in 1..=DISTRICTS {
            let mut r = District::zeroed();
            r.d_id = d;
            r.d_w_id = w;
            a_string(rng, 6, 10, &mut r.d_name);
            a_string(rng, 10, 20, &mut r.d_street_1);
            a_string(rng, 10, 20, &mut r.d_street_2);
            a_string(rng, 10, 20, &mut r.d_city);
            gen::state(rng, &mut r.d_state);
            gen::zip(rng, &mut r.d_zip);
            r.d_tax = rng.gen_range(0..=2000);
            r.d_ytd = 3_000_000;
            r.d_next_o_id = INITIAL_ORDERS + 1;
            s.insert_row(DISTRICT, &district_key(w, d), &r)?;
        }
        Ok(1 + DISTRICTS as u64)
    })?;

    batched(s, 1, t.cfg.items, BATCH_ROWS, progress, |s, i| {
        let mut r = Stock::zeroed();
        r.s_i_id = i;
        r.s_w_id = w;
        r.s_quantity = rng.gen_range(10..=100);
        for dist in r.s_dist.iter_mut() {
            a_string(rng, 24, 24, dist);
        }
        gen::data_50(rng, &mut r.s_data);
        s.insert_row(STOCK, &stock_key(w, i), &r)?;
        Ok(1)
    })?;

    for d in 1..=DISTRICTS {
        load_customers(t, s, (w, d), rng, now, progress)?;
        load_orders(t, s, (w, d), rng, now, progress)?;
    }
    Ok(())
}

/// District `(w, d)`'s customers, each with its History row.
fn load_customers<W: Worker>(
    t: &Tpcc,
    s: &mut Session<W>,
    (w, d): (u32, u32),
    rng: &mut impl Rng,
    now: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    batched(s, 1, CUSTOMERS, BATCH_ROWS / 2, progress, |s, c| {
        let mut r = Customer::zeroed();
        r.c_id = c;
        r.c_d_id = d;
        r.c_w_id = w;
        r.c_last = if c <= 1000 {
            gen::last_name(c - 1)
        } else {
            gen::last_name(nurand(rng, 255, 0, 999, t.c.c_last_load))
        };
        row::set_str(&mut r.c_middle, b"OE");
        a_string(rng, 8, 16, &mut r.c_first);
        a_string(rng, 10, 20, &mut r.c_street_1);
        a_string(rng, 10, 20, &mut r.c_street_2);
        a_string(rng, 10, 20, &mut r.c_city);
        gen::state(rng, &mut r.c_state);
        gen::zip(rng, &mut r.c_zip);
        n_string(rng, 16, 16, &mut r.c_phone);
        r.c_since = now;
        let bad = rng.gen_range(0..10) == 0;
        row::set_str(&mut r.c_credit, if bad { b"BC" } else { b"GC" });
        r.c_credit_lim = 5_000_000;
        r.c_discount = rng.gen_range(0..=5000);
        r.c_balance = -1000;
        r.c_ytd_payment = 1000;
        r.c_payment_cnt = 1;
        r.c_delivery_cnt = 0;
        a_string(rng, 300, 500, &mut r.c_data);
        s.insert_row(CUSTOMER, &customer_key(w, d, c), &r)?;

        let mut h = History::zeroed();
        h.h_c_id = c;
        h.h_c_d_id = d;
        h.h_c_w_id = w;
        h.h_d_id = d;
        h.h_w_id = w;
        h.h_date = now;
        h.h_amount = 1000;
        a_string(rng, 12, 24, &mut h.h_data);
        s.insert_row(HISTORY, &history_key(w, d, 0, 0, c as u64), &h)?;
        Ok(2)
    })?;
    Ok(())
}

/// District `(w, d)`'s initial orders with their order lines, the undelivered ones in
/// New-Order.
fn load_orders<W: Worker>(
    t: &Tpcc,
    s: &mut Session<W>,
    (w, d): (u32, u32),
    rng: &mut impl Rng,
    now: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    // O_C_ID: a random permutation of the customer ids.
    let mut perm: Vec<u32> = (1..=CUSTOMERS).collect();
    perm.shuffle(rng);
    batched(s, 1, INITIAL_ORDERS, BATCH_ORDERS, progress, |s, o| {
        let delivered = o < FIRST_UNDELIVERED;
        let ol_cnt = initial_ol_cnt(t.ol_salt(), w, d, o);
        let mut r = Order::zeroed();
        r.o_id = o;
        r.o_d_id = d;
        r.o_w_id = w;
        r.o_c_id = perm[o as usize - 1];
        r.o_entry_d = now;
        r.o_carrier_id = if delivered { rng.gen_range(1..=10) } else { 0 };
        r.o_ol_cnt = ol_cnt;
        r.o_all_local = 1;
        s.insert_row(ORDER, &order_key(w, d, o), &r)?;
        for n in 1..=ol_cnt {
            let mut l = OrderLine::zeroed();
            l.ol_o_id = o;
            l.ol_d_id = d;
            l.ol_w_id = w;
            l.ol_number = n;
            l.ol_i_id = rng.gen_range(1..=t.cfg.items);
            l.ol_supply_w_id = w;
            l.ol_delivery_d = if delivered { now } else { 0 };
            l.ol_quantity = 5;
            l.ol_amount = if delivered {
                0
            } else {
                rng.gen_range(1..=999_999)
            };
            a_string(rng, 24, 24, &mut l.ol_dist_info);
            s.insert_row(ORDER_LINE, &order_line_key(w, d, o, n), &l)?;
        }
        let mut rows = 1 + ol_cnt as u64;
        if !delivered {
            let no = NewOrder {
                no_o_id: o,
                no_d_id: d,
                no_w_id: w,
            };
            s.insert_row(NEW_ORDER, &new_order_key(w, d, o), &no)?;
            rows += 1;
        }
        Ok(rows)
    })?;
    Ok(())
}
