//! The live private servers of this process, and their shutdown.
//!
//! Owns every running postmaster (its `Child`) and its temporary directory, so that
//! both `Drop` and the SIGINT/SIGTERM/SIGHUP path can stop them and remove their
//! directories exactly once. The signal path holds the lock until the process exits,
//! so a `Drop` racing with it waits instead of leaving half a cleanup.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

/// How long a fast shutdown (SIGINT) may take before the postmaster is killed.
const FAST_STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the planned shutdown of `PgServer::restart_under` may take: its shutdown
/// checkpoint writes everything the load left dirty (a TPC-E or 1GB load: tens of seconds
/// on a busy disk), and a measured window of `reproduce` may stop the server with its
/// client (`SIGSTOP`) for seconds while this clock runs. Killing it there would fail a
/// simulation that was only slow (it did once, in a full `reproduce all`).
pub const RESTART_STOP_TIMEOUT: Duration = Duration::from_secs(300);
/// How long to wait for a killed postmaster to be reaped.
const KILL_WAIT_TIMEOUT: Duration = Duration::from_secs(5);

struct Live {
    id: u64,
    /// None until the postmaster is started (the directory exists from the start).
    child: Option<Child>,
    dir: PathBuf,
}

static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());
static SIGNALS: Once = Once::new();

fn live() -> MutexGuard<'static, Vec<Live>> {
    // A panic while holding the lock leaves the list itself consistent.
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers a server's new directory; from now on it is removed on `remove` or on a
/// signal.
pub fn register_dir(id: u64, dir: PathBuf) {
    install_signal_handler();
    live().push(Live {
        id,
        child: None,
        dir,
    });
}

/// Records the postmaster of a registered server; from now on it is stopped with it.
pub fn attach(id: u64, child: Child) {
    let mut live = live();
    let l = live.iter_mut().find(|l| l.id == id);
    let l = l.unwrap_or_else(|| panic!("server {id} is attached before it is registered"));
    assert!(l.child.is_none(), "server {id} has a postmaster already");
    l.child = Some(child);
}

/// Takes the postmaster of a registered server out of the registry (to stop and
/// replace it); the directory stays registered.
pub fn detach(id: u64) -> Option<Child> {
    live().iter_mut().find(|l| l.id == id)?.child.take()
}

/// Process id of a registered server's postmaster.
pub fn pid(id: u64) -> Option<u32> {
    live()
        .iter()
        .find(|l| l.id == id)?
        .child
        .as_ref()
        .map(|c| c.id())
}

/// Whether a registered server's postmaster has exited, with its exit status.
pub fn exited(id: u64) -> Option<String> {
    let mut live = live();
    let child = live.iter_mut().find(|l| l.id == id)?.child.as_mut()?;
    match child.try_wait() {
        Ok(Some(status)) => Some(status.to_string()),
        _ => None,
    }
}

/// Stops a registered server and removes its directory. Errors are reported, not
/// fatal: the caller is usually `Drop`.
pub fn remove(id: u64) -> Result<(), String> {
    let mut live = live();
    let Some(pos) = live.iter().position(|l| l.id == id) else {
        return Ok(());
    };
    let mut l = live.swap_remove(pos);
    let stopped = l.child.as_mut().map_or(Ok(()), stop);
    let removed = remove_dir(&l.dir);
    stopped.and(removed)
}

/// Stops a postmaster: SIGINT (PostgreSQL's fast shutdown: roll back open
/// transactions, checkpoint, exit; what `pg_ctl stop -m fast` sends), then SIGKILL if
/// it has not exited in time. Reaps it either way.
pub fn stop(child: &mut Child) -> Result<(), String> {
    stop_within(child, FAST_STOP_TIMEOUT)
}

/// [`stop`] with its own time for the fast shutdown.
pub fn stop_within(child: &mut Child, fast: Duration) -> Result<(), String> {
    if let Ok(Some(_)) = child.try_wait() {
        return Ok(());
    }
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill has no memory effects; the pid is our unreaped child, so it cannot
    // have been reused by another process.
    unsafe { libc::kill(pid, libc::SIGINT) };
    if wait_until(child, fast) {
        return Ok(());
    }
    let _ = child.kill();
    if wait_until(child, KILL_WAIT_TIMEOUT) {
        Err(format!(
            "postgres (pid {pid}) ignored a fast shutdown; killed it"
        ))
    } else {
        Err(format!(
            "postgres (pid {pid}) did not exit even after SIGKILL"
        ))
    }
}

fn wait_until(child: &mut Child, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            // An error means it is not our child any more (already reaped).
            Err(_) => return true,
            Ok(None) => return false,
        }
    }
}

/// Removes a server directory; retried briefly because backends of a killed
/// postmaster may still be closing files in it.
pub fn remove_dir(dir: &Path) -> Result<(), String> {
    let mut last = None;
    for _ in 0..20 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "cannot remove the PostgreSQL directory {}: {}",
        dir.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}

/// On SIGINT, SIGTERM or SIGHUP: stop every live server, remove its directory, then
/// die of the same signal as the default action would (exit status 128+n).
fn install_signal_handler() {
    SIGNALS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(s) => s,
            Err(e) => {
                // Not fatal: Drop still cleans up; only an interrupt would leave the
                // directory, which the next start removes (see stale.rs).
                eprintln!("warning: cannot watch for Ctrl-C, private postgres may outlive it: {e}");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("pgserver-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    let mut live = live();
                    for l in live.iter_mut() {
                        if let Some(child) = l.child.as_mut() {
                            let _ = stop(child);
                        }
                        let _ = remove_dir(&l.dir);
                    }
                    live.clear();
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
        if let Err(e) = spawned {
            eprintln!("warning: cannot watch for Ctrl-C, private postgres may outlive it: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A process that takes a second to honour SIGINT: stopped within a long enough
    /// time, killed (and said so) within a shorter one.
    fn slow_to_stop() -> Child {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "trap 'sleep 1; exit 0' INT; while :; do sleep 0.05; done",
        ]);
        // A shell cannot trap a signal ignored when it started, and a test run started
        // in the background of a non-interactive shell has SIGINT ignored: reset it.
        // SAFETY: `signal` is async-signal-safe; nothing else runs in the child.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let child = cmd.spawn().expect("sh");
        // Let the shell install its trap before it is signalled.
        std::thread::sleep(Duration::from_millis(300));
        child
    }

    #[test]
    fn a_slow_fast_shutdown_is_waited_for_within_its_time() {
        let mut c = slow_to_stop();
        assert_eq!(stop_within(&mut c, Duration::from_secs(20)), Ok(()));
        let mut c = slow_to_stop();
        let e = stop_within(&mut c, Duration::from_millis(200)).unwrap_err();
        assert!(e.contains("ignored a fast shutdown; killed it"), "{e}");
    }
}
