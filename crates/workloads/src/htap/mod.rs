//! The hybrid (HTAP) run, written once for every mix of a transactional kit with
//! analytical queries (CH-benCHmark: TPC-C's; TPC-E's analytical mix, the
//! resource-sensitivity paper's): the split of workers (the first `txn_threads` run the
//! kit's transactions, the others one analytical stream each, every query one
//! read-only transaction), the query loop, each query's measured time and rows, the
//! staleness clock (the kit's commits that landed while a query ran), and the report's
//! lines (`report`). A mix says what differs through [`Kit`]: its transactional kit,
//! its queries and their names, the rate it reports (docs/design/htap.md).

pub mod priority;
pub mod report;

pub use priority::Priority;

use crate::{Check, Conflicts, RunInfo, Workload};
use api::{Database, Error, Reader, Result, Schema, Session, Worker};
use exec::Row;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Most analytical streams a run takes (each is a thread).
pub const MAX_STREAMS: usize = 64;

/// What a hybrid mix adds to its transactional kit: the queries and how the report
/// names things. The database hooks default to the kit's own.
pub trait Kit: Send + Sync + 'static {
    type Txn: Workload;
    /// The transactional kit.
    fn txn(&self) -> &Self::Txn;
    /// The run's workload name (`chbench`, `tpce`).
    fn name(&self) -> &'static str;
    /// The transactional side in reports and messages (`TPC-C`).
    fn txn_label(&self) -> &'static str;
    /// The queries' benchmark in messages (`CH-benCHmark`).
    fn queries_label(&self) -> &'static str;
    /// The option that sets the number of streams, in messages (`--analytic-streams`).
    fn streams_flag(&self) -> &'static str;
    /// The design document the staleness line points to.
    fn doc(&self) -> &'static str;
    /// The kit's transaction types, then one per query number 1, 2, ...: query `n` is
    /// type `kit types + n - 1`.
    fn txn_types(&self) -> &'static [&'static str];
    /// The queries that exist, in the report's order.
    fn implemented(&self) -> &'static [u32];
    /// Query `n` as the report names it (`Q5`).
    fn query_name(&self, n: u32) -> String;
    /// Query `n`'s answer inside the caller's transaction.
    fn answer(&self, n: u32, s: &mut dyn Reader) -> Result<Vec<Row>>;
    /// The transactional side's rate over `done` (its types' measured counts), e.g.
    /// `TPC-C 12.0 txn/s (tpmC 310)`.
    fn txn_rate(&self, done: &[u64], secs: f64) -> String;
    /// Every setting needed to repeat the run (`Workload::config`).
    fn config(&self, cfg: &HybridConfig) -> serde_json::Value;

    fn schema(&self) -> Schema {
        self.txn().schema()
    }
    fn load_rows(&self) -> u64 {
        self.txn().load_rows()
    }
    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        self.txn().load(engine, threads, seed, progress)
    }
    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        self.txn().check(engine, info)
    }
    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        self.txn().check_loaded(engine)
    }
}

/// Who runs what.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HybridConfig {
    /// Workers `0..txn_threads` run the kit's transactions (0: the streams alone).
    pub txn_threads: usize,
    /// Analytical streams: workers `txn_threads..txn_threads + streams`.
    pub streams: usize,
    /// The queries each stream runs, in this order, again and again.
    pub queries: Vec<u32>,
    /// Threads each query's scans may use (`--query-threads`).
    pub query_threads: usize,
    /// The streams' CPU priority (`--analytics-priority`).
    pub priority: Priority,
}

/// One measured query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    pub query: u32,
    pub seconds: f64,
    /// Of `seconds`, the CPU time of the stream's own thread (its scan threads' not
    /// counted): how much of a core the query had (`--analytics-priority`).
    pub cpu_seconds: f64,
    pub rows: usize,
    /// The kit's commits acknowledged while the query ran (from just before its first
    /// read to its last): what a snapshot taken at its start did not see by its end.
    pub commits_during: u64,
}

/// A hybrid run: kit `K`'s transactions beside analytical streams.
pub struct Hybrid<K: Kit> {
    pub kit: K,
    pub cfg: HybridConfig,
    /// The kit's commits so far (any phase): the staleness clock.
    commits: AtomicU64,
    times: Mutex<Vec<Timed>>,
    /// The first stream whose priority could not be set, and why (the report's note).
    priority_failed: Mutex<Option<String>>,
}

/// A worker: one of the kit's or an analytical stream.
pub enum Role<T> {
    Txn(T),
    Stream(StreamWorker),
}

pub struct StreamWorker {
    /// Where in the query list this stream is.
    next: usize,
    /// Whether this stream's thread has set its priority (on its first query: the
    /// stream's state is made on its thread, but also on others', e.g. a log's replay).
    prioritized: bool,
    last: Option<Timed>,
    /// Measured queries, their microseconds and missed commits (the counters).
    done: u64,
    micros: u64,
    cpu_micros: u64,
    stale: u64,
}

/// A transaction of the mix: one of the kit's, or a query by number.
// Not boxed: the kit's inputs are the common case, and a box would allocate for each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Input<I> {
    Txn(I),
    Query(u32),
}

impl<K: Kit> Hybrid<K> {
    /// The run `cfg` of `kit`, or one line saying why not.
    pub fn with(kit: K, cfg: HybridConfig) -> std::result::Result<Self, String> {
        if cfg.streams > MAX_STREAMS {
            return Err(format!(
                "{} {} is more than {MAX_STREAMS}",
                kit.streams_flag(),
                cfg.streams
            ));
        }
        if cfg.txn_threads + cfg.streams == 0 {
            return Err(format!(
                "nothing to run: no {} worker and no analytical stream",
                kit.txn_label()
            ));
        }
        if cfg.streams > 0 && cfg.queries.is_empty() {
            return Err("the analytical streams have no query to run".into());
        }
        for &n in &cfg.queries {
            if !kit.implemented().contains(&n) {
                return Err(format!(
                    "{} query {n} is not implemented yet",
                    kit.queries_label()
                ));
            }
        }
        Ok(Hybrid {
            kit,
            cfg,
            commits: AtomicU64::new(0),
            times: Mutex::new(Vec::new()),
            priority_failed: Mutex::new(None),
        })
    }

    /// The measured queries, in the order they completed.
    pub fn times(&self) -> Vec<Timed> {
        self.times.lock().unwrap().clone()
    }

    /// How many of the types are the kit's (the queries' follow).
    pub fn kit_types(&self) -> usize {
        self.kit.txn().txn_types().len()
    }

    /// The type number of query `n`.
    pub fn query_type(&self, n: u32) -> u32 {
        self.kit_types() as u32 + n - 1
    }

    fn run_query<W: Worker>(
        &self,
        s: &mut Session<W>,
        st: &mut StreamWorker,
        n: u32,
    ) -> Result<()> {
        if !st.prioritized {
            st.prioritized = true;
            if let Err(why) = priority::apply(self.cfg.priority) {
                // The stream runs on at its priority so far; the report says so once.
                self.priority_failed.lock().unwrap().get_or_insert(why);
            }
        }
        // A query reads committed data (on mvcc a snapshot, taken at the transaction's
        // begin; the request lets the memory engine skip validating a scan's reads, and
        // the disk engine hold each read lock only while it reads the row).
        s.read_only_committed();
        s.set_query_threads(self.cfg.query_threads);
        let before = self.commits.load(Ordering::Relaxed);
        let (t, cpu) = (std::time::Instant::now(), thread_cpu_seconds());
        let rows = self.kit.answer(n, s)?.len();
        st.last = Some(Timed {
            query: n,
            seconds: t.elapsed().as_secs_f64(),
            cpu_seconds: thread_cpu_seconds() - cpu,
            rows,
            commits_during: self.commits.load(Ordering::Relaxed) - before,
        });
        Ok(())
    }

    /// A state of the kit's for a command met by a stream (a log's replay decodes with
    /// worker 0's state, a stream when the run has no transaction worker).
    fn spare(&self) -> <K::Txn as Workload>::WorkerState {
        self.kit.txn().worker_state(0, 1, 0)
    }
}

type St<K> = Role<<<K as Kit>::Txn as Workload>::WorkerState>;
type In<K> = Input<<<K as Kit>::Txn as Workload>::Input>;

impl<K: Kit> Workload for Hybrid<K> {
    type Input = In<K>;
    type WorkerState = St<K>;

    fn name(&self) -> &'static str {
        self.kit.name()
    }

    fn schema(&self) -> Schema {
        self.kit.schema()
    }

    fn txn_types(&self) -> &'static [&'static str] {
        self.kit.txn_types()
    }

    fn config(&self) -> serde_json::Value {
        self.kit.config(&self.cfg)
    }

    fn load_rows(&self) -> u64 {
        self.kit.load_rows()
    }

    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()> {
        self.kit.load(engine, threads, seed, progress)
    }

    fn worker_state(&self, worker_id: usize, _threads: usize, seed: u64) -> St<K> {
        let t = self.cfg.txn_threads;
        if worker_id < t {
            Role::Txn(self.kit.txn().worker_state(worker_id, t, seed))
        } else {
            // Stream k starts at the k-th query, so streams do not run in step.
            let k = worker_id - t;
            Role::Stream(StreamWorker {
                next: k % self.cfg.queries.len().max(1),
                prioritized: false,
                last: None,
                done: 0,
                micros: 0,
                cpu_micros: 0,
                stale: 0,
            })
        }
    }

    fn next(&self, st: &mut St<K>) -> (u32, In<K>) {
        match st {
            Role::Txn(w) => {
                let (ty, i) = self.kit.txn().next(w);
                (ty, Input::Txn(i))
            }
            Role::Stream(w) => {
                let n = self.cfg.queries[w.next % self.cfg.queries.len()];
                w.next += 1;
                (self.query_type(n), Input::Query(n))
            }
        }
    }

    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        st: &mut St<K>,
        input: &In<K>,
    ) -> Result<()> {
        match (st, input) {
            (Role::Txn(w), Input::Txn(i)) => self.kit.txn().execute(s, w, i),
            (Role::Stream(w), Input::Query(n)) => self.run_query(s, w, *n),
            _ => Err(Error::fatal(format!(
                "{}: a {} transaction given to an analytical stream, or a query to a {} worker",
                self.kit.name(),
                self.kit.txn_label(),
                self.kit.txn_label()
            ))),
        }
    }

    /// The kit's command behind a 0 byte; a query's number behind a 1 (it writes nothing).
    fn encode_input(&self, st: &St<K>, input: &In<K>, out: &mut Vec<u8>) {
        match (st, input) {
            (Role::Txn(w), Input::Txn(i)) => {
                out.push(0);
                self.kit.txn().encode_input(w, i, out);
            }
            (_, Input::Query(n)) => {
                out.push(1);
                out.extend_from_slice(&n.to_le_bytes());
            }
            (Role::Stream(_), Input::Txn(i)) => {
                out.push(0);
                self.kit.txn().encode_input(&self.spare(), i, out);
            }
        }
    }

    fn decode_input(&self, st: &mut St<K>, bytes: &[u8]) -> Result<In<K>> {
        match bytes.split_first() {
            Some((0, rest)) => {
                let i = match st {
                    Role::Txn(w) => self.kit.txn().decode_input(w, rest)?,
                    Role::Stream(_) => self.kit.txn().decode_input(&mut self.spare(), rest)?,
                };
                Ok(Input::Txn(i))
            }
            Some((1, rest)) => {
                let n = <[u8; 4]>::try_from(rest)
                    .map(u32::from_le_bytes)
                    .map_err(|_| {
                        Error::fatal(format!(
                            "{}: a logged query of the wrong length",
                            self.kit.name()
                        ))
                    })?;
                Ok(Input::Query(n))
            }
            _ => Err(Error::fatal(format!(
                "{}: a logged command of another kit",
                self.kit.name()
            ))),
        }
    }

    fn txn_tag(&self, st: &St<K>, input: &In<K>) -> Option<String> {
        match (st, input) {
            (Role::Txn(w), Input::Txn(i)) => self.kit.txn().txn_tag(w, i),
            _ => None,
        }
    }

    fn conflicts(&self, input: &In<K>) -> Conflicts {
        match input {
            Input::Txn(i) => self.kit.txn().conflicts(i),
            Input::Query(_) => Conflicts::NONE,
        }
    }

    fn pauses(&self, st: &mut St<K>, ty: u32) -> Option<(Duration, Duration)> {
        match st {
            Role::Txn(w) => self.kit.txn().pauses(w, ty),
            Role::Stream(_) => None,
        }
    }

    fn committed(&self, st: &mut St<K>, input: &In<K>, measured: bool) {
        match st {
            Role::Txn(w) => {
                self.commits.fetch_add(1, Ordering::Relaxed);
                if let Input::Txn(i) = input {
                    self.kit.txn().committed(w, i, measured);
                }
            }
            Role::Stream(w) => {
                if let (true, Some(t)) = (measured, w.last.take()) {
                    w.done += 1;
                    w.micros += (t.seconds * 1e6) as u64;
                    w.cpu_micros += (t.cpu_seconds * 1e6) as u64;
                    w.stale += t.commits_during;
                    self.times.lock().unwrap().push(t);
                }
            }
        }
    }

    fn counters(&self, st: &St<K>) -> Vec<(&'static str, u64)> {
        match st {
            Role::Txn(w) => self.kit.txn().counters(w),
            Role::Stream(w) => vec![
                ("analytic_queries", w.done),
                ("analytic_query_us", w.micros),
                ("analytic_query_cpu_us", w.cpu_micros),
                ("analytic_commits_during_queries", w.stale),
            ],
        }
    }

    fn notes(&self, done: &[u64], counters: &[(String, u64)], measured_s: f64) -> Vec<String> {
        let k = self.kit_types();
        let mut v = vec![report::side_by_side(self, done, measured_s)];
        if self.cfg.txn_threads > 0 {
            v.extend(self.kit.txn().notes(&done[..k], counters, measured_s));
        }
        v.extend(report::query_lines(self, &self.times()));
        v.extend(report::priority_line(
            self,
            self.priority_failed.lock().unwrap().as_deref(),
        ));
        v
    }

    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>> {
        self.kit.check(engine, info)
    }

    fn check_loaded(&self, engine: &dyn Database) -> Result<()> {
        self.kit.check_loaded(engine)
    }

    fn begin_run(&self, engine: &dyn Database, acked: &[String]) -> Result<()> {
        self.kit.txn().begin_run(engine, acked)
    }
}

/// The calling thread's CPU time so far, in seconds (0 if the clock cannot be read).
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only the timespec passed.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Run `n` of `kit`'s transactions on one worker as the driver would (each committed
/// one reported to the kit, so TPC-E's market turns orders into Trade-Results), inputs
/// drawn from `seed` (the same on every engine, but for clock readings), rolled-back
/// ones included: tests comparing the queries' answers across engines run this first,
/// so the growing tables hold rows the load did not write.
pub fn run_txns<T: Workload>(
    kit: &T,
    s: &mut Session<api::DynWorker<'_>>,
    n: usize,
    seed: u64,
) -> Result<()> {
    let mut st = kit.worker_state(0, 1, seed);
    for _ in 0..n {
        let (ty, input) = kit.next(&mut st);
        match s.run(ty, |s| kit.execute(s, &mut st, &input)) {
            Ok(()) => kit.committed(&mut st, &input, false),
            Err(Error::UserAbort) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
