//! The I/O threads that run blocking calls for coroutines ([`crate::blocking`]): a few
//! threads, started on first use, taking jobs from one queue. Nothing here knows what the
//! call does; it must not use the calling thread's thread-locals.

use crossbeam_channel::{unbounded, Sender};
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Enough for a few outstanding page reads per worker on a small machine; a job waits
/// in the queue when all are busy (still off the worker thread).
const THREADS: usize = 4;

fn pool() -> &'static Sender<Job> {
    static POOL: OnceLock<Sender<Job>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = unbounded::<Job>();
        for i in 0..THREADS {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("rt-io-{i}"))
                .spawn(move || {
                    probe::thread_role(probe::Role::Io);
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .expect("spawn an rt I/O thread");
        }
        tx
    })
}

struct Slot<R> {
    done: AtomicBool,
    out: UnsafeCell<Option<std::thread::Result<R>>>,
}

// SAFETY: `out` is written once by the I/O thread before `done` is set (Release) and read
// by the caller only after it saw `done` (Acquire).
unsafe impl<R: Send> Sync for Slot<R> {}

/// Blocks the thread until the job finished, if the caller's frame is left early (a
/// panic or a forced unwind of its coroutine): the job borrows from that frame.
struct Join<'s>(&'s AtomicBool);

impl Drop for Join<'_> {
    fn drop(&mut self) {
        while !self.0.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }
}

/// Run `f` on an I/O thread; `wait` is called with a "done?" test and must return only
/// once it holds. A panic in `f` is resumed here.
pub(crate) fn offload<R: Send>(
    f: impl FnOnce() -> R + Send,
    wait: impl FnOnce(&dyn Fn() -> bool),
) -> R {
    let slot = Arc::new(Slot {
        done: AtomicBool::new(false),
        out: UnsafeCell::new(None),
    });
    let theirs = slot.clone();
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let r = catch_unwind(AssertUnwindSafe(f));
        // SAFETY: see `Slot`: nobody reads `out` before `done`.
        unsafe { *theirs.out.get() = Some(r) };
        theirs.done.store(true, Ordering::Release);
    });
    // SAFETY: `f` may borrow from the caller's frame; the caller does not return (`wait`
    // waits for `done`) nor unwind (`Join` blocks) before the job has run.
    let job: Job = unsafe { std::mem::transmute(job) };
    let join = Join(&slot.done);
    if let Err(e) = pool().send(job) {
        // The queue never closes (the sender is static); run it here should it ever.
        (e.0)();
    }
    wait(&|| slot.done.load(Ordering::Acquire));
    drop(join);
    // SAFETY: `done` was seen set, so the I/O thread wrote `out` and no longer touches it.
    match unsafe { (*slot.out.get()).take() } {
        Some(Ok(r)) => r,
        Some(Err(p)) => resume_unwind(p),
        None => unreachable!("an I/O job was marked done without a result"),
    }
}
