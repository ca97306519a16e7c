//! Removing what a killed oltpscope left behind.
//!
//! Owns the naming of server directories (`oltpscope-pg-<owner pid>-<n>`) and the
//! sweep, run at every start, that removes those whose owner process is gone. When the
//! owner was killed with SIGKILL its postmaster already got SIGQUIT from its
//! parent-death signal (spawn.rs); the sweep stops it too if it somehow survived, but
//! only after checking its command line names that directory, so a reused pid is never
//! signalled.
//!
//! A server on a kept cluster (`--db DIR`, kept.rs) has only its socket in such a
//! directory, and there a file [`CLUSTER_FILE`] naming the cluster's data directory,
//! where the sweep reads the postmaster's pid: it never removes, or writes in, the
//! cluster (a killed run's cluster is left to PostgreSQL's crash recovery at its next
//! start), nor any directory holding a kept cluster's marker, whatever its name.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Prefix of every private server directory.
pub const DIR_PREFIX: &str = "oltpscope-pg-";
/// In the socket directory of a server on a kept cluster: the cluster's data directory.
pub const CLUSTER_FILE: &str = "cluster";

/// The directory name for a server of process `pid`, attempt `n`.
pub fn dir_name(pid: u32, n: u64) -> String {
    format!("{DIR_PREFIX}{pid}-{n}")
}

/// Owner pid encoded in a server directory name.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(DIR_PREFIX)?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

pub(crate) fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks existence and permission.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes the server directories under `parent` whose owner process is dead, after
/// stopping any postmaster still running in them. Best effort: returns the
/// directories removed, ignores what it cannot remove.
pub fn sweep(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(owner) = owner_pid(&name) else {
            continue;
        };
        let dir = entry.path();
        if owner == std::process::id() || alive(owner) || super::kept::has_marker(&dir) {
            continue;
        }
        stop_orphan_postmaster(&dir);
        if super::registry::remove_dir(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

/// Stops the postmaster named in `<dir>/data/postmaster.pid` (or in the kept cluster's
/// that `<dir>/cluster` names) if it still runs and its command line mentions `dir`.
fn stop_orphan_postmaster(dir: &Path) {
    let data = match std::fs::read_to_string(dir.join(CLUSTER_FILE)) {
        Ok(kept) => PathBuf::from(kept.trim_end_matches('\n')),
        Err(_) => dir.join("data"),
    };
    let Ok(text) = std::fs::read_to_string(data.join("postmaster.pid")) else {
        return;
    };
    let Some(pid) = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<u32>().ok())
    else {
        return;
    };
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return;
    };
    if !String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy()) {
        return;
    }
    let signal = |sig| {
        // SAFETY: kill has no memory effects; the pid was checked to be this
        // directory's postmaster just above.
        unsafe { libc::kill(pid as libc::pid_t, sig) };
    };
    signal(libc::SIGQUIT);
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive(pid) {
        signal(libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_parses_only_our_names() {
        assert_eq!(owner_pid(&dir_name(1234, 7)), Some(1234));
        assert_eq!(owner_pid("oltpscope-pg-1234"), None);
        assert_eq!(owner_pid("oltpscope-pg-x-1"), None);
        assert_eq!(owner_pid("other-1234-1"), None);
    }

    #[test]
    fn sweep_removes_dead_owners_and_keeps_live_ones() {
        let parent = std::env::temp_dir().join(format!("pgserver-sweep-{}", std::process::id()));
        // pid_max is at most 2^22, so this pid cannot be alive.
        let dead = parent.join(dir_name(99_999_999, 0));
        let mine = parent.join(dir_name(std::process::id(), 0));
        let unrelated = parent.join("something-else");
        // A kept cluster someone put where a dead server's directory would be.
        let kept = parent.join(dir_name(99_999_998, 0));
        for d in [&dead, &mine, &unrelated, &kept] {
            std::fs::create_dir_all(d.join("data")).unwrap();
        }
        std::fs::write(kept.join(crate::kept::MARKER), "x").unwrap();
        let removed = sweep(&parent);
        let (dead_gone, mine_kept, unrelated_kept, kept_kept) = (
            !dead.exists(),
            mine.exists(),
            unrelated.exists(),
            kept.join("data").exists(),
        );
        std::fs::remove_dir_all(&parent).unwrap();
        assert_eq!(removed, vec![dead.clone()]);
        assert!(dead_gone && mine_kept && unrelated_kept && kept_kept);
    }
}
