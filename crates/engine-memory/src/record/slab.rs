//! `record::slab`: memory for records whose size is a whole number of cache lines (64 to
//! `MAX_SLOT` bytes), carved from 2 MiB chunks on transparent huge pages.
//!
//! Why not the global allocator: asked for 192 bytes aligned to 64 it hands out 256 (its
//! aligned path over-allocates), and 192 bytes unaligned come from a 224-byte class, half
//! of them straddling one line more. At 10 M keyed string records that is 0.3-0.6 GB more
//! to walk, and on this kind of VM a random record's page walk, not its cache miss, is
//! what interleaving cannot hide. Here a 192-byte record takes 192 bytes, line-aligned,
//! and an insert's allocation is a pop from a thread's own list.
//!
//! One size class per line count; each class is shared by every table and engine of the
//! process (slots are interchangeable), with a per-thread cache in front so allocation
//! and freeing take no lock most of the time. Chunks are never returned to the OS: freed
//! slots are reused by later records of the same class (the way Silo's allocator keeps
//! its per-core arenas). This module must never hand out a slot that is in use, nor one
//! that is not line-aligned and inside a chunk.

use crate::huge::ZeroedArray;
use std::cell::RefCell;
use std::sync::Mutex;

pub const LINE: usize = 64;
/// Largest slot (bytes); bigger records come from the global allocator.
pub const MAX_SLOT: usize = 1024;
const CLASSES: usize = MAX_SLOT / LINE;
/// Chunk size: a multiple of the huge page, so the kernel maps it huge-page-aligned.
const CHUNK: usize = 2 << 20;
/// Slots moved at once between a thread's cache and its class.
const BATCH: usize = 64;
/// A thread's cache of one class holds at most this many free slots.
const CACHE_MAX: usize = 4 * BATCH;
const _: () = assert!(CHUNK.is_multiple_of(MAX_SLOT) && MAX_SLOT.is_multiple_of(LINE));

/// Does a record of this size and alignment come from here?
#[inline]
pub fn fits(size: usize, align: usize) -> bool {
    (LINE..=MAX_SLOT).contains(&size) && size.is_multiple_of(LINE) && align <= LINE
}

#[repr(C, align(64))]
struct Line([u64; 8]);

struct Shared {
    free: Vec<usize>,
    /// The unused rest of the newest chunk.
    bump: usize,
    end: usize,
    chunks: Vec<ZeroedArray<Line>>,
}

struct Class(Mutex<Shared>);

static CLASS: [Class; CLASSES] = [const {
    Class(Mutex::new(Shared {
        free: Vec::new(),
        bump: 0,
        end: 0,
        chunks: Vec::new(),
    }))
}; CLASSES];

struct Cache([Vec<usize>; CLASSES]);

impl Drop for Cache {
    /// A thread that ends gives its free slots back to their classes.
    fn drop(&mut self) {
        for (c, v) in self.0.iter_mut().enumerate() {
            if !v.is_empty() {
                lock(c).free.append(v);
            }
        }
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache([const { Vec::new() }; CLASSES])) };
}

fn lock(c: usize) -> std::sync::MutexGuard<'static, Shared> {
    // A panic while holding the lock cannot leave `Shared` inconsistent (every update is
    // a push, a pop or a bump done last), so a poisoned lock is still usable.
    CLASS[c].0.lock().unwrap_or_else(|e| e.into_inner())
}

fn class_of(size: usize) -> usize {
    debug_assert!(fits(size, 8), "{size} bytes: not a slab size");
    size / LINE - 1
}

/// Move up to `BATCH` free slots of class `c` (slots of `size` bytes) into `out`, carving
/// new ones from a chunk when the class has none.
fn refill(c: usize, size: usize, out: &mut Vec<usize>) {
    let mut s = lock(c);
    let take = s.free.len().min(BATCH);
    let at = s.free.len() - take;
    out.extend(s.free.drain(at..));
    while out.len() < BATCH {
        if s.end - s.bump < size {
            // SAFETY: all-zero bytes are a valid `Line`.
            let chunk = unsafe { ZeroedArray::<Line>::new(CHUNK / LINE) };
            s.bump = chunk.as_ptr() as usize;
            s.end = s.bump + CHUNK;
            s.chunks.push(chunk);
        }
        out.push(s.bump);
        s.bump += size;
    }
}

/// A line-aligned slot of `size` bytes (`fits(size, ..)`); its contents are arbitrary.
pub fn alloc(size: usize) -> *mut u8 {
    let c = class_of(size);
    let from_cache = CACHE.try_with(|cache| {
        let mut cache = cache.try_borrow_mut().ok()?;
        let v = &mut cache.0[c];
        if v.is_empty() {
            refill(c, size, v);
        }
        v.pop()
    });
    let p = match from_cache {
        Ok(Some(p)) => p,
        // The thread is ending (its cache is gone) or the cache is busy: use the class.
        _ => {
            let mut one = Vec::with_capacity(BATCH);
            refill(c, size, &mut one);
            let p = one.pop().expect("refill gives at least one slot");
            lock(c).free.append(&mut one);
            p
        }
    };
    debug_assert!(p.is_multiple_of(LINE) && p != 0);
    p as *mut u8
}

/// Give back a slot `alloc(size)` returned.
///
/// # Safety
/// `p` came from `alloc(size)` (same size), is not used by anyone any more, and is freed
/// once.
pub unsafe fn free(p: *mut u8, size: usize) {
    let c = class_of(size);
    debug_assert!((p as usize).is_multiple_of(LINE));
    let cached = CACHE.try_with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return false;
        };
        let v = &mut cache.0[c];
        v.push(p as usize);
        if v.len() > CACHE_MAX {
            let at = v.len() - 2 * BATCH;
            lock(c).free.extend(v.drain(at..));
        }
        true
    });
    if cached != Ok(true) {
        lock(c).free.push(p as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn in_a_chunk(c: usize, p: usize, size: usize) -> bool {
        lock(c).chunks.iter().any(|ch| {
            let start = ch.as_ptr() as usize;
            p >= start && p + size <= start + CHUNK
        })
    }

    #[test]
    fn slots_are_aligned_disjoint_inside_chunks_and_reused() {
        for size in [64usize, 192, 704, MAX_SLOT] {
            let c = class_of(size);
            let ps: Vec<usize> = (0..3 * BATCH + 5).map(|_| alloc(size) as usize).collect();
            let mut sorted = ps.clone();
            sorted.sort();
            for w in sorted.windows(2) {
                assert!(w[1] - w[0] >= size, "slots of {size} bytes overlap");
            }
            for &p in &ps {
                assert_eq!(p % LINE, 0);
                assert!(in_a_chunk(c, p, size));
                // Writable over its whole size.
                // SAFETY: a slot of `size` bytes we own.
                unsafe { std::ptr::write_bytes(p as *mut u8, 0xab, size) };
            }
            for &p in &ps {
                // SAFETY: allocated above with this size, freed once.
                unsafe { free(p as *mut u8, size) };
            }
            // Freed slots come back before new ones are carved.
            let again: HashSet<usize> = (0..BATCH).map(|_| alloc(size) as usize).collect();
            assert!(again.iter().all(|p| ps.contains(p)));
            for p in again {
                // SAFETY: as above.
                unsafe { free(p as *mut u8, size) };
            }
        }
    }

    #[test]
    fn slots_freed_by_other_threads_and_ended_threads_are_not_lost() {
        // A class no other test of this crate allocates from (the check below reads the
        // class's shared list, which other tests' threads would also use).
        let size = 896;
        let c = class_of(size);
        // Allocated here, freed by a thread that then ends: its cache goes to the class.
        let ps: Vec<usize> = (0..2 * BATCH).map(|_| alloc(size) as usize).collect();
        let freed = ps.clone();
        std::thread::spawn(move || {
            for p in freed {
                // SAFETY: allocated by the parent, handed over, freed once.
                unsafe { free(p as *mut u8, size) };
            }
        })
        .join()
        .unwrap();
        let shared: HashSet<usize> = lock(c).free.iter().copied().collect();
        assert!(
            ps.iter().all(|p| shared.contains(p)),
            "an ended thread kept slots"
        );
        // Concurrent users never get the same slot twice.
        let got: Vec<Vec<usize>> = (0..4)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..2000 {
                        mine.push(alloc(size) as usize);
                        if i % 3 == 0 {
                            let p = mine.swap_remove(i % mine.len());
                            // SAFETY: allocated by this thread, freed once.
                            unsafe { free(p as *mut u8, size) };
                        }
                    }
                    mine
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let all: Vec<usize> = got.into_iter().flatten().collect();
        let distinct: HashSet<usize> = all.iter().copied().collect();
        assert_eq!(distinct.len(), all.len(), "a slot was handed out twice");
    }

    #[test]
    fn only_whole_lines_up_to_the_largest_slot_fit() {
        assert!(fits(64, 8) && fits(192, 64) && fits(MAX_SLOT, 64));
        assert!(!fits(40, 8) && !fits(100, 8) && !fits(MAX_SLOT + 64, 64) && !fits(128, 128));
    }
}
