//! The file abstraction every durable byte goes through: how a file is opened, a
//! [`File`] and a [`Storage`] (the operating system's in `real`, a simulated disk in
//! `sim`), and the page arithmetic both share.

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// An existing file, read-only use (writes are a programmer error).
    Read,
    /// An existing file, for reading and writing.
    ReadWrite,
    /// A new file for reading and writing; fails with `AlreadyExists` if it exists.
    CreateNew,
}

/// An open file. Offsets are absolute; there is no cursor.
// `len` is an I/O call that can fail; an `is_empty` would only hide that.
#[allow(clippy::len_without_is_empty)]
pub trait File: Send + Sync + fmt::Debug {
    /// Read up to `buf.len()` bytes at `off`; fewer only at the end of the file.
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize>;
    /// Write at `off`; may write fewer bytes than asked (a short write).
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize>;
    /// Make written data durable (fdatasync).
    fn sync_data(&self) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    /// Grow (with zeros) or shrink the file.
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn path(&self) -> &Path;
    /// Advise that `len` bytes at `off`, already durable, will not be read again soon
    /// (the page cache may drop them). Only advice: a file may ignore it.
    fn drop_cached(&self, _off: u64, _len: u64) {}
    /// Free the disk space of the whole 4 KiB pages inside `len` bytes at `off`; the
    /// file keeps its length and those bytes read back as zeros. Only for bytes nothing
    /// will read again (a log's prefix a checkpoint made useless). A file system that
    /// cannot (EOPNOTSUPP, [`is_unsupported`]) is not an error the caller must stop for.
    fn punch_hole(&self, _off: u64, _len: u64) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP))
    }
    /// Bytes of disk the file takes (`st_blocks` * 512), where known.
    fn allocated(&self) -> io::Result<Option<u64>> {
        Ok(None)
    }

    /// Read until `buf` is full or the file ends; returns the bytes read.
    fn read_full_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.read_at(&mut buf[got..], off + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(got)
    }

    /// Write all of `buf` at `off`, continuing after short writes.
    fn write_all_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.write_at(&buf[done..], off + done as u64) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("{}: write made no progress", self.path().display()),
                    ))
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A file system: the operating system's ([`RealStorage`]) or a simulated one
/// ([`sim::SimStorage`]).
pub trait Storage: Send + Sync + fmt::Debug {
    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn File>>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Atomically replace `to` with `from` (durable only after `sync_dir`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Make the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// File names in `dir` (not paths), sorted; `NotFound` if `dir` does not exist.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` exists (a file or a directory).
    fn exists(&self, path: &Path) -> io::Result<bool>;

    /// The whole content of an existing file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let f = self.open(path, Open::Read)?;
        let len = f.len()?;
        let mut v = vec![0u8; usize::try_from(len).map_err(io::Error::other)?];
        let n = f.read_full_at(&mut v, 0)?;
        v.truncate(n);
        Ok(v)
    }
}

/// The directory holding `path` (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The whole `PAGE`-aligned pages inside `off..off + len` (`None`: not one).
pub fn whole_pages(off: u64, len: u64) -> Option<(u64, u64)> {
    const PAGE: u64 = 4096;
    let start = off.div_ceil(PAGE) * PAGE;
    let end = (off + len) / PAGE * PAGE;
    (end > start).then(|| (start, end - start))
}
