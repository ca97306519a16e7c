//! `nodeset`: an optimistic transaction's node set (Silo's phantom protection): the
//! version words of the B+tree leaves and hash buckets its lookups and scans found a key
//! absent in or scanned, each with the version it saw. Commit checks that none changed;
//! the transaction's own index changes are forgiven (`forgive`), so its inserts and
//! deletes never fail its own check. Both in-memory engines keep one per worker.
//!
//! Must never dereference a version word except in `unchanged`, whose caller vouches
//! that the indexes the words came from are alive.

use crate::btree::NodeChange;
use std::sync::atomic::{AtomicU64, Ordering::Acquire};

#[derive(Clone, Copy)]
struct Entry {
    ver: *const AtomicU64,
    v: u64,
}

/// The version words a transaction depends on, and the versions it saw.
#[derive(Default)]
pub struct NodeSet {
    entries: Vec<Entry>,
}

impl NodeSet {
    pub fn with_capacity(n: usize) -> Self {
        NodeSet {
            entries: Vec::with_capacity(n),
        }
    }

    /// Remember that the transaction saw version `v` of the word at `ver` (as an index
    /// lookup or scan of this crate returned them).
    #[inline]
    pub fn push(&mut self, ver: *const AtomicU64, v: u64) {
        debug_assert!(!ver.is_null(), "a node set entry needs a version word");
        self.entries.push(Entry { ver, v });
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether every word still holds the version the transaction saw.
    ///
    /// # Safety
    /// Every word pushed must still be alive: it belongs to an index of this crate that
    /// outlives the call (B+tree nodes are never freed while the tree is shared; hash
    /// buckets never).
    #[inline]
    pub unsafe fn unchanged(&self) -> bool {
        self.entries
            .iter()
            // SAFETY: the caller's contract.
            .all(|n| unsafe { (*n.ver).load(Acquire) } == n.v)
    }

    /// A change the transaction made itself (an insert or removal in an index) must not
    /// fail its own check: a word it read and then changed is expected at the version its
    /// change left, and a leaf split by its insert (or relieved into its right sibling)
    /// counts as both halves (the right one at the version the split or move left).
    pub fn forgive(&mut self, c: NodeChange) {
        if let Some(s) = c.split {
            let mut read = false;
            for n in self.entries.iter_mut() {
                if n.ver == s.ver && n.v == s.before {
                    n.v = s.after;
                    read = true;
                } else if n.ver == s.other && Some(n.v) == s.other_before {
                    n.v = s.other_v;
                }
            }
            if read {
                self.push(s.other, s.other_v);
            }
        }
        for n in self.entries.iter_mut() {
            if n.ver == c.ver && n.v == c.before {
                n.v = c.after;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btree::Split;
    use std::sync::atomic::Ordering::Release;

    #[test]
    fn a_changed_word_fails_and_an_own_change_is_forgiven() {
        let a = AtomicU64::new(4);
        let b = AtomicU64::new(8);
        let mut s = NodeSet::with_capacity(2);
        s.push(&a, 4);
        s.push(&b, 8);
        // SAFETY: a and b outlive every call below.
        assert!(unsafe { s.unchanged() });
        a.store(6, Release);
        assert!(!unsafe { s.unchanged() });
        s.forgive(NodeChange {
            ver: &a,
            before: 4,
            after: 6,
            split: None,
        });
        assert!(unsafe { s.unchanged() });
        // Another writer's change after ours is not forgiven.
        a.store(10, Release);
        assert!(!unsafe { s.unchanged() });
    }

    #[test]
    fn a_split_of_a_read_leaf_keeps_both_halves() {
        let left = AtomicU64::new(2);
        let right = AtomicU64::new(0);
        let mut s = NodeSet::default();
        s.push(&left, 2);
        left.store(4, Release);
        right.store(12, Release);
        s.forgive(NodeChange {
            ver: &left,
            before: 4,
            after: 4,
            split: Some(Split {
                ver: &left,
                before: 2,
                after: 4,
                other: &right,
                other_v: 12,
                other_before: None,
            }),
        });
        assert_eq!(s.len(), 2);
        assert!(unsafe { s.unchanged() });
        right.store(14, Release);
        assert!(!unsafe { s.unchanged() });
    }

    /// Keys moved into a right sibling: a transaction that read the relieved leaf keeps
    /// the sibling too; one that read the sibling keeps it at its new version; one that
    /// read the sibling at another version is not forgiven.
    #[test]
    fn a_move_into_the_right_sibling_keeps_both() {
        let move_at = |left: &AtomicU64, right: &AtomicU64| NodeChange {
            ver: left,
            before: 6,
            after: 8,
            split: Some(Split {
                ver: left,
                before: 4,
                after: 6,
                other: right,
                other_before: Some(20),
                other_v: 22,
            }),
        };
        let (left, right) = (AtomicU64::new(4), AtomicU64::new(20));
        let mut read_left = NodeSet::default();
        read_left.push(&left, 4);
        let mut read_right = NodeSet::default();
        read_right.push(&right, 20);
        let mut read_right_earlier = NodeSet::default();
        read_right_earlier.push(&right, 18);
        left.store(8, Release);
        right.store(22, Release);
        for s in [&mut read_left, &mut read_right, &mut read_right_earlier] {
            s.forgive(move_at(&left, &right));
        }
        assert_eq!(read_left.len(), 2);
        assert!(unsafe { read_left.unchanged() });
        assert_eq!(read_right.len(), 1);
        assert!(unsafe { read_right.unchanged() });
        assert!(!unsafe { read_right_earlier.unchanged() });
        right.store(24, Release);
        assert!(!unsafe { read_left.unchanged() });
        assert!(!unsafe { read_right.unchanged() });
    }
}
