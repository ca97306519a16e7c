//! `record`: the in-memory record: one TID word followed by the row, as 64-bit words
//! (row bytes packed little-endian into words, so concurrent readers copy with atomic
//! loads and never race in the language's sense). Owns the TID word layout, stable
//! reads, installing rows, and allocating/freeing records.
//!
//! This module must never decide whether a transaction may commit (that is `occ`).

use std::sync::atomic::{fence, AtomicU64, Ordering::*};

/// TID word bits. The rest: sequence number in bits 3..32, epoch in bits 32..64.
pub const LOCK: u64 = 1;
/// Not a visible row: an uncommitted insert, or a committed delete.
pub const ABSENT: u64 = 2;
/// Removed from its indexes: any reader that saw this record must re-read the index.
pub const UNLINKED: u64 = 4;
pub const FLAGS: u64 = LOCK | ABSENT | UNLINKED;
pub const SEQ_ONE: u64 = 8;
pub const EPOCH_SHIFT: u32 = 32;

pub fn epoch_of(tid: u64) -> u64 {
    tid >> EPOCH_SHIFT
}

/// Words a row of `row_size` bytes takes.
pub fn row_words(row_size: usize) -> usize {
    row_size.div_ceil(8)
}

/// A record: `[tid, row words...]`. A plain pointer; lifetime is managed by the engine
/// (records in indexes live until unlinked and retired through the epoch collector).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct Rec(pub *const AtomicU64);

impl Rec {
    fn layout(row_words: usize) -> std::alloc::Layout {
        let l =
            std::alloc::Layout::array::<AtomicU64>(1 + row_words).expect("record size overflows");
        // Whole cache lines when that costs at most a quarter more memory: a read then
        // misses on the fewest lines (a 108-byte record: 2 lines instead of 2.5 on average).
        let padded = l.size().next_multiple_of(64);
        if l.size() >= 64 && (padded - l.size()) * 4 <= l.size() {
            l.align_to(64)
                .expect("64 is a valid alignment")
                .pad_to_align()
        } else {
            l
        }
    }

    pub fn alloc(row_words: usize, tid: u64, row: &[u8]) -> Rec {
        assert!(row.len() <= row_words * 8, "row longer than the record");
        let layout = Self::layout(row_words);
        // SAFETY: the layout is non-zero (a TID word at least). The words are written
        // with plain stores before the record is shared (no reader can see it yet): the
        // TID, the row bytes, and zero padding up to the last word.
        unsafe {
            let p = std::alloc::alloc(layout) as *mut u64;
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            p.write(tid);
            let body = p.add(1) as *mut u8;
            std::ptr::copy_nonoverlapping(row.as_ptr(), body, row.len());
            std::ptr::write_bytes(body.add(row.len()), 0, row_words * 8 - row.len());
            Rec(p as *const AtomicU64)
        }
    }

    /// # Safety
    /// `self` came from `alloc` with `row_words`, and no one can reach it any more.
    pub unsafe fn free(self, row_words: usize) {
        std::alloc::dealloc(self.0 as *mut u8, Self::layout(row_words));
    }

    pub fn from_u64(v: u64) -> Rec {
        Rec(v as usize as *const AtomicU64)
    }
    pub fn as_u64(self) -> u64 {
        self.0 as usize as u64
    }

    #[inline]
    pub fn tid(&self) -> &AtomicU64 {
        // SAFETY: records stay allocated while any transaction that can reach them runs.
        unsafe { &*self.0 }
    }
    #[inline]
    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: as in `tid`; callers pass `i` below the record's row words.
        unsafe { &*self.0.add(1 + i) }
    }

    /// Ask for the record's first two cache lines (the TID and a row of up to 120 bytes).
    #[inline(always)]
    pub fn prefetch(&self, row_words: usize) {
        rt::prefetch(self.0);
        if row_words >= 8 {
            rt::prefetch(self.0.wrapping_add(8));
        }
    }

    /// Copy the row into `out` with relaxed loads (caller validates the TID around it).
    /// (Chunked copies: measured faster on the 1-row read than raw unaligned stores.)
    #[inline]
    fn load_row(&self, out: &mut [u8]) {
        let mut chunks = out.chunks_exact_mut(8);
        let mut i = 0;
        for c in &mut chunks {
            c.copy_from_slice(&self.word(i).load(Relaxed).to_le_bytes());
            i += 1;
        }
        let r = chunks.into_remainder();
        if !r.is_empty() {
            let n = r.len();
            r.copy_from_slice(&self.word(i).load(Relaxed).to_le_bytes()[..n]);
        }
    }

    /// Store the row (caller holds the lock, or the record is not yet shared).
    #[inline]
    pub fn store_row(&self, row: &[u8]) {
        let n = row.len() / 8;
        let src = row.as_ptr() as *const u64;
        for i in 0..n {
            // SAFETY: word `i < n` of `row` is in bounds.
            let w = u64::from_le(unsafe { src.add(i).read_unaligned() });
            self.word(i).store(w, Relaxed);
        }
        let r = row.len() % 8;
        if r != 0 {
            let mut b = [0u8; 8];
            b[..r].copy_from_slice(&row[n * 8..]);
            self.word(n).store(u64::from_le_bytes(b), Relaxed);
        }
    }

    /// A consistent (TID, row) pair: waits while the record is locked, retries if the TID
    /// changed during the copy. The row is copied only if the record is present.
    #[inline]
    pub fn stable_read(&self, out: &mut [u8]) -> u64 {
        rt::point(rt::Point::Ctx(rt::Component::RecordRead));
        loop {
            let t1 = self.tid().load(Acquire);
            if t1 & LOCK != 0 {
                rt::wait_until(rt::WaitKind::Lock, None, || {
                    self.tid().load(Relaxed) & LOCK == 0
                });
                continue;
            }
            if t1 & ABSENT != 0 {
                return t1;
            }
            self.load_row(out);
            fence(Acquire);
            if self.tid().load(Relaxed) == t1 {
                return t1;
            }
        }
    }

    /// The TID once unlocked (no row copy).
    pub fn stable_tid(&self) -> u64 {
        loop {
            let t = self.tid().load(Acquire);
            if t & LOCK == 0 {
                return t;
            }
            rt::wait_until(rt::WaitKind::Lock, None, || {
                self.tid().load(Relaxed) & LOCK == 0
            });
        }
    }

    /// Lock the record (spinning through `rt` while another committer holds it).
    /// Returns the TID before locking.
    pub fn lock(&self) -> u64 {
        loop {
            let t = self.tid().load(Relaxed);
            if t & LOCK == 0
                && self
                    .tid()
                    .compare_exchange_weak(t, t | LOCK, Acquire, Relaxed)
                    .is_ok()
            {
                // Row stores after this must not be seen before the lock bit.
                fence(Release);
                return t;
            }
            rt::wait_until(rt::WaitKind::Lock, None, || {
                self.tid().load(Relaxed) & LOCK == 0
            });
        }
    }

    /// Release with a new TID (unlocked) published after the row stores.
    pub fn unlock_with(&self, tid: u64) {
        debug_assert!(tid & LOCK == 0);
        self.tid().store(tid, Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_for_odd_sizes() {
        for size in [1usize, 7, 8, 9, 16, 23] {
            let row: Vec<u8> = (0..size as u8).map(|b| b.wrapping_mul(37) + 1).collect();
            let r = Rec::alloc(row_words(size), SEQ_ONE, &row);
            let mut out = vec![0u8; size];
            assert_eq!(r.stable_read(&mut out), SEQ_ONE);
            assert_eq!(out, row);
            let t = r.lock();
            assert_eq!(t, SEQ_ONE);
            r.unlock_with(2 * SEQ_ONE);
            assert_eq!(r.stable_tid(), 2 * SEQ_ONE);
            unsafe { r.free(row_words(size)) };
        }
    }
}
