//! The simulator: feeds trace records through L1-I / L1-D -> [L2] -> [LLC] -> memory,
//! with the L1-I sweep alongside, and charges every access and miss to the current
//! (thread, operation) and to the component of the instruction that made it.
//!
//! Owns the hierarchy wiring (who is asked on a miss, back-invalidation of an inclusive
//! last level), attribution state and warm-up. Must never allocate per access: the
//! attribution matrix is sized at start-up and the address -> component cache only grows
//! on a new instruction-run address.

use crate::cache::{Class, Level, LevelStats, Outcome, StreamRef, StreamShadow, D, EMPTY, I};
use crate::config::{format_size, Config, LevelConfig};
use crate::settle::{self, Batch};
use crate::symbols::{ComponentTable, Symbolizer};
use crate::trace::{self, marker, Reader, Record};
use rustc_hash::FxHashMap;
use std::io::Read;

/// Attribution slots: 0 = outside any operation, 1..=8 = probe::Op, 9 = unknown code.
pub const OP_SLOTS: usize = 10;
/// Transaction-type slots of the per-type table: 0 = outside a transaction (or a trace
/// without TXN_BEGIN types), type t in slot t + 1, the last slot every type above.
pub const TYPE_SLOTS: usize = 64;
pub const OP_UNKNOWN: u8 = 9;
/// Level slots in attribution cells.
pub const L1I: usize = 0;
pub const L1D: usize = 1;
pub const L2: usize = 2;
pub const LLC: usize = 3;

/// Role slots: 0 = no role declared (counted with the workers), 1..=7 = probe::Role,
/// 8 = an unknown role code (counted as background).
pub const ROLE_SLOTS: usize = 9;
pub const ROLE_UNKNOWN: usize = 8;

/// Cells of `Counts::levels`: the B+tree's code outside any level (before a descent's
/// first BTREE_LEVEL marker in an operation; 0, so a context's default state is
/// outside), what is not the B+tree's (another component, background threads), then one
/// cell per level seen (`Simulator::level_args`).
pub const LEVEL_OUTSIDE: usize = 0;
pub const LEVEL_NONE: usize = 1;
pub(crate) const LEVEL_FIRST: usize = 2;

/// Automatic warm-up: windows of transactions, the first `AUTO_FIRST_WINDOW` long,
/// each twice the previous (so a slow decay still shows as a change); warm-up ends at
/// the end of a window whose misses per 1000 instructions (MPKI) at every level fell by
/// at most `AUTO_FALL` and rose by at most `AUTO_RISE` (relative) against the previous
/// window's, or changed by at most `AUTO_ABS` MPKI. Falling rates mean cold caches
/// still filling (a data set touched for the first time falls slowly: a small
/// tolerance there); rising or falling noise between windows of a steady mix is larger.
pub const AUTO_FIRST_WINDOW: u64 = 100;
pub const AUTO_FALL: f64 = 0.02;
pub const AUTO_RISE: f64 = 0.10;
pub const AUTO_ABS: f64 = 0.05;

/// Whether a level's MPKI `b` in a window is steady against `a` in the previous one.
pub fn steady(a: f64, b: f64) -> bool {
    (a - b).abs() <= AUTO_ABS || (b >= a * (1.0 - AUTO_FALL) && b <= a * (1.0 + AUTO_RISE))
}

/// How warm-up ended (for the report).
#[derive(Debug, Clone, Default)]
pub(crate) struct WarmupLog {
    /// (transactions at the window's end, MPKI per level: L1-I, L1-D, L2, LLC present).
    pub windows: Vec<(u64, Vec<f64>)>,
    /// Why warm-up ended (None while warming up).
    pub decided: Option<String>,
    /// Instructions (of the workers) during warm-up.
    pub instructions: u64,
}

/// The settling rule's state (`config.settle`): the watched levels' names, the batches
/// measured so far and the counts at the current batch's start.
#[derive(Debug, Clone, Default)]
pub(crate) struct SettleLog {
    /// L1-I, L1-D, the unified levels, then the L1-I and LLC sweep points.
    pub names: Vec<String>,
    pub batches: Vec<Batch>,
    /// (transactions, worker instructions, misses per watched level) at the batch's start.
    start: (u64, u64, Vec<u64>),
    /// Measured transactions when every figure had settled.
    pub settled_at: Option<u64>,
}

/// State of a thread (or of one of its coroutines' contexts) kept while another runs.
#[derive(Default)]
struct ThreadState {
    stack: Vec<u8>,
    caller_comp: u16,
    /// Type slot of the transaction in progress (0: none).
    txn_type: usize,
    /// Its B+tree level cell (`LEVEL_OUTSIDE`: none).
    level: usize,
}

/// Key of a parked [`ThreadState`]: the thread id and its context (0: the thread's own
/// stack, k: its coroutine k - 1, from the CONTEXT marker).
fn ctx_key(tid: u32, ctx: u32) -> u64 {
    (tid as u64) << 32 | ctx as u64
}

/// What a background thread swaps in: with its own core, the other core's private
/// levels; the statistics of every level both sides share.
struct Parked {
    l1: Option<[Level; 2]>,
    mid: Vec<Level>,
    stats: Vec<LevelStats>,
}

/// Counters for one (operation, component) pair.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub instructions: u64,
    /// [level slot][I or D]
    pub accesses: [[u64; 2]; 4],
    pub misses: [[u64; 2]; 4],
}

impl Cell {
    pub fn add(&mut self, o: &Cell) {
        self.instructions += o.instructions;
        for l in 0..4 {
            for k in 0..2 {
                self.accesses[l][k] += o.accesses[l][k];
                self.misses[l][k] += o.misses[l][k];
            }
        }
    }
}

/// Unified level below the L1s, with its attribution slot.
struct Unified {
    level: Level,
    slot: usize,
}

/// Counters that the warm-up resets.
#[derive(Default, Clone)]
pub(crate) struct Counts {
    pub instructions: u64,
    /// Every TXN_END: attempts, an aborted attempt included.
    pub transactions: u64,
    /// TXN_ENDs without `probe::TXN_ABORTED`.
    pub committed: u64,
    pub cells: Vec<Cell>,
    /// Per function id.
    pub func: Vec<FuncCell>,
    /// The workers' counters per (transaction type slot, component): `TYPE_SLOTS x
    /// ncomp`, then one cell that background threads' counts go to (not reported).
    pub types: Vec<FuncCell>,
    /// TXN_ENDs per transaction type slot.
    pub type_txns: Vec<u64>,
    /// Instructions per role slot (every thread; `instructions` is the workers').
    pub role_instructions: [u64; ROLE_SLOTS],
    /// Worker instructions charged to the caller's component (caller attribution).
    pub inherited_instructions: u64,
    /// Workers' switches into a coroutine context (CONTEXT markers naming a coroutine
    /// other than the running one's).
    pub coroutine_switches: u64,
    /// The B+tree component's counters per level cell (`LEVEL_NONE` collects the rest's).
    pub levels: Vec<FuncCell>,
    /// The workers' BTREE_LEVEL markers per level cell: the nodes visited.
    pub level_visits: Vec<u64>,
}

/// Counters of one function (misses only: cheaper than accesses, enough for ranking).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FuncCell {
    pub instructions: u64,
    pub misses: [[u64; 2]; 4],
}

impl FuncCell {
    pub fn add(&mut self, o: &FuncCell) {
        self.instructions += o.instructions;
        for l in 0..4 {
            for k in 0..2 {
                self.misses[l][k] += o.misses[l][k];
            }
        }
    }
}

pub struct Simulator {
    pub(crate) config: Config,
    pub(crate) l1: [Level; 2],
    unified: Vec<Unified>,
    pub(crate) sweep: Vec<Level>,
    pub(crate) sweep_llc: Vec<Level>,
    /// The 3C shadow shared by the workers' L1-I and the sweep points of its line size,
    /// and the one shared by the last level and its sweep's (see `Streams`).
    i_stream: Option<StreamShadow>,
    llc_stream: Option<StreamShadow>,
    /// Per LLC sweep point: it has the last level's geometry, so it holds what the last
    /// level holds and is not simulated: its statistics are the last level's.
    sweep_llc_mirror: Vec<bool>,
    pub(crate) symbols: Symbolizer,
    ncomp: usize,
    pub(crate) counts: Counts,
    /// Every instruction seen, warm-up included (checked against END's total).
    pub(crate) instructions_all: u64,
    pub(crate) txns_all: u64,
    pub(crate) warmed_up: bool,
    pub(crate) tracer_total: Option<u64>,
    pub(crate) anomalies: Vec<String>,
    unmatched_op_end: u64,
    /// Operation stacks (innermost last), caller components and transaction types of
    /// every thread and coroutine context not running, by [`ctx_key`]; `stack`,
    /// `caller_comp` and `cur_type` are the running context's.
    threads: FxHashMap<u64, ThreadState>,
    tid: u32,
    /// The running thread's context, and the context each other thread was in when it
    /// last ran (absent: 0).
    ctx: u32,
    thread_ctx: FxHashMap<u32, u32>,
    stack: Vec<u8>,
    caller_comp: u16,
    cur_inherited: bool,
    /// Declared role per thread id (absent: none).
    roles: FxHashMap<u32, u32>,
    /// Role slot of the running thread, and whether it is a background thread (then
    /// `parked` holds the workers' side).
    cur_role: usize,
    bg: bool,
    parked: Parked,
    /// Distinct (thread, role slot) pairs seen.
    pub(crate) role_threads: Vec<(u32, usize)>,
    pub(crate) warmup_log: WarmupLog,
    /// Warm-up window being filled: transactions in it so far, its length, and the
    /// (instructions, misses per level) at its start.
    window: (u64, u64, u64, Vec<u64>),
    /// `measure_txns` reached or the figures settled: `run` returns.
    pub(crate) done: bool,
    pub(crate) settle_log: SettleLog,
    cur_op: usize,
    cur_comp: usize,
    cur_cell: usize,
    /// The running thread's transaction type slot, and its cell in `counts.types`.
    cur_type: usize,
    cur_type_cell: usize,
    /// The component named `btree` (None: the map has none).
    btree_comp: Option<usize>,
    /// The level cell of the node the running context's descent reached last
    /// (`LEVEL_OUTSIDE`: none in this operation), and the cell its accesses count in
    /// (`LEVEL_NONE` unless its code is the B+tree's).
    cur_level: usize,
    cur_level_cell: usize,
    /// BTREE_LEVEL argument of each level cell from `LEVEL_FIRST` on, and back.
    pub(crate) level_args: Vec<u32>,
    level_ids: FxHashMap<u32, usize>,
    /// Run address -> (component, function id).
    comp_cache: FxHashMap<u64, (u16, u32)>,
    /// Direct-mapped memo in front of `comp_cache` (a hash-map probe per instruction run
    /// was a third of the simulator's time): (run address, component, function id).
    comp_memo: Box<[(u64, u16, u32)]>,
    cur_func: usize,
    last_iaddr: u64,
    /// Function id -> (demangled name, component); id 0 is "(unknown)".
    pub(crate) functions: Vec<(String, u16)>,
    function_ids: FxHashMap<String, u32>,
    /// Some L1-I sweep point has a 3C shadow of its own (another line size than the
    /// L1-I's stream): `ifetch` walks the sweep a second time only then.
    sweep_own_lines: bool,
    /// The fast paths of an instruction fetch within the line fetched last (`ifetch`)
    /// and of a data access to the L1-D's last line (`data`); off only in tests, to
    /// compare them with the general path.
    repeat_fast_path: bool,
}

/// The configured L2 and LLC, the shared levels below the L1s; the last one's 3C
/// shadow is `llc_stream` if there is one.
fn unified_of(config: &Config, llc_stream: Option<&StreamShadow>) -> Vec<Unified> {
    let (three_c, plru) = (config.three_c, config.tree_plru);
    let present: Vec<(LevelConfig, usize)> = [(config.l2, L2), (config.llc, LLC)]
        .into_iter()
        .filter_map(|(c, slot)| c.map(|c| (c, slot)))
        .collect();
    let n = present.len();
    (present.into_iter().enumerate())
        .map(|(j, (c, slot))| Unified {
            level: match llc_stream {
                Some(st) if j == n - 1 => Level::in_stream(c, plru, st),
                _ => Level::with_replacement(c, three_c, plru),
            },
            slot,
        })
        .collect()
}

/// Which levels share a 3C shadow, one per stream of lines (`cache::StreamShadow`): the
/// workers' L1-I with the L1-I sweep points of its line size (all see the instruction
/// stream), the last level with the LLC sweep points of its line size (all see the
/// misses of the level above it). Each shadow answers every capacity of its stream in
/// one LRU stack; the classes stay those of a shadow per level. Not with
/// `cachegrind_compat` (its straddling accesses reference lines level by level).
struct Streams {
    i: Option<StreamShadow>,
    llc: Option<StreamShadow>,
    /// Per LLC sweep point: whether it has the last level's geometry (`sweep_llc_mirror`).
    mirror: Vec<bool>,
}

impl Streams {
    /// `share`: false gives every level a shadow of its own and simulates every sweep
    /// point (what the shared ones must equal: `compare_tests`).
    fn of(config: &Config, share: bool) -> Streams {
        let last = config.llc.or(config.l2);
        let same = |a: &LevelConfig, b: &LevelConfig| {
            (a.size_bytes, a.ways, a.line_bytes) == (b.size_bytes, b.ways, b.line_bytes)
        };
        let mirror: Vec<bool> = (config.sweep_llc.iter())
            .map(|c| share && last.is_some_and(|l| same(c, &l)))
            .collect();
        if !share || !config.three_c || config.cachegrind_compat {
            return Streams {
                i: None,
                llc: None,
                mirror,
            };
        }
        // A shadow for the levels of one line size, if more than one level shares it.
        let shared = |first: LevelConfig, others: Vec<LevelConfig>| {
            let mut levels = vec![first];
            levels.extend(
                others
                    .into_iter()
                    .filter(|c| c.line_bytes == first.line_bytes),
            );
            (levels.len() > 1).then(|| StreamShadow::new(&levels))
        };
        let llc_points = (config.sweep_llc.iter().zip(&mirror))
            .filter(|&(_, &m)| !m)
            .map(|(c, _)| *c)
            .collect();
        Streams {
            i: shared(config.l1i, config.sweep_l1i.clone()),
            llc: last.and_then(|l| shared(l, llc_points)),
            mirror,
        }
    }

    /// A sweep point's level: in `stream` if it has the stream's line size, else with a
    /// shadow of its own; with 3C off if it is a mirror (never referenced).
    fn level(
        stream: Option<&StreamShadow>,
        c: LevelConfig,
        config: &Config,
        mirror: bool,
    ) -> Level {
        let plru = config.tree_plru;
        match stream {
            Some(st) if !mirror && c.line_bytes.trailing_zeros() == st.line_shift => {
                Level::in_stream(c, plru, st)
            }
            _ => Level::with_replacement(c, config.three_c && !mirror, plru),
        }
    }
}

/// What a background thread swaps in: the other core's private levels if it has a core
/// of its own (its shared levels' statistics are sized once the simulator exists).
fn parked_of(config: &Config, unified: &[Unified]) -> Parked {
    let (three_c, plru) = (config.three_c, config.tree_plru);
    let nu = unified.len();
    let own = config.background_own_core;
    Parked {
        l1: own.then(|| {
            [
                Level::with_replacement(config.l1i, three_c, plru),
                Level::with_replacement(config.l1d, three_c, plru),
            ]
        }),
        mid: if own {
            unified[..nu.saturating_sub(1)]
                .iter()
                .map(|u| Level::with_replacement(u.level.config, three_c, plru))
                .collect()
        } else {
            Vec::new()
        },
        stats: Vec::new(),
    }
}

impl Simulator {
    /// Validates the configuration and allocates every cache (the only large allocation).
    pub fn new(config: Config) -> Result<Simulator, String> {
        Simulator::build(config, true)
    }

    /// `new`; `share`: the levels of one stream share their 3C shadow (`Streams`).
    fn build(config: Config, share: bool) -> Result<Simulator, String> {
        config.validate()?;
        let three_c = config.three_c;
        let plru = config.tree_plru;
        let table = ComponentTable::new(&config.component_rules());
        let ncomp = table.names().len();
        let btree_comp = table.names().iter().position(|n| n == "btree");
        let streams = Streams::of(&config, share);
        let unified = unified_of(&config, streams.llc.as_ref());
        let parked = parked_of(&config, &unified);
        let i_stream = streams.i.as_ref();
        let mut sim = Simulator {
            l1: [
                match i_stream {
                    Some(st) => Level::in_stream(config.l1i, plru, st),
                    None => Level::with_replacement(config.l1i, three_c, plru),
                },
                Level::with_replacement(config.l1d, three_c, plru),
            ],
            unified,
            sweep: (config.sweep_l1i.iter())
                .map(|c| Streams::level(i_stream, *c, &config, false))
                .collect(),
            sweep_llc: (config.sweep_llc.iter().zip(&streams.mirror))
                .map(|(c, &m)| Streams::level(streams.llc.as_ref(), *c, &config, m))
                .collect(),
            i_stream: streams.i,
            llc_stream: streams.llc,
            sweep_llc_mirror: streams.mirror,
            symbols: Symbolizer::new(table),
            ncomp,
            counts: Counts {
                instructions: 0,
                transactions: 0,
                committed: 0,
                cells: vec![Cell::default(); OP_SLOTS * ncomp + ROLE_SLOTS],
                // Id 1 collects background threads' code (not listed).
                func: vec![FuncCell::default(); 2],
                types: vec![FuncCell::default(); TYPE_SLOTS * ncomp + 1],
                type_txns: vec![0; TYPE_SLOTS],
                role_instructions: [0; ROLE_SLOTS],
                inherited_instructions: 0,
                coroutine_switches: 0,
                levels: vec![FuncCell::default(); LEVEL_FIRST],
                level_visits: vec![0; LEVEL_FIRST],
            },
            instructions_all: 0,
            txns_all: 0,
            warmed_up: config.warmup_txns == 0,
            tracer_total: None,
            anomalies: Vec::new(),
            unmatched_op_end: 0,
            threads: FxHashMap::default(),
            ctx: 0,
            thread_ctx: FxHashMap::default(),
            tid: 0,
            stack: Vec::new(),
            caller_comp: 0,
            cur_inherited: false,
            roles: FxHashMap::default(),
            cur_role: 0,
            bg: false,
            parked,
            role_threads: vec![(0, 0)],
            warmup_log: WarmupLog::default(),
            window: (0, AUTO_FIRST_WINDOW, 0, Vec::new()),
            done: false,
            settle_log: SettleLog::default(),
            cur_op: 0,
            cur_comp: 0,
            cur_cell: 0,
            cur_type: 0,
            cur_type_cell: 0,
            btree_comp,
            cur_level: LEVEL_OUTSIDE,
            cur_level_cell: LEVEL_NONE,
            level_args: Vec::new(),
            level_ids: FxHashMap::default(),
            comp_cache: FxHashMap::default(),
            comp_memo: vec![(EMPTY, 0, 0); COMP_MEMO_SLOTS].into_boxed_slice(),
            cur_func: 0,
            last_iaddr: EMPTY,
            functions: vec![
                ("(unknown)".to_string(), 0),
                ("(background threads)".to_string(), 0),
            ],
            function_ids: FxHashMap::default(),
            sweep_own_lines: false,
            repeat_fast_path: true,
            config,
        };
        sim.sweep_own_lines = sim.sweep.iter().any(|s| !s.shares_stream());
        sim.settle_log.names = watched_names(&sim.config);
        // The shared levels' statistics the background side starts with.
        let n = sim.shared_levels().len();
        sim.parked.stats = vec![LevelStats::default(); n];
        if sim.warmed_up {
            sim.warmup_log.decided = Some("none (warm-up of 0 transactions)".to_string());
        }
        Ok(sim)
    }

    /// Levels whose contents both sides share (and whose statistics are swapped when
    /// the side changes): the last level and the LLC sweep with a core of its own,
    /// everything otherwise.
    fn shared_levels(&mut self) -> Vec<&mut Level> {
        let mut v: Vec<&mut Level> = Vec::new();
        if self.config.background_own_core {
            if let Some(u) = self.unified.last_mut() {
                v.push(&mut u.level);
            }
        } else {
            v.extend(self.l1.iter_mut());
            v.extend(self.unified.iter_mut().map(|u| &mut u.level));
            v.extend(self.sweep.iter_mut());
        }
        v.extend(self.sweep_llc.iter_mut());
        v
    }

    /// Puts the other side (workers or background) in place: its private levels and the
    /// statistics of the shared ones.
    fn swap_side(&mut self) {
        let mut parked_l1 = self.parked.l1.take();
        if let Some(l1) = &mut parked_l1 {
            std::mem::swap(&mut self.l1, l1);
        }
        self.parked.l1 = parked_l1;
        let mut mid = std::mem::take(&mut self.parked.mid);
        for (u, m) in self.unified.iter_mut().zip(mid.iter_mut()) {
            std::mem::swap(&mut u.level, m);
        }
        self.parked.mid = mid;
        let mut stats = std::mem::take(&mut self.parked.stats);
        for (l, s) in self.shared_levels().into_iter().zip(stats.iter_mut()) {
            std::mem::swap(&mut l.stats, s);
        }
        self.parked.stats = stats;
        self.bg = !self.bg;
    }

    /// The workers' statistics of the L1s, the unified levels, the L1-I sweep and the
    /// LLC sweep, wherever they are now.
    pub(crate) fn worker_stats(&self) -> (Vec<LevelStats>, Vec<LevelStats>, Vec<LevelStats>) {
        let mut main: Vec<LevelStats> = self
            .l1
            .iter()
            .chain(self.unified.iter().map(|u| &u.level))
            .map(|l| l.stats)
            .collect();
        let mut sweep: Vec<LevelStats> = self.sweep.iter().map(|l| l.stats).collect();
        let mut sweep_llc: Vec<LevelStats> = self.sweep_llc.iter().map(|l| l.stats).collect();
        if self.bg {
            let nu = self.unified.len();
            let mut k = 0;
            let mut take = |x: &mut LevelStats| {
                *x = self.parked.stats[k];
                k += 1;
            };
            if self.config.background_own_core {
                if let Some(l1) = &self.parked.l1 {
                    main[0] = l1[0].stats;
                    main[1] = l1[1].stats;
                }
                for (j, m) in self.parked.mid.iter().enumerate() {
                    main[2 + j] = m.stats;
                }
                if nu > 0 {
                    take(&mut main[1 + nu]);
                }
            } else {
                main.iter_mut().for_each(&mut take);
                sweep.iter_mut().for_each(&mut take);
            }
            sweep_llc.iter_mut().for_each(&mut take);
        }
        for (st, &m) in sweep_llc.iter_mut().zip(&self.sweep_llc_mirror) {
            if m {
                *st = *main.last().expect("a mirrored LLC point has a last level");
            }
        }
        (main, sweep, sweep_llc)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `run` returned because `measure_txns` transactions were measured or the figures
    /// settled (`config.settle`): the rest of the stream was not read.
    pub fn stopped_early(&self) -> bool {
        self.done
    }

    /// Feeds every record of the stream. On a stream error the statistics gathered so far
    /// stay available through `report`.
    pub fn run<R: Read>(&mut self, mut reader: Reader<R>) -> Result<(), api::Error> {
        // Accesses are dispatched straight from the record word; the rest is decoded.
        while let Some((w, at)) = reader.next_word()? {
            match w >> 60 {
                0 => {
                    let (addr, ninstr, len) = trace::ifetch_fields(w);
                    trace::check_ifetch(ninstr, len, at)?;
                    self.ifetch(addr, ninstr, len);
                }
                1..=3 => self.data(w & ((1 << 48) - 1), (w >> 48) & 0xfff),
                _ => {
                    let rec = reader.decode(w, at)?;
                    self.feed(&rec);
                    if self.done {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Registers an object's text mapping without a MAP record (e.g. for traces made by
    /// other tools): runtime address - bias = ELF address.
    pub fn add_object(&mut self, avma: u64, size: u64, bias: i64, path: &std::path::Path) {
        self.symbols.add_object(avma, size, bias, path);
        self.comp_cache.clear();
        self.comp_memo.fill((EMPTY, 0, 0));
        self.last_iaddr = EMPTY;
    }

    #[inline]
    pub fn feed(&mut self, rec: &Record) {
        match *rec {
            Record::IFetch { addr, ninstr, len } => self.ifetch(addr, ninstr, len),
            Record::Load { addr, size }
            | Record::Store { addr, size }
            | Record::Modify { addr, size } => self.data(addr, size as u64),
            Record::Marker { code, arg } => self.marker(code, arg),
            Record::Thread { tid } => self.switch_thread(tid),
            Record::Map {
                avma,
                size,
                bias,
                ref path,
            } => self.add_object(avma, size, bias, path),
            Record::End { total_instructions } => self.tracer_total = Some(total_instructions),
        }
    }

    #[inline]
    fn ifetch(&mut self, addr: u64, ninstr: u8, len: u8) {
        if addr != self.last_iaddr {
            self.last_iaddr = addr;
            let slot = self.comp_memo[comp_memo_slot(addr)];
            let (comp, func) = if slot.0 == addr {
                (slot.1, slot.2)
            } else {
                self.component_of(addr)
            };
            if self.bg {
                self.cur_func = BG_FUNC;
            } else {
                self.cur_func = func as usize;
                let mut comp = comp;
                self.cur_inherited = false;
                if self.config.caller_attribution {
                    if comp == 0 {
                        comp = self.caller_comp;
                        self.cur_inherited = comp != 0;
                    } else {
                        self.caller_comp = comp;
                    }
                }
                let comp = comp as usize;
                if comp != self.cur_comp {
                    self.cur_comp = comp;
                    self.cur_cell = self.cur_op * self.ncomp + comp;
                    self.set_type_cell();
                }
            }
        }
        let n = ninstr as u64;
        self.instructions_all += n;
        self.counts.role_instructions[self.cur_role] += n;
        self.counts.cells[self.cur_cell].instructions += n;
        self.counts.func[self.cur_func].instructions += n;
        self.counts.types[self.cur_type_cell].instructions += n;
        self.counts.levels[self.cur_level_cell].instructions += n;
        if !self.bg {
            self.counts.instructions += n;
            if self.cur_inherited {
                self.counts.inherited_instructions += n;
            }
        }
        // A hand-made record may say 0 bytes; the reader rejects that, feed tolerates it.
        let last = addr + (len.max(1) as u64) - 1;
        let shift = self.l1[I].line_shift;
        let own_core_bg = self.bg && self.config.background_own_core;
        if self.config.cachegrind_compat && addr >> shift != last >> shift {
            // With lines under 32 bytes the instruction starts may span lines too and
            // the trace cannot say where: the run stays one straddling access there.
            if ninstr == 1 || shift < 5 {
                self.span(I, addr, last);
            } else {
                // cachegrind references every instruction. All of a run's instructions
                // start in one aligned 32-byte block, so only the last can cross into
                // the next line: the run is the first line's reference, then the last
                // instruction's straddling one (first line a hit, miss iff the next
                // line missed); a run counted as one access would merge two misses.
                let line_end = (((addr >> shift) + 1) << shift) - 1;
                self.l1_ref(I, addr >> shift, StreamRef::NONE);
                self.span(I, line_end, last);
            }
        } else if self.i_stream.is_some() && !own_core_bg {
            let line = addr >> shift;
            if self.repeat_fast_path
                && line == last >> shift
                && self.l1[I].is_last(line)
                && (self.i_stream.as_ref()).is_some_and(|st| st.is_last(line))
            {
                // A run within the line fetched last (about half of all fetches): the
                // stream's last line is every sweep point's in it too (they see its
                // lines alone and are never invalidated), and the L1-I's, so each
                // reference is a repeat that changes no state; only the counts move.
                self.l1_repeat(I);
                for s in &mut self.sweep {
                    if s.shares_stream() {
                        debug_assert!(s.is_last(line));
                        s.count_repeat(I);
                    }
                }
            } else {
                self.ifetch_stream(addr >> shift, last >> shift);
            }
        } else {
            for line in addr >> shift..=last >> shift {
                self.l1_ref(I, line, StreamRef::NONE);
            }
        }
        // With a core of its own, a background thread does not touch the workers'
        // L1-I, which the sweep models.
        if !own_core_bg && self.sweep_own_lines {
            for s in &mut self.sweep {
                if s.shares_stream() {
                    continue;
                }
                for line in addr >> s.line_shift..=last >> s.line_shift {
                    s.access(line, I);
                }
            }
        }
    }

    /// The lines `first..=last` of a fetch through the workers' L1-I and the sweep points
    /// sharing its stream's shadow: one shadow reference per line for all of them.
    fn ifetch_stream(&mut self, first: u64, last: u64) {
        for line in first..=last {
            let r = (self.i_stream.as_mut()).map_or(StreamRef::NONE, |st| st.access(line));
            self.l1_ref(I, line, r);
            for s in &mut self.sweep {
                if s.shares_stream() {
                    s.access_with(line, I, r);
                }
            }
        }
    }

    /// The component and function of a run address missing from the memo.
    #[inline(never)]
    fn component_of(&mut self, addr: u64) -> (u16, u32) {
        let (comp, func) = match self.comp_cache.get(&addr) {
            Some(&c) => c,
            None => self.resolve(addr),
        };
        self.comp_memo[comp_memo_slot(addr)] = (addr, comp, func);
        (comp, func)
    }

    #[cold]
    fn resolve(&mut self, addr: u64) -> (u16, u32) {
        let (name, comp) = self.symbols.resolve(addr);
        let func = match name {
            None => 0,
            Some(n) => match self.function_ids.get(&n) {
                Some(&id) => id,
                None => {
                    let id = self.functions.len() as u32;
                    self.functions.push((n.clone(), comp));
                    self.function_ids.insert(n, id);
                    self.counts.func.push(FuncCell::default());
                    id
                }
            },
        };
        self.comp_cache.insert(addr, (comp, func));
        (comp, func)
    }

    #[inline]
    fn data(&mut self, addr: u64, size: u64) {
        if size == 0 {
            return;
        }
        let shift = self.l1[D].line_shift;
        let last = addr + size - 1;
        if self.config.cachegrind_compat && addr >> shift != last >> shift {
            self.span(D, addr, last);
        } else {
            for line in addr >> shift..=last >> shift {
                if self.repeat_fast_path && self.l1[D].is_last(line) {
                    // A repeat of the L1-D's last line (stack and record accesses): a
                    // hit that changes no state, only counted.
                    self.l1_repeat(D);
                } else {
                    self.l1_ref(D, line, StreamRef::NONE);
                }
            }
        }
    }

    /// A reference to the L1's last line (`Level::is_last`): a hit that changes no
    /// state, so only what `l1_ref` counts for a hit.
    #[inline(always)]
    fn l1_repeat(&mut self, k: usize) {
        self.counts.cells[self.cur_cell].accesses[k][k] += 1;
        self.l1[k].count_repeat(k);
    }

    /// `r`: the instruction stream's shadow answer if the L1 in place shares it.
    #[inline]
    fn l1_ref(&mut self, k: usize, line: u64, r: StreamRef) {
        let cell = &mut self.counts.cells[self.cur_cell];
        cell.accesses[k][k] += 1;
        if let Outcome::Miss(_) = self.l1[k].access_with(line, k, r) {
            cell.misses[k][k] += 1;
            self.counts.func[self.cur_func].misses[k][k] += 1;
            self.counts.types[self.cur_type_cell].misses[k][k] += 1;
            self.counts.levels[self.cur_level_cell].misses[k][k] += 1;
            self.below(k, line << self.l1[k].line_shift);
        }
    }

    /// cachegrind's rule for an access straddling lines: every line is referenced (state
    /// changes as usual) but the access counts once, as a miss if any line missed; on a
    /// miss all its lines go to the next level, again counted once.
    #[cold]
    fn span(&mut self, k: usize, first: u64, last: u64) {
        let mut lvl_slot = k;
        let mut level = &mut self.l1[k];
        let mut j = 0;
        loop {
            let miss = span_level(level, k, first, last);
            let cell = &mut self.counts.cells[self.cur_cell];
            cell.accesses[lvl_slot][k] += 1;
            if miss.is_none() {
                return;
            }
            cell.misses[lvl_slot][k] += 1;
            self.counts.func[self.cur_func].misses[lvl_slot][k] += 1;
            self.counts.types[self.cur_type_cell].misses[lvl_slot][k] += 1;
            self.counts.levels[self.cur_level_cell].misses[lvl_slot][k] += 1;
            // Config::validate rules out an inclusive last level here: no back-invalidation.
            if j == self.unified.len() {
                return;
            }
            if j == self.unified.len() - 1 {
                for (s, &m) in self.sweep_llc.iter_mut().zip(&self.sweep_llc_mirror) {
                    if !m {
                        span_level(s, k, first, last);
                    }
                }
            }
            lvl_slot = self.unified[j].slot;
            level = &mut self.unified[j].level;
            j += 1;
        }
    }

    /// An L1 miss of the line at byte address `addr`: ask each unified level in turn.
    /// Line sizes never shrink going down, so one upper line lies in one lower line.
    fn below(&mut self, k: usize, addr: u64) {
        let n = self.unified.len();
        for j in 0..n {
            // The last level's stream: one shadow reference for it and its sweep's
            // points (a level with a shadow of its own ignores the answer).
            let mut r = StreamRef::NONE;
            if j == n - 1 {
                if let Some(st) = &mut self.llc_stream {
                    r = st.access(addr >> st.line_shift);
                }
                for (s, &m) in self.sweep_llc.iter_mut().zip(&self.sweep_llc_mirror) {
                    if !m {
                        s.access_with(addr >> s.line_shift, k, r);
                    }
                }
            }
            let u = &mut self.unified[j];
            let line = addr >> u.level.line_shift;
            let cell = &mut self.counts.cells[self.cur_cell];
            cell.accesses[u.slot][k] += 1;
            match u.level.access_with(line, k, r) {
                Outcome::Hit => return,
                Outcome::Miss(victim) => {
                    cell.misses[u.slot][k] += 1;
                    self.counts.func[self.cur_func].misses[u.slot][k] += 1;
                    self.counts.types[self.cur_type_cell].misses[u.slot][k] += 1;
                    self.counts.levels[self.cur_level_cell].misses[u.slot][k] += 1;
                    if j == n - 1 && victim != EMPTY && self.config.last_level_inclusive {
                        let bytes = u.level.config.line_bytes as u64;
                        let victim_addr = victim << u.level.line_shift;
                        self.back_invalidate(victim_addr, bytes);
                    }
                }
            }
        }
    }

    /// The inclusive last level evicted [addr, addr+bytes): drop it from every level above,
    /// on both cores.
    fn back_invalidate(&mut self, addr: u64, bytes: u64) {
        let n = self.unified.len();
        let upper = self
            .l1
            .iter_mut()
            .chain(self.unified[..n - 1].iter_mut().map(|u| &mut u.level))
            .chain(self.parked.l1.iter_mut().flatten())
            .chain(self.parked.mid.iter_mut());
        for lvl in upper {
            let s = lvl.line_shift;
            for line in addr >> s..=(addr + bytes - 1) >> s {
                lvl.invalidate(line);
            }
        }
    }

    fn set_type_cell(&mut self) {
        self.cur_type_cell = if self.bg {
            TYPE_SLOTS * self.ncomp
        } else {
            self.cur_type * self.ncomp + self.cur_comp
        };
        self.cur_level_cell = if !self.bg && self.btree_comp == Some(self.cur_comp) {
            self.cur_level
        } else {
            LEVEL_NONE
        };
    }

    /// A BTREE_LEVEL marker: the running context's descent reached a node of the level
    /// `arg` names; the B+tree's code counts there until the next one or the operation's
    /// end.
    fn enter_level(&mut self, arg: u32) {
        let cell = match self.level_ids.get(&arg) {
            Some(&c) => c,
            None => {
                let c = LEVEL_FIRST + self.level_args.len();
                self.level_args.push(arg);
                self.level_ids.insert(arg, c);
                self.counts.levels.push(FuncCell::default());
                self.counts.level_visits.push(0);
                c
            }
        };
        if !self.bg {
            self.counts.level_visits[cell] += 1;
        }
        self.cur_level = cell;
        self.set_type_cell();
    }

    fn set_op(&mut self) {
        self.set_type_cell();
        self.cur_op = self.stack.last().copied().unwrap_or(0) as usize;
        self.cur_cell = if self.bg {
            OP_SLOTS * self.ncomp + self.cur_role
        } else {
            self.cur_op * self.ncomp + self.cur_comp
        };
    }

    fn switch_thread(&mut self, tid: u32) {
        if tid == self.tid {
            return;
        }
        self.park();
        if self.ctx != 0 {
            self.thread_ctx.insert(self.tid, self.ctx);
        }
        self.tid = tid;
        self.ctx = self.thread_ctx.remove(&tid).unwrap_or(0);
        self.unpark();
        self.apply_role();
    }

    /// A CONTEXT marker: the running thread now runs context `ctx` (a coroutine's, or
    /// 0: its own stack), whose open operations and transaction are its own.
    fn switch_context(&mut self, ctx: u32) {
        if ctx == self.ctx {
            return;
        }
        if ctx != 0 && !self.bg {
            self.counts.coroutine_switches += 1;
        }
        self.park();
        self.ctx = ctx;
        self.unpark();
        // The next run resolves its component and cell afresh.
        self.last_iaddr = EMPTY;
        self.cur_inherited = false;
        self.set_op();
        self.set_type_cell();
    }

    /// Keep the running context's state while another runs.
    fn park(&mut self) {
        let old = ThreadState {
            stack: std::mem::take(&mut self.stack),
            caller_comp: self.caller_comp,
            txn_type: self.cur_type,
            level: self.cur_level,
        };
        if !old.stack.is_empty()
            || old.caller_comp != 0
            || old.txn_type != 0
            || old.level != LEVEL_OUTSIDE
        {
            self.threads.insert(ctx_key(self.tid, self.ctx), old);
        }
    }

    /// Take up the state of (`tid`, `ctx`) as kept by [`Self::park`].
    fn unpark(&mut self) {
        let st = self
            .threads
            .remove(&ctx_key(self.tid, self.ctx))
            .unwrap_or_default();
        self.stack = st.stack;
        self.caller_comp = st.caller_comp;
        self.cur_type = st.txn_type;
        self.cur_level = st.level;
    }

    /// Puts the running thread's role in force: its role slot, its side.
    fn apply_role(&mut self) {
        let role = match self.config.ignore_roles {
            true => 0,
            false => self.roles.get(&self.tid).copied().unwrap_or(0),
        };
        let slot = match role {
            0 => 0,
            r => probe::Role::from_u32(r).map_or(ROLE_UNKNOWN, |r| r as usize),
        };
        self.cur_role = slot;
        if !self.role_threads.contains(&(self.tid, slot)) {
            self.role_threads.push((self.tid, slot));
        }
        let bg = slot != 0 && slot != probe::Role::Worker as usize;
        if bg != self.bg {
            self.swap_side();
        }
        // The next run resolves its component and cell afresh.
        self.last_iaddr = EMPTY;
        self.cur_inherited = false;
        self.set_op();
    }

    fn marker(&mut self, code: u8, arg: u32) {
        let slot = probe::Op::from_u32(arg).map_or(OP_UNKNOWN, |o| o as u8);
        match code {
            marker::OP_BEGIN => {
                self.stack.push(slot);
                self.cur_level = LEVEL_OUTSIDE;
                self.set_op();
            }
            marker::OP_END => {
                // Innermost matching op; a missing begin is counted, not fatal.
                match self.stack.iter().rposition(|&s| s == slot) {
                    Some(i) => self.stack.truncate(i),
                    None => self.unmatched_op_end += 1,
                }
                self.cur_level = LEVEL_OUTSIDE;
                self.set_op();
            }
            marker::TXN_BEGIN => {
                self.cur_type = (arg as usize + 1).min(TYPE_SLOTS - 1);
                self.set_type_cell();
            }
            marker::TXN_END => {
                if !self.bg {
                    self.counts.type_txns[self.cur_type] += 1;
                }
                self.cur_type = 0;
                self.set_type_cell();
                self.txns_all += 1;
                self.counts.transactions += 1;
                if arg & probe::TXN_ABORTED == 0 {
                    self.counts.committed += 1;
                }
                if !self.warmed_up {
                    self.warmup_step();
                } else {
                    // The batch ending here counts even when it reaches the cap.
                    self.settle_step();
                    if let Some(n) = self.config.measure_txns {
                        self.done |= self.counts.transactions >= n;
                    }
                }
            }
            marker::THREAD_ROLE => {
                if arg == 0 {
                    self.roles.remove(&self.tid);
                } else {
                    self.roles.insert(self.tid, arg);
                }
                self.apply_role();
            }
            marker::CONTEXT => self.switch_context(arg),
            marker::BTREE_LEVEL => self.enter_level(arg),
            marker::TRACE_START | marker::TRACE_STOP | marker::CTX_POINT => {}
            c => {
                let msg = format!("unknown MARKER code {c} ignored");
                if !self.anomalies.contains(&msg) {
                    self.anomalies.push(msg);
                }
            }
        }
    }

    /// Workers' misses per level (L1-I, L1-D, then the unified levels), I and D together.
    fn level_misses(&self) -> Vec<u64> {
        let (main, _, _) = self.worker_stats();
        main.iter().map(|s| s.misses[I] + s.misses[D]).collect()
    }

    /// The workers' misses of every level the settling rule watches (`watched_names`).
    fn watched_misses(&self) -> Vec<u64> {
        let (main, sweep, sweep_llc) = self.worker_stats();
        (main.iter().chain(&sweep).chain(&sweep_llc))
            .map(|s| s.misses[I] + s.misses[D])
            .collect()
    }

    /// A transaction ended after warm-up: with a settling rule, close the batch if it is
    /// full and stop once every figure has settled.
    fn settle_step(&mut self) {
        let Some(rule) = self.config.settle else {
            return;
        };
        let txns = self.counts.transactions;
        let (t0, i0, ref m0) = self.settle_log.start;
        if txns - t0 < rule.batch_txns || self.settle_log.settled_at.is_some() {
            return;
        }
        let misses = self.watched_misses();
        let instr = self.counts.instructions;
        let batch = Batch {
            txns: txns - t0,
            instructions: instr - i0,
            misses: (misses.iter().enumerate())
                .map(|(j, &m)| m - m0.get(j).copied().unwrap_or(0))
                .collect(),
        };
        self.settle_log.batches.push(batch);
        self.settle_log.start = (txns, instr, misses);
        let log = &self.settle_log;
        let intervals = settle::judge(&rule, &log.names, &log.batches);
        if settle::settled(&rule, &intervals, log.batches.len()) {
            self.settle_log.settled_at = Some(txns);
            self.done = true;
        }
    }

    /// A transaction ended during warm-up: end warm-up after `warmup_txns` (fixed), or
    /// (auto) at the end of the first window whose miss rates match the previous one's,
    /// at most after `warmup_txns`.
    fn warmup_step(&mut self) {
        let cap = self.config.warmup_txns;
        if !self.config.warmup_auto {
            if self.txns_all >= cap {
                self.end_warmup(format!("fixed: {cap} transactions"));
            }
            return;
        }
        self.window.0 += 1;
        if self.window.0 >= self.window.1 || self.txns_all >= cap {
            let misses = self.level_misses();
            let instr = self.counts.instructions;
            let (_, len, instr0, ref misses0) = self.window;
            let di = (instr - instr0).max(1) as f64;
            let mpki: Vec<f64> = misses
                .iter()
                .enumerate()
                .map(|(j, &m)| (m - misses0.get(j).copied().unwrap_or(0)) as f64 * 1000.0 / di)
                .collect();
            let steady = self
                .warmup_log
                .windows
                .last()
                .is_some_and(|(_, prev)| prev.iter().zip(&mpki).all(|(&a, &b)| steady(a, b)));
            self.warmup_log.windows.push((self.txns_all, mpki));
            if steady {
                let prev = len / 2;
                self.end_warmup(format!(
                    "auto: {} transactions; misses per 1000 instructions at every level \
                     fell by at most {:.0}%, rose by at most {:.0}% or moved by at most \
                     {AUTO_ABS} against the previous window's (windows of {prev} and {len} \
                     transactions)",
                    self.txns_all,
                    AUTO_FALL * 100.0,
                    AUTO_RISE * 100.0
                ));
            } else if self.txns_all >= cap {
                self.end_warmup(format!(
                    "auto: stopped at the cap of {cap} transactions before the miss rates \
                     settled (see the windows in the JSON report)"
                ));
            } else {
                self.window = (0, len * 2, instr, misses);
            }
        }
    }

    fn end_warmup(&mut self, why: String) {
        self.warmed_up = true;
        self.warmup_log.decided = Some(why);
        self.warmup_log.instructions = self.counts.instructions;
        self.reset_stats();
    }

    /// Clears statistics (not cache contents, first-touch sets or op stacks), of the
    /// background side too.
    pub fn reset_stats(&mut self) {
        self.counts.instructions = 0;
        self.counts.transactions = 0;
        self.counts.committed = 0;
        self.counts.role_instructions = [0; ROLE_SLOTS];
        self.counts.inherited_instructions = 0;
        self.counts.coroutine_switches = 0;
        self.counts
            .cells
            .iter_mut()
            .for_each(|c| *c = Cell::default());
        // The functions table too: it must sum to the same totals as every other table.
        self.counts
            .func
            .iter_mut()
            .for_each(|f| *f = FuncCell::default());
        self.counts
            .types
            .iter_mut()
            .for_each(|f| *f = FuncCell::default());
        self.counts.type_txns.iter_mut().for_each(|t| *t = 0);
        self.counts
            .levels
            .iter_mut()
            .for_each(|f| *f = FuncCell::default());
        self.counts.level_visits.iter_mut().for_each(|v| *v = 0);
        self.l1.iter_mut().for_each(Level::reset_stats);
        self.unified.iter_mut().for_each(|u| u.level.reset_stats());
        self.sweep.iter_mut().for_each(Level::reset_stats);
        self.sweep_llc.iter_mut().for_each(Level::reset_stats);
        self.parked
            .l1
            .iter_mut()
            .flatten()
            .for_each(Level::reset_stats);
        self.parked.mid.iter_mut().for_each(Level::reset_stats);
        self.parked
            .stats
            .iter_mut()
            .for_each(|s| *s = LevelStats::default());
        // Batches count from the statistics' start.
        let names = std::mem::take(&mut self.settle_log.names);
        self.settle_log = SettleLog {
            names,
            ..SettleLog::default()
        };
    }

    pub(crate) fn unified_levels(&self) -> impl Iterator<Item = (&Level, usize)> {
        self.unified.iter().map(|u| (&u.level, u.slot))
    }

    pub(crate) fn ncomp(&self) -> usize {
        self.ncomp
    }

    pub(crate) fn unmatched_op_end(&self) -> u64 {
        self.unmatched_op_end
    }
}

/// The names of the levels the settling rule watches, in `watched_misses`' order.
fn watched_names(c: &Config) -> Vec<String> {
    let mut v = vec!["L1-I".to_string(), "L1-D".to_string()];
    v.extend(c.l2.map(|_| "L2".to_string()));
    v.extend(c.llc.map(|_| "LLC".to_string()));
    // The report names every LLC sweep point `LLC`, whichever level is the last.
    v.extend(
        c.sweep_l1i
            .iter()
            .map(|l| format!("L1-I {}", format_size(l.size_bytes))),
    );
    v.extend(
        c.sweep_llc
            .iter()
            .map(|l| format!("LLC {}", format_size(l.size_bytes))),
    );
    v
}

/// Slots of `Simulator::comp_memo` (16 B each): more than the distinct run addresses of
/// an OLTP hot path.
const COMP_MEMO_SLOTS: usize = 1 << 14;

/// Function id that collects background threads' code.
const BG_FUNC: usize = 1;

#[inline]
fn comp_memo_slot(addr: u64) -> usize {
    // Runs start anywhere in a 32-byte block; fold in higher bits against aliasing.
    ((addr ^ (addr >> 14)) as usize) & (COMP_MEMO_SLOTS - 1)
}

/// One cachegrind-style access of [first, last] bytes to `level`: every line referenced,
/// counted once; returns the miss class if any line missed.
fn span_level(level: &mut Level, k: usize, first: u64, last: u64) -> Option<Class> {
    let s = level.line_shift;
    let mut miss: Option<Class> = None;
    for line in first >> s..=last >> s {
        let (out, class) = level.reference(line);
        if out != Outcome::Hit {
            miss.get_or_insert(class);
        }
    }
    level.count(k, miss);
    miss
}

impl Simulator {
    /// Functions resolved so far with the component each was charged to, by name.
    pub fn resolved_functions(&self) -> Vec<(String, String)> {
        let names = self.symbols.table.names();
        let mut v: Vec<(String, String)> = self.functions[1..]
            .iter()
            .map(|(f, c)| (f.clone(), names[*c as usize].clone()))
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod compat_tests {
    use super::*;

    fn compat() -> Simulator {
        let mut cfg = Config::preset("xeon-e5-2660").unwrap();
        cfg.set_level("l2", "none").unwrap();
        cfg.last_level_inclusive = false;
        cfg.cachegrind_compat = true;
        Simulator::new(cfg).unwrap()
    }

    /// cachegrind counts per instruction: a cold run whose last instruction crosses into
    /// the next line is two I1 misses (and two LL misses), a single crossing instruction
    /// one.
    #[test]
    fn a_line_crossing_run_is_counted_per_instruction() {
        let mut sim = compat();
        sim.feed(&Record::IFetch {
            addr: 0x1038,
            ninstr: 3,
            len: 16,
        });
        let r = sim.report();
        assert_eq!((r.levels[0].misses.i, r.levels[2].misses.i), (2, 2));
        let mut sim = compat();
        sim.feed(&Record::IFetch {
            addr: 0x1038,
            ninstr: 1,
            len: 16,
        });
        let r = sim.report();
        assert_eq!((r.levels[0].misses.i, r.levels[2].misses.i), (1, 1));
    }
}

#[cfg(test)]
mod caller_tests {
    use super::*;

    /// Code at 0x1000 is the B-tree's, code at 0x2000 has no component (libc): with
    /// caller attribution the second run's instructions and misses count for the B-tree.
    fn run(caller: bool) -> crate::report::Report {
        let mut cfg = Config::preset("xeon-e5-2660").unwrap();
        cfg.caller_attribution = caller;
        let mut sim = Simulator::new(cfg).unwrap();
        let btree = sim
            .symbols
            .table
            .names()
            .iter()
            .position(|n| n == "btree")
            .unwrap() as u16;
        sim.comp_cache.insert(0x1000, (btree, 0));
        sim.comp_cache.insert(0x2000, (0, 0));
        sim.feed(&Record::Thread { tid: 1 });
        for (addr, lines) in [(0x1000, 1u64), (0x2000, 3)] {
            sim.feed(&Record::IFetch {
                addr,
                ninstr: 2,
                len: 8,
            });
            for i in 0..lines {
                sim.feed(&Record::Load {
                    addr: 0x10_0000 + addr * 16 + i * 64,
                    size: 8,
                });
            }
        }
        sim.report()
    }

    #[test]
    fn code_without_a_component_counts_for_its_caller() {
        let comp = |r: &crate::report::Report, n: &str| {
            r.by_component
                .iter()
                .find(|b| b.component.as_deref() == Some(n))
                .map(|b| (b.instructions, b.levels[1].misses.d))
        };
        let off = run(false);
        assert_eq!(comp(&off, "btree"), Some((2, 1)));
        assert_eq!(comp(&off, "other"), Some((2, 3)));
        assert_eq!(off.caller_attributed_instructions, 0);
        let on = run(true);
        assert_eq!(comp(&on, "btree"), Some((4, 4)));
        assert_eq!(comp(&on, "other"), None);
        assert_eq!(on.caller_attributed_instructions, 2);
    }
}

#[cfg(test)]
mod context_tests {
    use super::*;
    use crate::trace::marker;

    fn mark(code: u8, arg: u32) -> Record {
        Record::Marker { code, arg }
    }

    fn run(n: u8) -> Record {
        Record::IFetch {
            addr: 0x1000,
            ninstr: n,
            len: 4,
        }
    }

    /// Two coroutines of one thread, switched mid-operation and mid-transaction: each
    /// context's instructions count for its own open operation and transaction type, and
    /// another thread's context is its own.
    #[test]
    fn each_coroutine_context_keeps_its_operations_and_transaction() {
        let mut sim = Simulator::new(Config::preset("xeon-e5-2660").unwrap()).unwrap();
        let recs = [
            Record::Thread { tid: 1 },
            mark(marker::CONTEXT, 1),
            mark(marker::TXN_BEGIN, 0),
            mark(marker::OP_BEGIN, probe::Op::IndexProbe as u32),
            run(10),
            mark(marker::CONTEXT, 2),
            mark(marker::TXN_BEGIN, 1),
            mark(marker::OP_BEGIN, probe::Op::Update as u32),
            run(20),
            // Another thread, in its own context 1, between the two.
            Record::Thread { tid: 2 },
            mark(marker::CONTEXT, 1),
            run(7),
            Record::Thread { tid: 1 },
            mark(marker::CONTEXT, 1),
            run(5),
            mark(marker::OP_END, probe::Op::IndexProbe as u32),
            mark(marker::TXN_END, 0),
            // The scheduler's own stack: no operation, no transaction.
            mark(marker::CONTEXT, 0),
            run(3),
            mark(marker::CONTEXT, 2),
            run(1),
            mark(marker::OP_END, probe::Op::Update as u32),
            mark(marker::TXN_END, 1),
        ];
        for r in &recs {
            sim.feed(r);
        }
        let r = sim.report();
        let op = |name: &str| {
            r.by_operation
                .iter()
                .find(|b| b.operation.as_deref() == Some(name))
                .map_or(0, |b| b.instructions)
        };
        assert_eq!(op("index_probe"), 15);
        assert_eq!(op("update"), 21);
        assert_eq!(op("none"), 3 + 7);
        let ty = |t: Option<u32>| {
            r.by_txn_type
                .iter()
                .find(|row| row.txn_type == t)
                .map(|row| (row.transactions, row.instructions))
        };
        assert_eq!(ty(Some(0)), Some((1, 15)));
        assert_eq!(ty(Some(1)), Some((1, 21)));
        assert_eq!(ty(None), Some((0, 10)));
        assert_eq!(sim.unmatched_op_end, 0);
        // Into coroutine 1, 2, thread 2's 1, back to 1, to 2 (the scheduler's own
        // context 0 is no coroutine's).
        assert_eq!(r.coroutine_switches, 5);
    }
}

#[cfg(test)]
mod compare_tests {
    use super::*;

    /// A random stream over footprints a few times each level's size: instruction runs,
    /// data accesses, operations, transactions, and a background thread now and then.
    fn records(seed: u64, n: usize) -> Vec<Record> {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut v = vec![Record::Thread { tid: 1 }];
        let mut pc = 0x40_0000u64;
        for i in 0..n {
            let r = next();
            v.push(match r % 16 {
                0..=6 => {
                    pc = if r % 5 == 0 {
                        0x40_0000 + (r >> 20) % (24 * 1024)
                    } else {
                        pc + 16
                    };
                    Record::IFetch {
                        addr: pc,
                        ninstr: 4,
                        len: 1 + (r >> 8) as u8 % 40,
                    }
                }
                7..=13 => Record::Load {
                    addr: 0x1000_0000
                        + (r >> 16) % [8 << 10, 96 << 10, 2 << 20][(r >> 8) as usize % 3],
                    size: 1 + (r >> 40) as u16 % 16,
                },
                14 => Record::Marker {
                    code: marker::TXN_END,
                    arg: 0,
                },
                _ => match (r >> 8) % 8 {
                    0 => Record::Thread {
                        tid: 1 + (r >> 12) as u32 % 2,
                    },
                    // The running thread becomes a worker or a background thread.
                    1 => Record::Marker {
                        code: marker::THREAD_ROLE,
                        arg: match (r >> 20) % 2 {
                            0 => probe::Role::Worker as u32,
                            _ => probe::Role::LogFlusher as u32,
                        },
                    },
                    2 => Record::Marker {
                        code: marker::OP_BEGIN,
                        arg: 1 + (r >> 16) as u32 % 4,
                    },
                    _ => Record::Store {
                        addr: 0x2000_0000 + (r >> 16) % (1 << 20) + i as u64 % 3,
                        size: 8,
                    },
                },
            });
        }
        v
    }

    /// Small levels, so that the stream overflows every one; sweeps of both kinds, one
    /// L1-I point of another line size (a shadow of its own) and one LLC point with the
    /// last level's geometry (a mirror).
    fn config(own_core: bool, inclusive: bool) -> Config {
        let mut c = Config::preset("xeon-e5-2660").unwrap();
        c.set_level("l1i", "2K:4:64:4").unwrap();
        c.set_level("l1d", "2K:4:64:4").unwrap();
        c.set_level("l2", "8K:4:64:8").unwrap();
        c.set_level("llc", "64K:8:64:19").unwrap();
        c.set_sweep("l1i=1K,2K,4K:2:64,8K,4K:4:128").unwrap();
        c.set_sweep("llc=32K,64K,128K:16:64,64K:4:64").unwrap();
        c.warmup_txns = 50;
        c.background_own_core = own_core;
        c.last_level_inclusive = inclusive;
        c
    }

    /// The fast paths of a fetch within the line fetched last and of a data access to the
    /// L1-D's last line change nothing: the report equals the one of the general path,
    /// for every side and inclusion setting.
    #[test]
    fn repeat_fetch_fast_path_gives_the_same_report() {
        for (seed, own_core, inclusive) in [(4, true, true), (5, false, true), (6, true, false)] {
            let cfg = config(own_core, inclusive);
            let mut fast = Simulator::build(cfg.clone(), true).unwrap();
            let mut slow = Simulator::build(cfg, true).unwrap();
            slow.repeat_fast_path = false;
            assert!(
                fast.sweep_own_lines,
                "the 4K:4:128 point has a shadow of its own"
            );
            // Every load followed by another in its line: repeats for the data fast path.
            let recs: Vec<Record> = (records(seed, 200_000).into_iter())
                .flat_map(|r| match r {
                    Record::Load { addr, .. } => vec![
                        r,
                        Record::Load {
                            addr: (addr & !63) + ((addr + 8) & 63),
                            size: 1,
                        },
                    ],
                    r => vec![r],
                })
                .collect();
            // The stream must have repeated fetches for the fast path to take.
            let repeats = (recs.windows(2))
                .filter(|w| match (&w[0], &w[1]) {
                    (
                        Record::IFetch {
                            addr: a, len: la, ..
                        },
                        Record::IFetch {
                            addr: b, len: lb, ..
                        },
                    ) => {
                        a >> 6 == (a + *la as u64 - 1) >> 6
                            && b >> 6 == a >> 6
                            && b >> 6 == (b + *lb as u64 - 1) >> 6
                    }
                    _ => false,
                })
                .count();
            assert!(repeats > 1000, "only {repeats} repeated fetches");
            for rec in recs {
                fast.feed(&rec);
                slow.feed(&rec);
            }
            assert_eq!(
                fast.report().to_json(),
                slow.report().to_json(),
                "seed {seed}"
            );
        }
        // Without a sweep point of another line size the second walk is skipped.
        let mut c = config(true, true);
        c.set_sweep("l1i=1K,2K,8K").unwrap();
        assert!(!Simulator::build(c, true).unwrap().sweep_own_lines);
    }

    /// The shared shadows and the mirrored point change nothing: the report of every
    /// level, class and sweep point equals the one with a shadow per level.
    #[test]
    fn shared_stream_shadows_give_the_same_report() {
        for (seed, own_core, inclusive) in [(1, true, true), (2, false, true), (3, true, false)] {
            let cfg = config(own_core, inclusive);
            let mut shared = Simulator::build(cfg.clone(), true).unwrap();
            let mut alone = Simulator::build(cfg, false).unwrap();
            assert!(shared.i_stream.is_some() && shared.llc_stream.is_some());
            assert_eq!(shared.sweep_llc_mirror, [false, true, false, false]);
            assert!(alone.i_stream.is_none() && !alone.sweep_llc_mirror.contains(&true));
            for rec in records(seed, 200_000) {
                shared.feed(&rec);
                alone.feed(&rec);
            }
            let (a, b) = (shared.report(), alone.report());
            assert!(b.levels.iter().all(|l| l.three_c.is_some()));
            assert!(
                b.levels[3].misses.total > 1000,
                "the LLC must be overflowed"
            );
            assert_eq!(a.to_json(), b.to_json(), "seed {seed}");
        }
    }
}

#[cfg(test)]
mod level_tests {
    use super::*;
    use crate::trace::marker;
    use probe::level;

    /// A recorded trace of two coroutines of one thread descending B+trees: the B+tree's
    /// code counts at the level its context's descent reached last (kept across
    /// switches), its code before a descent's first marker and after the operation's end
    /// counts outside any level, another component's code at none.
    #[test]
    fn the_btree_counts_at_the_level_each_context_reached() {
        let mut sim = Simulator::new(Config::preset("xeon-e5-2660").unwrap()).unwrap();
        let names = sim.symbols.table.names();
        let comp = |n: &str| names.iter().position(|x| x == n).unwrap() as u16;
        let (btree, record) = (comp("btree"), comp("record"));
        sim.comp_cache.insert(0x1000, (btree, 0));
        sim.comp_cache.insert(0x3000, (record, 0));
        let mark = |code: u8, arg: u32| Record::Marker { code, arg };
        let run = |addr: u64, n: u8| Record::IFetch {
            addr,
            ninstr: n,
            len: 4,
        };
        let load = |i: u64| Record::Load {
            addr: 0x10_0000 + i * 64,
            size: 8,
        };
        let probe_op = probe::Op::IndexProbe as u32;
        let recs = [
            Record::Thread { tid: 1 },
            mark(marker::CONTEXT, 1),
            mark(marker::TXN_BEGIN, 0),
            mark(marker::OP_BEGIN, probe_op),
            run(0x1000, 2),
            load(0),
            mark(marker::BTREE_LEVEL, level::at(level::tree(3, 0), 0, 1)),
            run(0x1000, 3),
            load(1),
            load(1),
            // The second coroutine: outside any level until its own first marker.
            mark(marker::CONTEXT, 2),
            mark(marker::OP_BEGIN, probe_op),
            run(0x1000, 1),
            load(2),
            mark(marker::BTREE_LEVEL, level::at(level::tree(1, 2), 0, 0)),
            run(0x1000, 7),
            load(3),
            // Back to the first: still at its root.
            mark(marker::CONTEXT, 1),
            run(0x1000, 4),
            load(4),
            mark(marker::BTREE_LEVEL, level::at(level::tree(3, 0), 1, 1)),
            run(0x1000, 4),
            load(5),
            load(6),
            // The record's code counts at no level.
            run(0x3000, 5),
            load(7),
            mark(marker::OP_END, probe_op),
            run(0x1000, 2),
            load(8),
            mark(marker::BTREE_LEVEL, level::hint(level::tree(3, 0))),
            run(0x1000, 6),
            load(9),
            mark(marker::TXN_END, 0),
        ];
        for r in &recs {
            sim.feed(r);
        }
        let mut r = sim.report();
        r.name_trees(&[vec![], vec!["a".into()], vec![], vec!["d".into()]]);
        let rows: Vec<_> = (r.btree_levels.iter())
            .map(|l| {
                (
                    l.table,
                    l.index,
                    l.height,
                    l.level,
                    l.hint,
                    l.visits,
                    l.instructions,
                    l.misses[1].1.d,
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                (Some(1), Some(2), Some(1), Some(1), false, 1, 7, 1),
                (Some(3), Some(0), Some(2), Some(1), false, 1, 7, 2),
                (Some(3), Some(0), Some(2), Some(2), false, 1, 4, 2),
                (Some(3), Some(0), None, None, true, 1, 6, 1),
                (None, None, None, None, false, 0, 5, 3),
            ]
        );
        // Named where the names reach: table 1 has no index 2's name.
        let names: Vec<_> = r.btree_levels.iter().map(|l| l.tree.clone()).collect();
        assert_eq!(names[0], None);
        assert_eq!(names[1].as_deref(), Some("d"));
        assert!(r.to_text().contains("table 1 index 2"));
        let labels: Vec<&str> = r.btree_levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            labels,
            [
                "table 1 index 2 1/1",
                "d 1/2",
                "d 2/2",
                "d leaf (hint)",
                "(no level)"
            ]
        );
        // The rows sum to the B+tree component's figures.
        let b = (r.by_component.iter())
            .find(|b| b.component.as_deref() == Some("btree"))
            .unwrap();
        assert_eq!(b.instructions, rows.iter().map(|x| x.6).sum::<u64>());
        assert!(r.to_text().contains("B+tree by level"));
    }

    /// Without level markers the report has no level table.
    #[test]
    fn no_markers_no_level_table() {
        let mut sim = Simulator::new(Config::preset("xeon-e5-2660").unwrap()).unwrap();
        sim.feed(&Record::Thread { tid: 1 });
        sim.feed(&Record::IFetch {
            addr: 0x1000,
            ninstr: 3,
            len: 4,
        });
        let r = sim.report();
        assert!(r.btree_levels.is_empty());
        assert!(!r.to_text().contains("B+tree by level"));
    }
}
