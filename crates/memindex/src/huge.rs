//! `huge`: large zero-filled arrays the engine owns (the hash index's buckets), mapped
//! straight from the OS and advised onto transparent huge pages (`MADV_HUGEPAGE`): a
//! probe into a gigabyte of buckets misses the TLB on nearly every access with 4 KiB
//! pages, and a page walk then doubles the cost of the miss. Whether the kernel grants
//! huge pages is its choice (`/sys/kernel/mm/transparent_hugepage/enabled` must say
//! `always` or `madvise`); the array works either way.
//!
//! This module must never hand out memory it has not zeroed, nor free an array twice.

use std::ptr::NonNull;

/// Arrays at least this large are mapped and advised; smaller ones come from the
/// allocator (a huge page is 2 MiB).
const HUGE_MIN_BYTES: usize = 2 << 20;

/// A fixed-length array of `T` for which all-zero bytes are a valid value.
pub struct ZeroedArray<T> {
    ptr: NonNull<T>,
    len: usize,
    mapped: bool,
}

impl<T> ZeroedArray<T> {
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    pub unsafe fn new(len: usize) -> Self {
        let layout = std::alloc::Layout::array::<T>(len).expect("array size overflows");
        assert!(layout.size() > 0, "an empty or zero-sized array");
        if layout.size() >= HUGE_MIN_BYTES && layout.align() <= 4096 {
            // SAFETY: an anonymous private mapping: no file, fresh zero pages.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    layout.size(),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                // Advice only: refused (THP off, old kernel) leaves 4 KiB pages.
                // SAFETY: the range was just mapped.
                unsafe { libc::madvise(p, layout.size(), libc::MADV_HUGEPAGE) };
                return ZeroedArray {
                    ptr: NonNull::new(p as *mut T).expect("mmap returned null"),
                    len,
                    mapped: true,
                };
            }
        }
        // SAFETY: non-zero size (checked above).
        let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
        let Some(ptr) = NonNull::new(p) else {
            std::alloc::handle_alloc_error(layout)
        };
        ZeroedArray {
            ptr,
            len,
            mapped: false,
        }
    }
}

impl<T> std::ops::Deref for ZeroedArray<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `len` zero-initialised (valid, per `new`'s contract) `T`s live at `ptr`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for ZeroedArray<T> {
    fn drop(&mut self) {
        // SAFETY: each element is dropped once, then the memory is returned the way it
        // was obtained.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ));
            let layout = std::alloc::Layout::array::<T>(self.len).expect("checked in new");
            if self.mapped {
                libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, layout.size());
            } else {
                std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, layout);
            }
        }
    }
}

// SAFETY: the array owns its `T`s like a `Box<[T]>` does.
unsafe impl<T: Send> Send for ZeroedArray<T> {}
unsafe impl<T: Sync> Sync for ZeroedArray<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_huge_arrays_start_zeroed_and_are_writable() {
        use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
        for len in [1usize, 1000, (4 << 20) / 8] {
            // SAFETY: zero is a valid AtomicU64.
            let a = unsafe { ZeroedArray::<AtomicU64>::new(len) };
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|w| w.load(Relaxed) == 0));
            a[len - 1].store(7, Relaxed);
            assert_eq!(a[len - 1].load(Relaxed), 7);
            assert_eq!(a.mapped, len * 8 >= HUGE_MIN_BYTES);
        }
    }
}
