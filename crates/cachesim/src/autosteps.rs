//! autoSTEPS (Harizopoulos and Ailamaki, STEPS, Section 5.2): from a trace of a workload
//! run without STEPS, choose where context switches (CTX) should happen so that the code
//! a team runs between two switches about fills the L1-I cache.
//!
//! The paper's algorithm replays one thread's instruction stream on a model of the L1-I
//! cache and tags every block with the number of the code segment that touched it last.
//! Evicting a block of the running segment is a *STEPS miss*: a team member following
//! the leader would miss on it. A CTX point is placed at the start of a *knee*: STEPS
//! misses closer than `knee_width` instructions apart, `knee_height` of them in a row
//! (or `2 x knee_height` misses since the last CTX); a new segment starts there.
//!
//! The paper inserts CTX calls at any source line. Here a switch can only happen at the
//! engines' candidate points (`rt::Point::Ctx`, which the run marks in the trace when
//! asked), so a CTX the algorithm wants is placed at the last candidate reached before
//! the knee, or, if there is none since the previous CTX, at the next one reached. A
//! candidate is named by the outermost operation it is reached in, its component and its
//! ordinal in that operation (the k-th of that component since the operation's entry).
//! Every operation entry is a CTX point anyway (the team forms there).
//!
//! Must never fail on a trace it does not understand: markers that do not pair are
//! tolerated, and an empty trace gives an empty placement.

use crate::cache::{SetAssoc, EMPTY};
use crate::config::LevelConfig;
use crate::trace::{marker, Record};
use rustc_hash::FxHashMap;
use std::collections::{HashMap, HashSet};

/// A candidate point: (operation code, component index, ordinal from 1).
pub type PointKey = (u32, u8, u16);

/// Knee and cache parameters.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub l1i: LevelConfig,
    /// W: STEPS misses at most this many instructions apart belong to one knee.
    pub knee_width: u64,
    /// H: misses in a knee that place a CTX point.
    pub knee_height: u32,
    /// Transactions (TXN_END markers of the thread) replayed to warm the cache before
    /// anything is counted.
    pub warmup_txns: u64,
}

/// One record of a worker thread's stream, kept for several replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Fetch { addr: u64, ninstr: u8, len: u8 },
    OpBegin(u32),
    OpEnd(u32),
    Ctx(u8),
    TxnEnd,
}

/// Collects the streams of the traced threads (each modelled on its own core: threads
/// that never enter an operation are dropped at the end).
#[derive(Default)]
pub struct Collector {
    threads: FxHashMap<u32, Vec<Ev>>,
    cur: u32,
    /// Text mappings seen (for symbolizing where CTX points were wanted).
    pub maps: Vec<(u64, u64, i64, std::path::PathBuf)>,
}

impl Collector {
    pub fn new() -> Collector {
        Collector::default()
    }

    pub fn record(&mut self, r: Record) {
        let ev = match r {
            Record::IFetch { addr, ninstr, len } => Ev::Fetch { addr, ninstr, len },
            Record::Marker { code, arg } => match code {
                marker::OP_BEGIN => Ev::OpBegin(arg),
                marker::OP_END => Ev::OpEnd(arg),
                marker::CTX_POINT => Ev::Ctx(arg.min(u8::MAX as u32) as u8),
                marker::TXN_END => Ev::TxnEnd,
                _ => return,
            },
            Record::Thread { tid } => {
                self.cur = tid;
                return;
            }
            Record::Map {
                avma,
                size,
                bias,
                path,
            } => {
                self.maps.push((avma, size, bias, path));
                return;
            }
            Record::Load { .. }
            | Record::Store { .. }
            | Record::Modify { .. }
            | Record::End { .. } => return,
        };
        self.threads.entry(self.cur).or_default().push(ev);
    }

    /// The worker threads' streams (those with at least one operation), by thread id.
    fn workers(&self) -> Vec<(u32, &[Ev])> {
        let mut v: Vec<(u32, &[Ev])> = self
            .threads
            .iter()
            .filter(|(_, evs)| evs.iter().any(|e| matches!(e, Ev::OpBegin(_))))
            .map(|(t, evs)| (*t, evs.as_slice()))
            .collect();
        v.sort_by_key(|(t, _)| *t);
        v
    }
}

/// How a replay decides where switches happen.
#[derive(Clone, Copy)]
enum Mode<'a> {
    /// autoSTEPS: place them by the knee rule.
    Place,
    /// At exactly these candidate points (and every operation entry).
    Fixed(&'a HashSet<PointKey>),
    /// At every candidate point.
    All,
}

/// What one replay counted, after the warm-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub txns: u64,
    pub ops: u64,
    pub instructions: u64,
    /// L1-I misses of the thread running alone (the team leader's).
    pub misses: u64,
    /// Misses a team member following the leader would take (evictions of blocks of the
    /// running segment).
    pub steps_misses: u64,
    /// CTX switches inside operations (operation entries not counted).
    pub ctx: u64,
    /// Candidate points reached inside operations.
    pub candidates: u64,
}

#[derive(Default)]
struct PlaceOut {
    chosen: HashMap<PointKey, u64>,
    reached: HashMap<PointKey, u64>,
    /// Where the knee rule wanted a CTX: instruction address, outermost operation.
    wanted: HashMap<(u64, u32), u64>,
    /// Wanted CTX points with no candidate between the previous CTX and the knee.
    deferred: u64,
}

struct Reach {
    pos: u64,
    log_at: usize,
    key: PointKey,
}

fn replay(evs: &[Ev], p: &Params, mode: Mode, out: &mut PlaceOut) -> Counts {
    let mut r = Replay::new(p, mode, out);
    for &ev in evs {
        match ev {
            Ev::Fetch { addr, ninstr, len } => r.fetch(addr, ninstr, len),
            Ev::OpBegin(op) => r.op_begin(op),
            Ev::OpEnd(op) => {
                if let Some(i) = r.stack.iter().rposition(|&o| o == op) {
                    r.stack.truncate(i);
                }
            }
            Ev::Ctx(comp) => r.ctx(comp),
            Ev::TxnEnd => {
                r.txns_seen += 1;
                if r.counting {
                    r.c.txns += 1;
                }
                if !r.counting && r.txns_seen >= p.warmup_txns {
                    r.counting = true;
                }
            }
        }
    }
    r.c
}

/// The state of one replay of a thread's stream.
struct Replay<'m, 'o> {
    mode: Mode<'m>,
    out: &'o mut PlaceOut,
    shift: u32,
    cache: SetAssoc,
    /// Segment of each cached line (0: touched outside any operation).
    tag: FxHashMap<u64, u64>,
    seg: u64,
    c: Counts,
    txns_seen: u64,
    counting: bool,
    width: u64,
    height: u32,
    // Per operation instance.
    stack: Vec<u32>,
    pos: u64,
    ordinals: [u16; 256],
    log: Vec<u64>,
    reaches: Vec<Reach>,
    pending: bool,
    knee_h: u32,
    knee_start: (u64, u64, usize),
    last_miss: Option<u64>,
    since_ctx: u32,
}

impl<'m, 'o> Replay<'m, 'o> {
    fn new(p: &Params, mode: Mode<'m>, out: &'o mut PlaceOut) -> Self {
        Replay {
            mode,
            out,
            shift: p.l1i.line_bytes.trailing_zeros(),
            cache: SetAssoc::new(p.l1i.sets(), p.l1i.ways),
            tag: FxHashMap::default(),
            seg: 0,
            c: Counts::default(),
            txns_seen: 0,
            counting: p.warmup_txns == 0,
            width: p.knee_width,
            height: p.knee_height.max(1),
            stack: Vec::new(),
            pos: 0,
            ordinals: [0; 256],
            log: Vec::new(),
            reaches: Vec::new(),
            pending: false,
            knee_h: 0,
            knee_start: (0, 0, 0),
            last_miss: None,
            since_ctx: 0,
        }
    }

    fn fetch(&mut self, addr: u64, ninstr: u8, len: u8) {
        let in_op = !self.stack.is_empty();
        if in_op && self.counting {
            self.c.instructions += ninstr as u64;
        }
        let first = addr >> self.shift;
        let last = (addr + len.max(1) as u64 - 1) >> self.shift;
        for line in first..=last {
            self.line(line, addr, in_op);
        }
        if in_op {
            self.pos += ninstr as u64;
        }
    }

    /// One line of a fetch.
    fn line(&mut self, line: u64, addr: u64, in_op: bool) {
        let miss = self.cache.access(line);
        let mut steps_miss = false;
        if let Some(victim) = miss {
            if victim != EMPTY && self.tag.remove(&victim) == Some(self.seg) && in_op {
                steps_miss = true;
            }
        }
        self.tag.insert(line, if in_op { self.seg } else { 0 });
        if !in_op {
            return;
        }
        if matches!(self.mode, Mode::Place) {
            self.log.push(line);
        }
        if self.counting && miss.is_some() {
            self.c.misses += 1;
        }
        if !steps_miss {
            return;
        }
        if self.counting {
            self.c.steps_misses += 1;
        }
        if !matches!(self.mode, Mode::Place) {
            return;
        }
        self.knee(addr);
    }

    /// A team member's miss under autoSTEPS: a CTX at the knee's start once the knee
    /// rule fires.
    fn knee(&mut self, addr: u64) {
        self.since_ctx += 1;
        if self.last_miss.is_some_and(|l| self.pos - l <= self.width) {
            self.knee_h += 1;
        } else {
            self.knee_h = 1;
            self.knee_start = (self.pos, addr, self.log.len() - 1);
        }
        self.last_miss = Some(self.pos);
        if self.pending || (self.knee_h < self.height && self.since_ctx < 2 * self.height) {
            return;
        }
        // A CTX is wanted at the knee's start.
        let op = self.stack[0];
        let counting = self.counting;
        if counting {
            *self.out.wanted.entry((self.knee_start.1, op)).or_default() += 1;
        }
        let knee_pos = self.knee_start.0;
        match self.reaches.iter().rev().find(|r| r.pos <= knee_pos) {
            Some(r) => {
                if counting {
                    *self.out.chosen.entry(r.key).or_default() += 1;
                    self.c.ctx += 1;
                }
                self.seg += 1;
                // What ran since the point is the new segment's.
                for l in &self.log[r.log_at..] {
                    if let Some(t) = self.tag.get_mut(l) {
                        *t = self.seg;
                    }
                }
                self.log.clear();
                self.reaches.clear();
                self.knee_h = 0;
                self.since_ctx = 0;
                self.last_miss = None;
            }
            None => {
                self.pending = true;
                if counting {
                    self.out.deferred += 1;
                }
            }
        }
    }

    fn op_begin(&mut self, op: u32) {
        if self.stack.is_empty() {
            // The team forms at every operation entry: a new segment.
            self.seg += 1;
            if self.counting {
                self.c.ops += 1;
            }
            self.pos = 0;
            self.ordinals = [0; 256];
            self.log.clear();
            self.reaches.clear();
            self.pending = false;
            self.knee_h = 0;
            self.since_ctx = 0;
            self.last_miss = None;
        }
        self.stack.push(op);
    }

    /// A candidate point reached: a switch there or not, by the mode.
    fn ctx(&mut self, comp: u8) {
        let Some(&op) = self.stack.first() else {
            return;
        };
        let o = &mut self.ordinals[comp as usize];
        *o = o.saturating_add(1);
        let key = (op, comp, *o);
        let counting = self.counting;
        if counting {
            self.c.candidates += 1;
        }
        let switch = match self.mode {
            Mode::All => true,
            Mode::Fixed(set) => set.contains(&key),
            Mode::Place => {
                if counting {
                    *self.out.reached.entry(key).or_default() += 1;
                }
                if self.pending {
                    if counting {
                        *self.out.chosen.entry(key).or_default() += 1;
                    }
                    self.pending = false;
                    self.knee_h = 0;
                    self.since_ctx = 0;
                    self.last_miss = None;
                    self.log.clear();
                    self.reaches.clear();
                    true
                } else {
                    self.reaches.push(Reach {
                        pos: self.pos,
                        log_at: self.log.len(),
                        key,
                    });
                    false
                }
            }
        };
        if switch {
            self.seg += 1;
            if counting {
                self.c.ctx += 1;
            }
        }
    }
}

/// One candidate point's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PointRow {
    pub key: PointKey,
    /// Times the knee rule put a CTX here.
    pub chosen: u64,
    /// Times it was reached.
    pub reached: u64,
    /// Chosen at least half the times it was reached: it switches.
    pub enabled: bool,
}

/// Where the rule wanted a CTX (by the function holding the knee's first instruction).
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub op: u32,
    pub function: String,
    pub count: u64,
}

/// A configuration's replay: the STEPS misses a following team member takes with the
/// switches it makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Eval {
    pub name: &'static str,
    pub counts: Counts,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub points: Vec<PointRow>,
    pub wanted: Vec<Wanted>,
    /// Knees with no candidate point before them since the last CTX (placed late).
    pub deferred: u64,
    /// `op entries only`, `all candidates` (the hand-chosen set), `autoSTEPS`, and the
    /// knee rule unconstrained by candidates (`place`).
    pub evals: Vec<Eval>,
    /// Worker threads replayed.
    pub threads: usize,
}

impl Placement {
    /// The points that switch.
    pub fn enabled(&self) -> HashSet<PointKey> {
        self.points
            .iter()
            .filter(|r| r.enabled)
            .map(|r| r.key)
            .collect()
    }
}

/// Replays every worker thread: the knee rule, then the three fixed configurations.
/// `symbolize` names the function of an instruction address.
pub fn place(
    col: &Collector,
    p: &Params,
    mut symbolize: impl FnMut(u64) -> Option<String>,
) -> Placement {
    let workers = col.workers();
    let mut out = PlaceOut::default();
    let mut placed = Counts::default();
    for (_, evs) in &workers {
        add(&mut placed, &replay(evs, p, Mode::Place, &mut out));
    }
    let mut points: Vec<PointRow> = out
        .reached
        .iter()
        .map(|(&key, &reached)| {
            let chosen = out.chosen.get(&key).copied().unwrap_or(0);
            PointRow {
                key,
                chosen,
                reached,
                enabled: chosen > 0 && 2 * chosen >= reached,
            }
        })
        .collect();
    points.sort_by_key(|r| r.key);
    let enabled: HashSet<PointKey> = points.iter().filter(|r| r.enabled).map(|r| r.key).collect();
    let none = HashSet::new();
    let mut evals = Vec::new();
    for (name, mode) in [
        ("operation entries only", Mode::Fixed(&none)),
        ("all candidate points", Mode::All),
        ("autoSTEPS points", Mode::Fixed(&enabled)),
    ] {
        let mut sum = Counts::default();
        for (_, evs) in &workers {
            add(&mut sum, &replay(evs, p, mode, &mut PlaceOut::default()));
        }
        evals.push(Eval { name, counts: sum });
    }
    evals.push(Eval {
        name: "knee rule at any instruction",
        counts: placed,
    });
    let mut by_fn: HashMap<(u32, String), u64> = HashMap::new();
    for (&(addr, op), &n) in &out.wanted {
        let f = symbolize(addr).unwrap_or_else(|| format!("{addr:#x}"));
        *by_fn.entry((op, f)).or_default() += n;
    }
    let mut wanted: Vec<Wanted> = by_fn
        .into_iter()
        .map(|((op, function), count)| Wanted {
            op,
            function,
            count,
        })
        .collect();
    wanted.sort_by(|a, b| b.count.cmp(&a.count).then(a.function.cmp(&b.function)));
    Placement {
        points,
        wanted,
        deferred: out.deferred,
        evals,
        threads: workers.len(),
    }
}

fn add(a: &mut Counts, b: &Counts) {
    a.txns += b.txns;
    a.ops += b.ops;
    a.instructions += b.instructions;
    a.misses += b.misses;
    a.steps_misses += b.steps_misses;
    a.ctx += b.ctx;
    a.candidates += b.candidates;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct-mapped 4-line cache of 64-byte lines.
    fn params(width: u64, height: u32) -> Params {
        Params {
            l1i: LevelConfig::new(256, 1, 64, 1),
            knee_width: width,
            knee_height: height,
            warmup_txns: 0,
        }
    }

    fn fetch(line: u64) -> Record {
        Record::IFetch {
            addr: line * 64,
            ninstr: 1,
            len: 1,
        }
    }

    fn mark(code: u8, arg: u32) -> Record {
        Record::Marker { code, arg }
    }

    /// One transaction of one operation (code 4) that runs `lines` with a candidate
    /// point (component 0) before each group of `group` lines.
    fn op_stream(lines: &[u64], group: usize) -> Vec<Record> {
        let mut v = vec![Record::Thread { tid: 1 }, mark(marker::OP_BEGIN, 4)];
        for (i, &l) in lines.iter().enumerate() {
            if i % group == 0 {
                v.push(mark(marker::CTX_POINT, 0));
            }
            v.push(fetch(l));
        }
        v.push(mark(marker::OP_END, 4));
        v.push(mark(marker::TXN_END, 0));
        v
    }

    fn collect(recs: Vec<Record>) -> Collector {
        let mut c = Collector::new();
        for r in recs {
            c.record(r);
        }
        c
    }

    #[test]
    fn code_that_fits_needs_no_switch() {
        // Four lines in a four-line cache, twice over: nothing of the segment is evicted.
        let mut recs = op_stream(&[0, 1, 2, 3], 2);
        recs.extend(op_stream(&[0, 1, 2, 3], 2).into_iter().skip(1));
        let pl = place(&collect(recs), &params(100, 1), |_| None);
        assert!(pl.points.iter().all(|p| !p.enabled), "{pl:?}");
        let only_entries = &pl.evals[0].counts;
        assert_eq!(only_entries.steps_misses, 0);
        assert_eq!(only_entries.misses, 4, "cold misses of the first pass only");
        assert_eq!(only_entries.txns, 2);
        assert_eq!(only_entries.ops, 2);
    }

    #[test]
    fn code_twice_the_cache_gets_a_switch_in_the_middle() {
        // Lines 0..8 in a 4-line direct-mapped cache: 4..8 evict 0..4, the segment's own
        // lines: STEPS misses from line 4 on. A candidate before every 4 lines.
        let lines: Vec<u64> = (0..8).collect();
        let mut recs = op_stream(&lines, 4);
        for _ in 0..3 {
            recs.extend(op_stream(&lines, 4).into_iter().skip(1));
        }
        let pl = place(&collect(recs), &params(100, 2), |_| Some("f".into()));
        // The second candidate (ordinal 2, before line 4) is the place.
        let second = pl.points.iter().find(|p| p.key == (4, 0, 2)).unwrap();
        assert!(second.enabled, "{pl:?}");
        let first = pl.points.iter().find(|p| p.key == (4, 0, 1)).unwrap();
        assert!(!first.enabled, "{pl:?}");
        let [entries, all, auto, _] = &pl.evals[..] else {
            panic!("four evaluations")
        };
        // Without the switch a follower misses on 4 of 8 lines per pass; with it, none.
        assert_eq!(entries.counts.steps_misses, 16);
        assert_eq!(auto.counts.steps_misses, 0);
        assert_eq!(auto.counts.ctx, 4, "one switch per operation");
        assert_eq!(all.counts.steps_misses, 0);
        assert_eq!(all.counts.ctx, 8, "every candidate switches");
        assert!(pl.wanted.iter().any(|w| w.function == "f" && w.op == 4));
    }

    #[test]
    fn a_knee_without_a_candidate_before_it_switches_at_the_next_one() {
        // Candidate only after line 6: the knee (from line 4) has none before it since
        // the entry, so the switch is deferred to it.
        let mut recs = vec![Record::Thread { tid: 1 }];
        for _ in 0..2 {
            recs.push(mark(marker::OP_BEGIN, 6));
            for l in 0..6 {
                recs.push(fetch(l));
            }
            recs.push(mark(marker::CTX_POINT, 2));
            for l in 6..8 {
                recs.push(fetch(l));
            }
            recs.push(mark(marker::OP_END, 6));
            recs.push(mark(marker::TXN_END, 0));
        }
        let pl = place(&collect(recs), &params(100, 2), |_| None);
        assert!(pl.deferred > 0);
        assert_eq!(pl.points.len(), 1);
        assert!(
            pl.points[0].enabled && pl.points[0].key == (6, 2, 1),
            "{pl:?}"
        );
    }

    #[test]
    fn background_threads_and_warmup_are_not_counted() {
        let lines: Vec<u64> = (0..8).collect();
        let mut recs = op_stream(&lines, 4);
        // A background thread's code, on its own core.
        recs.push(Record::Thread { tid: 2 });
        for l in 100..200 {
            recs.push(fetch(l));
        }
        recs.extend(op_stream(&lines, 4));
        let mut p = params(100, 2);
        p.warmup_txns = 1;
        let pl = place(&collect(recs), &p, |_| None);
        assert_eq!(pl.threads, 1);
        let c = &pl.evals[0].counts;
        assert_eq!(c.txns, 1);
        assert_eq!(c.ops, 1);
        assert_eq!(c.instructions, 8);
        // Warm: the second pass misses on every line (8 lines, 4-line cache).
        assert_eq!(c.misses, 8);
    }
}
