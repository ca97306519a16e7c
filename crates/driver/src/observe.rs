//! Hooks for an observer of the measured phase's worker threads (`oltpscope profile`'s
//! sampler). The driver knows only these traits: the observer's crate implements them,
//! so the driver never imports its caller. Without an observer the run loop pays one
//! predictable branch per transaction.

/// Called on each worker thread when it first sees the measured phase.
pub trait Observer: Sync {
    fn thread_start(&self) -> Box<dyn ThreadObserver>;
}

/// One worker thread's observation, owned by that thread.
pub trait ThreadObserver {
    /// A transaction attempt of workload type `txn_type` ended (committed, aborted or
    /// about to be retried): what was observed since the previous call belongs to it.
    fn txn_end(&mut self, txn_type: u32);
    /// The thread stops running transactions.
    fn finish(self: Box<Self>);
}
