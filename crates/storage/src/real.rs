//! The operating system's file system behind the [`Storage`] trait.

use crate::file::{whole_pages, File, Open, Storage};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, Default)]
pub struct RealStorage;

#[derive(Debug)]
struct RealFile {
    f: std::fs::File,
    path: PathBuf,
}

/// Add the path to an OS error so the one line a user sees names the file.
fn with_path(e: io::Error, what: &str, p: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
}

impl File for RealFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.f
            .read_at(buf, off)
            .map_err(|e| with_path(e, "reading", &self.path))
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        self.f
            .write_at(buf, off)
            .map_err(|e| with_path(e, "writing", &self.path))
    }
    fn sync_data(&self) -> io::Result<()> {
        self.f
            .sync_data()
            .map_err(|e| with_path(e, "syncing", &self.path))
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self
            .f
            .metadata()
            .map_err(|e| with_path(e, "reading the size of", &self.path))?
            .len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.f
            .set_len(len)
            .map_err(|e| with_path(e, "resizing", &self.path))
    }
    fn path(&self) -> &Path {
        &self.path
    }
    fn punch_hole(&self, off: u64, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let Some((start, n)) = whole_pages(off, len) else {
            return Ok(());
        };
        // SAFETY: fallocate on an open descriptor; no memory is passed.
        let r = unsafe {
            libc::fallocate(
                self.f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                start as libc::off_t,
                n as libc::off_t,
            )
        };
        if r != 0 {
            return Err(with_path(
                io::Error::last_os_error(),
                "punching a hole in",
                &self.path,
            ));
        }
        Ok(())
    }
    fn allocated(&self) -> io::Result<Option<u64>> {
        use std::os::unix::fs::MetadataExt;
        let m = self
            .f
            .metadata()
            .map_err(|e| with_path(e, "reading the size of", &self.path))?;
        Ok(Some(m.blocks() * 512))
    }
    fn drop_cached(&self, off: u64, len: u64) {
        use std::os::fd::AsRawFd;
        // SAFETY: advice on an open descriptor; no memory is passed.
        unsafe {
            libc::posix_fadvise(
                self.f.as_raw_fd(),
                off as libc::off_t,
                len as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            );
        }
    }
}

impl Storage for RealStorage {
    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn File>> {
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        match how {
            Open::Read => {}
            Open::ReadWrite => {
                o.write(true);
            }
            Open::CreateNew => {
                o.write(true).create_new(true);
            }
        }
        let f = o.open(path).map_err(|e| with_path(e, "opening", path))?;
        Ok(Arc::new(RealFile {
            f,
            path: path.to_path_buf(),
        }))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path).map_err(|e| with_path(e, "removing", path))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to).map_err(|e| with_path(e, "renaming", from))
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| with_path(e, "syncing directory", dir))
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| with_path(e, "creating", dir))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(dir).map_err(|e| with_path(e, "listing", dir))? {
            let e = e.map_err(|e| with_path(e, "listing", dir))?;
            v.push(e.file_name().to_string_lossy().into_owned());
        }
        v.sort();
        Ok(v)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        match std::fs::symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(with_path(e, "looking at", path)),
        }
    }
}
