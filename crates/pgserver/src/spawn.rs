//! Starting the postmaster so that it dies with oltpscope.
//!
//! Owns one long-lived "spawner" thread. Linux's parent-death signal
//! (`PR_SET_PDEATHSIG`) fires when the *thread* that forked the child ends, not the
//! process, so a postmaster forked by a short-lived worker thread would be killed
//! early; forking every postmaster from a thread that never ends ties it to the
//! process instead. The signal is SIGQUIT: PostgreSQL's immediate shutdown, which also
//! stops its backends. It is set after the uid switch (a credential change clears it)
//! and `postgres` is not set-uid, so it survives the exec.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;

type Request = (Command, Sender<io::Result<Child>>);

static SPAWNER: Mutex<Option<Sender<Request>>> = Mutex::new(None);

/// Spawns `cmd` from the spawner thread with SIGQUIT as its parent-death signal.
pub fn spawn_tied_to_process(mut cmd: Command) -> io::Result<Child> {
    let parent_pid = std::process::id();
    // SAFETY: the closure runs between fork and exec and calls only prctl and getppid,
    // both async-signal-safe; it touches no memory shared with other threads.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl: then no signal would ever come.
            if libc::getppid() as u32 != parent_pid {
                return Err(io::Error::other("oltpscope exited while starting postgres"));
            }
            Ok(())
        });
    }
    let mut spawner = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
    if spawner.is_none() {
        let (tx, rx) = channel::<Request>();
        std::thread::Builder::new()
            .name("pgserver-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    // The requester may have gone; then the child is dropped (it still dies
                    // with the process through its parent-death signal).
                    let _ = reply.send(cmd.spawn());
                }
            })?;
        *spawner = Some(tx);
    }
    let (reply_tx, reply_rx) = channel();
    let Some(sender) = spawner.as_ref() else {
        unreachable!("the spawner was set just above");
    };
    sender
        .send((cmd, reply_tx))
        .map_err(|_| io::Error::other("the pgserver spawner thread is gone"))?;
    drop(spawner);
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the pgserver spawner thread is gone"))?
}
