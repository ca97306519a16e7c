//! Per-transaction counters for `--stats` (A-to-E's Table 4): records read and written,
//! row-level and higher-level locks, escalations, heap and index page requests with the
//! distinct page ids behind them, and index nodes visited.
//!
//! The counters are thread-local and count only on a thread that armed them
//! (`arm(true)`, done by the driver's workers when `--stats` is given): everywhere else
//! a call is one thread-local flag load and a predictable branch, and nothing is kept,
//! so background threads (page cleaner, checkpointer) never accumulate anything. The
//! driver calls `take` after every transaction attempt. One transaction per thread at a
//! time: coroutines would mix their counts, so the driver refuses `--stats` with them.
//!
//! This crate must stay free of dependencies and must never allocate on a thread that
//! did not arm it.

use std::cell::{Cell, RefCell};

/// What an engine counts (plain counters; pages go through [`page`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Counter {
    /// Records handed to the transaction by a point read or a scan.
    RecordsRead = 0,
    /// Records inserted, updated or deleted.
    RecordsWritten = 1,
    /// Record and key locks granted (upgrades and requests a held lock covers excluded).
    RowLocks = 2,
    /// Page, table and database locks granted (intention locks included).
    HigherLocks = 3,
    /// Record locks of a table replaced by one table lock.
    Escalations = 4,
    /// Index nodes visited (memory engine: B+tree nodes per descent, hash buckets and
    /// chain entries).
    IndexNodes = 5,
}

pub const COUNTERS: usize = 6;

impl Counter {
    pub const ALL: [Counter; COUNTERS] = [
        Counter::RecordsRead,
        Counter::RecordsWritten,
        Counter::RowLocks,
        Counter::HigherLocks,
        Counter::Escalations,
        Counter::IndexNodes,
    ];
}

/// The kind of a page requested from a buffer pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    Heap,
    Index,
}

/// One transaction attempt's counts (or a sum of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub counters: [u64; COUNTERS],
    /// Heap page requests to the buffer pool, and the distinct pages among them.
    pub heap_pages: u64,
    pub heap_pages_unique: u64,
    pub index_pages: u64,
    pub index_pages_unique: u64,
}

impl Counts {
    pub fn get(&self, c: Counter) -> u64 {
        self.counters[c as usize]
    }

    /// Add another attempt's (or sum's) counts.
    pub fn add(&mut self, o: &Counts) {
        for (a, b) in self.counters.iter_mut().zip(o.counters) {
            *a += b;
        }
        self.heap_pages += o.heap_pages;
        self.heap_pages_unique += o.heap_pages_unique;
        self.index_pages += o.index_pages;
        self.index_pages_unique += o.index_pages_unique;
    }
}

/// Page ids of one kind seen by the current attempt. Compacted (sorted, deduplicated)
/// whenever it reaches `limit`, so it holds at most about twice the distinct pages.
struct Pages {
    ids: Vec<u64>,
    total: u64,
    limit: usize,
}

const FIRST_LIMIT: usize = 1024;

impl Pages {
    const fn new() -> Pages {
        Pages {
            ids: Vec::new(),
            total: 0,
            limit: FIRST_LIMIT,
        }
    }

    fn push(&mut self, pid: u64) {
        self.total += 1;
        // Transactions re-request the page they just had (a record read after its
        // index leaf's neighbour, a B+tree root on every descent) often enough that
        // skipping an immediate repeat saves most of the compactions.
        if self.ids.last() == Some(&pid) {
            return;
        }
        if self.ids.len() >= self.limit {
            self.compact();
            if self.ids.len() * 2 > self.limit {
                self.limit *= 2;
            }
        }
        self.ids.push(pid);
    }

    fn compact(&mut self) {
        self.ids.sort_unstable();
        self.ids.dedup();
    }

    /// (requests, distinct pages), and start over.
    fn take(&mut self) -> (u64, u64) {
        self.compact();
        let r = (self.total, self.ids.len() as u64);
        self.ids.clear();
        self.total = 0;
        r
    }
}

struct Current {
    counters: [u64; COUNTERS],
    heap: Pages,
    index: Pages,
}

thread_local! {
    static ARMED: Cell<bool> = const { Cell::new(false) };
    static CURRENT: RefCell<Current> = const {
        RefCell::new(Current {
            counters: [0; COUNTERS],
            heap: Pages::new(),
            index: Pages::new(),
        })
    };
}

/// Count (or stop counting) on the calling thread; either way the counts so far are
/// dropped.
pub fn arm(on: bool) {
    ARMED.with(|a| a.set(on));
    take();
}

/// Whether the calling thread counts.
#[inline(always)]
pub fn armed() -> bool {
    ARMED.with(|a| a.get())
}

/// Add `n` to counter `c` (nothing unless the thread is armed).
#[inline(always)]
pub fn add(c: Counter, n: u64) {
    if armed() {
        add_armed(c, n);
    }
}

#[inline(never)]
fn add_armed(c: Counter, n: u64) {
    CURRENT.with(|s| s.borrow_mut().counters[c as usize] += n);
}

/// A request of page `pid` of kind `k` to the buffer pool (nothing unless armed).
#[inline(always)]
pub fn page(k: PageKind, pid: u64) {
    if armed() {
        page_armed(k, pid);
    }
}

#[inline(never)]
fn page_armed(k: PageKind, pid: u64) {
    CURRENT.with(|s| {
        let mut s = s.borrow_mut();
        match k {
            PageKind::Heap => s.heap.push(pid),
            PageKind::Index => s.index.push(pid),
        }
    });
}

/// The calling thread's counts since the previous `take` (or `arm`), and start over.
pub fn take() -> Counts {
    CURRENT.with(|s| {
        let mut s = s.borrow_mut();
        let counters = std::mem::take(&mut s.counters);
        let (heap_pages, heap_pages_unique) = s.heap.take();
        let (index_pages, index_pages_unique) = s.index.take();
        Counts {
            counters,
            heap_pages,
            heap_pages_unique,
            index_pages,
            index_pages_unique,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_counted_unless_armed() {
        std::thread::spawn(|| {
            add(Counter::RecordsRead, 3);
            page(PageKind::Heap, 7);
            assert_eq!(take(), Counts::default());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn counts_and_distinct_pages_per_attempt() {
        std::thread::spawn(|| {
            arm(true);
            add(Counter::RecordsRead, 2);
            add(Counter::RecordsWritten, 1);
            for pid in [5, 5, 9, 5, 9, 11] {
                page(PageKind::Heap, pid);
            }
            page(PageKind::Index, 1);
            page(PageKind::Index, 1);
            let c = take();
            assert_eq!(c.get(Counter::RecordsRead), 2);
            assert_eq!(c.get(Counter::RecordsWritten), 1);
            assert_eq!((c.heap_pages, c.heap_pages_unique), (6, 3));
            assert_eq!((c.index_pages, c.index_pages_unique), (2, 1));
            // The next attempt starts from zero.
            page(PageKind::Heap, 5);
            let c = take();
            assert_eq!((c.heap_pages, c.heap_pages_unique), (1, 1));
            assert_eq!(c.get(Counter::RecordsRead), 0);
            arm(false);
            page(PageKind::Heap, 5);
            assert_eq!(take(), Counts::default());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn many_pages_compact_and_stay_exact() {
        std::thread::spawn(|| {
            arm(true);
            // 10,000 requests over 3,000 distinct pages, interleaved: several compactions.
            for i in 0..10_000u64 {
                page(PageKind::Index, (i * 7919) % 3000);
            }
            let c = take();
            assert_eq!((c.index_pages, c.index_pages_unique), (10_000, 3000));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn sums_add_every_field() {
        let mut a = Counts {
            counters: [1, 2, 3, 4, 5, 6],
            heap_pages: 7,
            heap_pages_unique: 3,
            index_pages: 9,
            index_pages_unique: 4,
        };
        a.add(&a.clone());
        assert_eq!(a.counters, [2, 4, 6, 8, 10, 12]);
        assert_eq!(
            (
                a.heap_pages,
                a.heap_pages_unique,
                a.index_pages,
                a.index_pages_unique
            ),
            (14, 6, 18, 8)
        );
    }
}
