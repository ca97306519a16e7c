//! `sim`: the simulated disk. It owns an in-memory file system made of a durable medium
//! under a page cache, the faults it injects (short writes, EIO, failed fsyncs, a full
//! disk, a crash at the Nth operation) and what a power loss keeps of unsynced state.
//! It must never touch the real file system, and every decision it makes must depend
//! only on its seed and the sequence of calls: no clocks, no hash-order iteration.
//!
//! The model, in brief (details in `docs/design/storage.md`):
//! - a file has durable bytes (on the medium) and current bytes (the page cache, what
//!   reads see); writes and `set_len`s since the file's last `sync_data` are pending;
//! - creating, renaming and removing files changes the current directory entries at
//!   once and the durable ones at the `sync_dir` of the directory (for a rename, of either
//!   directory it touches); directories themselves are durable as soon as
//!   `create_dir_all` returns (no test needs otherwise, and it keeps the model small);
//! - [`SimStorage::crash`] is a power loss and restart: each pending directory operation
//!   is independently kept or lost (a rename as a whole), each pending write is
//!   independently lost, kept or torn, in order, onto the durable bytes;
//! - [`SimStorage::kill`] is a process kill (`kill -9`): the page cache survives, so the
//!   next process sees the current state, and what was pending stays pending (dirty pages
//!   are not on the medium yet: a later `crash` can still lose them).
//!
//! Determinism holds for a single-threaded sequence of calls; threads racing on one
//! `SimStorage` get a seeded but interleaving-dependent run.

use crate::file::{parent, whole_pages, File, Open, Storage};
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Torn writes persist whole sectors of this size (or a byte prefix).
pub const SECTOR: u64 = 512;

/// Files end before this offset: a wild offset in an engine under test should fail
/// (EFBIG) rather than make the test allocate gigabytes.
pub const MAX_FILE_LEN: u64 = 1 << 32;

const EIO: i32 = 5;
const EFBIG: i32 = 27;
const ENOSPC: i32 = 28;

/// Faults to inject; settable at any time with [`SimStorage::set_faults`].
/// Probabilities are per call, in `0.0..=1.0`; the default injects nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// `write_at` writes a random non-empty proper prefix and returns its length
    /// (only for writes of 2 bytes or more).
    pub short_write: f64,
    /// `write_at` fails with EIO and writes nothing.
    pub write_error: f64,
    /// `sync_data` fails with EIO. As Linux does after a failed fsync, the file's pending
    /// writes are each lost, kept or torn on the medium (as at a crash) and forgotten:
    /// reads still see them, a later successful sync does not make them durable, and
    /// only a crash reveals the loss. `sync_dir` fails with EIO too, leaving its
    /// directory's operations pending.
    pub sync_error: f64,
    /// The total current length of all files (named or open) may not exceed this: a
    /// write that would cross it writes what fits and returns that count (a short
    /// write), the next returns ENOSPC (`storage::is_no_space`); a `set_len` that would
    /// cross it fails with ENOSPC and changes nothing. `None` (room again) lets writes
    /// continue.
    pub no_space_after: Option<u64>,
    /// `Some(n)`: the first `n` mutating operations after these faults were set succeed
    /// and the next one fails with "storage crashed", as does every later operation on
    /// this storage, until [`SimStorage::crash`] (or [`SimStorage::kill`]) restarts it.
    /// Mutating operations: `write_at` (of at least one byte), `set_len`, `sync_data`, `punch_hole`,
    /// `sync_dir`, `rename`, `remove` and opening with `Open::CreateNew`, whatever their
    /// outcome. The failing operation may have reached the page cache: a write a random
    /// prefix of its bytes (which the crash may tear further), a `set_len`, rename,
    /// removal or creation with probability 1/2; a sync does nothing. One-shot: it is
    /// reset to `None` when it fires.
    pub crash_after_writes: Option<u64>,
}

/// Counters since the storage was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Mutating operations (what `Faults::crash_after_writes` counts).
    pub mutations: u64,
    /// `write_at` calls of at least one byte.
    pub writes: u64,
    /// Bytes written into the page cache.
    pub bytes_written: u64,
    /// `sync_data` and `sync_dir` calls.
    pub syncs: u64,
    pub short_writes: u64,
    pub write_errors: u64,
    pub sync_errors: u64,
    pub no_space_errors: u64,
    /// Crashes injected by `crash_after_writes`.
    pub injected_crashes: u64,
    /// Calls of [`SimStorage::crash`].
    pub crashes: u64,
    /// Calls of [`SimStorage::kill`].
    pub kills: u64,
    /// Bytes zeroed by `punch_hole` (whole 4 KiB pages inside the files' lengths).
    pub punched_bytes: u64,
}

impl SimStats {
    /// Every fault injected (short writes, EIO, ENOSPC, injected crashes).
    pub fn faults_injected(&self) -> u64 {
        self.short_writes
            + self.write_errors
            + self.sync_errors
            + self.no_space_errors
            + self.injected_crashes
    }
}

/// A simulated file system; clones share one state, so a test keeps a handle while an
/// engine holds another (as `Arc<dyn Storage>`, see [`SimStorage::as_storage`]).
#[derive(Clone)]
pub struct SimStorage {
    st: Arc<Mutex<State>>,
}

/// A change not yet on the medium.
#[derive(Debug, Clone)]
enum Pending {
    Write { off: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default)]
struct Inode {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<Pending>,
    /// Open handles: an unlinked file keeps its space while one is open.
    open: u32,
}

/// A directory entry change not yet on the medium. Each names the inode it moves, so
/// that applied out of order (a crash keeps any subset) an inode still has one name.
#[derive(Debug, Clone)]
enum DirOp {
    Link {
        path: PathBuf,
        ino: u64,
    },
    Unlink {
        path: PathBuf,
        ino: u64,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
        ino: u64,
    },
}

impl DirOp {
    fn touches(&self, dir: &Path) -> bool {
        match self {
            DirOp::Link { path, .. } | DirOp::Unlink { path, .. } => parent(path) == dir,
            DirOp::Rename { from, to, .. } => parent(from) == dir || parent(to) == dir,
        }
    }

    fn mentions(&self, p: &Path) -> bool {
        match self {
            DirOp::Link { path, .. } | DirOp::Unlink { path, .. } => path == p,
            DirOp::Rename { from, to, .. } => from == p || to == p,
        }
    }

    fn ino(&self) -> u64 {
        match self {
            DirOp::Link { ino, .. } | DirOp::Unlink { ino, .. } | DirOp::Rename { ino, .. } => *ino,
        }
    }

    fn apply(&self, names: &mut BTreeMap<PathBuf, u64>) {
        match self {
            DirOp::Link { path, ino } => {
                names.insert(path.clone(), *ino);
            }
            DirOp::Unlink { path, ino } => {
                if names.get(path) == Some(ino) {
                    names.remove(path);
                }
            }
            DirOp::Rename { to, ino, .. } => {
                // The inode's one name moves, wherever the earlier operations left it.
                names.retain(|_, i| i != ino);
                names.insert(to.clone(), *ino);
            }
        }
    }
}

struct State {
    rng: SmallRng,
    faults: Faults,
    /// `stats.mutations` when the faults were last set (`crash_after_writes` counts from it).
    armed_at: u64,
    /// Bumped by every crash and kill: handles of an older epoch are dead.
    epoch: u64,
    /// An injected crash happened: everything fails until `crash` or `kill`.
    dead: bool,
    dirs: BTreeSet<PathBuf>,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    dir_ops: Vec<DirOp>,
    inodes: BTreeMap<u64, Inode>,
    next_ino: u64,
    stats: SimStats,
}

/// The error of every operation on a crashed storage or through a handle from before
/// a crash; recognise it with [`is_crash`].
#[derive(Debug)]
struct Crashed(String);

impl fmt::Display for Crashed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Crashed {}

/// Whether `e` is (or quotes) the simulated storage's "storage crashed" error.
pub fn is_crash(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|r| r.is::<Crashed>()) || e.to_string().contains("storage crashed")
}

fn crashed(what: &str, p: &Path) -> io::Error {
    io::Error::other(Crashed(format!("{what} {}: storage crashed", p.display())))
}

fn os_err(code: i32, what: &str, p: &Path) -> io::Error {
    let e = io::Error::from_raw_os_error(code);
    io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
}

fn err(kind: io::ErrorKind, what: &str, p: &Path, msg: &str) -> io::Error {
    io::Error::new(kind, format!("{what} {}: {msg}", p.display()))
}

/// Paths are keys: `./a/b` and `a/b` are one file.
fn norm(p: &Path) -> PathBuf {
    let v: PathBuf = p
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if v.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        v
    }
}

fn is_root(p: &Path) -> bool {
    p == Path::new(".") || p == Path::new("/")
}

/// Write `data` at `off`, growing `v` with zeros as needed.
fn put(v: &mut Vec<u8>, off: u64, data: &[u8]) {
    let off = off as usize; // below MAX_FILE_LEN
    let end = off + data.len();
    if v.len() < end {
        v.resize(end, 0);
    }
    v[off..end].copy_from_slice(data);
}

fn apply(v: &mut Vec<u8>, p: &Pending) {
    match p {
        Pending::Write { off, data } => put(v, *off, data),
        Pending::SetLen(n) => v.resize(*n as usize, 0),
    }
}

/// What reaches the medium of `pending` when the power goes (or an fsync fails): each
/// change independently, in order. A write is lost, kept or torn with probability 1/3
/// each; torn is, with probability 1/2 each, a subset of its 512-byte sectors (each
/// sector kept with probability 1/2) or a byte prefix of uniform length. A `set_len`
/// is kept with probability 1/2.
fn settle(rng: &mut SmallRng, durable: &mut Vec<u8>, pending: Vec<Pending>) {
    for p in pending {
        match p {
            Pending::SetLen(_) => {
                if rng.gen_bool(0.5) {
                    apply(durable, &p);
                }
            }
            Pending::Write { off, ref data } => match rng.gen_range(0..3) {
                0 => {}
                1 => put(durable, off, data),
                _ if rng.gen_bool(0.5) => {
                    let mut i = 0usize;
                    while i < data.len() {
                        let at = off + i as u64;
                        let end =
                            ((at / SECTOR + 1) * SECTOR - off).min(data.len() as u64) as usize;
                        if rng.gen_bool(0.5) {
                            put(durable, at, &data[i..end]);
                        }
                        i = end;
                    }
                }
                _ => {
                    let n = rng.gen_range(0..=data.len());
                    put(durable, off, &data[..n]);
                }
            },
        }
    }
}

impl State {
    fn chance(&mut self, p: f64) -> bool {
        // No draw for a fault that is off, so turning one off leaves the others' draws
        // as they were.
        p > 0.0 && self.rng.gen_bool(p.min(1.0))
    }

    /// Count a mutating operation; true if it is the one `crash_after_writes` fails
    /// (the storage is dead from now on).
    fn mutation(&mut self) -> bool {
        let idx = self.stats.mutations - self.armed_at;
        self.stats.mutations += 1;
        if self.faults.crash_after_writes == Some(idx) {
            self.faults.crash_after_writes = None;
            self.dead = true;
            self.stats.injected_crashes += 1;
            return true;
        }
        false
    }

    fn is_dir(&self, p: &Path) -> bool {
        is_root(p) || self.dirs.contains(p)
    }

    /// Bytes in use: files with a name or an open handle.
    fn used(&self) -> u64 {
        let named: BTreeSet<u64> = self.names.values().copied().collect();
        self.inodes
            .iter()
            .filter(|(ino, i)| i.open > 0 || named.contains(ino))
            .map(|(_, i)| i.current.len() as u64)
            .sum()
    }

    /// Forget inodes nothing can reach any more (no name, durable or current, no pending
    /// directory operation, no open handle).
    fn gc(&mut self) {
        let mut live: BTreeSet<u64> = self.names.values().copied().collect();
        live.extend(self.durable_names.values().copied());
        live.extend(self.dir_ops.iter().map(DirOp::ino));
        self.inodes
            .retain(|ino, i| i.open > 0 || live.contains(ino));
    }

    fn write(&mut self, ino: u64, off: u64, data: &[u8]) {
        let i = self.inodes.get_mut(&ino).expect("open file has an inode");
        put(&mut i.current, off, data);
        i.pending.push(Pending::Write {
            off,
            data: data.to_vec(),
        });
    }

    fn set_len(&mut self, ino: u64, len: u64) {
        let i = self.inodes.get_mut(&ino).expect("open file has an inode");
        i.current.resize(len as usize, 0);
        i.pending.push(Pending::SetLen(len));
    }

    fn create(&mut self, p: PathBuf) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(ino, Inode::default());
        self.names.insert(p.clone(), ino);
        self.dir_ops.push(DirOp::Link { path: p, ino });
        ino
    }

    fn unlink(&mut self, p: PathBuf) {
        if let Some(ino) = self.names.remove(&p) {
            self.dir_ops.push(DirOp::Unlink { path: p, ino });
        }
    }

    fn rename(&mut self, from: PathBuf, to: PathBuf) {
        if let Some(ino) = self.names.remove(&from) {
            self.names.insert(to.clone(), ino);
            self.dir_ops.push(DirOp::Rename { from, to, ino });
        }
    }

    /// A new process starts: older handles are dead, no file is open.
    fn restart(&mut self) {
        self.epoch += 1;
        self.dead = false;
        for i in self.inodes.values_mut() {
            i.open = 0;
        }
        self.gc();
    }

    fn power_loss(&mut self) {
        for op in std::mem::take(&mut self.dir_ops) {
            if self.rng.gen_bool(0.5) {
                op.apply(&mut self.durable_names);
            }
        }
        self.names = self.durable_names.clone();
        let live: BTreeSet<u64> = self.names.values().copied().collect();
        self.inodes.retain(|ino, _| live.contains(ino));
        for i in self.inodes.values_mut() {
            let pending = std::mem::take(&mut i.pending);
            settle(&mut self.rng, &mut i.durable, pending);
            i.current = i.durable.clone();
        }
        self.restart();
    }

    /// Make `p`'s name and current content durable, as the damage helpers' starting point.
    fn settle_file(&mut self, p: &Path) -> Option<&mut Inode> {
        let ino = *self.names.get(p)?;
        self.dir_ops.retain(|op| !op.mentions(p));
        // One name per inode, even if a dropped rename had moved it here.
        self.durable_names.retain(|_, i| *i != ino);
        self.durable_names.insert(p.to_path_buf(), ino);
        let i = self.inodes.get_mut(&ino)?;
        i.pending.clear();
        i.durable = i.current.clone();
        Some(i)
    }
}

impl SimStorage {
    /// An empty file system (only the roots `/` and `.` exist) that injects no faults.
    pub fn new(seed: u64) -> Self {
        Self::with_faults(seed, Faults::default())
    }

    pub fn with_faults(seed: u64, faults: Faults) -> Self {
        SimStorage {
            st: Arc::new(Mutex::new(State {
                rng: SmallRng::seed_from_u64(seed),
                faults,
                armed_at: 0,
                epoch: 0,
                dead: false,
                dirs: BTreeSet::new(),
                names: BTreeMap::new(),
                durable_names: BTreeMap::new(),
                dir_ops: Vec::new(),
                inodes: BTreeMap::new(),
                next_ino: 1,
                stats: SimStats::default(),
            })),
        }
    }

    /// This storage as engines take it (sharing state with `self`).
    pub fn as_storage(&self) -> Arc<dyn Storage> {
        Arc::new(self.clone())
    }

    pub fn faults(&self) -> Faults {
        self.st.lock().faults.clone()
    }

    /// Replace the faults; `crash_after_writes` counts from this call.
    pub fn set_faults(&self, faults: Faults) {
        let mut s = self.st.lock();
        s.armed_at = s.stats.mutations;
        s.faults = faults;
    }

    pub fn stats(&self) -> SimStats {
        self.st.lock().stats
    }

    /// Whether an injected crash (`crash_after_writes`) has happened and not yet been
    /// followed by [`crash`](Self::crash) or [`kill`](Self::kill).
    pub fn is_crashed(&self) -> bool {
        self.st.lock().dead
    }

    /// Power loss, then restart: unsynced directory operations and writes are each kept,
    /// lost or (writes) torn as described in the module docs; handles opened before fail
    /// from now on; new opens see what the medium holds.
    pub fn crash(&self) {
        let mut s = self.st.lock();
        s.stats.crashes += 1;
        s.power_loss();
    }

    /// Process kill (`kill -9`) without power loss, then restart: the page cache
    /// survives, so new opens see the current state; pending changes stay pending (a
    /// later [`crash`](Self::crash) may still lose them); handles opened before fail.
    pub fn kill(&self) {
        let mut s = self.st.lock();
        s.stats.kills += 1;
        s.restart();
    }

    // Test helpers: they act on the disk from outside the simulated process, so they
    // inject no fault, count nothing and work even on a crashed storage. Those that edit
    // a file first make its name and current content durable (as if synced).

    /// The current content of the file at `path`, if there is one.
    pub fn read_file(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.st.lock();
        let ino = s.names.get(&norm(path))?;
        Some(s.inodes[ino].current.clone())
    }

    /// Every file and its current content.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let s = self.st.lock();
        s.names
            .iter()
            .map(|(p, ino)| (p.clone(), s.inodes[ino].current.clone()))
            .collect()
    }

    /// Make `path` a durable file holding `bytes`, creating its directories.
    pub fn write_file(&self, path: &Path, bytes: &[u8]) {
        let p = norm(path);
        let mut s = self.st.lock();
        for d in p.ancestors().skip(1) {
            if !d.as_os_str().is_empty() && !is_root(d) {
                s.dirs.insert(d.to_path_buf());
            }
        }
        assert!(
            !s.dirs.contains(&p),
            "write_file {}: is a directory",
            p.display()
        );
        if !s.names.contains_key(&p) {
            s.create(p.clone());
        }
        let i = s.settle_file(&p).expect("just created");
        i.current = bytes.to_vec();
        i.durable = bytes.to_vec();
    }

    /// Invert every bit of the byte at `offset` of `path` (panics if there is none).
    pub fn flip_byte(&self, path: &Path, offset: u64) {
        let p = norm(path);
        let mut s = self.st.lock();
        let i = s
            .settle_file(&p)
            .unwrap_or_else(|| panic!("flip_byte {}: no such file", p.display()));
        let len = i.current.len();
        let b = i.current.get_mut(offset as usize).unwrap_or_else(|| {
            panic!("flip_byte {}: offset {offset} >= length {len}", p.display())
        });
        *b = !*b;
        i.durable = i.current.clone();
    }

    /// Cut (or extend with zeros) `path` to `len` bytes, durably.
    pub fn truncate(&self, path: &Path, len: u64) {
        let p = norm(path);
        let mut s = self.st.lock();
        let i = s
            .settle_file(&p)
            .unwrap_or_else(|| panic!("truncate {}: no such file", p.display()));
        i.current.resize(len as usize, 0);
        i.durable = i.current.clone();
    }

    /// Remove `path` durably (not named `remove`: that is [`Storage::remove`], which
    /// goes through the simulated process and its faults). Returns whether it existed.
    pub fn delete(&self, path: &Path) -> bool {
        let p = norm(path);
        let mut s = self.st.lock();
        s.dir_ops.retain(|op| !op.mentions(&p));
        s.durable_names.remove(&p);
        let had = s.names.remove(&p).is_some();
        s.gc();
        had
    }
}

impl fmt::Debug for SimStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.st.lock();
        f.debug_struct("SimStorage")
            .field("files", &s.names.len())
            .field("dead", &s.dead)
            .field("faults", &s.faults)
            .field("stats", &s.stats)
            .finish()
    }
}

/// A handle; dead once its epoch has passed (a crash or kill since it was opened).
struct SimFile {
    st: Arc<Mutex<State>>,
    ino: u64,
    path: PathBuf,
    writable: bool,
    epoch: u64,
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimFile")
            .field("path", &self.path)
            .field("writable", &self.writable)
            .finish()
    }
}

impl SimFile {
    fn check(&self, s: &State, what: &str) -> io::Result<()> {
        if s.dead || s.epoch != self.epoch {
            return Err(crashed(what, &self.path));
        }
        Ok(())
    }

    fn assert_writable(&self, what: &str) {
        assert!(
            self.writable,
            "{what} {}: the file was opened with Open::Read",
            self.path.display()
        );
    }

    fn end(&self, off: u64, len: usize, what: &str) -> io::Result<u64> {
        match off.checked_add(len as u64) {
            Some(end) if end <= MAX_FILE_LEN => Ok(end),
            _ => Err(os_err(EFBIG, what, &self.path)),
        }
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut s = self.st.lock();
        if s.epoch == self.epoch {
            if let Some(i) = s.inodes.get_mut(&self.ino) {
                i.open -= 1;
            }
            s.gc();
        }
    }
}

impl File for SimFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let s = self.st.lock();
        self.check(&s, "reading")?;
        let cur = &s.inodes[&self.ino].current;
        let start = (off.min(cur.len() as u64)) as usize;
        let n = buf.len().min(cur.len() - start);
        buf[..n].copy_from_slice(&cur[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<usize> {
        self.assert_writable("writing");
        let mut s = self.st.lock();
        self.check(&s, "writing")?;
        if buf.is_empty() {
            return Ok(0);
        }
        let end = self.end(off, buf.len(), "writing")?;
        if s.mutation() {
            let n = s.rng.gen_range(0..=buf.len());
            s.write(self.ino, off, &buf[..n]);
            return Err(crashed("writing", &self.path));
        }
        s.stats.writes += 1;
        let p = s.faults.write_error;
        if s.chance(p) {
            s.stats.write_errors += 1;
            return Err(os_err(EIO, "writing", &self.path));
        }
        let mut n = buf.len();
        if let Some(limit) = s.faults.no_space_after {
            let used = s.used();
            let cur = s.inodes[&self.ino].current.len() as u64;
            if used + end.saturating_sub(cur) > limit {
                let room = limit.saturating_sub(used);
                n = (cur + room).saturating_sub(off).min(n as u64) as usize;
                if n == 0 {
                    s.stats.no_space_errors += 1;
                    return Err(os_err(ENOSPC, "writing", &self.path));
                }
            }
        }
        let p = s.faults.short_write;
        if n > 1 && s.chance(p) {
            n = s.rng.gen_range(1..n);
            s.stats.short_writes += 1;
        }
        s.write(self.ino, off, &buf[..n]);
        s.stats.bytes_written += n as u64;
        Ok(n)
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut s = self.st.lock();
        self.check(&s, "syncing")?;
        if s.mutation() {
            return Err(crashed("syncing", &self.path));
        }
        s.stats.syncs += 1;
        let p = s.faults.sync_error;
        let fail = s.chance(p);
        let State { rng, inodes, .. } = &mut *s;
        let i = inodes.get_mut(&self.ino).expect("open file has an inode");
        let pending = std::mem::take(&mut i.pending);
        if fail {
            settle(rng, &mut i.durable, pending);
            s.stats.sync_errors += 1;
            return Err(os_err(EIO, "syncing", &self.path));
        }
        // Only what was pending reaches the medium: writes an earlier failed sync
        // dropped stay lost, as on Linux.
        for p in &pending {
            apply(&mut i.durable, p);
        }
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        let s = self.st.lock();
        self.check(&s, "reading the size of")?;
        Ok(s.inodes[&self.ino].current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.assert_writable("resizing");
        let mut s = self.st.lock();
        self.check(&s, "resizing")?;
        self.end(len, 0, "resizing")?;
        if s.mutation() {
            if s.rng.gen_bool(0.5) {
                s.set_len(self.ino, len);
            }
            return Err(crashed("resizing", &self.path));
        }
        if let Some(limit) = s.faults.no_space_after {
            let cur = s.inodes[&self.ino].current.len() as u64;
            if s.used() + len.saturating_sub(cur) > limit {
                s.stats.no_space_errors += 1;
                return Err(os_err(ENOSPC, "resizing", &self.path));
            }
        }
        s.set_len(self.ino, len);
        Ok(())
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// The model of a hole: the whole pages inside the range (and the file) read back
    /// as zeros, the length unchanged; until `sync_data` it is pending like a write of
    /// zeros (a crash may keep any of its sectors).
    fn punch_hole(&self, off: u64, len: u64) -> io::Result<()> {
        self.assert_writable("punching a hole in");
        let mut s = self.st.lock();
        self.check(&s, "punching a hole in")?;
        let cur = s.inodes[&self.ino].current.len() as u64;
        let Some((start, n)) = whole_pages(off, len.min(cur.saturating_sub(off))) else {
            return Ok(());
        };
        let zeros = vec![0u8; n as usize];
        if s.mutation() {
            if s.rng.gen_bool(0.5) {
                s.write(self.ino, start, &zeros);
            }
            return Err(crashed("punching a hole in", &self.path));
        }
        s.write(self.ino, start, &zeros);
        s.stats.punched_bytes += n;
        Ok(())
    }
}

impl Storage for SimStorage {
    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn File>> {
        let p = norm(path);
        let mut s = self.st.lock();
        if s.dead {
            return Err(crashed("opening", path));
        }
        if how == Open::CreateNew && s.mutation() {
            if !s.names.contains_key(&p) && s.is_dir(parent(&p)) && s.rng.gen_bool(0.5) {
                s.create(p);
            }
            return Err(crashed("opening", path));
        }
        if s.is_dir(&p) {
            return Err(err(io::ErrorKind::Other, "opening", path, "is a directory"));
        }
        let ino = match (how, s.names.get(&p)) {
            (Open::CreateNew, Some(_)) => {
                return Err(err(
                    io::ErrorKind::AlreadyExists,
                    "opening",
                    path,
                    "file exists",
                ))
            }
            (Open::CreateNew, None) => {
                if !s.is_dir(parent(&p)) {
                    return Err(err(
                        io::ErrorKind::NotFound,
                        "opening",
                        path,
                        "no such directory",
                    ));
                }
                s.create(p)
            }
            (_, Some(&ino)) => ino,
            (_, None) => {
                return Err(err(
                    io::ErrorKind::NotFound,
                    "opening",
                    path,
                    "no such file",
                ))
            }
        };
        s.inodes.get_mut(&ino).expect("named inode").open += 1;
        Ok(Arc::new(SimFile {
            st: self.st.clone(),
            ino,
            path: path.to_path_buf(),
            writable: how != Open::Read,
            epoch: s.epoch,
        }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let p = norm(path);
        let mut s = self.st.lock();
        if s.dead {
            return Err(crashed("removing", path));
        }
        if s.mutation() {
            if s.rng.gen_bool(0.5) {
                s.unlink(p);
            }
            return Err(crashed("removing", path));
        }
        if s.is_dir(&p) {
            return Err(err(
                io::ErrorKind::Other,
                "removing",
                path,
                "is a directory",
            ));
        }
        if !s.names.contains_key(&p) {
            return Err(err(
                io::ErrorKind::NotFound,
                "removing",
                path,
                "no such file",
            ));
        }
        s.unlink(p);
        s.gc();
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (f, t) = (norm(from), norm(to));
        let mut s = self.st.lock();
        if s.dead {
            return Err(crashed("renaming", from));
        }
        let trigger = s.mutation();
        let problem = if !s.names.contains_key(&f) {
            Some((io::ErrorKind::NotFound, "no such file"))
        } else if !s.is_dir(parent(&t)) {
            Some((io::ErrorKind::NotFound, "target directory missing"))
        } else if s.is_dir(&t) {
            Some((io::ErrorKind::Other, "target is a directory"))
        } else {
            None
        };
        if trigger {
            if problem.is_none() && f != t && s.rng.gen_bool(0.5) {
                s.rename(f, t);
            }
            return Err(crashed("renaming", from));
        }
        if let Some((kind, msg)) = problem {
            return Err(err(kind, "renaming", from, msg));
        }
        if f != t {
            s.rename(f, t);
            s.gc();
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let d = norm(dir);
        let mut s = self.st.lock();
        if s.dead {
            return Err(crashed("syncing directory", dir));
        }
        if s.mutation() {
            return Err(crashed("syncing directory", dir));
        }
        if !s.is_dir(&d) {
            return Err(err(
                io::ErrorKind::NotFound,
                "syncing directory",
                dir,
                "no such directory",
            ));
        }
        s.stats.syncs += 1;
        let p = s.faults.sync_error;
        if s.chance(p) {
            s.stats.sync_errors += 1;
            return Err(os_err(EIO, "syncing directory", dir));
        }
        let State {
            dir_ops,
            durable_names,
            ..
        } = &mut *s;
        dir_ops.retain(|op| {
            if op.touches(&d) {
                op.apply(durable_names);
                false
            } else {
                true
            }
        });
        s.gc();
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let d = norm(dir);
        let mut s = self.st.lock();
        if s.dead {
            return Err(crashed("creating", dir));
        }
        let new: Vec<PathBuf> = d
            .ancestors()
            .filter(|a| !a.as_os_str().is_empty() && !is_root(a))
            .map(Path::to_path_buf)
            .collect();
        if let Some(f) = new.iter().find(|a| s.names.contains_key(*a)) {
            return Err(err(
                io::ErrorKind::Other,
                "creating",
                dir,
                &format!("{} is a file", f.display()),
            ));
        }
        s.dirs.extend(new);
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let d = norm(dir);
        let s = self.st.lock();
        if s.dead {
            return Err(crashed("listing", dir));
        }
        if !s.is_dir(&d) {
            return Err(err(
                io::ErrorKind::NotFound,
                "listing",
                dir,
                "no such directory",
            ));
        }
        let mut v: Vec<String> = s
            .names
            .keys()
            .chain(s.dirs.iter())
            .filter(|p| parent(p) == d)
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        v.sort();
        Ok(v)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let p = norm(path);
        let s = self.st.lock();
        if s.dead {
            return Err(crashed("looking at", path));
        }
        Ok(s.names.contains_key(&p) || s.is_dir(&p))
    }
}
