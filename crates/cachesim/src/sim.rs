//! The simulator: feeds trace records through L1-I / L1-D -> [L2] -> [LLC] -> memory,
//! with the L1-I sweep alongside, and charges every access and miss to the current
//! (thread, operation) and to the component of the instruction that made it.
//!
//! Owns the hierarchy wiring (who is asked on a miss, back-invalidation of an inclusive
//! last level), attribution state and warm-up. Must never allocate per access: the
//! attribution matrix is sized at start-up and the address -> component cache only grows
//! on a new instruction-run address.

use crate::cache::{Class, Level, Outcome, D, EMPTY, I};
use crate::config::Config;
use crate::report::{self, Report};
use crate::symbols::{ComponentTable, Symbolizer};
use crate::trace::{self, marker, Reader, Record};
use rustc_hash::FxHashMap;
use std::io::Read;

/// Attribution slots: 0 = outside any operation, 1..=8 = probe::Op, 9 = unknown code.
pub const OP_SLOTS: usize = 10;
pub const OP_UNKNOWN: u8 = 9;
/// Level slots in attribution cells.
pub const L1I: usize = 0;
pub const L1D: usize = 1;
pub const L2: usize = 2;
pub const LLC: usize = 3;

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
    pub transactions: u64,
    pub cells: Vec<Cell>,
    /// Per function id.
    pub func: Vec<FuncCell>,
}

/// Counters of one function (misses only: cheaper than accesses, enough for ranking).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct FuncCell {
    pub instructions: u64,
    pub misses: [[u64; 2]; 4],
}

pub struct Simulator {
    pub(crate) config: Config,
    pub(crate) l1: [Level; 2],
    unified: Vec<Unified>,
    pub(crate) sweep: Vec<Level>,
    pub(crate) sweep_llc: Vec<Level>,
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
    /// Per-thread operation stacks (innermost last); `stack` is the running thread's.
    stacks: FxHashMap<u32, Vec<u8>>,
    tid: u32,
    stack: Vec<u8>,
    cur_op: usize,
    cur_comp: usize,
    cur_cell: usize,
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
}

impl Simulator {
    /// Validates the configuration and allocates every cache (the only large allocation).
    pub fn new(config: Config) -> Result<Simulator, String> {
        config.validate()?;
        let three_c = config.three_c;
        let plru = config.tree_plru;
        let table = ComponentTable::new(&config.components);
        let ncomp = table.names().len();
        let mut unified = Vec::new();
        if let Some(l2) = config.l2 {
            unified.push(Unified {
                level: Level::with_replacement(l2, three_c, plru),
                slot: L2,
            });
        }
        if let Some(llc) = config.llc {
            unified.push(Unified {
                level: Level::with_replacement(llc, three_c, plru),
                slot: LLC,
            });
        }
        Ok(Simulator {
            l1: [
                Level::with_replacement(config.l1i, three_c, plru),
                Level::with_replacement(config.l1d, three_c, plru),
            ],
            unified,
            sweep: config
                .sweep_l1i
                .iter()
                .map(|c| Level::with_replacement(*c, three_c, plru))
                .collect(),
            sweep_llc: config
                .sweep_llc
                .iter()
                .map(|c| Level::with_replacement(*c, three_c, plru))
                .collect(),
            symbols: Symbolizer::new(table),
            ncomp,
            counts: Counts {
                instructions: 0,
                transactions: 0,
                cells: vec![Cell::default(); OP_SLOTS * ncomp],
                func: vec![FuncCell::default()],
            },
            instructions_all: 0,
            txns_all: 0,
            warmed_up: config.warmup_txns == 0,
            tracer_total: None,
            anomalies: Vec::new(),
            unmatched_op_end: 0,
            stacks: FxHashMap::default(),
            tid: 0,
            stack: Vec::new(),
            cur_op: 0,
            cur_comp: 0,
            cur_cell: 0,
            comp_cache: FxHashMap::default(),
            comp_memo: vec![(EMPTY, 0, 0); COMP_MEMO_SLOTS].into_boxed_slice(),
            cur_func: 0,
            last_iaddr: EMPTY,
            functions: vec![("(unknown)".to_string(), 0)],
            function_ids: FxHashMap::default(),
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
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
            let comp = comp as usize;
            self.cur_func = func as usize;
            if comp != self.cur_comp {
                self.cur_comp = comp;
                self.cur_cell = self.cur_op * self.ncomp + comp;
            }
        }
        self.counts.instructions += ninstr as u64;
        self.instructions_all += ninstr as u64;
        self.counts.cells[self.cur_cell].instructions += ninstr as u64;
        self.counts.func[self.cur_func].instructions += ninstr as u64;
        // A hand-made record may say 0 bytes; the reader rejects that, feed tolerates it.
        let last = addr + (len.max(1) as u64) - 1;
        let shift = self.l1[I].line_shift;
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
                self.l1_ref(I, addr >> shift);
                self.span(I, line_end, last);
            }
        } else {
            for line in addr >> shift..=last >> shift {
                self.l1_ref(I, line);
            }
        }
        for s in &mut self.sweep {
            for line in addr >> s.line_shift..=last >> s.line_shift {
                s.access(line, I);
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
                self.l1_ref(D, line);
            }
        }
    }

    #[inline]
    fn l1_ref(&mut self, k: usize, line: u64) {
        let cell = &mut self.counts.cells[self.cur_cell];
        cell.accesses[k][k] += 1;
        if let Outcome::Miss(_) = self.l1[k].access(line, k) {
            cell.misses[k][k] += 1;
            self.counts.func[self.cur_func].misses[k][k] += 1;
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
            // Config::validate rules out an inclusive last level here: no back-invalidation.
            if j == self.unified.len() {
                return;
            }
            if j == self.unified.len() - 1 {
                for s in &mut self.sweep_llc {
                    span_level(s, k, first, last);
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
            if j == n - 1 {
                for s in &mut self.sweep_llc {
                    s.access(addr >> s.line_shift, k);
                }
            }
            let u = &mut self.unified[j];
            let line = addr >> u.level.line_shift;
            let cell = &mut self.counts.cells[self.cur_cell];
            cell.accesses[u.slot][k] += 1;
            match u.level.access(line, k) {
                Outcome::Hit => return,
                Outcome::Miss(victim) => {
                    cell.misses[u.slot][k] += 1;
                    self.counts.func[self.cur_func].misses[u.slot][k] += 1;
                    if j == n - 1 && victim != EMPTY && self.config.last_level_inclusive {
                        let bytes = u.level.config.line_bytes as u64;
                        let victim_addr = victim << u.level.line_shift;
                        self.back_invalidate(victim_addr, bytes);
                    }
                }
            }
        }
    }

    /// The inclusive last level evicted [addr, addr+bytes): drop it from every level above.
    fn back_invalidate(&mut self, addr: u64, bytes: u64) {
        let n = self.unified.len();
        let upper = self
            .l1
            .iter_mut()
            .chain(self.unified[..n - 1].iter_mut().map(|u| &mut u.level));
        for lvl in upper {
            let s = lvl.line_shift;
            for line in addr >> s..=(addr + bytes - 1) >> s {
                lvl.invalidate(line);
            }
        }
    }

    fn set_op(&mut self) {
        self.cur_op = self.stack.last().copied().unwrap_or(0) as usize;
        self.cur_cell = self.cur_op * self.ncomp + self.cur_comp;
    }

    fn switch_thread(&mut self, tid: u32) {
        if tid == self.tid {
            return;
        }
        let old = std::mem::take(&mut self.stack);
        if !old.is_empty() {
            self.stacks.insert(self.tid, old);
        }
        self.tid = tid;
        self.stack = self.stacks.remove(&tid).unwrap_or_default();
        self.set_op();
    }

    fn marker(&mut self, code: u8, arg: u32) {
        let slot = probe::Op::from_u32(arg).map_or(OP_UNKNOWN, |o| o as u8);
        match code {
            marker::OP_BEGIN => {
                self.stack.push(slot);
                self.set_op();
            }
            marker::OP_END => {
                // Innermost matching op; a missing begin is counted, not fatal.
                match self.stack.iter().rposition(|&s| s == slot) {
                    Some(i) => self.stack.truncate(i),
                    None => self.unmatched_op_end += 1,
                }
                self.set_op();
            }
            marker::TXN_END => {
                self.txns_all += 1;
                self.counts.transactions += 1;
                if !self.warmed_up && self.txns_all >= self.config.warmup_txns {
                    self.warmed_up = true;
                    self.reset_stats();
                }
            }
            marker::TXN_BEGIN | marker::TRACE_START | marker::TRACE_STOP | marker::CTX_POINT => {}
            c => {
                let msg = format!("unknown MARKER code {c} ignored");
                if !self.anomalies.contains(&msg) {
                    self.anomalies.push(msg);
                }
            }
        }
    }

    /// Clears statistics (not cache contents, first-touch sets or op stacks).
    pub fn reset_stats(&mut self) {
        self.counts.instructions = 0;
        self.counts.transactions = 0;
        self.counts
            .cells
            .iter_mut()
            .for_each(|c| *c = Cell::default());
        // The functions table too: it must sum to the same totals as every other table.
        self.counts
            .func
            .iter_mut()
            .for_each(|f| *f = FuncCell::default());
        self.l1.iter_mut().for_each(Level::reset_stats);
        self.unified.iter_mut().for_each(|u| u.level.reset_stats());
        self.sweep.iter_mut().for_each(Level::reset_stats);
        self.sweep_llc.iter_mut().for_each(Level::reset_stats);
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

    /// Everything measured so far.
    pub fn report(&self) -> Report {
        report::build(self)
    }
}

/// Slots of `Simulator::comp_memo` (16 B each): more than the distinct run addresses of
/// an OLTP hot path.
const COMP_MEMO_SLOTS: usize = 1 << 14;

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
