//! `version`: multi-version records. An index entry points to a per-key [`Obj`], whose
//! `head` is a chain of [`Version`]s, newest first. A version's `begin` word says who
//! wrote it and whether that is committed:
//!
//! * a commit timestamp (below [`PENDING`]): committed;
//! * [`PENDING`] | worker: uncommitted, owned by that worker (only the owner reads it);
//! * [`PENDING`] | [`COMMITTING`] | ts << [`TS_SHIFT`] | worker: its transaction is
//!   validating with commit timestamp `ts` (0: not taken yet); readers wait briefly;
//! * [`ABORTED`]: taken off the chain (readers that already hold it skip it).
//!
//! Committed versions are never modified; an uncommitted version's row and tombstone
//! flag are written by its owner only. Versions are freed through crossbeam-epoch: each
//! `next` pointer is taken (swapped to null) by exactly one collector, who retires what
//! it took, so a chain cut by two collectors at once is never freed twice.

use crossbeam_epoch::Guard;
use std::alloc::{alloc, dealloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering::*};

pub const PENDING: u64 = 1 << 63;
pub const COMMITTING: u64 = 1 << 62;
pub const ABORTED: u64 = u64::MAX;
pub const TS_SHIFT: u32 = 16;
pub const WORKER_MASK: u64 = (1 << TS_SHIFT) - 1;
/// Commit timestamps stay below this (they share the word with the flags above).
pub const MAX_TS: u64 = 1 << 45;
// A committing word holds the flags, a timestamp below `MAX_TS` shifted by `TS_SHIFT` and
// the worker below it, without overlap; `ABORTED` is none of them.
const _: () = assert!(((MAX_TS - 1) << TS_SHIFT) & (PENDING | COMMITTING) == 0);
const _: () = assert!(PENDING & COMMITTING == 0 && ABORTED & !(PENDING | COMMITTING) != 0);

#[inline]
pub fn is_committed(b: u64) -> bool {
    b & PENDING == 0
}
#[inline]
pub fn owner(b: u64) -> u64 {
    b & WORKER_MASK
}
/// The commit timestamp of a committing word (0: not taken yet).
#[inline]
pub fn committing_ts(b: u64) -> u64 {
    (b & !(PENDING | COMMITTING)) >> TS_SHIFT
}

#[repr(C)]
pub struct Version {
    pub begin: AtomicU64,
    /// The next older version (null: none).
    pub next: AtomicPtr<Version>,
    pub tomb: AtomicBool,
    len: u32,
    // `len` row bytes follow (8-aligned).
}

const HDR: usize = std::mem::size_of::<Version>();
const _: () = assert!(HDR.is_multiple_of(8));

fn layout(len: usize) -> Layout {
    Layout::from_size_align(HDR + len, 8).expect("version layout")
}

impl Version {
    /// A new version owned by nobody yet (the caller publishes it).
    pub fn alloc(begin: u64, next: *mut Version, tomb: bool, row: &[u8]) -> *mut Version {
        // SAFETY: the layout is non-zero sized; every header field is written before use.
        unsafe {
            let p = alloc(layout(row.len())) as *mut Version;
            if p.is_null() {
                std::alloc::handle_alloc_error(layout(row.len()));
            }
            p.write(Version {
                begin: AtomicU64::new(begin),
                next: AtomicPtr::new(next),
                tomb: AtomicBool::new(tomb),
                len: row.len() as u32,
            });
            std::ptr::copy_nonoverlapping(row.as_ptr(), (p as *mut u8).add(HDR), row.len());
            p
        }
    }

    /// # Safety
    /// `p` came from [`Version::alloc`] and nobody can reach it any more.
    pub unsafe fn free(p: *mut Version) {
        let len = (*p).len as usize;
        dealloc(p as *mut u8, layout(len));
    }

    #[inline]
    pub fn row(&self) -> &[u8] {
        // SAFETY: `len` bytes follow the header (see `alloc`); callers read only
        // committed versions or their own.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Version as *const u8).add(HDR),
                self.len as usize,
            )
        }
    }

    /// The row of an uncommitted version, for its owner.
    ///
    /// # Safety
    /// Only the owning worker, while the version is uncommitted (nobody else reads it).
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub unsafe fn row_mut(&self) -> &mut [u8] {
        std::slice::from_raw_parts_mut(
            (self as *const Version as *mut u8).add(HDR),
            self.len as usize,
        )
    }
}

/// Retire a version: freed once no pinned thread can hold it.
pub(crate) fn retire(v: *mut Version, g: &Guard) {
    let p = v as usize;
    // SAFETY: the caller unlinked `v` (nothing new can reach it); pinned readers finish
    // before the collector runs this.
    unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
}

/// Retire `v` and every older version below it that this caller takes (see the module
/// doc: each `next` link is swapped out by one taker only). Returns how many.
pub(crate) fn retire_chain(mut v: *mut Version, g: &Guard) -> u64 {
    let mut n = 0;
    while !v.is_null() {
        // SAFETY: `v` was taken by this caller and is still allocated (retired below).
        let next = unsafe { (*v).next.swap(std::ptr::null_mut(), AcqRel) };
        retire(v, g);
        n += 1;
        v = next;
    }
    n
}

/// The per-key object indexes point to, with its primary key (garbage collection
/// needs it to take a deleted key out of the indexes). `head` null: dead (out of the
/// indexes, or about to be); nothing can be written to it any more.
#[repr(C)]
pub struct Obj {
    pub head: AtomicPtr<Version>,
    /// Garbage-collection entries (and uncommitted writes) that still refer to this
    /// object: the last of them to let go of a dead object frees it.
    pub refs: AtomicU32,
    key_len: u32,
    // `key_len` key bytes follow.
}

/// Where memindex's hash index finds a value's key: values are `Obj` addresses,
/// and an object holds its primary key after its header.
pub struct ObjKeys;

impl memindex::hash::Keys for ObjKeys {
    #[inline(always)]
    unsafe fn key<'a>(&self, v: u64) -> &'a [u8] {
        // SAFETY: the index holds object addresses; the caller keeps `v` allocated for
        // `'a` (the `Keys::key` contract: linked, or read by a still-pinned caller), and
        // objects are freed only through the epoch after leaving the indexes.
        let o: &'a Obj = unsafe { Obj::from_u64(v) };
        o.key()
    }
    #[inline(always)]
    fn prefetch(&self, v: u64, _len: usize) {
        // The header and the key's first bytes share the object's first line.
        rt::prefetch(v as *const Obj);
    }
}

const OHDR: usize = std::mem::size_of::<Obj>();
const _: () = assert!(OHDR.is_multiple_of(8));

fn obj_layout(len: usize) -> Layout {
    Layout::from_size_align(OHDR + len, 8).expect("object layout")
}

impl Obj {
    /// A new object whose chain is `first`, holding one reference (its creator's).
    pub fn alloc(key: &[u8], first: *mut Version) -> *mut Obj {
        // SAFETY: non-zero size; the header is written before use, the key after it.
        unsafe {
            let p = alloc(obj_layout(key.len())) as *mut Obj;
            if p.is_null() {
                std::alloc::handle_alloc_error(obj_layout(key.len()));
            }
            p.write(Obj {
                head: AtomicPtr::new(first),
                refs: AtomicU32::new(1),
                key_len: key.len() as u32,
            });
            std::ptr::copy_nonoverlapping(key.as_ptr(), (p as *mut u8).add(OHDR), key.len());
            p
        }
    }

    #[inline]
    pub fn key(&self) -> &[u8] {
        // SAFETY: `key_len` bytes follow the header (see `alloc`); never modified.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Obj as *const u8).add(OHDR),
                self.key_len as usize,
            )
        }
    }

    /// # Safety
    /// `o` is a pointer a pinned index lookup returned (or one the caller refers to).
    #[inline]
    pub unsafe fn from_u64<'a>(o: u64) -> &'a Obj {
        &*(o as *const Obj)
    }

    /// # Safety
    /// Nobody can reach `o` any more; its versions are freed separately.
    pub unsafe fn free(o: *mut Obj) {
        let len = (*o).key_len as usize;
        dealloc(o as *mut u8, obj_layout(len));
    }

    /// Retire an object nobody refers to any more (never published, or dead).
    pub(crate) fn retire(o: *mut Obj, g: &Guard) {
        let p = o as usize;
        // SAFETY: out of every index and unreferenced; pinned readers that found it
        // earlier finish before this runs.
        unsafe { g.defer_unchecked(move || Obj::free(p as *mut Obj)) };
    }

    /// Let go of one reference; retires a dead object when it was the last.
    pub(crate) fn release(o: *mut Obj, g: &Guard) {
        // SAFETY: the caller held a reference, so `o` is allocated.
        let left = unsafe { (*o).refs.fetch_sub(1, AcqRel) } - 1;
        if left == 0 && unsafe { (*o).head.load(Acquire) }.is_null() {
            Obj::retire(o, g);
        }
    }

    /// # Safety
    /// Exclusive access (engine drop): frees the object and its whole chain.
    pub unsafe fn free_all(o: *mut Obj) {
        let mut v = (*o).head.load(Relaxed);
        while !v.is_null() {
            let next = (*v).next.load(Relaxed);
            Version::free(v);
            v = next;
        }
        Obj::free(o);
    }
}
