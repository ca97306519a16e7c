//! The five TPC-C transactions (clause 2.4-2.8): their inputs, drawn up front so a
//! conflict-aborted transaction is retried with the same inputs, and their bodies over
//! `api::Session`. The bodies never begin or commit (the caller does) and never retry.

use super::gen::{self, nurand};
use super::schema::*;
use super::Tpcc;
use crate::codec::{Dec, Enc};
use crate::util::KitRng;
use api::row::{self, Zeroable};
use api::{Dir, Error, Result, Session, Worker};
use rand::seq::SliceRandom;
use rand::Rng;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

/// Transaction type numbers (the driver computes tpmC from type 0).
pub const NEW_ORDER_TXN: u32 = 0;
pub const PAYMENT_TXN: u32 = 1;
pub const ORDER_STATUS_TXN: u32 = 2;
pub const DELIVERY_TXN: u32 = 3;
pub const STOCK_LEVEL_TXN: u32 = 4;
pub const TXN_NAMES: [&str; 5] = [
    "new-order",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLineIn {
    pub i_id: u32,
    pub supply_w_id: u32,
    pub quantity: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewOrderIn {
    pub w_id: u32,
    pub d_id: u32,
    pub c_id: u32,
    pub ol_cnt: u32,
    /// The first `ol_cnt` entries are the order's lines.
    pub lines: [OrderLineIn; MAX_OL_CNT],
    pub entry_d: u64,
}

/// How Payment and Order-Status select their customer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomerBy {
    Id(u32),
    /// The last name generated from this number (0..=999).
    LastName(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaymentIn {
    pub w_id: u32,
    pub d_id: u32,
    pub c_w_id: u32,
    pub c_d_id: u32,
    pub customer: CustomerBy,
    /// Cents.
    pub amount: i64,
    pub date: u64,
    /// The History row's synthetic key parts (see `schema::history_key`).
    pub h_nonce: u64,
    pub h_worker: u32,
    pub h_seq: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderStatusIn {
    pub w_id: u32,
    pub d_id: u32,
    pub customer: CustomerBy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryIn {
    pub w_id: u32,
    pub carrier_id: u32,
    pub date: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockLevelIn {
    pub w_id: u32,
    pub d_id: u32,
    pub threshold: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpccInput {
    NewOrder(NewOrderIn),
    Payment(PaymentIn),
    OrderStatus(OrderStatusIn),
    Delivery(DeliveryIn),
    StockLevel(StockLevelIn),
}

impl TpccInput {
    pub fn txn_type(&self) -> u32 {
        match self {
            TpccInput::NewOrder(_) => NEW_ORDER_TXN,
            TpccInput::Payment(_) => PAYMENT_TXN,
            TpccInput::OrderStatus(_) => ORDER_STATUS_TXN,
            TpccInput::Delivery(_) => DELIVERY_TXN,
            TpccInput::StockLevel(_) => STOCK_LEVEL_TXN,
        }
    }
}

/// Per-worker generator state and scratch space (reused, so a transaction allocates
/// nothing once the buffers have grown).
pub struct TpccWorker {
    pub rng: KitRng,
    pub worker_id: u32,
    /// With affinity: the worker's home warehouse and (for Stock-Level, whose district
    /// is fixed per terminal, clause 2.8.1.1) its district.
    pub home: Option<(u32, u32)>,
    pub h_nonce: u64,
    pub h_seq: u64,
    /// Scratch: customer ids (Payment/Order-Status by name).
    pub ids: Vec<u32>,
    /// Scratch: Stock-Level's distinct item ids.
    pub items: DistinctIds,
    /// The order id the last New-Order body assigned (its acknowledgement tag names it).
    pub last_o_id: u32,
    /// The card deck the mix is dealt from (clause 5.2.4.2): each type's percentage in
    /// cards, shuffled, dealt in order, reshuffled when used up.
    pub deck: Vec<u8>,
    pub dealt: usize,
    /// Districts the last Delivery body skipped (no undelivered order, clause 2.7.4.2).
    pub last_skipped: u32,
    /// Draws keying and think times (`terminal_times`), apart from `rng` so that the
    /// inputs are the same with or without them.
    pub pause_rng: KitRng,
    /// Measured committed Deliveries and the districts they skipped.
    pub deliveries: u64,
    pub skipped_districts: u64,
    /// Where this worker's Deliveries start their scans of NEW_ORDER.
    pub floor: DeliveryFloor,
}

/// Per district, an order id below which every order is delivered for good, as this
/// worker's own committed Deliveries found: Delivery scans NEW_ORDER from it instead of
/// from the district's first key. An engine may keep a deleted key in its index while
/// some snapshot can still see the row (mvcc, for as long as the oldest running
/// transaction: a long analytical query's, seconds), and a scan from the first key walks
/// every such key; from the floor it walks the few another worker delivered since.
///
/// It lives in the worker's state, which the driver makes anew for every run, for a
/// log's replay and for each database a test runs against: a floor never outlives the
/// database it was found in (kept on the kit, it did: a replay started at the replayed
/// run's floors). Why it never skips an undelivered order:
/// * It is raised only when a Delivery commits (`Workload::committed`), to one past each
///   order that Delivery took: a committed Delivery read a consistent state (a snapshot
///   on mvcc, locks to its end on disk, validated reads on memory; each statement's
///   committed rows at a SQL engine's read committed), in which every order of the
///   district below the one it took was deleted by a committed Delivery, and it deleted
///   that one. A rolled-back Delivery raises nothing (an optimistic engine's doomed
///   transaction may have read an inconsistent state).
/// * A delivered order never comes back: o_ids are handed out in increasing order per
///   district by New-Order (D_NEXT_O_ID, a write every engine orders), so no new order
///   ever takes an id below one already committed, and a committed delete is final.
/// * This worker's next transaction begins after the one that raised the floor
///   committed, so it sees at least what that one saw (a later snapshot, or locks taken
///   later).
#[derive(Debug, Default)]
pub struct DeliveryFloor {
    /// District `(w - 1) * DISTRICTS + d - 1` -> first order id that may be undelivered
    /// (absent: 0, the district's first key). A map: a worker delivers to few districts
    /// of a large database.
    from: rustc_hash::FxHashMap<u32, u32>,
    /// The orders the last Delivery body took, (district, o_id): raised into `from` when
    /// it commits.
    taken: Vec<(u32, u32)>,
}

impl DeliveryFloor {
    fn district(w: u32, d: u32) -> u32 {
        (w - 1) * DISTRICTS + d - 1
    }

    /// The order id district `d` of warehouse `w`'s scan starts from.
    pub fn start(&self, w: u32, d: u32) -> u32 {
        self.from.get(&Self::district(w, d)).copied().unwrap_or(0)
    }

    /// The last Delivery body committed: every order it took is delivered, and (its
    /// scan found each the oldest) so is every order below them.
    pub fn committed(&mut self) {
        for &(dist, o_id) in &self.taken {
            let f = self.from.entry(dist).or_insert(0);
            *f = (*f).max(o_id + 1);
        }
        self.taken.clear();
    }
}

impl Tpcc {
    pub(super) fn worker_state_impl(&self, worker_id: usize, seed: u64) -> TpccWorker {
        let w = self.cfg.warehouses;
        let home = self.cfg.affinity.then(|| {
            let i = worker_id as u32;
            ((i % w) + 1, (i / w) % DISTRICTS + 1)
        });
        let h_nonce = history_nonce();
        TpccWorker {
            rng: crate::util::rng_for(seed, 0x7CC1_0000 + worker_id as u64),
            worker_id: worker_id as u32,
            home,
            h_nonce,
            h_seq: 0,
            ids: Vec::with_capacity(64),
            items: DistinctIds::default(),
            last_o_id: 0,
            deck: (0..5u8)
                .flat_map(|t| std::iter::repeat_n(t, self.cfg.mix[t as usize] as usize))
                .collect(),
            dealt: usize::MAX,
            last_skipped: 0,
            pause_rng: crate::util::rng_for(seed, 0x7CC2_0000 + worker_id as u64),
            deliveries: 0,
            skipped_districts: 0,
            floor: DeliveryFloor::default(),
        }
    }

    fn other_warehouse(&self, rng: &mut KitRng, w: u32) -> u32 {
        debug_assert!(self.cfg.warehouses > 1);
        let o = rng.gen_range(1..self.cfg.warehouses);
        if o >= w {
            o + 1
        } else {
            o
        }
    }

    fn customer_by(&self, rng: &mut KitRng) -> CustomerBy {
        if rng.gen_range(1..=100) <= 60 {
            CustomerBy::LastName(nurand(rng, 255, 0, 999, self.c.c_last_run))
        } else {
            CustomerBy::Id(nurand(rng, 1023, 1, CUSTOMERS, self.c.c_id))
        }
    }

    pub(super) fn next_impl(&self, st: &mut TpccWorker) -> (u32, TpccInput) {
        let rng = &mut st.rng;
        let (w_id, home_d) = match st.home {
            Some(h) => h,
            None => (
                rng.gen_range(1..=self.cfg.warehouses),
                rng.gen_range(1..=DISTRICTS),
            ),
        };
        // Dealt from a shuffled deck, so every 100 transactions of a worker follow the
        // mix exactly and the minimums of clause 5.2.3 hold over whole decks.
        if st.dealt >= st.deck.len() {
            st.deck.shuffle(rng);
            st.dealt = 0;
        }
        let ty = st.deck[st.dealt] as usize;
        st.dealt += 1;
        let multi = self.cfg.warehouses > 1;
        let input = match ty as u32 {
            NEW_ORDER_TXN => {
                let ol_cnt = rng.gen_range(5..=MAX_OL_CNT as u32);
                let rollback = rng.gen_range(1..=100) == 1;
                let mut lines = [OrderLineIn {
                    i_id: 0,
                    supply_w_id: 0,
                    quantity: 0,
                }; MAX_OL_CNT];
                for (n, l) in lines[..ol_cnt as usize].iter_mut().enumerate() {
                    l.i_id = if rollback && n as u32 == ol_cnt - 1 {
                        self.cfg.items + 1 // an unused item id (clause 2.4.1.5)
                    } else {
                        nurand(rng, 8191, 1, self.cfg.items, self.c.ol_i_id)
                    };
                    l.supply_w_id = if multi && rng.gen_range(1..=100) == 1 {
                        self.other_warehouse(rng, w_id)
                    } else {
                        w_id
                    };
                    l.quantity = rng.gen_range(1..=10);
                }
                TpccInput::NewOrder(NewOrderIn {
                    w_id,
                    d_id: rng.gen_range(1..=DISTRICTS),
                    c_id: nurand(rng, 1023, 1, CUSTOMERS, self.c.c_id),
                    ol_cnt,
                    lines,
                    entry_d: gen::now_us(),
                })
            }
            PAYMENT_TXN => {
                let d_id = rng.gen_range(1..=DISTRICTS);
                let (c_w_id, c_d_id) = if !multi || rng.gen_range(1..=100) <= 85 {
                    (w_id, d_id)
                } else {
                    (
                        self.other_warehouse(rng, w_id),
                        rng.gen_range(1..=DISTRICTS),
                    )
                };
                let customer = self.customer_by(rng);
                st.h_seq += 1;
                TpccInput::Payment(PaymentIn {
                    w_id,
                    d_id,
                    c_w_id,
                    c_d_id,
                    customer,
                    amount: rng.gen_range(100..=500_000),
                    date: gen::now_us(),
                    h_nonce: st.h_nonce,
                    h_worker: st.worker_id,
                    h_seq: st.h_seq,
                })
            }
            ORDER_STATUS_TXN => TpccInput::OrderStatus(OrderStatusIn {
                w_id,
                d_id: rng.gen_range(1..=DISTRICTS),
                customer: self.customer_by(rng),
            }),
            DELIVERY_TXN => TpccInput::Delivery(DeliveryIn {
                w_id,
                carrier_id: rng.gen_range(1..=10),
                date: gen::now_us(),
            }),
            STOCK_LEVEL_TXN => TpccInput::StockLevel(StockLevelIn {
                w_id,
                d_id: home_d,
                threshold: rng.gen_range(10..=20),
            }),
            _ => unreachable!("mix has five entries summing to 100"),
        };
        (ty as u32, input)
    }

    pub(super) fn execute_impl<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut TpccWorker,
        input: &TpccInput,
    ) -> Result<()> {
        match input {
            TpccInput::NewOrder(i) => {
                st.last_o_id = self.new_order(s, i)?;
                Ok(())
            }
            TpccInput::Payment(i) => self.payment(s, &mut st.ids, i).map(drop),
            TpccInput::OrderStatus(i) => self.order_status(s, &mut st.ids, i).map(drop),
            TpccInput::Delivery(i) => {
                st.last_skipped = self.delivery(s, &mut st.floor, i)?;
                Ok(())
            }
            TpccInput::StockLevel(i) => self.stock_level(s, st, i),
        }
    }

    /// Clause 2.4.2. Returns the order's id.
    pub fn new_order<W: Worker>(&self, s: &mut Session<W>, i: &NewOrderIn) -> Result<u32> {
        let (w, d) = (i.w_id, i.d_id);
        let lines = &i.lines[..i.ol_cnt as usize];
        // The customer's head and up to 30 random Item and Stock rows are looked up
        // below: ask for their index lines now, so their misses overlap with each other
        // and with the work before.
        s.prefetch_part(CUSTOMER, &customer_key(w, d, i.c_id), CUSTOMER_HEAD);
        for l in lines {
            s.prefetch(ITEM, &item_key(l.i_id));
            s.prefetch(STOCK, &stock_key(l.supply_w_id, l.i_id));
        }
        let wh: Warehouse = need(s.get_row(WAREHOUSE, &warehouse_key(w))?, "warehouse", w)?;
        let mut dist = None;
        s.update_row(DISTRICT, &district_key(w, d), |r: &mut District| {
            dist = Some(*r);
            r.d_next_o_id += 1;
        })?;
        let dist = need(dist, "district", d)?;
        let o_id = dist.d_next_o_id;
        let cust: CustomerHead = need(
            s.get_head(CUSTOMER, &customer_key(w, d, i.c_id))?,
            "customer",
            i.c_id,
        )?;
        insert_order(s, i, o_id)?;

        // The items, then the stocks, each as one batch (one round trip on a SQL
        // engine; a loop of single operations on the others).
        let mut items = [None::<(i64, bool)>; MAX_OL_CNT];
        s.get_batch(
            ITEM,
            lines.len(),
            |n| item_key(lines[n].i_id),
            |n, r| {
                let item = row::read::<Item>(r);
                items[n] = Some((item.i_price, gen::contains_original(&item.i_data)));
            },
        )?;
        // An unused item id means the order was entered wrongly: roll back.
        if items[..lines.len()].iter().any(Option::is_none) {
            return Err(Error::UserAbort);
        }
        let mut stocks = [None; MAX_OL_CNT];
        s.update_row_batch(
            STOCK,
            lines.len(),
            |n| stock_key(lines[n].supply_w_id, lines[n].i_id),
            |n, r: &mut Stock| {
                let l = &lines[n];
                let q = l.quantity as i32;
                r.s_quantity = if r.s_quantity >= q + 10 {
                    r.s_quantity - q
                } else {
                    r.s_quantity - q + 91
                };
                r.s_ytd += l.quantity;
                r.s_order_cnt += 1;
                if l.supply_w_id != w {
                    r.s_remote_cnt += 1;
                }
                stocks[n] = Some((r.s_dist[d as usize - 1], gen::contains_original(&r.s_data)));
            },
        )?;
        let mut total: i64 = 0;
        let mut brand_generic = [b'G'; MAX_OL_CNT];
        for (n, l) in lines.iter().enumerate() {
            let (i_price, i_original) = items[n].expect("checked above");
            let (dist_info, s_original) = need(stocks[n], "stock", l.i_id)?;
            if s_original && i_original {
                brand_generic[n] = b'B';
            }
            let amount = l.quantity as i64 * i_price;
            total += amount;
            let ol = OrderLine {
                ol_delivery_d: 0,
                ol_amount: amount,
                ol_o_id: o_id,
                ol_d_id: d,
                ol_w_id: w,
                ol_number: n as u32 + 1,
                ol_i_id: l.i_id,
                ol_supply_w_id: l.supply_w_id,
                ol_quantity: l.quantity,
                ol_dist_info: dist_info,
                _pad: [0; 4],
            };
            s.insert_row(ORDER_LINE, &order_line_key(w, d, o_id, n as u32 + 1), &ol)?;
        }
        // The terminal output (clause 2.4.3.3): total in cents, after discount and tax.
        let total = total as i128
            * (10_000 - cust.c_discount as i128)
            * (10_000 + wh.w_tax as i128 + dist.d_tax as i128)
            / 100_000_000;
        std::hint::black_box((total, brand_generic, cust.c_last, cust.c_credit));
        Ok(o_id)
    }

    /// The id of the customer selected by id or by last name (the ceil(n/2)-th of the
    /// matches ordered by first name, clause 2.5.2.2).
    fn find_customer<W: Worker>(
        &self,
        s: &mut Session<W>,
        ids: &mut Vec<u32>,
        w: u32,
        d: u32,
        by: CustomerBy,
    ) -> Result<u32> {
        match by {
            CustomerBy::Id(c) => Ok(c),
            CustomerBy::LastName(num) => {
                let prefix = customer_name_prefix(w, d, &gen::last_name(num));
                let end = prefix.prefix_end().expect("name prefix is never all 0xff");
                ids.clear();
                // Only C_ID of each 680-byte row (the rows' first line).
                let c_id = std::mem::offset_of!(Customer, c_id);
                s.scan_part(
                    CUSTOMER.secondary(0),
                    Bound::Included(&prefix),
                    Bound::Excluded(&end),
                    Dir::Forward,
                    CUSTOMERS as usize,
                    c_id..c_id + 4,
                    |_, r| {
                        ids.push(api::row::field::<u32>(r, 0));
                        true
                    },
                )?;
                // Customers 1..=1000 of every district carry all 1,000 names, so an
                // empty match means a damaged database.
                if ids.is_empty() {
                    return Err(Error::fatal(format!(
                        "tpcc: no customer named {} in district ({w}, {d}) (damaged database?)",
                        String::from_utf8_lossy(row::get_str(&gen::last_name(num)))
                    )));
                }
                Ok(ids[(ids.len() - 1) / 2])
            }
        }
    }

    /// Clause 2.5.2. Returns the paying customer's id.
    pub fn payment<W: Worker>(
        &self,
        s: &mut Session<W>,
        ids: &mut Vec<u32>,
        i: &PaymentIn,
    ) -> Result<u32> {
        let (w, d) = (i.w_id, i.d_id);
        if let CustomerBy::Id(c) = i.customer {
            // Looked up after the warehouse and the district: its misses overlap those.
            s.prefetch_part(
                CUSTOMER,
                &customer_key(i.c_w_id, i.c_d_id, c),
                CUSTOMER_HEAD,
            );
        }
        let mut w_name = None;
        s.update_row(WAREHOUSE, &warehouse_key(w), |r: &mut Warehouse| {
            r.w_ytd += i.amount;
            w_name = Some(r.w_name);
        })?;
        let w_name = need(w_name, "warehouse", w)?;
        let mut d_name = None;
        s.update_row(DISTRICT, &district_key(w, d), |r: &mut District| {
            r.d_ytd += i.amount;
            d_name = Some(r.d_name);
        })?;
        let d_name = need(d_name, "district", d)?;
        let c_id = self.find_customer(s, ids, i.c_w_id, i.c_d_id, i.customer)?;
        let ckey = customer_key(i.c_w_id, i.c_d_id, c_id);
        let mut bad_credit = false;
        let found = s.update_head(CUSTOMER, &ckey, |r: &mut CustomerHead| {
            // The terminal shows the customer's name, address, credit and balance.
            std::hint::black_box((&r.c_first, &r.c_street_1, r.c_credit_lim, r.c_since));
            r.c_balance -= i.amount;
            r.c_ytd_payment += i.amount;
            r.c_payment_cnt += 1;
            bad_credit = &r.c_credit == b"BC";
        })?;
        need(found.then_some(()), "customer", c_id)?;
        // Only a bad-credit customer's row is changed past its head.
        if bad_credit {
            s.update_row(CUSTOMER, &ckey, |r: &mut Customer| {
                // Clause 2.5.2.2: prepend the payment's ids and amount, keep 500 chars.
                let mut buf = [0u8; 500];
                let mut cur = std::io::Cursor::new(&mut buf[..]);
                let _ = std::io::Write::write_fmt(
                    &mut cur,
                    format_args!(
                        "{} {} {} {} {} {}.{:02} ",
                        c_id,
                        i.c_d_id,
                        i.c_w_id,
                        d,
                        w,
                        i.amount / 100,
                        i.amount % 100
                    ),
                );
                let n = cur.position() as usize;
                let old = row::get_str(&r.c_data);
                let keep = old.len().min(500 - n);
                buf[n..n + keep].copy_from_slice(&old[..keep]);
                r.c_data = buf;
            })?;
        }
        let mut h = History::zeroed();
        h.h_c_id = c_id;
        h.h_c_d_id = i.c_d_id;
        h.h_c_w_id = i.c_w_id;
        h.h_d_id = d;
        h.h_w_id = w;
        h.h_date = i.date;
        h.h_amount = i.amount;
        // H_DATA: W_NAME, four spaces, D_NAME.
        let wn = row::get_str(&w_name);
        let dn = row::get_str(&d_name);
        h.h_data[..wn.len()].copy_from_slice(wn);
        h.h_data[wn.len()..wn.len() + 4].copy_from_slice(b"    ");
        h.h_data[wn.len() + 4..wn.len() + 4 + dn.len()].copy_from_slice(dn);
        let hk = history_key(w, d, i.h_nonce, i.h_worker, i.h_seq);
        s.insert_row(HISTORY, &hk, &h)?;
        Ok(c_id)
    }

    /// Clause 2.6.2. Returns the customer's id, its latest order's id and the number of
    /// lines read.
    pub fn order_status<W: Worker>(
        &self,
        s: &mut Session<W>,
        ids: &mut Vec<u32>,
        i: &OrderStatusIn,
    ) -> Result<(u32, u32, usize)> {
        let (w, d) = (i.w_id, i.d_id);
        let c_id = self.find_customer(s, ids, w, d, i.customer)?;
        let cust: CustomerHead = need(
            s.get_head(CUSTOMER, &customer_key(w, d, c_id))?,
            "customer",
            c_id,
        )?;
        let prefix = order_customer_prefix(w, d, c_id);
        let end = prefix
            .prefix_end()
            .expect("customer prefix is never all 0xff");
        let mut last = None;
        s.scan(
            ORDER.secondary(0),
            Bound::Included(&prefix),
            Bound::Excluded(&end),
            Dir::Backward,
            1,
            |_, r| {
                last = Some(row::read::<Order>(r));
                false
            },
        )?;
        // Every customer has an order after population; a missing one is damage.
        let order = need(last, "order of customer", c_id)?;
        let lo = order_key(w, d, order.o_id);
        let hi = lo.prefix_end().expect("order prefix is never all 0xff");
        let mut sum = 0i64;
        let n = s.scan(
            ORDER_LINE.primary(),
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            Dir::Forward,
            MAX_OL_CNT,
            |_, r| {
                let l = row::read::<OrderLine>(r);
                sum += l.ol_amount ^ l.ol_i_id as i64 ^ l.ol_delivery_d as i64;
                true
            },
        )?;
        std::hint::black_box((cust.c_balance, cust.c_first, order.o_carrier_id, sum));
        Ok((c_id, order.o_id, n))
    }

    /// Clause 2.7.4: all ten districts in one transaction (the spec allows deferred
    /// execution; we run it in-line), each district's scan from `floor` (see
    /// [`DeliveryFloor`]; the caller tells it when the transaction commits). Returns the
    /// districts skipped.
    pub fn delivery<W: Worker>(
        &self,
        s: &mut Session<W>,
        floor: &mut DeliveryFloor,
        i: &DeliveryIn,
    ) -> Result<u32> {
        let w = i.w_id;
        let mut skipped = 0;
        floor.taken.clear();
        // Per district its oldest undelivered order, taken out of New-Order; then the
        // taken orders, their lines and their customers each as one batch (an engine
        // that does not batch runs the same operations one by one; a SQL engine sends
        // each batch as one statement instead of one per district or per line).
        let mut taken: Vec<(u32, u32)> = Vec::with_capacity(DISTRICTS as usize);
        for d in 1..=DISTRICTS {
            // Both bounds full keys of the district: a SQL engine's condition is two
            // equalities and one range of NO_O_ID.
            let lo = new_order_key(w, d, floor.start(w, d));
            let hi = new_order_key(w, d, u32::MAX);
            let mut oldest = None;
            s.scan(
                NEW_ORDER.primary(),
                Bound::Included(&lo),
                Bound::Included(&hi),
                Dir::Forward,
                1,
                |_, r| {
                    oldest = Some(row::read::<NewOrder>(r).no_o_id);
                    false
                },
            )?;
            // No undelivered order in this district: skipped (clause 2.7.4.2).
            let Some(o_id) = oldest else {
                skipped += 1;
                continue;
            };
            if !s.delete(NEW_ORDER, &new_order_key(w, d, o_id))? {
                // Only at read committed (a SQL engine's --isolation): a concurrent
                // Delivery took it between the scan and the delete. Retried, it takes
                // the next one; at the stronger levels the scan's read prevents it.
                return Err(Error::Conflict(
                    "tpcc: a concurrent delivery took the oldest new-order",
                ));
            }
            floor.taken.push((DeliveryFloor::district(w, d), o_id));
            taken.push((d, o_id));
        }
        let mut orders: Vec<Option<Order>> = vec![None; taken.len()];
        s.update_row_batch(
            ORDER,
            taken.len(),
            |n| order_key(w, taken[n].0, taken[n].1),
            |n, r: &mut Order| {
                r.o_carrier_id = i.carrier_id;
                orders[n] = Some(*r);
            },
        )?;
        let mut lines: Vec<(usize, u32)> = Vec::new();
        for (n, (o, &(d, o_id))) in orders.iter().zip(&taken).enumerate() {
            let o = need(*o, "order", o_id)?;
            // The lines are updated first: the customers' heads come meanwhile.
            s.prefetch_part(CUSTOMER, &customer_key(w, d, o.o_c_id), CUSTOMER_HEAD);
            lines.extend((1..=o.o_ol_cnt).map(|l| (n, l)));
        }
        let mut total = vec![0i64; taken.len()];
        let mut found = vec![0u32; taken.len()];
        s.update_row_batch(
            ORDER_LINE,
            lines.len(),
            |k| {
                let (n, l) = lines[k];
                order_line_key(w, taken[n].0, taken[n].1, l)
            },
            |k, r: &mut OrderLine| {
                let n = lines[k].0;
                r.ol_delivery_d = i.date;
                total[n] += r.ol_amount;
                found[n] += 1;
            },
        )?;
        for (n, o) in orders.iter().enumerate() {
            let o = o.expect("checked above");
            if found[n] != o.o_ol_cnt {
                let (d, o_id) = taken[n];
                return Err(Error::fatal(format!(
                    "tpcc: order ({w}, {d}, {o_id}) has {} of its {} order lines",
                    found[n], o.o_ol_cnt
                )));
            }
        }
        let customer = |n: usize| orders[n].expect("checked above").o_c_id;
        let mut paid = vec![false; taken.len()];
        s.update_head_batch(
            CUSTOMER,
            taken.len(),
            |n| customer_key(w, taken[n].0, customer(n)),
            |n, r: &mut CustomerHead| {
                r.c_balance += total[n];
                r.c_delivery_cnt += 1;
                paid[n] = true;
            },
        )?;
        if let Some(n) = paid.iter().position(|p| !p) {
            need(None::<()>, "customer", customer(n))?;
        }
        Ok(skipped)
    }

    /// Clause 2.8.2: distinct items in the district's last 20 orders whose stock in this
    /// warehouse is below the threshold. Returns the count.
    pub fn stock_level<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut TpccWorker,
        i: &StockLevelIn,
    ) -> Result<()> {
        self.stock_level_count(s, &mut st.items, i).map(|n| {
            std::hint::black_box(n);
        })
    }

    pub fn stock_level_count<W: Worker>(
        &self,
        s: &mut Session<W>,
        items: &mut DistinctIds,
        i: &StockLevelIn,
    ) -> Result<u32> {
        let (w, d) = (i.w_id, i.d_id);
        // Clause 3.4.1: Stock-Level needs only level 1 isolation (no dirty reads).
        s.read_committed();
        let dist: District = need(s.get_row(DISTRICT, &district_key(w, d))?, "district", d)?;
        let next = dist.d_next_o_id;
        let lo = order_key(w, d, next.saturating_sub(20));
        let hi = order_key(w, d, next);
        items.clear();
        // Only OL_I_ID of each order line.
        let i_id = std::mem::offset_of!(OrderLine, ol_i_id);
        s.scan_part(
            ORDER_LINE.primary(),
            Bound::Included(&lo),
            Bound::Excluded(&hi),
            Dir::Forward,
            20 * MAX_OL_CNT,
            i_id..i_id + 4,
            |_, r| {
                items.add(api::row::field::<u32>(r, 0));
                true
            },
        )?;
        let ids = &items.ids;
        // One field of the 316-byte row: an engine may bring in and read only its word.
        let q_at = std::mem::offset_of!(Stock, s_quantity);
        for &item in ids.iter() {
            s.prefetch_part(STOCK, &stock_key(w, item), q_at..q_at + 4);
        }
        let mut low = 0;
        let found = s.get_part_batch(
            STOCK,
            ids.len(),
            |n| stock_key(w, ids[n]),
            q_at..q_at + 4,
            |_, b| {
                if bytemuck::pod_read_unaligned::<i32>(b) < i.threshold {
                    low += 1;
                }
            },
        )?;
        if found != ids.len() {
            let missing = ids.len() - found;
            return Err(Error::fatal(format!(
                "tpcc: {missing} stock row(s) of warehouse {w} not found (damaged database?)"
            )));
        }
        Ok(low)
    }
}

/// Distinct item ids (clause 2.8.2.2 counts each item of the last 20 orders once), in
/// the order first seen: a bitmap over the ids marks those taken, and is cleared word by
/// word at the next use. Sorting a Stock-Level's ~200 ids to drop repeats was 5% of its
/// instructions.
#[derive(Default)]
pub struct DistinctIds {
    pub ids: Vec<u32>,
    seen: Vec<u64>,
}

impl DistinctIds {
    /// Ids past every item id (a damaged database's) are checked against the list
    /// instead: the bitmap never grows past the items' range.
    const MAX_WORDS: usize = (ITEMS as usize + 1) / 64 + 1;

    pub fn clear(&mut self) {
        for &id in &self.ids {
            if let Some(w) = self.seen.get_mut(id as usize / 64) {
                *w = 0;
            }
        }
        self.ids.clear();
    }

    #[inline]
    pub fn add(&mut self, id: u32) {
        match self.seen.get_mut(id as usize / 64) {
            Some(word) => {
                let bit = 1u64 << (id % 64);
                if *word & bit == 0 {
                    *word |= bit;
                    self.ids.push(id);
                }
            }
            None => self.add_past_bitmap(id),
        }
    }

    /// `add` of an id past the bitmap's words: grow it, or past every item id, search
    /// the list.
    #[cold]
    #[inline(never)]
    fn add_past_bitmap(&mut self, id: u32) {
        let w = id as usize / 64;
        if w >= Self::MAX_WORDS {
            if !self.ids.contains(&id) {
                self.ids.push(id);
            }
            return;
        }
        self.seen.resize(w + 1, 0);
        self.seen[w] |= 1u64 << (id % 64);
        self.ids.push(id);
    }
}

/// A History-key nonce never handed out before: unique within the process (a counter)
/// and across processes (it starts from the clock in units of 1/1024 microsecond), and
/// never 0, the loaded rows' nonce.
fn history_nonce() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let floor = gen::now_us() << 10;
    let prev = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
            Some(l.max(floor) + 1)
        })
        .expect("closure always returns Some");
    prev.max(floor) + 1
}

/// A row the transaction logic requires; its absence means a damaged or foreign
/// database, an operating error rather than a bug.
fn need<T>(v: Option<T>, what: &str, id: u32) -> Result<T> {
    v.ok_or_else(|| Error::fatal(format!("tpcc: {what} {id} not found (damaged database?)")))
}

fn encode_customer(e: &mut Enc<'_>, c: &CustomerBy) {
    match *c {
        CustomerBy::Id(id) => e.u8(0).u32(id),
        CustomerBy::LastName(n) => e.u8(1).u32(n),
    };
}

fn decode_customer(d: &mut Dec<'_>) -> Result<CustomerBy> {
    match d.u8()? {
        0 => Ok(CustomerBy::Id(d.u32()?)),
        1 => Ok(CustomerBy::LastName(d.u32()?)),
        t => Err(d.bad_tag(t as u32)),
    }
}

/// A TPC-C command: the variant's type number, then its fields in declaration order
/// (New-Order: only its `ol_cnt` lines). The inputs carry everything the bodies take
/// besides the database (dates and History key parts are drawn by `next`).
pub fn encode_input(input: &TpccInput, out: &mut Vec<u8>) {
    let mut e = Enc(out);
    e.u32(input.txn_type());
    match input {
        TpccInput::NewOrder(i) => {
            e.u32(i.w_id).u32(i.d_id).u32(i.c_id).u32(i.ol_cnt);
            for l in &i.lines[..i.ol_cnt as usize] {
                e.u32(l.i_id).u32(l.supply_w_id).u32(l.quantity);
            }
            e.u64(i.entry_d);
        }
        TpccInput::Payment(p) => {
            e.u32(p.w_id).u32(p.d_id).u32(p.c_w_id).u32(p.c_d_id);
            encode_customer(&mut e, &p.customer);
            e.i64(p.amount)
                .u64(p.date)
                .u64(p.h_nonce)
                .u32(p.h_worker)
                .u64(p.h_seq);
        }
        TpccInput::OrderStatus(o) => {
            e.u32(o.w_id).u32(o.d_id);
            encode_customer(&mut e, &o.customer);
        }
        TpccInput::Delivery(d) => {
            e.u32(d.w_id).u32(d.carrier_id).u64(d.date);
        }
        TpccInput::StockLevel(s) => {
            e.u32(s.w_id).u32(s.d_id).i32(s.threshold);
        }
    }
}

/// Decode a command written by [`encode_input`].
pub fn decode_input(bytes: &[u8]) -> Result<TpccInput> {
    let mut d = Dec::new(bytes, "tpcc");
    let input = match d.u32()? {
        NEW_ORDER_TXN => {
            let (w_id, d_id, c_id, ol_cnt) = (d.u32()?, d.u32()?, d.u32()?, d.u32()?);
            if ol_cnt as usize > MAX_OL_CNT {
                return Err(d.bad_tag(ol_cnt));
            }
            let mut lines = [OrderLineIn {
                i_id: 0,
                supply_w_id: 0,
                quantity: 0,
            }; MAX_OL_CNT];
            for l in &mut lines[..ol_cnt as usize] {
                *l = OrderLineIn {
                    i_id: d.u32()?,
                    supply_w_id: d.u32()?,
                    quantity: d.u32()?,
                };
            }
            TpccInput::NewOrder(NewOrderIn {
                w_id,
                d_id,
                c_id,
                ol_cnt,
                lines,
                entry_d: d.u64()?,
            })
        }
        PAYMENT_TXN => {
            let (w_id, d_id, c_w_id, c_d_id) = (d.u32()?, d.u32()?, d.u32()?, d.u32()?);
            let customer = decode_customer(&mut d)?;
            TpccInput::Payment(PaymentIn {
                w_id,
                d_id,
                c_w_id,
                c_d_id,
                customer,
                amount: d.i64()?,
                date: d.u64()?,
                h_nonce: d.u64()?,
                h_worker: d.u32()?,
                h_seq: d.u64()?,
            })
        }
        ORDER_STATUS_TXN => {
            let (w_id, d_id) = (d.u32()?, d.u32()?);
            TpccInput::OrderStatus(OrderStatusIn {
                w_id,
                d_id,
                customer: decode_customer(&mut d)?,
            })
        }
        DELIVERY_TXN => TpccInput::Delivery(DeliveryIn {
            w_id: d.u32()?,
            carrier_id: d.u32()?,
            date: d.u64()?,
        }),
        STOCK_LEVEL_TXN => TpccInput::StockLevel(StockLevelIn {
            w_id: d.u32()?,
            d_id: d.u32()?,
            threshold: d.i32()?,
        }),
        t => return Err(d.bad_tag(t)),
    };
    d.end()?;
    Ok(input)
}

/// New-Order's order `o_id` entered: its Order row and its New-Order row.
#[inline]
fn insert_order<W: Worker>(s: &mut Session<W>, i: &NewOrderIn, o_id: u32) -> Result<()> {
    let (w, d) = (i.w_id, i.d_id);
    let lines = &i.lines[..i.ol_cnt as usize];
    let all_local = lines.iter().all(|l| l.supply_w_id == w);
    let order = Order {
        o_entry_d: i.entry_d,
        o_id,
        o_d_id: d,
        o_w_id: w,
        o_c_id: i.c_id,
        o_carrier_id: 0,
        o_ol_cnt: i.ol_cnt,
        o_all_local: all_local as u32,
        _pad: [0; 4],
    };
    s.insert_row(ORDER, &order_key(w, d, o_id), &order)?;
    let no = NewOrder {
        no_o_id: o_id,
        no_d_id: d,
        no_w_id: w,
    };
    s.insert_row(NEW_ORDER, &new_order_key(w, d, o_id), &no)
}
