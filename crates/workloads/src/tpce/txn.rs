//! The twelve TPC-E transactions (clause 3.3), frame by frame, over `api::Session`:
//! their inputs (drawn up front by `mee` / `Tpce::next`, so a conflict-aborted
//! transaction is retried with the same inputs) and their bodies. Frames of one
//! transaction run inside one database transaction (the specification's frames are
//! steps of one transaction too). The bodies never begin, commit or retry.

use super::gen::{self, *};
use super::schema::*;
use super::trade::{self, Lot};
use super::Tpce;
use crate::util::KitRng;
use api::key::Key;
use api::row::{self, Zeroable};
use api::{Dir, Error, IndexId, Result, Session, TableId, Worker};
use std::ops::Bound;

pub const BROKER_VOLUME: u32 = 0;
pub const CUSTOMER_POSITION: u32 = 1;
pub const MARKET_FEED: u32 = 2;
pub const MARKET_WATCH: u32 = 3;
pub const SECURITY_DETAIL: u32 = 4;
pub const TRADE_LOOKUP: u32 = 5;
pub const TRADE_ORDER: u32 = 6;
pub const TRADE_RESULT: u32 = 7;
pub const TRADE_STATUS: u32 = 8;
pub const TRADE_UPDATE: u32 = 9;
pub const DATA_MAINTENANCE: u32 = 10;
pub const TRADE_CLEANUP: u32 = 11;
pub const TXN_NAMES: [&str; 12] = [
    "broker-volume",
    "customer-position",
    "market-feed",
    "market-watch",
    "security-detail",
    "trade-lookup",
    "trade-order",
    "trade-result",
    "trade-status",
    "trade-update",
    "data-maintenance",
    "trade-cleanup",
];

/// Entries of one Market-Feed (the MEE's ticker batch, clause 3.3.3).
pub const FEED_LEN: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerBy {
    Id(u64),
    TaxId([u8; 20]),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchBy {
    Customer(u64),
    Account(u64),
    /// Industry name and the company id range.
    Industry([u8; 50], u64, u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// Frame 1: these trades.
    Trades(Vec<u64>),
    /// Frame 2: an account's trades in [start, end].
    Account(u64, u64, u64),
    /// Frame 3: a security's trades in [start, end].
    Symbol(Symb, u64, u64),
    /// Frame 4: the holding history of an account's first trade at or after start.
    History(u64, u64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityBy {
    Symbol(Symb),
    Company([u8; 60], [u8; 6]),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TradeOrderIn {
    pub ca_id: u64,
    /// None: the account's owner; Some: a permitted person (tax id, first, last name).
    pub exec: Option<[u8; 20]>,
    pub security: SecurityBy,
    /// The security's index (for the market's price model).
    pub sec: u64,
    pub tt: Tt,
    pub qty: u32,
    /// Limit price for limit orders (cents); ignored for market orders.
    pub limit_price: i64,
    pub lifo: bool,
    pub margin: bool,
    pub roll_back: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TpceInput {
    BrokerVolume(Vec<[u8; 49]>, [u8; 30]),
    CustomerPosition(CustomerBy, bool, u64),
    MarketFeed(Vec<(Symb, i64, u32)>),
    MarketWatch(WatchBy, u64),
    /// Symbol, rows of daily market, first day, read the news item's body.
    SecurityDetail(Symb, u32, u64, bool),
    TradeLookup(Lookup),
    TradeOrder(TradeOrderIn),
    /// Trade id and the market's price.
    TradeResult(u64, i64),
    TradeStatus(u64),
    TradeUpdate(Lookup),
    /// Table number (0..12, see `data_maintenance`) and an id drawn for it.
    DataMaintenance(u32, u64, u64),
    TradeCleanup,
}

impl TpceInput {
    pub fn txn_type(&self) -> u32 {
        match self {
            TpceInput::BrokerVolume(..) => BROKER_VOLUME,
            TpceInput::CustomerPosition(..) => CUSTOMER_POSITION,
            TpceInput::MarketFeed(..) => MARKET_FEED,
            TpceInput::MarketWatch(..) => MARKET_WATCH,
            TpceInput::SecurityDetail(..) => SECURITY_DETAIL,
            TpceInput::TradeLookup(..) => TRADE_LOOKUP,
            TpceInput::TradeOrder(..) => TRADE_ORDER,
            TpceInput::TradeResult(..) => TRADE_RESULT,
            TpceInput::TradeStatus(..) => TRADE_STATUS,
            TpceInput::TradeUpdate(..) => TRADE_UPDATE,
            TpceInput::DataMaintenance(..) => DATA_MAINTENANCE,
            TpceInput::TradeCleanup => TRADE_CLEANUP,
        }
    }
}

/// An order Trade-Order entered (for the MEE, once committed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    pub t_id: u64,
    pub sec: u64,
    pub qty: u32,
    pub market: bool,
}

/// The values a TPC-E body takes besides its inputs and the database: the clock
/// (trade and price timestamps), the trade id Trade-Order hands out (from a
/// workload-wide counter) and the first trade id of the run (Trade-Cleanup's limit).
/// A command carries them so that replaying it makes the same writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taken {
    pub now: u64,
    pub t_id: u64,
    pub first_tid: u64,
}

pub struct TpceWorker {
    pub rng: KitRng,
    pub worker_id: u32,
    pub deck: Vec<u8>,
    pub dealt: usize,
    /// What the last Trade-Order body entered.
    pub submitted: Option<Submitted>,
    /// Limit orders the last Market-Feed body triggered: (trade id, price).
    pub triggered: Vec<(u64, i64)>,
    /// Trades the last Trade-Cleanup body canceled.
    pub canceled: u64,
    /// What the last body took besides its inputs (the clock, a trade id, the run's
    /// first trade id): logged with its command.
    pub taken: Taken,
    /// Replaying a logged command: the values its body took then, used again.
    pub replay: Option<Taken>,
    /// Measured counters.
    pub limit_triggered: u64,
    pub cleanup_canceled: u64,
    pub rows_read: u64,
}

/// A row the transaction requires; its absence means a damaged or foreign database.
pub fn need<T>(v: Option<T>, what: &str, id: impl std::fmt::Debug) -> Result<T> {
    v.ok_or_else(|| Error::fatal(format!("tpce: {what} {id:?} not found (damaged database?)")))
}

fn prefix_scan<W: Worker>(
    s: &mut Session<W>,
    index: IndexId,
    prefix: &Key,
    dir: Dir,
    limit: usize,
    f: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<usize> {
    let end = prefix.prefix_end().expect("prefix is never all 0xff");
    s.scan(
        index,
        Bound::Included(prefix),
        Bound::Excluded(&end),
        dir,
        limit,
        f,
    )
}

/// The rows under `prefix` (at most `limit`, in `dir` order), each mapped by `f`.
fn prefix_rows<T: row::Pod, U, W: Worker>(
    s: &mut Session<W>,
    index: IndexId,
    prefix: &Key,
    dir: Dir,
    limit: usize,
    f: impl Fn(T) -> U,
) -> Result<Vec<U>> {
    let mut out = Vec::with_capacity(limit.min(16));
    prefix_scan(s, index, prefix, dir, limit, |_, r| {
        out.push(f(row::read::<T>(r)));
        true
    })?;
    Ok(out)
}

fn get<T: row::Pod, W: Worker>(s: &mut Session<W>, t: TableId, k: &Key, what: &str) -> Result<T> {
    let r = s.get_row::<T>(t, k)?;
    need(r, what, k)
}

/// Toggle a marker at the end of a string column (Data-Maintenance and Trade-Update
/// change a column back and forth, so the database does not drift).
fn toggle_suffix(col: &mut [u8], suffix: &[u8]) {
    let cur = row::get_str(col).to_vec();
    if cur.ends_with(suffix) {
        row::set_str(col, &cur[..cur.len() - suffix.len()]);
    } else {
        let keep = cur.len().min(col.len() - suffix.len());
        let mut v = cur[..keep].to_vec();
        v.extend_from_slice(suffix);
        row::set_str(col, &v);
    }
}

impl Tpce {
    pub(super) fn execute_impl<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut TpceWorker,
        input: &TpceInput,
    ) -> Result<()> {
        let fixed = st.replay;
        let now = fixed.map_or_else(now_us, |f| f.now);
        st.taken = Taken {
            now,
            ..Taken::default()
        };
        let rows = match input {
            TpceInput::BrokerVolume(b, sc) => self.broker_volume(s, b, sc)?,
            TpceInput::CustomerPosition(c, h, a) => self.customer_position(s, c, *h, *a)?,
            TpceInput::MarketFeed(e) => {
                st.triggered.clear();
                self.market_feed(s, e, now, &mut st.triggered)?
            }
            TpceInput::MarketWatch(w, d) => self.market_watch(s, w, *d)?,
            TpceInput::SecurityDetail(sy, n, d, lob) => {
                self.security_detail(s, sy, *n, *d, *lob)?
            }
            TpceInput::TradeLookup(l) => self.trade_lookup(s, l, false)?,
            TpceInput::TradeOrder(i) => {
                st.submitted = None;
                let sub = self.trade_order(s, i, now, fixed.map(|f| f.t_id))?;
                st.taken.t_id = sub.t_id;
                st.submitted = Some(sub);
                0
            }
            TpceInput::TradeResult(t, p) => self.trade_result(s, *t, *p, now)?,
            TpceInput::TradeStatus(ca) => self.trade_status(s, *ca)?,
            TpceInput::TradeUpdate(l) => self.trade_lookup(s, l, true)?,
            TpceInput::DataMaintenance(t, a, b) => self.data_maintenance(s, *t, *a, *b)?,
            TpceInput::TradeCleanup => {
                let first = match fixed {
                    Some(f) => f.first_tid,
                    None => self.first_run_trade_id(s)?,
                };
                st.taken.first_tid = first;
                st.canceled = self.trade_cleanup(s, first, now)?;
                0
            }
        };
        st.rows_read = rows as u64;
        Ok(())
    }

    /// Broker-Volume (clause 3.3.7): the volume of pending orders of the given brokers
    /// in one sector. Returns the rows read.
    pub fn broker_volume<W: Worker>(
        &self,
        s: &mut Session<W>,
        brokers: &[[u8; 49]],
        sector: &[u8; 30],
    ) -> Result<usize> {
        let mut sc_id = None;
        prefix_scan(
            s,
            SECTOR.secondary(SECTOR_BY_NAME),
            &k_bytes(sector),
            Dir::Forward,
            1,
            |_, r| {
                sc_id = Some(row::read::<Sector>(r).sc_id);
                false
            },
        )?;
        let sc_id = need(
            sc_id,
            "sector",
            String::from_utf8_lossy(row::get_str(sector)),
        )?;
        let mut n = 1;
        let mut out: Vec<([u8; 49], i64)> = Vec::new();
        let mut reqs: Vec<(Symb, i64)> = Vec::new();
        for name in brokers {
            let mut b_id = None;
            prefix_scan(
                s,
                BROKER.secondary(BROKER_BY_NAME),
                &k_bytes(name),
                Dir::Forward,
                1,
                |_, r| {
                    b_id = Some(row::read::<Broker>(r).b_id);
                    false
                },
            )?;
            let b_id = need(b_id, "broker", String::from_utf8_lossy(row::get_str(name)))?;
            reqs.clear();
            n += 1 + prefix_scan(
                s,
                TRADE_REQUEST.secondary(REQUEST_BY_BROKER),
                &k_u64(b_id),
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    let t = row::read::<TradeRequest>(r);
                    reqs.push((t.tr_s_symb, t.tr_qty as i64 * t.tr_bid_price));
                    true
                },
            )?;
            let mut vol = 0;
            for (symb, v) in &reqs {
                let sec: Security = get(s, SECURITY, &k_symb(symb), "security")?;
                let co: Company = get(s, COMPANY, &k_u64(sec.s_co_id), "company")?;
                let ind: Industry = get(s, INDUSTRY, &k_bytes(&co.co_in_id), "industry")?;
                n += 3;
                if ind.in_sc_id == sc_id {
                    vol += v;
                }
            }
            if vol > 0 {
                out.push((*name, vol));
            }
        }
        out.sort_by_key(|x| std::cmp::Reverse(x.1));
        std::hint::black_box(&out);
        Ok(n)
    }

    /// Customer-Position (clause 3.3.2): frame 1, a customer's accounts and their
    /// assets; frame 2 (when `history`), the last ten trades of one account with their
    /// histories.
    pub fn customer_position<W: Worker>(
        &self,
        s: &mut Session<W>,
        by: &CustomerBy,
        history: bool,
        acct_idx: u64,
    ) -> Result<usize> {
        let c_id = match by {
            CustomerBy::Id(c) => *c,
            CustomerBy::TaxId(tax) => {
                let mut c = None;
                prefix_scan(
                    s,
                    CUSTOMER.secondary(CUSTOMER_BY_TAX_ID),
                    &k_bytes(tax),
                    Dir::Forward,
                    1,
                    |_, r| {
                        c = Some(row::read::<Customer>(r).c_id);
                        false
                    },
                )?;
                need(c, "customer with tax id", String::from_utf8_lossy(tax))?
            }
        };
        let cust: Customer = get(s, CUSTOMER, &k_u64(c_id), "customer")?;
        let mut accts: Vec<(u64, i64)> = Vec::with_capacity(10);
        prefix_scan(
            s,
            CUSTOMER_ACCOUNT.secondary(ACCOUNT_BY_CUSTOMER),
            &k_u64(c_id),
            Dir::Forward,
            10,
            |_, r| {
                let a = row::read::<CustomerAccount>(r);
                accts.push((a.ca_id, a.ca_bal));
                true
            },
        )?;
        let mut n = 1 + accts.len();
        let mut holdings: Vec<(Symb, i64)> = Vec::new();
        let mut assets = Vec::with_capacity(accts.len());
        for &(ca, bal) in &accts {
            holdings.clear();
            n += prefix_scan(
                s,
                HOLDING_SUMMARY.primary(),
                &k_u64(ca),
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    let h = row::read::<HoldingSummary>(r);
                    holdings.push((h.hs_s_symb, h.hs_qty));
                    true
                },
            )?;
            let mut total = bal;
            for (symb, q) in &holdings {
                let lt: LastTrade = get(s, LAST_TRADE, &k_symb(symb), "last trade")?;
                total += q * lt.lt_price;
                n += 1;
            }
            assets.push(total);
        }
        if history && !accts.is_empty() {
            let ca = accts[(acct_idx % accts.len() as u64) as usize].0;
            let trades = prefix_rows(
                s,
                TRADE.secondary(TRADE_BY_ACCOUNT),
                &k_u64(ca),
                Dir::Backward,
                10,
                |r: Trade| r,
            )?;
            n += trades.len();
            let mut lines = 0;
            for t in &trades {
                if lines >= 30 {
                    break;
                }
                let hist = prefix_rows(
                    s,
                    TRADE_HISTORY.primary(),
                    &k_u64(t.t_id),
                    Dir::Backward,
                    3,
                    |r: TradeHistory| r,
                )?;
                for h in &hist {
                    let st: StatusType = get(s, STATUS_TYPE, &k_bytes(&h.th_st_id), "status")?;
                    std::hint::black_box((t.t_s_symb, t.t_qty, st.st_name, h.th_dts));
                    lines += 1;
                    n += 2;
                }
            }
        }
        std::hint::black_box((cust.c_l_name, assets));
        Ok(n)
    }

    /// Market-Feed (clause 3.3.3): the ticker's last trades update LAST_TRADE; limit
    /// orders the new prices trigger leave TRADE_REQUEST and become submitted. Their
    /// (trade id, price) go to `triggered` for the MEE.
    pub fn market_feed<W: Worker>(
        &self,
        s: &mut Session<W>,
        entries: &[(Symb, i64, u32)],
        now: u64,
        triggered: &mut Vec<(u64, i64)>,
    ) -> Result<usize> {
        let mut n = 0;
        let mut reqs: Vec<TradeRequest> = Vec::new();
        for (symb, price, qty) in entries {
            let found = s.update_row(LAST_TRADE, &k_symb(symb), |lt: &mut LastTrade| {
                lt.lt_price = *price;
                lt.lt_vol += *qty as u64;
                lt.lt_dts = now;
            })?;
            need(found.then_some(()), "last trade", symb)?;
            reqs.clear();
            n += 1 + prefix_scan(
                s,
                TRADE_REQUEST.secondary(REQUEST_BY_SYMBOL),
                &k_symb(symb),
                Dir::Forward,
                usize::MAX,
                |_, r| {
                    let t = row::read::<TradeRequest>(r);
                    let hit = (t.tr_tt_id == TT_STOP_LOSS && t.tr_bid_price >= *price)
                        || (t.tr_tt_id == TT_LIMIT_SELL && t.tr_bid_price <= *price)
                        || (t.tr_tt_id == TT_LIMIT_BUY && t.tr_bid_price >= *price);
                    if hit {
                        reqs.push(t);
                    }
                    true
                },
            )?;
            for r in &reqs {
                if !s.delete(TRADE_REQUEST, &k_u64(r.tr_t_id))? {
                    return Err(Error::fatal(format!(
                        "tpce: trade request {} vanished during market-feed",
                        r.tr_t_id
                    )));
                }
                let found = s.update_row(TRADE, &k_u64(r.tr_t_id), |t: &mut Trade| {
                    t.t_dts = now;
                    t.t_st_id = ST_SUBMITTED;
                })?;
                need(found.then_some(()), "trade", r.tr_t_id)?;
                let th = TradeHistory {
                    th_t_id: r.tr_t_id,
                    th_dts: now,
                    th_st_id: ST_SUBMITTED,
                    _pad: [0; 4],
                };
                s.insert_row(
                    TRADE_HISTORY,
                    &trade_history_key(r.tr_t_id, &ST_SUBMITTED),
                    &th,
                )?;
                triggered.push((r.tr_t_id, *price));
                n += 3;
            }
        }
        Ok(n)
    }

    /// Market-Watch (clause 3.3.4): the change in market capitalization since a day of
    /// a watch list's, an account's or an industry's securities.
    pub fn market_watch<W: Worker>(
        &self,
        s: &mut Session<W>,
        by: &WatchBy,
        start_day: u64,
    ) -> Result<usize> {
        let mut symbs: Vec<Symb> = Vec::new();
        let mut n = 0;
        match by {
            WatchBy::Customer(c) => {
                let mut wl = None;
                prefix_scan(
                    s,
                    WATCH_LIST.secondary(WATCH_LIST_BY_CUSTOMER),
                    &k_u64(*c),
                    Dir::Forward,
                    1,
                    |_, r| {
                        wl = Some(row::read::<WatchList>(r).wl_id);
                        false
                    },
                )?;
                let wl = need(wl, "watch list of customer", c)?;
                n += 1 + prefix_scan(
                    s,
                    WATCH_ITEM.primary(),
                    &k_u64(wl),
                    Dir::Forward,
                    usize::MAX,
                    |_, r| {
                        symbs.push(row::read::<WatchItem>(r).wi_s_symb);
                        true
                    },
                )?;
            }
            WatchBy::Account(ca) => {
                n += prefix_scan(
                    s,
                    HOLDING_SUMMARY.primary(),
                    &k_u64(*ca),
                    Dir::Forward,
                    usize::MAX,
                    |_, r| {
                        symbs.push(row::read::<HoldingSummary>(r).hs_s_symb);
                        true
                    },
                )?;
            }
            WatchBy::Industry(name, lo, hi) => {
                n += industry_securities(s, name, *lo, *hi, &mut symbs)?;
            }
        }
        let (mut old_cap, mut new_cap) = (0i128, 0i128);
        for symb in &symbs {
            let lt: LastTrade = get(s, LAST_TRADE, &k_symb(symb), "last trade")?;
            let sec: Security = get(s, SECURITY, &k_symb(symb), "security")?;
            let close = s
                .get_row::<DailyMarket>(DAILY_MARKET, &daily_market_key(symb, start_day))?
                .map_or(lt.lt_price, |d| d.dm_close);
            old_cap += sec.s_num_out as i128 * close as i128;
            new_cap += sec.s_num_out as i128 * lt.lt_price as i128;
            n += 3;
        }
        let pct = if old_cap != 0 {
            (new_cap - old_cap) * 10_000 / old_cap
        } else {
            0
        };
        std::hint::black_box(pct);
        Ok(n)
    }

    /// Security-Detail (clause 3.3.5): a security, its company, competitors,
    /// financials, daily market rows from a day, last trade and news.
    pub fn security_detail<W: Worker>(
        &self,
        s: &mut Session<W>,
        symb: &Symb,
        max_rows: u32,
        start_day: u64,
        lob: bool,
    ) -> Result<usize> {
        let sec: Security = get(s, SECURITY, &k_symb(symb), "security")?;
        let co: Company = get(s, COMPANY, &k_u64(sec.s_co_id), "company")?;
        let ad: Address = get(s, ADDRESS, &k_u64(co.co_ad_id), "address")?;
        let zc: ZipCode = get(s, ZIP_CODE, &k_bytes(&ad.ad_zc_code), "zip code")?;
        let ex: Exchange = get(s, EXCHANGE, &k_bytes(&sec.s_ex_id), "exchange")?;
        let exad: Address = get(s, ADDRESS, &k_u64(ex.ex_ad_id), "address")?;
        let exzc: ZipCode = get(s, ZIP_CODE, &k_bytes(&exad.ad_zc_code), "zip code")?;
        let mut n = 7;
        let comps = prefix_rows(
            s,
            COMPANY_COMPETITOR.primary(),
            &k_u64(co.co_id),
            Dir::Forward,
            3,
            |r: CompanyCompetitor| r,
        )?;
        for c in &comps {
            let cc: Company = get(s, COMPANY, &k_u64(c.cp_comp_co_id), "company")?;
            let ind: Industry = get(s, INDUSTRY, &k_bytes(&c.cp_in_id), "industry")?;
            std::hint::black_box((cc.co_name, ind.in_name));
            n += 3;
        }
        let mut fin = 0i64;
        n += prefix_scan(
            s,
            FINANCIAL.primary(),
            &k_u64(co.co_id),
            Dir::Forward,
            FINANCIAL_QUARTERS as usize,
            |_, r| {
                fin ^= row::read::<Financial>(r).fi_revenue;
                true
            },
        )?;
        let from = daily_market_key(symb, start_day);
        let to = k_symb(symb).prefix_end().expect("symbol prefix");
        let mut dm = 0i64;
        n += s.scan(
            DAILY_MARKET.primary(),
            Bound::Included(&from),
            Bound::Excluded(&to),
            Dir::Forward,
            max_rows as usize,
            |_, r| {
                dm ^= row::read::<DailyMarket>(r).dm_close;
                true
            },
        )?;
        let lt: LastTrade = get(s, LAST_TRADE, &k_symb(symb), "last trade")?;
        let news = prefix_rows(
            s,
            NEWS_XREF.primary(),
            &k_u64(co.co_id),
            Dir::Forward,
            2,
            |r: NewsXref| r.nx_ni_id,
        )?;
        for id in news {
            let mut sum = 0u64;
            s.get(NEWS_ITEM, &k_u64(id), |r| {
                let ni = row::read::<NewsItem>(r);
                sum = if lob {
                    ni.ni_item.iter().map(|&b| b as u64).sum()
                } else {
                    ni.ni_summary.iter().map(|&b| b as u64).sum()
                };
            })?;
            std::hint::black_box(sum);
            n += 2;
        }
        std::hint::black_box((
            sec.s_name,
            ad.ad_line1,
            zc.zc_town,
            exzc.zc_div,
            fin,
            dm,
            lt,
        ));
        Ok(n + 1)
    }

    /// Trades selected by a lookup, oldest first, at most 20: frame 1 by id, frames 2
    /// and 3 by account or security within [start, end] (the index orders by trade id,
    /// which follows submission time), frame 4 the first of an account at or after
    /// start.
    fn lookup_trades<W: Worker>(
        &self,
        s: &mut Session<W>,
        l: &Lookup,
        out: &mut Vec<Trade>,
    ) -> Result<usize> {
        const MAX: usize = 20;
        out.clear();
        let mut n = 0;
        let in_range =
            |s: &mut Session<W>, index: IndexId, prefix: Key, lo: u64, hi: u64, max: usize| {
                let mut v = Vec::new();
                let read = prefix_scan(s, index, &prefix, Dir::Forward, usize::MAX, |_, r| {
                    let t = row::read::<Trade>(r);
                    // The index follows trade ids, and ids follow time: past the end, stop.
                    if t.t_dts > hi {
                        return false;
                    }
                    if t.t_dts >= lo {
                        v.push(t);
                    }
                    v.len() < max
                })?;
                Ok::<_, Error>((v, read))
            };
        match l {
            Lookup::Trades(ids) => {
                for id in ids.iter().take(MAX) {
                    if let Some(t) = s.get_row::<Trade>(TRADE, &k_u64(*id))? {
                        out.push(t);
                    }
                    n += 1;
                }
            }
            Lookup::Account(ca, lo, hi) => {
                let (v, read) = in_range(
                    s,
                    TRADE.secondary(TRADE_BY_ACCOUNT),
                    k_u64(*ca),
                    *lo,
                    *hi,
                    MAX,
                )?;
                *out = v;
                n += read;
            }
            Lookup::Symbol(symb, lo, hi) => {
                let (v, read) = in_range(
                    s,
                    TRADE.secondary(TRADE_BY_SYMBOL),
                    k_symb(symb),
                    *lo,
                    *hi,
                    MAX,
                )?;
                *out = v;
                n += read;
            }
            Lookup::History(ca, lo) => {
                let (v, read) = in_range(
                    s,
                    TRADE.secondary(TRADE_BY_ACCOUNT),
                    k_u64(*ca),
                    *lo,
                    u64::MAX,
                    1,
                )?;
                *out = v;
                n += read;
            }
        }
        Ok(n)
    }

    /// Trade-Lookup (clause 3.3.6) and, with `update`, Trade-Update (clause 3.3.10):
    /// frame 1 changes T_EXEC_NAME, frame 2 SE_CASH_TYPE, frame 3 CT_NAME of the
    /// trades found (frame 4 is Trade-Lookup's only).
    pub fn trade_lookup<W: Worker>(
        &self,
        s: &mut Session<W>,
        l: &Lookup,
        update: bool,
    ) -> Result<usize> {
        let mut trades = Vec::new();
        let mut n = self.lookup_trades(s, l, &mut trades)?;
        if let Lookup::History(..) = l {
            let Some(t) = trades.first() else {
                return Ok(n);
            };
            let mut holds = Vec::new();
            n += prefix_scan(
                s,
                HOLDING_HISTORY.secondary(HOLDING_HISTORY_BY_TRADE),
                &k_u64(t.t_id),
                Dir::Forward,
                20,
                |_, r| {
                    holds.push(row::read::<HoldingHistory>(r).hh_h_t_id);
                    true
                },
            )?;
            let mut sum = 0i64;
            for h in holds {
                n += prefix_scan(
                    s,
                    HOLDING_HISTORY.primary(),
                    &k_u64(h),
                    Dir::Forward,
                    20,
                    |_, r| {
                        let hh = row::read::<HoldingHistory>(r);
                        sum += hh.hh_before_qty - hh.hh_after_qty;
                        true
                    },
                )?;
            }
            std::hint::black_box(sum);
            return Ok(n);
        }
        for t in &trades {
            let k = k_u64(t.t_id);
            if update {
                match l {
                    Lookup::Trades(_) => {
                        s.update_row(TRADE, &k, |r: &mut Trade| {
                            toggle_suffix(&mut r.t_exec_name, b" X");
                        })?;
                    }
                    Lookup::Account(..) => {
                        s.update_row(SETTLEMENT, &k, |r: &mut Settlement| {
                            toggle_suffix(&mut r.se_cash_type, b" Account");
                        })?;
                    }
                    Lookup::Symbol(..) => {
                        s.update_row(CASH_TRANSACTION, &k, |r: &mut CashTransaction| {
                            toggle_suffix(&mut r.ct_name, b" (updated)");
                        })?;
                    }
                    Lookup::History(..) => unreachable!("returned above"),
                }
            }
            let tt: TradeType = get(s, TRADE_TYPE, &k_bytes(&t.t_tt_id), "trade type")?;
            let se = s.get_row::<Settlement>(SETTLEMENT, &k)?;
            let ct = if t.t_is_cash == 1 {
                s.get_row::<CashTransaction>(CASH_TRANSACTION, &k)?
                    .map(|c| c.ct_amt)
            } else {
                None
            };
            let mut hist = 0u64;
            n += 3 + prefix_scan(s, TRADE_HISTORY.primary(), &k, Dir::Forward, 3, |_, r| {
                hist ^= row::read::<TradeHistory>(r).th_dts;
                true
            })?;
            std::hint::black_box((tt.tt_is_mrkt, t.t_bid_price, se.map(|x| x.se_amt), ct, hist));
        }
        Ok(n)
    }

    /// Trade-Order (clause 3.3.8), frames 1-5: checks the executor's permission,
    /// prices the order, estimates its tax and commission, enters it (submitted for a
    /// market order, pending in TRADE_REQUEST for a limit order) and rolls back 1% of
    /// orders as the input asks.
    pub fn trade_order<W: Worker>(
        &self,
        s: &mut Session<W>,
        i: &TradeOrderIn,
        now: u64,
        t_id: Option<u64>,
    ) -> Result<Submitted> {
        // Frame 1: account, customer, broker.
        let ca: CustomerAccount = get(s, CUSTOMER_ACCOUNT, &k_u64(i.ca_id), "account")?;
        let cust: Customer = get(s, CUSTOMER, &k_u64(ca.ca_c_id), "customer")?;
        let broker: Broker = get(s, BROKER, &k_u64(ca.ca_b_id), "broker")?;
        // Frame 2: the executor may act on the account.
        let (exec_f, exec_l) = match &i.exec {
            None => (cust.c_f_name, cust.c_l_name),
            Some(tax) => {
                let ap: AccountPermission = get(
                    s,
                    ACCOUNT_PERMISSION,
                    &account_permission_key(i.ca_id, tax),
                    "account permission",
                )?;
                (ap.ap_f_name, ap.ap_l_name)
            }
        };
        // Frame 3: the security, its price, the holdings, tax and commission.
        let symb = match &i.security {
            SecurityBy::Symbol(sy) => *sy,
            SecurityBy::Company(name, issue) => security_of_company(s, name, issue)?,
        };
        let sec: Security = get(s, SECURITY, &k_symb(&symb), "security")?;
        let _co: Company = get(s, COMPANY, &k_u64(sec.s_co_id), "company")?;
        let lt: LastTrade = get(s, LAST_TRADE, &k_symb(&symb), "last trade")?;
        let tt: TradeType = get(s, TRADE_TYPE, &k_bytes(&i.tt), "trade type")?;
        let sell = tt.tt_is_sell == 1;
        let market = tt.tt_is_mrkt == 1;
        let price = if market { lt.lt_price } else { i.limit_price };
        let hs = s
            .get_row::<HoldingSummary>(HOLDING_SUMMARY, &k_u64_symb(i.ca_id, &symb))?
            .map_or(0, |h| h.hs_qty);
        let lots = self.lots(s, i.ca_id, &symb)?;
        let est = trade::apply(&lots, hs, sell, i.qty, i.lifo, price, 0, 0);
        let mut tax = 0;
        if sell && est.sell_value > est.buy_value && ca.ca_tax_st != 0 {
            let rates = self.tax_rates(s, ca.ca_c_id)?;
            tax = trade::tax(ca.ca_tax_st, est.buy_value, est.sell_value, rates);
        }
        let cr = self.commission_rate(s, cust.c_tier, &i.tt, &sec.s_ex_id, i.qty)?;
        let ch: Charge = get(s, CHARGE, &charge_key(&i.tt, cust.c_tier), "charge")?;
        let comm = trade::commission(i.qty, price, cr);
        if i.margin {
            std::hint::black_box(account_assets(s, i.ca_id, ca.ca_bal)?);
        }
        // Frame 4: enter the order.
        // A replayed command takes its logged trade id, not a new one.
        let t_id = match t_id {
            Some(t) => t,
            None => self.next_trade_id(s)?,
        };
        let status = if market { ST_SUBMITTED } else { ST_PENDING };
        let mut t = Trade::zeroed();
        t.t_id = t_id;
        t.t_dts = now;
        t.t_st_id = status;
        t.t_tt_id = i.tt;
        t.t_is_cash = (!i.margin) as u8;
        t.t_s_symb = symb;
        t.t_qty = i.qty;
        t.t_bid_price = price;
        t.t_ca_id = i.ca_id;
        let exec = [row::get_str(&exec_f), b" ", row::get_str(&exec_l)].concat();
        row::set_str(&mut t.t_exec_name, &exec);
        t.t_chrg = ch.ch_chrg;
        t.t_comm = comm;
        t.t_tax = tax;
        t.t_lifo = i.lifo as u8;
        s.insert_row(TRADE, &k_u64(t_id), &t)?;
        if !market {
            let r = TradeRequest {
                tr_t_id: t_id,
                tr_b_id: broker.b_id,
                tr_bid_price: price,
                tr_qty: i.qty,
                tr_tt_id: i.tt,
                tr_s_symb: symb,
                _pad: [0; 2],
            };
            s.insert_row(TRADE_REQUEST, &k_u64(t_id), &r)?;
        }
        let th = TradeHistory {
            th_t_id: t_id,
            th_dts: now,
            th_st_id: status,
            _pad: [0; 4],
        };
        s.insert_row(TRADE_HISTORY, &trade_history_key(t_id, &status), &th)?;
        // Frame 5: the customer changed their mind.
        if i.roll_back {
            return Err(Error::UserAbort);
        }
        Ok(Submitted {
            t_id,
            sec: i.sec,
            qty: i.qty,
            market,
        })
    }

    /// The lots of an (account, security), oldest first.
    fn lots<W: Worker>(&self, s: &mut Session<W>, ca: u64, symb: &Symb) -> Result<Vec<Lot>> {
        let mut lots = Vec::new();
        prefix_scan(
            s,
            HOLDING.secondary(HOLDING_BY_ACCOUNT),
            &k_u64_symb(ca, symb),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                let h = row::read::<Holding>(r);
                lots.push(Lot {
                    h_t_id: h.h_t_id,
                    dts: h.h_dts,
                    price: h.h_price,
                    qty: h.h_qty,
                });
                true
            },
        )?;
        Ok(lots)
    }

    fn tax_rates<W: Worker>(&self, s: &mut Session<W>, c_id: u64) -> Result<u32> {
        let ids = prefix_rows(
            s,
            CUSTOMER_TAXRATE.primary(),
            &k_u64(c_id),
            Dir::Forward,
            usize::MAX,
            |r: CustomerTaxrate| r.cx_tx_id,
        )?;
        let mut sum = 0;
        for id in ids {
            let tx: Taxrate = get(s, TAXRATE, &k_bytes(&id), "tax rate")?;
            sum += tx.tx_rate;
        }
        Ok(sum)
    }

    fn commission_rate<W: Worker>(
        &self,
        s: &mut Session<W>,
        tier: u8,
        tt: &Tt,
        ex: &[u8; 6],
        qty: u32,
    ) -> Result<u32> {
        let mut p = Key::new();
        p.push_u8(tier).push_bytes(tt).push_bytes(ex);
        let mut rate = None;
        prefix_scan(
            s,
            COMMISSION_RATE.primary(),
            &p,
            Dir::Forward,
            usize::MAX,
            |_, r| {
                let c = row::read::<CommissionRate>(r);
                if (c.cr_from_qty..=c.cr_to_qty).contains(&qty) {
                    rate = Some(c.cr_rate);
                    return false;
                }
                true
            },
        )?;
        need(rate, "commission rate for tier", tier)
    }

    /// Trade-Result (clause 3.3.9), frames 1-6: completes a submitted trade at the
    /// market's price: holdings, tax, commission, broker totals, settlement and cash.
    pub fn trade_result<W: Worker>(
        &self,
        s: &mut Session<W>,
        t_id: u64,
        price: i64,
        now: u64,
    ) -> Result<usize> {
        // Frame 1.
        let t: Trade = get(s, TRADE, &k_u64(t_id), "trade")?;
        if t.t_st_id != ST_SUBMITTED {
            return Err(Error::fatal(format!(
                "tpce: trade-result for trade {t_id} in state {} (only submitted trades complete)",
                String::from_utf8_lossy(&t.t_st_id)
            )));
        }
        let tt: TradeType = get(s, TRADE_TYPE, &k_bytes(&t.t_tt_id), "trade type")?;
        let sell = tt.tt_is_sell == 1;
        let hs_key = k_u64_symb(t.t_ca_id, &t.t_s_symb);
        let hs = s
            .get_row::<HoldingSummary>(HOLDING_SUMMARY, &hs_key)?
            .map_or(0, |h| h.hs_qty);
        // Frame 2: holdings.
        let ca: CustomerAccount = get(s, CUSTOMER_ACCOUNT, &k_u64(t.t_ca_id), "account")?;
        let lots = self.lots(s, t.t_ca_id, &t.t_s_symb)?;
        let ch = trade::apply(&lots, hs, sell, t.t_qty, t.t_lifo == 1, price, t_id, now);
        write_holdings(s, &t, t_id, &hs_key, &ch)?;
        // Frame 3: tax.
        let mut tax = 0;
        if ca.ca_tax_st != 0 && ch.sell_value > ch.buy_value {
            let rates = self.tax_rates(s, ca.ca_c_id)?;
            tax = trade::tax(ca.ca_tax_st, ch.buy_value, ch.sell_value, rates);
        }
        // Frame 4: commission.
        let sec: Security = get(s, SECURITY, &k_symb(&t.t_s_symb), "security")?;
        let cust: Customer = get(s, CUSTOMER, &k_u64(ca.ca_c_id), "customer")?;
        let cr = self.commission_rate(s, cust.c_tier, &t.t_tt_id, &sec.s_ex_id, t.t_qty)?;
        let comm = trade::commission(t.t_qty, price, cr);
        // Frame 5: complete the trade, credit the broker.
        s.update_row(TRADE, &k_u64(t_id), |r: &mut Trade| {
            r.t_comm = comm;
            r.t_tax = tax;
            r.t_dts = now;
            r.t_st_id = ST_COMPLETED;
            r.t_trade_price = price;
        })?;
        let th = TradeHistory {
            th_t_id: t_id,
            th_dts: now,
            th_st_id: ST_COMPLETED,
            _pad: [0; 4],
        };
        s.insert_row(TRADE_HISTORY, &trade_history_key(t_id, &ST_COMPLETED), &th)?;
        let found = s.update_row(BROKER, &k_u64(ca.ca_b_id), |b: &mut Broker| {
            b.b_num_trades += 1;
            b.b_comm_total += comm;
        })?;
        need(found.then_some(()), "broker", ca.ca_b_id)?;
        // Frame 6: settlement and cash.
        let amt = trade::settlement_amount(sell, t.t_qty, price, t.t_chrg, comm, ca.ca_tax_st, tax);
        let cash = t.t_is_cash == 1;
        let mut se = Settlement::zeroed();
        se.se_t_id = t_id;
        row::set_str(
            &mut se.se_cash_type,
            if cash { b"Cash Account" } else { b"Margin" },
        );
        se.se_cash_due_date = now + 2 * ONE_DAY_US;
        se.se_amt = amt;
        s.insert_row(SETTLEMENT, &k_u64(t_id), &se)?;
        if cash {
            s.update_row(
                CUSTOMER_ACCOUNT,
                &k_u64(t.t_ca_id),
                |r: &mut CustomerAccount| r.ca_bal += amt,
            )?;
            let mut ct = CashTransaction::zeroed();
            ct.ct_t_id = t_id;
            ct.ct_dts = now;
            ct.ct_amt = amt;
            let name = [
                row::get_str(&tt.tt_name),
                format!(" {} shares of ", t.t_qty).as_bytes(),
                row::get_str(&sec.s_name),
            ]
            .concat();
            row::set_str(&mut ct.ct_name, &name);
            s.insert_row(CASH_TRANSACTION, &k_u64(t_id), &ct)?;
        }
        Ok(10 + lots.len())
    }

    /// Trade-Status (clause 3.3.11): an account's 50 latest trades with their status,
    /// type, security and exchange names; the customer and broker.
    pub fn trade_status<W: Worker>(&self, s: &mut Session<W>, ca_id: u64) -> Result<usize> {
        let trades = prefix_rows(
            s,
            TRADE.secondary(TRADE_BY_ACCOUNT),
            &k_u64(ca_id),
            Dir::Backward,
            50,
            |r: Trade| r,
        )?;
        let mut n = trades.len();
        for t in &trades {
            let st: StatusType = get(s, STATUS_TYPE, &k_bytes(&t.t_st_id), "status")?;
            let tt: TradeType = get(s, TRADE_TYPE, &k_bytes(&t.t_tt_id), "trade type")?;
            let sec: Security = get(s, SECURITY, &k_symb(&t.t_s_symb), "security")?;
            let ex: Exchange = get(s, EXCHANGE, &k_bytes(&sec.s_ex_id), "exchange")?;
            std::hint::black_box((st.st_name, tt.tt_name, sec.s_name, ex.ex_name));
            n += 4;
        }
        let ca: CustomerAccount = get(s, CUSTOMER_ACCOUNT, &k_u64(ca_id), "account")?;
        let c: Customer = get(s, CUSTOMER, &k_u64(ca.ca_c_id), "customer")?;
        let b: Broker = get(s, BROKER, &k_u64(ca.ca_b_id), "broker")?;
        std::hint::black_box((c.c_l_name, b.b_name));
        Ok(n + 3)
    }

    /// Data-Maintenance (clause 3.3.12): one of twelve tables gets a small change that
    /// a later run of the same table undoes or varies. `table` picks it; `a` and `b` are
    /// ids drawn for it.
    pub fn data_maintenance<W: Worker>(
        &self,
        s: &mut Session<W>,
        table: u32,
        a: u64,
        b: u64,
    ) -> Result<usize> {
        let c_id = 1 + a % self.cfg.customers;
        let co = 1 + a % self.companies();
        let sec = a % self.securities();
        let symb = symbol(sec);
        let found = match table {
            0 => {
                let ca = account_id(c_id, 0);
                s.update_row(
                    ACCOUNT_PERMISSION,
                    &account_permission_key(ca, &tax_id(c_id)),
                    |r: &mut AccountPermission| {
                        let acl: &[u8] = if &r.ap_acl == b"1111" {
                            b"0011"
                        } else {
                            b"1111"
                        };
                        row::set_str(&mut r.ap_acl, acl)
                    },
                )?
            }
            1 => {
                let ad = super::load::customer_address(self, c_id);
                s.update_row(ADDRESS, &k_u64(ad), |r: &mut Address| {
                    if row::get_str(&r.ad_line2).is_empty() {
                        row::set_str(&mut r.ad_line2, b"Apt. 10C")
                    } else {
                        r.ad_line2 = [0; 80]
                    }
                })?
            }
            2 => s.update_row(COMPANY, &k_u64(co), |r: &mut Company| {
                let v: &[u8] = if row::get_str(&r.co_sp_rate) == b"ABA" {
                    b"AAA"
                } else {
                    b"ABA"
                };
                row::set_str(&mut r.co_sp_rate, v)
            })?,
            3 => s.update_row(CUSTOMER, &k_u64(c_id), |r: &mut Customer| {
                toggle_suffix(&mut r.c_email_2, b".org")
            })?,
            4 => dm_customer_taxrate(s, c_id, b)?,
            5 => {
                let day = b % self.cfg.daily_market_days as u64;
                let date = MARKET_START_US + day * ONE_DAY_US;
                s.update_row(
                    DAILY_MARKET,
                    &daily_market_key(&symb, date),
                    |r: &mut DailyMarket| r.dm_vol += 1 + b % 100,
                )?
            }
            6 => s.update_row(
                EXCHANGE,
                &k_bytes(EXCHANGES[(b % 4) as usize]),
                |r: &mut Exchange| toggle_suffix(&mut r.ex_desc, b" LAST UPDATED"),
            )?,
            7 => dm_financial(s, co)?,
            8 => {
                let id = (co - 1) * NEWS_PER_COMPANY + 1;
                s.update_row(NEWS_ITEM, &k_u64(id), |r: &mut NewsItem| {
                    r.ni_dts += ONE_DAY_US
                })?
            }
            9 => s.update_row(SECURITY, &k_symb(&symb), |r: &mut Security| {
                r.s_exch_date += ONE_DAY_US
            })?,
            10 => s.update_row(
                TAXRATE,
                &k_bytes(&taxrate_id(b % TAXRATES)),
                |r: &mut Taxrate| toggle_suffix(&mut r.tx_name, b" (revised)"),
            )?,
            11 => self.dm_watch_item(s, c_id, b)?,
            _ => unreachable!("data-maintenance has twelve tables"),
        };
        need(found.then_some(()), "data-maintenance row of table", table)?;
        Ok(1)
    }

    /// Data-Maintenance of WATCH_ITEM: one watch item of the customer's list replaced by
    /// a security the list lacks.
    fn dm_watch_item<W: Worker>(&self, s: &mut Session<W>, c_id: u64, b: u64) -> Result<bool> {
        // Replace one watch item by a security the list lacks.
        let items = prefix_rows(
            s,
            WATCH_ITEM.primary(),
            &k_u64(c_id),
            Dir::Forward,
            usize::MAX,
            |r: WatchItem| r.wi_s_symb,
        )?;
        let old = need(
            items.get((b as usize) % items.len().max(1)).copied(),
            "watch item of list",
            c_id,
        )?;
        let mut cand = b;
        let new = loop {
            let sy = symbol(cand % self.securities());
            if !items.contains(&sy) {
                break sy;
            }
            cand += 1;
        };
        s.delete(WATCH_ITEM, &k_u64_symb(c_id, &old))?;
        let wi = WatchItem {
            wi_wl_id: c_id,
            wi_s_symb: new,
            _pad: [0],
        };
        s.insert_row(WATCH_ITEM, &k_u64_symb(c_id, &new), &wi)?;
        Ok(true)
    }

    /// Trade-Cleanup (clause 3.3.13): orders a previous run left pending or submitted
    /// (trade ids below this run's first) are canceled. Returns how many.
    pub fn trade_cleanup<W: Worker>(
        &self,
        s: &mut Session<W>,
        first: u64,
        now: u64,
    ) -> Result<u64> {
        let mut pending = Vec::new();
        s.scan(
            TRADE_REQUEST.primary(),
            Bound::Unbounded,
            Bound::Excluded(&k_u64(first)),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                pending.push(row::read::<TradeRequest>(r).tr_t_id);
                true
            },
        )?;
        let hist = |s: &mut Session<W>, t: u64, st: St| {
            let th = TradeHistory {
                th_t_id: t,
                th_dts: now,
                th_st_id: st,
                _pad: [0; 4],
            };
            s.insert_row(TRADE_HISTORY, &trade_history_key(t, &st), &th)
        };
        let cancel = |s: &mut Session<W>, t: u64| {
            let found = s.update_row(TRADE, &k_u64(t), |r: &mut Trade| {
                r.t_st_id = ST_CANCELED;
                r.t_dts = now;
            })?;
            need(found.then_some(()), "trade", t)
        };
        for &t in &pending {
            hist(s, t, ST_SUBMITTED)?;
            cancel(s, t)?;
            hist(s, t, ST_CANCELED)?;
            s.delete(TRADE_REQUEST, &k_u64(t))?;
        }
        // Submitted orders the last run's market never completed.
        let mut submitted = Vec::new();
        s.scan(
            TRADE.primary(),
            Bound::Excluded(&k_u64(self.initial_max_trade_id())),
            Bound::Excluded(&k_u64(first)),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                let t = row::read::<Trade>(r);
                if t.t_st_id == ST_SUBMITTED {
                    submitted.push(t.t_id);
                }
                true
            },
        )?;
        for &t in &submitted {
            cancel(s, t)?;
            hist(s, t, ST_CANCELED)?;
        }
        Ok((pending.len() + submitted.len()) as u64)
    }

    /// The first trade id of this run (one above the largest in the database when the
    /// run's first Trade-Order or Trade-Cleanup looked).
    pub fn first_run_trade_id<W: Worker>(&self, s: &mut Session<W>) -> Result<u64> {
        use std::sync::atomic::Ordering;
        let f = self.first_tid.load(Ordering::Acquire);
        if f != 0 {
            return Ok(f);
        }
        let mut max = 0;
        s.scan(
            TRADE.primary(),
            Bound::Unbounded,
            Bound::Unbounded,
            Dir::Backward,
            1,
            |_, r| {
                max = row::read::<Trade>(r).t_id;
                false
            },
        )?;
        let first = max + 1;
        // The first to look decides; later lookers (same answer, or larger if trades
        // were entered meanwhile) take its value.
        match self
            .next_tid
            .compare_exchange(0, first, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                self.first_tid.store(first, Ordering::Release);
                Ok(first)
            }
            Err(_) => {
                while self.first_tid.load(Ordering::Acquire) == 0 {
                    std::hint::spin_loop();
                }
                Ok(self.first_tid.load(Ordering::Acquire))
            }
        }
    }

    fn next_trade_id<W: Worker>(&self, s: &mut Session<W>) -> Result<u64> {
        self.first_run_trade_id(s)?;
        Ok(self
            .next_tid
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// Draw a trade-lookup / trade-update frame's input.
pub fn draw_lookup(t: &Tpce, rng: &mut KitRng, update: bool) -> Lookup {
    use rand::Rng;
    let max_t = t.initial_max_trade_id();
    let days = t.cfg.trade_hours.div_ceil(HOURS_PER_DAY as u32) as u64;
    let start = LOAD_START_US
        + rng.gen_range(0..days.max(1)) * ONE_DAY_US
        + rng.gen_range(0..HOURS_PER_DAY * 3600) * 1_000_000;
    let end = start + rng.gen_range(1..=4) * 3_600_000_000;
    let r = rng.gen_range(0..100);
    let frame = if update {
        r / 34
    } else {
        match r {
            0..=29 => 0,
            30..=59 => 1,
            60..=89 => 2,
            _ => 3,
        }
    };
    match frame {
        0 => {
            let n = if update { 20 } else { rng.gen_range(1..=20) };
            Lookup::Trades((0..n).map(|_| rng.gen_range(1..=max_t.max(1))).collect())
        }
        1 => Lookup::Account(t.random_account(rng), start, end),
        2 => Lookup::Symbol(symbol(rng.gen_range(0..t.securities())), start, end),
        _ => Lookup::History(t.random_account(rng), start),
    }
}

/// Reads a u64 of a row (for the checker's scans).
pub fn row_u64(r: &[u8], off: usize) -> u64 {
    api::row::field::<u64>(r, off)
}

pub use gen::now_us as now;

/// Data-Maintenance of CUSTOMER_TAXRATE: the customer's divisional rate replaced by
/// another divisional one.
fn dm_customer_taxrate<W: Worker>(s: &mut Session<W>, c_id: u64, b: u64) -> Result<bool> {
    // Replace the customer's divisional rate by another divisional one.
    let ids = prefix_rows(
        s,
        CUSTOMER_TAXRATE.primary(),
        &k_u64(c_id),
        Dir::Forward,
        usize::MAX,
        |r: CustomerTaxrate| r.cx_tx_id,
    )?;
    let old = need(
        ids.iter().find(|x| x[0] == b'D').copied(),
        "divisional tax rate of customer",
        c_id,
    )?;
    let span = TAXRATES - NATIONAL_TAXRATES;
    let cur = taxrate_index(&old).unwrap_or(NATIONAL_TAXRATES) - NATIONAL_TAXRATES;
    let new = taxrate_id(NATIONAL_TAXRATES + (cur + 1 + b % (span - 1)) % span);
    s.delete(CUSTOMER_TAXRATE, &customer_taxrate_key(c_id, &old))?;
    let r = CustomerTaxrate {
        cx_c_id: c_id,
        cx_tx_id: new,
        _pad: [0; 4],
    };
    s.insert_row(CUSTOMER_TAXRATE, &customer_taxrate_key(c_id, &new), &r)?;
    Ok(true)
}

/// Data-Maintenance of FINANCIAL: every quarter of the company `co` starts alternately
/// one day later and back (the first of the month).
fn dm_financial<W: Worker>(s: &mut Session<W>, co: u64) -> Result<bool> {
    let mut n = 0;
    for q in 0..FINANCIAL_QUARTERS {
        let k = financial_key(co, 2000 + q / 4, q % 4 + 1);
        n += s.update_row(FINANCIAL, &k, |r: &mut Financial| {
            // Alternately one day later and back (the first of the month).
            if (r.fi_qtr_start_date / ONE_DAY_US) % 2 == (MARKET_START_US / ONE_DAY_US) % 2 {
                r.fi_qtr_start_date += ONE_DAY_US
            } else {
                r.fi_qtr_start_date -= ONE_DAY_US
            }
        })? as u32;
    }
    Ok(n == FINANCIAL_QUARTERS)
}

/// Trade-Order's frame 3 for an order naming the company: the security of `issue` of the
/// company called `name`.
fn security_of_company<W: Worker>(
    s: &mut Session<W>,
    name: &[u8; 60],
    issue: &[u8; 6],
) -> Result<Symb> {
    let mut co = None;
    let mut k = Key::new();
    k.push_str_fixed(&name[..CO_NAME_KEY], CO_NAME_KEY);
    prefix_scan(
        s,
        COMPANY.secondary(COMPANY_BY_NAME),
        &k,
        Dir::Forward,
        1,
        |_, r| {
            co = Some(row::read::<Company>(r).co_id);
            false
        },
    )?;
    let co = need(co, "company", String::from_utf8_lossy(row::get_str(name)))?;
    let mut k = k_u64(co);
    k.push_bytes(issue);
    let mut sy = None;
    prefix_scan(
        s,
        SECURITY.secondary(SECURITY_BY_COMPANY),
        &k,
        Dir::Forward,
        1,
        |_, r| {
            sy = Some(row::read::<Security>(r).s_symb);
            false
        },
    )?;
    need(sy, "security of company", co)
}

/// Trade-Order's frame 3 on margin: the account's assets, its balance `bal` plus each
/// holding at the last trade's price.
fn account_assets<W: Worker>(s: &mut Session<W>, ca_id: u64, bal: i64) -> Result<i64> {
    let mut assets = bal;
    let mut hs_rows = Vec::new();
    prefix_scan(
        s,
        HOLDING_SUMMARY.primary(),
        &k_u64(ca_id),
        Dir::Forward,
        usize::MAX,
        |_, r| {
            let h = row::read::<HoldingSummary>(r);
            hs_rows.push((h.hs_s_symb, h.hs_qty));
            true
        },
    )?;
    for (sy, q) in hs_rows {
        let p: LastTrade = get(s, LAST_TRADE, &k_symb(&sy), "last trade")?;
        assets += q * p.lt_price;
    }
    Ok(assets)
}

/// Trade-Result's frame 2 written: the holding summary, the holding history and the
/// holdings as the trade `t_id` changed them (`ch`).
fn write_holdings<W: Worker>(
    s: &mut Session<W>,
    t: &Trade,
    t_id: u64,
    hs_key: &Key,
    ch: &trade::LotChanges,
) -> Result<()> {
    if ch.hs_before == 0 {
        let r = HoldingSummary {
            hs_ca_id: t.t_ca_id,
            hs_qty: ch.hs_after,
            hs_s_symb: t.t_s_symb,
            _pad: [0],
        };
        s.insert_row(HOLDING_SUMMARY, hs_key, &r)?;
    } else if ch.hs_after == 0 {
        s.delete(HOLDING_SUMMARY, hs_key)?;
    } else {
        s.update_row(HOLDING_SUMMARY, hs_key, |r: &mut HoldingSummary| {
            r.hs_qty = ch.hs_after
        })?;
    }
    for (h, before, after) in &ch.history {
        let hh = HoldingHistory {
            hh_h_t_id: *h,
            hh_t_id: t_id,
            hh_before_qty: *before,
            hh_after_qty: *after,
        };
        s.insert_row(HOLDING_HISTORY, &k_u64x2(*h, t_id), &hh)?;
    }
    for (h, q) in &ch.updates {
        s.update_row(HOLDING, &k_u64(*h), |r: &mut Holding| r.h_qty = *q)?;
    }
    for h in &ch.deletes {
        s.delete(HOLDING, &k_u64(*h))?;
    }
    if let Some(l) = ch.insert {
        let h = Holding {
            h_t_id: l.h_t_id,
            h_ca_id: t.t_ca_id,
            h_dts: l.dts,
            h_price: l.price,
            h_qty: l.qty,
            h_s_symb: t.t_s_symb,
            _pad: [0],
        };
        s.insert_row(HOLDING, &k_u64(t_id), &h)?;
    }
    Ok(())
}

/// Market-Watch by industry: the securities of the industry `name`'s companies with ids
/// in `lo..=hi`, added to `symbs`; returns the rows read.
fn industry_securities<W: Worker>(
    s: &mut Session<W>,
    name: &[u8; 50],
    lo: u64,
    hi: u64,
    symbs: &mut Vec<Symb>,
) -> Result<usize> {
    let mut n = 0;
    let mut in_id = None;
    prefix_scan(
        s,
        INDUSTRY.secondary(INDUSTRY_BY_NAME),
        &k_bytes(name),
        Dir::Forward,
        1,
        |_, r| {
            in_id = Some(row::read::<Industry>(r).in_id);
            false
        },
    )?;
    let in_id = need(
        in_id,
        "industry",
        String::from_utf8_lossy(row::get_str(name)),
    )?;
    let mut from = k_bytes(&in_id);
    from.push_u64(lo);
    let mut to = k_bytes(&in_id);
    to.push_u64(hi);
    let mut cos = Vec::new();
    s.scan(
        COMPANY.secondary(COMPANY_BY_INDUSTRY),
        Bound::Included(&from),
        Bound::Included(&to),
        Dir::Forward,
        usize::MAX,
        |_, r| {
            cos.push(row::read::<Company>(r).co_id);
            true
        },
    )?;
    n += 1 + cos.len();
    for co in cos {
        n += prefix_scan(
            s,
            SECURITY.secondary(SECURITY_BY_COMPANY),
            &k_u64(co),
            Dir::Forward,
            usize::MAX,
            |_, r| {
                symbs.push(row::read::<Security>(r).s_symb);
                true
            },
        )?;
    }
    Ok(n)
}
