//! TPC-E (specification 1.14) as an oltpscope workload kit: the 33 tables, their
//! population, the twelve transactions, the market (MEE) that turns orders into
//! Trade-Results and Market-Feeds, and the consistency checks. Owns the kit's
//! configuration and its `Workload` implementation; it never times, prints or retries
//! (the driver does). Deviations from the specification: docs/design/tpce.md.

pub mod analytics;
pub mod check;
pub mod command;
pub mod gen;
pub mod load;
pub mod mee;
pub mod schema;
pub mod trade;
pub mod txn;

pub use txn::{TpceInput, TpceWorker, TXN_NAMES};

use crate::{Check, RunInfo, Workload};
use api::{Database, Result, Schema, Session};
use gen::*;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use txn::*;

/// The customer- and broker-initiated share of Clause 6's mix, in tenths of a percent
/// (the other 11%, Trade-Result and Market-Feed, are the market's: they follow from
/// the Trade-Orders). Indexed by transaction type; 0 for the market's and the timed.
pub const DEFAULT_MIX: [u32; 12] = [49, 130, 0, 180, 140, 80, 101, 0, 190, 20, 0, 0];
/// The types a mix may name (the driver deals them; the others are not dealt).
pub const DEALT: [u32; 8] = [
    BROKER_VOLUME,
    CUSTOMER_POSITION,
    MARKET_WATCH,
    SECURITY_DETAIL,
    TRADE_LOOKUP,
    TRADE_ORDER,
    TRADE_STATUS,
    TRADE_UPDATE,
];
/// Largest customer count accepted (ids and the checker's arrays are sized for it).
pub const MAX_CUSTOMERS: u64 = 10_000_000;
/// Trade-Order's roll-back share (clause 3.3.8: 1%).
pub const ROLLBACK_PERCENT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TpceConfig {
    /// Customers: a multiple of 1,000 (the load unit).
    pub customers: u64,
    /// Initial trading hours (8 per trade day; the specification's 300 days are 2,400).
    pub trade_hours: u32,
    /// Dealt transactions' weights in tenths of a percent, by type (see `DEFAULT_MIX`).
    pub mix: [u32; 12],
    /// Seconds between Data-Maintenance transactions (the specification's 60).
    pub data_maintenance_s: u64,
    /// Salt of every generated value of the population (a function of it alone).
    pub load_salt: u64,
    /// DAILY_MARKET days per security. TEST ONLY: the specification fixes 1,305 and
    /// the CLI always uses that; tests shrink it to load faster.
    pub daily_market_days: u32,
}

impl Default for TpceConfig {
    fn default() -> Self {
        TpceConfig {
            customers: 1000,
            trade_hours: 8,
            mix: DEFAULT_MIX,
            data_maintenance_s: 60,
            load_salt: 0x7CE5_EED5,
            daily_market_days: DAILY_MARKET_DAYS,
        }
    }
}

impl TpceConfig {
    /// The smallest database the tests load (seconds): one load unit, one trading hour,
    /// 20 daily-market days (test-only, see `daily_market_days`).
    pub fn smallest_test() -> TpceConfig {
        TpceConfig {
            customers: 1000,
            trade_hours: 1,
            daily_market_days: 20,
            ..TpceConfig::default()
        }
    }
}

/// Parse `--mix trade-order=50,trade-status=50`: percentages (one decimal allowed) of
/// the dealt types; unnamed ones get 0; the sum must be 100.
pub fn parse_mix(s: &str) -> std::result::Result<[u32; 12], String> {
    let mut mix = [0u32; 12];
    let mut seen = [false; 12];
    let names: Vec<&str> = DEALT.iter().map(|&t| TXN_NAMES[t as usize]).collect();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, pct) = part
            .split_once('=')
            .ok_or_else(|| format!("mix entry '{part}' is not NAME=PERCENT"))?;
        let name = name.trim();
        let i = match TXN_NAMES.iter().position(|n| *n == name) {
            Some(i) if DEALT.contains(&(i as u32)) => i,
            Some(_) => {
                return Err(format!(
                    "'{name}' is not dealt from the mix: the market runs Trade-Result and Market-Feed, Data-Maintenance runs once a minute and Trade-Cleanup at the start (mix types: {})",
                    names.join(", ")
                ))
            }
            None => {
                return Err(format!(
                    "unknown transaction '{name}' in mix (known: {})",
                    names.join(", ")
                ))
            }
        };
        if seen[i] {
            return Err(format!("transaction '{name}' named twice in mix"));
        }
        seen[i] = true;
        let pct = pct.trim();
        let tenths = pct
            .parse::<f64>()
            .ok()
            .filter(|p| (0.0..=100.0).contains(p) && (p * 10.0).fract().abs() < 1e-9)
            .ok_or_else(|| {
                format!(
                    "mix percentage '{pct}' for {name} is not in 0..=100 with at most one decimal"
                )
            })?;
        mix[i] = (tenths * 10.0).round() as u32;
    }
    let sum: u32 = mix.iter().sum();
    if sum != 1000 {
        return Err(format!(
            "mix percentages sum to {}, not 100",
            sum as f64 / 10.0
        ));
    }
    Ok(mix)
}

pub struct Tpce {
    pub cfg: TpceConfig,
    /// The next trade id to hand out (0: not yet read from the database).
    next_tid: AtomicU64,
    /// This run's first trade id (0: not yet known).
    first_tid: AtomicU64,
    /// Trade-Cleanup not yet dealt.
    cleanup_due: AtomicBool,
    /// When the next Data-Maintenance is due, and its table rotation.
    maintenance: Mutex<(Instant, u32)>,
    pub mee: mee::Mee,
}

impl Tpce {
    pub fn new(cfg: TpceConfig) -> std::result::Result<Tpce, String> {
        if cfg.customers == 0 || !cfg.customers.is_multiple_of(LOAD_UNIT) {
            return Err(format!(
                "customers must be a positive multiple of {LOAD_UNIT} (the load unit), got {}",
                cfg.customers
            ));
        }
        if cfg.customers > MAX_CUSTOMERS {
            return Err(format!(
                "customers must be at most {MAX_CUSTOMERS}, got {}",
                cfg.customers
            ));
        }
        if cfg.trade_hours == 0 || cfg.trade_hours > 300 * HOURS_PER_DAY as u32 {
            return Err(format!(
                "initial trade hours must be in 1..={} (300 days), got {}",
                300 * HOURS_PER_DAY,
                cfg.trade_hours
            ));
        }
        let sum: u32 = cfg.mix.iter().sum();
        if sum == 0 || DEALT.iter().map(|&t| cfg.mix[t as usize]).sum::<u32>() != sum {
            return Err("the mix must weigh some dealt transaction and only those".into());
        }
        if cfg.daily_market_days == 0 || cfg.daily_market_days > DAILY_MARKET_DAYS {
            return Err(format!(
                "daily market days must be in 1..={DAILY_MARKET_DAYS}, got {}",
                cfg.daily_market_days
            ));
        }
        if cfg.data_maintenance_s == 0 {
            return Err("the data-maintenance interval must be at least a second".into());
        }
        let first = Instant::now() + Duration::from_secs(cfg.data_maintenance_s);
        Ok(Tpce {
            cfg,
            next_tid: AtomicU64::new(0),
            first_tid: AtomicU64::new(0),
            cleanup_due: AtomicBool::new(true),
            maintenance: Mutex::new((first, 0)),
            mee: mee::Mee::default(),
        })
    }

    pub fn units(&self) -> u64 {
        self.cfg.customers / LOAD_UNIT
    }
    pub fn securities(&self) -> u64 {
        self.units() * SECURITIES_PER_UNIT
    }
    pub fn companies(&self) -> u64 {
        self.units() * COMPANIES_PER_UNIT
    }
    pub fn brokers(&self) -> u64 {
        self.units() * BROKERS_PER_UNIT
    }
    pub fn initial_trades_per_unit(&self) -> u64 {
        self.cfg.trade_hours as u64 * TRADES_PER_UNIT_HOUR
    }
    /// Initial trades have ids 1..=this.
    pub fn initial_max_trade_id(&self) -> u64 {
        self.initial_trades_per_unit() * self.units()
    }
    pub fn random_customer(&self, rng: &mut impl rand::Rng) -> u64 {
        rng.gen_range(1..=self.cfg.customers)
    }
    pub fn random_account(&self, rng: &mut impl rand::Rng) -> u64 {
        let c = self.random_customer(rng);
        account_id(c, rng.gen_range(0..accounts_of(c)))
    }
}

impl Workload for Tpce {
    type Input = TpceInput;
    type WorkerState = TpceWorker;

    fn name(&self) -> &'static str {
        "tpce"
    }

    fn schema(&self) -> Schema {
        let u = self.units();
        schema::build(&schema::Sizes {
            customers: self.cfg.customers,
            accounts: self.cfg.customers * 5,
            securities: self.securities(),
            companies: self.companies(),
            trades: self.initial_max_trade_id() + 100_000,
            daily_market: u * SECURITIES_PER_UNIT * self.cfg.daily_market_days as u64,
        })
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &TXN_NAMES
    }

    fn config(&self) -> serde_json::Value {
        let mix: serde_json::Map<String, serde_json::Value> = DEALT
            .iter()
            .map(|&t| {
                (
                    TXN_NAMES[t as usize].to_string(),
                    serde_json::json!(self.cfg.mix[t as usize] as f64 / 10.0),
                )
            })
            .collect();
        serde_json::json!({
            "customers": self.cfg.customers,
            "trade_days": self.cfg.trade_hours as f64 / HOURS_PER_DAY as f64,
            "initial_trades": self.initial_max_trade_id(),
            "mix": mix,
            "data_maintenance_s": self.cfg.data_maintenance_s,
            "load_salt": self.cfg.load_salt,
            "daily_market_days": self.cfg.daily_market_days,
        })
    }

    fn load_rows(&self) -> u64 {
        load::count_rows(self)
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        _seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        // The population is a function of the configuration (`load_salt`), so that
        // `load_rows` can count it; the run's seed draws the transactions' inputs.
        load::load(self, engine, threads, progress)
    }

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> TpceWorker {
        TpceWorker {
            rng: crate::util::rng_for(seed, 0x7CE1_0000 + worker_id as u64),
            worker_id: worker_id as u32,
            deck: (0..12u8)
                .flat_map(|t| std::iter::repeat_n(t, self.cfg.mix[t as usize] as usize))
                .collect(),
            dealt: usize::MAX,
            submitted: None,
            triggered: Vec::new(),
            canceled: 0,
            taken: txn::Taken::default(),
            replay: None,
            limit_triggered: 0,
            cleanup_canceled: 0,
            rows_read: 0,
        }
    }

    fn next(&self, st: &mut TpceWorker) -> (u32, TpceInput) {
        let input = self.next_input(st);
        (input.txn_type(), input)
    }

    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        st: &mut TpceWorker,
        input: &TpceInput,
    ) -> Result<()> {
        self.execute_impl(s, st, input)
    }

    fn encode_input(&self, st: &TpceWorker, input: &TpceInput, out: &mut Vec<u8>) {
        command::encode(input, &st.taken, out)
    }

    fn decode_input(&self, st: &mut TpceWorker, bytes: &[u8]) -> Result<TpceInput> {
        let (input, taken) = command::decode(bytes)?;
        st.replay = Some(taken);
        Ok(input)
    }

    fn committed(&self, st: &mut TpceWorker, input: &TpceInput, measured: bool) {
        match input {
            TpceInput::TradeOrder(_) => {
                if let Some(sub) = st.submitted.take() {
                    self.mee.submitted(sub);
                }
            }
            TpceInput::MarketFeed(_) => {
                if measured {
                    st.limit_triggered += st.triggered.len() as u64;
                }
                self.mee.triggered(&st.triggered);
                st.triggered.clear();
            }
            TpceInput::TradeCleanup => st.cleanup_canceled += st.canceled,
            _ => {}
        }
    }

    fn counters(&self, st: &TpceWorker) -> Vec<(&'static str, u64)> {
        vec![
            ("limit_orders_triggered", st.limit_triggered),
            ("trade_cleanup_canceled", st.cleanup_canceled),
        ]
    }

    fn notes(&self, done: &[u64], counters: &[(String, u64)], _measured_s: f64) -> Vec<String> {
        let get = |k: &str| counters.iter().find(|(n, _)| n == k).map_or(0, |(_, c)| *c);
        let mut v = vec![format!(
            "initial trades: {} ({} trade days of 8 hours; the specification loads 300)",
            self.initial_max_trade_id(),
            self.cfg.trade_hours as f64 / HOURS_PER_DAY as f64
        )];
        let (queued, pending_feed) = self.mee.backlog();
        v.push(format!(
            "market (MEE): {} limit orders triggered by Market-Feeds; at the end {queued} submitted orders awaited Trade-Result and {pending_feed} ticker entries a Market-Feed (the next run's Trade-Cleanup cancels what is left)",
            get("limit_orders_triggered")
        ));
        if get("trade_cleanup_canceled") > 0 {
            v.push(format!(
                "trade-cleanup canceled {} orders a previous run left",
                get("trade_cleanup_canceled")
            ));
        }
        let total: u64 = done.iter().sum();
        if total > 0 {
            let pct = |t: u32| 100.0 * done[t as usize] as f64 / total as f64;
            v.push(format!(
                "market share of the mix: trade-result {:.1}%, market-feed {:.1}% (Clause 6: 10% and 1%)",
                pct(TRADE_RESULT),
                pct(MARKET_FEED)
            ));
        }
        v
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        // Customers 1..=customers (no transaction adds one), then the initial trades
        // 1..=initial_max_trade_id, which the lookups draw from (later trades follow
        // them, so only their last is looked for).
        let c = self.cfg.customers;
        crate::check_extent(
            engine,
            "tpce",
            &format!("--customers {c}"),
            schema::CUSTOMER,
            &schema::k_u64(c),
            &schema::k_u64(c + 1),
            |last| format!("customer {}", if last { c } else { c + 1 }),
        )?;
        let t = self.initial_max_trade_id();
        let mut s = Session::new(engine.worker(0));
        if !s.run_retry(u32::MAX, 100, |s| {
            s.get(schema::TRADE, &schema::k_u64(t), |_| ())
        })? {
            return Err(api::Error::fatal(format!(
                "tpce: the database was not loaded with {} trade days (trade {t} is missing): give the --trade-days it was loaded with",
                self.cfg.trade_hours as f64 / HOURS_PER_DAY as f64
            )));
        }
        Ok(())
    }

    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        check::check(self, engine, info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_mix_accepts_and_rejects() {
        let m = parse_mix("trade-order=50,trade-status=50").unwrap();
        assert_eq!((m[6], m[8]), (500, 500));
        let m = parse_mix("broker-volume=4.9,trade-order=95.1").unwrap();
        assert_eq!((m[0], m[6]), (49, 951));
        assert!(parse_mix("trade-order=50")
            .unwrap_err()
            .contains("sum to 50"));
        assert!(parse_mix("trade-result=100")
            .unwrap_err()
            .contains("market runs"));
        assert!(parse_mix("bogus=100").unwrap_err().contains("unknown"));
        assert!(parse_mix("trade-order=x").unwrap_err().contains("'x'"));
        assert!(parse_mix("trade-order=33.33,trade-status=66.67")
            .unwrap_err()
            .contains("one decimal"));
        assert!(parse_mix("trade-order")
            .unwrap_err()
            .contains("NAME=PERCENT"));
        assert!(parse_mix("trade-order=50,trade-order=50")
            .unwrap_err()
            .contains("twice"));
    }

    #[test]
    fn new_validates_the_config() {
        let bad = |f: fn(&mut TpceConfig)| {
            let mut c = TpceConfig::default();
            f(&mut c);
            Tpce::new(c).err().expect("config accepted")
        };
        assert!(bad(|c| c.customers = 1500).contains("multiple of 1000"));
        assert!(bad(|c| c.customers = 0).contains("multiple"));
        assert!(bad(|c| c.trade_hours = 0).contains("trade hours"));
        assert!(bad(|c| c.mix = [0; 12]).contains("mix"));
        assert!(bad(|c| c.mix[TRADE_RESULT as usize] = 10).contains("mix"));
        assert!(Tpce::new(TpceConfig::default()).is_ok());
    }
}
