//! The writer gate: one in-process lock per database that a worker takes before
//! `BEGIN IMMEDIATE` and gives up when SQLite's write lock is free again, so that a
//! waiting writer is woken when the writer before it starts a WAL checkpoint, instead of
//! sleeping out one of SQLite's busy-handler steps (1, 2, 5, 10 ms and more) while the
//! lock is free (docs/design/sql-adapters.md, "The writer gate").
//!
//! Order, and why it cannot deadlock with SQLite's own lock: the gate is always taken
//! before SQLite's write lock and given up only after it (in the commit's WAL hook, or
//! after `ROLLBACK`); nobody waits for the gate while holding a SQLite lock, and a
//! holder waits for SQLite's lock only through the busy handler, which gives up after
//! the busy timeout. Other processes do not see the gate: against them the busy
//! handler decides, as without it.
//!
//! The checkpoint stays SQLite's automatic one at the connection's own threshold
//! (`PRAGMA wal_autocheckpoint`, read when the hook is installed): the hook replaces
//! SQLite's default WAL hook, which does nothing but that checkpoint, and runs the same
//! `sqlite3_wal_checkpoint` call after giving up the gate.

use rusqlite::{ffi, Connection};
use std::cell::Cell;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long a waiter sleeps before looking at the gate again unwoken: a holder wakes a
/// waiter only when it starts a checkpoint or gives the gate up after a rollback, not
/// after every commit (it most likely takes the gate again within microseconds, and
/// every change of writer costs the new one its page cache). SQLite's busy handler
/// sleeps this long at its first retry.
const RECHECK: Duration = Duration::from_millis(1);

/// One database's gate, shared by its connections in this process.
#[derive(Default)]
pub struct WriterGate {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    held: bool,
    waiting: usize,
}

impl WriterGate {
    /// The gate's state; a panic elsewhere cannot leave it half-changed (every change
    /// is a field store), so a poisoned lock is used as is.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take the gate, waiting at most `limit`; false when it stayed taken that long.
    fn enter(&self, limit: Duration) -> bool {
        let mut s = self.state();
        if s.held {
            let end = Instant::now() + limit;
            s.waiting += 1;
            while s.held {
                let now = Instant::now();
                if now >= end {
                    s.waiting -= 1;
                    return false;
                }
                s = self
                    .wake
                    .wait_timeout(s, RECHECK.min(end - now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            s.waiting -= 1;
        }
        s.held = true;
        true
    }

    /// Give the gate up; `wake`: wake a waiter now (the holder will be away a while).
    fn leave(&self, wake: bool) {
        let mut s = self.state();
        s.held = false;
        if wake && s.waiting > 0 {
            self.wake.notify_one();
        }
    }
}

/// What the WAL hook of one connection needs (boxed: SQLite keeps its address).
struct HookCtx {
    gate: Arc<WriterGate>,
    /// Whether this connection holds the gate.
    held: Cell<bool>,
    /// `PRAGMA wal_autocheckpoint` (0: none).
    checkpoint_at: c_int,
}

impl HookCtx {
    fn leave(&self, wake: bool) {
        if self.held.replace(false) {
            self.gate.leave(wake);
        }
    }
}

/// SQLite's WAL hook, run by `sqlite3_step` after a commit that wrote `frames` pages to
/// the WAL, its write lock already released: give the gate up (waking a waiter if a
/// checkpoint follows), then checkpoint as SQLite's default hook does.
unsafe extern "C" fn after_commit(
    ctx: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    frames: c_int,
) -> c_int {
    // SAFETY: `ctx` is the `HookCtx` boxed in the `Writer` that installed this hook and
    // removes it before the box goes; the hook runs on the thread using the connection.
    let ctx = unsafe { &*(ctx as *const HookCtx) };
    let checkpoint = ctx.checkpoint_at > 0 && frames >= ctx.checkpoint_at;
    ctx.leave(checkpoint);
    if checkpoint {
        // As SQLite's default hook: a passive checkpoint, its result ignored (busy when
        // another connection is checkpointing).
        // SAFETY: `db` and `name` are the hook's own arguments.
        unsafe { ffi::sqlite3_wal_checkpoint(db, name) };
    }
    ffi::SQLITE_OK
}

/// One connection's side of the gate: installed as the connection's WAL hook, removed
/// when dropped (it borrows the connection, which therefore outlives it).
pub struct Writer<'c> {
    conn: &'c Connection,
    ctx: Box<HookCtx>,
}

impl<'c> Writer<'c> {
    /// Put `conn`'s writes behind `gate`, keeping its automatic checkpoint's threshold.
    pub fn install(conn: &'c Connection, gate: Arc<WriterGate>) -> rusqlite::Result<Self> {
        let checkpoint_at: i64 = conn.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))?;
        let ctx = Box::new(HookCtx {
            gate,
            held: Cell::new(false),
            checkpoint_at: c_int::try_from(checkpoint_at).unwrap_or(c_int::MAX),
        });
        // SAFETY: the handle is `conn`'s, alive while `self` borrows it; the context's
        // box lives until `drop` has removed the hook.
        unsafe {
            ffi::sqlite3_wal_hook(
                conn.handle(),
                Some(after_commit),
                &*ctx as *const HookCtx as *mut c_void,
            );
        }
        Ok(Writer { conn, ctx })
    }

    /// Take the gate before `BEGIN IMMEDIATE`, waiting at most `limit`; false when it
    /// stayed taken that long.
    pub fn enter(&self, limit: Duration) -> bool {
        if self.ctx.held.get() {
            return true;
        }
        let ok = self.ctx.gate.enter(limit);
        self.ctx.held.set(ok);
        ok
    }

    /// After `COMMIT` returned: give the gate up if the WAL hook has not (a transaction
    /// that wrote nothing).
    pub fn committed(&self) {
        self.ctx.leave(false);
    }

    /// After `ROLLBACK`, or a `BEGIN` that failed: give the gate up and wake a waiter.
    pub fn leave(&self) {
        self.ctx.leave(true);
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `install`: the connection is alive (borrowed).
        unsafe {
            ffi::sqlite3_wal_hook(self.conn.handle(), None, std::ptr::null_mut());
        }
        // A worker dropped inside a transaction (a panic) must not wedge the others.
        self.ctx.leave(true);
    }
}
