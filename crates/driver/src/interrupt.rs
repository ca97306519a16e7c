//! Ctrl-C (SIGINT) and SIGTERM during `run`.
//!
//! A watcher thread (`signal-hook`: the handler only writes to a pipe) takes the signal.
//! During the warm-up and the measured interval the run is stopped as its end would stop
//! it: the workers finish their transactions, the consistency check runs, the report of
//! what ran is printed, the engine is shut down (its temporary directory removed), and
//! the process then dies of the signal (exit status 128+n), so a calling script sees
//! the interrupt. At any other moment (open, load, check), or on a second signal,
//! there is nothing to report: the watcher removes this process's temporary
//! directories (`storage::temp`'s `oltpscope-<what>-<pid>-<n>`) and dies of the signal.
//!
//! Both signals are taken even when the process started with them ignored (a
//! background job of a script starts with SIGINT ignored): `timeout -s INT` must stop
//! such a run too, as it stops a PostgreSQL one. The private PostgreSQL server's
//! directories (`oltpscope-pg-*`) belong to `pgserver`, whose own watcher stops the
//! server before removing them and ends the process; here they are only waited for.

use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

struct State {
    /// A run's main loop is in its warm-up or measured interval and polls `pending`.
    running: bool,
    /// The signal the run loop is to stop for.
    pending: Option<i32>,
    /// A signal was taken (the process is on its way to die of it), and when.
    taken: Option<(i32, Instant)>,
}

static STATE: Mutex<State> = Mutex::new(State {
    running: false,
    pending: None,
    taken: None,
});

/// A signal this soon after the first is the same interrupt delivered twice, not a
/// second one: `timeout` signals its child and then its whole process group, which
/// holds the child too.
const SAME_INTERRUPT: Duration = Duration::from_millis(500);
static INSTALL: Once = Once::new();

/// How long to wait for `pgserver` to stop its servers before dying anyway (its fast
/// shutdown waits 15 s, then kills and waits 5 s more).
const PG_WAIT: Duration = Duration::from_secs(25);

fn state() -> MutexGuard<'static, State> {
    // The state stays consistent whatever panicked while holding it.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Start watching for SIGINT and SIGTERM (once per process; later calls do nothing).
pub fn install() {
    INSTALL.call_once(|| {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
            Ok(s) => s,
            Err(e) => {
                // Not fatal: the signals keep their default action (temporary
                // directories are then removed by the next run, see storage::temp).
                eprintln!("warning: cannot watch for Ctrl-C: {e}");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("interrupts".into())
            .spawn(move || {
                for sig in signals.forever() {
                    on_signal(sig);
                }
            });
        if let Err(e) = spawned {
            eprintln!("warning: cannot watch for Ctrl-C: {e}");
        }
    });
}

fn on_signal(sig: i32) {
    let mut st = state();
    let first = match st.taken {
        None => true,
        Some((_, at)) if at.elapsed() < SAME_INTERRUPT => return,
        Some(_) => false,
    };
    st.taken.get_or_insert((sig, Instant::now()));
    if st.running && first {
        st.pending = Some(sig);
        return;
    }
    drop(st);
    eprintln!(
        "stopped: interrupted {}by {} {}: no report; temporary files removed",
        if first { "" } else { "again " },
        name(sig),
        if first {
            "outside the warm-up and measured interval"
        } else {
            "while finishing the report"
        }
    );
    remove_own_temp_dirs(&std::env::temp_dir());
    die(sig)
}

/// The signal's name for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT (Ctrl-C)",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}

/// While this lives, a first signal stops the run instead of the process.
pub(crate) struct Running(());

impl Running {
    pub(crate) fn start() -> Running {
        state().running = true;
        Running(())
    }

    /// The signal the run is to stop for, if one came.
    pub(crate) fn pending(&self) -> Option<i32> {
        state().pending
    }

    /// The run loop is over: from now on a signal ends the process at once. Returns
    /// the signal the run is to stop for, if one came (under the same lock, so none
    /// falls between the loop's last look and this).
    pub(crate) fn finish(self) -> Option<i32> {
        let mut st = state();
        st.running = false;
        std::mem::forget(self);
        st.pending
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        state().running = false;
    }
}

/// The signal this process took, if any (it is then on its way to die of it).
pub fn taken() -> Option<i32> {
    state().taken.map(|(sig, _)| sig)
}

/// Die of `sig` as its default action would (exit status 128+n), once `pgserver`'s
/// watcher is done with its directories (it ends the process itself when it is).
pub fn die(sig: i32) -> ! {
    let deadline = Instant::now() + PG_WAIT;
    while !own_dirs(&std::env::temp_dir(), true).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = signal_hook::low_level::emulate_default_handler(sig);
    std::process::exit(128 + sig)
}

/// This process's temporary directories under `base`: `pg` selects the PostgreSQL
/// servers' (`oltpscope-pg-*`), else every other one.
fn own_dirs(base: &std::path::Path, pg: bool) -> Vec<std::path::PathBuf> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_str().unwrap_or("");
            storage::temp::owner_pid(name) == Some(me)
                && name.starts_with("oltpscope-pg-") == pg
                // Only directories (never follow a symlink out of the temp directory).
                && e.file_type().map(|t| t.is_dir()).unwrap_or(false)
        })
        .map(|e| e.path())
        .collect()
}

/// Remove this process's temporary directories under `base` (not the PostgreSQL
/// servers', see the module comment); returns how many.
pub fn remove_own_temp_dirs(base: &std::path::Path) -> usize {
    own_dirs(base, false)
        .iter()
        .filter(|d| std::fs::remove_dir_all(d).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_this_process_s_directories_are_removed_and_never_a_server_s() {
        let base = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let mine = base.path().join(format!("oltpscope-sqlite-{me}-0"));
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("oltpscope.sqlite"), b"x").unwrap();
        let pg = base.path().join(format!("oltpscope-pg-{me}-1"));
        let other = base.path().join("oltpscope-memory-1-0");
        let loose = base.path().join(format!("oltpscope-notes-{me}"));
        for d in [&pg, &other, &loose] {
            std::fs::create_dir(d).unwrap();
        }
        let file = base.path().join(format!("oltpscope-file-{me}-2"));
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(super::remove_own_temp_dirs(base.path()), 1);
        assert!(!mine.exists());
        assert!(pg.exists() && other.exists() && loose.exists() && file.exists());
        assert_eq!(super::own_dirs(base.path(), true), vec![pg]);
    }
}
