//! `arena`: the memory engine's memory for records and B+tree nodes: size classes of
//! 8-byte steps up to `MAX_SLOT` bytes, carved from 2 MiB chunks on transparent huge
//! pages, with an optional reserve of chunks faulted in before the run (`reserve`).
//!
//! Why not the global allocator: asked for 192 bytes aligned to 64 it hands out 256 (its
//! aligned path over-allocates), and 192 bytes unaligned come from a 224-byte class, half
//! of them straddling one line more. At 10 M keyed string records that is 0.3-0.6 GB more
//! to walk, and on this kind of VM a random record's page walk, not its cache miss, is
//! what interleaving cannot hide. Here a 192-byte record takes 192 bytes, line-aligned,
//! and an insert's allocation is a pop from a thread's own list.
//!
//! Why a reserve: a growing database (TPC-C's inserts, about 1 KB per transaction) takes
//! fresh memory all the time, and the first touch of a page costs its fault and zeroing,
//! which on a VM whose host backs guest memory lazily is 0.3-4 s per GiB (measured on
//! this project's VM, `docs/performance/history.md`, issue 15's eighth session): a fifth of a TPC-C run's time went to
//! `clear_page`. `reserve` takes that cost before the measurement, as Silo's allocator
//! does when its benchmark is given `--numa-memory`.
//!
//! One size class per 8-byte step; each class is shared by every table and engine of the
//! process (slots are interchangeable), and comes twice: `alloc_apart`'s classes carve
//! chunks of their own (a B+tree's inner nodes, kept packed apart from its leaves of the
//! same size). A per-thread cache sits in front so allocation
//! and freeing take no lock most of the time. Chunks are never returned to the OS: freed
//! slots are reused by later allocations of the same class (the way Silo's allocator keeps
//! its per-core arenas). This module must never hand out a slot that is in use, nor one
//! that is not aligned as `fits` promises and inside a chunk.

use crate::huge::ZeroedArray;
use std::cell::RefCell;
use std::sync::Mutex;

pub const LINE: usize = 64;
/// Size step of the classes (and the alignment of every slot).
pub const GRAIN: usize = 8;
/// Largest slot (bytes); bigger allocations come from the global allocator.
pub const MAX_SLOT: usize = 2048;
const CLASSES: usize = MAX_SLOT / GRAIN;
/// Pools of classes: pool 0 (`alloc`) and pool 1 (`alloc_apart`), whose slots of a size
/// come from chunks of their own, never shared with pool 0's slots of that size.
const POOLS: usize = 2;
/// Chunk size: a multiple of the huge page, so the kernel maps it huge-page-aligned.
const CHUNK: usize = 2 << 20;
/// Slots moved at once between a thread's cache and its class.
const BATCH: usize = 64;
/// A thread's cache of one class holds at most this many free slots.
const CACHE_MAX: usize = 4 * BATCH;
const _: () = assert!(CHUNK.is_multiple_of(LINE) && MAX_SLOT.is_multiple_of(LINE));

/// Can an allocation of this size and alignment come from here? Slots are `GRAIN`-aligned,
/// and line-aligned when their size is a whole number of lines (a class carves its chunk
/// in steps of its size from a line-aligned start).
#[inline]
pub const fn fits(size: usize, align: usize) -> bool {
    size >= 1
        && size <= MAX_SLOT
        && size.is_multiple_of(GRAIN)
        && (align <= GRAIN || (align <= LINE && size.is_multiple_of(LINE)))
}

/// The slot size for `size` bytes: the next multiple of `GRAIN`.
#[inline]
pub const fn slot_size(size: usize) -> usize {
    size.next_multiple_of(GRAIN)
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

static CLASS: [Class; POOLS * CLASSES] = [const {
    Class(Mutex::new(Shared {
        free: Vec::new(),
        bump: 0,
        end: 0,
        chunks: Vec::new(),
    }))
}; POOLS * CLASSES];

struct Cache([Vec<usize>; POOLS * CLASSES]);

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
    static CACHE: RefCell<Cache> = const { RefCell::new(Cache([const { Vec::new() }; POOLS * CLASSES])) };
}

fn lock(c: usize) -> std::sync::MutexGuard<'static, Shared> {
    // A panic while holding the lock cannot leave `Shared` inconsistent (every update is
    // a push, a pop or a bump done last), so a poisoned lock is still usable.
    CLASS[c].0.lock().unwrap_or_else(|e| e.into_inner())
}

fn class_of(size: usize) -> usize {
    debug_assert!(fits(size, 8), "{size} bytes: not an arena size");
    size / GRAIN - 1
}

/// Pre-faulted chunks not yet given to a class (`reserve`).
static RESERVE: Mutex<Vec<ZeroedArray<Line>>> = Mutex::new(Vec::new());

fn reserve_lock() -> std::sync::MutexGuard<'static, Vec<ZeroedArray<Line>>> {
    // Pushes and pops only: a poisoned lock is still consistent.
    RESERVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh chunk: one from the reserve if there is one, else a new mapping.
fn new_chunk() -> ZeroedArray<Line> {
    if let Some(c) = reserve_lock().pop() {
        return c;
    }
    // SAFETY: all-zero bytes are a valid `Line`.
    unsafe { ZeroedArray::<Line>::new(CHUNK / LINE) }
}

/// Fault in every page of a chunk now (writing), so that its first use later costs no
/// page fault and no zeroing.
fn fault_in(c: &ZeroedArray<Line>) {
    // Slots are handed out as addresses of this memory in the same way (`refill`).
    let p = c.as_ptr() as *mut libc::c_void;
    // SAFETY: the chunk's own mapping, `CHUNK` bytes.
    let populated = unsafe { libc::madvise(p, CHUNK, libc::MADV_POPULATE_WRITE) } == 0;
    if !populated {
        // Kernels before 5.14: touch one byte per 4 KiB page (the bytes are zero already).
        for off in (0..CHUNK).step_by(4096) {
            // SAFETY: inside the chunk, which this function owns.
            unsafe { std::ptr::write_volatile((p as *mut u8).add(off), 0) };
        }
    }
}

/// Make sure at least `bytes` of fresh, faulted-in memory wait in the reserve (rounded up
/// to whole 2 MiB chunks); returns the chunks added. Allocation then takes chunks from the
/// reserve before mapping new ones. The memory is the process's until it ends.
pub fn reserve(bytes: u64) -> usize {
    reserve_with_progress(bytes, &mut |_, _| {})
}

/// [`reserve`], telling `progress` (bytes faulted in so far, bytes to fault in) after each
/// chunk: on this kind of VM a fresh GiB can take seconds.
pub fn reserve_with_progress(bytes: u64, progress: &mut dyn FnMut(u64, u64)) -> usize {
    let want = (bytes as usize).div_ceil(CHUNK);
    let have = reserve_lock().len();
    let todo = want.saturating_sub(have);
    let mut added = Vec::with_capacity(todo);
    for i in 0..todo {
        // SAFETY: all-zero bytes are a valid `Line`.
        let c = unsafe { ZeroedArray::<Line>::new(CHUNK / LINE) };
        fault_in(&c);
        added.push(c);
        progress(((i + 1) * CHUNK) as u64, (todo * CHUNK) as u64);
    }
    let n = added.len();
    reserve_lock().append(&mut added);
    n
}

/// Bytes waiting in the reserve.
pub fn reserved_bytes() -> u64 {
    (reserve_lock().len() * CHUNK) as u64
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
            let chunk = new_chunk();
            s.bump = chunk.as_ptr() as usize;
            s.end = s.bump + CHUNK;
            s.chunks.push(chunk);
        }
        out.push(s.bump);
        s.bump += size;
    }
}

/// A slot of `size` bytes (`fits(size, ..)`), aligned as `fits` says; its contents are
/// arbitrary.
pub fn alloc(size: usize) -> *mut u8 {
    alloc_in(0, size)
}

/// `alloc`, from chunks apart from every `alloc` slot: a kind of object read at random
/// but much rarer than its neighbours of the same size (a B+tree's inner nodes beside its
/// leaves) then lies packed in few pages, instead of one in every few pages of the
/// common kind, each random visit a page walk on a VM (issue 40, session 69).
pub fn alloc_apart(size: usize) -> *mut u8 {
    alloc_in(1, size)
}

fn alloc_in(pool: usize, size: usize) -> *mut u8 {
    debug_assert!(pool < POOLS);
    let c = pool * CLASSES + class_of(size);
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
    debug_assert!(p.is_multiple_of(GRAIN) && p != 0);
    debug_assert!(!size.is_multiple_of(LINE) || p.is_multiple_of(LINE));
    p as *mut u8
}

/// Give back a slot `alloc(size)` returned.
///
/// # Safety
/// `p` came from `alloc(size)` (same size), is not used by anyone any more, and is freed
/// once.
pub unsafe fn free(p: *mut u8, size: usize) {
    // SAFETY: the caller's.
    unsafe { free_in(0, p, size) }
}

/// Give back a slot `alloc_apart(size)` returned.
///
/// # Safety
/// As `free`, for a slot of `alloc_apart(size)`.
pub unsafe fn free_apart(p: *mut u8, size: usize) {
    // SAFETY: the caller's.
    unsafe { free_in(1, p, size) }
}

/// # Safety
/// As `free`, for a slot of pool `pool`.
unsafe fn free_in(pool: usize, p: *mut u8, size: usize) {
    debug_assert!(pool < POOLS);
    let c = pool * CLASSES + class_of(size);
    debug_assert!((p as usize).is_multiple_of(GRAIN));
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

/// Whether `size` bytes at `p` lie in a chunk of `alloc_apart`'s class of that size
/// (true) or of `alloc`'s (false); `None`: in neither. For tests of the callers' layouts.
#[cfg(test)]
pub(crate) fn apart(p: *const u8, size: usize) -> Option<bool> {
    let inside = |c: usize| in_a_chunk(c, p as usize, size);
    let c = class_of(size);
    match (inside(c), inside(CLASSES + c)) {
        (true, false) => Some(false),
        (false, true) => Some(true),
        (false, false) => None,
        (true, true) => panic!("a slot in chunks of both pools"),
    }
}

/// Whether `size` bytes at `p` lie in one of class `c`'s chunks.
#[cfg(test)]
fn in_a_chunk(c: usize, p: usize, size: usize) -> bool {
    lock(c).chunks.iter().any(|ch| {
        let start = ch.as_ptr() as usize;
        p >= start && p + size <= start + CHUNK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Slots of `alloc_apart` never share a chunk with `alloc`'s of the same size, are
    /// disjoint and aligned as `alloc`'s are, and come back to their own pool when freed.
    #[test]
    fn apart_slots_keep_to_chunks_of_their_own() {
        // Sizes no other test of this crate allocates (apart or not).
        for size in [1472usize, 1480] {
            let a: Vec<usize> = (0..2 * BATCH + 3).map(|_| alloc(size) as usize).collect();
            let b: Vec<usize> = (0..2 * BATCH + 3)
                .map(|_| alloc_apart(size) as usize)
                .collect();
            let mut all: Vec<usize> = a.iter().chain(&b).copied().collect();
            all.sort();
            for w in all.windows(2) {
                assert!(w[1] - w[0] >= size, "slots of {size} bytes overlap");
            }
            for &p in &a {
                assert_eq!(apart(p as *const u8, size), Some(false));
            }
            for &p in &b {
                assert_eq!(apart(p as *const u8, size), Some(true));
                if size % LINE == 0 {
                    assert_eq!(p % LINE, 0);
                }
                assert!(!in_a_chunk(class_of(size), p, size));
                // SAFETY: a slot of `size` bytes this test owns.
                unsafe { std::ptr::write_bytes(p as *mut u8, 0xcd, size) };
            }
            for &p in &b {
                // SAFETY: allocated above by `alloc_apart(size)`, freed once.
                unsafe { free_apart(p as *mut u8, size) };
            }
            for &p in &a {
                // SAFETY: allocated above by `alloc(size)`, freed once.
                unsafe { free(p as *mut u8, size) };
            }
            // Freed apart slots come back from `alloc_apart`, and only from it.
            let again: Vec<usize> = (0..BATCH).map(|_| alloc_apart(size) as usize).collect();
            assert!(again.iter().all(|p| b.contains(p)));
            let common: Vec<usize> = (0..BATCH).map(|_| alloc(size) as usize).collect();
            assert!(common.iter().all(|p| !b.contains(p)));
            for p in again {
                // SAFETY: as above.
                unsafe { free_apart(p as *mut u8, size) };
            }
            for p in common {
                // SAFETY: as above.
                unsafe { free(p as *mut u8, size) };
            }
        }
    }

    #[test]
    fn slots_are_aligned_disjoint_inside_chunks_and_reused() {
        for size in [8usize, 24, 80, 64, 192, 704, 1808, MAX_SLOT] {
            let c = class_of(size);
            let ps: Vec<usize> = (0..3 * BATCH + 5).map(|_| alloc(size) as usize).collect();
            let mut sorted = ps.clone();
            sorted.sort();
            for w in sorted.windows(2) {
                assert!(w[1] - w[0] >= size, "slots of {size} bytes overlap");
            }
            for &p in &ps {
                assert_eq!(p % GRAIN, 0);
                if size % LINE == 0 {
                    assert_eq!(
                        p % LINE,
                        0,
                        "a whole-line slot of {size} bytes off its line"
                    );
                }
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
    fn grain_multiples_fit_and_line_alignment_only_for_whole_lines() {
        assert!(fits(64, 8) && fits(192, 64) && fits(MAX_SLOT, 64));
        assert!(fits(8, 8) && fits(40, 8) && fits(80, 8) && fits(48, 8));
        assert!(!fits(100, 8) && !fits(MAX_SLOT + 64, 64) && !fits(128, 128));
        assert!(!fits(80, 16) && !fits(80, 64) && !fits(0, 8));
        assert_eq!((slot_size(72), slot_size(76), slot_size(1)), (72, 80, 8));
    }

    #[test]
    fn the_reserve_is_faulted_in_and_used_before_new_mappings() {
        // Only this test reserves: other tests' classes may take chunks from it meanwhile,
        // which is what the reserve is for, so the counts are checked as bounds.
        let added = reserve(3 * CHUNK as u64);
        assert!(added <= 3 && reserved_bytes() <= 3 * CHUNK as u64);
        let resident = |c: &ZeroedArray<Line>| {
            let mut v = vec![0u8; CHUNK / 4096];
            // SAFETY: the chunk's own mapping; `v` has one byte per page.
            let r =
                unsafe { libc::mincore(c.as_ptr() as *mut libc::c_void, CHUNK, v.as_mut_ptr()) };
            assert_eq!(r, 0);
            v.iter().all(|b| b & 1 == 1)
        };
        for c in reserve_lock().iter() {
            assert!(resident(c), "a reserved chunk is not faulted in");
        }
        // A class that needs a chunk takes it from the reserve: a size no other test uses.
        let before = reserved_bytes();
        let size = 1984;
        let p = alloc(size) as usize;
        if before > 0 {
            // At most: another test's class may take a chunk between the two reads (this
            // failed once as an equality, 2026-11-30).
            assert!(
                reserved_bytes() <= before - CHUNK as u64,
                "no chunk came from the reserve"
            );
        }
        assert!(in_a_chunk(class_of(size), p, size));
        // SAFETY: allocated above, freed once.
        unsafe { free(p as *mut u8, size) };
    }
}
