//! The `disk` engine: a Shore-MT-style storage manager (see docs/design/disk-engine.md).
pub mod bpool;
pub mod btree;
pub mod heap;
pub mod latch;
pub mod lock;
pub mod log;
pub mod page;
