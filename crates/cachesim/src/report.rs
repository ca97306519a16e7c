//! The simulation report: a serde struct with every figure, and its plain-text rendering.
//!
//! Owns the derived numbers (MPKI, stall cycles = misses x the next level's latency, per
//! transaction figures). Must never change simulator state.

use crate::cache::{LevelStats, D, I};
use crate::config::{format_size, preset_note, Config, LevelConfig};
use crate::sim::{
    Cell, FuncCell, Simulator, L1D, L1I, OP_SLOTS, OP_UNKNOWN, ROLE_SLOTS, ROLE_UNKNOWN, TYPE_SLOTS,
};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

pub const CAVEAT: &str = "stall cycles = misses x the next level's latency (the papers' \
method); overlap between misses and with execution is ignored, so they are an upper bound, \
not a cycle count";

/// Added to [`CAVEAT`] when the workers ran coroutines (an interleaved run above all).
pub const COROUTINE_CAVEAT: &str = "the tracer sees no software prefetch (valgrind drops \
them): a prefetched line's miss counts where the line is first read, and the overlap that \
switching between transactions buys is not in the stall cycles";

/// A count split instruction / data.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub i: u64,
    pub d: u64,
    pub total: u64,
}

impl Split {
    fn new(v: [u64; 2]) -> Split {
        Split {
            i: v[I],
            d: v[D],
            total: v[I] + v[D],
        }
    }

    fn times(self, c: u64) -> Split {
        Split {
            i: self.i * c,
            d: self.d * c,
            total: self.total * c,
        }
    }

    fn per(self, denom: u64, scale: f64) -> SplitF {
        let f = |x: u64| {
            if denom == 0 {
                0.0
            } else {
                x as f64 * scale / denom as f64
            }
        };
        SplitF {
            i: f(self.i),
            d: f(self.d),
            total: f(self.total),
        }
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SplitF {
    pub i: f64,
    pub d: f64,
    pub total: f64,
}

/// 3C classification of a level's misses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreeC {
    pub compulsory: Split,
    pub capacity: Split,
    pub conflict: Split,
}

impl ThreeC {
    fn of(s: &LevelStats) -> ThreeC {
        ThreeC {
            compulsory: Split::new(s.compulsory),
            capacity: Split::new(s.capacity),
            conflict: Split::new(s.conflict),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// `L1-I`, `L1-D`, `L2`, `LLC`.
    pub name: String,
    pub config: LevelConfig,
    /// Latency of the level below (or memory): the cost of one miss here.
    pub miss_penalty_cycles: u32,
    pub accesses: Split,
    pub misses: Split,
    pub mpki: SplitF,
    pub misses_per_txn: Option<SplitF>,
    pub stall_cycles: Split,
    /// None when 3C classification was turned off.
    pub three_c: Option<ThreeC>,
}

/// One extra cache of a sweep (`L1-I` or `LLC`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub level: String,
    pub config: LevelConfig,
    pub accesses: Split,
    pub misses: Split,
    pub mpki: SplitF,
    /// misses x the swept level's miss penalty.
    pub stall_cycles: u64,
    pub three_c: Option<ThreeC>,
    /// The swept level's share (0-1) of the stall cycles with this cache in place of the
    /// configured one: `swapped_stall_share` (None when nothing stalled, and in reports
    /// older than the figure).
    #[serde(default)]
    pub stall_share: Option<f64>,
}

/// A level's share (0-1) of all stall cycles, had a swept cache of `swept` stall cycles
/// replaced the configured level of `configured` (the report's levels' shares, with
/// that one level swapped; the other levels' stall cycles stay as measured with the
/// configured cache, see docs/design/cachesim.md "Size sweeps"). None when the total is 0.
pub fn swapped_stall_share(total: u64, configured: u64, swept: u64) -> Option<f64> {
    let t = total.saturating_sub(configured) + swept;
    (t > 0).then(|| swept as f64 / t as f64)
}

/// One level's figures inside a breakdown row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowLevel {
    pub level: String,
    pub accesses: Split,
    pub misses: Split,
    /// Misses per 1000 instructions of the whole run, so rows add up to the level's MPKI.
    pub mpki: SplitF,
    pub stall_cycles: Split,
}

/// Figures charged to an operation, a component, or both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub operation: Option<String>,
    pub component: Option<String>,
    pub instructions: u64,
    pub levels: Vec<RowLevel>,
    pub stall_cycles: u64,
}

/// The workers' figures for one transaction type (a TPC-H query, a TPC-C transaction),
/// by the type number each transaction's TXN_BEGIN marker carries: `simulate` shows a
/// column per query as `profile` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeRow {
    /// The workload's type number; None: code outside any transaction (the driver
    /// between transactions, a trace without typed TXN_BEGIN markers).
    pub txn_type: Option<u32>,
    /// The workload's name of the type, when the caller gave the names
    /// ([`Report::name_types`]).
    #[serde(default)]
    pub name: Option<String>,
    /// TXN_ENDs of this type after warm-up.
    pub transactions: u64,
    pub instructions: u64,
    /// (level name, misses) for each level present.
    pub misses: Vec<(String, Split)>,
    pub stall_cycles: u64,
    /// Per component with instructions or misses: (component, instructions, stall
    /// cycles).
    pub components: Vec<(String, u64, u64)>,
}

/// The B+tree's own figures at one level of the trees its descents passed through
/// (`simulate --btree-levels`: the traced run marks each node a descent reaches).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BtreeLevelRow {
    /// The row's name (`order_line 5/5`: the tree, then level / levels; `leaf (hint)`
    /// for its hinted leaves; `(no level)`), which `compare` lines rows up by.
    #[serde(default)]
    pub name: String,
    /// The tree's table and index (0: the primary index, k: the k-th secondary one);
    /// None for a tree its engine did not name and for the code outside any level.
    pub table: Option<u32>,
    pub index: Option<u32>,
    /// The tree's name, when the caller gave the names ([`Report::name_trees`]).
    #[serde(default)]
    pub tree: Option<String>,
    /// Levels in the tree (1: a tree that is one leaf); None for `hint`'s row and for
    /// the code outside any level.
    pub height: Option<u32>,
    /// The level, 1 for the root, `height` for the leaves; None as for `height`.
    pub level: Option<u32>,
    /// Leaves reached through a caller's leaf hint, without a descent.
    pub hint: bool,
    /// Nodes of this level reached (the markers seen).
    pub visits: u64,
    pub instructions: u64,
    /// (level name, misses) for each cache level present.
    pub misses: Vec<(String, Split)>,
    pub stall_cycles: u64,
}

impl BtreeLevelRow {
    /// The tree: its name, else its table and index numbers.
    fn tree_label(&self) -> String {
        match (&self.tree, self.table, self.index) {
            (Some(n), ..) => n.clone(),
            (None, Some(t), Some(i)) => format!("table {t} index {i}"),
            (None, ..) if self.height.is_some() || self.hint => "(unnamed)".to_string(),
            _ => "-".to_string(),
        }
    }

    fn label(&self) -> String {
        match (self.hint, self.level, self.height) {
            (true, ..) => format!("{} leaf (hint)", self.tree_label()),
            (false, Some(l), Some(h)) => format!("{} {l}/{h}", self.tree_label()),
            _ => "(no level)".to_string(),
        }
    }
}

/// One function's figures (functions are ranked by stall cycles).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionRow {
    /// Demangled name of the function that decided the component (the innermost
    /// non-library inlined frame), or `(unknown)` for unresolved code.
    pub function: String,
    pub component: String,
    pub instructions: u64,
    /// (level name, misses) for each level present.
    pub misses: Vec<(String, Split)>,
    pub stall_cycles: u64,
}

/// One thread role's figures: the workers (with threads that declared no role) are what
/// every other table measures; background roles are counted apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    /// `workers`, or a background role (`page cleaner`, `log flusher`, ...).
    pub role: String,
    /// Distinct thread ids seen with this role.
    pub threads: usize,
    pub instructions: u64,
    /// (level name, misses) for each level present.
    pub misses: Vec<(String, Split)>,
    pub stall_cycles: u64,
}

/// How warm-up was decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmupReport {
    /// `fixed` or `auto`.
    pub mode: String,
    /// Warm-up transactions (the cap with `auto`).
    pub txns_limit: u64,
    /// Transactions warm-up took (all of them if it never completed).
    pub txns: u64,
    /// Worker instructions during warm-up.
    pub instructions: u64,
    /// Why it ended, or None if the trace ended first.
    pub decided: Option<String>,
    /// Auto: (transactions at the end of each window, MPKI per level in that window).
    pub windows: Vec<(u64, Vec<f64>)>,
}

/// How the settling rule (`simulate --until-settled`) ended the measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettleReport {
    pub rule: crate::settle::Rule,
    /// The rule in words.
    pub method: String,
    /// `settled`, `cap` (the transaction cap came first) or `trace ended` (the trace
    /// held fewer transactions than the cap).
    pub stopped: String,
    /// The cap (`--txns`), if any.
    pub cap: Option<u64>,
    /// Transactions measured (after warm-up).
    pub transactions: u64,
    /// Each watched figure over the complete batches: estimate, 95% half-width,
    /// tolerance, halves.
    pub intervals: Vec<crate::settle::Interval>,
    /// Every complete batch (instructions, misses per watched level in `intervals`'
    /// order after instructions/txn).
    pub batches: Vec<crate::settle::Batch>,
}

/// Rows of a breakdown table in the text rendering (the JSON has them all).
pub const TEXT_ROWS: usize = 40;

/// How many functions the report lists.
pub const TOP_FUNCTIONS: usize = 30;

const OTHER_NAME: &str = components::OTHER;

/// How many unmapped functions the report keeps (the text shows `UNMAPPED_TEXT`).
pub const UNMAPPED_KEPT: usize = 2000;
const UNMAPPED_TEXT: usize = 15;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub config: Config,
    /// After warm-up.
    pub instructions: u64,
    /// Transaction attempts (an aborted attempt counts): the `per_txn` figures' divisor.
    pub transactions: u64,
    /// Of `transactions`, those that committed (traces that do not mark aborts count
    /// every attempt). None in reports older than the count.
    #[serde(default)]
    pub committed_transactions: Option<u64>,
    /// The workers' coroutines started or resumed (CONTEXT markers: `--coroutines`,
    /// `--steps-team`, `--interleave`); 0 without coroutines.
    #[serde(default)]
    pub coroutine_switches: u64,
    pub instructions_per_txn: Option<f64>,
    pub warmup_txns: u64,
    pub warmup_completed: bool,
    #[serde(default)]
    pub warmup: Option<WarmupReport>,
    /// The settling rule's outcome (None without `--until-settled`).
    #[serde(default)]
    pub settle: Option<SettleReport>,
    /// Workers first, then background roles; every other table is the workers'.
    #[serde(default)]
    pub threads: Vec<ThreadRow>,
    /// Worker instructions in code charged to `other` that counted for the caller's
    /// component instead (caller attribution).
    #[serde(default)]
    pub caller_attributed_instructions: u64,
    /// Instruction total from the tracer's END record (warm-up included), if seen.
    pub tracer_instructions: Option<u64>,
    pub levels: Vec<LevelReport>,
    pub total_stall_cycles: u64,
    pub sweep: Vec<SweepPoint>,
    pub by_operation: Vec<Breakdown>,
    pub by_component: Vec<Breakdown>,
    /// Non-empty (operation, component) pairs.
    pub by_operation_component: Vec<Breakdown>,
    /// Number of distinct functions seen.
    pub functions_resolved: usize,
    /// The `TOP_FUNCTIONS` functions with the most stall cycles.
    pub top_functions: Vec<FunctionRow>,
    /// Worker instructions in the system's own functions that match no component rule
    /// (what a map misses, code without a symbol whose neighbours' components differ),
    /// before caller attribution. Library code is counted apart.
    #[serde(default)]
    pub unmapped_instructions: u64,
    /// Those functions, most instructions first (at most `UNMAPPED_KEPT`).
    #[serde(default)]
    pub unmapped_functions: Vec<FunctionRow>,
    /// Worker instructions in library code, which has no component of its own (shared
    /// libraries such as libc, Rust's standard library, the allocator), before caller
    /// attribution.
    #[serde(default)]
    pub library_instructions: u64,
    /// Those functions, most instructions first (at most `UNMAPPED_KEPT`).
    #[serde(default)]
    pub library_functions: Vec<FunctionRow>,
    /// By transaction type, in type order (empty in reports older than the table).
    #[serde(default)]
    pub by_txn_type: Vec<TypeRow>,
    /// The B+tree component by tree level (empty unless the traced run marked levels,
    /// `--btree-levels`): each tree height's levels, root first, then leaves reached
    /// through hints, then the B+tree's code outside any level (rows sum to the
    /// component's figures).
    #[serde(default)]
    pub btree_levels: Vec<BtreeLevelRow>,
    pub warnings: Vec<String>,
    pub caveat: String,
}

fn op_name(slot: usize) -> String {
    match slot {
        0 => "none".to_string(),
        s if s == OP_UNKNOWN as usize => "unknown".to_string(),
        s => probe::Op::from_u32(s as u32)
            .map_or("unknown", |o| o.name())
            .to_string(),
    }
}

impl Simulator {
    /// Everything measured so far (here, not in `sim`, so the simulator never imports
    /// its report).
    pub fn report(&self) -> Report {
        build(self)
    }
}

pub(crate) fn build(sim: &Simulator) -> Report {
    let cfg = &sim.config;
    let instr = sim.counts.instructions;
    let txns = sim.counts.transactions;
    // The workers' statistics, wherever they are while a background thread runs.
    let (wstats, wsweep, wsweep_llc) = sim.worker_stats();
    let ctx = Ctx::new(sim);
    let (levels, total_stall) = ctx.levels(&wstats);
    let sweep = ctx.sweep(&wsweep, &wsweep_llc, &levels, total_stall);
    let (by_operation, by_component, by_operation_component) = ctx.breakdowns();
    let threads = ctx.threads();
    let functions = ctx.functions();
    let by_txn_type = ctx.types();
    let btree_levels = ctx.btree_levels();
    Report {
        config: cfg.clone(),
        instructions: instr,
        transactions: txns,
        committed_transactions: Some(sim.counts.committed),
        coroutine_switches: sim.counts.coroutine_switches,
        instructions_per_txn: (txns > 0).then(|| instr as f64 / txns as f64),
        warmup_txns: cfg.warmup_txns,
        warmup_completed: sim.warmed_up,
        warmup: Some(warmup(sim)),
        settle: settle_report(sim),
        threads,
        caller_attributed_instructions: sim.counts.inherited_instructions,
        tracer_instructions: sim.tracer_total,
        levels,
        total_stall_cycles: total_stall,
        sweep,
        by_operation,
        by_component,
        by_operation_component,
        functions_resolved: sim.functions.len() - 2,
        top_functions: functions.top,
        unmapped_instructions: functions.unmapped_instructions,
        unmapped_functions: functions.unmapped,
        library_instructions: functions.library_instructions,
        library_functions: functions.library,
        by_txn_type,
        btree_levels,
        warnings: warnings(sim),
        caveat: if sim.counts.coroutine_switches > 0 {
            format!("{CAVEAT}; {COROUTINE_CAVEAT}")
        } else {
            CAVEAT.to_string()
        },
    }
}

/// What every table of the report needs: the levels present and what a miss costs in each.
struct Ctx<'a> {
    sim: &'a Simulator,
    /// Worker instructions after warm-up: the MPKI divisor.
    instr: u64,
    /// (slot, name) of each level present, L1-I first.
    slot_names: Vec<(usize, &'static str)>,
    /// penalty[slot]: latency of whatever serves a miss in that slot.
    penalty: [u32; 4],
}

/// The function tables: the top ones by stall cycles, and the code with no component.
struct Functions {
    top: Vec<FunctionRow>,
    unmapped_instructions: u64,
    unmapped: Vec<FunctionRow>,
    library_instructions: u64,
    library: Vec<FunctionRow>,
}

impl<'a> Ctx<'a> {
    fn new(sim: &'a Simulator) -> Ctx<'a> {
        let cfg = &sim.config;
        let mut slot_names: Vec<(usize, &'static str)> = vec![(L1I, "L1-I"), (L1D, "L1-D")];
        for (_, slot) in sim.unified_levels() {
            slot_names.push((slot, if slot == crate::sim::L2 { "L2" } else { "LLC" }));
        }
        let unified: Vec<LevelConfig> = sim.unified_levels().map(|(l, _)| l.config).collect();
        let mut penalty = [cfg.memory_latency_cycles; 4];
        let first_below = unified
            .first()
            .map_or(cfg.memory_latency_cycles, |c| c.latency_cycles);
        penalty[L1I] = first_below;
        penalty[L1D] = first_below;
        for (j, (_, slot)) in sim.unified_levels().enumerate() {
            penalty[slot] = unified
                .get(j + 1)
                .map_or(cfg.memory_latency_cycles, |c| c.latency_cycles);
        }
        Ctx {
            sim,
            instr: sim.counts.instructions,
            slot_names,
            penalty,
        }
    }

    /// The levels table (with each level's 3C) and the total of their stall cycles.
    fn levels(&self, wstats: &[LevelStats]) -> (Vec<LevelReport>, u64) {
        let sim = self.sim;
        let txns = sim.counts.transactions;
        let mut configs = vec![sim.l1[I].config, sim.l1[D].config];
        configs.extend(sim.unified_levels().map(|(l, _)| l.config));
        let mut levels = Vec::new();
        let mut total_stall = 0;
        for (j, (&(slot, name), lc)) in self.slot_names.iter().zip(configs).enumerate() {
            let st = &wstats[j];
            let misses = Split::new(st.misses);
            let stall = misses.times(self.penalty[slot] as u64);
            total_stall += stall.total;
            levels.push(LevelReport {
                name: name.to_string(),
                config: lc,
                miss_penalty_cycles: self.penalty[slot],
                accesses: Split::new(st.accesses),
                misses,
                mpki: misses.per(self.instr, 1000.0),
                misses_per_txn: (txns > 0).then(|| misses.per(txns, 1.0)),
                stall_cycles: stall,
                three_c: sim.config.three_c.then(|| ThreeC::of(st)),
            });
        }
        (levels, total_stall)
    }

    /// The sweep's points, each with its share had it replaced the configured cache.
    fn sweep(
        &self,
        wsweep: &[LevelStats],
        wsweep_llc: &[LevelStats],
        levels: &[LevelReport],
        total_stall: u64,
    ) -> Vec<SweepPoint> {
        let sim = self.sim;
        let cfg = &sim.config;
        let point = |name: &str, l: &crate::cache::Level, st: &LevelStats, pen: u32| {
            let misses = Split::new(st.misses);
            SweepPoint {
                level: name.to_string(),
                config: l.config,
                accesses: Split::new(st.accesses),
                misses,
                mpki: misses.per(self.instr, 1000.0),
                stall_cycles: misses.total * pen as u64,
                three_c: cfg.three_c.then(|| ThreeC::of(st)),
                stall_share: None,
            }
        };
        let mut sweep: Vec<SweepPoint> = (sim
            .sweep
            .iter()
            .zip(wsweep)
            .map(|(l, st)| point("L1-I", l, st, self.penalty[L1I])))
        .chain(
            sim.sweep_llc
                .iter()
                .zip(wsweep_llc)
                .map(|(l, st)| point("LLC", l, st, cfg.memory_latency_cycles)),
        )
        .collect();
        // Each point's share: the L1-I's against the configured L1-I, an LLC point's
        // against the last level present.
        let configured = |name: &str| {
            let l = if name == "L1-I" {
                levels.first()
            } else {
                levels.last().filter(|l| l.name == "L2" || l.name == "LLC")
            };
            l.map_or(0, |l| l.stall_cycles.total)
        };
        for p in &mut sweep {
            p.stall_share = swapped_stall_share(total_stall, configured(&p.level), p.stall_cycles);
        }
        sweep
    }

    /// One breakdown row: a cell's figures per level.
    fn row(&self, op: Option<String>, comp: Option<String>, c: &Cell) -> Breakdown {
        let mut stall_total = 0;
        let levels = self
            .slot_names
            .iter()
            .map(|&(slot, name)| {
                let misses = Split::new(c.misses[slot]);
                let stall = misses.times(self.penalty[slot] as u64);
                stall_total += stall.total;
                RowLevel {
                    level: name.to_string(),
                    accesses: Split::new(c.accesses[slot]),
                    misses,
                    mpki: misses.per(self.instr, 1000.0),
                    stall_cycles: stall,
                }
            })
            .collect();
        Breakdown {
            operation: op,
            component: comp,
            instructions: c.instructions,
            levels,
            stall_cycles: stall_total,
        }
    }

    /// By operation, by component, by (operation, component), each most stall first.
    fn breakdowns(&self) -> (Vec<Breakdown>, Vec<Breakdown>, Vec<Breakdown>) {
        let sim = self.sim;
        let names = sim.symbols.table.names();
        let ncomp = sim.ncomp();
        let cell = |op: usize, comp: usize| &sim.counts.cells[op * ncomp + comp];
        let mut by_operation = Vec::new();
        let mut by_operation_component = Vec::new();
        for op in 0..OP_SLOTS {
            let mut sum = Cell::default();
            for (comp, name) in names.iter().enumerate() {
                let c = cell(op, comp);
                sum.add(c);
                if nonempty(c) {
                    by_operation_component.push(self.row(Some(op_name(op)), Some(name.clone()), c));
                }
            }
            if nonempty(&sum) {
                by_operation.push(self.row(Some(op_name(op)), None, &sum));
            }
        }
        let mut by_component = Vec::new();
        for (comp, name) in names.iter().enumerate() {
            let mut sum = Cell::default();
            (0..OP_SLOTS).for_each(|op| sum.add(cell(op, comp)));
            if nonempty(&sum) {
                by_component.push(self.row(None, Some(name.clone()), &sum));
            }
        }
        let by_stall = |a: &Breakdown, b: &Breakdown| b.stall_cycles.cmp(&a.stall_cycles);
        by_operation.sort_by(by_stall);
        by_component.sort_by(by_stall);
        by_operation_component.sort_by(by_stall);
        (by_operation, by_component, by_operation_component)
    }

    /// Misses per level and the stall cycles they cost, for the thread and function rows.
    fn misses_and_stall(&self, m: &[[u64; 2]; 4]) -> (Vec<(String, Split)>, u64) {
        let misses: Vec<(String, Split)> = self
            .slot_names
            .iter()
            .map(|&(slot, n)| (n.to_string(), Split::new(m[slot])))
            .collect();
        let stall_cycles: u64 = self
            .slot_names
            .iter()
            .map(|&(slot, _)| Split::new(m[slot]).total * self.penalty[slot] as u64)
            .sum();
        (misses, stall_cycles)
    }

    /// Rows per transaction type slot with instructions or transactions.
    fn types(&self) -> Vec<TypeRow> {
        let sim = self.sim;
        let names = sim.symbols.table.names();
        let ncomp = sim.ncomp();
        let mut out = Vec::new();
        for slot in 0..TYPE_SLOTS {
            let cells = &sim.counts.types[slot * ncomp..(slot + 1) * ncomp];
            let mut sum = FuncCell::default();
            let mut components = Vec::new();
            for (comp, c) in cells.iter().enumerate() {
                sum.add(c);
                if *c != FuncCell::default() {
                    let (_, stall) = self.misses_and_stall(&c.misses);
                    components.push((names[comp].clone(), c.instructions, stall));
                }
            }
            let txns = sim.counts.type_txns[slot];
            if sum == FuncCell::default() && txns == 0 {
                continue;
            }
            let (misses, stall_cycles) = self.misses_and_stall(&sum.misses);
            out.push(TypeRow {
                txn_type: slot.checked_sub(1).map(|t| t as u32),
                name: None,
                transactions: txns,
                instructions: sum.instructions,
                misses,
                stall_cycles,
                components,
            });
        }
        out
    }

    /// Rows per B+tree level seen, by height then level (root first), hinted leaves,
    /// then the B+tree's code outside any level; none when no level marker was seen.
    fn btree_levels(&self) -> Vec<BtreeLevelRow> {
        let sim = self.sim;
        if sim.level_args.is_empty() {
            return Vec::new();
        }
        let row = |cell: usize, arg: Option<u32>| {
            let c = &sim.counts.levels[cell];
            let (misses, stall_cycles) = self.misses_and_stall(&c.misses);
            let l = arg.map(probe::level::decode);
            let tree = l.and_then(|l| l.tree);
            let at = l.and_then(|l| l.at);
            BtreeLevelRow {
                name: String::new(),
                table: tree.map(|t| t.0),
                index: tree.map(|t| t.1),
                tree: None,
                height: at.map(|a| a.1),
                level: at.map(|a| a.0 + 1),
                hint: l.is_some_and(|l| l.at.is_none()),
                visits: sim.counts.level_visits[cell],
                instructions: c.instructions,
                misses,
                stall_cycles,
            }
        };
        let mut rows: Vec<BtreeLevelRow> = (sim.level_args.iter().enumerate())
            .map(|(j, &a)| row(crate::sim::LEVEL_FIRST + j, Some(a)))
            .filter(|r| r.visits > 0 || r.instructions > 0)
            .collect();
        // By tree (unnamed ones last), the tallest height first, each root to leaf; the
        // tree's hinted leaves after its levels.
        rows.sort_by_key(|r| {
            (
                r.table.is_none(),
                r.table,
                r.index,
                r.hint,
                std::cmp::Reverse(r.height),
                r.level,
            )
        });
        rows.push(row(crate::sim::LEVEL_OUTSIDE, None));
        for r in &mut rows {
            r.name = r.label();
        }
        rows
    }

    /// Rows per thread role, from the same cells: the workers' row sums the (operation,
    /// component) matrix, each background role has a cell of its own.
    fn threads(&self) -> Vec<ThreadRow> {
        let sim = self.sim;
        let ncomp = sim.ncomp();
        let role_name = |slot: usize| match slot {
            ROLE_UNKNOWN => "unknown role".to_string(),
            s => probe::Role::from_u32(s as u32)
                .map_or("?", |r| r.name())
                .to_string(),
        };
        let thread_row = |role: String, threads: usize, c: &Cell| {
            let (misses, stall_cycles) = self.misses_and_stall(&c.misses);
            ThreadRow {
                role,
                threads,
                instructions: c.instructions,
                misses,
                stall_cycles,
            }
        };
        // A thread is seen without a role until its role marker follows its THREAD record:
        // it counts as unlabeled only if it never declared one.
        let declared = |t: u32| sim.role_threads.iter().any(|&(u, s)| u == t && s != 0);
        let count_threads = |pred: &dyn Fn(usize) -> bool| {
            let mut tids: Vec<u32> = sim
                .role_threads
                .iter()
                .filter(|&&(t, s)| t != 0 && pred(s) && (s != 0 || !declared(t)))
                .map(|&(t, _)| t)
                .collect();
            tids.sort_unstable();
            tids.dedup();
            tids.len()
        };
        let is_worker = |s: usize| s == 0 || s == probe::Role::Worker as usize;
        let mut workers = Cell::default();
        sim.counts.cells[..OP_SLOTS * ncomp]
            .iter()
            .for_each(|c| workers.add(c));
        let mut threads = vec![thread_row(
            "workers".to_string(),
            count_threads(&is_worker),
            &workers,
        )];
        for slot in 1..ROLE_SLOTS {
            if is_worker(slot) {
                continue;
            }
            let c = &sim.counts.cells[OP_SLOTS * ncomp + slot];
            if nonempty(c) {
                threads.push(thread_row(
                    role_name(slot),
                    count_threads(&|s| s == slot),
                    c,
                ));
            }
        }
        threads[1..].sort_by_key(|t| std::cmp::Reverse(t.stall_cycles));
        threads
    }

    /// The top functions by stall cycles, and the unmapped and library functions.
    fn functions(&self) -> Functions {
        let sim = self.sim;
        let names = sim.symbols.table.names();
        let mut top_functions: Vec<FunctionRow> = sim
            .functions
            .iter()
            .zip(&sim.counts.func)
            .enumerate()
            // Id 1 collects the background threads' code.
            .filter(|(id, _)| *id != 1)
            .map(|(_, f)| f)
            .filter(|(_, c)| c.instructions > 0 || c.misses.iter().flatten().any(|&m| m > 0))
            .map(|((name, comp), c)| {
                let (misses, stall_cycles) = self.misses_and_stall(&c.misses);
                FunctionRow {
                    function: name.clone(),
                    component: names[*comp as usize].clone(),
                    instructions: c.instructions,
                    misses,
                    stall_cycles,
                }
            })
            .collect();
        // Code with no component: library code (it has none of its own) apart from the
        // system's code that no rule maps (the map's misses).
        let (mut library_functions, mut unmapped_functions): (Vec<FunctionRow>, Vec<FunctionRow>) =
            top_functions
                .iter()
                .filter(|f| f.component == names[0])
                .cloned()
                .partition(|f| sim.symbols.library.contains(&f.function));
        let unmapped_instructions = unmapped_functions.iter().map(|f| f.instructions).sum();
        let library_instructions = library_functions.iter().map(|f| f.instructions).sum();
        for v in [&mut unmapped_functions, &mut library_functions] {
            v.sort_by(|a, b| {
                b.instructions
                    .cmp(&a.instructions)
                    .then(a.function.cmp(&b.function))
            });
            v.truncate(UNMAPPED_KEPT);
        }
        top_functions.sort_by(|a, b| {
            b.stall_cycles
                .cmp(&a.stall_cycles)
                .then(a.function.cmp(&b.function))
        });
        top_functions.truncate(TOP_FUNCTIONS);
        Functions {
            top: top_functions,
            unmapped_instructions,
            unmapped: unmapped_functions,
            library_instructions,
            library: library_functions,
        }
    }
}

fn nonempty(c: &Cell) -> bool {
    c.instructions > 0 || c.accesses.iter().flatten().any(|&x| x > 0)
}

/// How warm-up went.
fn warmup(sim: &Simulator) -> WarmupReport {
    let cfg = &sim.config;
    let instr = sim.counts.instructions;
    let txns = sim.counts.transactions;
    WarmupReport {
        mode: if cfg.warmup_auto { "auto" } else { "fixed" }.to_string(),
        txns_limit: cfg.warmup_txns,
        txns: if sim.warmed_up {
            sim.txns_all - txns
        } else {
            sim.txns_all
        },
        instructions: if sim.warmed_up {
            sim.warmup_log.instructions
        } else {
            instr
        },
        decided: sim.warmup_log.decided.clone(),
        windows: sim.warmup_log.windows.clone(),
    }
}

/// The settling rule's outcome.
fn settle_report(sim: &Simulator) -> Option<SettleReport> {
    let rule = sim.config.settle?;
    let log = &sim.settle_log;
    let stopped = if log.settled_at.is_some() {
        "settled"
    } else if sim.done {
        "cap"
    } else {
        "trace ended"
    };
    Some(SettleReport {
        rule,
        method: rule.describe(),
        stopped: stopped.to_string(),
        cap: sim.config.measure_txns,
        transactions: sim.counts.transactions,
        intervals: crate::settle::judge(&rule, &log.names, &log.batches),
        batches: log.batches.clone(),
    })
}

/// The symbol loader's warnings, the trace's anomalies, and what the counts contradict.
fn warnings(sim: &Simulator) -> Vec<String> {
    let cfg = &sim.config;
    let mut warnings = sim.symbols.warnings.clone();
    warnings.extend(sim.anomalies.iter().cloned());
    if !sim.warmed_up {
        warnings.push(format!(
            "warm-up not completed: the trace has {} of the {} warm-up transactions; \
             statistics include the warm-up",
            sim.txns_all, cfg.warmup_txns
        ));
    }
    let unlabeled = sim.counts.role_instructions[0];
    if unlabeled > 0 && sim.counts.role_instructions[probe::Role::Worker as usize] > 0 {
        warnings.push(format!(
            "{} instructions ran on threads that declared no role; they are counted with \
             the workers",
            sep(unlabeled)
        ));
    }
    if sim.unmatched_op_end() > 0 {
        warnings.push(format!(
            "{} OP_END markers without a matching OP_BEGIN",
            sim.unmatched_op_end()
        ));
    }
    if let Some(t) = sim.tracer_total {
        if t != sim.instructions_all {
            warnings.push(format!(
                "the tracer counted {t} instructions but the stream's IFETCH records hold {}",
                sim.instructions_all
            ));
        }
    }
    warnings
}

/// Plain aligned table: first column left-aligned, the rest right-aligned.
/// A borderless table: the first column left-aligned, the others right-aligned, two
/// spaces between columns.
fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    use comfy_table::{presets::NOTHING, CellAlignment, Table};
    let mut t = Table::new();
    t.load_style(NOTHING).set_header(header.to_vec());
    for r in rows {
        t.add_row(r.clone());
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((if i == 0 { 0 } else { 2 }, 0));
        if i > 0 {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    for l in t.lines() {
        out.push_str(l.trim_end());
        out.push('\n');
    }
}

/// A count with thousands separators.
pub fn sep(x: u64) -> String {
    use num_format::{Locale, ToFormattedString};
    x.to_formatted_string(&Locale::en)
}

fn f2(x: f64) -> String {
    format!("{x:.2}")
}

/// The settling rule's lines: how it stopped, then every figure with its interval.
fn text_settle(o: &mut String, s: &SettleReport) {
    let how = match s.stopped.as_str() {
        "settled" => "settled".to_string(),
        "cap" => format!(
            "at the cap of {} transactions before every figure settled",
            sep(s.cap.unwrap_or(s.transactions))
        ),
        _ => "the trace ended before the figures settled or the cap".to_string(),
    };
    let _ = writeln!(
        o,
        "until settled (±{}%): stopped {how}, {} transactions measured in {} batches of {}",
        s.rule.rel * 100.0,
        sep(s.transactions),
        s.batches.len(),
        s.rule.batch_txns
    );
    let figures: Vec<String> = (s.intervals.iter())
        .map(|i| {
            let (v, hw) = (i.value, i.half_width);
            let hw = hw.map_or("?".to_string(), |h| match i.kind {
                crate::settle::Kind::PerTxn => format!("{:.0} ({:.1}%)", h, pct_f(h, v)),
                crate::settle::Kind::Mpki => format!("{h:.3}"),
            });
            let mark = if i.settled { "" } else { " (not settled)" };
            match i.kind {
                crate::settle::Kind::PerTxn => format!("{} {v:.0} ± {hw}{mark}", i.name),
                crate::settle::Kind::Mpki => format!("{} {v:.3} ± {hw}{mark}", i.name),
            }
        })
        .collect();
    let _ = writeln!(o, "  95% intervals: {}", figures.join("; "));
    let _ = writeln!(o, "  rule: {}", s.method);
}

fn pct_f(part: f64, whole: f64) -> f64 {
    if whole == 0.0 {
        0.0
    } else {
        part * 100.0 / whole
    }
}

impl Report {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Report always serializes")
    }

    /// Terminal rendering: the run's header, then one table per section.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        self.text_header(&mut o);
        self.text_levels(&mut o);
        self.text_three_c(&mut o);
        self.text_sweep(&mut o);
        self.text_breakdown(&mut o, "by operation", &self.by_operation);
        self.text_breakdown(&mut o, "by component", &self.by_component);
        self.text_breakdown(
            &mut o,
            "by operation and component",
            &self.by_operation_component,
        );
        self.text_types(&mut o);
        self.text_btree_levels(&mut o);
        self.text_threads(&mut o);
        self.text_top_functions(&mut o);
        self.text_unmapped(&mut o);
        let _ = writeln!(o, "note: {}", self.caveat);
        for w in &self.warnings {
            let _ = writeln!(o, "warning: {w}");
        }
        o
    }

    /// The preset, counts and warm-up, and what the tables count.
    fn text_header(&self, o: &mut String) {
        let c = &self.config;
        let _ = writeln!(
            o,
            "cache simulation: preset {}, {}, {} last level, memory {} cycles",
            c.preset,
            if c.tree_plru {
                "tree pseudo-LRU"
            } else {
                "LRU"
            },
            if c.last_level_inclusive {
                "inclusive"
            } else {
                "non-inclusive"
            },
            c.memory_latency_cycles
        );
        if let Some(note) = preset_note(c) {
            let _ = writeln!(o, "{note}");
        }
        let _ = write!(
            o,
            "instructions {}  transactions {}",
            sep(self.instructions),
            sep(self.transactions)
        );
        if let Some(c) = self
            .committed_transactions
            .filter(|c| *c < self.transactions)
        {
            let _ = write!(o, " ({} committed)", sep(c));
        }
        if let Some(ipt) = self.instructions_per_txn {
            let _ = write!(o, "  instructions/txn {ipt:.0}");
        }
        if self.coroutine_switches > 0 && self.transactions > 0 {
            let _ = write!(
                o,
                "  coroutine switches/txn {:.1}",
                self.coroutine_switches as f64 / self.transactions as f64
            );
        }
        match &self.warmup {
            Some(w) if w.decided.is_some() => {
                let _ = write!(
                    o,
                    "  (after {} warm-up transactions)\nwarm-up: {}",
                    sep(w.txns),
                    w.decided.as_deref().unwrap_or_default()
                );
            }
            _ if self.warmup_txns > 0 => {
                let _ = write!(
                    o,
                    "  (after {} warm-up transactions)",
                    sep(self.warmup_txns)
                );
            }
            _ => {}
        }
        o.push('\n');
        if let Some(s) = &self.settle {
            text_settle(o, s);
        }
        if self.threads.len() > 1 || self.caller_attributed_instructions > 0 {
            let _ = write!(
                o,
                "every table below counts the workers' threads only (background threads: see \
                 'threads')"
            );
            if self.caller_attributed_instructions > 0 {
                let _ = write!(
                    o,
                    "; code without a component (libc, std) counts for its caller's: {:.1}% \
                     of instructions",
                    pct(self.caller_attributed_instructions, self.instructions)
                );
            }
            o.push('\n');
        }
        o.push('\n');
    }

    /// One row per cache level, and the total stall cycles.
    fn text_levels(&self, o: &mut String) {
        let rows: Vec<Vec<String>> = self
            .levels
            .iter()
            .map(|l| {
                vec![
                    l.name.clone(),
                    l.config.spec(),
                    sep(l.accesses.i),
                    sep(l.accesses.d),
                    sep(l.misses.i),
                    sep(l.misses.d),
                    f2(l.mpki.i),
                    f2(l.mpki.d),
                    l.miss_penalty_cycles.to_string(),
                    sep(l.stall_cycles.total),
                    format!("{:.1}", pct(l.stall_cycles.total, self.total_stall_cycles)),
                    l.misses_per_txn
                        .map_or("-".into(), |m| format!("{:.1}", m.total)),
                ]
            })
            .collect();
        table(
            o,
            &[
                "level",
                "size:ways:line:lat",
                "acc I",
                "acc D",
                "miss I",
                "miss D",
                "MPKI I",
                "MPKI D",
                "penalty",
                "stall cycles",
                "stall %",
                "miss/txn",
            ],
            &rows,
        );
        let _ = writeln!(o, "total stall cycles {}", sep(self.total_stall_cycles));
    }

    /// Compulsory, capacity and conflict misses per level (when classified).
    fn text_three_c(&self, o: &mut String) {
        if self.levels.iter().any(|l| l.three_c.is_some()) {
            o.push_str("\n3C classification (misses)\n");
            let mut rows = Vec::new();
            for l in &self.levels {
                let Some(t) = l.three_c else { continue };
                for (k, pick) in [("I", 0), ("D", 1)] {
                    let g = |s: Split| if pick == 0 { s.i } else { s.d };
                    let miss = g(l.misses);
                    if miss == 0 {
                        continue;
                    }
                    let pct =
                        |x: u64| format!("{} ({:.0}%)", sep(x), 100.0 * x as f64 / miss as f64);
                    rows.push(vec![
                        format!("{} {k}", l.name),
                        sep(miss),
                        pct(g(t.compulsory)),
                        pct(g(t.capacity)),
                        pct(g(t.conflict)),
                    ]);
                }
            }
            table(
                o,
                &["level", "misses", "compulsory", "capacity", "conflict"],
                &rows,
            );
        }
    }

    /// The cache size sweep (when one ran).
    fn text_sweep(&self, o: &mut String) {
        if !self.sweep.is_empty() {
            o.push_str(
                "\ncache size sweep (misses; stall cycles = misses x the level's penalty; stall %: \
                 the level's share of all stall cycles with this cache in place of the \
                 configured one, the other levels as measured)\n",
            );
            let rows: Vec<Vec<String>> = self
                .sweep
                .iter()
                .map(|s| {
                    let t = s.three_c;
                    vec![
                        format!(
                            "{} {} {}-way {}B",
                            s.level,
                            format_size(s.config.size_bytes),
                            s.config.ways,
                            s.config.line_bytes
                        ),
                        sep(s.misses.i),
                        sep(s.misses.d),
                        f2(s.mpki.total),
                        sep(s.stall_cycles),
                        s.stall_share
                            .map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
                        t.map_or("-".into(), |t| sep(t.compulsory.total)),
                        t.map_or("-".into(), |t| sep(t.capacity.total)),
                        t.map_or("-".into(), |t| sep(t.conflict.total)),
                    ]
                })
                .collect();
            table(
                o,
                &[
                    "cache",
                    "miss I",
                    "miss D",
                    "MPKI",
                    "stall cycles",
                    "stall %",
                    "compulsory",
                    "capacity",
                    "conflict",
                ],
                &rows,
            );
        }
    }

    /// One breakdown table (by operation, component or both), its longest rows in JSON only.
    fn text_breakdown(&self, o: &mut String, title: &str, rows_in: &[Breakdown]) {
        let _ = writeln!(
            o,
            "\n{title} (misses per 1000 instructions of the run; stall cycles)"
        );
        let mut header = vec!["", "instr %"];
        let mpki_headers: Vec<String> = self
            .levels
            .iter()
            .map(|l| format!("{} MPKI", l.name))
            .collect();
        header.extend(mpki_headers.iter().map(String::as_str));
        header.push("stall cycles");
        header.push("stall %");
        let rows: Vec<Vec<String>> = rows_in
            .iter()
            .take(TEXT_ROWS)
            .map(|b| {
                let label = match (&b.operation, &b.component) {
                    (Some(op), Some(c)) => format!("{op} / {c}"),
                    (Some(op), None) => op.clone(),
                    (None, Some(c)) => c.clone(),
                    (None, None) => "-".into(),
                };
                let mut r = vec![
                    label,
                    format!("{:.1}", pct(b.instructions, self.instructions)),
                ];
                r.extend(b.levels.iter().map(|l| f2(l.mpki.total)));
                r.push(sep(b.stall_cycles));
                r.push(format!(
                    "{:.1}",
                    pct(b.stall_cycles, self.total_stall_cycles)
                ));
                r
            })
            .collect();
        table(o, &header, &rows);
        if rows_in.len() > TEXT_ROWS {
            let _ = writeln!(
                o,
                "({} more rows in the JSON report)",
                rows_in.len() - TEXT_ROWS
            );
        }
    }

    /// Name the transaction types (`names[t]` for type number t), for the per-type
    /// tables: the simulator knows numbers only.
    pub fn name_types(&mut self, names: &[String]) {
        for r in &mut self.by_txn_type {
            r.name = r.txn_type.and_then(|t| names.get(t as usize).cloned());
        }
    }

    /// The per-type tables: each type's misses per 1000 of its own instructions and its
    /// stall cycles, then each type's stall cycles by component (a column per type, as
    /// `profile`'s time by component). Only with more than one typed row.
    fn text_types(&self, o: &mut String) {
        let typed = self
            .by_txn_type
            .iter()
            .filter(|r| r.txn_type.is_some())
            .count();
        if typed < 2 && !self.by_txn_type.iter().any(|r| r.name.is_some()) {
            return;
        }
        let label = |r: &TypeRow| match (&r.name, r.txn_type) {
            (Some(n), _) => n.clone(),
            (None, Some(t)) => format!("type {t}"),
            (None, None) => "(no transaction)".into(),
        };
        let _ = writeln!(
            o,
            "
by transaction type (misses per 1000 of the type's own instructions; stall % of the run's)"
        );
        let mut header = vec!["".to_string(), "txns".into(), "instr/txn".into()];
        header.extend(self.levels.iter().map(|l| format!("{} MPKI", l.name)));
        header.push("stall %".into());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Vec<String>> = self
            .by_txn_type
            .iter()
            .map(|r| {
                let mut row = vec![
                    label(r),
                    r.transactions.to_string(),
                    r.instructions
                        .checked_div(r.transactions)
                        .map_or("-".into(), sep),
                ];
                row.extend(
                    r.misses
                        .iter()
                        .map(|(_, m)| f2(m.per(r.instructions, 1000.0).total)),
                );
                row.push(format!(
                    "{:.1}",
                    pct(r.stall_cycles, self.total_stall_cycles)
                ));
                row
            })
            .collect();
        table(o, &header, &rows);
        // Stall shares by component within each type, components by the run's order.
        let _ = writeln!(
            o,
            "
stall cycles by component within each transaction type (%)"
        );
        let mut header = vec![String::new()];
        header.extend(self.by_txn_type.iter().map(label));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows: Vec<Vec<String>> = self
            .by_component
            .iter()
            .filter_map(|b| b.component.as_ref())
            .take(TEXT_ROWS)
            .map(|comp| {
                let mut row = vec![comp.clone()];
                row.extend(self.by_txn_type.iter().map(|r| {
                    let stall = r
                        .components
                        .iter()
                        .find(|(c, _, _)| c == comp)
                        .map_or(0, |x| x.2);
                    format!("{:.1}", pct(stall, r.stall_cycles))
                }));
                row
            })
            .collect();
        table(o, &header, &rows);
    }

    /// Name the B+trees of the level table: `names[table][index]`.
    pub fn name_trees(&mut self, names: &[Vec<String>]) {
        for r in &mut self.btree_levels {
            r.tree = match (r.table, r.index) {
                (Some(t), Some(i)) => (names.get(t as usize))
                    .and_then(|n| n.get(i as usize))
                    .cloned(),
                _ => None,
            };
            r.name = r.label();
        }
    }

    /// The B+tree by level: per node visited, its instructions and data misses; per
    /// transaction, its visits and last-level misses.
    fn text_btree_levels(&self, o: &mut String) {
        if self.btree_levels.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "
B+tree by level (the B+tree's own code at each level its descents reached, per transaction and per node visited; data misses)"
        );
        let mut header = vec![
            "index".to_string(),
            "levels".into(),
            "level".into(),
            "visits/txn".into(),
            "instr/txn".into(),
            "instr/visit".into(),
        ];
        let data_levels: Vec<&LevelReport> =
            self.levels.iter().filter(|l| l.name != "L1-I").collect();
        header.extend(data_levels.iter().map(|l| format!("{} D/visit", l.name)));
        if let Some(l) = data_levels.last() {
            header.push(format!("{} D/txn", l.name));
        }
        header.push("stall %".into());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let txns = self.transactions;
        let rows: Vec<Vec<String>> = self
            .btree_levels
            .iter()
            .map(|r| {
                let index = r.tree_label();
                let (tree, level) = match (r.height, r.level, r.hint) {
                    (_, _, true) => ("-".to_string(), "leaf (hint)".to_string()),
                    (Some(h), Some(l), _) => (
                        h.to_string(),
                        match l {
                            1 if h > 1 => "1 (root)".to_string(),
                            l if l == h => format!("{l} (leaf)"),
                            l => l.to_string(),
                        },
                    ),
                    _ => ("-".to_string(), "(no level)".to_string()),
                };
                let per_visit = |x: u64| match r.visits {
                    0 => "-".to_string(),
                    v => format!("{:.2}", x as f64 / v as f64),
                };
                let per_txn = |x: u64, digits: usize| match txns {
                    0 => "-".to_string(),
                    t => format!("{:.*}", digits, x as f64 / t as f64),
                };
                let mut row = vec![
                    index,
                    tree,
                    level,
                    match r.visits {
                        0 => "-".to_string(),
                        v => per_txn(v, 2),
                    },
                    per_txn(r.instructions, 0),
                    match r.visits {
                        0 => "-".to_string(),
                        v => format!("{:.0}", r.instructions as f64 / v as f64),
                    },
                ];
                let data: Vec<u64> = data_levels
                    .iter()
                    .map(|l| {
                        r.misses
                            .iter()
                            .find(|(n, _)| *n == l.name)
                            .map_or(0, |(_, m)| m.d)
                    })
                    .collect();
                row.extend(data.iter().map(|&m| per_visit(m)));
                if let Some(&m) = data.last() {
                    row.push(per_txn(m, 2));
                }
                row.push(format!(
                    "{:.1}",
                    pct(r.stall_cycles, self.total_stall_cycles)
                ));
                row
            })
            .collect();
        table(o, &header, &rows);
    }

    /// The threads table (background threads apart).
    fn text_threads(&self, o: &mut String) {
        let level_names: Vec<String> = self.levels.iter().map(|l| l.name.clone()).collect();
        if self.threads.len() > 1 {
            let _ = writeln!(
                o,
                "\nthreads ({}; misses; stall % of the workers' stall cycles)",
                if self.config.background_own_core {
                    "background threads on a core of their own: private L1s and L2, shared \
                     last level"
                } else {
                    "background threads share the workers' caches"
                }
            );
            let mut header = vec!["role", "threads", "instructions"];
            header.extend(level_names.iter().map(String::as_str));
            header.push("stall %");
            let rows: Vec<Vec<String>> = self
                .threads
                .iter()
                .map(|t| {
                    let mut r = vec![t.role.clone(), t.threads.to_string(), sep(t.instructions)];
                    r.extend(t.misses.iter().map(|(_, m)| sep(m.total)));
                    r.push(format!(
                        "{:.1}",
                        pct(t.stall_cycles, self.total_stall_cycles)
                    ));
                    r
                })
                .collect();
            table(o, &header, &rows);
        }
    }

    /// Functions by stall cycles.
    fn text_top_functions(&self, o: &mut String) {
        let level_names: Vec<String> = self.levels.iter().map(|l| l.name.clone()).collect();
        if !self.top_functions.is_empty() {
            let _ = writeln!(
                o,
                "\ntop functions by stall cycles ({} functions seen; misses)",
                self.functions_resolved
            );
            let mut header = vec!["function", "component", "instr %"];
            header.extend(level_names.iter().map(String::as_str));
            header.push("stall %");
            let rows: Vec<Vec<String>> = self
                .top_functions
                .iter()
                .map(|f| {
                    let mut name = f.function.clone();
                    if name.chars().count() > 70 {
                        name = name.chars().take(67).collect::<String>() + "...";
                    }
                    let mut r = vec![
                        name,
                        f.component.clone(),
                        format!("{:.1}", pct(f.instructions, self.instructions)),
                    ];
                    r.extend(f.misses.iter().map(|(_, m)| sep(m.total)));
                    r.push(format!(
                        "{:.1}",
                        pct(f.stall_cycles, self.total_stall_cycles)
                    ));
                    r
                })
                .collect();
            table(o, &header, &rows);
        }
    }

    /// The code no component rule maps, listed rather than guessed.
    fn text_unmapped(&self, o: &mut String) {
        if self.instructions > 0 {
            let _ = writeln!(
                o,
                "\nlibrary code: {:.1}% of instructions in {} functions of shared libraries (libc), Rust's standard library and the allocator, which have no component of their own (JSON: library_functions); {}\nunmapped code: {:.1}% of instructions in {} of the system's functions no component rule maps (what a map misses, code without a symbol between functions of different components; JSON: unmapped_functions){}",
                pct(self.library_instructions, self.instructions),
                self.library_functions.len(),
                self.library_functions
                    .iter()
                    .take(4)
                    .map(|f| format!("{} {:.2}%", f.function, pct(f.instructions, self.instructions)))
                    .collect::<Vec<_>>()
                    .join(", "),
                pct(self.unmapped_instructions, self.instructions),
                self.unmapped_functions.len(),
                match self.by_component.iter().find(|b| b.component.as_deref() == Some(OTHER_NAME)) {
                    Some(b) if self.config.caller_attribution => format!(
                        "; each run counts for the component of the code that ran before it, which leaves {:.1}% in 'other'",
                        pct(b.instructions, self.instructions)
                    ),
                    _ if self.config.caller_attribution => "; each run counts for the component of the code that ran before it, which leaves 0.0% in 'other'".to_string(),
                    _ => "; counted as 'other'".to_string(),
                }
            );
            let rows: Vec<Vec<String>> = self
                .unmapped_functions
                .iter()
                .take(UNMAPPED_TEXT)
                .map(|f| {
                    let mut name = f.function.clone();
                    if name.chars().count() > 70 {
                        name = name.chars().take(67).collect::<String>() + "...";
                    }
                    vec![
                        name,
                        format!("{:.2}", pct(f.instructions, self.instructions)),
                    ]
                })
                .collect();
            if !rows.is_empty() {
                table(o, &["function", "instr %"], &rows);
            }
        }
    }
}

fn pct(x: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * x as f64 / total as f64
    }
}
