//! CH-benCHmark (Cole et al., DBTest 2011) as an oltpscope kit: TPC-C's five
//! transactions (the `tpcc` kit, composed: its schema, load, transactions and checks)
//! beside analytical queries adapted from TPC-H (`queries`), over TPC-C's tables and
//! SUPPLIER, NATION and REGION (`schema`, `load`). Owns the hybrid run's split of
//! workers (the first `tpcc_threads` run TPC-C's mix, the others one analytical
//! stream each), the queries' measured times and how stale their reads were, and the
//! report's lines comparing both halves (docs/design/chbench.md).

pub mod load;
pub mod queries;
pub mod schema;

use crate::tpcc::{Tpcc, TpccConfig, TpccInput, TpccWorker};
use crate::{Check, RunInfo, Workload};
use api::{Database, Error, Result, Schema, Session, Worker};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Most analytical streams a run takes (each is a thread).
pub const MAX_STREAMS: usize = 64;

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

/// The type number of query `n`.
fn query_type(n: u32) -> u32 {
    4 + n
}

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
}

impl Default for ChConfig {
    fn default() -> Self {
        ChConfig {
            tpcc: TpccConfig::default(),
            tpcc_threads: 1,
            streams: 1,
            queries: queries::stream_order(None),
        }
    }
}

/// One measured query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub query: u32,
    pub seconds: f64,
    pub rows: usize,
    /// TPC-C commits acknowledged while the query ran (from just before its first read
    /// to its last): what a snapshot taken at its start did not see by its end.
    pub commits_during: u64,
}

pub struct Chbench {
    pub cfg: ChConfig,
    pub tpcc: Tpcc,
    /// TPC-C commits so far (any phase): the staleness clock.
    commits: AtomicU64,
    times: Mutex<Vec<Timed>>,
}

/// A worker: a TPC-C terminal or an analytical stream.
pub enum ChWorker {
    Tpcc(TpccWorker),
    Stream(StreamWorker),
}

pub struct StreamWorker {
    /// Where in the query list this stream is.
    next: usize,
    last: Option<Timed>,
    /// Measured queries, their microseconds and missed commits (the counters).
    done: u64,
    micros: u64,
    stale: u64,
}

/// A transaction of the mix: one of TPC-C's, or a query by number.
// Not boxed: TPC-C's inputs are the common case, and a box would allocate for each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ChInput {
    Tpcc(TpccInput),
    Query(u32),
}

impl Chbench {
    pub fn new(cfg: ChConfig) -> std::result::Result<Chbench, String> {
        if cfg.streams > MAX_STREAMS {
            return Err(format!(
                "--analytic-streams {} is more than {MAX_STREAMS}",
                cfg.streams
            ));
        }
        if cfg.tpcc_threads + cfg.streams == 0 {
            return Err("nothing to run: no TPC-C worker and no analytical stream".into());
        }
        if cfg.streams > 0 && cfg.queries.is_empty() {
            return Err("the analytical streams have no query to run".into());
        }
        for &n in &cfg.queries {
            if !queries::IMPLEMENTED.contains(&n) {
                return Err(format!("CH-benCHmark query {n} is not implemented yet"));
            }
        }
        let tpcc = Tpcc::new(cfg.tpcc.clone())?;
        Ok(Chbench {
            cfg,
            tpcc,
            commits: AtomicU64::new(0),
            times: Mutex::new(Vec::new()),
        })
    }

    /// The measured queries, in the order they completed.
    pub fn times(&self) -> Vec<Timed> {
        self.times.lock().unwrap().clone()
    }

    fn run_query<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut StreamWorker,
        n: u32,
    ) -> Result<()> {
        // A query reads committed data (on mvcc a snapshot, taken at the transaction's
        // begin; the hint lets the memory engine skip validating a scan's reads).
        s.read_committed();
        let before = self.commits.load(Ordering::Relaxed);
        let t = std::time::Instant::now();
        let rows = queries::answer(n, s)?.len();
        st.last = Some(Timed {
            query: n,
            seconds: t.elapsed().as_secs_f64(),
            rows,
            commits_during: self.commits.load(Ordering::Relaxed) - before,
        });
        Ok(())
    }
}

impl Workload for Chbench {
    type Input = ChInput;
    type WorkerState = ChWorker;

    fn name(&self) -> &'static str {
        "chbench"
    }

    fn schema(&self) -> Schema {
        schema::build(self.cfg.tpcc.warehouses, self.cfg.tpcc.items)
    }

    fn txn_types(&self) -> &'static [&'static str] {
        &TXN_NAMES
    }

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "tpcc": self.tpcc.config(),
            "tpcc_threads": self.cfg.tpcc_threads,
            "analytic_streams": self.cfg.streams,
            "queries": self.cfg.queries,
        })
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

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> ChWorker {
        let t = self.cfg.tpcc_threads;
        if worker_id < t {
            ChWorker::Tpcc(self.tpcc.worker_state(worker_id, t, seed))
        } else {
            // Stream k starts at the k-th query, so streams do not run in step.
            let k = worker_id - t;
            ChWorker::Stream(StreamWorker {
                next: k % self.cfg.queries.len().max(1),
                last: None,
                done: 0,
                micros: 0,
                stale: 0,
            })
        }
    }

    fn next(&self, st: &mut ChWorker) -> (u32, ChInput) {
        match st {
            ChWorker::Tpcc(w) => {
                let (ty, i) = self.tpcc.next(w);
                (ty, ChInput::Tpcc(i))
            }
            ChWorker::Stream(w) => {
                let n = self.cfg.queries[w.next % self.cfg.queries.len()];
                w.next += 1;
                (query_type(n), ChInput::Query(n))
            }
        }
    }

    fn execute<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut ChWorker,
        input: &ChInput,
    ) -> Result<()> {
        match (st, input) {
            (ChWorker::Tpcc(w), ChInput::Tpcc(i)) => self.tpcc.execute(s, w, i),
            (ChWorker::Stream(w), ChInput::Query(n)) => self.run_query(s, w, *n),
            _ => Err(Error::fatal(
                "chbench: a TPC-C transaction given to an analytical stream, or a query to a TPC-C worker",
            )),
        }
    }

    /// TPC-C's command behind a 0 byte; a query's number behind a 1 (it writes nothing).
    fn encode_input(&self, st: &ChWorker, input: &ChInput, out: &mut Vec<u8>) {
        match (st, input) {
            (ChWorker::Tpcc(w), ChInput::Tpcc(i)) => {
                out.push(0);
                self.tpcc.encode_input(w, i, out);
            }
            (_, ChInput::Query(n)) => {
                out.push(1);
                out.extend_from_slice(&n.to_le_bytes());
            }
            (ChWorker::Stream(_), ChInput::Tpcc(i)) => {
                out.push(0);
                crate::tpcc::txn::encode_input(i, out);
            }
        }
    }

    fn decode_input(&self, st: &mut ChWorker, bytes: &[u8]) -> Result<ChInput> {
        match bytes.split_first() {
            Some((0, rest)) => {
                let i = match st {
                    ChWorker::Tpcc(w) => self.tpcc.decode_input(w, rest)?,
                    ChWorker::Stream(_) => crate::tpcc::txn::decode_input(rest)?,
                };
                Ok(ChInput::Tpcc(i))
            }
            Some((1, rest)) => {
                let n = <[u8; 4]>::try_from(rest)
                    .map(u32::from_le_bytes)
                    .map_err(|_| Error::fatal("chbench: a logged query of the wrong length"))?;
                Ok(ChInput::Query(n))
            }
            _ => Err(Error::fatal("chbench: a logged command of another kit")),
        }
    }

    fn txn_tag(&self, st: &ChWorker, input: &ChInput) -> Option<String> {
        match (st, input) {
            (ChWorker::Tpcc(w), ChInput::Tpcc(i)) => self.tpcc.txn_tag(w, i),
            _ => None,
        }
    }

    fn conflict_key(&self, input: &ChInput) -> Option<u64> {
        match input {
            ChInput::Tpcc(i) => self.tpcc.conflict_key(i),
            ChInput::Query(_) => None,
        }
    }

    fn pauses(&self, st: &mut ChWorker, ty: u32) -> Option<(Duration, Duration)> {
        match st {
            ChWorker::Tpcc(w) => self.tpcc.pauses(w, ty),
            ChWorker::Stream(_) => None,
        }
    }

    fn committed(&self, st: &mut ChWorker, input: &ChInput, measured: bool) {
        match st {
            ChWorker::Tpcc(w) => {
                self.commits.fetch_add(1, Ordering::Relaxed);
                if let ChInput::Tpcc(i) = input {
                    self.tpcc.committed(w, i, measured);
                }
            }
            ChWorker::Stream(w) => {
                if let (true, Some(t)) = (measured, w.last.take()) {
                    w.done += 1;
                    w.micros += (t.seconds * 1e6) as u64;
                    w.stale += t.commits_during;
                    self.times.lock().unwrap().push(t);
                }
            }
        }
    }

    fn counters(&self, st: &ChWorker) -> Vec<(&'static str, u64)> {
        match st {
            ChWorker::Tpcc(w) => self.tpcc.counters(w),
            ChWorker::Stream(w) => vec![
                ("analytic_queries", w.done),
                ("analytic_query_us", w.micros),
                ("analytic_commits_during_queries", w.stale),
            ],
        }
    }

    fn notes(&self, done: &[u64], counters: &[(String, u64)], measured_s: f64) -> Vec<String> {
        let mut v = vec![report::side_by_side(self, done, measured_s)];
        if self.cfg.tpcc_threads > 0 {
            v.extend(self.tpcc.notes(&done[..5], counters, measured_s));
        }
        v.extend(report::query_lines(&self.times()));
        v
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
pub fn run_tpcc_txns<W: Worker>(
    ch: &Chbench,
    s: &mut Session<W>,
    n: usize,
    seed: u64,
) -> Result<()> {
    let mut st = ch.tpcc.worker_state(0, 1, seed);
    for _ in 0..n {
        let (ty, input) = ch.tpcc.next(&mut st);
        match s.run(ty, |s| ch.tpcc.execute(s, &mut st, &input)) {
            Ok(()) | Err(Error::UserAbort) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
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

pub mod report;
