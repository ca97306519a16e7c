//! The market exchange emulator (the specification's MEE) and the input
//! generator the driver calls: committed market orders become Trade-Results at the
//! market's price; every committed order adds a ticker entry, and each 20 entries make
//! a Market-Feed, whose triggered limit orders become Trade-Results in turn. Before
//! dealing from the mix, a worker takes the market's work (Trade-Cleanup once at the
//! start, Data-Maintenance when due, then Market-Feeds and Trade-Results). Market time
//! is the count of orders the market has received, so a seed repeats the prices.
//! Owns the queues; it never touches the database.

use super::gen::*;
use super::schema::Symb;
use super::txn::*;
use super::Tpce;
use rand::seq::SliceRandom;
use rand::Rng;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Queues {
    /// Submitted orders to complete: (trade id, price).
    results: VecDeque<(u64, i64)>,
    ticker: Vec<(Symb, i64, u32)>,
    feeds: VecDeque<Vec<(Symb, i64, u32)>>,
    /// Orders received (market time).
    tick: u64,
}

#[derive(Default)]
pub struct Mee {
    q: Mutex<Queues>,
}

impl Mee {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.q.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A committed Trade-Order reaches the market.
    pub fn submitted(&self, sub: Submitted) {
        let mut q = self.lock();
        q.tick += 1;
        let price = price_at(sub.sec, q.tick);
        if sub.market {
            q.results.push_back((sub.t_id, price));
        }
        q.ticker.push((symbol(sub.sec), price, sub.qty));
        if q.ticker.len() == FEED_LEN {
            let feed = std::mem::take(&mut q.ticker);
            q.feeds.push_back(feed);
        }
    }

    /// A committed Market-Feed's triggered limit orders.
    pub fn triggered(&self, t: &[(u64, i64)]) {
        self.lock().results.extend(t.iter().copied());
    }

    /// The market's current time.
    pub fn tick(&self) -> u64 {
        self.lock().tick
    }

    /// Work waiting: (Trade-Results, ticker entries not yet in a feed + queued feeds'
    /// entries).
    pub fn backlog(&self) -> (usize, usize) {
        let q = self.lock();
        (q.results.len(), q.ticker.len() + q.feeds.len() * FEED_LEN)
    }

    fn take(&self) -> Option<TpceInput> {
        let mut q = self.lock();
        if let Some(f) = q.feeds.pop_front() {
            return Some(TpceInput::MarketFeed(f));
        }
        q.results
            .pop_front()
            .map(|(t, p)| TpceInput::TradeResult(t, p))
    }
}

impl Tpce {
    pub(super) fn next_input(&self, st: &mut TpceWorker) -> TpceInput {
        if self.cleanup_due.swap(false, Ordering::AcqRel) {
            return TpceInput::TradeCleanup;
        }
        {
            let mut m = self.maintenance.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if now >= m.0 {
                m.0 = now + Duration::from_secs(self.cfg.data_maintenance_s);
                let table = m.1;
                m.1 = (m.1 + 1) % 12;
                return TpceInput::DataMaintenance(table, st.rng.gen(), st.rng.gen());
            }
        }
        if let Some(i) = self.mee.take() {
            return i;
        }
        if st.dealt >= st.deck.len() {
            st.deck.shuffle(&mut st.rng);
            st.dealt = 0;
        }
        let ty = st.deck[st.dealt] as u32;
        st.dealt += 1;
        self.draw(ty, &mut st.rng)
    }

    /// Inputs of a dealt transaction type (clause 4 of the specification, simplified:
    /// uniform choices where EGen skews, see docs/design/tpce.md).
    pub fn draw(&self, ty: u32, rng: &mut crate::util::KitRng) -> TpceInput {
        let secs = self.securities();
        let day = |rng: &mut crate::util::KitRng| {
            MARKET_START_US + rng.gen_range(0..self.cfg.daily_market_days as u64) * ONE_DAY_US
        };
        match ty {
            BROKER_VOLUME => {
                let n = rng.gen_range(20..=40).min(self.brokers() as usize);
                let mut ids: Vec<u64> = (1..=self.brokers()).collect();
                ids.shuffle(rng);
                let names = ids[..n]
                    .iter()
                    .map(|&b| super::load::broker_name(b))
                    .collect();
                let mut sc = [0u8; 30];
                api::row::set_str(&mut sc, SECTORS[rng.gen_range(0..SECTORS.len())].as_bytes());
                TpceInput::BrokerVolume(names, sc)
            }
            CUSTOMER_POSITION => {
                let c = self.random_customer(rng);
                let by = if rng.gen_bool(0.5) {
                    CustomerBy::Id(c)
                } else {
                    CustomerBy::TaxId(tax_id(c))
                };
                TpceInput::CustomerPosition(by, rng.gen_bool(0.5), rng.gen_range(0..10))
            }
            MARKET_WATCH => {
                let by = match rng.gen_range(0..100) {
                    0..=59 => WatchBy::Customer(self.random_customer(rng)),
                    60..=94 => WatchBy::Account(self.random_account(rng)),
                    _ => {
                        let (_, name, _) = industry(rng.gen_range(0..INDUSTRIES));
                        let lo = rng.gen_range(1..=self.companies());
                        WatchBy::Industry(name, lo, lo + 5_000)
                    }
                };
                TpceInput::MarketWatch(by, day(rng))
            }
            SECURITY_DETAIL => TpceInput::SecurityDetail(
                symbol(rng.gen_range(0..secs)),
                rng.gen_range(5..=20),
                day(rng),
                rng.gen_range(0..100) == 0,
            ),
            TRADE_LOOKUP => TpceInput::TradeLookup(draw_lookup(self, rng, false)),
            TRADE_UPDATE => TpceInput::TradeUpdate(draw_lookup(self, rng, true)),
            TRADE_STATUS => TpceInput::TradeStatus(self.random_account(rng)),
            TRADE_ORDER => TpceInput::TradeOrder(self.draw_order(rng)),
            _ => unreachable!("type {ty} is not dealt"),
        }
    }

    fn draw_order(&self, rng: &mut crate::util::KitRng) -> TradeOrderIn {
        let ca = self.random_account(rng);
        let exec = match permissions_of(ca) {
            1 => None,
            n if rng.gen_range(0..10) == 0 => Some(permission_tax_id(ca, rng.gen_range(1..n))),
            _ => None,
        };
        // Mostly a security the account trades in, sometimes any.
        let sec = if rng.gen_range(0..100) < 80 {
            let own: Vec<u64> = super::load::account_securities(ca, self.securities()).collect();
            own[rng.gen_range(0..own.len())]
        } else {
            rng.gen_range(0..self.securities())
        };
        let security = if rng.gen_range(0..100) < 40 {
            let (co, issue) = security_company(sec);
            SecurityBy::Company(company_name(co), *issue)
        } else {
            SecurityBy::Symbol(symbol(sec))
        };
        let tt = match rng.gen_range(0..100) {
            0..=29 => TT_MARKET_BUY,
            30..=59 => TT_MARKET_SELL,
            60..=79 => TT_LIMIT_BUY,
            80..=91 => TT_LIMIT_SELL,
            _ => TT_STOP_LOSS,
        };
        let now = price_at(sec, self.mee.tick());
        let limit_price = match tt {
            TT_LIMIT_SELL => now * rng.gen_range(101..=110) / 100,
            TT_LIMIT_BUY | TT_STOP_LOSS => now * rng.gen_range(90..=99) / 100,
            _ => 0,
        };
        TradeOrderIn {
            ca_id: ca,
            exec,
            security,
            sec,
            tt,
            qty: 100 * rng.gen_range(1..=8),
            limit_price,
            lifo: rng.gen_bool(0.35),
            margin: rng.gen_range(0..100) < 8,
            roll_back: rng.gen_range(0..100) < super::ROLLBACK_PERCENT,
        }
    }
}
