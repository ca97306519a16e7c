//! `rbtree`: a red-black tree, the ordered index of the "revisited" paper's DBMS N
//! (`--ordered-index rbtree`): one key per node, so a lookup visits about log2(n) nodes
//! scattered in memory where a B-tree visits a few wide ones: the paper's finding on
//! DBMS N's index is that difference. Single-threaded (a partition's owner uses it).
//! Nodes live in one vector addressed by index (a free list reuses slots); index 0 is
//! the black sentinel leaf, as in the textbook algorithms (CLRS, chapter 13).

use api::key::Key;
use std::cmp::Ordering;
use std::ops::Bound;

const NIL: u32 = 0;

struct Node<V> {
    key: Key,
    val: Option<V>,
    left: u32,
    right: u32,
    parent: u32,
    red: bool,
}

pub struct RbTree<V> {
    nodes: Vec<Node<V>>,
    root: u32,
    free: Vec<u32>,
    len: usize,
}

impl<V> Default for RbTree<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> RbTree<V> {
    pub fn new() -> Self {
        RbTree {
            nodes: vec![Node {
                key: Key::new(),
                val: None,
                left: NIL,
                right: NIL,
                parent: NIL,
                red: false,
            }],
            root: NIL,
            free: Vec::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn n(&self, i: u32) -> &Node<V> {
        &self.nodes[i as usize]
    }
    #[inline]
    fn m(&mut self, i: u32) -> &mut Node<V> {
        &mut self.nodes[i as usize]
    }

    fn find(&self, k: &[u8]) -> u32 {
        let mut x = self.root;
        while x != NIL {
            match k.cmp(self.n(x).key.as_bytes()) {
                Ordering::Less => x = self.n(x).left,
                Ordering::Greater => x = self.n(x).right,
                Ordering::Equal => return x,
            }
        }
        NIL
    }

    pub fn get(&self, k: &[u8]) -> Option<&V> {
        let x = self.find(k);
        (x != NIL).then(|| self.n(x).val.as_ref().expect("live node"))
    }

    pub fn get_mut(&mut self, k: &[u8]) -> Option<&mut V> {
        let x = self.find(k);
        (x != NIL).then(|| self.m(x).val.as_mut().expect("live node"))
    }

    fn rotate_left(&mut self, x: u32) {
        let y = self.n(x).right;
        let yl = self.n(y).left;
        self.m(x).right = yl;
        if yl != NIL {
            self.m(yl).parent = x;
        }
        let xp = self.n(x).parent;
        self.m(y).parent = xp;
        if xp == NIL {
            self.root = y;
        } else if x == self.n(xp).left {
            self.m(xp).left = y;
        } else {
            self.m(xp).right = y;
        }
        self.m(y).left = x;
        self.m(x).parent = y;
    }

    fn rotate_right(&mut self, x: u32) {
        let y = self.n(x).left;
        let yr = self.n(y).right;
        self.m(x).left = yr;
        if yr != NIL {
            self.m(yr).parent = x;
        }
        let xp = self.n(x).parent;
        self.m(y).parent = xp;
        if xp == NIL {
            self.root = y;
        } else if x == self.n(xp).right {
            self.m(xp).right = y;
        } else {
            self.m(xp).left = y;
        }
        self.m(y).right = x;
        self.m(x).parent = y;
    }

    /// Insert `k -> v`; `Err(v)` (tree unchanged) if `k` is present.
    pub fn insert(&mut self, k: Key, v: V) -> Result<(), V> {
        let (mut y, mut x) = (NIL, self.root);
        let mut less = false;
        while x != NIL {
            y = x;
            match k.as_bytes().cmp(self.n(x).key.as_bytes()) {
                Ordering::Less => {
                    less = true;
                    x = self.n(x).left
                }
                Ordering::Greater => {
                    less = false;
                    x = self.n(x).right
                }
                Ordering::Equal => return Err(v),
            }
        }
        let node = Node {
            key: k,
            val: Some(v),
            left: NIL,
            right: NIL,
            parent: y,
            red: true,
        };
        let z = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                u32::try_from(self.nodes.len() - 1).expect("at most 2^32 - 1 nodes")
            }
        };
        if y == NIL {
            self.root = z;
        } else if less {
            self.m(y).left = z;
        } else {
            self.m(y).right = z;
        }
        self.len += 1;
        self.insert_fixup(z);
        Ok(())
    }

    fn insert_fixup(&mut self, mut z: u32) {
        while self.n(self.n(z).parent).red {
            let p = self.n(z).parent;
            let g = self.n(p).parent;
            if p == self.n(g).left {
                let y = self.n(g).right;
                if self.n(y).red {
                    self.m(p).red = false;
                    self.m(y).red = false;
                    self.m(g).red = true;
                    z = g;
                } else {
                    if z == self.n(p).right {
                        z = p;
                        self.rotate_left(z);
                    }
                    let p = self.n(z).parent;
                    let g = self.n(p).parent;
                    self.m(p).red = false;
                    self.m(g).red = true;
                    self.rotate_right(g);
                }
            } else {
                let y = self.n(g).left;
                if self.n(y).red {
                    self.m(p).red = false;
                    self.m(y).red = false;
                    self.m(g).red = true;
                    z = g;
                } else {
                    if z == self.n(p).left {
                        z = p;
                        self.rotate_right(z);
                    }
                    let p = self.n(z).parent;
                    let g = self.n(p).parent;
                    self.m(p).red = false;
                    self.m(g).red = true;
                    self.rotate_left(g);
                }
            }
        }
        let r = self.root;
        self.m(r).red = false;
    }

    fn transplant(&mut self, u: u32, v: u32) {
        let up = self.n(u).parent;
        if up == NIL {
            self.root = v;
        } else if u == self.n(up).left {
            self.m(up).left = v;
        } else {
            self.m(up).right = v;
        }
        // Also on the sentinel: the delete fix-up starts from its parent.
        self.m(v).parent = up;
    }

    fn min_from(&self, mut x: u32) -> u32 {
        while self.n(x).left != NIL {
            x = self.n(x).left;
        }
        x
    }

    fn max_from(&self, mut x: u32) -> u32 {
        while self.n(x).right != NIL {
            x = self.n(x).right;
        }
        x
    }

    /// Remove `k`; its value if it was present.
    pub fn remove(&mut self, k: &[u8]) -> Option<V> {
        let z = self.find(k);
        if z == NIL {
            return None;
        }
        let mut y_red = self.n(z).red;
        let x;
        if self.n(z).left == NIL {
            x = self.n(z).right;
            self.transplant(z, x);
        } else if self.n(z).right == NIL {
            x = self.n(z).left;
            self.transplant(z, x);
        } else {
            let y = self.min_from(self.n(z).right);
            y_red = self.n(y).red;
            x = self.n(y).right;
            if self.n(y).parent == z {
                self.m(x).parent = y;
            } else {
                self.transplant(y, x);
                let zr = self.n(z).right;
                self.m(y).right = zr;
                self.m(zr).parent = y;
            }
            self.transplant(z, y);
            let zl = self.n(z).left;
            self.m(y).left = zl;
            self.m(zl).parent = y;
            self.m(y).red = self.n(z).red;
        }
        if !y_red {
            self.delete_fixup(x);
        }
        self.m(NIL).parent = NIL;
        self.len -= 1;
        self.free.push(z);
        self.m(z).val.take()
    }

    fn delete_fixup(&mut self, mut x: u32) {
        while x != self.root && !self.n(x).red {
            let p = self.n(x).parent;
            if x == self.n(p).left {
                let mut w = self.n(p).right;
                if self.n(w).red {
                    self.m(w).red = false;
                    self.m(p).red = true;
                    self.rotate_left(p);
                    w = self.n(self.n(x).parent).right;
                }
                if !self.n(self.n(w).left).red && !self.n(self.n(w).right).red {
                    self.m(w).red = true;
                    x = self.n(x).parent;
                } else {
                    if !self.n(self.n(w).right).red {
                        let wl = self.n(w).left;
                        self.m(wl).red = false;
                        self.m(w).red = true;
                        self.rotate_right(w);
                        w = self.n(self.n(x).parent).right;
                    }
                    let p = self.n(x).parent;
                    self.m(w).red = self.n(p).red;
                    self.m(p).red = false;
                    let wr = self.n(w).right;
                    self.m(wr).red = false;
                    self.rotate_left(p);
                    x = self.root;
                }
            } else {
                let mut w = self.n(p).left;
                if self.n(w).red {
                    self.m(w).red = false;
                    self.m(p).red = true;
                    self.rotate_right(p);
                    w = self.n(self.n(x).parent).left;
                }
                if !self.n(self.n(w).right).red && !self.n(self.n(w).left).red {
                    self.m(w).red = true;
                    x = self.n(x).parent;
                } else {
                    if !self.n(self.n(w).left).red {
                        let wr = self.n(w).right;
                        self.m(wr).red = false;
                        self.m(w).red = true;
                        self.rotate_left(w);
                        w = self.n(self.n(x).parent).left;
                    }
                    let p = self.n(x).parent;
                    self.m(w).red = self.n(p).red;
                    self.m(p).red = false;
                    let wl = self.n(w).left;
                    self.m(wl).red = false;
                    self.rotate_right(p);
                    x = self.root;
                }
            }
        }
        self.m(x).red = false;
    }

    fn next(&self, mut x: u32) -> u32 {
        if self.n(x).right != NIL {
            return self.min_from(self.n(x).right);
        }
        let mut p = self.n(x).parent;
        while p != NIL && x == self.n(p).right {
            x = p;
            p = self.n(p).parent;
        }
        p
    }

    fn prev(&self, mut x: u32) -> u32 {
        if self.n(x).left != NIL {
            return self.max_from(self.n(x).left);
        }
        let mut p = self.n(x).parent;
        while p != NIL && x == self.n(p).left {
            x = p;
            p = self.n(p).parent;
        }
        p
    }

    /// The first node at or after `lo` (`Excluded`: after).
    fn first_from(&self, lo: Bound<&[u8]>) -> u32 {
        let (k, strict) = match lo {
            Bound::Unbounded => {
                return if self.root == NIL {
                    NIL
                } else {
                    self.min_from(self.root)
                }
            }
            Bound::Included(k) => (k, false),
            Bound::Excluded(k) => (k, true),
        };
        let (mut x, mut best) = (self.root, NIL);
        while x != NIL {
            let c = self.n(x).key.as_bytes().cmp(k);
            if c == Ordering::Greater || (c == Ordering::Equal && !strict) {
                best = x;
                x = self.n(x).left;
            } else {
                x = self.n(x).right;
            }
        }
        best
    }

    /// The last node at or before `hi` (`Excluded`: before).
    fn last_from(&self, hi: Bound<&[u8]>) -> u32 {
        let (k, strict) = match hi {
            Bound::Unbounded => {
                return if self.root == NIL {
                    NIL
                } else {
                    self.max_from(self.root)
                }
            }
            Bound::Included(k) => (k, false),
            Bound::Excluded(k) => (k, true),
        };
        let (mut x, mut best) = (self.root, NIL);
        while x != NIL {
            let c = self.n(x).key.as_bytes().cmp(k);
            if c == Ordering::Less || (c == Ordering::Equal && !strict) {
                best = x;
                x = self.n(x).right;
            } else {
                x = self.n(x).left;
            }
        }
        best
    }

    /// Entries between `lo` and `hi`, ascending (`forward`) or descending; `f` returns
    /// false to stop.
    pub fn range(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        forward: bool,
        f: &mut dyn FnMut(&Key, &V) -> bool,
    ) {
        let inside_hi = |k: &[u8]| match hi {
            Bound::Unbounded => true,
            Bound::Included(h) => k <= h,
            Bound::Excluded(h) => k < h,
        };
        let inside_lo = |k: &[u8]| match lo {
            Bound::Unbounded => true,
            Bound::Included(l) => k >= l,
            Bound::Excluded(l) => k > l,
        };
        let mut x = if forward {
            self.first_from(lo)
        } else {
            self.last_from(hi)
        };
        while x != NIL {
            let n = self.n(x);
            let k = n.key.as_bytes();
            if !(if forward { inside_hi(k) } else { inside_lo(k) }) {
                return;
            }
            if !f(&n.key, n.val.as_ref().expect("live node")) {
                return;
            }
            x = if forward { self.next(x) } else { self.prev(x) };
        }
    }

    /// Check the red-black properties (tests): black root, no red node with a red
    /// child, the same number of black nodes on every path, keys in order, parents
    /// consistent. Returns the black height.
    pub fn check(&self) -> usize {
        assert!(!self.n(self.root).red, "red root");
        let mut count = 0;
        let h = self.check_from(self.root, None, None, &mut count);
        assert_eq!(count, self.len, "node count");
        h
    }

    fn check_from(&self, x: u32, lo: Option<&Key>, hi: Option<&Key>, count: &mut usize) -> usize {
        if x == NIL {
            return 1;
        }
        *count += 1;
        let n = self.n(x);
        assert!(
            lo.is_none_or(|l| *l < n.key) && hi.is_none_or(|h| n.key < *h),
            "order"
        );
        for c in [n.left, n.right] {
            if c != NIL {
                assert_eq!(self.n(c).parent, x, "parent link");
                assert!(!(n.red && self.n(c).red), "red node with a red child");
            }
        }
        let l = self.check_from(n.left, lo, Some(&n.key), count);
        let r = self.check_from(n.right, Some(&n.key), hi, count);
        assert_eq!(l, r, "black heights differ");
        l + usize::from(!n.red)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn key(v: u64) -> Key {
        let mut k = Key::new();
        k.push_u64(v);
        k
    }

    /// Random inserts and removes against `BTreeMap`, checking the tree's invariants
    /// and every kind of range.
    #[test]
    fn matches_btreemap_and_stays_balanced() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut t = RbTree::new();
        let mut m = BTreeMap::new();
        for i in 0..20_000u64 {
            let k = rnd(2000);
            if rnd(3) == 0 {
                assert_eq!(t.remove(&key(k)), m.remove(&k), "remove {k}");
            } else {
                let fresh = !m.contains_key(&k);
                assert_eq!(t.insert(key(k), i).is_ok(), fresh, "insert {k}");
                m.entry(k).or_insert(i);
            }
            if i % 1000 == 0 {
                let h = t.check();
                // Black height bounds the height: at most 2 log2(n + 1).
                assert!(h <= 2 + 2 * (64 - (t.len() as u64 + 1).leading_zeros() as usize));
                let (a, b) = (rnd(2100), rnd(2100));
                let (lo, hi) = (a.min(b), a.max(b));
                for fwd in [true, false] {
                    for (lb, hb) in [
                        (Bound::Included(lo), Bound::Excluded(hi)),
                        (Bound::Excluded(lo), Bound::Included(hi)),
                        (Bound::Unbounded, Bound::Included(hi)),
                        (Bound::Included(lo), Bound::Unbounded),
                    ] {
                        let (kl, kh) = (lb.map(key), hb.map(key));
                        let mut got = Vec::new();
                        t.range(
                            kl.as_ref().map(|k| k.as_bytes()),
                            kh.as_ref().map(|k| k.as_bytes()),
                            fwd,
                            &mut |k, v| {
                                got.push((api::key::read_u64(k, 0), *v));
                                true
                            },
                        );
                        let mut want: Vec<(u64, u64)> =
                            m.range((lb, hb)).map(|(a, b)| (*a, *b)).collect();
                        if !fwd {
                            want.reverse();
                        }
                        assert_eq!(got, want, "range {lb:?}..{hb:?} forward {fwd}");
                    }
                }
            }
            assert_eq!(t.len(), m.len());
        }
        for (k, v) in &m {
            assert_eq!(t.get(&key(*k)), Some(v));
        }
        assert_eq!(t.get(&key(5000)), None);
    }
}
