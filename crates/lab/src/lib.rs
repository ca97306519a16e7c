//! The laboratory around oltpscope's runs: results directories (report, per-second
//! series, latency histograms, manifest), comparison of two reports, sweeps over
//! settings with knees and sufficiency, and figures.
//!
//! Holds no engine code: sweeps run `oltpscope run` as child processes; the CLI parses
//! and prints, this crate does the work.

pub mod campaign;
pub mod cgroup;
pub mod compare;
pub mod knee;
pub mod lanes;
pub mod manifest;
pub mod plot;
pub mod reproduce;
pub mod resident;
pub mod results;
pub mod runfile;
pub mod shapes;
pub mod sweep;
