//! `partition`: a partition is its data and an owner slot. At most one transaction owns
//! a partition at a time and runs on its data alone, one operation after another, with
//! no latches or record locks: the place of H-Store's single-threaded executor. A
//! worker thread takes the slot (`acquire`) instead of handing its transaction to an
//! executor thread; `xct` decides the order in which slots are taken.

use crate::catalog::Tables;
use parking_lot::{Mutex, MutexGuard};
use std::cell::UnsafeCell;

pub struct Partition {
    owner: Mutex<()>,
    data: UnsafeCell<Tables>,
}

/// Proof of owning one partition, for the lifetime of the engine borrow.
pub struct Owned<'e>(#[allow(dead_code)] MutexGuard<'e, ()>);

// SAFETY: `data` is reached only through `Partition::data`/`data_mut`, whose callers
// hold the partition's `Owned` guard (one transaction at a time), or, for read-only
// access to the shared tables, follow the rule in `xct` (readers own at least one
// partition, a writer owns all of them).
unsafe impl Sync for Partition {}

impl Partition {
    pub fn new(t: Tables) -> Self {
        Partition {
            owner: Mutex::new(()),
            data: UnsafeCell::new(t),
        }
    }

    /// Take ownership, waiting (through `rt`, so a coroutine that owns it can run) until
    /// the current owner is done.
    pub fn acquire(&self) -> Owned<'_> {
        Owned(rt::lock(rt::WaitKind::Lock, &self.owner))
    }

    /// Take ownership if nobody has it.
    pub fn try_acquire(&self) -> Option<Owned<'_>> {
        self.owner.try_lock().map(Owned)
    }

    /// # Safety
    /// The caller owns the partition (or, for the shared tables, is a reader while
    /// owning any partition) and holds no `&mut` from [`Partition::data_mut`].
    pub unsafe fn data(&self) -> &Tables {
        unsafe { &*self.data.get() }
    }

    /// # Safety
    /// The caller owns the partition (for the shared tables: all partitions) and holds
    /// no other reference into its data.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn data_mut(&self) -> &mut Tables {
        unsafe { &mut *self.data.get() }
    }
}
