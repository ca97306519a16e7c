//! The in-memory indexes both in-memory engines (`memory`, `mvcc`) build on: an OLC
//! B+tree (`btree`), a hash index of one-line buckets (`hash`), one type over both with
//! secondary indexes and whole-index walks (`index`), an optimistic transaction's node
//! set (`nodeset`), and the memory they live in (`arena`'s size classes on huge pages,
//! `huge`'s zeroed arrays). Lock-free readers; memory freed through crossbeam-epoch.
//!
//! Must never know a transaction protocol, a record format or a log: the engines say
//! what an index value points to (`hash::Keys`) and what a node set protects.

pub mod arena;
pub mod btree;
pub mod hash;
mod huge;
pub mod index;
pub mod nodeset;

pub use index::{Index, SecIndex};
pub use nodeset::NodeSet;
