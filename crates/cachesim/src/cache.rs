//! One cache level: a set-associative true-LRU tag store, its statistics, and the 3C
//! shadow state (first-touch set + fully-associative LRU of the same number of lines).
//!
//! Owns the per-access hot path: flat arrays, no allocation per access (the shadow's hash
//! map is sized at start-up; the first-touch set only grows on a compulsory miss).
//! Must never know about the hierarchy above or below it: the simulator wires levels.

use crate::config::LevelConfig;
use crate::lru_stack::LruStack;
use rustc_hash::FxHashMap;

/// Tag value of an empty way; no real line number reaches it (addresses are < 2^48).
pub const EMPTY: u64 = u64::MAX;

/// Index of instruction (0) and data (1) counters.
pub const I: usize = 0;
pub const D: usize = 1;

/// Set-associative cache. True LRU (default): each set's ways are kept MRU-first, so a
/// hit in way 0 costs one compare and the victim is always the last way. Tree pseudo-LRU:
/// ways stay in place and a per-set bit tree (ways - 1 bits, node 1 the root, bit 0 =
/// the victim is on the left) points away from recent accesses; free ways fill first.
pub struct SetAssoc {
    set_mask: u64,
    ways: usize,
    tags: Vec<u64>,
    plru: Option<Vec<u64>>,
}

impl SetAssoc {
    /// Tree pseudo-LRU variant; `ways` must be a power of two <= 32 (validated).
    pub fn new_plru(sets: u64, ways: u32) -> SetAssoc {
        assert!(
            ways.is_power_of_two() && ways <= 32,
            "validated geometry: tree-PLRU with {ways} ways"
        );
        let mut c = SetAssoc::new(sets, ways);
        c.plru = Some(vec![0; sets as usize]);
        c
    }

    #[inline]
    fn plru_access(&mut self, line: u64) -> Option<u64> {
        let set = (line & self.set_mask) as usize;
        let base = set * self.ways;
        let tags = &mut self.tags[base..base + self.ways];
        let bits = &mut self.plru.as_mut().expect("PLRU state")[set];
        let levels = self.ways.trailing_zeros();
        let (way, victim) = match tags.iter().position(|&t| t == line) {
            Some(w) => (w, None),
            None => {
                let w = tags.iter().position(|&t| t == EMPTY).unwrap_or_else(|| {
                    let (mut node, mut w) = (1usize, 0usize);
                    for _ in 0..levels {
                        let dir = (*bits >> node) as usize & 1;
                        w = w * 2 + dir;
                        node = node * 2 + dir;
                    }
                    w
                });
                let old = tags[w];
                tags[w] = line;
                (w, Some(old))
            }
        };
        let mut node = 1usize;
        for l in (0..levels).rev() {
            let dir = (way >> l) & 1;
            // Point the victim search away from the way just used.
            if dir == 0 {
                *bits |= 1 << node;
            } else {
                *bits &= !(1 << node);
            }
            node = node * 2 + dir;
        }
        victim
    }

    pub fn new(sets: u64, ways: u32) -> SetAssoc {
        assert!(
            sets.is_power_of_two() && ways > 0,
            "validated geometry: sets {sets} ways {ways}"
        );
        SetAssoc {
            set_mask: sets - 1,
            ways: ways as usize,
            tags: vec![EMPTY; sets as usize * ways as usize],
            plru: None,
        }
    }

    /// References `line`; returns None on a hit, Some(victim) on a miss (EMPTY when the
    /// set had a free way).
    #[inline]
    pub fn access(&mut self, line: u64) -> Option<u64> {
        if self.plru.is_some() {
            return self.plru_access(line);
        }
        let base = (line & self.set_mask) as usize * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        if set[0] == line {
            return None;
        }
        // Search and move down in one pass: each way takes the one above it until the
        // line is found (a hit: it is now on top) or the last way falls out (the
        // victim). A search, then `copy_within`, cost a `memmove` call per reference.
        let mut carry = set[0];
        set[0] = line;
        for way in &mut set[1..] {
            let t = *way;
            *way = carry;
            if t == line {
                return None;
            }
            carry = t;
        }
        Some(carry)
    }

    /// Removes `line` if present (back-invalidation); returns whether it was.
    pub fn invalidate(&mut self, line: u64) -> bool {
        let base = (line & self.set_mask) as usize * self.ways;
        let set = &mut self.tags[base..base + self.ways];
        match set.iter().position(|&t| t == line) {
            Some(i) if self.plru.is_some() => {
                set[i] = EMPTY;
                true
            }
            Some(i) => {
                set.copy_within(i + 1.., i);
                let last = set.len() - 1;
                set[last] = EMPTY;
                true
            }
            None => false,
        }
    }

    pub fn contains(&self, line: u64) -> bool {
        let base = (line & self.set_mask) as usize * self.ways;
        self.tags[base..base + self.ways].contains(&line)
    }
}

/// Counters of one level, each split instruction / data.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LevelStats {
    pub accesses: [u64; 2],
    pub misses: [u64; 2],
    pub compulsory: [u64; 2],
    pub capacity: [u64; 2],
    pub conflict: [u64; 2],
}

/// Lines ever referenced: a bitmap in 32 Ki-line pages found through a hash map, with
/// the last page cached (touches cluster, so most inserts are one load and one store).
#[derive(Default)]
pub struct SeenSet {
    index: FxHashMap<u64, u32>,
    pages: Vec<Box<[u64; SEEN_PAGE_WORDS]>>,
    last_page: Option<(u64, u32)>,
}

const SEEN_PAGE_BITS: u32 = 15;
const SEEN_PAGE_WORDS: usize = (1 << SEEN_PAGE_BITS) / 64;

impl SeenSet {
    /// Adds `line`; returns whether it was new.
    #[inline]
    pub fn insert(&mut self, line: u64) -> bool {
        let page = line >> SEEN_PAGE_BITS;
        let idx = match self.last_page {
            Some((p, i)) if p == page => i,
            _ => {
                let pages = &mut self.pages;
                let i = *self.index.entry(page).or_insert_with(|| {
                    pages.push(Box::new([0; SEEN_PAGE_WORDS]));
                    pages.len() as u32 - 1
                });
                self.last_page = Some((page, i));
                i
            }
        };
        let bit = (line & ((1 << SEEN_PAGE_BITS) - 1)) as usize;
        let w = &mut self.pages[idx as usize][bit / 64];
        let m = 1u64 << (bit % 64);
        let new = *w & m == 0;
        *w |= m;
        new
    }
}

struct Shadow {
    /// A stack of one capacity: the level's own fully-associative LRU shadow.
    fa: LruStack,
    seen: SeenSet,
}

/// A level's 3C state.
enum ThreeC {
    Off,
    /// Its own fully-associative shadow and first-touch set.
    Own(Shadow),
    /// Its shadow is the `StreamShadow` of the levels that see the same stream of lines,
    /// at this capacity index; the caller passes that stream's answer with each access.
    Shared(usize),
}

/// The 3C shadow of every level that sees one stream of lines (the L1-I and its sweep
/// points, the last level and its sweep points): one LRU stack for all their
/// fully-associative capacities and one first-touch set, instead of a shadow each. A
/// level's shadow sees exactly the stream without its immediate repeats, which change
/// no LRU state; so does this one.
pub struct StreamShadow {
    stack: LruStack,
    seen: SeenSet,
    last: u64,
    /// Log2 of the stream's line size.
    pub line_shift: u32,
}

/// What the stream's shadow says of one reference: the index of the smallest capacity
/// that held the line (see `LruStack::access`), and whether the stream never saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamRef {
    zone: usize,
    new: bool,
}

impl StreamRef {
    /// For a level with no shared shadow (ignored by it).
    pub const NONE: StreamRef = StreamRef {
        zone: usize::MAX,
        new: false,
    };
}

impl StreamShadow {
    /// For levels of these geometries, all of one line size.
    pub fn new(levels: &[LevelConfig]) -> StreamShadow {
        let line_bytes = levels[0].line_bytes;
        assert!(
            levels.iter().all(|l| l.line_bytes == line_bytes),
            "one stream shadow for one line size: {levels:?}"
        );
        let caps: Vec<u64> = levels.iter().map(LevelConfig::lines).collect();
        StreamShadow {
            stack: LruStack::new(&caps),
            seen: SeenSet::default(),
            last: EMPTY,
            line_shift: line_bytes.trailing_zeros(),
        }
    }

    /// Whether `line` is the stream's last line (its reference changes nothing).
    #[inline(always)]
    pub fn is_last(&self, line: u64) -> bool {
        line == self.last
    }

    /// References `line` (at the stream's line size).
    #[inline]
    pub fn access(&mut self, line: u64) -> StreamRef {
        if line == self.last {
            return StreamRef {
                zone: 0,
                new: false,
            };
        }
        self.last = line;
        let zone = self.stack.access(line);
        // A line the stack holds was seen; only one it does not hold asks the set.
        let new = zone == self.stack.zones() && self.seen.insert(line);
        StreamRef { zone, new }
    }
}

/// 3C class of a miss (`Unclassified` when 3C is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Compulsory,
    Capacity,
    Conflict,
    Unclassified,
}

/// What a reference did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Hit,
    /// Miss; the victim line (EMPTY if none was evicted).
    Miss(u64),
}

/// A cache level with statistics and (optionally) 3C classification.
pub struct Level {
    pub config: LevelConfig,
    pub line_shift: u32,
    cache: SetAssoc,
    three_c: ThreeC,
    /// The line referenced last: MRU in its set and in the shadow, so a repeat is a hit
    /// in both and changes no state.
    last_line: u64,
    pub stats: LevelStats,
}

impl Level {
    pub fn new(config: LevelConfig, three_c: bool) -> Level {
        Level::with_replacement(config, three_c, false)
    }

    /// `plru`: tree pseudo-LRU instead of true LRU (the 3C shadow stays true LRU).
    pub fn with_replacement(config: LevelConfig, three_c: bool, plru: bool) -> Level {
        Level {
            config,
            line_shift: config.line_bytes.trailing_zeros(),
            cache: if plru {
                SetAssoc::new_plru(config.sets(), config.ways)
            } else {
                SetAssoc::new(config.sets(), config.ways)
            },
            three_c: match three_c {
                true => ThreeC::Own(Shadow {
                    fa: LruStack::new(&[config.lines()]),
                    seen: SeenSet::default(),
                }),
                false => ThreeC::Off,
            },
            last_line: EMPTY,
            stats: LevelStats::default(),
        }
    }

    /// A level whose 3C shadow is `stream`'s (3C on): every access then goes through
    /// `access_with` / `reference_with` with the stream's answer for its line.
    pub fn in_stream(config: LevelConfig, plru: bool, stream: &StreamShadow) -> Level {
        assert_eq!(
            config.line_bytes.trailing_zeros(),
            stream.line_shift,
            "a level shares the shadow of a stream of its own line size"
        );
        let mut l = Level::with_replacement(config, false, plru);
        l.three_c = ThreeC::Shared(stream.stack.capacity_index(config.lines()));
        l
    }

    /// Whether `line` is the line referenced last (a repeat: a hit that changes no state).
    #[inline(always)]
    pub fn is_last(&self, line: u64) -> bool {
        line == self.last_line
    }

    /// Counts a repeat of the last line (`is_last`) for kind `k`: what `access` does then.
    #[inline(always)]
    pub fn count_repeat(&mut self, k: usize) {
        debug_assert!(self.last_line != EMPTY);
        self.stats.accesses[k] += 1;
    }

    /// Whether the level's 3C shadow is a stream's (`in_stream`).
    pub fn shares_stream(&self) -> bool {
        matches!(self.three_c, ThreeC::Shared(_))
    }

    /// References line number `line` (address >> line_shift) for kind `k` (I or D).
    /// A repeat of the last line (most references: consecutive instruction runs and
    /// stack accesses share lines) is counted inline, without a call.
    #[inline(always)]
    pub fn access(&mut self, line: u64, k: usize) -> Outcome {
        self.access_with(line, k, StreamRef::NONE)
    }

    /// `access`; `r` is the shared stream shadow's answer for `line` if the level has
    /// one (`in_stream`), ignored otherwise.
    #[inline(always)]
    pub fn access_with(&mut self, line: u64, k: usize, r: StreamRef) -> Outcome {
        if line == self.last_line {
            self.stats.accesses[k] += 1;
            return Outcome::Hit;
        }
        self.access_other(line, k, r)
    }

    #[inline(never)]
    fn access_other(&mut self, line: u64, k: usize, r: StreamRef) -> Outcome {
        let (out, class) = self.reference_with(line, r);
        self.count(k, (out != Outcome::Hit).then_some(class));
        out
    }

    /// Counts one access of kind `k`; `miss` is its class if it missed.
    #[inline]
    pub fn count(&mut self, k: usize, miss: Option<Class>) {
        self.stats.accesses[k] += 1;
        if let Some(class) = miss {
            self.stats.misses[k] += 1;
            match class {
                Class::Compulsory => self.stats.compulsory[k] += 1,
                Class::Capacity => self.stats.capacity[k] += 1,
                Class::Conflict => self.stats.conflict[k] += 1,
                Class::Unclassified => {}
            }
        }
    }

    /// Updates the tag store and the shadow for `line` without counting; the class is
    /// meaningful only for a miss.
    #[inline]
    pub fn reference(&mut self, line: u64) -> (Outcome, Class) {
        self.reference_with(line, StreamRef::NONE)
    }

    /// `reference` with the shared stream shadow's answer (see `access_with`).
    #[inline]
    pub fn reference_with(&mut self, line: u64, r: StreamRef) -> (Outcome, Class) {
        if line == self.last_line {
            return (Outcome::Hit, Class::Unclassified);
        }
        self.last_line = line;
        let res = self.cache.access(line);
        // (compulsory, fully-associative hit) if the level missed.
        let shadow = match &mut self.three_c {
            ThreeC::Off => None,
            ThreeC::Own(sh) => {
                let fa_hit = sh.fa.access(line) == 0;
                res.is_some().then(|| (sh.seen.insert(line), fa_hit))
            }
            &mut ThreeC::Shared(ci) => {
                assert!(
                    r != StreamRef::NONE,
                    "a level sharing a stream's shadow was referenced without its answer"
                );
                res.is_some().then_some((r.new, r.zone <= ci))
            }
        };
        let class = match shadow {
            None => Class::Unclassified,
            Some((true, _)) => Class::Compulsory,
            Some((false, false)) => Class::Capacity,
            // Includes misses caused by back-invalidation from an inclusive LLC.
            Some((false, true)) => Class::Conflict,
        };
        match res {
            None => (Outcome::Hit, class),
            Some(victim) => (Outcome::Miss(victim), class),
        }
    }

    /// Drops `line` from the tag store (not from the shadow: see `Level::access`).
    pub fn invalidate(&mut self, line: u64) {
        if self.cache.invalidate(line) && self.last_line == line {
            self.last_line = EMPTY;
        }
    }

    pub fn contains(&self, line: u64) -> bool {
        self.cache.contains(line)
    }

    pub fn reset_stats(&mut self) {
        self.stats = LevelStats::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: LevelConfig, lines: impl IntoIterator<Item = u64>) -> LevelStats {
        let mut l = Level::new(cfg, true);
        for line in lines {
            l.access(line, D);
        }
        l.stats
    }

    #[test]
    fn lru_order_and_victims() {
        let mut c = SetAssoc::new(1, 2);
        assert_eq!(c.access(1), Some(EMPTY));
        assert_eq!(c.access(2), Some(EMPTY));
        assert_eq!(c.access(1), None);
        // 2 is now LRU and is evicted.
        assert_eq!(c.access(3), Some(2));
        assert!(c.contains(1) && c.contains(3) && !c.contains(2));
        assert!(c.invalidate(1));
        assert!(!c.invalidate(1));
        assert_eq!(c.access(4), Some(EMPTY));
    }

    #[test]
    fn tree_plru_differs_from_lru_as_expected() {
        // 4 ways, one set: after A B C D A, true LRU evicts B; the tree points at C.
        let (a, b, c, d, e) = (1, 2, 3, 4, 5);
        let mut lru = SetAssoc::new(1, 4);
        let mut plru = SetAssoc::new_plru(1, 4);
        for x in [a, b, c, d, a] {
            lru.access(x);
            plru.access(x);
        }
        assert_eq!(lru.access(e), Some(b));
        assert_eq!(plru.access(e), Some(c));
        assert!(plru.contains(a) && plru.contains(b) && plru.contains(d));
        assert_eq!(plru.access(a), None);
        assert!(plru.invalidate(d));
        assert_eq!(plru.access(d), Some(EMPTY), "a free way fills first");
        // Two ways: tree-PLRU is exact LRU.
        let (mut l2, mut p2) = (SetAssoc::new(4, 2), SetAssoc::new_plru(4, 2));
        let mut x: u64 = 99;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let line = (x >> 33) % 17;
            assert_eq!(l2.access(line).is_some(), p2.access(line).is_some());
        }
    }

    #[test]
    fn seen_set_matches_a_hash_set() {
        let mut s = SeenSet::default();
        let mut h = std::collections::HashSet::new();
        let mut x: u64 = 7;
        for _ in 0..20000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let line = if x & 1 == 0 {
                (x >> 20) % 100_000
            } else {
                x >> 22
            };
            assert_eq!(s.insert(line), h.insert(line));
        }
    }

    /// Level against a naive model (per-set MRU-first vectors, a global LRU vector and a
    /// seen list) on random streams with locality, for several geometries.
    #[test]
    fn level_matches_a_naive_3c_model() {
        for &(sets, ways) in &[(1u64, 4u32), (4, 1), (8, 2), (16, 4), (2, 8)] {
            let cfg = LevelConfig::new(sets * ways as u64 * 64, ways, 64, 1);
            let mut lvl = Level::new(cfg, true);
            let cap = (sets * ways as u64) as usize;
            let mut naive_sets: Vec<Vec<u64>> = vec![Vec::new(); sets as usize];
            let mut fa: Vec<u64> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut want = LevelStats::default();
            let mut x: u64 = sets * 1000 + ways as u64;
            for _ in 0..20_000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let line = if (x >> 60) < 12 {
                    (x >> 30) % (cap as u64 * 2)
                } else {
                    (x >> 30) % 500
                };
                let set = &mut naive_sets[(line % sets) as usize];
                let hit = set.contains(&line);
                set.retain(|&l| l != line);
                set.insert(0, line);
                set.truncate(ways as usize);
                let fa_hit = fa.contains(&line);
                fa.retain(|&l| l != line);
                fa.insert(0, line);
                fa.truncate(cap);
                want.accesses[D] += 1;
                if !hit {
                    want.misses[D] += 1;
                    if seen.insert(line) {
                        want.compulsory[D] += 1;
                    } else if !fa_hit {
                        want.capacity[D] += 1;
                    } else {
                        want.conflict[D] += 1;
                    }
                }
                seen.insert(line);
                lvl.access(line, D);
            }
            assert_eq!(lvl.stats, want, "{sets} sets x {ways} ways");
            assert!(want.conflict[D] > 0 || ways as u64 * sets == ways as u64);
        }
    }

    #[test]
    fn compulsory_only() {
        // Every line touched once: all misses are compulsory, whatever the geometry.
        let s = run(LevelConfig::new(1024, 2, 64, 1), 0..100);
        assert_eq!(s.misses[D], 100);
        assert_eq!(s.compulsory[D], 100);
        assert_eq!(s.capacity[D] + s.conflict[D], 0);
    }

    #[test]
    fn pure_conflict_in_a_direct_mapped_cache() {
        // 16 sets, direct-mapped: lines 0 and 16 share set 0 and evict each other, while
        // a 16-line fully-associative cache holds both.
        let seq = (0..50).flat_map(|_| [0u64, 16]);
        let s = run(LevelConfig::new(16 * 64, 1, 64, 1), seq);
        assert_eq!(s.accesses[D], 100);
        assert_eq!(s.misses[D], 100);
        assert_eq!(s.compulsory[D], 2);
        assert_eq!(s.capacity[D], 0);
        assert_eq!(s.conflict[D], 98);
    }

    #[test]
    fn pure_capacity_with_a_cyclic_working_set() {
        // 8 lines of capacity (4 sets x 2 ways), cycling over 12 lines: LRU misses every
        // time in both the real cache and the fully-associative shadow.
        let seq = (0..10).flat_map(|_| 0u64..12);
        let s = run(LevelConfig::new(8 * 64, 2, 64, 1), seq);
        assert_eq!(s.misses[D], 120);
        assert_eq!(s.compulsory[D], 12);
        assert_eq!(s.capacity[D], 108);
        assert_eq!(s.conflict[D], 0);
    }

    #[test]
    fn working_set_that_fits_only_misses_compulsorily() {
        let seq = (0..10).flat_map(|_| 0u64..8);
        let s = run(LevelConfig::new(8 * 64, 2, 64, 1), seq);
        assert_eq!((s.misses[D], s.compulsory[D]), (8, 8));
    }

    #[test]
    fn repeated_line_takes_the_fast_path_and_counts() {
        let mut l = Level::new(LevelConfig::new(1024, 2, 64, 1), true);
        for _ in 0..10 {
            l.access(7, I);
        }
        assert_eq!(l.stats.accesses[I], 10);
        assert_eq!(l.stats.misses[I], 1);
        l.invalidate(7);
        assert_eq!(l.access(7, I), Outcome::Miss(EMPTY));
        assert_eq!(l.stats.conflict[I], 1);
    }
}
