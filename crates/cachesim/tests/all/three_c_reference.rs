//! The 3C classification checked against a reference simulator written separately here,
//! by the textbook definitions (Hill): a miss is *compulsory* if it is the first reference
//! to the line, else *capacity* if a fully-associative LRU cache of the same number of
//! lines misses it too, else *conflict*. The reference shares no code with cachesim: its
//! set-associative cache keeps each set as a list with the LRU line first, its
//! fully-associative shadow orders lines by last-use time in a B-tree map.
//!
//! Inputs: synthetic streams with known answers, and a recorded one:
//! `data/tpcb-disk-l1i-lines.gz` is the L1-I reference stream (64-byte lines) of the
//! worker thread of `oltpscope run tpcb --engine disk --threads 1 --log async`,
//! transactions 1001-1100, made with `examples/l1i_lines.rs` from an oltptrace trace
//! (see docs/design/cachesim.md, "3C validation").

use cachesim::cache::{Level, LevelStats, I};
use cachesim::LevelConfig;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;

/// Misses by class: (misses, compulsory, capacity, conflict).
type Counts = (u64, u64, u64, u64);

struct Reference {
    sets: Vec<Vec<u64>>,
    ways: usize,
    fa_cap: usize,
    fa_time: HashMap<u64, u64>,
    fa_order: BTreeMap<u64, u64>,
    seen: HashSet<u64>,
    now: u64,
    counts: Counts,
}

impl Reference {
    fn new(lines: usize, ways: usize) -> Reference {
        Reference {
            sets: vec![Vec::new(); lines / ways],
            ways,
            fa_cap: lines,
            fa_time: HashMap::new(),
            fa_order: BTreeMap::new(),
            seen: HashSet::new(),
            now: 0,
            counts: (0, 0, 0, 0),
        }
    }

    fn access(&mut self, line: u64) {
        self.now += 1;
        // Fully associative LRU of the same capacity.
        let fa_hit = match self.fa_time.insert(line, self.now) {
            Some(t) => {
                self.fa_order.remove(&t);
                true
            }
            None => false,
        };
        self.fa_order.insert(self.now, line);
        if self.fa_time.len() > self.fa_cap {
            let (&t, &victim) = self.fa_order.iter().next().unwrap();
            self.fa_order.remove(&t);
            self.fa_time.remove(&victim);
        }
        // Set associative LRU: LRU first, MRU last.
        let n = self.sets.len() as u64;
        let set = &mut self.sets[(line % n) as usize];
        let hit = match set.iter().position(|&l| l == line) {
            Some(i) => {
                set.remove(i);
                true
            }
            None => {
                if set.len() == self.ways {
                    set.remove(0);
                }
                false
            }
        };
        set.push(line);
        let first = self.seen.insert(line);
        if !hit {
            self.counts.0 += 1;
            if first {
                self.counts.1 += 1;
            } else if !fa_hit {
                self.counts.2 += 1;
            } else {
                self.counts.3 += 1;
            }
        }
    }
}

fn cachesim_counts(cfg: LevelConfig, stream: &[u64]) -> Counts {
    let mut l = Level::new(cfg, true);
    for &line in stream {
        l.access(line, I);
    }
    let s: LevelStats = l.stats;
    (s.misses[I], s.compulsory[I], s.capacity[I], s.conflict[I])
}

fn reference_counts(cfg: LevelConfig, stream: &[u64]) -> Counts {
    let mut r = Reference::new(cfg.lines() as usize, cfg.ways as usize);
    for &line in stream {
        r.access(line);
    }
    r.counts
}

const K: u64 = 1024;

#[test]
fn synthetic_streams_give_the_known_answers_in_both() {
    let cfg = LevelConfig::new(32 * K, 8, 64, 4); // 64 sets, 512 lines
                                                  // Nine lines of one set, cycled 100 times: 9 compulsory misses, then every reference
                                                  // misses in 8 ways while a 512-line fully-associative cache holds all nine.
    let one_set: Vec<u64> = (0..100).flat_map(|_| (0..9).map(|i| i * 64)).collect();
    let want = (900, 9, 0, 891);
    assert_eq!(reference_counts(cfg, &one_set), want);
    assert_eq!(cachesim_counts(cfg, &one_set), want);
    // 513 consecutive lines cycled: one line too many for a 512-line LRU cache, which
    // then misses every reference (capacity). The set-associative cache misses only in
    // set 0, which gets 9 of them (lines 0, 64, ..., 512): 9 misses per pass after the
    // first, all capacity since the fully-associative cache misses them too (and it
    // misses 4,536 references the set-associative cache hits, which no class counts).
    let cyclic: Vec<u64> = (0..10).flat_map(|_| 0..513u64).collect();
    let want = (513 + 9 * 9, 513, 81, 0);
    assert_eq!(reference_counts(cfg, &cyclic), want);
    assert_eq!(cachesim_counts(cfg, &cyclic), want);
    // 512 consecutive lines fit exactly: compulsory misses only.
    let fits: Vec<u64> = (0..10).flat_map(|_| 0..512u64).collect();
    let want = (512, 512, 0, 0);
    assert_eq!(reference_counts(cfg, &fits), want);
    assert_eq!(cachesim_counts(cfg, &fits), want);
}

fn recorded() -> Vec<u64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/tpcb-disk-l1i-lines.gz"
    );
    let f = std::fs::File::open(path).expect("the recorded stream is in the repository");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(f)
        .read_to_end(&mut bytes)
        .expect("the recorded stream decompresses");
    let (mut v, mut prev, mut z, mut shift) = (Vec::new(), 0u64, 0u64, 0);
    for b in bytes {
        z |= ((b & 0x7f) as u64) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            let d = ((z >> 1) as i64) ^ -((z & 1) as i64);
            prev = prev.wrapping_add(d as u64);
            v.push(prev);
            (z, shift) = (0, 0);
        }
    }
    assert_eq!(shift, 0, "the stream ends inside a number");
    v
}

#[test]
fn recorded_tpcb_stream_classifies_the_same_in_both() {
    let stream = recorded();
    assert!(stream.len() > 500_000, "{} references", stream.len());
    for (size, ways) in [
        (32 * K, 8),   // Wonderland's Xeon E5-2660
        (64 * K, 2),   // STEPS' AthlonXP
        (16 * K, 4),   // STEPS' Pentium III (64-byte lines here)
        (32 * K, 1),   // direct mapped
        (32 * K, 512), // fully associative: no conflict misses by definition
    ] {
        let cfg = LevelConfig::new(size, ways, 64, 4);
        let r = reference_counts(cfg, &stream);
        let c = cachesim_counts(cfg, &stream);
        eprintln!(
            "{}K {ways}-way: reference {r:?}, cachesim {c:?} (misses, compulsory, capacity, conflict)",
            size / K
        );
        assert_eq!(c, r, "{}K {ways}-way", size / K);
        if ways == 512 {
            assert_eq!(c.3, 0);
        }
    }
}

/// Why the 8-way L1-I sees mostly conflict misses on this stream: what each set holds
/// between two references to the same line. For every miss, count the distinct lines
/// referenced since the previous reference to the missing line in all of the cache
/// (global reuse distance) and in its set (set reuse distance). A conflict miss is one
/// whose global distance is below 512 lines but whose set distance is 8 or more: the
/// hot code is not spread evenly over the 64 sets.
#[test]
fn recorded_tpcb_conflicts_come_from_uneven_sets() {
    // A third of the stream keeps this brute-force test fast in debug builds.
    let stream: Vec<u64> = recorded().into_iter().take(300_000).collect();
    let (lines, ways) = (512usize, 8usize);
    let sets = lines / ways;
    // Recency lists (LRU first): all of the cache (the fully-associative LRU contents)
    // and, per set, every line ever referenced there (for the set reuse distance).
    let mut global: Vec<u64> = Vec::new();
    let mut per_set: Vec<Vec<u64>> = vec![Vec::new(); sets];
    let (mut conflict, mut capacity) = (0u64, 0u64);
    let mut set_depth_hist = [0u64; 5]; // set distance 8-15, 16-31, 32-63, 64+; FA-only miss
    for &line in &stream {
        let s = (line % sets as u64) as usize;
        let fa_hit = global.contains(&line);
        let sd = per_set[s]
            .iter()
            .rposition(|&l| l == line)
            .map(|i| per_set[s].len() - 1 - i);
        if let Some(sd) = sd {
            if sd >= ways {
                if fa_hit {
                    conflict += 1;
                    let b = match sd {
                        8..=15 => 0,
                        16..=31 => 1,
                        32..=63 => 2,
                        _ => 3,
                    };
                    set_depth_hist[b] += 1;
                } else {
                    capacity += 1;
                }
            } else if !fa_hit {
                set_depth_hist[4] += 1; // a set-associative hit that FA-LRU would miss
            }
        }
        for list in [&mut global, &mut per_set[s]] {
            if let Some(i) = list.iter().rposition(|&l| l == line) {
                list.remove(i);
            }
            list.push(line);
        }
        if global.len() > lines {
            global.remove(0);
        }
    }
    // The same misses as the classification above (by definition they must agree).
    let cfg = LevelConfig::new(32 * K, 8, 64, 4);
    let c = cachesim_counts(cfg, &stream);
    assert_eq!((capacity, conflict), (c.2, c.3));
    // Footprint of the hot code and how unevenly it falls on the sets.
    let distinct: HashSet<u64> = stream.iter().copied().collect();
    let mut occ = vec![0usize; sets];
    distinct
        .iter()
        .for_each(|&l| occ[(l % sets as u64) as usize] += 1);
    occ.sort_unstable();
    eprintln!(
        "{} references, {} distinct lines ({} KB); lines per set: min {} median {} max {}; \
         sets holding more than 8 lines: {} of {sets}",
        stream.len(),
        distinct.len(),
        distinct.len() * 64 / 1024,
        occ[0],
        occ[sets / 2],
        occ[sets - 1],
        occ.iter().filter(|&&o| o > ways).count()
    );
    eprintln!(
        "misses: capacity {capacity}, conflict {conflict}; conflict misses by set reuse \
         distance 8-15 / 16-31 / 32-63 / 64+: {:?}; set-associative hits that \
         fully-associative LRU misses: {}",
        &set_depth_hist[..4],
        set_depth_hist[4]
    );
}
