//! `oltpscope profile`: where the time of a native run goes. A software cpu-clock
//! sampler (perf_event, through `perf-event2`) on each worker thread during the measured
//! phase records call chains; after the run they are symbolized (`addr2line` on the
//! objects the process has loaded) and charged to storage-manager components (the
//! shared `components` map, as `simulate` names them), database operations and
//! transaction types.
//!
//! Owns: the per-thread samplers (`sampler`), address -> inlined function names
//! (`symbolize`), the attribution of one call chain (`attribute`, pure and tested with
//! recorded samples) and the profile report (`report`). Must never change what the run
//! does: a sampler that cannot be opened is an error before the run starts.

pub mod attribute;
pub mod counters;
pub mod report;
pub mod sampler;
pub mod symbolize;
pub mod tmam;

pub use components;
pub use report::Profile;
pub use sampler::{Profiler, Settings};

/// Whether this machine's kernel lets the process count hardware events (see
/// `counters::available`).
pub fn hardware_counters_available() -> Result<(), String> {
    counters::available()
}
