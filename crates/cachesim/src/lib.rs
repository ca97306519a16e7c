//! Trace-driven cache simulator (after "OLTP in Wonderland"): a configurable split
//! L1-I / L1-D, optional unified L2 and shared LLC, true LRU, 3C classification at every
//! level in one pass, an L1-I size sweep, and attribution of every access and miss to the
//! database operation (probe markers) and the storage-manager component (function module
//! path) that made it.
//!
//! Owns: reading the trace stream (`trace`, split per measured phase by `phases`), the
//! cache model (`cache`, `sim`; the 3C shadows shared by one stream's levels: `lru_stack`), symbol
//! resolution (`symbols`) and the report (`report`). Must never panic on user input or
//! a damaged stream: those are `Err`s with one clear line.
//!
//! ```no_run
//! let mut cfg = cachesim::Config::preset("xeon-e5-2660").unwrap();
//! cfg.set_sweep("l1i=16K,32K,64K").unwrap();
//! let mut sim = cachesim::Simulator::new(cfg).unwrap();
//! let file = std::fs::File::open("trace.bin").unwrap();
//! sim.run(cachesim::trace::Reader::new(file).unwrap()).unwrap();
//! print!("{}", sim.report().to_text());
//! ```

pub mod autosteps;
pub mod cache;
pub mod config;
pub mod forks;
pub mod lackey;
pub mod lru_stack;
pub mod phases;
pub mod report;
pub mod settle;
pub mod sim;
pub mod symbols;
pub mod trace;

pub use config::{Config, LevelConfig, Options, PRESETS};
pub use report::Report;
pub use sim::Simulator;
