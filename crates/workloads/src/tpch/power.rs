//! The performance test's bookkeeping (clause 5.3): the streams (the power test's
//! stream 0 of RF1, the queries and RF2, clause 5.3.3; the throughput test's query
//! streams in Appendix A's orders and its refresh stream of one pair per query stream,
//! clause 5.3.4), the line announcing each step, each query's and refresh function's
//! time as the workload measured it, and the report: per-query and per-stream times
//! and the figures Power@Size, Throughput@Size and QphH@Size (clause 5.4). It never
//! runs a query or a refresh function itself (the kit's `execute` does).

use super::queries::{Query, IMPLEMENTED, STREAM0, STREAM_ORDERS};
use super::refresh::{self, Rf, Step};
use super::Tpch;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The most throughput streams: Appendix A orders the queries of streams 1 to 40 (a
/// run of more would repeat orders); each is a worker thread beside the refresh stream.
pub const MAX_STREAMS: usize = 40;

/// The minimum number of query streams of a throughput test at scale factor `sf`
/// (clause 5.3.4's table; below SF 1, which the table does not list, SF 1's 2).
pub fn min_streams(sf: f64) -> usize {
    const TABLE: [(f64, usize); 8] = [
        (1.0, 2),
        (10.0, 3),
        (30.0, 4),
        (100.0, 5),
        (300.0, 6),
        (1_000.0, 7),
        (3_000.0, 8),
        (10_000.0, 9),
    ];
    TABLE
        .iter()
        .rev()
        .find(|(at, _)| sf >= *at)
        .map_or(2, |&(_, n)| n)
}

/// Parse `--streams N` (0 to [`MAX_STREAMS`]) or `--streams min` (`None`: clause
/// 5.3.4's minimum for the scale factor, resolved once it is known).
pub fn parse_streams(s: &str) -> Result<Option<usize>, String> {
    if s.trim() == "min" {
        return Ok(None);
    }
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("--streams '{s}' is not a number (or `min`)"))?;
    if n > MAX_STREAMS {
        return Err(format!(
            "--streams {n}: at most {MAX_STREAMS} query streams (Appendix A orders the queries of 40; each is a thread)"
        ));
    }
    Ok(Some(n))
}

/// Parse `--queries 1,6,3` (or `--query N`): numbers in 1..=22, each implemented,
/// none twice. Out of range, unknown or not implemented: one line (exit 2 upstream).
pub fn parse_queries(s: &str) -> Result<Vec<u32>, String> {
    crate::util::parse_query_list(s, "TPC-H", &IMPLEMENTED)
}

use crate::util::query_list as list;

/// The queries of a power run in stream 0's order (Appendix A): the `chosen` ones, or
/// every implemented one.
pub fn stream_order(chosen: Option<&[u32]>) -> Vec<u32> {
    STREAM0
        .iter()
        .copied()
        .filter(|n| chosen.map_or(IMPLEMENTED.contains(n), |c| c.contains(n)))
        .collect()
}

/// What a stream's step was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Query(u32),
    Rf(Rf),
}

impl std::fmt::Display for What {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            What::Query(n) => write!(f, "Q{n}"),
            What::Rf(Rf::Rf1) => f.write_str("RF1"),
            What::Rf(Rf::Rf2) => f.write_str("RF2"),
        }
    }
}

/// One query's or refresh function's measured execution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// 0: the power test's stream (and the throughput test's refresh stream); 1 to S:
    /// the throughput test's query streams.
    pub stream: usize,
    /// Part of the throughput test (else of the power test).
    pub throughput: bool,
    pub what: What,
    pub seconds: f64,
    /// Rows answered (a query) or written (a refresh function).
    pub rows: u64,
    pub end: Instant,
}

/// What a run's streams share.
#[derive(Debug, Default)]
pub struct RunState {
    /// Refresh pairs the database had before this run (`Workload::begin_run`).
    pub base: OnceLock<u64>,
    /// The RF1s and RF2s the data had had when the power test's queries ran (for
    /// the answers' context; unset when not known).
    pub data: OnceLock<(u64, u64)>,
    /// Answers that could not be written (`--answers`), one line each.
    unwritten: Mutex<Vec<String>>,
    /// When the power test ended and the throughput test began.
    started: Mutex<Option<Instant>>,
    go: Condvar,
    times: Mutex<Vec<Timed>>,
}

impl RunState {
    pub fn record(&self, t: Timed) {
        self.times.lock().unwrap().push(t);
    }

    pub fn all(&self) -> Vec<Timed> {
        self.times.lock().unwrap().clone()
    }

    /// Write query `q`'s answer into `dir`; a failure is kept for the report's notes.
    fn write_answer(&self, t: &Tpch, dir: &std::path::Path, q: &Query, rows: &[exec::Row]) {
        let ctx = super::answers::context(
            q,
            t.cfg.scale_factor,
            t.cfg.load_salt,
            self.data.get().copied(),
        );
        if let Err(e) = super::answers::write(dir, q, &ctx, rows) {
            let line = format!(
                "answers: Q{}'s NOT written to {}: {e}",
                q.number(),
                super::answers::file(dir, q.number()).display()
            );
            eprintln!("tpch: {line}");
            self.unwritten.lock().unwrap().push(line);
        }
    }

    fn start_throughput(&self) {
        let mut s = self.started.lock().unwrap();
        s.get_or_insert_with(Instant::now);
        self.go.notify_all();
    }

    /// Block until the throughput test starts; false if `stop` turns true first.
    fn wait_throughput(&self, stop: &dyn Fn() -> bool) -> bool {
        let mut s = self.started.lock().unwrap();
        while s.is_none() {
            if stop() {
                return false;
            }
            s = self
                .go
                .wait_timeout(s, Duration::from_millis(20))
                .unwrap()
                .0;
        }
        true
    }

    fn throughput_start(&self) -> Option<Instant> {
        *self.started.lock().unwrap()
    }
}

/// One step of a stream.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Work {
    Query(u32),
    Refresh(Step),
}

/// A transaction of a stream: a query with its parameters or a refresh function's batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Query(Query),
    Refresh(Step),
}

/// A worker's stream: its steps and its place in them.
pub struct StreamWorker {
    stream: usize,
    /// Seed of this stream's query parameters.
    seed: u64,
    work: Vec<Work>,
    /// Steps of the power test (stream 0; the rest is the refresh stream).
    power_len: usize,
    next: usize,
    /// The step being run is part of the throughput test.
    throughput: bool,
    /// The last query's measured execution (taken by `committed`).
    last: Option<Timed>,
    /// The refresh function under way: its start and the rows its committed batches
    /// wrote; the rows of the batch in flight.
    rf: Option<(Instant, u64)>,
    pending: u64,
    /// Re-executing logged commands (`decode`): no announcement, no time.
    replaying: bool,
    /// When the step in flight was drawn.
    drawn: Instant,
    /// The power test's last answer, kept for `--answers` until its commit.
    answer: Option<Vec<exec::Row>>,
}

/// Stream `s`'s query parameters' seed: the run's for stream 0 (the power test draws
/// as before), another per throughput stream.
fn stream_seed(seed: u64, s: usize) -> u64 {
    seed ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Worker `id`'s stream: worker 0 runs the power test (RF1, stream 0's queries, RF2)
/// and then the throughput test's refresh stream (a pair per query stream); worker s
/// (1 to S) runs query stream s in Appendix A's order.
pub fn stream_worker(t: &Tpch, id: usize, seed: u64) -> StreamWorker {
    let base = t.run.base.get().copied().unwrap_or(0);
    let mut work = Vec::new();
    let mut power_len = 0;
    if id == 0 {
        let rf = |rf: Rf, pair: u64| {
            (0..refresh::batches(t)).map(move |batch| Work::Refresh(Step { rf, pair, batch }))
        };
        if t.cfg.refresh {
            work.extend(rf(Rf::Rf1, base + 1));
        }
        work.extend(t.cfg.queries.iter().map(|&n| Work::Query(n)));
        if t.cfg.refresh {
            work.extend(rf(Rf::Rf2, base + 1));
        }
        power_len = work.len();
        if t.cfg.refresh {
            for j in 1..=t.cfg.streams as u64 {
                let pair = base + 1 + j;
                work.extend(refresh::pair_steps(t, pair).into_iter().map(Work::Refresh));
            }
        }
    } else {
        work.extend(
            STREAM_ORDERS[id]
                .iter()
                .filter(|n| t.cfg.queries.contains(n))
                .map(|&n| Work::Query(n)),
        );
    }
    StreamWorker {
        stream: id,
        seed: stream_seed(seed, id),
        work,
        power_len,
        next: 0,
        throughput: false,
        last: None,
        rf: None,
        pending: 0,
        replaying: false,
        drawn: Instant::now(),
        answer: None,
    }
}

impl StreamWorker {
    /// Transactions of the stream.
    pub fn len(&self) -> usize {
        self.work.len()
    }

    pub fn is_empty(&self) -> bool {
        self.work.is_empty()
    }

    /// The next step (again from the first if more are asked), a query's parameters
    /// drawn from the stream's seed; its transaction type.
    pub fn draw(&mut self) -> (u32, Item) {
        let at = self.next % self.work.len();
        self.next += 1;
        self.throughput = self.stream > 0 || at >= self.power_len;
        // A step's time runs from here (before its transaction begins: a wait for a
        // lock at the begin, as SQLite's writer may have, counts) to its commit.
        self.drawn = Instant::now();
        if let Work::Refresh(Step { batch: 0, .. }) = self.work[at] {
            self.rf = Some((self.drawn, 0));
        }
        match self.work[at] {
            Work::Query(n) => {
                let q = Query::draw(n, self.seed).expect("only implemented queries are listed");
                (n - 1, Item::Query(q))
            }
            Work::Refresh(step) => (refresh::ty(step.rf), Item::Refresh(step)),
        }
    }

    /// The query streams wait for the power test's end.
    pub fn wait_turn(&mut self, t: &Tpch, stop: &dyn Fn() -> bool) -> bool {
        self.stream == 0 || self.next > 0 || t.run.wait_throughput(stop)
    }

    /// Run an item inside the driver's transaction, noting its time.
    pub fn execute<W: api::Worker>(
        &mut self,
        t: &Tpch,
        s: &mut api::Session<W>,
        item: &Item,
    ) -> api::Result<()> {
        if self.replaying {
            // A logged query wrote nothing; a refresh step writes what it wrote.
            if let Item::Refresh(step) = item {
                refresh::run_step(t, s, *step)?;
            }
            return Ok(());
        }
        let at = (self.next - 1) % self.work.len();
        match item {
            Item::Query(q) => {
                // A query reads committed data only (clause 3.4's isolation asks no
                // more of it against the refresh functions), so an engine may skip
                // read-set tracking.
                s.read_committed();
                s.set_query_threads(t.cfg.query_threads);
                self.announce(&What::Query(q.number()), at);
                let answer = q.answer(s)?;
                let rows = answer.len() as u64;
                if t.cfg.answers.is_some() && !self.throughput {
                    self.answer = Some(answer);
                }
                self.last = Some(Timed {
                    stream: self.stream,
                    throughput: self.throughput,
                    what: What::Query(q.number()),
                    seconds: 0.0,
                    rows,
                    end: self.drawn,
                });
            }
            Item::Refresh(step) => {
                if step.batch == 0 {
                    self.announce(&What::Rf(step.rf), at);
                }
                self.pending = refresh::run_step(t, s, *step)?;
            }
        }
        Ok(())
    }

    /// The line announcing step `at` of the stream (stderr, as the other kits'
    /// progress), counting queries and refresh functions (not their batches) in the
    /// power test, the refresh stream or a query stream.
    fn announce(&self, what: &What, at: usize) {
        let (name, from, to) = match self.stream {
            0 if at < self.power_len => (String::new(), 0, self.power_len),
            0 => (
                "refresh stream: ".to_string(),
                self.power_len,
                self.work.len(),
            ),
            s => (format!("stream {s}: "), 0, self.work.len()),
        };
        let first = |w: &Work| !matches!(w, Work::Refresh(s) if s.batch > 0);
        let k = self.work[from..=at].iter().filter(|w| first(w)).count();
        let of = self.work[from..to].iter().filter(|w| first(w)).count();
        eprintln!("tpch: {name}{what} running ({k} of {of})");
    }

    /// After a commit: record a query's time, or a refresh function's once its last
    /// batch committed; the power test's last step starts the throughput test.
    pub fn committed(&mut self, t: &Tpch, item: &Item, measured: bool) {
        let done = match item {
            Item::Query(q) => {
                let done = self.last.take().map(|l| Timed {
                    seconds: self.drawn.elapsed().as_secs_f64(),
                    end: Instant::now(),
                    ..l
                });
                // Written after the step's time is taken.
                if let (Some(dir), Some(rows)) = (&t.cfg.answers, self.answer.take()) {
                    t.run.write_answer(t, dir, q, &rows);
                }
                done
            }
            Item::Refresh(step) => {
                let (start, rows) = self.rf.get_or_insert((Instant::now(), 0));
                *rows += std::mem::take(&mut self.pending);
                (step.batch + 1 == refresh::batches(t)).then(|| Timed {
                    stream: self.stream,
                    throughput: self.throughput,
                    what: What::Rf(step.rf),
                    seconds: start.elapsed().as_secs_f64(),
                    rows: *rows,
                    end: Instant::now(),
                })
            }
        };
        if let (true, Some(d)) = (measured, done) {
            t.run.record(d);
        }
        if self.stream == 0 && self.next == self.power_len && t.cfg.streams > 0 {
            t.run.start_throughput();
        }
    }

    /// A transaction's command: a query's number (it writes nothing; the parameters
    /// follow from the stream's seed), or a refresh step (function, pair, batch).
    pub fn encode(item: &Item, out: &mut Vec<u8>) {
        match item {
            Item::Query(q) => out.extend_from_slice(&q.number().to_le_bytes()),
            Item::Refresh(s) => {
                out.push(refresh::ty(s.rf) as u8);
                out.extend_from_slice(&s.pair.to_le_bytes());
                out.extend_from_slice(&s.batch.to_le_bytes());
            }
        }
    }

    pub fn decode(&mut self, b: &[u8]) -> api::Result<Item> {
        self.replaying = true;
        let bad = || api::Error::fatal("tpch: a logged command of the wrong form");
        let u64_at = |i: usize| -> api::Result<u64> {
            Ok(u64::from_le_bytes(
                b[i..i + 8].try_into().map_err(|_| bad())?,
            ))
        };
        match b.len() {
            4 => {
                let n = u32::from_le_bytes(b.try_into().map_err(|_| bad())?);
                Query::draw(n, self.seed)
                    .map(Item::Query)
                    .ok_or_else(|| api::Error::fatal(format!("tpch: logged query {n} is unknown")))
            }
            17 => {
                let rf = match b[0] {
                    22 => Rf::Rf1,
                    23 => Rf::Rf2,
                    _ => return Err(bad()),
                };
                Ok(Item::Refresh(Step {
                    rf,
                    pair: u64_at(1)?,
                    batch: u64_at(9)?,
                }))
            }
            _ => Err(bad()),
        }
    }
}

/// Clause 5.4.1.4: timing intervals shorter than the longest / 1000 count as that.
fn floored(secs: &[f64]) -> Vec<f64> {
    let max = secs.iter().copied().fold(0.0, f64::max);
    secs.iter().map(|&s| s.max(max / 1000.0)).collect()
}

/// The geometric mean of the (floored) times, seconds.
pub fn geometric_mean(secs: &[f64]) -> f64 {
    let f = floored(secs);
    (f.iter().map(|s| s.ln()).sum::<f64>() / f.len() as f64).exp()
}

fn rows(n: u64) -> String {
    format!("{n} row{}", if n == 1 { "" } else { "s" })
}

/// What is missing from a figure, for its label ("" when nothing is).
fn missing(ran: &[u32], rf: (bool, bool)) -> String {
    let q: Vec<u32> = (1..=22).filter(|n| !ran.contains(n)).collect();
    let mut parts = Vec::new();
    if !q.is_empty() {
        parts.push(format!("queries {} missing", list(&q)));
    }
    match rf {
        (true, true) => {}
        (false, false) => parts.push("both refresh functions missing".into()),
        (false, true) => parts.push("RF1 missing".into()),
        (true, false) => parts.push("RF2 missing".into()),
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" (partial: {})", parts.join("; "))
    }
}

/// The report's lines: the power test's steps, its geometric mean and Power@Size; the
/// throughput test's streams, Ts and Throughput@Size; QphH@Size when both ran whole.
pub fn notes(t: &Tpch) -> Vec<String> {
    let mut out = figures(t);
    if let Some(dir) = &t.cfg.answers {
        let unwritten = t.run.unwritten.lock().unwrap().clone();
        if unwritten.is_empty() {
            out.push(format!(
                "answers: the power test's, a file per query in {} (compare two sets with `oltpscope compare A B`)",
                dir.display()
            ));
        }
        out.extend(unwritten);
    }
    out
}

/// The power test's and throughput test's lines and figures.
fn figures(t: &Tpch) -> Vec<String> {
    let all = t.run.all();
    let sf = t.cfg.scale_factor;
    let power: Vec<&Timed> = all.iter().filter(|x| !x.throughput).collect();
    if power.is_empty() {
        return vec!["tpch power test: no query completed in the measured phase".into()];
    }
    let mut out = vec!["power test (stream 0):".to_string()];
    out.extend(power.iter().map(|x| {
        format!(
            "{:<4} {:>10.3} s  {}",
            x.what.to_string(),
            x.seconds,
            rows(x.rows)
        )
    }));
    let secs: Vec<f64> = power.iter().map(|x| x.seconds).collect();
    let ran: Vec<u32> = power
        .iter()
        .filter_map(|x| match x.what {
            What::Query(n) => Some(n),
            What::Rf(_) => None,
        })
        .collect();
    let has = |rf| power.iter().any(|x| x.what == What::Rf(rf));
    let (rf1, rf2) = (has(Rf::Rf1), has(Rf::Rf2));
    let gm = geometric_mean(&secs);
    let power_figure = 3600.0 * sf / gm;
    let whole_power = ran.len() == 22 && rf1 && rf2;
    out.push(format!(
        "queries run: {} of 22 ({}); refresh functions: {}; total {:.3} s; geometric mean {gm:.4} s",
        ran.len(),
        list(&ran),
        match (rf1, rf2) {
            (true, true) => "RF1 and RF2",
            (true, false) => "RF1 only",
            (false, true) => "RF2 only",
            (false, false) => "none",
        },
        secs.iter().sum::<f64>()
    ));
    out.push(format!(
        "Power@Size{}: {power_figure:.1} = 3600 x SF {sf} / geometric mean",
        missing(&ran, (rf1, rf2))
    ));
    if t.cfg.streams == 0 {
        out.push("throughput test: not run (--streams 0); no Throughput@Size or QphH@Size".into());
        return out;
    }
    let (lines, throughput) = throughput_notes(t, &all);
    out.extend(lines);
    match throughput {
        Some(tp) if whole_power => out.push(format!(
            "QphH@Size: {:.1} = sqrt(Power@Size x Throughput@Size)",
            (power_figure * tp).sqrt()
        )),
        _ => out.push("QphH@Size: not computed (a figure above is partial)".into()),
    }
    out
}

/// The throughput test's lines and its Throughput@Size when every stream ran whole.
fn throughput_notes(t: &Tpch, all: &[Timed]) -> (Vec<String>, Option<f64>) {
    let (s, sf) = (t.cfg.streams, t.cfg.scale_factor);
    let mut out = Vec::new();
    let tp: Vec<&Timed> = all.iter().filter(|x| x.throughput).collect();
    let (Some(start), Some(end)) = (t.run.throughput_start(), tp.iter().map(|x| x.end).max())
    else {
        out.push("throughput test: nothing completed".into());
        return (out, None);
    };
    let ts = end.duration_since(start).as_secs_f64();
    let q = t.cfg.queries.len();
    let pairs = if t.cfg.refresh { s } else { 0 };
    // `reproduce sensitivity` reads Ts from this line (`lab`'s `throughput_ts`).
    out.push(format!(
        "throughput test: {s} query streams and a refresh stream of {pairs} pairs; Ts {ts:.3} s (the power test's end to the last stream's end)"
    ));
    let mut whole = true;
    for stream in (1..=s).chain([0]) {
        let mine: Vec<&&Timed> = tp.iter().filter(|x| x.stream == stream).collect();
        let want = if stream == 0 { 2 * pairs } else { q };
        whole &= mine.len() == want;
        let name = if stream == 0 {
            "refresh stream".to_string()
        } else {
            format!("stream {stream}")
        };
        let last = mine.iter().map(|x| x.end).max().unwrap_or(start);
        out.push(format!(
            "{name}: {} of {want} steps, {:.3} s: {}",
            mine.len(),
            last.duration_since(start).as_secs_f64(),
            mine.iter()
                .map(|x| format!("{} {:.3}", x.what, x.seconds))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let figure = (s * q) as f64 * 3600.0 / ts * sf;
    let label = if !whole {
        " (partial: a stream did not finish)".to_string()
    } else if q < 22 || !t.cfg.refresh {
        missing(&t.cfg.queries, (t.cfg.refresh, t.cfg.refresh))
    } else {
        String::new()
    };
    out.push(format!(
        "Throughput@Size{label}: {figure:.1} = {s} x {q} x 3600 / Ts x SF {sf}"
    ));
    (out, (whole && label.is_empty()).then_some(figure))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_and_order_as_stream_zero() {
        assert_eq!(parse_queries("1,6,3"), Ok(vec![1, 6, 3]));
        assert!(parse_queries("0").unwrap_err().contains("out of range"));
        assert!(parse_queries("23").unwrap_err().contains("out of range"));
        assert!(parse_queries("x").is_err());
        assert!(parse_queries("1,1").unwrap_err().contains("twice"));
        assert_eq!(stream_order(Some(&[1, 6, 3])), vec![6, 3, 1]);
        // Every implemented query, in stream 0's order (whatever IMPLEMENTED holds).
        let all = stream_order(None);
        let at = |n: &u32| STREAM0.iter().position(|m| m == n).unwrap();
        assert_eq!(all.len(), IMPLEMENTED.len());
        assert!(IMPLEMENTED.iter().all(|n| all.contains(n)));
        assert!(all.windows(2).all(|w| at(&w[0]) < at(&w[1])), "{all:?}");
        assert_eq!(all[0], 14);
    }

    /// The kit at SF 0.1 with `streams` throughput streams.
    fn kit(streams: usize) -> Tpch {
        Tpch::new(crate::tpch::TpchConfig {
            scale_factor: 0.1,
            streams,
            ..Default::default()
        })
        .unwrap()
    }

    fn timed(what: What, seconds: f64, (stream, throughput): (usize, bool), end: Instant) -> Timed {
        Timed {
            stream,
            throughput,
            what,
            seconds,
            rows: 1,
            end,
        }
    }

    #[test]
    fn the_geometric_mean_floors_at_a_thousandth_of_the_longest() {
        assert!((geometric_mean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
        // 0.0001 counts as 10 / 1000 = 0.01: sqrt(0.01 x 10) = 0.316...
        assert!((geometric_mean(&[0.0001, 10.0]) - 0.1f64.sqrt()).abs() < 1e-12);
        let t = kit(0);
        let now = Instant::now();
        t.run.record(timed(What::Query(6), 1.0, (0, false), now));
        t.run.record(timed(What::Query(1), 4.0, (0, false), now));
        let n = notes(&t);
        assert!(n[3].contains("geometric mean 2.0000 s"), "{n:?}");
        assert!(
            n[4].starts_with("Power@Size (partial: queries 2, 3, 4, 5,"),
            "{n:?}"
        );
        assert!(n[4].contains("both refresh functions missing"), "{n:?}");
        assert!(n[4].contains(": 180.0 = "), "{n:?}");
        assert!(n[5].starts_with("throughput test: not run"), "{n:?}");
    }

    /// Every query and both refresh functions at 2 s in the power test; two streams of
    /// 22 queries and two pairs in a throughput test of Ts = 100 s: Power@Size = 3600 x
    /// 0.1 / 2 = 180, Throughput@Size = 2 x 22 x 3600 / 100 x 0.1 = 158.4, QphH@Size =
    /// sqrt(180 x 158.4).
    #[test]
    fn the_three_figures_follow_clause_5_4() {
        let t = kit(2);
        let t0 = Instant::now();
        let timed = |what, stream, throughput, end| timed(what, 2.0, (stream, throughput), end);
        for n in STREAM0 {
            t.run.record(timed(What::Query(n), 0, false, t0));
        }
        for rf in [Rf::Rf1, Rf::Rf2] {
            t.run.record(timed(What::Rf(rf), 0, false, t0));
        }
        assert!(notes(&t)
            .iter()
            .any(|l| l.starts_with("throughput test: nothing")));
        t.run.start_throughput();
        let start = t.run.throughput_start().unwrap();
        let end = start + Duration::from_secs(100);
        for (s, order) in STREAM_ORDERS.iter().enumerate().take(3).skip(1) {
            for &n in order {
                t.run.record(timed(What::Query(n), s, true, end));
            }
        }
        let n = notes(&t);
        assert!(
            n.iter().any(|l| l.starts_with("Throughput@Size (partial")),
            "{n:?}"
        );
        assert!(n.last().unwrap().contains("not computed"), "{n:?}");
        for _ in 0..2 {
            for rf in [Rf::Rf1, Rf::Rf2] {
                t.run.record(timed(What::Rf(rf), 0, true, end));
            }
        }
        let n = notes(&t);
        let line = |p: &str| n.iter().find(|l| l.starts_with(p)).unwrap().clone();
        assert!(!line("Power@Size: 180.0 = ").is_empty(), "{n:?}");
        assert!(
            !line("Throughput@Size: 158.4 = 2 x 22 x 3600").is_empty(),
            "{n:?}"
        );
        let q = format!("QphH@Size: {:.1} =", (180.0f64 * 158.4).sqrt());
        assert!(!line(&q).is_empty(), "{n:?}");
        assert!(
            !line("stream 2: 22 of 22 steps, 100.000 s").is_empty(),
            "{n:?}"
        );
    }

    #[test]
    fn streams_parse_and_the_minimum_follows_the_scale_factor() {
        assert_eq!(parse_streams("3"), Ok(Some(3)));
        assert_eq!(parse_streams("0"), Ok(Some(0)));
        assert_eq!(parse_streams("min"), Ok(None));
        assert!(parse_streams("41").unwrap_err().contains("at most 40"));
        assert!(parse_streams("x").is_err());
        assert_eq!(min_streams(0.1), 2);
        assert_eq!(min_streams(1.0), 2);
        assert_eq!(min_streams(10.0), 3);
        assert_eq!(min_streams(300.0), 6);
        assert_eq!(min_streams(10_000.0), 9);
    }

    #[test]
    fn the_throughput_streams_follow_appendix_a() {
        let t = Tpch::new(crate::tpch::TpchConfig {
            streams: 3,
            ..Default::default()
        })
        .unwrap();
        for (s, order) in STREAM_ORDERS.iter().enumerate().take(4).skip(1) {
            let mut w = stream_worker(&t, s, 1);
            let got: Vec<u32> = (0..w.len()).map(|_| w.draw().0 + 1).collect();
            assert_eq!(&got, order);
        }
        // Stream 0: RF1, stream 0's queries, RF2, then three pairs (SF 0.01: one
        // batch per function).
        let mut w = stream_worker(&t, 0, 1);
        assert_eq!(w.len(), 1 + 22 + 1 + 3 * 2);
        let types: Vec<u32> = (0..w.len()).map(|_| w.draw().0).collect();
        assert_eq!(types[0], 22);
        assert_eq!(types[23], 23);
        assert_eq!(types[24..], [22, 23, 22, 23, 22, 23]);
        // Every row of Appendix A is a permutation of the 22.
        for row in STREAM_ORDERS {
            let mut r = row.to_vec();
            r.sort_unstable();
            assert_eq!(r, IMPLEMENTED);
        }
    }
}
