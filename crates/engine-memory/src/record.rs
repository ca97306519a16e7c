//! `record`: the in-memory record: one TID word followed by the row, as 64-bit words
//! (row bytes packed little-endian into words, so concurrent readers copy with atomic
//! loads and never race in the language's sense). Owns the TID word layout, stable
//! reads, installing rows, and allocating/freeing records (from `arena`).
//!
//! This module must never decide whether a transaction may commit (that is `occ`).

use memindex::arena;

use api::key::MAX_KEY_LEN;
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
/// `Rec::prefetch` asks for the lines up to this row word (word 15 ends the second line
/// of a line-aligned record: a TID and 120 bytes of row).
const PREFETCH_WORDS: usize = 15;

/// The lines (addresses over 64) `Rec::prefetch` asks for, of a record at `base` with
/// `row_words` row words: from the TID's line to that of row word `PREFETCH_WORDS` or the
/// last, whichever comes first.
#[inline(always)]
fn prefetch_lines(base: usize, row_words: usize) -> std::ops::RangeInclusive<usize> {
    (base >> 6)..=((base + 8 * row_words.min(PREFETCH_WORDS)) >> 6)
}

pub fn epoch_of(tid: u64) -> u64 {
    tid >> EPOCH_SHIFT
}

/// Words a row of `row_size` bytes takes.
pub fn row_words(row_size: usize) -> usize {
    row_size.div_ceil(8)
}

/// A record: `[tid, row words..., key area]`. A plain pointer; lifetime is managed by the
/// engine (records in indexes live until unlinked and retired through the epoch collector).
///
/// The key area exists only in *keyed* records (tables whose primary index is a hash
/// index, which compares keys here instead of in an entry of its own, so a probe touches
/// one allocation, one page, after the bucket): it starts right after the row words,
/// byte 0 is the key's length and bytes 1.. the key, in whole words. It is written once,
/// before the record is shared, and never changes; only the row words are ever stored to.
///
/// ```text
/// word 0        words 1 ..= row_words          key area (keyed only)
/// +-----------+-------------------------------+-----+--------------------+-----+
/// | TID       | row bytes, little-endian      | len | key bytes          | pad |
/// +-----------+-------------------------------+-----+--------------------+-----+
/// ^ Rec.0     ^ Rec.0 + 8                     ^ Rec.0 + 8 * (1 + row_words)
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) struct Rec(*const AtomicU64);

/// Byte offset of the key area in a keyed record of `row_words`.
#[inline(always)]
pub const fn key_offset(row_words: usize) -> usize {
    8 * (1 + row_words)
}

/// Words the key area of a key of `len` bytes takes (the length byte, then the key).
pub const fn key_words(len: usize) -> usize {
    (1 + len).div_ceil(8)
}

// The length byte must hold every key length, and the longest key area stays within two
// cache lines (the probe prefetches the key's first and last line).
const _: () = assert!(MAX_KEY_LEN <= u8::MAX as usize);
const _: () = assert!(key_words(MAX_KEY_LEN) * 8 <= 128);
// The key area is word-aligned and follows the last row word, whatever the row size.
const _: () = assert!(key_offset(0) == 8 && key_offset(13) == 112);

/// The cache lines (addresses / 64) of the keyed record at `base` that a lookup of the
/// row words `words` (`[first, end)`) reads: the TID's, those words' and the key area's,
/// each once, in increasing order (`Rec::prefetch_part`).
#[inline(always)]
fn part_lines(
    base: usize,
    row_words: usize,
    key_len: usize,
    words: [u16; 2],
    mut f: impl FnMut(usize),
) {
    let key = base + key_offset(row_words);
    let (first, end) = (words[0] as usize, words[1] as usize);
    if first == 0 && end == row_words {
        // The whole record: one run of lines.
        for line in (base >> 6)..=((key + key_len) >> 6) {
            f(line);
        }
        return;
    }
    let mut next = 0;
    let mut ask = |lo: usize, hi: usize| {
        for line in (lo >> 6).max(next)..=(hi >> 6) {
            f(line);
        }
        next = next.max((hi >> 6) + 1);
    };
    ask(base, base + 7);
    if first < end {
        ask(base + 8 * (1 + first), base + 8 * (1 + end) - 1);
    }
    ask(key, key + key_len);
}

/// Written over the key length of a keyed record as it is freed (debug builds): a key read
/// from freed memory then fails `Rec::key`'s length check instead of passing unnoticed.
#[cfg(debug_assertions)]
const FREED_KEY_LEN: u8 = u8::MAX;

impl Rec {
    /// `key_len`: the key area's key length (keyed records), `None` for unkeyed ones.
    fn layout(row_words: usize, key_len: Option<usize>) -> std::alloc::Layout {
        let words = 1 + row_words + key_len.map_or(0, key_words);
        let l = std::alloc::Layout::array::<AtomicU64>(words).expect("record size overflows");
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

    /// The arena slot size for a record of this layout, if it comes from the arena (all
    /// but records above `arena::MAX_SLOT`).
    #[inline]
    fn arena_slot(layout: std::alloc::Layout) -> Option<usize> {
        let size = arena::slot_size(layout.size());
        arena::fits(size, layout.align()).then_some(size)
    }

    /// A new record; `key`: the key to keep in its key area (keyed records), or `None`.
    pub fn alloc(row_words: usize, key: Option<&[u8]>, tid: u64, row: &[u8]) -> Rec {
        assert!(row.len() <= row_words * 8, "row longer than the record");
        if let Some(k) = key {
            assert!(k.len() <= MAX_KEY_LEN, "key longer than MAX_KEY_LEN");
        }
        let layout = Self::layout(row_words, key.map(<[u8]>::len));
        // SAFETY: the layout is non-zero (a TID word at least) and holds the TID, the row
        // words and the key area (`layout`). The words are written with plain stores
        // before the record is shared (no reader can see it yet): the TID, the row bytes,
        // zero padding up to the last row word, and the key area (zero-padded).
        unsafe {
            let p = if let Some(size) = Self::arena_slot(layout) {
                arena::alloc(size) as *mut u64
            } else {
                std::alloc::alloc(layout) as *mut u64
            };
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            p.write(tid);
            let body = p.add(1) as *mut u8;
            std::ptr::copy_nonoverlapping(row.as_ptr(), body, row.len());
            std::ptr::write_bytes(body.add(row.len()), 0, row_words * 8 - row.len());
            if let Some(k) = key {
                let area = (p as *mut u8).add(key_offset(row_words));
                std::ptr::write_bytes(area, 0, key_words(k.len()) * 8);
                area.write(k.len() as u8);
                std::ptr::copy_nonoverlapping(k.as_ptr(), area.add(1), k.len());
            }
            Rec(p as *const AtomicU64)
        }
    }

    /// # Safety
    /// `self` came from `alloc` with `row_words` (and a key if `keyed`), and no one can
    /// reach it any more.
    pub unsafe fn free(self, row_words: usize, keyed: bool) {
        let key_len = keyed.then(|| {
            // SAFETY: a keyed record's length byte (caller), still allocated.
            let len = unsafe { self.key_area(row_words).read() };
            #[cfg(debug_assertions)]
            // SAFETY: as above; nobody reads the record any more (caller).
            unsafe {
                (self.key_area(row_words) as *mut u8).write(FREED_KEY_LEN)
            };
            len as usize
        });
        let layout = Self::layout(row_words, key_len);
        // SAFETY: the layout `alloc` used, so the same source (caller: from `alloc`, no
        // one can reach it).
        unsafe {
            if let Some(size) = Self::arena_slot(layout) {
                arena::free(self.0 as *mut u8, size)
            } else {
                std::alloc::dealloc(self.0 as *mut u8, layout)
            }
        }
    }

    #[inline(always)]
    fn key_area(self, row_words: usize) -> *const u8 {
        (self.0 as *const u8).wrapping_add(key_offset(row_words))
    }

    /// The key kept in a keyed record.
    ///
    /// # Safety
    /// `self` is a keyed record of `row_words` (`alloc` with a key) that stays allocated
    /// for `'a` (linked in an index the caller is pinned on, or not yet retired).
    #[inline(always)]
    pub unsafe fn key<'a>(self, row_words: usize) -> &'a [u8] {
        let area = self.key_area(row_words);
        // SAFETY: the key area is written before the record is shared and never changes
        // (caller: keyed, allocated).
        let len = unsafe { area.read() } as usize;
        debug_assert!(
            len <= MAX_KEY_LEN,
            "key length {len} at {area:?}: a freed or unkeyed record"
        );
        // SAFETY: as above; the area holds `len` key bytes after the length byte.
        unsafe { std::slice::from_raw_parts(area.add(1), len.min(MAX_KEY_LEN)) }
    }

    /// Ask for the lines a probe for a key of `key_len` bytes reads in a keyed record: the
    /// key area (compared first) and the TID and row up to 120 bytes (read on a hit).
    #[inline(always)]
    pub fn prefetch_keyed(&self, row_words: usize, key_len: usize) {
        let base = self.0 as *const u8;
        let key = base.wrapping_add(key_offset(row_words));
        let row2 = if row_words >= 8 {
            base.wrapping_add(64)
        } else {
            base
        };
        // Addresses in increasing order; each line asked for once (records under 64
        // bytes are not line-aligned, so lines are counted from the addresses).
        let mut prev = usize::MAX;
        for p in [base, row2, key, key.wrapping_add(key_len)] {
            let line = p as usize >> 6;
            if line != prev {
                rt::prefetch(p);
                prev = line;
            }
        }
    }

    /// Ask for the lines of a keyed record that a lookup reading the row words `words`
    /// (`[first, end)`) touches: the TID, those words and the key area. A hint that reads
    /// nothing, so the record need not be alive. Stock-Level's one word of a 384-byte
    /// Stock record: 2 lines of 6.
    #[inline]
    pub fn prefetch_part(&self, row_words: usize, key_len: usize, words: [u16; 2]) {
        part_lines(self.0 as usize, row_words, key_len, words, |line| {
            rt::prefetch((line << 6) as *const u8)
        });
    }

    /// The record at address `v`.
    ///
    /// # Safety
    /// `v` is the address of a record `Rec::alloc` made, not yet freed, and kept from
    /// being freed while the `Rec` is used (an epoch pin, or no other thread), except
    /// that the prefetch methods, which read nothing, accept any address.
    pub unsafe fn from_u64(v: u64) -> Rec {
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

    /// Ask for the lines holding the TID and the row's first 15 words (all of a row of up
    /// to 120 bytes): every line from the TID's to that last word's. Records under 64
    /// bytes are not line-aligned (`layout`), so a 24-byte record (the micro-benchmark's)
    /// straddles two lines one time in four; asking for the TID's line alone left the
    /// row's second line to miss after an interleaved read had switched away and back.
    #[inline(always)]
    pub fn prefetch(&self, row_words: usize) {
        for line in prefetch_lines(self.0 as usize, row_words) {
            rt::prefetch((line << 6) as *const u8);
        }
    }

    /// Copy the row into `out` with relaxed loads (caller validates the TID around it):
    /// whole words, then the bytes of a last partial word by shifts. (Word by word with
    /// unaligned stores; a partial word's `copy_from_slice` of variable length was a call
    /// to `memcpy`.)
    #[inline(always)]
    fn load_row(&self, out: &mut [u8], first_word: usize) {
        let full = out.len() / 8;
        let dst = out.as_mut_ptr();
        for i in 0..full {
            let w = self.word(first_word + i).load(Relaxed).to_le();
            // SAFETY: bytes `8 * i .. 8 * i + 8` are within `out` (`i < out.len() / 8`).
            unsafe { (dst.add(8 * i) as *mut u64).write_unaligned(w) };
        }
        let rest = out.len() % 8;
        if rest != 0 {
            let mut w = self.word(first_word + full).load(Relaxed);
            for b in &mut out[8 * full..] {
                *b = w as u8;
                w >>= 8;
            }
        }
    }

    /// Store the row (caller holds the lock, or the record is not yet shared).
    #[inline]
    pub fn store_row(&self, row: &[u8]) {
        self.store_words(row, 0, row_words(row.len()))
    }

    /// [`Rec::store_row`] of the row's words `first..end` only (`row` is the whole row;
    /// its bytes outside them are not read).
    #[inline]
    pub fn store_words(&self, row: &[u8], first: usize, end: usize) {
        let n = row.len() / 8;
        let src = row.as_ptr() as *const u64;
        for i in first..end.min(n) {
            // SAFETY: word `i < n` of `row` is in bounds.
            let w = u64::from_le(unsafe { src.add(i).read_unaligned() });
            self.word(i).store(w, Relaxed);
        }
        let r = row.len() % 8;
        if r != 0 && end > n {
            let mut b = [0u8; 8];
            b[..r].copy_from_slice(&row[n * 8..]);
            self.word(n).store(u64::from_le_bytes(b), Relaxed);
        }
    }

    /// Whether the row's words `i..i + 8` equal the 64 bytes at `new`. The caller holds
    /// the lock (no word changes meanwhile) and `i + 8` is within the row.
    #[inline(always)]
    fn same_8_words(&self, i: usize, new: *const u64) -> bool {
        let old = self.0.wrapping_add(1 + i) as *const u8;
        let new = new as *const u8;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: both ranges are 64 readable bytes (words `i..i + 8` of the record, and
        // of the caller's row); under the lock nothing writes the record's words, so a
        // plain read of them races with no store. SSE2 is part of the x86_64 baseline.
        unsafe {
            use std::arch::x86_64::*;
            let eq = |k: usize| {
                _mm_cmpeq_epi8(
                    _mm_loadu_si128(old.add(16 * k) as *const __m128i),
                    _mm_loadu_si128(new.add(16 * k) as *const __m128i),
                )
            };
            let all = _mm_and_si128(_mm_and_si128(eq(0), eq(1)), _mm_and_si128(eq(2), eq(3)));
            _mm_movemask_epi8(all) == 0xFFFF
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0..8).all(|k| {
                // SAFETY: as above.
                let n = u64::from_le(unsafe { (new as *const u64).add(k).read_unaligned() });
                self.word(i + k).load(Relaxed) == n
            })
        }
    }

    /// Store the row like `store_row` (caller holds the lock), writing only the words
    /// that change, and append to `runs` the changed bytes as runs of (offset `u16`,
    /// length `u16`, the bytes), in increasing offset order, at word granularity (the
    /// log's update records, `log::append_update`). Rows must be below 64 KiB. (The
    /// whole row: tests; commits store part or all of it with `store_changes_in`.)
    #[cfg(test)]
    pub fn store_changes(&self, row: &[u8], runs: &mut Vec<u8>) {
        self.store_changes_in(row, 0, row_words(row.len()), runs)
    }

    /// [`Rec::store_changes`] of the row's words `first..end` only (the others are left
    /// as they are, and `row`'s bytes outside them are not read): an update that read
    /// and changed only part of the row.
    pub fn store_changes_in(&self, row: &[u8], first: usize, end: usize, runs: &mut Vec<u8>) {
        assert!(row.len() <= u16::MAX as usize, "a delta row above 64 KiB");
        assert!(
            first <= end && end <= row_words(row.len()),
            "words out of the row"
        );
        let full = row.len() / 8;
        let stop = end.min(full);
        // At most one run per changed word: a 4-byte head and 8 bytes each, plus the
        // partial word's 8 (written whole, counted partly).
        runs.reserve(12 * (full + 1) + 8);
        let out = runs.as_mut_ptr();
        let mut at = runs.len();
        let src = row.as_ptr() as *const u64;
        // SAFETY: callers pass `i < full`, so bytes `8i..8i+8` are inside `row`.
        let new = |i: usize| u64::from_le(unsafe { src.add(i).read_unaligned() });
        // SAFETY (`put`, `head`): `at` stays below the length reserved above (one head
        // per run, one word per changed word, the partial word last).
        let put =
            |at: usize, w: u64| unsafe { (out.add(at) as *mut u64).write_unaligned(w.to_le()) };
        let head = |at: usize, lo: usize, len: usize| unsafe {
            let h = (lo as u32) | ((len as u32) << 16);
            (out.add(at) as *mut u32).write_unaligned(h.to_le());
        };
        // Word `i` of the row is `w`, of which `n` bytes count: store it and add it to the
        // run being built (`open`: where its head goes and its first word) if it changed,
        // else close that run.
        let step = |open: &mut Option<(usize, usize)>, at: &mut usize, i: usize, w: u64, n| {
            if self.word(i).load(Relaxed) != w {
                self.word(i).store(w, Relaxed);
                if open.is_none() {
                    *open = Some((*at, i));
                    *at += 4;
                }
                put(*at, w);
                *at += n;
            } else if let Some((h, from)) = open.take() {
                head(h, from * 8, (i - from) * 8);
            }
        };
        let mut open: Option<(usize, usize)> = None;
        let mut i = first;
        while i < stop {
            if open.is_none() {
                // Most words do not change: skip them eight at a time.
                while i + 8 <= stop && self.same_8_words(i, src.wrapping_add(i)) {
                    i += 8;
                }
                if i == stop {
                    break;
                }
            }
            step(&mut open, &mut at, i, new(i), 8);
            i += 1;
        }
        // The last, partial word (zero-padded, as `store_row` stores it).
        let part = row.len() - full * 8;
        if part > 0 && end > full {
            let mut b = [0u8; 8];
            b[..part].copy_from_slice(&row[full * 8..]);
            step(&mut open, &mut at, full, u64::from_le_bytes(b), part);
        }
        if let Some((h, from)) = open {
            head(h, from * 8, (end * 8).min(row.len()) - from * 8);
        }
        // SAFETY: every byte up to `at` was written above (heads, words, partial word).
        unsafe { runs.set_len(at) };
    }

    /// A consistent (TID, row) pair: waits while the record is locked, retries if the TID
    /// changed during the copy. The row is copied only if the record is present.
    #[inline]
    pub fn stable_read(&self, out: &mut [u8]) -> u64 {
        self.stable_read_at(out, 0)
    }

    /// [`Rec::stable_read`] of part of the row: `out` receives the row's bytes from word
    /// `first_word` on (`out.len()` of them, within the row). A reader of one field of a
    /// wide row copies, and brings into the cache, only the words that hold it.
    #[inline]
    pub fn stable_read_at(&self, out: &mut [u8], first_word: usize) -> u64 {
        rt::point(rt::Point::Ctx(rt::Component::RecordRead));
        loop {
            let t1 = self.tid().load(Acquire);
            // One test on the usual path: neither locked nor absent.
            if t1 & (LOCK | ABSENT) != 0 {
                if t1 & LOCK == 0 {
                    return t1;
                }
                self.wait_unlocked();
                continue;
            }
            self.load_row(out, first_word);
            fence(Acquire);
            if self.tid().load(Relaxed) == t1 {
                return t1;
            }
        }
    }

    /// Wait (through `rt`) until no committer holds the record.
    #[cold]
    #[inline(never)]
    fn wait_unlocked(&self) {
        rt::wait_until(rt::WaitKind::Lock, None, || {
            self.tid().load(Relaxed) & LOCK == 0
        });
    }

    /// The TID once unlocked (no row copy).
    pub fn stable_tid(&self) -> u64 {
        loop {
            let t = self.tid().load(Acquire);
            if t & LOCK == 0 {
                return t;
            }
            self.wait_unlocked();
        }
    }

    /// Lock the record (spinning through `rt` while another committer holds it).
    /// Returns the TID before locking.
    pub fn lock(&self) -> u64 {
        loop {
            if let Some(t) = self.try_lock() {
                return t;
            }
            self.wait_unlocked();
        }
    }

    /// Lock if no one holds the lock now; `None` (nothing done) if someone does. Never
    /// waits: commit's first pass takes its locks in any order this way.
    #[inline]
    pub fn try_lock(&self) -> Option<u64> {
        let t = self.tid().load(Relaxed);
        if t & LOCK == 0
            && self
                .tid()
                .compare_exchange(t, t | LOCK, Acquire, Relaxed)
                .is_ok()
        {
            // Row stores after this must not be seen before the lock bit.
            fence(Release);
            return Some(t);
        }
        None
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

    /// A read asks for every line its record's TID and row (up to 15 words) lie on: a
    /// 24-byte record (two row words, not line-aligned) at a line's byte 48 straddles
    /// two lines and takes both; at byte 0 or 40, one; a line-aligned record of 13 row
    /// words two; a 47-word one (Stock-like) its first two of six.
    #[test]
    fn a_record_asks_for_the_lines_its_row_lies_on() {
        let lines = |base: usize, rw: usize| prefetch_lines(base, rw).collect::<Vec<_>>();
        let l = 1000 * 64;
        assert_eq!(lines(l + 48, 2), vec![1000, 1001]);
        assert_eq!(lines(l + 56, 2), vec![1000, 1001]);
        assert_eq!(lines(l, 2), vec![1000]);
        assert_eq!(lines(l + 40, 2), vec![1000]);
        assert_eq!(lines(l, 13), vec![1000, 1001]);
        assert_eq!(lines(l, 47), vec![1000, 1001]);
        assert_eq!(lines(l + 16, 15), vec![1000, 1001, 1002]);
    }

    /// A hinted lookup asks for the lines it reads and no others: for a Stock-like
    /// record (40 row words, an 8-byte key: 344 bytes over 6 lines) the first word's
    /// lookup takes the TID's line and the key's; the whole row all six; words at a line
    /// boundary and a key straddling two lines each add what they touch, once.
    #[test]
    fn a_part_asks_for_its_lines_only() {
        let lines = |base: usize, rw: usize, kl: usize, w: [u16; 2]| {
            let mut v = Vec::new();
            part_lines(base, rw, kl, w, |l| v.push(l));
            v
        };
        let b = 64 * 100;
        assert_eq!(lines(b, 40, 8, [0, 1]), vec![100, 105]);
        assert_eq!(lines(b, 40, 8, [0, 40]), vec![100, 101, 102, 103, 104, 105]);
        // Words 7..9 sit at bytes 64..80 of the record: line 101.
        assert_eq!(lines(b, 40, 8, [7, 9]), vec![100, 101, 105]);
        // Word 6 ends line 100 (the TID's line): nothing asked twice.
        assert_eq!(lines(b, 40, 8, [6, 7]), vec![100, 105]);
        // No row words (a part out of the row): TID and key only.
        assert_eq!(lines(b, 40, 8, [40, 40]), vec![100, 105]);
        // A key from byte 8 * 41 = 328 to 328 + 60: lines 105 and 106.
        assert_eq!(lines(b, 40, 60, [0, 1]), vec![100, 105, 106]);
        // A small record, not line-aligned: everything on one line.
        assert_eq!(lines(b + 8, 2, 8, [0, 2]), vec![100]);
    }

    #[test]
    fn rows_round_trip_for_odd_sizes() {
        for size in [1usize, 7, 8, 9, 16, 23] {
            let row: Vec<u8> = (0..size as u8).map(|b| b.wrapping_mul(37) + 1).collect();
            let r = Rec::alloc(row_words(size), None, SEQ_ONE, &row);
            let mut out = vec![0u8; size];
            assert_eq!(r.stable_read(&mut out), SEQ_ONE);
            assert_eq!(out, row);
            let t = r.lock();
            assert_eq!(t, SEQ_ONE);
            r.unlock_with(2 * SEQ_ONE);
            assert_eq!(r.stable_tid(), 2 * SEQ_ONE);
            unsafe { r.free(row_words(size), false) };
        }
    }

    /// `store_changes` leaves the record holding the new row, and its runs, applied to
    /// the old row, give the new row; they cover only changed words and are minimal
    /// (no two runs touch) -- for row sizes around word and 64-byte boundaries (the
    /// unchanged words are skipped 64 bytes at a time) and changes from
    /// none to all.
    #[test]
    fn stored_changes_rebuild_the_row_from_the_old_one() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for size in [
            1usize, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 306, 680,
        ] {
            for round in 0..50 {
                let old: Vec<u8> = (0..size).map(|_| next() as u8).collect();
                let mut new = old.clone();
                let changes = [0, 1, 2, 5, size][round % 5];
                for _ in 0..changes {
                    let at = next() as usize % size;
                    new[at] = new[at].wrapping_add(1 + next() as u8 % 200);
                }
                let r = Rec::alloc(row_words(size), None, SEQ_ONE, &old);
                r.lock();
                let mut runs = Vec::new();
                r.store_changes(&new, &mut runs);
                r.unlock_with(2 * SEQ_ONE);
                let mut out = vec![0u8; size];
                r.stable_read(&mut out);
                assert_eq!(
                    out, new,
                    "size {size}: the record does not hold the new row"
                );
                let mut rebuilt = old.clone();
                crate::log::apply_runs(&mut rebuilt, &runs).unwrap();
                assert_eq!(rebuilt, new, "size {size}: the runs do not rebuild the row");
                // Each run starts at a changed word, and the word after it is unchanged.
                let word_changed = |w: usize| {
                    old[w * 8..(w * 8 + 8).min(size)] != new[w * 8..(w * 8 + 8).min(size)]
                };
                let mut p = &runs[..];
                while !p.is_empty() {
                    let off = u16::from_le_bytes([p[0], p[1]]) as usize;
                    let len = u16::from_le_bytes([p[2], p[3]]) as usize;
                    assert_eq!(off % 8, 0);
                    assert!(word_changed(off / 8), "size {size}: a run starts unchanged");
                    let end = off + len;
                    assert!(
                        end == size || !word_changed(end / 8),
                        "size {size}: runs touch"
                    );
                    p = &p[4 + len..];
                }
                if old == new {
                    assert!(runs.is_empty());
                }
                unsafe { r.free(row_words(size), false) };
            }
        }
    }

    /// The key area sits after the last row word, inside the allocation, and neither it
    /// nor the row overwrites the other (row sizes around word and line boundaries, keys
    /// of every length class up to `MAX_KEY_LEN`).
    #[test]
    fn key_area_follows_the_row_inside_the_record() {
        for size in [1usize, 7, 8, 15, 16, 100, 104, 120, 121] {
            let words = row_words(size);
            for len in [0usize, 1, 7, 8, 50, MAX_KEY_LEN] {
                let key: Vec<u8> = (0..len as u8).map(|b| b ^ 0x5a).collect();
                let row: Vec<u8> = (0..size).map(|b| (b as u8).wrapping_mul(13) | 1).collect();
                let r = Rec::alloc(words, Some(&key), SEQ_ONE, &row);
                let base = r.0 as usize;
                let k = unsafe { r.key(words) };
                assert_eq!(k, &key[..], "row {size} key {len}");
                // Placed right after the row words, the length byte first.
                assert_eq!(k.as_ptr() as usize, base + key_offset(words) + 1);
                assert_eq!(key_offset(words), 8 + 8 * words);
                let end = key_offset(words) + 1 + len;
                assert!(
                    Rec::layout(words, Some(len)).size() >= end,
                    "key past the record"
                );
                // Storing rows (all bits set, then zeros) leaves the key alone, and the
                // key does not leak into the row.
                let mut out = vec![0u8; size];
                assert_eq!(r.stable_read(&mut out), SEQ_ONE);
                assert_eq!(out, row);
                for fill in [0xffu8, 0] {
                    r.lock();
                    r.store_row(&vec![fill; size]);
                    r.unlock_with(2 * SEQ_ONE);
                    assert_eq!(unsafe { r.key(words) }, &key[..]);
                    r.stable_read(&mut out);
                    assert!(out.iter().all(|&b| b == fill));
                }
                r.prefetch_keyed(words, len);
                unsafe { r.free(words, true) };
            }
        }
    }

    #[test]
    fn unkeyed_records_take_no_key_area() {
        assert_eq!(Rec::layout(2, None).size(), 24);
        assert_eq!(Rec::layout(2, Some(8)).size(), 24 + 16);
        // The micro-benchmark's string rows (100 bytes, 50-byte keys): three whole lines.
        assert_eq!(Rec::layout(13, None).size(), 128);
        assert_eq!(Rec::layout(13, Some(50)).size(), 192);
        assert_eq!(Rec::layout(13, Some(50)).align(), 64);
    }
}
