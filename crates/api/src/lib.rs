//! The transactional API every engine design implements and every workload kit is
//! written against (once).
//!
//! * [`schema`]: tables, primary and secondary indexes, chosen per table.
//! * [`key`] and [`row`]: order-preserving key encodings and fixed-layout rows.
//! * [`engine`]: the [`Engine`]/[`Worker`] traits an engine design implements, and the
//!   [`Descriptor`] a registry of engines reads from an [`Engine`].
//! * [`database`]: an engine as a trait object ([`Database`], [`DynWorker`]), what the
//!   driver and the kits run on, so that they are compiled once for every design.
//! * [`place`]: where an engine keeps its database, from the storage flags given.
//! * [`session`]: the one entry point per database operation that workloads call; it
//!   marks each operation for the profiler and the tracer before entering the engine.
//! * [`typed`]: SQL column types and key parts declared over rows and keys, for
//!   adapters to real database systems.
//!
//! This crate must never know about a particular engine or workload (the serial oracle
//! is `engine_serial`, the engine-generic test suites `conformance`).

pub mod database;
pub mod engine;
pub mod error;
pub mod key;
pub mod place;
pub mod row;
pub mod schema;
pub mod session;
pub mod typed;

pub use database::{Database, DynWorker, OpenFn};
pub use engine::{
    Command, Counted, Descriptor, Dir, Engine, EngineOptions, LogMode, Own, SqlDialect, TableSize,
    Worker,
};
pub use error::{Error, Result};
pub use key::Key;
pub use place::{Given, Place};
pub use schema::{IndexId, IndexKind, Partitioning, Schema, SecondaryDef, TableDef, TableId};
pub use session::{Reader, Session};
