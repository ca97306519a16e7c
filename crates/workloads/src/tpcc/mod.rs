//! TPC-C (revision 5.11) as an oltpscope workload kit: the nine tables, their population,
//! the five transactions and the consistency conditions. Owns the kit's configuration
//! and its `Workload` implementation; it never times, prints or retries (the driver
//! does). Deviations from the specification are listed in docs/design/tpcc.md.

pub mod check;
pub mod gen;
pub mod load;
pub mod schema;
pub mod txn;

pub use gen::NurandC;
pub use txn::{
    CustomerBy, DeliveryFloor, DeliveryIn, DistinctIds, NewOrderIn, OrderLineIn, OrderStatusIn,
    PaymentIn, StockLevelIn, TpccInput, TpccWorker, TXN_NAMES,
};

use crate::{Check, Conflicts, RunInfo, Workload};
use api::{Database, Result, Schema, Session};
use schema::DISTRICTS;
use std::time::Duration;
use txn::{DELIVERY_TXN, ORDER_STATUS_TXN, PAYMENT_TXN, STOCK_LEVEL_TXN};

/// The specification's mix (clause 5.2.3 minimums, New-Order taking the rest).
pub const DEFAULT_MIX: [u32; 5] = [45, 43, 4, 4, 4];
/// Largest warehouse count accepted (keys and the checker's per-customer arrays are
/// sized for it: 100,000 warehouses is 3 billion customers).
pub const MAX_WAREHOUSES: u32 = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TpccConfig {
    pub warehouses: u32,
    /// Percentages of new-order, payment, order-status, delivery, stock-level; sum 100.
    pub mix: [u32; 5],
    /// Worker i's home warehouse is (i % W) + 1 (and its Stock-Level district
    /// (i / W) % 10 + 1); otherwise both are drawn uniformly per transaction.
    pub affinity: bool,
    /// Each worker acts as one terminal: keying time before and think time after each
    /// transaction (clause 5.2.5), instead of running transactions back to back.
    pub terminal_times: bool,
    /// Seed of the NURand C constants. Loading and running must use the same value
    /// (the C_LAST C-Run is chosen relative to C-Load, clause 2.1.6.1).
    pub nurand_seed: u64,
    /// Items (and stock rows per warehouse). TEST ONLY: the specification fixes it at
    /// 100,000 and the CLI always uses that; tests may shrink it to load faster.
    pub items: u32,
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            warehouses: 1,
            mix: DEFAULT_MIX,
            // As the CLI's default: every warehouse gets work whatever the thread count.
            affinity: false,
            terminal_times: false,
            nurand_seed: 0x7CC5_EED5,
            items: schema::ITEMS,
        }
    }
}

/// Parse `--mix new-order=50,payment=50`: unnamed types get 0; the sum must be 100.
pub fn parse_mix(s: &str) -> std::result::Result<[u32; 5], String> {
    let mut mix = [0u32; 5];
    let mut seen = [false; 5];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, pct) = part
            .split_once('=')
            .ok_or_else(|| format!("mix entry '{part}' is not NAME=PERCENT"))?;
        let name = name.trim();
        let i = TXN_NAMES.iter().position(|n| *n == name).ok_or_else(|| {
            format!(
                "unknown transaction '{name}' in mix (known: {})",
                TXN_NAMES.join(", ")
            )
        })?;
        if seen[i] {
            return Err(format!("transaction '{name}' named twice in mix"));
        }
        seen[i] = true;
        mix[i] = pct
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|p| *p <= 100)
            .ok_or_else(|| {
                format!(
                    "mix percentage '{}' for {name} is not in 0..=100",
                    pct.trim()
                )
            })?;
    }
    let sum: u32 = mix.iter().sum();
    if sum != 100 {
        return Err(format!("mix percentages sum to {sum}, not 100"));
    }
    Ok(mix)
}

pub struct Tpcc {
    pub cfg: TpccConfig,
    pub c: NurandC,
}

impl Tpcc {
    pub fn new(cfg: TpccConfig) -> std::result::Result<Tpcc, String> {
        if cfg.warehouses == 0 || cfg.warehouses > MAX_WAREHOUSES {
            return Err(format!(
                "warehouses must be in 1..={MAX_WAREHOUSES}, got {}",
                cfg.warehouses
            ));
        }
        let sum: u32 = cfg.mix.iter().sum();
        if sum != 100 {
            return Err(format!("mix percentages sum to {sum}, not 100"));
        }
        if cfg.items == 0 || cfg.items > schema::ITEMS {
            return Err(format!(
                "items must be in 1..={} (the specification's count), got {}",
                schema::ITEMS,
                cfg.items
            ));
        }
        let c = NurandC::from_seed(cfg.nurand_seed);
        Ok(Tpcc { cfg, c })
    }

    /// Salt of the initial O_OL_CNT draws (see `load::initial_ol_cnt`).
    pub fn ol_salt(&self) -> u64 {
        self.cfg.nurand_seed ^ 0x0123_4567_89AB_CDEF
    }
}

impl Workload for Tpcc {
    type Input = TpccInput;
    type WorkerState = TpccWorker;

    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn schema(&self) -> Schema {
        schema::build(self.cfg.warehouses, self.cfg.items)
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &TXN_NAMES
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "warehouses": self.cfg.warehouses,
            "mix": {
                "new-order": self.cfg.mix[0],
                "payment": self.cfg.mix[1],
                "order-status": self.cfg.mix[2],
                "delivery": self.cfg.mix[3],
                "stock-level": self.cfg.mix[4],
            },
            "affinity": self.cfg.affinity,
            "terminal_times": self.cfg.terminal_times,
            "nurand_seed": self.cfg.nurand_seed,
            "items": self.cfg.items,
            "nurand_c": self.c,
        })
    }

    fn load_rows(&self) -> u64 {
        self.cfg.items as u64
            + (1..=self.cfg.warehouses)
                .map(|w| load::warehouse_rows(self, w))
                .sum::<u64>()
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        load::load(self, engine, threads, seed, progress)
    }

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> TpccWorker {
        self.worker_state_impl(worker_id, seed)
    }

    fn next(&self, st: &mut TpccWorker) -> (u32, TpccInput) {
        self.next_impl(st)
    }

    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        st: &mut TpccWorker,
        input: &TpccInput,
    ) -> Result<()> {
        self.execute_impl(s, st, input)
    }

    fn encode_input(&self, _st: &TpccWorker, input: &TpccInput, out: &mut Vec<u8>) {
        txn::encode_input(input, out)
    }

    fn decode_input(&self, _st: &mut TpccWorker, bytes: &[u8]) -> Result<TpccInput> {
        txn::decode_input(bytes)
    }

    /// New-Order: `no W D O_ID` (the order id the body assigned); Payment: `pay W D
    /// NONCE WORKER SEQ` (its History row's key). The other three write nothing a crash
    /// test needs to find (Delivery's effects are covered by the consistency conditions).
    fn txn_tag(&self, st: &TpccWorker, input: &TpccInput) -> Option<String> {
        match input {
            TpccInput::NewOrder(i) => Some(format!("no {} {} {}", i.w_id, i.d_id, st.last_o_id)),
            TpccInput::Payment(p) => Some(format!(
                "pay {} {} {} {} {}",
                p.w_id, p.d_id, p.h_nonce, p.h_worker, p.h_seq
            )),
            _ => None,
        }
    }

    /// Each warehouse a transaction touches, and the New-Order rows of the warehouses
    /// beside Delivery's. The home warehouse, for all five: New-Order reads the
    /// warehouse row Payment updates, both update a district row, Delivery updates all
    /// ten districts' oldest new orders and Stock-Level reads what New-Order writes. (A
    /// district would be finer, but the warehouse row alone makes New-Order and Payment
    /// of one warehouse collide.) New-Order's remote supply warehouses (their Stock
    /// rows) and Payment's remote customer's warehouse too. And the New-Order table's
    /// keys run on from one warehouse's district 10 into the next one's district 1:
    /// Delivery's scan for a district's oldest new order reads the leaf where it finds
    /// one (or, in a district without any, the leaf past the district's end), and a
    /// New-Order of the warehouse before or after may insert into that leaf, failing
    /// the scan at validation (a phantom). In a steady mix that is New-Order of w,
    /// district 10, against Delivery of w + 1; in a mix that drains whole districts,
    /// any of the neighbours' New-Orders, and their Deliveries, which delete from
    /// those leaves. So each New-Order also has its warehouse's New-Order class, and
    /// Delivery its own and the two neighbours' (not their home class: Payment there
    /// does not collide with it; two Deliveries two warehouses apart now wait for each
    /// other without need, rarely).
    fn conflicts(&self, input: &TpccInput) -> Conflicts {
        // Two classes per warehouse: its own, then its New-Order rows'. Exact up to 32
        // warehouses; beyond, classes 64 apart share a bit (`Conflicts`).
        let home = |w: u32| 2 * u64::from(w - 1);
        let new_orders = |w: u32| home(w) + 1;
        match input {
            TpccInput::NewOrder(i) => {
                let mut c = Conflicts::NONE.with(home(i.w_id)).with(new_orders(i.w_id));
                for l in &i.lines[..i.ol_cnt as usize] {
                    c = c.with(home(l.supply_w_id));
                }
                c
            }
            TpccInput::Payment(i) => Conflicts::NONE.with(home(i.w_id)).with(home(i.c_w_id)),
            TpccInput::OrderStatus(i) => Conflicts::NONE.with(home(i.w_id)),
            TpccInput::Delivery(i) => {
                let mut c = Conflicts::NONE.with(home(i.w_id)).with(new_orders(i.w_id));
                if i.w_id > 1 {
                    c = c.with(new_orders(i.w_id - 1));
                }
                if i.w_id < self.cfg.warehouses {
                    c = c.with(new_orders(i.w_id + 1));
                }
                c
            }
            TpccInput::StockLevel(i) => Conflicts::NONE.with(home(i.w_id)),
        }
    }

    fn pauses(&self, st: &mut TpccWorker, ty: u32) -> Option<(Duration, Duration)> {
        use rand::Rng;
        if !self.cfg.terminal_times {
            return None;
        }
        // Clause 5.2.5.7: minimum keying times; mean think times, negative exponential
        // and cut at ten times the mean (clause 5.2.5.4).
        let (keying_s, think_mean_s) = [
            (18.0, 12.0),
            (3.0, 12.0),
            (2.0, 10.0),
            (2.0, 5.0),
            (2.0, 5.0),
        ][ty as usize];
        let r: f64 = st.pause_rng.gen_range(f64::MIN_POSITIVE..1.0);
        let think_s = (-r.ln() * think_mean_s).min(10.0 * think_mean_s);
        Some((
            Duration::from_secs_f64(keying_s),
            Duration::from_secs_f64(think_s),
        ))
    }

    fn committed(&self, st: &mut TpccWorker, input: &TpccInput, measured: bool) {
        if matches!(input, TpccInput::Delivery(_)) {
            // In every phase: the next Delivery of this worker starts past these orders.
            st.floor.committed();
            if measured {
                st.deliveries += 1;
                st.skipped_districts += st.last_skipped as u64;
            }
        }
    }

    fn counters(&self, st: &TpccWorker) -> Vec<(&'static str, u64)> {
        vec![
            ("delivery_skipped_districts", st.skipped_districts),
            ("deliveries", st.deliveries),
            // One per worker: the notes allow for each worker's partly dealt decks.
            ("mix_decks", 1),
        ]
    }

    fn notes(&self, done: &[u64], counters: &[(String, u64)], _measured_s: f64) -> Vec<String> {
        let mut v = vec![];
        if self.cfg.terminal_times {
            v.push("terminal times: each worker is one terminal, with the keying and think times of clause 5.2.5 (tpmC is then at most about 1.29 per worker)".to_string());
        }
        v.push(if self.cfg.affinity {
            "home warehouse: one per worker, (worker mod W) + 1 (--affinity)".to_string()
        } else {
            "home warehouse: drawn uniformly per transaction (the default; --affinity gives each worker its own)".to_string()
        });
        let get = |k: &str| counters.iter().find(|(n, _)| n == k).map_or(0, |(_, c)| *c);
        let total: u64 = done.iter().sum();
        // Each worker deals from its own deck, and the measured interval cuts into up to
        // two decks per worker: over whole decks the mix is exact, but the cut decks may
        // lack up to 2 x (cards of a type) transactions of that type per worker. Clause
        // 5.2.3 is missed only when the counts fall short by more than that, or when the
        // deck itself holds fewer cards than the minimum.
        let decks = get("mix_decks");
        if total > 0 {
            // Clause 5.2.3's minimum shares (New-Order has none: it takes the rest).
            for (t, min) in [
                (PAYMENT_TXN, 43),
                (ORDER_STATUS_TXN, 4),
                (DELIVERY_TXN, 4),
                (STOCK_LEVEL_TXN, 4),
            ] {
                let name = TXN_NAMES[t as usize];
                let cards = self.cfg.mix[t as usize] as u64;
                if cards < min {
                    v.push(format!(
                        "the mix is off clause 5.2.3: --mix gives {name} {cards}%, its minimum is {min}%"
                    ));
                    continue;
                }
                let n = done[t as usize];
                let slack = 2 * cards * decks;
                // Compared exactly, in integers: 3.999% is below 4%.
                if (n + slack) * 100 < min * total {
                    v.push(format!(
                        "the mix missed clause 5.2.3's minimum: {name} {n} of {total} transactions ({}%), below {min}% by more than the {decks} workers' partly dealt decks explain",
                        share_below(n, total)
                    ));
                }
            }
        }
        let (del, skipped) = (get("deliveries"), get("delivery_skipped_districts"));
        if del > 0 {
            v.push(format!(
                "delivery skipped {skipped} of {} districts ({:.2}%): no undelivered order there (clause 2.7.4.2)",
                del * DISTRICTS as u64,
                100.0 * skipped as f64 / (del * DISTRICTS as u64) as f64
            ));
        }
        v
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        // Warehouses 1..=W, every other table loaded with its warehouse.
        let w = self.cfg.warehouses;
        crate::check_extent(
            engine,
            "tpcc",
            &format!("--warehouses {w}"),
            schema::WAREHOUSE,
            &schema::warehouse_key(w),
            &schema::warehouse_key(w + 1),
            |last| format!("warehouse {}", if last { w } else { w + 1 }),
        )
    }

    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        check::check(self, engine, info)
    }
}

/// `n` of `total` as a percentage with three decimals, rounded down: a share just below
/// a minimum never prints as the minimum itself (3.99992% is "3.999", not "4.000").
fn share_below(n: u64, total: u64) -> String {
    let milli = (n as u128 * 100_000 / total as u128) as u64;
    format!("{}.{:03}", milli / 1000, milli % 1000)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_share_below_the_minimum_never_prints_as_the_minimum() {
        assert_eq!(super::share_below(50_997, 1_274_967), "3.999");
        assert_eq!(super::share_below(4, 100), "4.000");
        assert_eq!(super::share_below(1, 3), "33.333");
    }

    use super::*;

    #[test]
    fn parse_mix_accepts_and_rejects() {
        assert_eq!(parse_mix("new-order=50,payment=50"), Ok([50, 50, 0, 0, 0]));
        assert_eq!(
            parse_mix("stock-level=4, delivery=4,order-status=4,payment=43,new-order=45"),
            Ok(DEFAULT_MIX)
        );
        assert_eq!(parse_mix("delivery=100"), Ok([0, 0, 0, 100, 0]));
        assert!(parse_mix("new-order=50").unwrap_err().contains("sum to 50"));
        assert!(parse_mix("neworder=100").unwrap_err().contains("unknown"));
        assert!(parse_mix("payment=x").unwrap_err().contains("'x'"));
        assert!(parse_mix("payment").unwrap_err().contains("NAME=PERCENT"));
        assert!(parse_mix("payment=50,payment=50")
            .unwrap_err()
            .contains("twice"));
        assert!(parse_mix("").unwrap_err().contains("sum to 0"));
    }

    #[test]
    fn new_validates_the_config() {
        let bad = |f: fn(&mut TpccConfig)| {
            let mut c = TpccConfig::default();
            f(&mut c);
            Tpcc::new(c).err().expect("config accepted")
        };
        assert!(bad(|c| c.warehouses = 0).contains("warehouses"));
        assert!(bad(|c| c.mix = [50, 0, 0, 0, 0]).contains("sum to 50"));
        assert!(bad(|c| c.items = 0).contains("items"));
        assert!(Tpcc::new(TpccConfig::default()).is_ok());
    }

    /// The pairs that abort each other under `--interleave` share a class, and
    /// transactions of warehouses apart do not.
    #[test]
    fn conflicts_pair_what_collides() {
        use txn::*;
        let t = Tpcc::new(TpccConfig {
            warehouses: 4,
            ..TpccConfig::default()
        })
        .unwrap();
        let line = |w| OrderLineIn {
            i_id: 1,
            supply_w_id: w,
            quantity: 1,
        };
        let new_order = |w, d, supply: &[u32]| {
            let mut lines = [line(w); schema::MAX_OL_CNT];
            for (l, &s) in lines.iter_mut().zip(supply) {
                l.supply_w_id = s;
            }
            t.conflicts(&TpccInput::NewOrder(NewOrderIn {
                w_id: w,
                d_id: d,
                c_id: 1,
                ol_cnt: 5,
                lines,
                entry_d: 0,
            }))
        };
        let payment = |w, c_w| {
            t.conflicts(&TpccInput::Payment(PaymentIn {
                w_id: w,
                d_id: 1,
                c_w_id: c_w,
                c_d_id: 1,
                customer: CustomerBy::Id(1),
                amount: 1,
                date: 0,
                h_nonce: 0,
                h_worker: 0,
                h_seq: 0,
            }))
        };
        let delivery = |w| {
            t.conflicts(&TpccInput::Delivery(DeliveryIn {
                w_id: w,
                carrier_id: 1,
                date: 0,
            }))
        };
        let stock_level = |w| {
            t.conflicts(&TpccInput::StockLevel(StockLevelIn {
                w_id: w,
                d_id: 1,
                threshold: 10,
            }))
        };
        // One warehouse: all collide.
        assert!(new_order(2, 3, &[]).meets(payment(2, 2)));
        assert!(delivery(2).meets(stock_level(2)));
        // Apart: none.
        assert!(!new_order(1, 3, &[]).meets(new_order(2, 3, &[])));
        assert!(!payment(1, 1).meets(delivery(3)));
        // The New-Order table runs on from a warehouse's district 10 into the next
        // one's district 1 (and, with districts drained, any district's insert may
        // border the neighbour's scan): Delivery meets its neighbours' New-Orders,
        // nothing else of theirs, and New-Orders of neighbours do not meet.
        assert!(new_order(2, 10, &[]).meets(delivery(3)));
        assert!(new_order(3, 1, &[]).meets(delivery(2)));
        assert!(new_order(2, 5, &[]).meets(delivery(3)));
        assert!(!new_order(2, 10, &[]).meets(delivery(4)));
        assert!(!new_order(2, 10, &[]).meets(new_order(3, 1, &[])));
        assert!(!new_order(2, 10, &[]).meets(new_order(3, 10, &[])));
        assert!(!new_order(4, 10, &[]).meets(delivery(1)));
        assert!(delivery(2).meets(delivery(3)));
        assert!(!delivery(1).meets(delivery(4)));
        assert!(!payment(2, 2).meets(delivery(3)));
        assert!(!stock_level(4).meets(delivery(3)));
        // Remote stock and remote customers.
        assert!(new_order(1, 3, &[1, 1, 4]).meets(stock_level(4)));
        assert!(!new_order(1, 3, &[1, 1, 4]).meets(stock_level(3)));
        // Lines past the order's count are not its lines.
        assert!(!new_order(1, 3, &[1, 1, 1, 1, 1, 4]).meets(stock_level(4)));
        assert!(payment(1, 3).meets(delivery(3)));
    }

    #[test]
    fn inputs_repeat_for_a_seed_and_config_names_the_c_values() {
        let t = Tpcc::new(TpccConfig::default()).unwrap();
        let (mut a, mut b) = (t.worker_state(3, 4, 9), t.worker_state(3, 4, 9));
        for _ in 0..1000 {
            let (ta, ia) = t.next(&mut a);
            let (tb, ib) = t.next(&mut b);
            assert_eq!(ta, tb);
            // Dates and History nonces come from the clock; everything else repeats.
            match (ia, ib) {
                (TpccInput::NewOrder(x), TpccInput::NewOrder(y)) => {
                    assert_eq!((x.d_id, x.c_id, x.lines), (y.d_id, y.c_id, y.lines))
                }
                (TpccInput::Payment(x), TpccInput::Payment(y)) => {
                    assert_eq!(
                        (x.customer, x.amount, x.h_seq),
                        (y.customer, y.amount, y.h_seq)
                    );
                    assert_ne!(x.h_nonce, y.h_nonce, "two workers never share a nonce");
                }
                (TpccInput::Delivery(x), TpccInput::Delivery(y)) => {
                    assert_eq!(x.carrier_id, y.carrier_id)
                }
                (x, y) => assert_eq!(x, y),
            }
        }
        let cfg = t.config();
        assert_eq!(cfg["nurand_c"]["c_last_load"], t.c.c_last_load);
        assert_eq!(cfg["nurand_c"]["c_last_run"], t.c.c_last_run);
        assert_eq!(cfg["mix"]["new-order"], 45);
        assert_eq!(t.txn_types()[0], "new-order");
    }

    #[test]
    fn terminal_times_follow_clause_5_2_5_and_leave_the_inputs_alone() {
        use super::txn::NEW_ORDER_TXN;
        let plain = Tpcc::new(TpccConfig::default()).unwrap();
        let timed = Tpcc::new(TpccConfig {
            terminal_times: true,
            ..TpccConfig::default()
        })
        .unwrap();
        let (mut a, mut b) = (plain.worker_state(0, 1, 9), timed.worker_state(0, 1, 9));
        assert!(plain.pauses(&mut a, NEW_ORDER_TXN).is_none());
        let mut think = 0.0;
        let n = 4000;
        for _ in 0..n {
            let (keying, t) = timed.pauses(&mut b, NEW_ORDER_TXN).unwrap();
            assert_eq!(keying, Duration::from_secs(18));
            assert!(t <= Duration::from_secs(120), "{t:?}");
            think += t.as_secs_f64();
        }
        // Mean 12 s (a wide margin: this catches a wrong rule, not sampling noise).
        assert!(
            (11.0..13.0).contains(&(think / n as f64)),
            "{}",
            think / n as f64
        );
        let (k, _) = timed.pauses(&mut b, STOCK_LEVEL_TXN).unwrap();
        assert_eq!(k, Duration::from_secs(2));
        // The same inputs with or without the pauses drawn in between.
        for _ in 0..50 {
            let (ta, _) = plain.next(&mut a);
            let (tb, _) = timed.next(&mut b);
            assert_eq!(ta, tb);
        }
    }

    #[test]
    fn partly_dealt_decks_are_not_a_missed_minimum_but_a_real_shortfall_is() {
        let t = Tpcc::new(TpccConfig::default()).unwrap();
        let decks = |n| [("mix_decks".to_string(), n)];
        // The run of the issue: 2 workers, payment 116,373 of 270,636 (42.999%).
        let done = [121_785, 116_373, 10_826, 10_826, 10_826];
        let total: u64 = done.iter().sum();
        assert!(116_373 * 100 < 43 * total);
        let missed = |notes: &[String]| notes.iter().any(|n| n.contains("missed"));
        assert!(
            !missed(&t.notes(&done, &decks(2), 1.0)),
            "within 2 x 43 x 2 cards"
        );
        // The same counts with no deck to allow for, and a shortfall beyond the decks.
        assert!(missed(&t.notes(&done, &decks(0), 1.0)));
        let short = [121_785 + 200, 116_373 - 200, 10_826, 10_826, 10_826];
        let notes = t.notes(&short, &decks(2), 1.0);
        assert!(
            notes.iter().any(|n| n.contains("payment 116173 of")),
            "{notes:?}"
        );
        // A deck below a minimum is said as such, at any count.
        let t = Tpcc::new(TpccConfig {
            mix: [50, 40, 2, 4, 4],
            ..TpccConfig::default()
        })
        .unwrap();
        let notes = t.notes(&[50, 40, 2, 4, 4], &decks(1), 1.0);
        assert!(
            notes.iter().any(|n| n.contains("--mix gives payment 40%")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("--mix gives order-status 2%")),
            "{notes:?}"
        );
    }

    #[test]
    fn notes_name_the_home_mode_missed_minimums_and_skipped_deliveries() {
        let t = Tpcc::new(TpccConfig::default()).unwrap();
        let notes = t.notes(&[45, 43, 4, 4, 4], &[], 1.0);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].contains("drawn uniformly per transaction"),
            "{notes:?}"
        );
        let counters = [
            ("deliveries".to_string(), 4),
            ("delivery_skipped_districts".to_string(), 3),
        ];
        let notes = t.notes(&[46, 42, 4, 4, 4], &counters, 1.0);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("payment 42 of 100 transactions (42.000%)")),
            "{notes:?}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("skipped 3 of 40 districts")),
            "{notes:?}"
        );
        assert!(
            !notes.iter().any(|n| n.contains("stock-level")),
            "{notes:?}"
        );
    }

    #[test]
    fn next_follows_the_mix_and_the_input_rules() {
        let t = Tpcc::new(TpccConfig {
            warehouses: 4,
            affinity: true,
            ..TpccConfig::default()
        })
        .unwrap();
        let mut st = t.worker_state(5, 8, 42);
        assert_eq!(st.home, Some((2, 2)));
        let mut counts = [0u32; 5];
        let (mut rollbacks, mut remote_lines, mut lines, mut by_name, mut remote_pay) =
            (0, 0, 0, 0, 0);
        let n = 20_000;
        for k in 0..n {
            let (ty, input) = t.next(&mut st);
            assert_eq!(ty, input.txn_type());
            counts[ty as usize] += 1;
            // The card deck: every 100 transactions follow the mix exactly.
            if (k + 1) % 100 == 0 {
                let per = (k + 1) / 100;
                assert_eq!(counts, DEFAULT_MIX.map(|m| m * per), "after {} txns", k + 1);
            }
            match input {
                TpccInput::NewOrder(i) => {
                    assert_eq!(i.w_id, 2);
                    assert!((5..=15).contains(&i.ol_cnt) && (1..=10).contains(&i.d_id));
                    for (k, l) in i.lines[..i.ol_cnt as usize].iter().enumerate() {
                        assert!((1..=10).contains(&l.quantity));
                        if l.i_id == t.cfg.items + 1 {
                            assert_eq!(k as u32, i.ol_cnt - 1, "unused item only last");
                            rollbacks += 1;
                        }
                        lines += 1;
                        remote_lines += (l.supply_w_id != 2) as u32;
                    }
                }
                TpccInput::Payment(p) => {
                    assert!((100..=500_000).contains(&p.amount));
                    by_name += matches!(p.customer, CustomerBy::LastName(_)) as u32;
                    remote_pay += (p.c_w_id != p.w_id) as u32;
                    assert_ne!(p.h_nonce, 0);
                }
                TpccInput::StockLevel(s) => {
                    assert_eq!((s.w_id, s.d_id), (2, 2));
                    assert!((10..=20).contains(&s.threshold));
                }
                _ => {}
            }
        }
        // Wide margins: these only catch a wrong rule, not sampling noise.
        let pct = |x: u32, of: u32| 100.0 * x as f64 / of as f64;
        assert!((43.0..47.0).contains(&pct(counts[0], n)), "{counts:?}");
        assert!((41.0..45.0).contains(&pct(counts[1], n)), "{counts:?}");
        assert!(
            (0.4..1.8).contains(&pct(rollbacks, counts[0])),
            "{rollbacks}"
        );
        assert!(
            (0.5..1.5).contains(&pct(remote_lines, lines)),
            "{remote_lines}/{lines}"
        );
        assert!((56.0..64.0).contains(&pct(by_name, counts[1])), "{by_name}");
        assert!(
            (12.0..18.0).contains(&pct(remote_pay, counts[1])),
            "{remote_pay}"
        );
    }
}
