//! placeholder: see the crate's issue
pub mod lock;
