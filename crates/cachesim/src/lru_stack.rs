//! Mattson's LRU stack answering several fully-associative LRU capacities at once: the
//! 3C shadow of every cache that sees one stream of lines (the L1-I and its sweep points,
//! the last level and its sweep points).
//!
//! A fully-associative LRU cache of C lines holds exactly the C most recently used
//! distinct lines, so a reference hits it iff fewer than C distinct lines were referenced
//! since the line's last use: one recency list, cut at each capacity, answers them all.
//! The list keeps a marker on the last line within each capacity; a reference moves the
//! markers in front of the line's old position back by one (those lines slip one place
//! deeper), so an access costs O(capacities below the line's depth), not O(depth).
//!
//! One open-addressing table (linear probing, at most half full, backward-shift
//! deletion) whose slots are also the nodes of the intrusive doubly-linked recency list:
//! a lookup and the list update touch the same slot, which matters when a large LLC's
//! shadow misses the host caches. A stack of one capacity is a level's own
//! fully-associative shadow. Must never allocate per access: every slot is allocated at
//! start-up.

const NIL: u32 = u32::MAX;
/// Line value of a free slot; no line number reaches it (line >= 8 bytes).
const FREE: u64 = u64::MAX;

#[derive(Clone, Copy)]
struct Slot {
    /// FREE for a free slot.
    line: u64,
    prev: u32,
    next: u32,
    /// Index of the smallest capacity that holds this line (its band of depths).
    zone: u32,
}

/// Recency stack of at most the largest capacity's lines.
pub struct LruStack {
    /// Distinct capacities, ascending.
    caps: Vec<u32>,
    /// `marks[j]`: the slot of the line at depth `caps[j] - 1` (the least recent one a
    /// cache of `caps[j]` lines holds), NIL while the stack holds fewer lines.
    marks: Vec<u32>,
    len: u32,
    shift: u32,
    mask: usize,
    slots: Vec<Slot>,
    head: u32,
    tail: u32,
}

impl LruStack {
    /// A stack for these capacities (in lines; any order, repeats allowed).
    pub fn new(capacities: &[u64]) -> LruStack {
        let mut caps: Vec<u64> = capacities.to_vec();
        caps.sort_unstable();
        caps.dedup();
        let max = *caps.last().expect("at least one capacity");
        assert!(
            caps[0] > 0 && max < (NIL / 4) as u64,
            "LRU stack capacities {caps:?} out of range"
        );
        let size = (max * 2).next_power_of_two().max(2);
        LruStack {
            marks: vec![NIL; caps.len()],
            caps: caps.into_iter().map(|c| c as u32).collect(),
            len: 0,
            shift: 64 - size.trailing_zeros(),
            mask: size as usize - 1,
            slots: vec![
                Slot {
                    line: FREE,
                    prev: NIL,
                    next: NIL,
                    zone: 0,
                };
                size as usize
            ],
            head: NIL,
            tail: NIL,
        }
    }

    /// The index `access` compares against for a cache of `lines` lines (one of the
    /// capacities given to `new`).
    pub fn capacity_index(&self, lines: u64) -> usize {
        self.caps
            .iter()
            .position(|&c| c as u64 == lines)
            .unwrap_or_else(|| panic!("capacity {lines} not in the stack's {:?}", self.caps))
    }

    /// Number of distinct capacities: what `access` returns for a line none holds.
    pub fn zones(&self) -> usize {
        self.caps.len()
    }

    #[inline]
    fn home(&self, line: u64) -> usize {
        // Fibonacci hashing: the top bits of a multiplicative hash.
        (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize & self.mask
    }

    /// Slot holding `line`, or the free slot where it would go.
    #[inline]
    fn probe(&self, line: u64) -> (usize, bool) {
        let mut i = self.home(line);
        loop {
            let l = self.slots[i].line;
            if l == line {
                return (i, true);
            }
            if l == FREE {
                return (i, false);
            }
            i = (i + 1) & self.mask;
        }
    }

    fn unlink(&mut self, n: u32) {
        let Slot { prev, next, .. } = self.slots[n as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, n: u32) {
        let s = &mut self.slots[n as usize];
        s.prev = NIL;
        s.next = self.head;
        s.zone = 0;
        if self.head != NIL {
            self.slots[self.head as usize].prev = n;
        }
        self.head = n;
        if self.tail == NIL {
            self.tail = n;
        }
    }

    /// Frees slot `hole` (already unlinked), shifting later entries of its probe run back
    /// so every entry stays reachable from its home slot; moved entries keep their links
    /// and markers.
    fn remove(&mut self, mut hole: usize) {
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let line = self.slots[j].line;
            if line == FREE {
                break;
            }
            let home = self.home(line);
            // Entry j may fill the hole unless its home lies cyclically in (hole, j].
            let home_in_between = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if home_in_between {
                continue;
            }
            self.slots[hole] = self.slots[j];
            let Slot { prev, next, .. } = self.slots[hole];
            let h = hole as u32;
            if prev == NIL {
                self.head = h;
            } else {
                self.slots[prev as usize].next = h;
            }
            if next == NIL {
                self.tail = h;
            } else {
                self.slots[next as usize].prev = h;
            }
            for m in &mut self.marks {
                if *m == j as u32 {
                    *m = h;
                }
            }
            hole = j;
        }
        self.slots[hole] = Slot {
            line: FREE,
            prev: NIL,
            next: NIL,
            zone: 0,
        };
    }

    /// The lines in front of a line that moved to the top from zone `upto` (or that is
    /// new: `upto` = zones) slipped one place: each full zone below `upto` passes its
    /// last line to the next zone; a zone that just filled gets its marker.
    #[inline]
    fn slip(&mut self, upto: usize) {
        for j in 0..upto {
            let b = self.marks[j];
            if b == NIL {
                // Zone j was not full, so no deeper zone holds a line.
                if self.len == self.caps[j] {
                    self.marks[j] = self.tail;
                }
                return;
            }
            let s = &mut self.slots[b as usize];
            s.zone = j as u32 + 1;
            self.marks[j] = s.prev;
        }
    }

    /// References `line`; returns the index of the smallest capacity whose LRU cache held
    /// it (a cache of `caps[i]` lines hit iff the result is <= i), `zones()` if none did.
    #[inline]
    pub fn access(&mut self, line: u64) -> usize {
        debug_assert!(line != FREE);
        let (i, found) = self.probe(line);
        let n = i as u32;
        if found {
            let z = self.slots[i].zone as usize;
            if n == self.head {
                return z;
            }
            if self.marks[z] == n {
                // The zone's last line leaves; the one before it (not the head: n is not)
                // is its last now, once the lines in front slip down.
                self.marks[z] = self.slots[i].prev;
            }
            self.unlink(n);
            self.push_front(n);
            self.slip(z);
            return z;
        }
        let m = self.caps.len();
        let mut i = i;
        if self.len == self.caps[m - 1] {
            let t = self.tail;
            debug_assert_eq!(self.marks[m - 1], t);
            self.marks[m - 1] = NIL;
            self.unlink(t);
            self.remove(t as usize);
            self.len -= 1;
            // The removal may have shifted the run `line` probes through.
            i = self.probe(line).0;
        }
        self.slots[i].line = line;
        self.len += 1;
        self.push_front(i as u32);
        self.slip(m);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every capacity's answer equals a naive LRU list's of that capacity, reference by
    /// reference.
    fn check(caps: &[u64], stream: &[u64]) {
        let mut stack = LruStack::new(caps);
        let mut naive: Vec<(usize, usize, Vec<u64>)> = caps
            .iter()
            .map(|&c| (stack.capacity_index(c), c as usize, Vec::new()))
            .collect();
        for (t, &line) in stream.iter().enumerate() {
            let z = stack.access(line);
            for (ci, cap, list) in &mut naive {
                let pos = list.iter().position(|&l| l == line);
                assert_eq!(
                    z <= *ci,
                    pos.is_some(),
                    "reference {t} (line {line}), capacity {cap}"
                );
                match pos {
                    Some(p) => {
                        list.remove(p);
                    }
                    None if list.len() == *cap => {
                        list.pop();
                    }
                    None => {}
                }
                list.insert(0, line);
            }
        }
    }

    #[test]
    fn one_capacity_is_a_fully_associative_lru() {
        let mut x: u64 = 12345;
        let stream: Vec<u64> = (0..5000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) % 9
            })
            .collect();
        check(&[4], &stream);
    }

    #[test]
    fn depths_by_hand() {
        // Capacities 1, 2, 4: A B C A touches A at depth 2 (zone of capacity 4).
        let mut s = LruStack::new(&[4, 1, 2]);
        let (a, b, c, d, e) = (10, 20, 30, 40, 50);
        assert_eq!(s.zones(), 3);
        assert_eq!([s.access(a), s.access(b), s.access(c)], [3, 3, 3]);
        assert_eq!(s.access(a), 2);
        assert_eq!(s.access(a), 0, "the top line hits every capacity");
        assert_eq!(s.access(c), 1);
        // Stack now C A B; D fills capacity 4, E evicts B.
        assert_eq!(s.access(d), 3);
        assert_eq!(s.access(e), 3);
        assert_eq!(s.access(b), 3, "B fell out of the largest capacity");
        assert_eq!(s.access(c), 2, "C at depth 3, under B E D");
    }

    #[test]
    fn matches_a_naive_lru_on_a_cyclic_and_a_skewed_stream() {
        let cyclic: Vec<u64> = (0..20).flat_map(|_| 0u64..12).collect();
        check(&[4, 8, 12, 16, 11], &cyclic);
        let mut x: u64 = 12345;
        let skewed: Vec<u64> = (0..50_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Lines spread over the address space, so homes collide in the table.
                if x >> 62 == 0 {
                    (x >> 20) % 3000 * 0x1_0000_0001
                } else {
                    (x >> 30) % 200 * 0x1_0000_0001
                }
            })
            .collect();
        check(&[1, 7, 64, 256, 1024, 100], &skewed);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn answers_every_capacity_like_a_naive_lru(
            caps in prop::collection::vec(1u64..40, 1..6),
            stream in prop::collection::vec(0u64..90, 0..3000),
            spread in prop::bool::ANY,
        ) {
            // `spread`: lines far apart, as real line numbers are.
            let stream: Vec<u64> = if spread {
                stream.iter().map(|l| l.wrapping_mul(0x0000_7f4a_7c15_0001) >> 8).collect()
            } else {
                stream
            };
            check(&caps, &stream);
        }
    }
}
