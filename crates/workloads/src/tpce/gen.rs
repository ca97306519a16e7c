//! TPC-E value generation: the pure functions of an id that both the load and the
//! transaction input generator use (so inputs name rows that exist without reading the
//! database): customer tiers, accounts per customer, tax ids, account permissions,
//! symbols, company names, the market's prices, the fixed tables' contents; and the
//! name, address and text distributions, generated here (no data files). Owns no
//! database state and must never touch a Session.

use super::schema::{St, Symb, Tt, SYMB_LEN};
use rand::Rng;

/// Scaling per load unit of 1,000 customers (clause 2.6 of the specification).
pub const LOAD_UNIT: u64 = 1000;
pub const BROKERS_PER_UNIT: u64 = 10;
pub const COMPANIES_PER_UNIT: u64 = 500;
pub const SECURITIES_PER_UNIT: u64 = 685;
/// Initial trades per load unit per trading hour: 2 per second (2 tpsE per 1,000
/// customers, eight-hour trading days: 57,600 per day).
pub const TRADES_PER_UNIT_HOUR: u64 = 7200;
pub const HOURS_PER_DAY: u64 = 8;
/// DAILY_MARKET rows per security: five years of trading days.
pub const DAILY_MARKET_DAYS: u32 = 1305;
pub const FINANCIAL_QUARTERS: u32 = 20;
pub const NEWS_PER_COMPANY: u64 = 2;
pub const COMPETITORS_PER_COMPANY: u64 = 3;
pub const ZIP_CODES: u64 = 14_741;
pub const TAXRATES: u64 = 320;
/// Of the 320 tax rates, the first are national (country) rates, the rest divisional.
pub const NATIONAL_TAXRATES: u64 = 20;
pub const EXCHANGES: [&[u8; 6]; 4] = [b"NYSE\0\0", b"NASDAQ", b"AMEX\0\0", b"PCX\0\0\0"];

pub const ONE_DAY_US: u64 = 86_400_000_000;
/// The first initial trade's time: 2005-01-03 09:00 UTC (any fixed past date serves).
pub const LOAD_START_US: u64 = 1_104_742_800_000_000;
/// The first DAILY_MARKET day: DAILY_MARKET_DAYS trading days end the day before.
pub const MARKET_START_US: u64 = LOAD_START_US - DAILY_MARKET_DAYS as u64 * ONE_DAY_US;

pub const ST_COMPLETED: St = *b"CMPT";
pub const ST_ACTIVE: St = *b"ACTV";
pub const ST_SUBMITTED: St = *b"SBMT";
pub const ST_PENDING: St = *b"PNDG";
pub const ST_CANCELED: St = *b"CNCL";
pub const STATUS_TYPES: [(St, &[u8]); 5] = [
    (ST_COMPLETED, b"Completed"),
    (ST_ACTIVE, b"Active"),
    (ST_SUBMITTED, b"Submitted"),
    (ST_PENDING, b"Pending"),
    (ST_CANCELED, b"Canceled"),
];

pub const TT_MARKET_BUY: Tt = *b"TMB";
pub const TT_MARKET_SELL: Tt = *b"TMS";
pub const TT_STOP_LOSS: Tt = *b"TSL";
pub const TT_LIMIT_SELL: Tt = *b"TLS";
pub const TT_LIMIT_BUY: Tt = *b"TLB";
/// (id, name, is_sell, is_market).
pub const TRADE_TYPES: [(Tt, &[u8], bool, bool); 5] = [
    (TT_MARKET_BUY, b"Market-Buy", false, true),
    (TT_MARKET_SELL, b"Market-Sell", true, true),
    (TT_STOP_LOSS, b"Stop-Loss", true, false),
    (TT_LIMIT_SELL, b"Limit-Sell", true, false),
    (TT_LIMIT_BUY, b"Limit-Buy", false, false),
];

pub fn is_sell(tt: &Tt) -> bool {
    TRADE_TYPES.iter().any(|t| &t.0 == tt && t.2)
}
pub fn is_market(tt: &Tt) -> bool {
    TRADE_TYPES.iter().any(|t| &t.0 == tt && t.3)
}
pub fn trade_type_index(tt: &Tt) -> usize {
    TRADE_TYPES
        .iter()
        .position(|t| &t.0 == tt)
        .expect("a generated trade type")
}

/// splitmix64: the one hash behind every per-id draw (stable across versions).
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn h2(a: u64, b: u64) -> u64 {
    mix(a ^ mix(b ^ 0x5EED))
}

/// Customer tier 1, 2 or 3 (20%, 60%, 20%).
pub fn tier(c_id: u64) -> u8 {
    match h2(c_id, 1) % 10 {
        0 | 1 => 1,
        8 | 9 => 3,
        _ => 2,
    }
}

/// Accounts of a customer by tier: 1-4, 2-8, 5-10 (five on average, 5,000 per unit).
pub fn accounts_of(c_id: u64) -> u64 {
    let r = h2(c_id, 2);
    match tier(c_id) {
        1 => 1 + r % 4,
        2 => 2 + r % 7,
        _ => 5 + r % 6,
    }
}

/// CA_ID of a customer's k-th account (0-based).
pub fn account_id(c_id: u64, k: u64) -> u64 {
    debug_assert!(k < 10);
    c_id * 10 + k
}
pub fn customer_of_account(ca_id: u64) -> u64 {
    ca_id / 10
}

/// The account's broker: one of its load unit's ten.
pub fn broker_of_account(ca_id: u64) -> u64 {
    let unit = (customer_of_account(ca_id) - 1) / LOAD_UNIT;
    unit * BROKERS_PER_UNIT + 1 + h2(ca_id, 3) % BROKERS_PER_UNIT
}

/// 1 (taxable, tax withheld at settlement), 2 (taxable, not withheld) or 0 (exempt).
pub fn account_tax_status(ca_id: u64) -> u8 {
    (h2(ca_id, 4) % 3) as u8
}

/// The account's balance before any trade: the check's baseline for cash.
pub fn initial_balance(ca_id: u64) -> i64 {
    1_000_000 + (h2(ca_id, 5) % 999_000_000) as i64
}

/// Permissions on an account: the owner plus 0-3 others (1.4 on average).
pub fn permissions_of(ca_id: u64) -> u64 {
    match h2(ca_id, 6) % 10 {
        0..=6 => 1,
        7 | 8 => 2,
        _ => 3 + h2(ca_id, 7) % 2,
    }
}

/// C_TAX_ID: unique per customer.
pub fn tax_id(c_id: u64) -> [u8; 20] {
    let mut out = [0u8; 20];
    let s = format!(
        "{:03}{:010}C{:06}",
        h2(c_id, 8) % 1000,
        c_id,
        h2(c_id, 9) % 1_000_000
    );
    out[..s.len()].copy_from_slice(s.as_bytes());
    out
}

/// AP_TAX_ID of permission j > 0 of an account (a person who is not the owner).
pub fn permission_tax_id(ca_id: u64, j: u64) -> [u8; 20] {
    let mut out = [0u8; 20];
    let s = format!("{:011}P{:01}{:06}", ca_id, j, h2(ca_id, 10 + j) % 1_000_000);
    out[..s.len()].copy_from_slice(s.as_bytes());
    out
}

/// The customer's two CUSTOMER_TAXRATE ids: one national, one divisional.
pub fn customer_taxrates(c_id: u64) -> [[u8; 4]; 2] {
    [
        taxrate_id(h2(c_id, 11) % NATIONAL_TAXRATES),
        taxrate_id(NATIONAL_TAXRATES + h2(c_id, 12) % (TAXRATES - NATIONAL_TAXRATES)),
    ]
}
pub fn taxrate_id(i: u64) -> [u8; 4] {
    let mut out = [0u8; 4];
    let s = format!("{}{:03}", if i < NATIONAL_TAXRATES { 'N' } else { 'D' }, i);
    out.copy_from_slice(s.as_bytes());
    out
}
/// TX_RATE of tax rate i, in 1/10,000: 0-15% national, 0-10% divisional.
pub fn taxrate_rate(i: u64) -> u32 {
    if i < NATIONAL_TAXRATES {
        (mix(i ^ 0x7A) % 1501) as u32
    } else {
        (mix(i ^ 0x7B) % 1001) as u32
    }
}
pub fn taxrate_index(id: &[u8; 4]) -> Option<u64> {
    std::str::from_utf8(&id[1..]).ok()?.parse().ok()
}

/// S_SYMB of security i (0-based): 3-7 capital letters, unique.
pub fn symbol(i: u64) -> Symb {
    let mut out = [0u8; SYMB_LEN];
    // Letters of i in base 26, at least three, then a letter from the hash so that
    // symbols are not all the same length.
    let mut v = i;
    let mut n = 0;
    let mut buf = [0u8; 8];
    loop {
        buf[n] = b'A' + (v % 26) as u8;
        v /= 26;
        n += 1;
        if v == 0 && n >= 3 {
            break;
        }
    }
    for (o, b) in out.iter_mut().zip(buf[..n].iter().rev()) {
        *o = *b;
    }
    out
}
/// Inverse of [`symbol`].
pub fn symbol_index(s: &Symb) -> Option<u64> {
    let mut v = 0u64;
    for &b in s.iter().take_while(|&&b| b != 0) {
        if !b.is_ascii_uppercase() {
            return None;
        }
        v = v * 26 + (b - b'A') as u64;
    }
    Some(v)
}

/// The company issuing security i, and the issue: the unit's first 500 securities are
/// the common stock of its 500 companies, the other 185 preferred stock of the first.
pub fn security_company(i: u64) -> (u64, &'static [u8; 6]) {
    let unit = i / SECURITIES_PER_UNIT;
    let j = i % SECURITIES_PER_UNIT;
    if j < COMPANIES_PER_UNIT {
        (unit * COMPANIES_PER_UNIT + j + 1, b"COMMON")
    } else {
        (
            unit * COMPANIES_PER_UNIT + (j - COMPANIES_PER_UNIT) + 1,
            b"PREF_A",
        )
    }
}

const NAME_PARTS: [&str; 24] = [
    "Acme", "Blue", "Cedar", "Delta", "Echo", "Falcon", "Granite", "Harbor", "Iron", "Juniper",
    "Keystone", "Lumen", "Maple", "North", "Orbit", "Pioneer", "Quartz", "River", "Summit",
    "Titan", "Union", "Vertex", "Willow", "Zenith",
];
const NAME_KINDS: [&str; 8] = [
    "Industries",
    "Holdings",
    "Systems",
    "Partners",
    "Group",
    "Labs",
    "Works",
    "Capital",
];

/// CO_NAME of company co_id: unique (the id is part of it), at most 48 bytes.
pub fn company_name(co_id: u64) -> [u8; 60] {
    let h = mix(co_id ^ 0xC0);
    let s = format!(
        "{} {} {} {}",
        NAME_PARTS[(h % 24) as usize],
        NAME_PARTS[((h >> 8) % 24) as usize],
        NAME_KINDS[((h >> 16) % 8) as usize],
        co_id
    );
    let mut out = [0u8; 60];
    assert!(
        s.len() <= super::schema::CO_NAME_KEY,
        "company name too long"
    );
    out[..s.len()].copy_from_slice(s.as_bytes());
    out
}

/// The 12 sectors, each with its industries (102 in all).
pub const SECTORS: [&str; 12] = [
    "Basic Materials",
    "Capital Goods",
    "Conglomerates",
    "Consumer Cyclical",
    "Consumer Non-Cyclical",
    "Energy",
    "Financial",
    "Healthcare",
    "Services",
    "Technology",
    "Transportation",
    "Utilities",
];
pub const INDUSTRIES: u64 = 102;
pub fn sector_id(i: usize) -> [u8; 2] {
    [b'S', b'A' + i as u8]
}
/// IN_ID, IN_NAME and IN_SC_ID of industry i (0-based): spread over the sectors.
pub fn industry(i: u64) -> ([u8; 2], [u8; 50], [u8; 2]) {
    let id = [b'A' + (i / 26) as u8, b'A' + (i % 26) as u8];
    let sc = (i % 12) as usize;
    let mut name = [0u8; 50];
    let s = format!("{} Industry {}", SECTORS[sc], i / 12 + 1);
    name[..s.len()].copy_from_slice(s.as_bytes());
    (id, name, sector_id(sc))
}
pub fn industry_of_company(co_id: u64) -> u64 {
    mix(co_id ^ 0x1D) % INDUSTRIES
}

/// The market: a security's price at a moment of market time (the MEE's count of
/// orders submitted): a triangle wave between a low and a high of the security, so
/// that limit orders cross their limit within a few hundred orders. In cents.
pub fn price_at(sec: u64, tick: u64) -> i64 {
    let h = mix(sec ^ 0x9E);
    let low = 1_000 + (h % 20_000) as i64; // $10 .. $210
    let span = low / 2;
    let period = 200 + (h >> 20) % 400; // ticks
    let phase = (tick + (h >> 40)) % period;
    let half = period / 2;
    let x = if phase < half { phase } else { period - phase };
    low + span * x as i64 / half.max(1) as i64
}

/// Close, high and low of a security on DAILY_MARKET day d.
pub fn daily_prices(sec: u64, day: u32) -> (i64, i64, i64) {
    let close = price_at(sec, day as u64 * 37);
    let h = mix(sec ^ (day as u64) << 20);
    let high = close + (h % 200) as i64;
    let low = (close - ((h >> 10) % 200) as i64).max(1);
    (close, high, low)
}

/// CHARGE for a trade type and customer tier, in cents.
pub fn charge(tt_index: usize, tier: u8) -> i64 {
    [0, 0, 0, 0, 0][tt_index] + [1_000, 750, 500][tier as usize - 1] + 50 * tt_index as i64
}

/// COMMISSION_RATE's quantity bands.
pub const COMMISSION_BANDS: [(u32, u32); 4] = [
    (0, 200),
    (201, 10_000),
    (10_001, 100_000),
    (100_001, 100_000_000),
];
/// CR_RATE in 1/100 of a percent for (tier, trade type, exchange, band).
pub fn commission_rate(tier: u8, tt_index: usize, ex: usize, band: usize) -> u32 {
    let base = [80, 60, 40][tier as usize - 1];
    (base + 5 * tt_index + 2 * ex) as u32 * 10 / (band as u32 + 1) + 5
}
pub fn band_of(qty: u32) -> usize {
    COMMISSION_BANDS
        .iter()
        .position(|&(lo, hi)| (lo..=hi).contains(&qty))
        .expect("bands cover every quantity")
}
pub fn exchange_of(sec: u64) -> usize {
    (mix(sec ^ 0xE8) % 4) as usize
}

// ---- people, places and text ----

const FIRST: [&str; 32] = [
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "John",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Carlos",
    "Karen",
    "Daniel",
    "Lisa",
    "Matthew",
    "Nancy",
    "Anthony",
    "Betty",
    "Mark",
    "Sandra",
    "Paul",
    "Ashley",
    "Steven",
    "Kimberly",
];
const LAST_SYLLABLES: [&str; 16] = [
    "son", "ber", "man", "ton", "ley", "field", "ford", "wood", "er", "ing", "ham", "well",
    "stein", "ez", "ova", "berg",
];
const LAST_STEMS: [&str; 16] = [
    "John", "Wil", "Brown", "Gar", "Mil", "Dav", "Rodri", "Mart", "Hern", "Lop", "Gonz", "Ander",
    "Thom", "Tay", "Moor", "Jack",
];

/// A last name: stem and suffix from a Zipf-like skew (a few names are common).
pub fn last_name(rng: &mut impl Rng, out: &mut [u8]) {
    let a = skewed(rng, 16);
    let b = rng.gen_range(0..16);
    let s = format!("{}{}", LAST_STEMS[a], LAST_SYLLABLES[b]);
    api::row::set_str(out, s.as_bytes());
}
pub fn first_name(rng: &mut impl Rng, out: &mut [u8]) {
    api::row::set_str(out, FIRST[skewed(rng, 32)].as_bytes());
}
/// An index in 0..n where smaller indexes are likelier (the square of a uniform draw).
fn skewed(rng: &mut impl Rng, n: usize) -> usize {
    let u: f64 = rng.gen();
    ((u * u) * n as f64) as usize % n
}

const STREETS: [&str; 12] = [
    "Main",
    "Oak",
    "Pine",
    "Maple",
    "Cedar",
    "Elm",
    "Washington",
    "Lake",
    "Hill",
    "Park",
    "Sunset",
    "River",
];
const STREET_KINDS: [&str; 5] = ["St", "Ave", "Blvd", "Rd", "Ln"];

/// AD_LINE1: "number street kind".
pub fn street(rng: &mut impl Rng, out: &mut [u8]) {
    let s = format!(
        "{} {} {}",
        rng.gen_range(1..10_000),
        STREETS[rng.gen_range(0..12)],
        STREET_KINDS[rng.gen_range(0..5)]
    );
    api::row::set_str(out, s.as_bytes());
}
/// ZC_CODE of zip code i.
pub fn zip_code(i: u64) -> [u8; 12] {
    let mut out = [0u8; 12];
    let s = format!("{:05}", 10_000 + i * 6);
    out[..s.len()].copy_from_slice(s.as_bytes());
    out
}
/// A town name built from syllables (pure function of the zip code).
pub fn town(i: u64, out: &mut [u8]) {
    let h = mix(i ^ 0x70);
    let s = format!(
        "{}{}ville",
        LAST_STEMS[(h % 16) as usize],
        LAST_SYLLABLES[((h >> 8) % 16) as usize]
    );
    api::row::set_str(out, s.as_bytes());
}
/// A division (state) name: one of 50.
pub fn division(i: u64, out: &mut [u8]) {
    let s = format!("Division {}", mix(i ^ 0xD1) % 50 + 1);
    api::row::set_str(out, s.as_bytes());
}

const WORDS: [&str; 24] = [
    "market",
    "shares",
    "growth",
    "quarter",
    "revenue",
    "outlook",
    "board",
    "merger",
    "profit",
    "analysts",
    "strong",
    "decline",
    "record",
    "product",
    "launch",
    "guidance",
    "dividend",
    "expansion",
    "investors",
    "report",
    "sales",
    "costs",
    "demand",
    "year",
];
/// Text of words, filling `out` up to `len` bytes (the rest zero).
pub fn text(rng: &mut impl Rng, len: usize, out: &mut [u8]) {
    let len = len.min(out.len());
    let mut at = 0;
    while at < len {
        let w = WORDS[rng.gen_range(0..WORDS.len())].as_bytes();
        let n = w.len().min(len - at);
        out[at..at + n].copy_from_slice(&w[..n]);
        at += n;
        if at < len {
            out[at] = b' ';
            at += 1;
        }
    }
    out[len..].fill(0);
}

/// Digits into a fixed field.
pub fn digits(rng: &mut impl Rng, out: &mut [u8]) {
    for b in out.iter_mut() {
        *b = b'0' + rng.gen_range(0..10u8);
    }
}

/// Microseconds since the Unix epoch (the representation of every date; never 0).
pub fn now_us() -> u64 {
    crate::tpcc::gen::now_us()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_id_draws_follow_their_rules() {
        let n = 20_000u64;
        let (mut accts, mut tiers) = (0u64, [0u64; 3]);
        for c in 1..=n {
            let a = accounts_of(c);
            assert!((1..=10).contains(&a));
            accts += a;
            tiers[tier(c) as usize - 1] += 1;
            assert!(permissions_of(account_id(c, 0)) >= 1);
            let b = broker_of_account(account_id(c, 0));
            let unit = (c - 1) / LOAD_UNIT;
            assert!(b > unit * BROKERS_PER_UNIT && b <= (unit + 1) * BROKERS_PER_UNIT);
        }
        // Five accounts per customer on average (a wide margin: catches a wrong rule).
        let avg = accts as f64 / n as f64;
        assert!((4.8..5.2).contains(&avg), "{avg}");
        assert!((3_600..4_400).contains(&tiers[0]), "{tiers:?}");
        assert_ne!(tax_id(1), tax_id(2));
    }

    #[test]
    fn symbols_are_unique_and_invert() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..20_000 {
            let s = symbol(i);
            assert!(seen.insert(s));
            assert_eq!(symbol_index(&s), Some(i));
        }
        let (co, issue) = security_company(SECURITIES_PER_UNIT + 3);
        assert_eq!((co, issue), (COMPANIES_PER_UNIT + 4, b"COMMON"));
        assert_eq!(security_company(600).1, b"PREF_A");
    }

    #[test]
    fn prices_stay_in_their_band_and_move() {
        for s in 0..100 {
            let p: Vec<i64> = (0..1000).map(|t| price_at(s, t)).collect();
            let (lo, hi) = (*p.iter().min().unwrap(), *p.iter().max().unwrap());
            assert!(lo >= 1_000 && hi > lo + lo / 4, "security {s}: {lo}..{hi}");
        }
        assert!(company_name(123_456_789).len() == 60);
        assert_eq!(taxrate_index(&taxrate_id(77)), Some(77));
    }
}
