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
//! process (slots are interchangeable), and comes once per [`Pool`]. A per-thread cache
//! sits in front so allocation and freeing take no lock most of the time. Chunks are
//! never returned to the OS: freed slots are reused by later allocations of the same
//! class and pool (the way Silo's allocator keeps its per-core arenas). This module must
//! never hand out a slot that is in use, nor one that is not aligned as `fits` promises
//! and inside a chunk.
//!
//! New slots of every size are carved in the order a thread asks for them, from a chunk
//! of the thread's own (one per pool), not from a chunk per class: what a thread allocates
//! together lies together. A table loaded in key order then has each B+tree leaf in the
//! same 4 KiB page as most of the records it points to (the leaf is carved when an append
//! splits it off, its records right after), so a point read's record costs a cache miss
//! but no second page walk; on this project's VM (nested paging, guest memory backed by
//! small pages on the host) that walk was as long as the miss. What is read at random
//! but allocated in no relation to the records goes to pools of its own: inner nodes
//! (packed in few pages), leaves split in no order and key blocks (beside records
//! inserted at random they would only spread the leaves over more pages).

use crate::huge::ZeroedArray;
use std::cell::RefCell;
use std::sync::Mutex;

pub const LINE: usize = 64;
/// Size step of the classes (and the alignment of every slot).
pub const GRAIN: usize = 8;
/// Largest slot (bytes); bigger allocations come from the global allocator.
pub const MAX_SLOT: usize = 2048;
const CLASSES: usize = MAX_SLOT / GRAIN;
/// Where a slot is carved. Each pool has chunks of its own, and its own classes of free
/// slots: a slot freed to a pool comes back only from it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Pool {
    /// Records, and what goes with the records allocated next (a B+tree leaf split off
    /// by an append: the records loaded into it follow it).
    Common = 0,
    /// A B+tree's inner nodes: read at random but much rarer than the leaves of the same
    /// size, packed in few pages instead of one in every few pages of the leaves (each
    /// random visit a page walk on a VM; issue 40, session 69).
    Inner = 1,
    /// Leaves split in no order: packed among themselves instead of spread among
    /// records inserted at random.
    Nodes = 2,
    /// A B+tree's key blocks (key words past the first, in allocations of their own):
    /// read by inserts and scans, not by point lookups of long keys, so kept out of the
    /// pages those lookups walk.
    Blocks = 3,
}
const POOLS: usize = 4;
const ALL: [Pool; POOLS] = [Pool::Common, Pool::Inner, Pool::Nodes, Pool::Blocks];
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

/// A class's free slots, shared by the threads.
struct Shared {
    free: Vec<usize>,
}

struct Class(Mutex<Shared>);

static CLASS: [Class; POOLS * CLASSES] =
    [const { Class(Mutex::new(Shared { free: Vec::new() })) }; POOLS * CLASSES];

/// Unused memory to carve new slots from: `start..end` of a chunk.
#[derive(Clone, Copy, Default)]
struct Fresh {
    start: usize,
    end: usize,
}

impl Fresh {
    /// A new slot of `size` bytes from here, aligned as `fits` promises; `None` when the
    /// rest is too small (it is then left unused, as a class's chunk tail always was).
    #[inline]
    fn carve(&mut self, size: usize) -> Option<usize> {
        let align = if size.is_multiple_of(LINE) {
            LINE
        } else {
            GRAIN
        };
        let at = self.start.next_multiple_of(align);
        if self.start == 0 || at + size > self.end {
            return None;
        }
        self.start = at + size;
        Some(at)
    }
}

/// Every chunk ever mapped for a pool (never unmapped: slots are handed out for the
/// process's life), and the rests of chunks whose threads ended, for the next thread.
struct Chunks {
    chunks: Vec<ZeroedArray<Line>>,
    rests: Vec<Fresh>,
}

static POOL: [Mutex<Chunks>; POOLS] = [const {
    Mutex::new(Chunks {
        chunks: Vec::new(),
        rests: Vec::new(),
    })
}; POOLS];

fn pool_lock(pool: Pool) -> std::sync::MutexGuard<'static, Chunks> {
    // Pushes and pops only: a poisoned lock is still consistent.
    POOL[pool as usize]
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Fresh memory for `pool` of at least `size` bytes: the rest of an ended thread's chunk
/// if one is that large, else a new chunk (from the reserve first).
fn fresh(pool: Pool, size: usize) -> Fresh {
    let mut p = pool_lock(pool);
    if let Some(i) = p.rests.iter().rposition(|r| r.end - r.start >= size + LINE) {
        return p.rests.swap_remove(i);
    }
    let chunk = new_chunk();
    let start = chunk.as_ptr() as usize;
    p.chunks.push(chunk);
    Fresh {
        start,
        end: start + CHUNK,
    }
}

/// Give the rest of a thread's (or a call's) fresh memory to the next thread, if a slot
/// may still fit in it.
fn hand_on(pool: Pool, rest: Fresh) {
    if rest.start != 0 && rest.end - rest.start >= 2 * LINE {
        pool_lock(pool).rests.push(rest);
    }
}

/// A new slot of `size` bytes carved from `from`, which takes fresh memory when it has
/// no room left.
fn carve(pool: Pool, from: &mut Fresh, size: usize) -> usize {
    if let Some(p) = from.carve(size) {
        return p;
    }
    *from = fresh(pool, size);
    from.carve(size).expect("fresh memory holds a slot")
}

/// A thread's free slots per class, and the memory it carves new ones from.
struct Cache {
    free: [Vec<usize>; POOLS * CLASSES],
    /// New slots this class may still carve before its shared free list is looked at
    /// again (found empty: no lock per allocation while a table grows).
    carve_left: [u8; POOLS * CLASSES],
    fresh: [Fresh; POOLS],
}

impl Drop for Cache {
    /// A thread that ends gives its free slots back to their classes, and the rest of its
    /// chunks to the next thread.
    fn drop(&mut self) {
        for (c, v) in self.free.iter_mut().enumerate() {
            if !v.is_empty() {
                lock(c).free.append(v);
            }
        }
        for (pool, f) in ALL.iter().zip(&self.fresh) {
            hand_on(*pool, *f);
        }
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache {
            free: [const { Vec::new() }; POOLS * CLASSES],
            carve_left: [0; POOLS * CLASSES],
            fresh: [Fresh { start: 0, end: 0 }; POOLS],
        })
    };
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

/// Move up to `BATCH` of class `c`'s shared free slots into `out`.
fn refill(c: usize, out: &mut Vec<usize>) {
    let mut s = lock(c);
    let take = s.free.len().min(BATCH);
    let at = s.free.len() - take;
    out.extend(s.free.drain(at..));
}

/// A slot of `size` bytes (`fits(size, ..)`) from the common pool, aligned as `fits`
/// says; its contents are arbitrary.
pub fn alloc(size: usize) -> *mut u8 {
    alloc_in(Pool::Common, size)
}

/// `alloc`, from `pool`.
pub fn alloc_in(pool: Pool, size: usize) -> *mut u8 {
    let c = pool as usize * CLASSES + class_of(size);
    let from_cache = CACHE.try_with(|cache| {
        let mut cache = cache.try_borrow_mut().ok()?;
        let cache = &mut *cache;
        if let Some(p) = cache.free[c].pop() {
            return Some(p);
        }
        if cache.carve_left[c] == 0 {
            refill(c, &mut cache.free[c]);
            if let Some(p) = cache.free[c].pop() {
                return Some(p);
            }
            cache.carve_left[c] = BATCH as u8;
        }
        cache.carve_left[c] -= 1;
        Some(carve(pool, &mut cache.fresh[pool as usize], size))
    });
    let p = match from_cache {
        Ok(Some(p)) => p,
        // The thread is ending (its cache is gone) or the cache is busy: a shared free
        // slot, else one carved from fresh memory of this call's own (its rest goes to
        // the next thread).
        _ => {
            let mut one = Vec::with_capacity(BATCH);
            refill(c, &mut one);
            match one.pop() {
                Some(p) => {
                    lock(c).free.append(&mut one);
                    p
                }
                None => {
                    let mut f = Fresh::default();
                    let p = carve(pool, &mut f, size);
                    hand_on(pool, f);
                    p
                }
            }
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
    unsafe { free_in(Pool::Common, p, size) }
}

/// Give back a slot `alloc_in(pool, size)` returned.
///
/// # Safety
/// As `free`, for a slot of `alloc_in(pool, size)`.
pub unsafe fn free_in(pool: Pool, p: *mut u8, size: usize) {
    let c = pool as usize * CLASSES + class_of(size);
    debug_assert!((p as usize).is_multiple_of(GRAIN));
    let cached = CACHE.try_with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return false;
        };
        let v = &mut cache.free[c];
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

/// The pool whose chunks hold the `size` bytes at `p`; `None`: no pool's. For tests of the
/// callers' layouts.
#[cfg(test)]
pub(crate) fn pool_of(p: *const u8, size: usize) -> Option<Pool> {
    let mut inside = ALL
        .into_iter()
        .filter(|&pool| in_a_chunk(pool, p as usize, size));
    let pool = inside.next();
    assert!(inside.next().is_none(), "a slot in chunks of two pools");
    pool
}

/// Whether `size` bytes at `p` lie in one of `pool`'s chunks.
#[cfg(test)]
fn in_a_chunk(pool: Pool, p: usize, size: usize) -> bool {
    pool_lock(pool).chunks.iter().any(|ch| {
        let start = ch.as_ptr() as usize;
        p >= start && p + size <= start + CHUNK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Slots of each pool lie in chunks of that pool only, are disjoint and aligned as
    /// `fits` says, and come back to their own pool when freed.
    #[test]
    fn pools_keep_to_chunks_of_their_own() {
        // Sizes no other test of this crate allocates (in any pool).
        for size in [1472usize, 1480] {
            let by_pool: Vec<(Pool, Vec<usize>)> = ALL
                .iter()
                .map(|&pool| {
                    let ps = (0..2 * BATCH + 3)
                        .map(|_| alloc_in(pool, size) as usize)
                        .collect();
                    (pool, ps)
                })
                .collect();
            let mut all: Vec<usize> = by_pool.iter().flat_map(|(_, ps)| ps.clone()).collect();
            all.sort();
            for w in all.windows(2) {
                assert!(w[1] - w[0] >= size, "slots of {size} bytes overlap");
            }
            for (pool, ps) in &by_pool {
                for &p in ps {
                    assert_eq!(pool_of(p as *const u8, size), Some(*pool));
                    if size % LINE == 0 {
                        assert_eq!(p % LINE, 0);
                    }
                    // SAFETY: a slot of `size` bytes this test owns.
                    unsafe { std::ptr::write_bytes(p as *mut u8, 0xcd, size) };
                }
            }
            for (pool, ps) in &by_pool {
                for &p in ps {
                    // SAFETY: allocated above by `alloc_in(pool, size)`, freed once.
                    unsafe { free_in(*pool, p as *mut u8, size) };
                }
            }
            // Freed slots come back from their own pool, and only from it.
            for (pool, ps) in &by_pool {
                let again: Vec<usize> =
                    (0..BATCH).map(|_| alloc_in(*pool, size) as usize).collect();
                assert!(again.iter().all(|p| ps.contains(p)), "{pool:?}");
                for p in again {
                    // SAFETY: as above.
                    unsafe { free_in(*pool, p as *mut u8, size) };
                }
            }
        }
    }

    #[test]
    fn slots_are_aligned_disjoint_inside_chunks_and_reused() {
        for size in [8usize, 24, 80, 64, 192, 704, 1808, MAX_SLOT] {
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
                assert!(in_a_chunk(Pool::Common, p, size));
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
        // Fresh memory beyond the rests of ended threads' chunks comes from the reserve.
        let before = reserved_bytes();
        let f = fresh(Pool::Common, CHUNK - LINE);
        if before > 0 {
            // At most: another test's thread may take a chunk between the two reads (this
            // failed once as an equality, 2026-11-30).
            assert!(
                reserved_bytes() <= before - CHUNK as u64,
                "no chunk came from the reserve"
            );
        }
        assert_eq!(f.end - f.start, CHUNK);
        assert!(in_a_chunk(Pool::Common, f.start, CHUNK));
    }

    /// A thread's chunk outlives the thread: the next thread carves from its rest
    /// instead of mapping a chunk of its own (tests and loaders start many threads).
    #[test]
    fn ended_threads_hand_their_chunk_rests_on() {
        let before = pool_lock(Pool::Blocks).chunks.len();
        let got: Vec<usize> = (0..64)
            .map(|_| std::thread::spawn(|| alloc_in(Pool::Blocks, 1000) as usize))
            .map(|h| h.join().unwrap())
            .collect();
        let added = pool_lock(Pool::Blocks).chunks.len() - before;
        // Other tests' threads may map (or take rests) meanwhile: a bound, not one.
        assert!(
            added <= 16,
            "64 threads of one slot each mapped {added} chunks"
        );
        let mut sorted = got.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), got.len(), "a slot was handed out twice");
        for p in got {
            // SAFETY: allocated above by `alloc_in(Blocks, 1000)`, freed once.
            unsafe { free_in(Pool::Blocks, p as *mut u8, 1000) };
        }
    }

    /// What one thread allocates one after the other lies side by side, whatever the
    /// sizes (a leaf and the records loaded after it share their pages), line-aligned
    /// where `fits` says.
    #[test]
    fn slots_of_any_size_are_carved_in_the_order_asked() {
        // Sizes no other test of this crate allocates, in a thread of its own (no freed
        // slot of these sizes to reuse, a chunk of its own).
        let (leaf, rec) = (1088usize, 1048usize);
        let got = std::thread::spawn(move || {
            let mut v = Vec::new();
            for _ in 0..6 {
                v.push((leaf, alloc(leaf) as usize));
                for _ in 0..3 {
                    v.push((rec, alloc(rec) as usize));
                }
            }
            v
        })
        .join()
        .unwrap();
        for w in got.windows(2) {
            let ((sa, a), (sb, b)) = (w[0], w[1]);
            let gap = b.wrapping_sub(a + sa);
            assert!(
                gap < LINE || b.is_multiple_of(CHUNK),
                "slots of {sa} and {sb} bytes asked for one after the other lie {gap} bytes apart"
            );
            if sb % LINE == 0 {
                assert_eq!(b % LINE, 0);
            }
        }
        for (size, p) in got {
            // SAFETY: allocated above with this size, freed once.
            unsafe { free(p as *mut u8, size) };
        }
    }
}
