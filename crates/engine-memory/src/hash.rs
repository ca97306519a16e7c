//! `hash`: the point-lookup index. A fixed array of buckets (a power of two, sized at
//! creation from the expected row count; no resizing), each one cache line: a version
//! word, two inline slots (entry pointer, value, hash tag) and an overflow chain of
//! entries. Readers look without writing anything and check the bucket version
//! afterwards; writers lock the bucket (version lock bit) to link or unlink an entry.
//! The bucket version is also what OCC validates for absent-key lookups (phantoms).
//!
//! Unlinked entries are freed through crossbeam-epoch: callers must hold a pinned
//! `Guard` for as long as they use anything read from the index. This module must never
//! free an entry a pinned reader may still reach, and never scan (it has no order).

use crate::btree::NodeChange;
use crate::huge::ZeroedArray;
use api::key::MAX_KEY_LEN;
use crossbeam_epoch::Guard;
use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering::*};

const LOCKED: u64 = 1;
/// Most buckets one index has (2^26 of 64 bytes: 4 GiB of bucket array).
const MAX_BUCKETS: usize = 1 << 26;
const MIN_BUCKETS: usize = 1 << 10;
/// Entries a bucket holds in its own cache line; more go on its overflow chain.
const SLOTS: usize = 2;

/// A key and its value. In a bucket slot `next` is unused; on the overflow chain it links
/// the next entry. The chain link, value, key length and the key's first bytes share one
/// cache line (32-byte alignment: a key of up to 15 bytes never straddles two).
#[repr(C, align(32))]
struct Entry {
    next: AtomicPtr<Entry>,
    val: u64,
    /// The key's hash (`tag` of a slot), so an overflow walk compares keys only on a match.
    hash: u64,
    len: u8,
    key: [u8; MAX_KEY_LEN],
}

impl Entry {
    #[inline]
    fn key(&self) -> &[u8] {
        &self.key[..(self.len as usize).min(MAX_KEY_LEN)]
    }
}

/// One cache line: the version, two inline slots (entry, value and a 32-bit hash tag each)
/// and the overflow chain. A probe reads the line (one miss), picks the slot whose tag
/// matches, and then fetches that slot's entry (to compare the key) and its record (the
/// value) at the same time: two dependent misses before the row, where a chain whose
/// head holds only a pointer costs three (bucket, entry, record).
#[repr(C, align(64))]
struct Bucket {
    version: AtomicU64,
    /// Slot `i`'s tag in bits `32 * i ..`: the hash's high half.
    tags: AtomicU64,
    entry: [AtomicPtr<Entry>; SLOTS],
    val: [AtomicU64; SLOTS],
    overflow: AtomicPtr<Entry>,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

pub struct HashIndex {
    /// On transparent huge pages when large (`huge`): a probe misses the TLB otherwise.
    buckets: ZeroedArray<Bucket>,
    mask: usize,
}

// SAFETY: shared state is atomics; entries are immutable after publication except `next`
// (atomic), and are freed only through the epoch collector or in Drop.
unsafe impl Send for HashIndex {}
unsafe impl Sync for HashIndex {}

#[inline]
fn hash(k: &[u8]) -> u64 {
    let mut h = k.len() as u64;
    let mut chunks = k.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap());
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    let mut last = [0u8; 8];
    let r = chunks.remainder();
    last[..r.len()].copy_from_slice(r);
    h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(0x517c_c1b7_2722_0a95);
    // Multiplication only moves entropy upward; the bucket index takes low bits, so mix
    // high bits down (murmur3's finalizer).
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[inline]
fn tag(h: u64) -> u64 {
    h >> 32
}

/// Where a key was found under the bucket lock.
enum Found<'a> {
    Slot(usize, &'a Entry),
    /// On the overflow chain: the entry and the link that points to it.
    Chain(&'a Entry, &'a AtomicPtr<Entry>),
}

impl HashIndex {
    pub fn new(expected_rows: u64) -> Self {
        let n = (expected_rows as usize)
            .clamp(MIN_BUCKETS, MAX_BUCKETS)
            .next_power_of_two()
            .min(MAX_BUCKETS);
        Self::with_buckets(n)
    }

    /// An index of exactly `n` buckets (a power of two; tests use a few to get chains).
    #[doc(hidden)]
    pub fn with_buckets(n: usize) -> Self {
        assert!(n.is_power_of_two(), "bucket count must be a power of two");
        // SAFETY: every field of a bucket is an atomic integer or pointer, for which
        // all-zero (version 0, empty slots and chain) is valid.
        let buckets = unsafe { ZeroedArray::<Bucket>::new(n) };
        HashIndex {
            buckets,
            mask: n - 1,
        }
    }

    #[inline]
    fn bucket_of(&self, h: u64) -> &Bucket {
        &self.buckets[h as usize & self.mask]
    }

    /// Ask for the bucket line of `k` (a hint ahead of a `get`: nothing is read).
    #[inline]
    pub fn prefetch(&self, k: &[u8]) {
        rt::prefetch(self.bucket_of(hash(k)));
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

    /// Find `k` (caller holds the bucket lock, or validates the version afterwards).
    /// `PROBE` (lookups, which hold no lock): after asking for the line it needs next,
    /// give an interleaving scheduler the chance to run another transaction meanwhile.
    #[inline]
    fn find<'a, const PROBE: bool>(b: &'a Bucket, h: u64, k: &[u8]) -> Option<Found<'a>> {
        // `--stats`: the bucket, and below each overflow entry visited.
        txnstats::add(txnstats::Counter::IndexNodes, 1);
        let tags = b.tags.load(Relaxed);
        for i in 0..SLOTS {
            let p = b.entry[i].load(Acquire);
            if !p.is_null() && (tags >> (32 * i)) & 0xffff_ffff == tag(h) {
                // The record is needed as soon as the key matches: ask for its first two
                // lines (TID and row of a record up to 128 bytes) now, so their misses
                // overlap the entry's.
                let rec = b.val[i].load(Relaxed) as *const u8;
                rt::prefetch(rec);
                rt::prefetch(rec.wrapping_add(64));
                if PROBE {
                    // A key longer than 15 bytes reaches into the entry's next line.
                    rt::prefetch((p as *const u8).wrapping_add(64));
                    rt::prefetch_point(p);
                }
                // SAFETY: entries reachable from a bucket stay allocated while the caller
                // is pinned (they are retired through the epoch collector).
                let e = unsafe { &*p };
                if e.len as usize == k.len() && e.key() == k {
                    return Some(Found::Slot(i, e));
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
                rt::prefetch((p as *const u8).wrapping_add(64));
                rt::prefetch_point(p);
            }
            txnstats::add(txnstats::Counter::IndexNodes, 1);
            // SAFETY: as above.
            let e = unsafe { &*p };
            if e.hash == h && e.len as usize == k.len() && e.key() == k {
                return Some(Found::Chain(e, link));
            }
            link = &e.next;
        }
    }

    /// Point lookup: the value if present, and the bucket version observed.
    pub fn get(&self, k: &[u8], _g: &Guard) -> (Option<u64>, *const AtomicU64, u64) {
        let h = hash(k);
        let b = self.bucket_of(h);
        rt::prefetch_point(b);
        loop {
            let v = b.version.load(Acquire);
            if v & LOCKED != 0 {
                rt::wait_until(rt::WaitKind::Latch, None, || {
                    b.version.load(Relaxed) & LOCKED == 0
                });
                continue;
            }
            let val = match Self::find::<true>(b, h, k) {
                None => None,
                Some(Found::Slot(_, e)) | Some(Found::Chain(e, _)) => Some(e.val),
            };
            fence(Acquire);
            if b.version.load(Relaxed) == v {
                return (val, &b.version, v);
            }
        }
    }

    /// Insert `k -> val`; `Err(existing)` if present.
    pub fn insert(&self, k: &[u8], val: u64, _g: &Guard) -> Result<NodeChange, u64> {
        assert!(k.len() <= MAX_KEY_LEN, "key longer than MAX_KEY_LEN");
        let h = hash(k);
        let b = self.bucket_of(h);
        let before = Self::lock(b);
        if let Some(Found::Slot(_, e) | Found::Chain(e, _)) = Self::find::<false>(b, h, k) {
            let existing = e.val;
            b.version.store(before, Release); // unchanged: unlock without a new version
            return Err(existing);
        }
        let mut key = [0u8; MAX_KEY_LEN];
        key[..k.len()].copy_from_slice(k);
        let e = Box::into_raw(Box::new(Entry {
            next: AtomicPtr::new(std::ptr::null_mut()),
            val,
            hash: h,
            len: k.len() as u8,
            key,
        }));
        match (0..SLOTS).find(|&i| b.entry[i].load(Relaxed).is_null()) {
            Some(i) => {
                let tags = b.tags.load(Relaxed);
                let tags = (tags & !(0xffff_ffff << (32 * i))) | (tag(h) << (32 * i));
                b.tags.store(tags, Relaxed);
                b.val[i].store(val, Relaxed);
                b.entry[i].store(e, Release);
            }
            None => {
                // SAFETY: `e` is not shared yet.
                unsafe { (*e).next.store(b.overflow.load(Relaxed), Relaxed) };
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

    /// Remove `k` if it maps to `expect`.
    pub fn remove(&self, k: &[u8], expect: u64, g: &Guard) -> Option<NodeChange> {
        let h = hash(k);
        let b = self.bucket_of(h);
        let before = Self::lock(b);
        let p = match Self::find::<false>(b, h, k) {
            Some(Found::Slot(i, e)) if e.val == expect => {
                let p = b.entry[i].load(Relaxed);
                // Refill the slot from the chain, so slots stay the common case.
                let o = b.overflow.load(Relaxed);
                if o.is_null() {
                    b.entry[i].store(std::ptr::null_mut(), Release);
                } else {
                    // SAFETY: chain entries are live while linked (we hold the lock).
                    let oe = unsafe { &*o };
                    b.overflow.store(oe.next.load(Relaxed), Release);
                    let tags = b.tags.load(Relaxed);
                    let tags = (tags & !(0xffff_ffff << (32 * i))) | (tag(oe.hash) << (32 * i));
                    b.tags.store(tags, Relaxed);
                    b.val[i].store(oe.val, Relaxed);
                    b.entry[i].store(o, Release);
                }
                p
            }
            Some(Found::Chain(e, link)) if e.val == expect => {
                let p = link.load(Relaxed);
                link.store(e.next.load(Relaxed), Release);
                p
            }
            _ => {
                b.version.store(before, Release);
                return None;
            }
        };
        let after = before + 2;
        b.version.store(after, Release);
        // SAFETY: unlinked above; readers pinned now may still hold it, so it is freed
        // only after they unpin.
        unsafe { g.defer_unchecked(move || drop(Box::from_raw(p))) };
        Some(NodeChange {
            ver: &b.version,
            before,
            after,
            split: None,
        })
    }

    /// (entries, buckets), for `--stats`' database sizes; exact when no transaction
    /// runs. `_g` keeps the entries it walks from being freed (they are retired through
    /// the epoch collector).
    pub fn census(&self, _g: &Guard) -> (u64, u64) {
        let mut entries = 0u64;
        for b in self.buckets.iter() {
            entries += Self::entries(b).count() as u64;
        }
        (entries, self.buckets.len() as u64)
    }

    /// Every entry of a bucket (exclusive access, or entries may vanish).
    fn entries(b: &Bucket) -> impl Iterator<Item = *mut Entry> + '_ {
        let slots = (0..SLOTS).map(|i| b.entry[i].load(Relaxed));
        let chain = std::iter::successors(Some(b.overflow.load(Relaxed)), |&p| {
            // SAFETY: exclusive access (callers); a non-null `p` is a live chain entry.
            (!p.is_null()).then(|| unsafe { (*p).next.load(Relaxed) })
        });
        slots
            .chain(chain.take_while(|p| !p.is_null()))
            .filter(|p| !p.is_null())
    }

    /// Every (key, value) (exclusive access: used by recovery to build secondary indexes).
    pub fn for_each_entry(&mut self, mut f: impl FnMut(&[u8], u64)) {
        for b in self.buckets.iter() {
            for p in Self::entries(b) {
                // SAFETY: exclusive access.
                let e = unsafe { &*p };
                f(e.key(), e.val);
            }
        }
    }

    /// Every value (exclusive access: used to free records when the engine is dropped).
    pub fn for_each(&mut self, mut f: impl FnMut(u64)) {
        self.for_each_entry(|_, v| f(v));
    }
}

impl Drop for HashIndex {
    fn drop(&mut self) {
        for b in self.buckets.iter() {
            let all: Vec<*mut Entry> = Self::entries(b).collect();
            for p in all {
                // SAFETY: exclusive access; each entry is linked once.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}
