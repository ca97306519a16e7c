//! Workload kits, written once against the transactional API (`api::Session`) and run
//! unchanged on every engine design: the micro-benchmark, TPC-B, TPC-C, TPC-E and TPC-H
//! (its data and queries), and CH-benCHmark (TPC-C beside analytical queries).
//!
//! A kit defines its schema, loads its data in parallel, generates each transaction's
//! inputs up front (so the driver can retry a conflict-aborted transaction with the same
//! inputs), executes one transaction body, and checks the database's consistency.
//! Kits never print, and the driver times the transactions; the analytical kits also
//! time each query for figures of their own (TPC-H's power and throughput tests,
//! CH-benCHmark's queries beside the commits they missed).

pub mod chbench;
pub mod codec;
pub mod htap;
pub mod micro;
pub mod tpcb;
pub mod tpcc;
pub mod tpce;
pub mod tpch;
pub mod util;

use api::{Database, Result, Schema, Session};

/// A transaction's conflict classes ([`Workload::conflicts`]): a set of 64, one bit
/// each. A class is taken modulo 64, so classes 64 apart share a bit: a workload with
/// more classes than that holds back a few transactions that would not have collided,
/// never lets two through that would.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conflicts(u64);

impl Conflicts {
    pub const NONE: Conflicts = Conflicts(0);

    /// This set with class `c` added.
    #[must_use]
    pub const fn with(self, c: u64) -> Conflicts {
        Conflicts(self.0 | 1 << (c % 64))
    }

    /// Whether the two sets share a class.
    pub const fn meets(self, o: Conflicts) -> bool {
        self.0 & o.0 != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Both sets' classes.
    #[must_use]
    pub const fn union(self, o: Conflicts) -> Conflicts {
        Conflicts(self.0 | o.0)
    }

    /// This set's classes that are not in `o`.
    #[must_use]
    pub const fn minus(self, o: Conflicts) -> Conflicts {
        Conflicts(self.0 & !o.0)
    }

    /// Whether every class of `o` is in this set.
    pub const fn contains(self, o: Conflicts) -> bool {
        self.0 & o.0 == o.0
    }
}

/// One consistency condition's outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

impl Check {
    pub fn new(name: &str, passed: bool, detail: impl Into<String>) -> Self {
        Check {
            name: name.to_string(),
            passed,
            detail: detail.into(),
        }
    }
}

/// One consistency condition's tally over every unit (warehouse, trade, ...) it was
/// evaluated on: how many passed, and the first mismatch, for its [`Check`].
pub(crate) struct Cond {
    name: &'static str,
    what: &'static str,
    checked: u64,
    failed: u64,
    first: Option<String>,
}

impl Cond {
    pub(crate) fn new(name: &'static str, what: &'static str) -> Self {
        Cond {
            name,
            what,
            checked: 0,
            failed: 0,
            first: None,
        }
    }

    pub(crate) fn record(&mut self, ok: bool, msg: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.failed += 1;
            if self.first.is_none() {
                self.first = Some(msg());
            }
        }
    }

    pub(crate) fn finish(self) -> Check {
        let mut detail = format!(
            "{} of {} {} pass",
            self.checked - self.failed,
            self.checked,
            self.what
        );
        if let Some(f) = &self.first {
            detail.push_str("; first mismatch: ");
            detail.push_str(f);
        }
        Check::new(self.name, self.checked > 0 && self.failed == 0, detail)
    }
}

/// What the driver knows about the runs that produced the database being checked.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// Committed transactions per type, over every run since the data was loaded, when
    /// known (`None` when checking a database opened from disk without that history).
    pub committed: Option<Vec<u64>>,
    /// Tags (`Workload::txn_tag`) of the commits the driver acknowledged before a crash,
    /// when checking a database recovered after a crash test.
    pub acked: Option<Vec<String>>,
}

pub trait Workload: Send + Sync + 'static {
    /// Everything one transaction needs, drawn before it starts (retries reuse it).
    type Input: Send;
    /// Per-worker generator state (random number generator, home warehouse, ...).
    type WorkerState: Send;

    fn name(&self) -> &'static str;
    fn schema(&self) -> Schema;
    /// Transaction type names, indexed by the type number `next` returns.
    fn txn_types(&self) -> &'static [&'static str];
    /// Every workload setting needed to repeat the run.
    fn config(&self) -> serde_json::Value;

    /// Rows the load inserts (the progress bar's length).
    fn load_rows(&self) -> u64;
    /// Populate an empty database using `threads` threads; call `progress(n)` after
    /// inserting `n` more rows.
    fn load(
        &self,
        engine: &dyn Database,
        threads: usize,
        seed: u64,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<()>;

    fn worker_state(&self, worker_id: usize, threads: usize, seed: u64) -> Self::WorkerState;
    /// Draw the next transaction: its type number and inputs.
    fn next(&self, st: &mut Self::WorkerState) -> (u32, Self::Input);
    /// The transaction's body (the driver wraps it in begin/commit and retries conflicts),
    /// on any engine's worker: compiled once, in this crate (`api::database`).
    fn execute(
        &self,
        s: &mut Session<api::DynWorker<'_>>,
        st: &mut Self::WorkerState,
        input: &Self::Input,
    ) -> Result<()>;

    /// Append the command of a transaction about to commit (for an engine that logs
    /// commands, `api::Worker::command`): its inputs and whatever its body took besides
    /// them (clock reads, ids handed out by the workload), so that [`Workload::decode_input`]
    /// and `execute` on the same database state make the same writes. Called after the
    /// body, before the commit, with the state the body left.
    fn encode_input(&self, st: &Self::WorkerState, input: &Self::Input, out: &mut Vec<u8>);

    /// Decode a logged command (from [`Workload::encode_input`]) for re-execution by
    /// `execute` with `st`, which it may prepare so that the body takes the logged
    /// values instead of reading the clock or handing out new ids. Bytes from another
    /// workload or version are an error.
    fn decode_input(&self, st: &mut Self::WorkerState, bytes: &[u8]) -> Result<Self::Input>;

    /// A line identifying a committed transaction, written by the driver to the
    /// acknowledgement file of crash tests (`None`: the workload has no such tag). Called
    /// right after the commit, with the worker state the transaction's body left (so a
    /// tag may name what the transaction chose, e.g. TPC-C's order id).
    fn txn_tag(&self, _st: &Self::WorkerState, _input: &Self::Input) -> Option<String> {
        None
    }

    /// The data an input's transaction reads and writes that others may write, as
    /// classes of the workload's choosing (e.g. TPC-C's warehouses): two transactions
    /// whose sets meet would likely abort each other under optimistic concurrency
    /// control. Under `--interleave` a worker thread does not start a transaction whose
    /// set meets one another of its coroutines has in flight (it starts a later input
    /// of the same stream first, or waits). Empty (the default): never held back.
    fn conflicts(&self, _input: &Self::Input) -> Conflicts {
        Conflicts::NONE
    }

    /// Pauses around a transaction of type `ty` that a terminal would take: (before it,
    /// after it), e.g. TPC-C's keying and think times. `None` (the default): none, the
    /// worker runs transactions back to back.
    fn pauses(
        &self,
        _st: &mut Self::WorkerState,
        _ty: u32,
    ) -> Option<(std::time::Duration, std::time::Duration)> {
        None
    }

    /// Called by the driver before it draws each transaction of a stream: a kit whose
    /// streams start in an order (TPC-H's throughput test starts when its power test
    /// ends) blocks here until `st`'s stream may go on, polling `stop`; false: the run
    /// stopped while it waited, so the stream ends. Default: never waits.
    fn wait_turn(&self, _st: &mut Self::WorkerState, _stop: &dyn Fn() -> bool) -> bool {
        true
    }

    /// With a transaction count (`Stop::Txns`): stream `id`'s share of `total` over
    /// `streams` streams, for a kit whose streams differ in length (TPC-H's power and
    /// refresh stream beside its query streams). `None` (the default): the even split.
    fn stream_txns(&self, _id: usize, _streams: usize, _total: u64) -> Option<u64> {
        None
    }

    /// Called by the driver right after each commit (`measured`: during the measured
    /// phase), with the state the body left, so a kit can count what its committed
    /// transactions did (e.g. TPC-C's skipped Delivery districts).
    fn committed(&self, _st: &mut Self::WorkerState, _input: &Self::Input, _measured: bool) {}

    /// Counters of this worker's measured commits, by name (the driver sums them over
    /// workers into the report).
    fn counters(&self, _st: &Self::WorkerState) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Lines the report adds about the run: `done` is the measured transactions per type
    /// (committed or rolled back by the workload), `counters` the summed counters,
    /// `measured_s` the measured phase's seconds (for a kit's rates of its own, e.g.
    /// CH-benCHmark's queries per hour).
    fn notes(&self, _done: &[u64], _counters: &[(String, u64)], _measured_s: f64) -> Vec<String> {
        Vec::new()
    }

    /// The workload's consistency conditions, evaluated on a quiescent database.
    fn check(&self, engine: &dyn Database, info: &RunInfo) -> Result<Vec<Check>>;

    /// Refuse (`Error::Fatal`, one line) a database loaded with other settings than this
    /// kit's (another scale, warehouse or key count): the driver asks before the first
    /// transaction of `run --no-load` and before `check`, so such a database is refused,
    /// not changed by transactions that then find rows missing, nor reported as
    /// inconsistent. Reads only. Default: no setting to compare.
    fn check_loaded(&self, _engine: &dyn Database) -> Result<()> {
        Ok(())
    }

    /// Called once by the driver when the database is ready for this run (loaded, or
    /// found and its command log replayed), before the first transaction: a kit numbers
    /// the run here from what the database and `acked` (the acknowledgement file's
    /// lines so far, `--acked-file`) already hold, so a run's keys are never an earlier
    /// run's (TPC-B's History). Default: nothing to number.
    fn begin_run(&self, _engine: &dyn Database, _acked: &[String]) -> Result<()> {
        Ok(())
    }
}

/// `Workload::check_loaded` for a kit whose size is the last id of a table: the row
/// `last` must be present and the row `next` after it absent (loads are all or nothing,
/// and no transaction adds to these tables). `setting`: the option as given (`--scale
/// 2`); `row(which)`: the row named for the message.
pub(crate) fn check_extent(
    engine: &dyn Database,
    kit: &str,
    setting: &str,
    t: api::TableId,
    last: &[u8],
    next: &[u8],
    row: impl Fn(bool) -> String,
) -> Result<()> {
    let mut s = Session::new(engine.worker(0));
    let (has_last, has_next) = s.run_retry(u32::MAX, 100, |s| {
        Ok((s.get(t, last, |_| ())?, s.get(t, next, |_| ())?))
    })?;
    if has_last && !has_next {
        return Ok(());
    }
    Err(api::Error::fatal(format!(
        "{kit}: the database was not loaded with {setting} ({}): give the setting it was loaded with",
        if has_last {
            format!("{} is present", row(false))
        } else {
            format!("{} is missing", row(true))
        }
    )))
}
