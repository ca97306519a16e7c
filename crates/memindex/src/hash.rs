//! `hash`: the point-lookup index. A fixed array of buckets (a power of two, sized at
//! creation from the expected row count, about two rows per bucket; no resizing), each
//! one cache line: a version word, four inline slots (value and a 16-bit hash tag) and
//! an overflow chain. The index stores values only; a value's key lives where the value
//! points (for the engine, in the record: `record`'s key area), and the index reads it
//! through its `Keys`. So a probe touches the bucket line and then one allocation (the
//! record, whose lines it prefetches together), not a separate entry as well. Readers
//! look without writing anything and check the bucket version afterwards; writers lock
//! the bucket (version lock bit) to link or unlink a value. The bucket version is also what OCC validates
//! for absent-key lookups (phantoms).
//!
//! Unlinked overflow entries are freed through crossbeam-epoch: callers must hold a
//! pinned `Guard` for as long as they use anything read from the index. This module must
//! never free an entry a pinned reader may still reach, never read a key through a value
//! that was not linked when it was read (its owner frees it only after unlinking it and
//! the pinned readers are gone), and never scan (it has no order).

use crate::btree::NodeChange;
use crate::huge::ZeroedArray;
use api::key::MAX_KEY_LEN;
use crossbeam_epoch::Guard;
use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering::*};

const LOCKED: u64 = 1;
/// Most buckets one index has (2^26 of 64 bytes: 4 GiB of bucket array).
const MAX_BUCKETS: usize = 1 << 26;
const MIN_BUCKETS: usize = 1 << 10;
/// Values a bucket holds in its own cache line; more go on its overflow chain.
const SLOTS: usize = 4;
const TAG_BITS: u32 = 16;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const _: () = assert!(SLOTS as u32 * TAG_BITS <= 64);

/// Where the index finds the key of a value. Values are never 0 (0 marks a free slot).
pub trait Keys {
    /// The key that value `v` was inserted with.
    ///
    /// # Safety
    /// `v` was inserted into this index and its key stays readable for `'a`: it is still
    /// linked, or was linked when it was read by a caller that has stayed pinned since.
    unsafe fn key<'a>(&self, v: u64) -> &'a [u8];
    /// Ask for the lines `key(v)` reads when the key is `len` bytes long (and whatever a
    /// caller reads next on a hit). Never dereferences `v`.
    fn prefetch(&self, v: u64, len: usize);
}

/// An overflow-chain entry: a value, its key's hash (compared before the key) and the
/// next entry.
struct Over {
    next: AtomicPtr<Over>,
    val: u64,
    hash: u64,
}

/// One cache line: the version, four inline slots (value and 16-bit hash tag each) and
/// the overflow chain. A probe reads the line (one miss), picks the slot whose tag
/// matches, and fetches that value's key and row (one allocation, the record) in one go:
/// two dependent misses, in two pages, before the row's bytes are in cache.
///
/// ```text
/// 0        8             16        24        32        40        48         56      64
/// +--------+-------------+---------+---------+---------+---------+----------+-------+
/// |version | tags 4 x 16 | val 0   | val 1   | val 2   | val 3   | overflow | spare |
/// +--------+-------------+---------+---------+---------+---------+----------+-------+
/// ```
#[repr(C, align(64))]
struct Bucket {
    version: AtomicU64,
    /// Slot `i`'s tag in bits `16 * i ..`: the hash's top bits.
    tags: AtomicU64,
    /// 0: a free slot.
    val: [AtomicU64; SLOTS],
    overflow: AtomicPtr<Over>,
    _spare: u64,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);
const _: () = assert!(std::mem::offset_of!(Bucket, val) == 16);
const _: () = assert!(std::mem::offset_of!(Bucket, overflow) == 48);

pub struct HashIndex<K> {
    /// On transparent huge pages when large (`huge`): a probe misses the TLB otherwise.
    buckets: ZeroedArray<Bucket>,
    mask: usize,
    keys: K,
    /// Lookups reach probe points (`set_probes`).
    probes: bool,
}

// SAFETY: shared state is atomics; overflow entries are immutable after publication
// except `next` (atomic), and are freed only through the epoch collector or in Drop.
unsafe impl<K: Send> Send for HashIndex<K> {}
unsafe impl<K: Sync> Sync for HashIndex<K> {}

#[inline]
fn hash(k: &[u8]) -> u64 {
    let mut h = k.len() as u64;
    let mut chunks = k.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap());
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    h = (h.rotate_left(5) ^ tail_word(chunks.remainder())).wrapping_mul(0x517c_c1b7_2722_0a95);
    // Multiplication only moves entropy upward; the bucket index takes low bits, so mix
    // high bits down (murmur3's finalizer).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The bytes of `r` (under 8) as a little-endian word, zero-extended, from at most two
/// loads: copying them into a zeroed word called `memcpy`, about a fifth of a short
/// key's hash.
#[inline(always)]
fn tail_word(r: &[u8]) -> u64 {
    let n = r.len();
    debug_assert!(n < 8);
    if n >= 4 {
        // Two 4-byte loads that overlap by 8 - n bytes; the overlap holds the same bytes
        // in both, at the same places.
        let lo = u32::from_le_bytes(r[..4].try_into().unwrap()) as u64;
        let hi = u32::from_le_bytes(r[n - 4..].try_into().unwrap()) as u64;
        lo | hi << (8 * (n - 4))
    } else if n > 0 {
        // 1 to 3 bytes: first, middle, last (for n = 3 the bytes in order).
        r[0] as u64 | (r[n / 2] as u64) << 8 | (r[n - 1] as u64) << 16
    } else {
        0
    }
}

/// Whether two keys are equal, without a `memcmp` call for keys of up to 16 bytes (most
/// keys: TPC-C's are 4 to 13 bytes): two overlapping loads of each.
#[inline(always)]
fn key_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
    if (8..=16).contains(&n) {
        w(a, 0) == w(b, 0) && w(a, n - 8) == w(b, n - 8)
    } else if n < 8 {
        tail_word(a) == tail_word(b)
    } else {
        a == b
    }
}

/// The bucket index takes the hash's low bits; the tag its top bits.
#[inline]
fn tag(h: u64) -> u64 {
    h >> (64 - TAG_BITS)
}

#[inline]
fn with_tag(tags: u64, i: usize, t: u64) -> u64 {
    (tags & !(TAG_MASK << (TAG_BITS as usize * i))) | (t << (TAG_BITS as usize * i))
}

/// Where a key was found.
enum Found<'a> {
    Slot(usize, u64),
    /// On the overflow chain: the entry and the link that points to it.
    Chain(&'a Over, &'a AtomicPtr<Over>),
}

impl Found<'_> {
    fn val(&self) -> u64 {
        match self {
            Found::Slot(_, v) => *v,
            Found::Chain(e, _) => e.val,
        }
    }
}

impl<K: Keys> HashIndex<K> {
    pub fn new(expected_rows: u64, keys: K) -> Self {
        // A bucket per two expected rows: four slots hold them with <1% overflow, and a
        // smaller array is a smaller area for each probe's page walk.
        let n = (expected_rows as usize / 2)
            .clamp(MIN_BUCKETS, MAX_BUCKETS)
            .next_power_of_two()
            .min(MAX_BUCKETS);
        Self::with_buckets(n, keys)
    }

    /// An index of exactly `n` buckets (a power of two; tests use a few to get chains).
    #[doc(hidden)]
    pub fn with_buckets(n: usize, keys: K) -> Self {
        assert!(n.is_power_of_two(), "bucket count must be a power of two");
        // SAFETY: every field of a bucket is an atomic integer or pointer (or the unused
        // spare word), for which all-zero (version 0, free slots, empty chain) is valid.
        let buckets = unsafe { ZeroedArray::<Bucket>::new(n) };
        HashIndex {
            buckets,
            mask: n - 1,
            keys,
            probes: true,
        }
    }

    /// Whether lookups reach their probe points (bucket, record), as
    /// [`crate::btree::BTree::set_probes`] for a tree; read by [`HashIndex::probes`].
    pub fn set_probes(&mut self, on: bool) {
        self.probes = on;
    }

    #[inline]
    pub fn probes(&self) -> bool {
        self.probes
    }

    #[inline]
    fn bucket_of(&self, h: u64) -> &Bucket {
        &self.buckets[h as usize & self.mask]
    }

    /// Ask for the bucket line of `k` (a hint ahead of a `get`: nothing is read).
    /// Returns `k`'s hash, for `prefetch_values` later.
    #[inline]
    pub fn prefetch(&self, k: &[u8]) -> u64 {
        let h = hash(k);
        rt::prefetch(self.bucket_of(h));
        h
    }

    /// The second stage of a hint: once the bucket line of the key whose hash is `h` has
    /// had time to come (`prefetch` some time before), read its slots and hand `f` each
    /// value whose tag matches, to ask for the record. Reads nothing beyond the bucket and
    /// dereferences no value: stale or unrelated values only cost a wasted prefetch.
    #[inline(always)]
    pub fn prefetch_values(&self, h: u64, mut f: impl FnMut(u64)) {
        let b = self.bucket_of(h);
        let tags = b.tags.load(Relaxed);
        for i in 0..SLOTS {
            let v = b.val[i].load(Relaxed);
            if v != 0 && (tags >> (TAG_BITS as usize * i)) & TAG_MASK == tag(h) {
                f(v);
            }
        }
    }

    fn lock(b: &Bucket) -> u64 {
        loop {
            let v = b.version.load(Relaxed);
            if v & LOCKED == 0
                && b.version
                    .compare_exchange_weak(v, v | LOCKED, Acquire, Relaxed)
                    .is_ok()
            {
                fence(Release);
                return v;
            }
            rt::wait_until(rt::WaitKind::Latch, None, || {
                b.version.load(Relaxed) & LOCKED == 0
            });
        }
    }

    /// Does value `v` (read from a slot or entry of this index while linked) hold key `k`?
    #[inline]
    fn holds(&self, v: u64, k: &[u8]) -> bool {
        // SAFETY: `v` was linked when read, and the caller is pinned (lookups) or holds
        // the bucket lock (writers: nothing can unlink it meanwhile), so its owner has not
        // freed it (values are freed only after they are unlinked and the readers pinned
        // then are gone).
        key_eq(unsafe { self.keys.key(v) }, k)
    }

    /// Find `k` (caller holds the bucket lock, or validates the version afterwards).
    /// `PROBE` (lookups, which hold no lock): after asking for the lines it needs next,
    /// give an interleaving scheduler the chance to run another transaction meanwhile.
    #[inline]
    /// `switch` false (a lookup whose lines were asked for earlier): prefetch, no point.
    fn find<'a, const PROBE: bool>(
        &self,
        b: &'a Bucket,
        h: u64,
        k: &[u8],
        switch: bool,
    ) -> Option<Found<'a>> {
        // `--stats`: the bucket, and below each overflow entry visited.
        txnstats::add(txnstats::Counter::IndexNodes, 1);
        let tags = b.tags.load(Relaxed);
        for i in 0..SLOTS {
            // Acquire: the value's key (written before it was linked) is read next.
            let v = b.val[i].load(Acquire);
            if v != 0 && (tags >> (TAG_BITS as usize * i)) & TAG_MASK == tag(h) {
                if PROBE {
                    // The key and, on a match, the row: one allocation, asked for at once.
                    rt::prefetch_for_probe(switch, || self.keys.prefetch(v, k.len()));
                }
                if self.holds(v, k) {
                    return Some(Found::Slot(i, v));
                }
            }
        }
        let mut link = &b.overflow;
        loop {
            let p = link.load(Acquire);
            if p.is_null() {
                return None;
            }
            if PROBE {
                rt::prefetch_for_probe(switch, || rt::prefetch(p));
            }
            txnstats::add(txnstats::Counter::IndexNodes, 1);
            // SAFETY: entries reachable from a bucket stay allocated while the caller
            // is pinned (they are retired through the epoch collector).
            let e = unsafe { &*p };
            if e.hash == h {
                if PROBE {
                    rt::prefetch_for_probe(switch, || self.keys.prefetch(e.val, k.len()));
                }
                if self.holds(e.val, k) {
                    return Some(Found::Chain(e, link));
                }
            }
            link = &e.next;
        }
    }

    /// Point lookup: the value if present, and the bucket version observed.
    pub fn get(&self, k: &[u8], g: &Guard) -> (Option<u64>, *const AtomicU64, u64) {
        self.get_quiet_if(k, g, false)
    }

    /// `get`; `quiet`: the caller asked for this key's lines earlier (`prefetch` and
    /// `prefetch_values`), so the lookup gives an interleaving scheduler no chance to
    /// switch (the lines are there or on their way: a switch would only cost).
    pub fn get_quiet_if(
        &self,
        k: &[u8],
        _g: &Guard,
        quiet: bool,
    ) -> (Option<u64>, *const AtomicU64, u64) {
        let h = hash(k);
        let b = self.bucket_of(h);
        let quiet = quiet || !self.probes;
        rt::prefetch_for_probe(!quiet, || rt::prefetch(b));
        loop {
            let v = b.version.load(Acquire);
            if v & LOCKED != 0 {
                rt::wait_until(rt::WaitKind::Latch, None, || {
                    b.version.load(Relaxed) & LOCKED == 0
                });
                continue;
            }
            let val = self.find::<true>(b, h, k, !quiet).map(|f| f.val());
            fence(Acquire);
            if b.version.load(Relaxed) == v {
                return (val, &b.version, v);
            }
        }
    }

    /// Insert `k -> val`; `Err(existing)` if present. `val` (not 0) must already hold `k`
    /// where `Keys` reads it.
    pub fn insert(&self, k: &[u8], val: u64, _g: &Guard) -> Result<NodeChange, u64> {
        assert!(k.len() <= MAX_KEY_LEN, "key longer than MAX_KEY_LEN");
        assert!(val != 0, "0 marks a free slot");
        // SAFETY: the caller made `val` and has not shared it.
        debug_assert!(unsafe { self.keys.key(val) } == k, "value keyed elsewhere");
        let h = hash(k);
        let b = self.bucket_of(h);
        let before = Self::lock(b);
        if let Some(f) = self.find::<false>(b, h, k, false) {
            let existing = f.val();
            b.version.store(before, Release); // unchanged: unlock without a new version
            return Err(existing);
        }
        match (0..SLOTS).find(|&i| b.val[i].load(Relaxed) == 0) {
            Some(i) => {
                b.tags
                    .store(with_tag(b.tags.load(Relaxed), i, tag(h)), Relaxed);
                // Release: readers that load the value then read its key.
                b.val[i].store(val, Release);
            }
            None => {
                let e = Box::into_raw(Box::new(Over {
                    next: AtomicPtr::new(b.overflow.load(Relaxed)),
                    val,
                    hash: h,
                }));
                b.overflow.store(e, Release);
            }
        }
        let after = before + 2;
        b.version.store(after, Release);
        Ok(NodeChange {
            ver: &b.version,
            before,
            after,
            split: None,
        })
    }

    /// Remove `k` if it maps to `expect`. The value's owner may free it once readers
    /// pinned now are gone (through the same epoch collector).
    pub fn remove(&self, k: &[u8], expect: u64, g: &Guard) -> Option<NodeChange> {
        let h = hash(k);
        let b = self.bucket_of(h);
        let before = Self::lock(b);
        let freed = match self.find::<false>(b, h, k, false) {
            Some(Found::Slot(i, v)) if v == expect => {
                // Refill the slot from the chain, so slots stay the common case.
                let o = b.overflow.load(Relaxed);
                if o.is_null() {
                    b.val[i].store(0, Release);
                    None
                } else {
                    // SAFETY: chain entries are live while linked (we hold the lock).
                    let oe = unsafe { &*o };
                    b.overflow.store(oe.next.load(Relaxed), Release);
                    b.tags
                        .store(with_tag(b.tags.load(Relaxed), i, tag(oe.hash)), Relaxed);
                    b.val[i].store(oe.val, Release);
                    Some(o)
                }
            }
            Some(Found::Chain(e, link)) if e.val == expect => {
                let p = link.load(Relaxed);
                link.store(e.next.load(Relaxed), Release);
                Some(p)
            }
            _ => {
                b.version.store(before, Release);
                return None;
            }
        };
        let after = before + 2;
        b.version.store(after, Release);
        if let Some(p) = freed {
            // SAFETY: unlinked above; readers pinned now may still hold it, so it is
            // freed only after they unpin.
            unsafe { g.defer_unchecked(move || drop(Box::from_raw(p))) };
        }
        Some(NodeChange {
            ver: &b.version,
            before,
            after,
            split: None,
        })
    }

    /// (entries, buckets), for `--stats`' database sizes; exact when no transaction
    /// runs. `_g` keeps the overflow entries it walks from being freed (they are retired
    /// through the epoch collector).
    pub fn census(&self, _g: &Guard) -> (u64, u64) {
        let mut entries = 0u64;
        for b in self.buckets.iter() {
            entries += Self::values(b).count() as u64;
        }
        (entries, self.buckets.len() as u64)
    }

    /// Number of buckets (`bucket_values` takes `0..buckets()`).
    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// The values of bucket `i` as one version of it held them (while transactions
    /// run: the checkpointer's scan), appended to `out`. A removal refills a slot from
    /// the chain, so reading slots and chain without the version could miss a value
    /// that moved behind the reader. The values stay allocated while `_g` is pinned.
    pub fn bucket_values(&self, i: usize, out: &mut Vec<u64>, _g: &Guard) {
        let b = &self.buckets[i];
        let start = out.len();
        loop {
            let v = b.version.load(Acquire);
            if v & LOCKED != 0 {
                rt::wait_until(rt::WaitKind::Latch, None, || {
                    b.version.load(Relaxed) & LOCKED == 0
                });
                continue;
            }
            // Acquire: a value's record (its key area) was written before it was linked.
            out.extend(
                (0..SLOTS)
                    .map(|j| b.val[j].load(Acquire))
                    .filter(|&x| x != 0),
            );
            out.extend(Self::chain(b).map(|p| {
                // SAFETY: a chain entry, live while the caller is pinned.
                unsafe { (*p).val }
            }));
            fence(Acquire);
            if b.version.load(Relaxed) == v {
                return;
            }
            out.truncate(start);
        }
    }

    /// Every value of a bucket (exclusive access, or a pinned caller that tolerates
    /// values vanishing or appearing).
    fn values(b: &Bucket) -> impl Iterator<Item = u64> + '_ {
        let slots = (0..SLOTS)
            .map(|i| b.val[i].load(Relaxed))
            .filter(|&v| v != 0);
        slots.chain(Self::chain(b).map(|p| {
            // SAFETY: a live chain entry (`chain`).
            unsafe { (*p).val }
        }))
    }

    /// The overflow entries of a bucket (callers as for `values`).
    fn chain(b: &Bucket) -> impl Iterator<Item = *mut Over> + '_ {
        std::iter::successors(Some(b.overflow.load(Acquire)), |&p| {
            // SAFETY: a non-null `p` is a chain entry, live while linked or while the
            // caller is pinned.
            (!p.is_null()).then(|| unsafe { (*p).next.load(Acquire) })
        })
        .take_while(|p| !p.is_null())
    }

    /// Every (key, value) (exclusive access: used by recovery to build secondary indexes).
    pub fn for_each_entry(&mut self, mut f: impl FnMut(&[u8], u64)) {
        for b in self.buckets.iter() {
            for v in Self::values(b) {
                // SAFETY: exclusive access: every linked value is live.
                f(unsafe { self.keys.key(v) }, v);
            }
        }
    }

    /// Every value (exclusive access: used to free records when the engine is dropped;
    /// no key is read, so the values may be freed as they are passed).
    pub fn for_each(&mut self, mut f: impl FnMut(u64)) {
        for b in self.buckets.iter() {
            Self::values(b).for_each(&mut f);
        }
    }
}

impl<K> Drop for HashIndex<K> {
    fn drop(&mut self) {
        // Only the overflow entries are this index's; the values are their owner's.
        for b in self.buckets.iter() {
            let mut p = b.overflow.load(Relaxed);
            while !p.is_null() {
                // SAFETY: exclusive access; each entry is linked once.
                let e = unsafe { Box::from_raw(p) };
                p = e.next.load(Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail of a key is its zero-padded little-endian word from 3 bytes up, and a
    /// distinct word for each 1- or 2-byte tail.
    #[test]
    fn tail_words_are_the_bytes() {
        let bytes: Vec<u8> = (1..=7u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 3..8 {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&bytes[..n]);
            assert_eq!(tail_word(&bytes[..n]), u64::from_le_bytes(w), "{n} bytes");
        }
        assert_eq!(tail_word(&[]), 0);
        let mut seen = std::collections::HashSet::new();
        for a in 0..=255u8 {
            assert!(seen.insert((1, tail_word(&[a]))));
            for b in 0..=255u8 {
                assert!(seen.insert((2, tail_word(&[a, b]))));
            }
        }
    }

    /// `key_eq` agrees with comparing the slices, for every length up to 40 and a
    /// difference at every position (and none).
    #[test]
    fn key_eq_is_slice_equality() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(29) ^ 0x5a).collect();
            assert!(key_eq(&a, &a.clone()), "{n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 1 << (i % 8);
                assert!(!key_eq(&a, &b), "{n} bytes, byte {i} differs");
            }
            // A key and its prefix or extension are different keys.
            if n > 0 {
                assert!(!key_eq(&a, &a[..n - 1]));
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!key_eq(&a, &longer));
        }
    }
}
