//! `epoch`: Silo's global epoch. One background thread advances it every
//! `EPOCH_INTERVAL`; committing transactions read it (never write it, except a `Sync`
//! commit closing its epoch early so it need not wait a whole interval for durability).
//! Owns the epoch counter and the advancer thread; must never be written per transaction
//! in the ordinary (non-`Sync`) commit path.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub const EPOCH_INTERVAL: Duration = Duration::from_millis(40);

pub struct Epochs {
    global: CachePadded<AtomicU64>,
    stop: AtomicBool,
    wake: rt::Event,
}

impl Epochs {
    pub fn new() -> Arc<Self> {
        // Epoch 0 is never used, so TID 0 is below every committed TID.
        Self::starting_at(1)
    }

    /// Epochs counting from `first` (after recovery: above every epoch in the log).
    pub fn starting_at(first: u64) -> Arc<Self> {
        assert!(first >= 1, "epoch 0 is never used");
        Arc::new(Epochs {
            global: CachePadded::new(AtomicU64::new(first)),
            stop: AtomicBool::new(false),
            wake: rt::Event::new(),
        })
    }

    #[inline]
    pub fn current(&self) -> u64 {
        self.global.load(Acquire)
    }

    /// Close epoch `e` now if it is still the current one (group commit on demand).
    pub fn close(&self, e: u64) {
        let _ = self.global.compare_exchange(e, e + 1, AcqRel, Relaxed);
    }

    pub fn start(self: &Arc<Self>) -> JoinHandle<()> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("mem-epoch".into())
            .spawn(move || {
                probe::thread_role(probe::Role::Epoch);
                while !me.stop.load(Acquire) {
                    me.wake.wait(rt::WaitKind::Epoch, Some(EPOCH_INTERVAL), || {
                        me.stop.load(Acquire)
                    });
                    me.global.fetch_add(1, AcqRel);
                }
            })
            .expect("spawn epoch thread")
    }

    pub fn stop(&self) {
        self.stop.store(true, Release);
        self.wake.notify_all();
    }
}
