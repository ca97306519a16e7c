//! Process-owned temporary directories. Each is named `oltpscope-<what>-<pid>-<n>` under
//! the system temp directory and removed when its [`TempDir`] is dropped. A process
//! killed before that leaves its directories behind; the next process that creates one
//! removes every `oltpscope-*-<pid>-<n>` directory whose pid no longer runs (checked in
//! `/proc`), so killed runs never fill the temp directory.
//!
//! Must never remove a directory whose owner may still run: where `/proc` is missing
//! (not Linux) nothing is cleaned, and names that do not end in `-<pid>-<n>` are left
//! alone.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const PREFIX: &str = "oltpscope-";

/// A temporary directory owned by this process, removed (with its contents) on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keep the directory: it is not removed on drop (nor by later processes while this
    /// one runs). Returns its path.
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Create a new directory `oltpscope-<what>-<pid>-<n>` under the system temp directory,
/// first removing stale ones left by processes that no longer run. `what` names the
/// user (e.g. `memory`, `disk`, `crashtest`) and must not be empty.
pub fn create(what: &str) -> io::Result<TempDir> {
    create_in(&std::env::temp_dir(), what)
}

/// As [`create`], under `base` instead of the system temp directory.
pub fn create_in(base: &Path, what: &str) -> io::Result<TempDir> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    assert!(!what.is_empty(), "a temp directory needs a name");
    clean_stale(base);
    let pid = std::process::id();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("{PREFIX}{what}-{pid}-{n}"));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(TempDir { path, keep: false }),
            // Left by an earlier process with our pid (pids are reused): next number.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("creating {}: {e}", path.display()),
                ))
            }
        }
    }
}

/// The pid of a name `oltpscope-<what>-<pid>-<n>`, if it has that shape.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.rsplitn(3, '-');
    let n = parts.next()?;
    let pid = parts.next()?;
    let what = parts.next()?;
    if what.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether process `pid` runs (None: cannot tell on this system).
fn alive(pid: u32) -> Option<bool> {
    if !Path::new("/proc/self").exists() {
        return None;
    }
    Some(Path::new(&format!("/proc/{pid}")).exists())
}

/// Remove `oltpscope-*-<pid>-<n>` directories under `base` whose process is gone.
/// Returns how many were removed. Errors are ignored (another process may be removing
/// the same directory; a directory we cannot remove is simply left).
pub fn clean_stale(base: &Path) -> usize {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = owner_pid(name) else { continue };
        if pid == me || alive(pid) != Some(false) {
            continue;
        }
        // Only directories (never follow a symlink out of the temp directory).
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false)
            && std::fs::remove_dir_all(e.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_only_in_the_owned_shape() {
        assert_eq!(owner_pid("oltpscope-memory-123-0"), Some(123));
        assert_eq!(owner_pid("oltpscope-crash-test-77-12"), Some(77));
        assert_eq!(owner_pid("oltpscope-crashtest-123"), None);
        assert_eq!(owner_pid("oltpscope-memory-x-1"), None);
        assert_eq!(owner_pid("oltpscope--5-1"), None);
        assert_eq!(owner_pid("other-memory-1-2"), None);
        assert_eq!(owner_pid("oltpscope-t-9-ThreadId(2)"), None);
    }

    #[test]
    fn stale_directories_of_dead_processes_are_removed_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        // A pid far above any pid_max in use: no such process.
        let dead = base.path().join("oltpscope-memory-4000000000-0");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("memory.log"), b"x").unwrap();
        let live = base
            .path()
            .join(format!("oltpscope-memory-{}-999", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        let other = base.path().join("oltpscope-notes");
        std::fs::create_dir(&other).unwrap();
        let t = create_in(base.path(), "memory").unwrap();
        assert!(t.path().is_dir());
        let name = t.path().file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(owner_pid(&name), Some(std::process::id()));
        if Path::new("/proc/self").exists() {
            assert!(!dead.exists(), "a dead process's directory stays");
        }
        assert!(live.exists() && other.exists());
        let p = t.path().to_path_buf();
        drop(t);
        assert!(!p.exists(), "dropped temp dir not removed");
        let kept = create_in(base.path(), "memory").unwrap().keep();
        assert!(kept.exists());
    }
}
