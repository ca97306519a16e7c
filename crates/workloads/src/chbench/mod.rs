//! CH-benCHmark (Cole et al., DBTest 2011) as an oltpscope kit: TPC-C's five
//! transactions (the `tpcc` kit, composed: its schema, load, transactions and checks)
//! beside analytical queries adapted from TPC-H (`queries`), over TPC-C's tables and
//! SUPPLIER, NATION and REGION (`schema`, `load`). The hybrid run itself (the split of
//! workers, the query loop, the queries' times and staleness, the report's lines) is
//! `htap`'s, shared with TPC-E's analytical mix; this module says what is
//! CH-benCHmark's there (`ChKit`; docs/design/chbench.md).

pub mod load;
pub mod queries;
pub mod schema;

use crate::htap::{Hybrid, HybridConfig, Kit, Priority};
pub use crate::htap::{Timed, MAX_STREAMS};
use crate::tpcc::{Tpcc, TpccConfig};
use crate::{Check, RunInfo, Workload};
use api::{Database, Result, Schema, Session};

/// TPC-C's five transaction types, then Q1 to Q22 (query n is type 4 + n).
pub const TXN_NAMES: [&str; 27] = [
    "new-order",
    "payment",
    "order-status",
    "delivery",
    "stock-level",
    "Q1",
    "Q2",
    "Q3",
    "Q4",
    "Q5",
    "Q6",
    "Q7",
    "Q8",
    "Q9",
    "Q10",
    "Q11",
    "Q12",
    "Q13",
    "Q14",
    "Q15",
    "Q16",
    "Q17",
    "Q18",
    "Q19",
    "Q20",
    "Q21",
    "Q22",
];

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChConfig {
    /// TPC-C's settings (warehouses, mix, affinity, terminal times).
    pub tpcc: TpccConfig,
    /// Workers `0..tpcc_threads` run TPC-C's mix (0: the analytical streams alone).
    pub tpcc_threads: usize,
    /// Analytical streams: workers `tpcc_threads..tpcc_threads + streams`.
    pub streams: usize,
    /// The queries each stream runs, in this order, again and again.
    pub queries: Vec<u32>,
    /// Threads each query's scans may use (`--query-threads`).
    pub query_threads: usize,
    /// The streams' CPU priority (`--analytics-priority`).
    pub priority: Priority,
}

impl Default for ChConfig {
    fn default() -> Self {
        ChConfig {
            tpcc: TpccConfig::default(),
            tpcc_threads: 1,
            streams: 1,
            queries: queries::stream_order(None),
            query_threads: 1,
            priority: Priority::Normal,
        }
    }
}

/// CH-benCHmark's side of the hybrid run (`htap::Kit`): TPC-C, the queries, the added
/// tables.
pub struct ChKit {
    pub tpcc: Tpcc,
}

/// The CH-benCHmark run: TPC-C beside the analytical streams.
pub type Chbench = Hybrid<ChKit>;

impl Hybrid<ChKit> {
    pub fn new(cfg: ChConfig) -> std::result::Result<Chbench, String> {
        if cfg.streams > MAX_STREAMS {
            // Before TPC-C's own checks, as the flag's bound.
            return Err(format!(
                "--analytic-streams {} is more than {MAX_STREAMS}",
                cfg.streams
            ));
        }
        let kit = ChKit {
            tpcc: Tpcc::new(cfg.tpcc.clone())?,
        };
        Hybrid::with(
            kit,
            HybridConfig {
                txn_threads: cfg.tpcc_threads,
                streams: cfg.streams,
                queries: cfg.queries,
                query_threads: cfg.query_threads,
                priority: cfg.priority,
            },
        )
    }
}

impl Kit for ChKit {
    type Txn = Tpcc;

    fn txn(&self) -> &Tpcc {
        &self.tpcc
    }

    fn name(&self) -> &'static str {
        "chbench"
    }

    fn txn_label(&self) -> &'static str {
        "TPC-C"
    }

    fn queries_label(&self) -> &'static str {
        "CH-benCHmark"
    }

    fn streams_flag(&self) -> &'static str {
        "--analytic-streams"
    }

    fn doc(&self) -> &'static str {
        "docs/design/chbench.md"
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &TXN_NAMES
    }

    fn implemented(&self) -> &'static [u32] {
        &queries::IMPLEMENTED
    }

    fn query_name(&self, n: u32) -> String {
        format!("Q{n}")
    }

    fn answer(&self, n: u32, s: &mut dyn api::Reader) -> Result<Vec<exec::Row>> {
        queries::answer(n, s)
    }

    fn txn_rate(&self, done: &[u64], secs: f64) -> String {
        format!(
            "TPC-C {:.1} txn/s (tpmC {:.0})",
            done.iter().sum::<u64>() as f64 / secs,
            done[0] as f64 * 60.0 / secs,
        )
    }

    fn config(&self, cfg: &HybridConfig) -> serde_json::Value {
        serde_json::json!({
            "tpcc": self.tpcc.config(),
            "tpcc_threads": cfg.txn_threads,
            "analytic_streams": cfg.streams,
            "queries": cfg.queries,
            "query_threads": cfg.query_threads,
            "analytics_priority": cfg.priority,
        })
    }

    fn schema(&self) -> Schema {
        schema::build(self.tpcc.cfg.warehouses, self.tpcc.cfg.items)
    }

    fn load_rows(&self) -> u64 {
        self.tpcc.load_rows() + load::rows()
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        self.tpcc.load(engine, threads, seed, progress)?;
        load::load_extra(&mut Session::new(engine.worker(0)), progress)
    }

    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        let mut out = self.tpcc.check(engine, info)?;
        out.push(check_extra(engine)?);
        Ok(out)
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        self.tpcc.check_loaded(engine)?;
        // The added tables: the last supplier present, none after it.
        crate::check_extent(
            engine,
            "chbench",
            "CH-benCHmark's SUPPLIER, NATION and REGION",
            schema::SUPPLIER,
            &schema::supplier_key(schema::SUPPLIERS - 1),
            &schema::supplier_key(schema::SUPPLIERS),
            |last| {
                format!(
                    "supplier {}",
                    if last {
                        schema::SUPPLIERS - 1
                    } else {
                        schema::SUPPLIERS
                    }
                )
            },
        )
    }
}

/// Run `n` of TPC-C's transactions on one worker, inputs drawn from `seed` (the same on
/// every engine, but for clock readings), rolled-back New-Orders included: a loaded
/// database's delivered lines have no amount (clause 4.3.3.1), so tests comparing the
/// queries' answers across engines run this first.
pub fn run_tpcc_txns(
    ch: &Chbench,
    s: &mut Session<api::DynWorker<'_>>,
    n: usize,
    seed: u64,
) -> Result<()> {
    crate::htap::run_txns(&ch.kit.tpcc, s, n, seed)
}

/// The added tables' cardinalities (SUPPLIER 10,000, NATION 62, REGION 5), each key
/// in range, and every supplier's nation present.
fn check_extra(engine: &dyn Database) -> Result<Check> {
    use api::row::field;
    use std::mem::offset_of;
    use std::ops::Bound::Unbounded;
    let mut s = Session::new(engine.worker(0));
    let (nations, regions, suppliers, orphans) = s.run_retry(u32::MAX, 100, |s| {
        let mut keys = std::collections::HashSet::new();
        let mut regions = 0u64;
        s.scan(
            schema::REGION.primary(),
            Unbounded,
            Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |_, _| {
                regions += 1;
                true
            },
        )?;
        s.scan(
            schema::NATION.primary(),
            Unbounded,
            Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |_, r| {
                keys.insert(field::<u32>(r, offset_of!(schema::Nation, n_nationkey)));
                true
            },
        )?;
        let (mut suppliers, mut orphans) = (0u64, 0u64);
        s.scan(
            schema::SUPPLIER.primary(),
            Unbounded,
            Unbounded,
            api::Dir::Forward,
            usize::MAX,
            |_, r| {
                suppliers += 1;
                let n = field::<u32>(r, offset_of!(schema::Supplier, su_nationkey));
                orphans += u64::from(!keys.contains(&n));
                true
            },
        )?;
        Ok((keys.len() as u64, regions, suppliers, orphans))
    })?;
    let want = (
        u64::from(schema::NATIONS),
        u64::from(schema::REGIONS),
        u64::from(schema::SUPPLIERS),
    );
    Ok(Check::new(
        "CH: SUPPLIER 10,000, NATION 62, REGION 5 rows; every supplier's nation present",
        (nations, regions, suppliers) == want && orphans == 0,
        format!("{suppliers} suppliers, {nations} nations, {regions} regions; {orphans} suppliers without their nation"),
    ))
}
