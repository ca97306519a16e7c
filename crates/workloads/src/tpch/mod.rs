//! TPC-H (specification 3.0.x) as an oltpscope kit: the eight tables, their population
//! at a scale factor, the consistency checks of the generated data, the queries
//! (`queries`, those implemented so far) and the power run (`power`). Owns the kit's
//! configuration and its `Workload` implementation: each query is a read-only
//! transaction type, run once per power run in stream 0's order (docs/design/tpch.md).

pub mod check;
pub mod gen;
pub mod load;
pub mod power;
pub mod queries;
pub mod schema;

use crate::{Check, RunInfo, Workload};
use api::{Engine, Error, Result, Schema, Session, Worker};
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
    /// The queries a run executes, in order (`power::stream_order`).
    pub queries: Vec<u32>,
}

impl Default for TpchConfig {
    fn default() -> Self {
        TpchConfig {
            scale_factor: MIN_SF,
            load_salt: 0x7C_4EED,
            queries: power::stream_order(None),
        }
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
    /// The measured queries' times, for the report.
    times: power::Times,
}

impl Tpch {
    pub fn new(cfg: TpchConfig) -> std::result::Result<Tpch, String> {
        parse_scale_factor(&cfg.scale_factor.to_string())?;
        Ok(Tpch {
            cfg,
            lineitems: std::sync::OnceLock::new(),
            times: power::Times::default(),
        })
    }

    fn scaled(&self, base: f64) -> u64 {
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

/// The transaction types: query N is type N - 1 (those not implemented are never
/// drawn).
const QUERY_NAMES: [&str; 22] = [
    "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9", "Q10", "Q11", "Q12", "Q13", "Q14", "Q15",
    "Q16", "Q17", "Q18", "Q19", "Q20", "Q21", "Q22",
];

/// A worker's place in the run's list of queries.
pub struct PowerWorker {
    seed: u64,
    next: usize,
    /// The last query's measured execution (taken by `committed`).
    last: Option<power::Timed>,
}

impl Workload for Tpch {
    type Input = queries::Query;
    type WorkerState = PowerWorker;

    fn name(&self) -> &'static str {
        "tpch"
    }

    fn schema(&self) -> Schema {
        schema::build(self.sizes())
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &QUERY_NAMES
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({ "scale_factor": self.cfg.scale_factor, "queries": self.cfg.queries })
    }

    fn load_rows(&self) -> u64 {
        let z = self.sizes();
        30 + 5 * z.parts as u64
            + z.suppliers as u64
            + z.customers as u64
            + z.orders
            + self.lineitems()
    }

    fn load<E: Engine>(
        &self,
        engine: &E,
        threads: usize,
        _seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        // The population is a function of the load salt alone (as TPC-H's dbgen's is
        // of the scale factor), so every engine holds the same data.
        load::load(self, engine, threads, progress)
    }

    fn worker_state(&self, _worker_id: usize, _threads: usize, seed: u64) -> PowerWorker {
        PowerWorker {
            seed,
            next: 0,
            last: None,
        }
    }

    /// The run's queries in order (again from the first if more are asked), each with
    /// its parameters drawn from the run's seed.
    fn next(&self, st: &mut PowerWorker) -> (u32, queries::Query) {
        let n = self.cfg.queries[st.next % self.cfg.queries.len()];
        st.next += 1;
        let q = queries::Query::draw(n, st.seed).expect("only implemented queries are listed");
        (n - 1, q)
    }

    fn execute<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut PowerWorker,
        q: &queries::Query,
    ) -> Result<()> {
        // A query reads committed data only (clause 3.4's isolation asks no more of it
        // against the refresh functions), so an engine may skip read-set tracking.
        s.read_committed();
        let of = self.cfg.queries.len();
        power::announce(q, (st.next + of - 1) % of, of);
        let t = std::time::Instant::now();
        let rows = q.answer(s)?.len();
        st.last = Some(power::Timed {
            query: q.number(),
            seconds: t.elapsed().as_secs_f64(),
            rows,
        });
        Ok(())
    }

    fn committed(&self, st: &mut PowerWorker, _q: &queries::Query, measured: bool) {
        if let (true, Some(t)) = (measured, st.last.take()) {
            self.times.record(t);
        }
    }

    fn notes(&self, _done: &[u64], _counters: &[(String, u64)]) -> Vec<String> {
        power::notes(&self.times.all(), self.cfg.scale_factor)
    }

    /// A query's command: its number (it writes nothing; the parameters follow from
    /// the worker's seed).
    fn encode_input(&self, _st: &PowerWorker, q: &queries::Query, out: &mut Vec<u8>) {
        out.extend_from_slice(&q.number().to_le_bytes());
    }

    fn decode_input(&self, st: &mut PowerWorker, bytes: &[u8]) -> Result<queries::Query> {
        let n = bytes
            .try_into()
            .map(u32::from_le_bytes)
            .map_err(|_| Error::fatal("tpch: a logged query of the wrong length"))?;
        queries::Query::draw(n, st.seed)
            .ok_or_else(|| Error::fatal(format!("tpch: logged query {n} is not implemented")))
    }

    fn check<E: Engine>(&self, engine: &E, _info: &RunInfo) -> Result<Vec<Check>> {
        check::check(self, engine)
    }

    fn check_loaded<E: Engine>(&self, engine: &E) -> Result<()> {
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
