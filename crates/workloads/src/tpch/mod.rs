//! TPC-H (specification 3.0.x) as an oltpscope kit: the eight tables, their population
//! at a scale factor, and the consistency checks of the generated data. Owns the kit's
//! configuration and its `Workload` implementation. The 22 queries are not implemented
//! yet: the kit has no transaction types, and the command line offers `load tpch` and
//! `check tpch` only (docs/design/tpch.md).

pub mod check;
pub mod gen;
pub mod load;
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
}

impl Default for TpchConfig {
    fn default() -> Self {
        TpchConfig {
            scale_factor: MIN_SF,
            load_salt: 0x7C_4EED,
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
}

impl Tpch {
    pub fn new(cfg: TpchConfig) -> std::result::Result<Tpch, String> {
        parse_scale_factor(&cfg.scale_factor.to_string())?;
        Ok(Tpch {
            cfg,
            lineitems: std::sync::OnceLock::new(),
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

/// What the kit has no transactions for yet.
const NO_QUERIES: &str =
    "TPC-H's queries are not implemented yet: the kit loads and checks its data only";

impl Workload for Tpch {
    type Input = ();
    type WorkerState = ();

    fn name(&self) -> &'static str {
        "tpch"
    }

    fn schema(&self) -> Schema {
        schema::build(self.sizes())
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &[]
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({ "scale_factor": self.cfg.scale_factor })
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

    fn worker_state(&self, _worker_id: usize, _threads: usize, _seed: u64) {}

    fn next(&self, _st: &mut ()) -> (u32, ()) {
        (0, ())
    }

    fn execute<W: Worker>(&self, _s: &mut Session<W>, _st: &mut (), _input: &()) -> Result<()> {
        Err(Error::fatal(NO_QUERIES))
    }

    fn encode_input(&self, _st: &(), _input: &(), _out: &mut Vec<u8>) {}

    fn decode_input(&self, _st: &mut (), _bytes: &[u8]) -> Result<()> {
        Err(Error::fatal(NO_QUERIES))
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
