//! `hash`: the point-lookup index. A fixed array of buckets (a power of two, sized at
//! creation from the expected row count; no resizing), each a version word and a chain of
//! entries. Readers walk a chain without writing anything and check the bucket version
//! afterwards; writers lock the bucket (version lock bit) to link or unlink an entry.
//! The bucket version is also what OCC validates for absent-key lookups (phantoms).
//!
//! Unlinked entries are freed through crossbeam-epoch: callers must hold a pinned
//! `Guard` for as long as they use anything read from the index. This module must never
//! free an entry a pinned reader may still reach, and never scan (it has no order).

use crate::btree::NodeChange;
use api::key::MAX_KEY_LEN;
use crossbeam_epoch::Guard;
use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering::*};

const LOCKED: u64 = 1;
/// Most buckets one index has (2^26: 1 GiB of bucket array).
const MAX_BUCKETS: usize = 1 << 26;
const MIN_BUCKETS: usize = 1 << 10;

/// The chain link, value, key length and the key's first bytes share one cache line
/// (32-byte alignment: a key of up to 15 bytes never straddles two), so a probe costs one
/// miss per entry, not two.
#[repr(C, align(32))]
struct Entry {
    next: AtomicPtr<Entry>,
    val: u64,
    len: u8,
    key: [u8; MAX_KEY_LEN],
}

impl Entry {
    #[inline]
    fn key(&self) -> &[u8] {
        &self.key[..(self.len as usize).min(MAX_KEY_LEN)]
    }
}

#[repr(align(16))]
struct Bucket {
    version: AtomicU64,
    head: AtomicPtr<Entry>,
}

pub struct HashIndex {
    buckets: Box<[Bucket]>,
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

impl HashIndex {
    pub fn new(expected_rows: u64) -> Self {
        let n = (expected_rows as usize)
            .clamp(MIN_BUCKETS, MAX_BUCKETS)
            .next_power_of_two()
            .min(MAX_BUCKETS);
        let buckets = (0..n)
            .map(|_| Bucket {
                version: AtomicU64::new(0),
                head: AtomicPtr::new(std::ptr::null_mut()),
            })
            .collect();
        HashIndex {
            buckets,
            mask: n - 1,
        }
    }

    #[inline]
    fn bucket(&self, k: &[u8]) -> &Bucket {
        &self.buckets[hash(k) as usize & self.mask]
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

    /// Find `k` in a bucket's chain (caller holds the lock or validates afterwards).
    fn find<'a>(b: &'a Bucket, k: &[u8]) -> (Option<&'a Entry>, &'a AtomicPtr<Entry>) {
        let mut link = &b.head;
        loop {
            let p = link.load(Acquire);
            if p.is_null() {
                return (None, link);
            }
            // SAFETY: entries reachable from a bucket stay allocated while the caller is
            // pinned (they are retired through the epoch collector).
            let e = unsafe { &*p };
            if e.len as usize == k.len() && e.key() == k {
                return (Some(e), link);
            }
            link = &e.next;
        }
    }

    /// Point lookup: the value if present, and the bucket version observed.
    pub fn get(&self, k: &[u8], _g: &Guard) -> (Option<u64>, *const AtomicU64, u64) {
        let b = self.bucket(k);
        loop {
            let v = b.version.load(Acquire);
            if v & LOCKED != 0 {
                rt::wait_until(rt::WaitKind::Latch, None, || {
                    b.version.load(Relaxed) & LOCKED == 0
                });
                continue;
            }
            let val = Self::find(b, k).0.map(|e| e.val);
            fence(Acquire);
            if b.version.load(Relaxed) == v {
                return (val, &b.version, v);
            }
        }
    }

    /// Insert `k -> val`; `Err(existing)` if present.
    pub fn insert(&self, k: &[u8], val: u64, _g: &Guard) -> Result<NodeChange, u64> {
        assert!(k.len() <= MAX_KEY_LEN, "key longer than MAX_KEY_LEN");
        let b = self.bucket(k);
        let before = Self::lock(b);
        if let Some(e) = Self::find(b, k).0 {
            let existing = e.val;
            b.version.store(before, Release); // unchanged: unlock without a new version
            return Err(existing);
        }
        let mut key = [0u8; MAX_KEY_LEN];
        key[..k.len()].copy_from_slice(k);
        let e = Box::into_raw(Box::new(Entry {
            next: AtomicPtr::new(b.head.load(Relaxed)),
            val,
            len: k.len() as u8,
            key,
        }));
        b.head.store(e, Release);
        let after = before + 2;
        b.version.store(after, Release);
        Ok(NodeChange {
            ver: &b.version,
            before,
            after,
        })
    }

    /// Remove `k` if it maps to `expect`.
    pub fn remove(&self, k: &[u8], expect: u64, g: &Guard) -> Option<NodeChange> {
        let b = self.bucket(k);
        let before = Self::lock(b);
        let (found, link) = Self::find(b, k);
        match found {
            Some(e) if e.val == expect => {
                let p = link.load(Relaxed);
                link.store(e.next.load(Relaxed), Release);
                let after = before + 2;
                b.version.store(after, Release);
                // SAFETY: unlinked above; readers pinned now may still hold it, so it is
                // freed only after they unpin.
                unsafe { g.defer_unchecked(move || drop(Box::from_raw(p))) };
                Some(NodeChange {
                    ver: &b.version,
                    before,
                    after,
                })
            }
            _ => {
                b.version.store(before, Release);
                None
            }
        }
    }

    /// Every (key, value) (exclusive access: used by recovery to build secondary indexes).
    pub fn for_each_entry(&mut self, mut f: impl FnMut(&[u8], u64)) {
        for b in self.buckets.iter() {
            let mut p = b.head.load(Relaxed);
            while !p.is_null() {
                // SAFETY: exclusive access.
                let e = unsafe { &*p };
                f(e.key(), e.val);
                p = e.next.load(Relaxed);
            }
        }
    }

    /// Every value (exclusive access: used to free records when the engine is dropped).
    pub fn for_each(&mut self, mut f: impl FnMut(u64)) {
        for b in self.buckets.iter() {
            let mut p = b.head.load(Relaxed);
            while !p.is_null() {
                // SAFETY: exclusive access.
                let e = unsafe { &*p };
                f(e.val);
                p = e.next.load(Relaxed);
            }
        }
    }
}

impl Drop for HashIndex {
    fn drop(&mut self) {
        for b in self.buckets.iter() {
            let mut p = b.head.load(Relaxed);
            while !p.is_null() {
                // SAFETY: exclusive access; each entry is linked once.
                let e = unsafe { Box::from_raw(p) };
                p = e.next.load(Relaxed);
            }
        }
    }
}
