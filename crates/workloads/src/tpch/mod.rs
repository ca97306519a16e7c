//! TPC-H (specification 3.0.x) as an oltpscope kit: the eight tables, their population
//! at a scale factor, the consistency checks of the generated data, the queries
//! (`queries`), the refresh functions (`refresh`) and the performance test's runs
//! (`power`: the power test, and the throughput test's streams). Owns the kit's
//! configuration and its `Workload` implementation: each query is a read-only
//! transaction type, each refresh function's batch of orders a transaction of type RF1
//! or RF2; a worker runs one stream's list of them (docs/design/tpch.md).

pub mod answers;
pub mod check;
pub mod gen;
pub mod load;
pub mod power;
pub mod queries;
pub mod refresh;
pub mod schema;

use crate::{Check, RunInfo, Workload};
use api::{Database, Error, Result, Schema, Session};
use schema::Sizes;

/// The smallest and largest scale factors accepted: below 0.01 a table is too small
/// for the specification's key formulas (PS_SUPPKEY wants a few dozen suppliers);
/// above 10,000 part keys would overflow their 4 bytes (200,000 x SF).
pub const MIN_SF: f64 = 0.01;
pub const MAX_SF: f64 = 10_000.0;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TpchConfig {
    /// The scale factor: 1 is about 1 GB of data in the specification's terms.
    pub scale_factor: f64,
    /// Salt of every generated value of the population (a function of it alone).
    pub load_salt: u64,
    /// The queries a run executes, in stream 0's order (`power::stream_order`); each
    /// throughput stream runs the same ones in its own order.
    pub queries: Vec<u32>,
    /// The power test runs RF1 before its queries and RF2 after them (false: the
    /// queries only, a read-only run).
    pub refresh: bool,
    /// Query streams of the throughput test run after the power test (0: none).
    pub streams: usize,
    /// Threads each query's scans may use (`--query-threads`; `exec` splits a scan
    /// into that many parts on engines that can read on several threads).
    pub query_threads: usize,
    /// Write the power test's answers here, a file per query (`--answers DIR`,
    /// `answers`).
    pub answers: Option<std::path::PathBuf>,
}

impl Default for TpchConfig {
    fn default() -> Self {
        TpchConfig {
            scale_factor: MIN_SF,
            load_salt: 0x7C_4EED,
            queries: power::stream_order(None),
            refresh: true,
            streams: 0,
            query_threads: 1,
            answers: None,
        }
    }
}

/// The most threads a query may use (`--query-threads`).
pub const MAX_QUERY_THREADS: usize = 64;

/// Parse `--query-threads N`: a whole number in `1..=MAX_QUERY_THREADS`.
pub fn parse_query_threads(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_QUERY_THREADS).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "--query-threads {n}: a query runs on 1 to {MAX_QUERY_THREADS} threads"
        )),
        Err(_) => Err(format!("--query-threads '{s}' is not a whole number")),
    }
}

/// Parse `--scale-factor`: a number in `MIN_SF..=MAX_SF`.
pub fn parse_scale_factor(s: &str) -> std::result::Result<f64, String> {
    let sf: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("scale factor '{s}' is not a number"))?;
    if !sf.is_finite() || !(MIN_SF..=MAX_SF).contains(&sf) {
        return Err(format!("scale factor {s} is outside {MIN_SF}..={MAX_SF}"));
    }
    Ok(sf)
}

pub struct Tpch {
    pub cfg: TpchConfig,
    /// Line items of the whole population, counted once (`None`: not yet).
    lineitems: std::sync::OnceLock<u64>,
    /// What the run's streams share: where the refresh pairs start, when the power
    /// test ended, the measured times.
    run: power::RunState,
}

impl Tpch {
    pub fn new(cfg: TpchConfig) -> std::result::Result<Tpch, String> {
        parse_scale_factor(&cfg.scale_factor.to_string())?;
        power::parse_streams(&cfg.streams.to_string())?;
        Ok(Tpch {
            cfg,
            lineitems: std::sync::OnceLock::new(),
            run: power::RunState::default(),
        })
    }

    pub(crate) fn scaled(&self, base: f64) -> u64 {
        ((base * self.cfg.scale_factor).round() as u64).max(1)
    }

    /// The cardinalities of clause 4.2.5 at this scale factor (line items: the
    /// expected 4 per order; [`Tpch::lineitems`] counts them).
    pub fn sizes(&self) -> Sizes {
        let orders = self.scaled(1_500_000.0);
        Sizes {
            parts: self.scaled(200_000.0) as u32,
            suppliers: self.scaled(10_000.0) as u32,
            customers: self.scaled(150_000.0) as u32,
            orders,
            lineitems: 4 * orders,
        }
    }

    /// Line items of the population: the sum of each order's 1 to 7.
    pub fn lineitems(&self) -> u64 {
        *self.lineitems.get_or_init(|| {
            let salt = self.cfg.load_salt;
            (1..=self.sizes().orders)
                .map(|i| gen::lines_of_order(salt, i) as u64)
                .sum()
        })
    }

    /// O_CLERK's range: SF x 1,000 clerks.
    pub fn clerks(&self) -> u32 {
        self.scaled(1_000.0) as u32
    }

    /// `--scale-factor` as given, for messages.
    fn setting(&self) -> String {
        format!("--scale-factor {}", self.cfg.scale_factor)
    }
}

/// The transaction types: query N is type N - 1, then the refresh functions'
/// transactions (`refresh::ty`).
const TXN_NAMES: [&str; 24] = [
    "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q11", "Q12", "Q13", "Q14", "Q15",
    "Q16", "Q17", "Q18", "Q19", "Q20", "Q21", "Q22", "RF1", "RF2",
];

impl Workload for Tpch {
    type Input = power::Item;
    type WorkerState = power::StreamWorker;

    fn name(&self) -> &'static str {
        "tpch"
    }

    fn schema(&self) -> Schema {
        schema::build(self.sizes())
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &TXN_NAMES
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "scale_factor": self.cfg.scale_factor,
            "queries": self.cfg.queries,
            "refresh": self.cfg.refresh,
            "streams": self.cfg.streams,
            "query_threads": self.cfg.query_threads,
        })
    }

    fn load_rows(&self) -> u64 {
        let z = self.sizes();
        30 + 5 * z.parts as u64
            + z.suppliers as u64
            + z.customers as u64
            + z.orders
            + self.lineitems()
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        _seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        // The population is a function of the load salt alone (as TPC-H's dbgen's is
        // of the scale factor), so every engine holds the same data.
        load::load(self, engine, threads, progress)
    }

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> Self::WorkerState {
        power::stream_worker(self, worker_id, seed)
    }

    /// The stream's next step: a query (parameters drawn from the stream's seed) or a
    /// refresh function's batch.
    fn next(&self, st: &mut Self::WorkerState) -> (u32, power::Item) {
        st.draw()
    }

    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        st: &mut Self::WorkerState,
        item: &power::Item,
    ) -> Result<()> {
        st.execute(self, s, item)
    }

    fn wait_turn(&self, st: &mut Self::WorkerState, stop: &dyn Fn() -> bool) -> bool {
        st.wait_turn(self, stop)
    }

    /// Each stream runs its own list once: the power test's (and the refresh stream's)
    /// on worker 0, a query stream's on each other.
    fn stream_txns(&self, id: usize, _streams: usize, _total: u64) -> Option<u64> {
        Some(power::stream_worker(self, id, 0).len() as u64)
    }

    fn committed(&self, st: &mut Self::WorkerState, item: &power::Item, measured: bool) {
        st.committed(self, item, measured);
    }

    fn notes(&self, _done: &[u64], _counters: &[(String, u64)], _measured_s: f64) -> Vec<String> {
        power::notes(self)
    }

    fn encode_input(&self, _st: &Self::WorkerState, item: &power::Item, out: &mut Vec<u8>) {
        power::StreamWorker::encode(item, out);
    }

    fn decode_input(&self, st: &mut Self::WorkerState, bytes: &[u8]) -> Result<power::Item> {
        st.decode(bytes)
    }

    /// Number this run's refresh pairs from what the database has had, and refuse a
    /// database whose refresh functions are out of step or that has no delete set left
    /// for this run's pairs.
    fn begin_run(&self, engine: &dyn Database, _acked: &[String]) -> Result<()> {
        if !self.cfg.refresh {
            if self.cfg.answers.is_some() {
                // The answers' context names the data's refresh functions.
                let mut s = Session::new(engine.worker(0));
                if let Ok(done) = refresh::done(self, &mut s)? {
                    let _ = self.run.data.set((done.rf1, done.rf2));
                }
            }
            return Ok(());
        }
        let mut s = Session::new(engine.worker(0));
        let done = refresh::done(self, &mut s)?.map_err(|why| {
            Error::fatal(format!(
                "tpch: this database's refresh functions are out of step ({why}): load it again"
            ))
        })?;
        if done.rf1 != done.rf2 {
            return Err(Error::fatal(format!(
                "tpch: RF1 ran {} times on this database but RF2 {} times (an interrupted run?): load it again",
                done.rf1, done.rf2
            )));
        }
        let (need, max) = (1 + self.cfg.streams as u64, refresh::max_pairs(self));
        if done.rf2 + need > max {
            return Err(Error::fatal(format!(
                "tpch: this database has had {} refresh pairs and this run needs {need} more; at {} it takes at most {max} (its delete set would reach the last loaded order): load it again",
                done.rf2,
                self.setting()
            )));
        }
        let _ = self.run.base.set(done.rf2);
        // The power test's queries run after its RF1.
        let _ = self.run.data.set((done.rf1 + 1, done.rf2));
        Ok(())
    }

    fn check(&self, engine: &dyn Database, _info: &RunInfo) -> Result<Vec<Check>> {
        check::check(self, engine)
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        // The last order present and the next one absent: ORDERS' size follows the
        // scale factor most finely (1,500,000 x SF).
        let n = self.sizes().orders;
        crate::check_extent(
            engine,
            "tpch",
            &self.setting(),
            schema::ORDERS,
            &schema::orders_key(gen::order_key_of(n)),
            &schema::orders_key(gen::order_key_of(n + 1)),
            |last| format!("order {}", gen::order_key_of(if last { n } else { n + 1 })),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_factors_out_of_range_are_refused() {
        for bad in ["0", "-1", "0.001", "nan", "inf", "20000", "x", ""] {
            assert!(parse_scale_factor(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_scale_factor("0.01"), Ok(0.01));
        let t = Tpch::new(TpchConfig {
            scale_factor: 1.0,
            ..TpchConfig::default()
        })
        .unwrap();
        let z = t.sizes();
        assert_eq!(
            (z.parts, z.suppliers, z.customers, z.orders),
            (200_000, 10_000, 150_000, 1_500_000)
        );
        assert_eq!(t.clerks(), 1000);
        // 1 to 7 lines per order, 4 on average.
        let l = t.lineitems();
        assert!((5_990_000..6_010_000).contains(&l), "{l}");
    }
}
