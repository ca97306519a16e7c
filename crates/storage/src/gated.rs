//! `gated`: test support for the loggers' bounded buffers, shared by the engines' tests.
//! `Gated` is the operating system's files with a gate in front of one file's writes (a
//! disk that stops taking the log); `commit_against_stuck_log` runs commits under an `rt` scheduler that
//! reports the first log wait held while the flusher is stuck at the gate. Used
//! only by tests; nothing in an engine depends on it.

use crate::{Open, RealStorage, Storage};
use std::path::Path;
use std::sync::Arc;

/// The gate in front of the log file of `Gated`: closed, writes wait at it.
#[derive(Debug, Default)]
pub struct Gate {
    /// Closed; writes waiting at it.
    state: std::sync::Mutex<(bool, usize)>,
    cv: std::sync::Condvar,
}

impl Gate {
    pub fn set_closed(&self, closed: bool) {
        self.state.lock().unwrap().0 = closed;
        self.cv.notify_all();
    }
    pub fn writes_held(&self) -> usize {
        self.state.lock().unwrap().1
    }
    /// Writes wait at the gate until this is dropped (also when a test fails: a
    /// flusher stuck at the gate would keep the engine from dropping).
    pub fn closed(&self) -> impl Drop + '_ {
        struct Open<'a>(&'a Gate);
        impl Drop for Open<'_> {
            fn drop(&mut self) {
                self.0.set_closed(false);
            }
        }
        self.set_closed(true);
        Open(self)
    }
    pub fn pass(&self) {
        let mut s = self.state.lock().unwrap();
        if s.0 {
            s.1 += 1;
            while s.0 {
                s = self.cv.wait(s).unwrap();
            }
            s.1 -= 1;
        }
    }
}

/// The operating system's files, but writes to the file named `name` wait while the
/// gate is closed: a disk that stops taking the log.
#[derive(Debug)]
pub struct Gated {
    pub name: &'static str,
    pub gate: Arc<Gate>,
}

#[derive(Debug)]
struct GatedFile {
    f: Arc<dyn crate::File>,
    gate: Arc<Gate>,
}

impl crate::File for GatedFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
        self.f.read_at(buf, off)
    }
    fn write_at(&self, buf: &[u8], off: u64) -> std::io::Result<usize> {
        self.gate.pass();
        self.f.write_at(buf, off)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.f.sync_data()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.f.len()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.f.set_len(len)
    }
    fn path(&self) -> &Path {
        self.f.path()
    }
    fn punch_hole(&self, off: u64, len: u64) -> std::io::Result<()> {
        self.f.punch_hole(off, len)
    }
    fn allocated(&self) -> std::io::Result<Option<u64>> {
        self.f.allocated()
    }
}

impl Storage for Gated {
    fn open(&self, path: &Path, how: Open) -> std::io::Result<Arc<dyn crate::File>> {
        let f = RealStorage.open(path, how)?;
        if path.file_name() != Some(self.name.as_ref()) {
            return Ok(f);
        }
        Ok(Arc::new(GatedFile {
            f,
            gate: self.gate.clone(),
        }))
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        RealStorage.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        RealStorage.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        RealStorage.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> std::io::Result<()> {
        RealStorage.create_dir_all(dir)
    }
    fn list(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        RealStorage.list(dir)
    }
    fn exists(&self, path: &Path) -> std::io::Result<bool> {
        RealStorage.exists(path)
    }
}

/// What the committing thread reports.
#[derive(Debug)]
pub enum Seen {
    /// A commit waits for the log while the flusher is held at the gate (so it cannot
    /// take the buffer), after this many commits returned.
    Held(u64),
    /// Every commit returned.
    Done(u64),
}

impl Seen {
    /// Assert that a commit was held by the stuck log, and no later than two full
    /// buffers' worth of commits (`BUFFER_LIMIT` plus one commit and some header bytes
    /// each) of `bytes` log bytes each; `what` names those commits in messages
    /// (`"commits of 4096-byte rows"`).
    pub fn assert_held_within_two_buffers(&self, bytes: usize, what: &str) {
        let limit = crate::logfile::BUFFER_LIMIT;
        match *self {
            Seen::Done(c) => panic!("{c} {what} ran ahead of a stuck log"),
            Seen::Held(c) => assert!(
                c as usize * bytes <= 2 * (limit + bytes + 64),
                "{c} {what} before one waited for a stuck log"
            ),
        }
    }
}

/// Run `n` commits against a stuck log: with the gate closed, a new thread calls the
/// closure `make` returns with 0, 1, .., n-1 (one commit each) under `Spy`. Returns what
/// came first, a commit held by the log or all of them done; the gate is open again and
/// the thread joined by then.
pub fn commit_against_stuck_log<C: FnMut(u64)>(
    gate: &Arc<Gate>,
    n: u64,
    make: impl FnOnce() -> C + Send,
) -> Seen {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let closed = gate.closed();
        let worker = scope.spawn(|| {
            let spy = Spy {
                gate: gate.clone(),
                tx: tx.clone(),
                told: std::cell::Cell::new(false),
                commits: std::cell::Cell::new(0),
            };
            rt::with_scheduler(&spy, || {
                let mut commit = make();
                for i in 0..n {
                    commit(i);
                    spy.commits.set(i + 1);
                }
            });
            tx.send(Seen::Done(n)).unwrap();
        });
        let seen = rx.recv().unwrap();
        drop(closed);
        worker.join().unwrap();
        seen
    })
}

/// Takes the committing thread's waits (polling them) and reports the first log wait
/// that is held: the flusher is stuck at the gate and the wait's condition is false.
struct Spy {
    gate: Arc<Gate>,
    tx: std::sync::mpsc::Sender<Seen>,
    told: std::cell::Cell<bool>,
    commits: std::cell::Cell<u64>,
}

impl rt::Scheduler for Spy {
    fn wait(
        &self,
        kind: rt::WaitKind,
        cond: &mut dyn FnMut() -> bool,
        deadline: Option<std::time::Instant>,
    ) -> bool {
        loop {
            if cond() {
                return true;
            }
            // The flusher held first, then the condition: it cannot turn true while the
            // flusher is held, so the commit is held by the stuck log.
            if kind == rt::WaitKind::LogFlush
                && self.gate.writes_held() > 0
                && !cond()
                && !self.told.replace(true)
            {
                self.tx.send(Seen::Held(self.commits.get())).unwrap();
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return cond();
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    fn point(&self, _: rt::Point) {}
    fn offloads_io(&self) -> bool {
        false
    }
    fn interests(&self) -> u8 {
        0
    }
}
