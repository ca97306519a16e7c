//! Page latches: a small reader-writer latch on one atomic word (readers count in the
//! low bits, one writer bit). Latches protect a frame's bytes for short critical
//! sections; they are never held while waiting for a lock. Contended acquires wait
//! through `rt::wait_until(WaitKind::Latch)`. This module must never block any other way.

use std::sync::atomic::{AtomicU32, Ordering};

const WRITER: u32 = 1 << 31;

#[derive(Default)]
pub struct Latch {
    state: AtomicU32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    S,
    X,
}

impl Latch {
    pub const fn new() -> Self {
        Latch {
            state: AtomicU32::new(0),
        }
    }

    #[inline]
    pub fn try_s(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        if s & WRITER != 0 {
            return false;
        }
        assert!(s < WRITER - 1, "latch reader count overflow");
        self.state
            .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[inline]
    pub fn try_x(&self) -> bool {
        // Look before the CAS: a waiter polling a held latch then only reads the line,
        // instead of taking it away from the holder on every try.
        self.state.load(Ordering::Relaxed) == 0
            && self
                .state
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    #[inline]
    pub fn try_acquire(&self, m: Mode) -> bool {
        match m {
            Mode::S => self.try_s(),
            Mode::X => self.try_x(),
        }
    }

    #[inline]
    pub fn acquire(&self, m: Mode) {
        if !self.try_acquire(m) {
            rt::wait_until(rt::WaitKind::Latch, None, || self.try_acquire(m));
        }
    }

    #[inline]
    pub fn release(&self, m: Mode) {
        match m {
            Mode::S => {
                let prev = self.state.fetch_sub(1, Ordering::Release);
                assert!(
                    prev & !WRITER > 0 && prev & WRITER == 0,
                    "S latch released but not held"
                );
            }
            Mode::X => {
                let prev = self.state.swap(0, Ordering::Release);
                assert_eq!(prev, WRITER, "X latch released but not held");
            }
        }
    }

    pub fn is_free(&self) -> bool {
        self.state.load(Ordering::Relaxed) == 0
    }
}

/// Short critical sections guarded by parking_lot locks (log buffer, page-table shards,
/// free lists) wait through `rt` too: try first, then `rt` (see `rt::lock`).
#[inline]
pub fn lock<T>(m: &parking_lot::Mutex<T>) -> parking_lot::MutexGuard<'_, T> {
    rt::lock(rt::WaitKind::Latch, m)
}

#[inline]
pub fn read<T>(m: &parking_lot::RwLock<T>) -> parking_lot::RwLockReadGuard<'_, T> {
    rt::read(rt::WaitKind::Latch, m)
}

#[inline]
pub fn write<T>(m: &parking_lot::RwLock<T>) -> parking_lot::RwLockWriteGuard<'_, T> {
    rt::write(rt::WaitKind::Latch, m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn shared_excludes_exclusive() {
        let l = Latch::new();
        assert!(l.try_s() && l.try_s());
        assert!(!l.try_x());
        l.release(Mode::S);
        l.release(Mode::S);
        assert!(l.try_x());
        assert!(!l.try_s());
        l.release(Mode::X);
        assert!(l.is_free());
    }

    #[test]
    fn writers_are_mutually_exclusive_under_threads() {
        struct Shared(Latch, std::cell::UnsafeCell<u64>);
        unsafe impl Sync for Shared {}
        let s = Arc::new(Shared(Latch::new(), std::cell::UnsafeCell::new(0)));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        let m = if i % 3 == 0 { Mode::X } else { Mode::S };
                        s.0.acquire(m);
                        if m == Mode::X {
                            // SAFETY: the X latch gives exclusive access.
                            unsafe { *s.1.get() += 1 };
                        }
                        s.0.release(m);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(unsafe { *s.1.get() }, 4 * 6667);
    }
}
