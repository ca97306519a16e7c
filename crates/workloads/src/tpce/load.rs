//! TPC-E population: the fixed tables once, then per load unit of 1,000 customers its
//! market part (companies, securities, daily market, financials, news) and its customer
//! part (customers, accounts, permissions, watch lists, then the initial trades, which
//! leave the holdings, balances and broker totals). Each part is a loader unit run by
//! `util::parallel_units`. The rows are a function of the configuration alone, so
//! `load_rows` counts them exactly by generating them without inserting. Owns the
//! initial values; it must never run the benchmark transactions.

use super::gen::{self, *};
use super::schema::*;
use super::trade::{self, Lot};
use super::Tpce;
use api::key::Key;
use api::row::{self, Pod, Zeroable};
use api::{Database, Result, Session, TableId, Worker};
use rand::distributions::{Distribution, WeightedIndex};
use rand::Rng;
use std::collections::HashMap;

/// Rows per loading transaction.
const BATCH_ROWS: usize = 1000;

/// Where generated rows go: a loading session or a counter.
pub trait Sink {
    fn put(&mut self, t: TableId, k: Key, row: &[u8]) -> Result<()>;
}

pub struct Counter(pub u64);
impl Sink for Counter {
    fn put(&mut self, _: TableId, _: Key, _: &[u8]) -> Result<()> {
        self.0 += 1;
        Ok(())
    }
}

struct Inserter<'a, 's, W: Worker> {
    s: &'s mut Session<W>,
    buf: Vec<(TableId, Key, Vec<u8>)>,
    progress: &'a (dyn Fn(u64) + Sync),
}

impl<W: Worker> Inserter<'_, '_, W> {
    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let buf = &self.buf;
        self.s.run_retry(u32::MAX, 100, |s| {
            for (t, k, r) in buf {
                s.insert(*t, k, r)?;
            }
            Ok(())
        })?;
        (self.progress)(self.buf.len() as u64);
        self.buf.clear();
        Ok(())
    }
}

impl<W: Worker> Sink for Inserter<'_, '_, W> {
    fn put(&mut self, t: TableId, k: Key, row: &[u8]) -> Result<()> {
        self.buf.push((t, k, row.to_vec()));
        if self.buf.len() >= BATCH_ROWS {
            self.flush()?;
        }
        Ok(())
    }
}

fn put<T: Pod>(sink: &mut dyn Sink, t: TableId, k: Key, r: &T) -> Result<()> {
    sink.put(t, k, row::bytes(r))
}

/// Loader units: 0 the fixed tables, then two per load unit (market, customers).
pub fn units(t: &Tpce) -> u64 {
    1 + 2 * t.units()
}

pub fn generate(t: &Tpce, unit: u64, sink: &mut dyn Sink) -> Result<()> {
    let mut rng = crate::util::rng_for(t.cfg.load_salt, 0x7CE0_0000 + unit);
    if unit == 0 {
        fixed(t, &mut rng, sink)
    } else if unit % 2 == 1 {
        market(t, (unit - 1) / 2, &mut rng, sink)
    } else {
        customers(t, (unit - 2) / 2, &mut rng, sink)
    }
}

pub fn count_rows(t: &Tpce) -> u64 {
    let mut c = Counter(0);
    for u in 0..units(t) {
        generate(t, u, &mut c).expect("counting never fails");
    }
    c.0
}

pub fn load(
    t: &Tpce,
    engine: &dyn Database,
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<()> {
    crate::util::parallel_units(engine, threads, units(t), |s, unit| {
        let mut ins = Inserter {
            s,
            buf: Vec::with_capacity(BATCH_ROWS),
            progress,
        };
        generate(t, unit, &mut ins)?;
        ins.flush()
    })
}

fn set(dst: &mut [u8], s: &[u8]) {
    row::set_str(dst, s);
}

fn fixed(t: &Tpce, rng: &mut impl Rng, sink: &mut dyn Sink) -> Result<()> {
    for (id, name) in STATUS_TYPES {
        let mut r = StatusType::zeroed();
        r.st_id = id;
        set(&mut r.st_name, name);
        put(sink, STATUS_TYPE, k_bytes(&id), &r)?;
    }
    for (id, name, sell, mrkt) in TRADE_TYPES {
        let mut r = TradeType::zeroed();
        r.tt_id = id;
        set(&mut r.tt_name, name);
        r.tt_is_sell = sell as u8;
        r.tt_is_mrkt = mrkt as u8;
        put(sink, TRADE_TYPE, k_bytes(&id), &r)?;
    }
    for i in 0..TAXRATES {
        let mut r = Taxrate::zeroed();
        r.tx_id = taxrate_id(i);
        r.tx_rate = taxrate_rate(i);
        let name = if i < NATIONAL_TAXRATES {
            format!("National tax rate {}", i + 1)
        } else {
            format!("Division tax rate {}", i - NATIONAL_TAXRATES + 1)
        };
        set(&mut r.tx_name, name.as_bytes());
        put(sink, TAXRATE, k_bytes(&r.tx_id), &r)?;
    }
    for i in 0..ZIP_CODES {
        let mut r = ZipCode::zeroed();
        r.zc_code = zip_code(i);
        town(i, &mut r.zc_town);
        division(i, &mut r.zc_div);
        put(sink, ZIP_CODE, k_bytes(&r.zc_code), &r)?;
    }
    let secs = t.securities();
    for (e, id) in EXCHANGES.iter().enumerate() {
        let mut a = Address::zeroed();
        a.ad_id = e as u64 + 1;
        street(rng, &mut a.ad_line1);
        a.ad_zc_code = zip_code(rng.gen_range(0..ZIP_CODES));
        set(&mut a.ad_ctry, b"USA");
        put(sink, ADDRESS, k_u64(a.ad_id), &a)?;
        let mut r = Exchange::zeroed();
        r.ex_id = **id;
        let name = format!(
            "{} Stock Exchange",
            String::from_utf8_lossy(row::get_str(*id))
        );
        set(&mut r.ex_name, name.as_bytes());
        r.ex_num_symb = (0..secs).filter(|&s| exchange_of(s) == e).count() as u32;
        r.ex_open = 9 * 60 + 30;
        r.ex_close = 16 * 60;
        text(rng, 100, &mut r.ex_desc);
        r.ex_ad_id = a.ad_id;
        put(sink, EXCHANGE, k_bytes(*id), &r)?;
    }
    for (i, name) in SECTORS.iter().enumerate() {
        let mut r = Sector::zeroed();
        r.sc_id = sector_id(i);
        set(&mut r.sc_name, name.as_bytes());
        put(sink, SECTOR, k_bytes(&r.sc_id), &r)?;
    }
    for i in 0..INDUSTRIES {
        let (id, name, sc) = industry(i);
        let r = Industry {
            in_id: id,
            in_name: name,
            in_sc_id: sc,
        };
        put(sink, INDUSTRY, k_bytes(&id), &r)?;
    }
    for (ti, (tt, ..)) in TRADE_TYPES.iter().enumerate() {
        for tier in 1..=3u8 {
            let mut r = Charge::zeroed();
            r.ch_tt_id = *tt;
            r.ch_c_tier = tier;
            r.ch_chrg = charge(ti, tier);
            put(sink, CHARGE, charge_key(tt, tier), &r)?;
            for (ex, ex_id) in EXCHANGES.iter().enumerate() {
                for (band, (lo, hi)) in COMMISSION_BANDS.iter().enumerate() {
                    let mut r = CommissionRate::zeroed();
                    r.cr_c_tier = tier;
                    r.cr_tt_id = *tt;
                    r.cr_ex_id = **ex_id;
                    r.cr_from_qty = *lo;
                    r.cr_to_qty = *hi;
                    r.cr_rate = commission_rate(tier, ti, ex, band);
                    put(
                        sink,
                        COMMISSION_RATE,
                        commission_key(tier, tt, ex_id, *lo),
                        &r,
                    )?;
                }
            }
        }
    }
    Ok(())
}

fn market(t: &Tpce, unit: u64, rng: &mut impl Rng, sink: &mut dyn Sink) -> Result<()> {
    let co_lo = unit * COMPANIES_PER_UNIT + 1;
    for co in co_lo..co_lo + COMPANIES_PER_UNIT {
        company(t, co, rng, sink)?;
    }
    let s_lo = unit * SECURITIES_PER_UNIT;
    for sec in s_lo..s_lo + SECURITIES_PER_UNIT {
        security(t, sec, rng, sink)?;
    }
    Ok(())
}

/// A company with its address, competitors, financial quarters and news.
fn company(t: &Tpce, co: u64, rng: &mut impl Rng, sink: &mut dyn Sink) -> Result<()> {
    let companies = t.companies();
    let mut a = Address::zeroed();
    a.ad_id = company_address(co);
    street(rng, &mut a.ad_line1);
    a.ad_zc_code = zip_code(rng.gen_range(0..ZIP_CODES));
    set(&mut a.ad_ctry, b"USA");
    put(sink, ADDRESS, k_u64(a.ad_id), &a)?;
    let mut r = Company::zeroed();
    r.co_id = co;
    r.co_st_id = ST_ACTIVE;
    r.co_name = company_name(co);
    r.co_in_id = industry(industry_of_company(co)).0;
    set(
        &mut r.co_sp_rate,
        [&b"AAA"[..], b"AA", b"A", b"BBB"][rng.gen_range(0..4)],
    );
    let mut ceo = [0u8; 46];
    first_name(rng, &mut ceo[..20]);
    let n = row::get_str(&ceo).len();
    last_name(rng, &mut ceo[n + 1..n + 26]);
    ceo[n] = b' ';
    r.co_ceo = ceo;
    r.co_ad_id = a.ad_id;
    text(rng, 150, &mut r.co_desc);
    r.co_open_date = MARKET_START_US - rng.gen_range(0..20 * 365) * ONE_DAY_US;
    put(sink, COMPANY, k_u64(co), &r)?;
    let m = mix(co ^ 0xC0C0);
    for j in 0..COMPETITORS_PER_COMPANY {
        // Three distinct offsets from the company itself (never 0).
        let comp = 1 + (co - 1 + 1 + (m + j) % (companies - 1)) % companies;
        let mut c = CompanyCompetitor::zeroed();
        c.cp_co_id = co;
        c.cp_comp_co_id = comp;
        c.cp_in_id = industry(industry_of_company(comp)).0;
        put(
            sink,
            COMPANY_COMPETITOR,
            competitor_key(co, comp, &c.cp_in_id),
            &c,
        )?;
    }
    for q in 0..FINANCIAL_QUARTERS {
        let mut f = Financial::zeroed();
        f.fi_co_id = co;
        f.fi_year = 2000 + q / 4;
        f.fi_qtr = q % 4 + 1;
        f.fi_qtr_start_date = MARKET_START_US + q as u64 * 91 * ONE_DAY_US;
        f.fi_revenue = rng.gen_range(10_000_000..1_000_000_000_000);
        f.fi_net_earn = f.fi_revenue / rng.gen_range(5..40);
        f.fi_out_basic = rng.gen_range(1_000_000..1_000_000_000);
        f.fi_out_dilut = f.fi_out_basic + f.fi_out_basic / 50;
        f.fi_basic_eps = f.fi_net_earn / f.fi_out_basic as i64;
        f.fi_dilut_eps = f.fi_net_earn / f.fi_out_dilut as i64;
        f.fi_margin = f.fi_net_earn * 10_000 / f.fi_revenue;
        f.fi_inventory = rng.gen_range(0..f.fi_revenue);
        f.fi_assets = f.fi_revenue * rng.gen_range(1..5);
        f.fi_liability = f.fi_assets / rng.gen_range(2..10);
        put(sink, FINANCIAL, financial_key(co, f.fi_year, f.fi_qtr), &f)?;
    }
    for j in 0..NEWS_PER_COMPANY {
        let id = (co - 1) * NEWS_PER_COMPANY + j + 1;
        let mut n = NewsItem::zeroed();
        n.ni_id = id;
        text(rng, 70, &mut n.ni_headline);
        text(rng, 240, &mut n.ni_summary);
        text(rng, NI_ITEM_LEN, &mut n.ni_item);
        n.ni_dts = LOAD_START_US - rng.gen_range(1..365) * ONE_DAY_US;
        text(rng, 20, &mut n.ni_source);
        last_name(rng, &mut n.ni_author);
        put(sink, NEWS_ITEM, k_u64(id), &n)?;
        let x = NewsXref {
            nx_ni_id: id,
            nx_co_id: co,
        };
        put(sink, NEWS_XREF, k_u64x2(co, id), &x)?;
    }
    Ok(())
}

/// A security with its daily market history (and 52-week high and low from it) and
/// last trade.
fn security(t: &Tpce, sec: u64, rng: &mut impl Rng, sink: &mut dyn Sink) -> Result<()> {
    let (co, issue) = security_company(sec);
    let symb = symbol(sec);
    let mut s = Security::zeroed();
    s.s_symb = symb;
    s.s_issue = *issue;
    s.s_st_id = ST_ACTIVE;
    let name = format!(
        "{} {}",
        String::from_utf8_lossy(row::get_str(&company_name(co))),
        if issue == b"COMMON" {
            "Common"
        } else {
            "Preferred"
        }
    );
    set(&mut s.s_name, name.as_bytes());
    s.s_ex_id = *EXCHANGES[exchange_of(sec)];
    s.s_co_id = co;
    s.s_num_out = rng.gen_range(4_000_000..10_000_000_000);
    s.s_start_date = MARKET_START_US - rng.gen_range(0..3650) * ONE_DAY_US;
    s.s_exch_date = s.s_start_date + rng.gen_range(0..365) * ONE_DAY_US;
    s.s_pe = rng.gen_range(100..12_000);
    let (mut hi, mut lo) = ((0i64, 0u64), (i64::MAX, 0u64));
    let days = t.cfg.daily_market_days;
    for d in 0..days {
        let date = MARKET_START_US + d as u64 * ONE_DAY_US;
        let (close, high, low) = daily_prices(sec, d);
        if d + 260 >= days {
            if high > hi.0 {
                hi = (high, date);
            }
            if low < lo.0 {
                lo = (low, date);
            }
        }
        let dm = DailyMarket {
            dm_date: date,
            dm_close: close,
            dm_high: high,
            dm_low: low,
            dm_vol: rng.gen_range(1_000..1_000_000),
            dm_s_symb: symb,
            _pad: [0],
        };
        put(sink, DAILY_MARKET, daily_market_key(&symb, date), &dm)?;
    }
    s.s_52wk_high = hi.0;
    s.s_52wk_high_date = hi.1;
    s.s_52wk_low = if lo.0 == i64::MAX { 0 } else { lo.0 };
    s.s_52wk_low_date = lo.1;
    s.s_dividend = rng.gen_range(0..500);
    s.s_yield = rng.gen_range(0..1_000);
    put(sink, SECURITY, k_symb(&symb), &s)?;
    let p = price_at(sec, 0);
    let lt = LastTrade {
        lt_dts: LOAD_START_US,
        lt_price: p,
        lt_open_price: p,
        lt_vol: 0,
        lt_s_symb: symb,
        _pad: [0],
    };
    put(sink, LAST_TRADE, k_symb(&symb), &lt)?;
    Ok(())
}

pub fn company_address(co: u64) -> u64 {
    4 + co
}
pub fn customer_address(t: &Tpce, c: u64) -> u64 {
    4 + t.companies() + c
}

/// Securities an account trades in: 5-15 of the whole market, a pure function.
pub fn account_securities(ca_id: u64, securities: u64) -> impl Iterator<Item = u64> {
    let n = 5 + mix(ca_id ^ 0xACC) % 11;
    (0..n).map(move |j| mix(ca_id.wrapping_mul(31) + j) % securities)
}

/// Watch-list securities of a customer: 50-150 consecutive securities.
pub fn watch_securities(c_id: u64, securities: u64) -> impl Iterator<Item = u64> {
    let n = (50 + mix(c_id ^ 0x3A7C) % 101).min(securities);
    let start = mix(c_id ^ 0x57A) % securities;
    (0..n).map(move |j| (start + j) % securities)
}

fn customers(t: &Tpce, unit: u64, rng: &mut impl Rng, sink: &mut dyn Sink) -> Result<()> {
    let c_lo = unit * LOAD_UNIT + 1;
    let secs = t.securities();
    let mut names: Vec<([u8; 20], [u8; 25])> = Vec::with_capacity(LOAD_UNIT as usize);
    for c in c_lo..c_lo + LOAD_UNIT {
        let mut a = Address::zeroed();
        a.ad_id = customer_address(t, c);
        street(rng, &mut a.ad_line1);
        if rng.gen_range(0..4) == 0 {
            set(
                &mut a.ad_line2,
                format!("Apt {}", rng.gen_range(1..500)).as_bytes(),
            );
        }
        a.ad_zc_code = zip_code(rng.gen_range(0..ZIP_CODES));
        set(&mut a.ad_ctry, b"USA");
        put(sink, ADDRESS, k_u64(a.ad_id), &a)?;
        let mut r = Customer::zeroed();
        r.c_id = c;
        r.c_tax_id = tax_id(c);
        r.c_st_id = ST_ACTIVE;
        last_name(rng, &mut r.c_l_name);
        first_name(rng, &mut r.c_f_name);
        r.c_m_name = b'A' + rng.gen_range(0..26u8);
        r.c_gndr = if rng.gen_bool(0.5) { b'M' } else { b'F' };
        r.c_tier = tier(c);
        // Dates are microseconds since 1970, so birth dates stay after it.
        r.c_dob = LOAD_START_US - rng.gen_range(18 * 365..34 * 365) * ONE_DAY_US;
        r.c_ad_id = a.ad_id;
        for p in r.c_phone.iter_mut() {
            set(&mut p.ctry, b"1");
            digits(rng, &mut p.area);
            digits(rng, &mut p.local[..7]);
        }
        let email = format!(
            "{}.{}@example.com",
            String::from_utf8_lossy(row::get_str(&r.c_f_name)),
            String::from_utf8_lossy(row::get_str(&r.c_l_name))
        );
        set(&mut r.c_email_1, email.as_bytes());
        set(&mut r.c_email_2, format!("c{c}@example.net").as_bytes());
        names.push((r.c_f_name, r.c_l_name));
        put(sink, CUSTOMER, k_u64(c), &r)?;
        for tx in customer_taxrates(c) {
            let x = CustomerTaxrate {
                cx_c_id: c,
                cx_tx_id: tx,
                _pad: [0; 4],
            };
            put(sink, CUSTOMER_TAXRATE, customer_taxrate_key(c, &tx), &x)?;
        }
        for k in 0..accounts_of(c) {
            let ca = account_id(c, k);
            for j in 0..permissions_of(ca) {
                let mut p = AccountPermission::zeroed();
                p.ap_ca_id = ca;
                set(&mut p.ap_acl, if j == 0 { b"0000" } else { b"0011" });
                if j == 0 {
                    p.ap_tax_id = r.c_tax_id;
                    p.ap_l_name = r.c_l_name;
                    p.ap_f_name = r.c_f_name;
                } else {
                    p.ap_tax_id = permission_tax_id(ca, j);
                    last_name(rng, &mut p.ap_l_name);
                    first_name(rng, &mut p.ap_f_name);
                }
                put(
                    sink,
                    ACCOUNT_PERMISSION,
                    account_permission_key(ca, &p.ap_tax_id),
                    &p,
                )?;
            }
        }
        let wl = WatchList {
            wl_id: c,
            wl_c_id: c,
        };
        put(sink, WATCH_LIST, k_u64(c), &wl)?;
        for sec in watch_securities(c, secs) {
            let wi = WatchItem {
                wi_wl_id: c,
                wi_s_symb: symbol(sec),
                _pad: [0],
            };
            put(sink, WATCH_ITEM, k_u64_symb(c, &wi.wi_s_symb), &wi)?;
        }
    }
    initial_trades(t, unit, &names, rng, sink)
}

/// Per-account state of the initial-trade simulation.
struct Acct {
    ca_id: u64,
    c_idx: usize,
    secs: Vec<u64>,
    bal: i64,
}

/// The unit's initial trades, completed in time order, as the market would have: 2 per
/// second, accounts chosen with weight by tier (1, 2, 4: tier 3 trades most), each in
/// one of its securities. Trade k of unit u gets id k * units + u + 1, so ids follow
/// time across units.
fn initial_trades(
    t: &Tpce,
    unit: u64,
    names: &[([u8; 20], [u8; 25])],
    rng: &mut impl Rng,
    sink: &mut dyn Sink,
) -> Result<()> {
    let c_lo = unit * LOAD_UNIT + 1;
    let (mut accts, weights) = unit_accounts(t, unit);
    let pick = WeightedIndex::new(&weights).expect("positive weights");
    let mut lots: HashMap<(u64, u64), Vec<Lot>> = HashMap::new();
    let mut brokers: HashMap<u64, (u64, i64)> = HashMap::new();
    let units = t.units();
    let per_day = TRADES_PER_UNIT_HOUR * HOURS_PER_DAY;
    for k in 0..t.initial_trades_per_unit() {
        let a = &mut accts[pick.sample(rng)];
        let c = c_lo + a.c_idx as u64;
        let tier = tier(c);
        let t_id = k * units + unit + 1;
        let dts = LOAD_START_US + (k / per_day) * ONE_DAY_US + (k % per_day) * 500_000;
        let sec = a.secs[rng.gen_range(0..a.secs.len())];
        let symb = symbol(sec);
        let tt = match rng.gen_range(0..100) {
            0..=29 => TT_MARKET_BUY,
            30..=59 => TT_MARKET_SELL,
            60..=79 => TT_LIMIT_BUY,
            80..=91 => TT_LIMIT_SELL,
            _ => TT_STOP_LOSS,
        };
        let ti = trade_type_index(&tt);
        let sell = gen::is_sell(&tt);
        let qty = 100 * rng.gen_range(1..=8u32);
        let price = price_at(sec, k);
        let lifo = rng.gen_bool(0.5);
        let is_cash = rng.gen_range(0..100) < 80;
        let book = lots.entry((a.ca_id, sec)).or_default();
        let hs = book.iter().map(|l| l.qty).sum();
        let ch = trade::apply(book, hs, sell, qty, lifo, price, t_id, dts);
        trade::replay(book, &ch);
        let tax_st = account_tax_status(a.ca_id);
        let rates: u32 = customer_taxrates(c)
            .iter()
            .map(|id| taxrate_rate(taxrate_index(id).expect("generated id")))
            .sum();
        let tax = trade::tax(tax_st, ch.buy_value, ch.sell_value, rates);
        let cr = commission_rate(tier, ti, exchange_of(sec), band_of(qty));
        let comm = trade::commission(qty, price, cr);
        let chrg = charge(ti, tier);
        let se_amt = trade::settlement_amount(sell, qty, price, chrg, comm, tax_st, tax);

        let mut tr = Trade::zeroed();
        tr.t_id = t_id;
        tr.t_dts = dts;
        tr.t_st_id = ST_COMPLETED;
        tr.t_tt_id = tt;
        tr.t_is_cash = is_cash as u8;
        tr.t_s_symb = symb;
        tr.t_qty = qty;
        tr.t_bid_price = if gen::is_market(&tt) {
            price
        } else {
            price + rng.gen_range(-price / 20..=price / 20)
        };
        tr.t_ca_id = a.ca_id;
        let (f, l) = &names[a.c_idx];
        let exec = format!(
            "{} {}",
            String::from_utf8_lossy(row::get_str(f)),
            String::from_utf8_lossy(row::get_str(l))
        );
        set(&mut tr.t_exec_name, exec.as_bytes());
        tr.t_trade_price = price;
        tr.t_chrg = chrg;
        tr.t_comm = comm;
        tr.t_tax = tax;
        tr.t_lifo = lifo as u8;
        put(sink, TRADE, k_u64(t_id), &tr)?;
        trade_history(sink, t_id, dts, &tt)?;
        let cash_name = || {
            format!(
                "{} {} shares of {}",
                String::from_utf8_lossy(TRADE_TYPES[ti].1),
                qty,
                String::from_utf8_lossy(row::get_str(&symb))
            )
        };
        settle(sink, t_id, dts, se_amt, is_cash.then(cash_name))?;
        if is_cash {
            a.bal += se_amt;
        }
        for (h, before, after) in &ch.history {
            let hh = HoldingHistory {
                hh_h_t_id: *h,
                hh_t_id: t_id,
                hh_before_qty: *before,
                hh_after_qty: *after,
            };
            put(sink, HOLDING_HISTORY, k_u64x2(*h, t_id), &hh)?;
        }
        let b = brokers.entry(broker_of_account(a.ca_id)).or_default();
        b.0 += 1;
        b.1 += comm;
    }
    // What the trades left: holdings, summaries, balances, broker totals.
    write_holdings(&lots, sink)?;
    write_accounts(&accts, sink)?;
    write_brokers(unit, &brokers, sink)
}

/// The unit's accounts as the initial trades start them, and each one's weight in the
/// draw of the next trade's account (by its customer's tier).
fn unit_accounts(t: &Tpce, unit: u64) -> (Vec<Acct>, Vec<u32>) {
    let c_lo = unit * LOAD_UNIT + 1;
    let secs = t.securities();
    let mut accts = Vec::new();
    let mut weights = Vec::new();
    for (i, c) in (c_lo..c_lo + LOAD_UNIT).enumerate() {
        for k in 0..accounts_of(c) {
            let ca = account_id(c, k);
            accts.push(Acct {
                ca_id: ca,
                c_idx: i,
                secs: account_securities(ca, secs).collect(),
                bal: initial_balance(ca),
            });
            weights.push([1u32, 2, 4][tier(c) as usize - 1]);
        }
    }
    (accts, weights)
}

/// An initial trade's history: submitted and completed (a limit order pending first),
/// a second apart up to its completion at `dts`.
fn trade_history(sink: &mut dyn Sink, t_id: u64, dts: u64, tt: &Tt) -> Result<()> {
    let mut hist: &[St] = &[ST_SUBMITTED, ST_COMPLETED];
    if !gen::is_market(tt) {
        hist = &[ST_PENDING, ST_SUBMITTED, ST_COMPLETED];
    }
    for (i, st) in hist.iter().enumerate() {
        let th = TradeHistory {
            th_t_id: t_id,
            th_dts: dts - (hist.len() - 1 - i) as u64 * 1_000_000,
            th_st_id: *st,
            _pad: [0; 4],
        };
        put(sink, TRADE_HISTORY, trade_history_key(t_id, st), &th)?;
    }
    Ok(())
}

/// An initial trade's settlement of `amt`, and its cash transaction (named `cash`) when
/// paid in cash.
fn settle(sink: &mut dyn Sink, t_id: u64, dts: u64, amt: i64, cash: Option<String>) -> Result<()> {
    let mut se = Settlement::zeroed();
    se.se_t_id = t_id;
    set(
        &mut se.se_cash_type,
        if cash.is_some() {
            b"Cash Account"
        } else {
            b"Margin"
        },
    );
    se.se_cash_due_date = dts + 2 * ONE_DAY_US;
    se.se_amt = amt;
    put(sink, SETTLEMENT, k_u64(t_id), &se)?;
    if let Some(name) = cash {
        let mut ct = CashTransaction::zeroed();
        ct.ct_t_id = t_id;
        ct.ct_dts = dts;
        ct.ct_amt = amt;
        set(&mut ct.ct_name, name.as_bytes());
        put(sink, CASH_TRANSACTION, k_u64(t_id), &ct)?;
    }
    Ok(())
}

/// The holdings the initial trades left, in key order, and each account's summary per
/// security still held.
fn write_holdings(lots: &HashMap<(u64, u64), Vec<Lot>>, sink: &mut dyn Sink) -> Result<()> {
    let mut keys: Vec<&(u64, u64)> = lots.keys().collect();
    keys.sort_unstable();
    for &(ca, sec) in keys {
        let book = &lots[&(ca, sec)];
        let symb = symbol(sec);
        let mut sum = 0;
        for l in book {
            let h = Holding {
                h_t_id: l.h_t_id,
                h_ca_id: ca,
                h_dts: l.dts,
                h_price: l.price,
                h_qty: l.qty,
                h_s_symb: symb,
                _pad: [0],
            };
            put(sink, HOLDING, k_u64(l.h_t_id), &h)?;
            sum += l.qty;
        }
        if sum != 0 {
            let hs = HoldingSummary {
                hs_ca_id: ca,
                hs_qty: sum,
                hs_s_symb: symb,
                _pad: [0],
            };
            put(sink, HOLDING_SUMMARY, k_u64_symb(ca, &symb), &hs)?;
        }
    }
    Ok(())
}

/// The unit's accounts with the balances the initial trades left.
fn write_accounts(accts: &[Acct], sink: &mut dyn Sink) -> Result<()> {
    for a in accts {
        let mut r = CustomerAccount::zeroed();
        r.ca_id = a.ca_id;
        r.ca_b_id = broker_of_account(a.ca_id);
        r.ca_c_id = customer_of_account(a.ca_id);
        let name = format!("Account {} of customer {}", a.ca_id % 10 + 1, r.ca_c_id);
        set(&mut r.ca_name, name.as_bytes());
        r.ca_tax_st = account_tax_status(a.ca_id);
        r.ca_bal = a.bal;
        put(sink, CUSTOMER_ACCOUNT, k_u64(a.ca_id), &r)?;
    }
    Ok(())
}

/// The unit's brokers with the trades and commissions the initial trades gave them.
fn write_brokers(unit: u64, brokers: &HashMap<u64, (u64, i64)>, sink: &mut dyn Sink) -> Result<()> {
    let b_lo = unit * BROKERS_PER_UNIT + 1;
    for b in b_lo..b_lo + BROKERS_PER_UNIT {
        let (n, comm) = brokers.get(&b).copied().unwrap_or_default();
        let mut r = Broker::zeroed();
        r.b_id = b;
        r.b_st_id = ST_ACTIVE;
        set(&mut r.b_name, &broker_name(b));
        r.b_num_trades = n;
        r.b_comm_total = comm;
        put(sink, BROKER, k_u64(b), &r)?;
    }
    Ok(())
}

/// B_NAME of broker b: unique.
pub fn broker_name(b: u64) -> [u8; 49] {
    let mut out = [0u8; 49];
    let h = mix(b ^ 0xB0);
    let s = format!(
        "{} {} Brokerage {}",
        ["Alpha", "Beacon", "Crest", "Dune", "Ember", "Fjord"][(h % 6) as usize],
        ["Trust", "Securities", "Markets", "Advisors"][((h >> 8) % 4) as usize],
        b
    );
    out[..s.len()].copy_from_slice(s.as_bytes());
    out
}
