//! The `disk` engine: a Shore-MT-style storage manager (see docs/design/disk-engine.md).
pub mod bpool;
pub mod latch;
pub mod log;
pub mod page;
