//! The driver: opens an engine, loads a workload, runs worker threads back to back for a
//! warm-up and a measured interval, retries conflict aborts with the same inputs,
//! records latency histograms per transaction type, runs the workload's consistency
//! check, and produces the report (human table and JSON).
//!
//! The driver owns all timing and printing; engines and kits never print.

pub mod gate;
pub mod interrupt;
pub mod machine;
pub mod memwatch;
pub mod observe;
mod pick;
pub mod report;
mod run;
pub mod stats;

pub use observe::{Observer, ThreadObserver};
pub use report::Stopped;
pub use report::{Rate, Report, Second, SecondTxn};
pub use run::{
    check_only, exit_if_stopped, load_only, replay, run, run_limited, run_phases, run_resident,
    Limits, Next, RunConfig, Stop, CHECKED_AT_END,
};
