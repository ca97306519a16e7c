//! `storage`: the one door to files for the durable engines. Every byte a database, a
//! log segment or a checkpoint file holds is read and written through a [`Storage`] and
//! its [`File`]s, so tests can swap the operating system for a simulated disk that
//! injects short writes, torn writes, full disks, failed fsyncs and crashes
//! deterministically from a seed (`sim`); `file` defines the two. `logfile` holds what the in-memory engines'
//! log files share (header, load marker, durability watermark).
//! This crate knows nothing about pages or log records; it must never retry or hide an
//! error (callers decide what a failed write means).

use std::io;
use std::path::Path;
use std::sync::Arc;

pub mod file;
pub mod gated;
pub mod logdir;
pub mod logfile;
pub mod real;
pub mod sim;
pub mod temp;
pub mod valuelog;

pub use file::{parent, whole_pages, File, Open, Storage};
pub use real::RealStorage;
pub use sim::SimStorage;

/// The operating system's file system.
pub fn os() -> Arc<dyn Storage> {
    Arc::new(RealStorage)
}

/// Write `bytes` as `dir/name` so that after a crash the file holds either its old
/// content or all of the new one: a temporary file, fsync, rename, fsync of `dir`.
pub fn write_atomic(st: &dyn Storage, dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    match st.remove(&tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let f = st.open(&tmp, Open::CreateNew)?;
    f.write_all_at(bytes, 0)?;
    f.sync_data()?;
    drop(f);
    st.rename(&tmp, &dir.join(name))?;
    st.sync_dir(dir)
}

/// Create `path` as a new file and make its directory entry durable.
pub fn create_durable(st: &dyn Storage, path: &Path) -> io::Result<Arc<dyn File>> {
    let f = st.open(path, Open::CreateNew)?;
    f.sync_data()?;
    st.sync_dir(parent(path))?;
    Ok(f)
}

/// Whether an error means the device is full (for the one-line message users get).
pub fn is_no_space(e: &io::Error) -> bool {
    e.raw_os_error() == Some(28) || e.kind() == io::ErrorKind::StorageFull
}

/// Whether an error means the file system cannot do what was asked (a hole punch on a
/// file system without one): reported, never fatal.
pub fn is_unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP) || e.kind() == io::ErrorKind::Unsupported
}

/// A random 64-bit id for a new set of files (a database, a log): the clock, the pid
/// and the process's random hasher keys mixed, never 0.
pub fn random_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish() | 1
}
